"""Scheduling policies: how the scheduler orders jobs, and when it may preempt.

A policy is a small class (one short file each; see :mod:`.fcfs` for the shortest):

* ``key(job, now, scheduler)``: a sort key; smaller runs first. ``job`` is the
  scheduler's :class:`~hcsim.frontends.cluster.scheduler.JobState` (``submit``,
  ``gpus``, ``estimate``, ``attained`` service, ``level``, ``entered``, ``seq``, ...);
* ``preemptive``: if true, running jobs are ranked with pending ones at every event
  and lose their GPUs to better-ranked jobs (paying the preemption overhead on resume);
* ``backfill``: if true (non-preemptive only), EASY backfilling lets later jobs jump
  the blocked head when they do not delay its reservation;
* ``next_change(job)``: the attained service (s) at which a running job's key changes
  (a quantum ends), or ``None``; ``on_change(job, now)`` applies the change.

Non-preemptive policies are strict, as in AnalySIM: the best-ranked job that does not
fit blocks the queue (head-of-line blocking), unless ``backfill``.
Register a new policy by decorating its class with :func:`register`.
"""

from __future__ import annotations

import inspect
from typing import Any

from hcsim.errors import HcsimError
from hcsim.frontends.cluster.policies import easy, fcfs, las, las_mlfq, mlfq, rr, sjf  # noqa: F401 - registers them
from hcsim.frontends.cluster.policies.base import POLICIES, Policy, register

__all__ = ["POLICIES", "Policy", "policy", "register"]


def policy(name: str, **options: Any) -> Policy:
    """A new instance of the policy called ``name`` (e.g. ``mlfq``, ``easy``), with ``options``."""
    key = name.lower().replace("_", "-")
    if key not in POLICIES:
        raise POLICIES.unknown(name)
    for option in options:
        takers = sorted(n for n, cls in POLICIES.items() if option in inspect.signature(cls).parameters)
        if key not in takers:
            flag = "--" + option.replace("_", "-")
            valid = f"--policy {' or '.join(takers)}" if takers else "no built-in policy takes it"
            raise HcsimError(f"{flag} does not apply to policy {key!r} (valid: {valid}; or omit {flag})")
    try:
        return POLICIES[key](**options)
    except (TypeError, ValueError) as exc:
        raise HcsimError(f"policy {key!r}: {exc}") from None
