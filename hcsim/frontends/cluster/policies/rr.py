"""Round-robin (preemptive): each job runs a time slice, then goes to the back of the queue.

The slice (``slice`` seconds, finite and > 0; an hour by default) counts the job's own
attained service, so a job that waited is not charged for it; the queue is ordered by
the time each job (re-)entered it. Registered as ``rr``; docs/cluster.md, "Model".
"""

import math
from typing import Any

from hcsim.frontends.cluster.policies.base import Policy, register


@register
class RoundRobin(Policy):
    name = "rr"
    preemptive = True

    def __init__(self, slice: float = 3600.0) -> None:  # noqa: A002 - the scheduling term
        if not 0 < slice < math.inf:
            raise ValueError(f"slice {slice!r} is invalid (valid: finite seconds > 0)")
        self.slice = float(slice)

    def key(self, job: Any, now: float, scheduler: Any) -> tuple:
        return (job.entered, job.seq)

    def next_change(self, job: Any) -> float | None:
        return job.base + self.slice

    def on_change(self, job: Any, now: float) -> None:
        job.entered, job.base = now, job.attained
