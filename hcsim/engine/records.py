"""The records of a run: what it produced, and the keys its activities carry.

* :class:`RunResult`: the raw outcome of one run (:mod:`hcsim.engine.report` turns it
  into metrics and traces); its ``trace`` holds one :class:`TraceRecord` per vertex
  execution;
* :class:`ComputePlan`: what a compute vertex costs, decided once before the run;
* :class:`VertexRun`: one execution (vertex, iteration) in the container;
* :class:`ActivityKey`: what the driver hands back with a completed activity, so its
  execution knows what it was (tags below).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "COMM",
    "COPY",
    "EXEC",
    "REMOTE_ACCESS",
    "REMOTE_COMPUTE",
    "ActivityKey",
    "ComputePlan",
    "RunResult",
    "TraceRecord",
    "VertexRun",
]

# What an activity of a vertex execution is (ActivityKey.tag)
EXEC = 0  # the exec of a compute vertex with local data (or the compute after a non-coherent copy)
COPY = 1  # non-coherent remote data: the copy to local memory, before the exec
REMOTE_COMPUTE = 2  # coherent remote data: the exec, beside its remote access
REMOTE_ACCESS = 3  # coherent remote data: the flow from remote memory, beside the exec
COMM = 4  # a flow of a communication vertex: its strategy handles it


class TraceRecord(NamedTuple):
    """One vertex execution: when it ran, where, and what it moved or computed."""

    vertex: str
    iteration: int
    host: str  # the XPU of a compute vertex; "collective" for a communication vertex
    kind: str  # "compute", or the communication kind
    start: float
    end: float
    bytes: float
    flops: float


class ComputePlan(NamedTuple):
    """What a compute vertex costs on its XPU (paper Fig. 3), decided before the run."""

    host: Any  # SimGrid host of the XPU
    amount: float  # flops of its exec at the host's speed
    remote: Any  # SimGrid host of the memory its data lives in, or None (local)
    nbytes: int  # bytes to move from ``remote``
    coherent: bool  # remote access beside the exec (coherent) or a copy before it
    seconds: float  # the exec's duration if it has its XPU to itself


class ActivityKey(NamedTuple):
    """What the driver hands back with a completed activity of an execution.

    The flows of the exact strategy (the hot path) carry plain tuples of this layout
    instead: building and unpacking a NamedTuple costs 1.9k more instructions per flow
    than a tuple (5% of a flow's whole cost, measured with callgrind on a 16-XPU ring).
    So keys are read by unpacking (``execution, tag, run, index = key``), never by name.
    """

    execution: Any  # the hcsim.engine.execution.Execution it belongs to
    tag: int  # EXEC, COPY, REMOTE_COMPUTE, REMOTE_ACCESS or COMM
    run: VertexRun  # the vertex execution
    index: int  # the flow's index in its plan (COMM), else 0


class VertexRun:
    """One execution (vertex ``v``, iteration ``k``) in the container."""

    __slots__ = ("v", "k", "start", "pending", "waits", "phase_end")

    def __init__(self, v: int, k: int, start: float, pending: int, waits: list[int] | None = None) -> None:
        self.v, self.k, self.start, self.pending, self.waits = v, k, start, pending, waits
        # a remote operator's first phase ends here: the copy (non-coherent) or the exec (coherent)
        self.phase_end = start


@dataclass
class RunResult:
    """Raw outcome of a run; :mod:`hcsim.engine.report` turns it into metrics and traces."""

    iterations: int
    coherent: bool
    makespan: float
    iteration_end: list[float]
    trace: list[TraceRecord]
    # per XPU: (start, end) of compute, of communication it takes part in, of memory stall
    compute: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    comm: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    stall: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    # flows: (src, dst, bytes, start, end)
    flows: list[tuple[str, str, int, float, float]] = field(default_factory=list)
    routes: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    link_bandwidth: dict[str, float] = field(default_factory=dict)
    activities: int = 0  # SimGrid activities started
    memoized_flows: int = 0  # flows of memoized ring steps: accounted for, not simulated one by one
    memoized_iterations: int = 0  # iterations extrapolated by hcsim.fast.repeat, not simulated
    memoized_activities: int = 0  # the activities those iterations would have started in SimGrid
    repeat: str = ""  # with repeat=True: what iteration memoization did (or why it did not)
    wall_seconds: float = 0.0  # host time spent in SimGrid's run loop (excludes loading the platform)
    graph: dict[str, Any] = field(default_factory=dict)
    placement: dict[str, str | None] = field(default_factory=dict)
    fold: Any = None  # the hcsim.fast.folding.Fold the run was simulated on (simulate_system), or None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with the trace by columns: a run comes back from its SimGrid process that way.

        One TraceRecord per vertex execution (38,440 at 1024 XPUs) pickled as named tuples
        cost 0.2 s each way; columns of plain tuples, and of floats packed in arrays where
        every value is a float, a tenth. The records come back equal, types included.
        """
        state = self.__dict__.copy()
        trace = state.pop("trace")
        columns: list[Any] = list(zip(*trace, strict=True))
        for i, column in enumerate(columns):
            if all(type(x) is float for x in column):
                columns[i] = array("d", column)
        state["trace_columns"] = (len(trace), columns)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        n, columns = state.pop("trace_columns")
        state["trace"] = list(map(TraceRecord._make, zip(*columns, strict=True))) if n else []
        self.__dict__.update(state)
