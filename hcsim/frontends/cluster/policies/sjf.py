"""Shortest job first (non-preemptive), by the job's estimated run time (the trace duration).

Ties go to the earlier submission, then to the trace order, so the schedule is a
function of the trace alone. A started job runs to its end. Registered as ``sjf``
(:func:`~hcsim.frontends.cluster.policies.base.register`); docs/cluster.md, "Model".
"""

from typing import Any

from hcsim.frontends.cluster.policies.base import Policy, register


@register
class SJF(Policy):
    name = "sjf"

    def key(self, job: Any, now: float, scheduler: Any) -> tuple:
        return (job.estimate, job.submit, job.seq)
