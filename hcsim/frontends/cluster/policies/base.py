"""The policy interface and the table of policies: :class:`Policy`, :data:`POLICIES`, :func:`register`.

A policy is a small class: ``key`` ranks jobs, ``preemptive`` and ``backfill`` say how
the scheduler may act on that ranking, ``next_change`` and ``on_change`` move a running
job between quanta (the contract in full: :mod:`hcsim.frontends.cluster.policies`).
Built-in policies and plug-ins register here; :func:`~hcsim.frontends.cluster.policies.policy`
looks them up.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hcsim.registry import Registry

__all__ = ["POLICIES", "Policy", "register"]

POLICIES: Registry[type[Policy]] = Registry("policy", sort=True)


class Policy:
    """Base class: FCFS order, non-preemptive, no quanta."""

    name: ClassVar[str] = ""
    preemptive: ClassVar[bool] = False
    backfill: ClassVar[bool] = False

    def key(self, job: Any, now: float, scheduler: Any) -> tuple:
        return (job.submit, job.seq)

    def next_change(self, job: Any) -> float | None:
        return None

    def on_change(self, job: Any, now: float) -> None:
        return None


def register(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make a policy available by its ``name``."""
    return POLICIES.register(cls.name, cls)
