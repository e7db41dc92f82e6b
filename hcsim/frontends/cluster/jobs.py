"""What a cluster job is: one row of a scheduler trace, or one synthetic draw.

A job asks for GPUs either as a total (``gpus``; any placement) or as a rigid shape
(``nodes`` x ``gpus_per_node``, Slurm's ``--nodes``/``--gpus-per-node``). It runs either
for the ``duration`` the trace recorded, or as a ``workload`` (a training graph and a
number of iterations) whose runtime the engine computes on the GPUs it is given, so
co-located jobs contend on the simulated network.

Times are seconds from the start of the trace (readers subtract the first submit time
and keep the original in ``submit_epoch`` of the trace, not per job).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Job", "Trace", "WorkloadJob"]


@dataclass
class WorkloadJob:
    """A job that runs a workload graph on the GPUs it is given, ``iterations`` times.

    ``build(gpus)`` returns the :class:`~hcsim.workload.graph.Workload` for those XPU
    names (e.g. ``lambda g: data_parallel(g, layers)``). A preempted job resumes from
    its last complete iteration (a checkpoint per iteration); the partial one is lost.
    """

    build: Callable[[list[str]], Any]
    iterations: int = 1
    coherent: bool = True


@dataclass
class Job:
    """One job as the scheduler sees it at submission."""

    job_id: str
    submit: float  # s since the trace's start
    gpus: int  # total GPUs asked for (>= 1)
    duration: float | None = None  # s of run time the trace recorded (None: computed from ``workload``)
    nodes: int | None = None  # rigid shape: this many nodes ...
    gpus_per_node: int | None = None  # ... with this many GPUs each (nodes * gpus_per_node == gpus)
    user: str = ""
    partition: str = ""  # logical partition / virtual cluster ("" = the default one)
    name: str = ""
    state: str = "COMPLETED"  # final state in the source trace (COMPLETED, FAILED, CANCELLED, ...)
    trace_start: float | None = None  # when the real system started it (s since the trace's start), if known
    line: int = 0  # source line (1-based) for messages; 0 when synthetic
    workload: WorkloadJob | None = None  # run this instead of sleeping for ``duration``
    extra: dict[str, Any] = field(default_factory=dict)  # format-specific fields kept for outputs

    @property
    def trace_wait(self) -> float | None:
        """Waiting time in the real system, when the trace says when the job started."""
        return None if self.trace_start is None else self.trace_start - self.submit


@dataclass
class Trace:
    """Jobs read from a file (sorted by submit time), with what the reader skipped and why."""

    jobs: list[Job]
    source: str = ""
    format: str = ""
    submit_epoch: float = 0.0  # absolute time (s) of time 0, when the format has one
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line, reason) of rows left out
