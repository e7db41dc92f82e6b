"""Direct reduce-scatter, allgather and allreduce: every rank exchanges with every other at once.

Over N ranks, S bytes per rank, on a non-blocking star (alpha: rank-to-rank latency, B:
port bandwidth):

* ``direct`` reduce-scatter: rank i sends slice j (S/N) to rank j, for every j != i, all
  at once: alpha + (N-1)/N S/B;
* ``direct`` allgather: rank i sends its slice to every other rank at once: the same;
* ``direct`` allreduce: the reduce-scatter, then the allgather, rank j sending its
  reduced slice once all N-1 contributions have arrived: 2 alpha + 2 (N-1)/N S/B.

Invariant: the allreduce's N(N-1) allgather flows wait through one join per rank
(:meth:`Schedule.join`): 2 N (N-1) dependencies instead of N^2 (N-1).

Guide: docs/collectives.md, "Closed forms" (Direct).
"""

from __future__ import annotations

from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
from hcsim.collectives.view import TopologyView


def _scatter(s: Schedule, ranks: list[str], nbytes: float) -> list[list[int]]:
    """Rank i sends slice j to rank j; returns the flows into each rank."""
    n = len(ranks)
    into: list[list[int]] = [[] for _ in ranks]
    for i, a in enumerate(ranks):
        for j, b in enumerate(ranks):
            if i != j:
                into[j].append(s.add(a, b, nbytes / n, shards=[j]))
    return into


def _gather(s: Schedule, ranks: list[str], nbytes: float, waits: list[list[int]]) -> None:
    """Rank i sends slice i to every other rank, after the flows ``waits[i]`` (all of them: one join)."""
    n = len(ranks)
    for i, a in enumerate(ranks):
        after = [s.join(waits[i])] if waits[i] else []
        for j, b in enumerate(ranks):
            if i != j:
                s.add(a, b, nbytes / n, after, shards=[i])


@register("allreduce", "direct")
def direct_allreduce(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Direct allreduce: all-to-all reduce-scatter of S/N slices, then all-to-all allgather."""
    s = Schedule("allreduce", ranks, shards=len(ranks), steps=2)
    _gather(s, ranks, nbytes, _scatter(s, ranks, nbytes))
    return s


@register("reduce_scatter", "direct")
def direct_reduce_scatter(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Direct reduce-scatter: every rank sends slice j (S/N) to rank j at once."""
    s = Schedule("reduce_scatter", ranks, shards=len(ranks), steps=1)
    _scatter(s, ranks, nbytes)
    return s


@register("allgather", "direct")
def direct_allgather(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Direct allgather: every rank sends its slice (S/N) to every other rank at once."""
    s = Schedule("allgather", ranks, shards=len(ranks), steps=1)
    _gather(s, ranks, nbytes, [[] for _ in ranks])
    return s
