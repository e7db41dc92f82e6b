"""Where a rank's training iteration goes, by parallelism, read from the run's trace.

For one XPU and a window of simulated time (an iteration: from the end of the one
before to its own end) every instant goes to exactly one bucket, in this priority:

1. ``compute_s``: the XPU executes an operator (its exec, not the memory stall around it);
2. ``memory_stall_s``: an operator of the XPU waits for remote data (the non-coherent copy
   before its exec, the coherent access's tail after it);
3. ``exposed_{tp,pp,dp,cp,ep}_s``: a collective or p2p the XPU takes part in is in
   flight and neither of the above; several kinds at once share the instant evenly
   (``edp``, the expert gradients, counts as ``dp``; a vertex without ``phase`` too);
4. ``idle_s``: nothing of the XPU runs (the pipeline bubble, waits on other ranks).

Invariant: the buckets add up to the window (:data:`BUCKETS`; the tests hold the sum to
1e-9 relative). Comm vertices carry ``phase`` and ``scope`` in the graph
(:mod:`hcsim.workload.parallel.builder`); the trace gives their dates, the run's
``compute`` and ``stall`` intervals the XPU's own. A folded ``--fast`` run keeps whole
replicas: :func:`representatives` (the first rank of every stage of replica 0) is kept,
and its memoized rings are still one trace record each. Also :func:`remote_operators`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hcsim.workload.parallel.layout import Layout

__all__ = [
    "BUCKETS",
    "PHASES",
    "GraphKept",
    "breakdown",
    "rank_breakdown",
    "remote_operators",
    "representatives",
    "steady_breakdown",
]

#: kinds of communication, in the order of their buckets' codes
PHASES = ("tp", "pp", "ep", "dp", "cp")
#: every bucket of an iteration; they add up to it
BUCKETS = ("compute_s", "memory_stall_s", *(f"exposed_{p}_s" for p in PHASES), "idle_s")

_COMPUTE, _STALL, _FIRST_COMM = 0, 1, 2  # codes of the sweep's counters (comm kinds follow in PHASES order)
_CODE = {p: _FIRST_COMM + i for i, p in enumerate(PHASES)}
_CODE.update(edp=_CODE["dp"])


def rank_breakdown(result: Any, graph: Any, xpu: str, iteration: int = 0) -> dict[str, float]:
    """Seconds of ``xpu``'s ``iteration`` in each of :data:`BUCKETS` (they add up to the iteration)."""
    return _breakdowns(result, graph, [xpu], *_window(result, iteration, iteration))[0]


def breakdown(result: Any, graph: Any, xpus: list[str], iteration: int = 0) -> dict[str, float]:
    """The mean of :func:`rank_breakdown` over ``xpus`` (e.g. the first rank of every stage)."""
    return _mean(_breakdowns(result, graph, xpus, *_window(result, iteration, iteration)))


def steady_breakdown(result: Any, graph: Any, xpus: list[str] | None = None) -> dict[str, float]:
    """Per iteration, the mean over ``xpus`` (default :func:`representatives`) of the steady iterations.

    The steady iterations are those after the first (the first alone if it is the only
    one), as ``steady_iteration_s`` of :func:`hcsim.engine.report.summarize`: the buckets
    add up to it.
    """
    last = result.iterations - 1
    first = 1 if last >= 1 else 0
    return _mean(_breakdowns(result, graph, xpus or representatives(graph), *_window(result, first, last)))


def representatives(graph: Any) -> list[str]:
    """The first rank (TP slice 0) of every pipeline stage of the first replica of a training graph.

    Read from the graph's ``ranks`` (replica, stage, TP slice order) and ``layout``: the
    same XPUs in an exact run and in a folded one, which keeps whole replicas.
    """
    layout = Layout.parse(graph.graph["layout"])
    ranks = graph.graph["ranks"]
    return [ranks[p * layout.tp] for p in range(layout.pp)]


class GraphKept:
    """A workload factory that keeps the last graph it built (:func:`steady_breakdown` reads it).

    Everything else (``layout_data``, ``spec``, ``options``, ...) is the wrapped factory's.
    """

    def __init__(self, factory: Callable[..., Any]) -> None:
        self.factory, self.graph = factory, None

    def __call__(self, ranks: list[str], group: int | None = None) -> Any:
        self.graph = self.factory(ranks, group=group)
        return self.graph

    def __getattr__(self, name: str) -> Any:
        return getattr(self.factory, name)


def remote_operators(result: Any, graph: Any, weights: dict[str, int] | None = None) -> int:
    """Operators the run placed on remote memory; one on XPU x counts ``weights[x]`` (default 1),
    e.g. the replicas a folded run's kept XPU stands for."""
    weights = weights or {}
    nodes = graph.nodes
    return sum(weights.get(nodes[v]["location"], 1) for v, memory in result.placement.items() if memory is not None)


def _window(result: Any, first: int, last: int) -> tuple[float, float, int]:
    """(begin, end, iterations) of iterations ``first`` to ``last``."""
    ends = result.iteration_end
    return (ends[first - 1] if first else 0.0), ends[last], last - first + 1


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: sum(r[k] for r in rows) / len(rows) for k in BUCKETS}


def _breakdowns(result: Any, graph: Any, xpus: list[str], begin: float, end: float, count: int) -> list[dict]:
    """Each XPU's buckets over [begin, end], divided by ``count`` (the iterations in the window)."""
    nodes = graph._node  # NetworkX's vertex dict: a view's lookup cost as much as the rest of the pass
    wanted = set(xpus)
    events: dict[str, list[tuple[float, int, int]]] = {x: [] for x in xpus}

    def add(x: str, code: int, start: float, stop: float) -> None:
        start, stop = max(start, begin), min(stop, end)
        if stop > start:
            ev = events[x]
            ev.append((start, code, 1))
            ev.append((stop, code, -1))

    for x in xpus:
        for start, stop in result.compute.get(x, ()):
            add(x, _COMPUTE, start, stop)
        for start, stop in result.stall.get(x, ()):
            add(x, _STALL, start, stop)
    dp, codes = _CODE["dp"], _CODE
    for vertex, _, host, _, start, stop, _, _ in result.trace:  # one pass: a large run has millions of records
        if host != "collective" or stop <= begin or start >= end:
            continue
        d = nodes[vertex]
        ranks = wanted.intersection(d["scope"])
        if ranks:
            code = codes.get(d.get("phase"), dp)
            start, stop = max(start, begin), min(stop, end)
            for x in ranks:
                ev = events[x]
                ev.append((start, code, 1))
                ev.append((stop, code, -1))
    return [_partition(events[x], begin, end, count) for x in xpus]


def _partition(events: list[tuple[float, int, int]], begin: float, end: float, count: int) -> dict[str, float]:
    """Sweep the XPU's intervals: each segment between two dates goes to one bucket (comm kinds share it)."""
    total = [0.0] * (_FIRST_COMM + len(PHASES))
    idle = 0.0
    level = [0] * len(total)
    comm = range(_FIRST_COMM, len(total))
    prev = begin
    events.sort()
    for t, code, delta in events:
        if t > prev:
            seg = t - prev
            if level[_COMPUTE]:
                total[_COMPUTE] += seg
            elif level[_STALL]:
                total[_STALL] += seg
            else:
                busy = [c for c in comm if level[c]]
                if busy:
                    share = seg / len(busy)
                    for c in busy:
                        total[c] += share
                else:
                    idle += seg
            prev = t
        level[code] += delta
    idle += end - prev  # every interval was clipped to end: nothing is in flight after the last date
    out = {"compute_s": total[_COMPUTE] / count, "memory_stall_s": total[_STALL] / count}
    for p in PHASES:
        out[f"exposed_{p}_s"] = total[_CODE[p]] / count
    out["idle_s"] = idle / count
    return out
