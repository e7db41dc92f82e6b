"""Shortest job first (non-preemptive), by the job's estimated run time (the trace duration)."""

from typing import Any

from hcsim.frontends.cluster.policies.base import Policy, register


@register
class SJF(Policy):
    name = "sjf"

    def key(self, job: Any, now: float, scheduler: Any) -> tuple:
        return (job.estimate, job.submit, job.seq)
