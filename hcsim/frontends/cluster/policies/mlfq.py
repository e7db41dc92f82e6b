"""Multi-level feedback queue (preemptive), quanta 3250, 7200, 18000 s (Tiresias, as in AnalySIM).

A new job enters queue 0. After it has run a queue's quantum it moves down one queue
(to the back); the last queue is round-robin with its quantum. Higher queues preempt
lower ones; within a queue, jobs go in the order they entered it.
"""

import math
from collections.abc import Sequence
from typing import Any

from hcsim.errors import HcsimError
from hcsim.frontends.cluster.policies.base import Policy, register
from hcsim.units import parse_time


@register
class MLFQ(Policy):
    name = "mlfq"
    preemptive = True

    def __init__(self, quanta: Sequence[float] = (3250.0, 7200.0, 18000.0)) -> None:
        if not quanta or any(not 0 < q < math.inf for q in quanta):
            raise ValueError(f"quanta {tuple(quanta)!r} are invalid (valid: finite seconds > 0, one per queue)")
        self.quanta = tuple(float(q) for q in quanta)

    def quantum(self, job: Any) -> float:
        return self.quanta[job.level]

    def key(self, job: Any, now: float, scheduler: Any) -> tuple:
        return (job.level, job.entered, job.seq)

    def next_change(self, job: Any) -> float | None:
        return job.base + self.quantum(job)

    def on_change(self, job: Any, now: float) -> None:
        job.level = min(job.level + 1, len(self.quanta) - 1)
        job.entered, job.base = now, job.attained


def parse_quanta(text: str, what: str = "quanta") -> tuple[float, ...]:
    """Quanta in seconds from their command-line form, e.g. ``hcsim cluster --quanta``.

    Items are durations; a bare number is seconds. ``what`` names the text in error messages.

    >>> parse_quanta("3250,7200,18000"), parse_quanta("1h,2h,5h")
    ((3250.0, 7200.0, 18000.0), (3600.0, 7200.0, 18000.0))
    """
    try:
        return tuple(parse_time(q, what) for q in text.split(","))
    except HcsimError:
        raise HcsimError(
            f"{what} {text!r} is invalid (valid: seconds or durations, e.g. 3250,7200,18000 or 1h,2h,5h)"
        ) from None
