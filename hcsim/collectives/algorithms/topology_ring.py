"""Topology-aware rings (NCCL-like order): the ring algorithms over :meth:`TopologyView.topology_order`.

``ring_topo`` allreduce, reduce-scatter and allgather are the ``ring`` algorithms with
the ranks reordered as NCCL orders a ring: the ranks of a server next to each other,
servers by rack, racks in order. A scope listed in any order then crosses each server
boundary once per direction (one slow hop in, one out) instead of at every step where
neighbours in the list sit on different servers. On a uniform network of latency L and
bandwidth B the times are the ring's: allreduce 2(N-1)(L + S/(N B)); reduce-scatter and
allgather (N-1)(L + S/(N B)). With hops of different costs d_i (member i to i+1, each
alone on its links) the pipelined ring's step-j flow from member i ends at
F(j, i) = max(F(j-1, i), F(j-1, i-1)) + d_i, and the collective when the last one does.
Slices keep their owners: rank i of the scope (in the order given) still ends with
(reduce-scatter) or starts with (allgather) slice i.

Their engine plan is the ring plan of the reordered scope, so the memoized fast path
(:mod:`hcsim.engine.memoize`) and folding run them like ``ring``.
"""

from __future__ import annotations

from hcsim.collectives.plans import FlowPlan
from hcsim.collectives.plans import plan as ring_plan
from hcsim.collectives.registry import register
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.view import TopologyView


def topo_ring_plan(
    kind: str,
    algorithm: str,
    scope: list[str],
    nbytes: float,
    group: int | None = None,
    compact: bool = False,
    view: TopologyView | None = None,
) -> FlowPlan:
    """The ring plan over the scope in topology order."""
    order = (view or TopologyView()).topology_order(list(scope))
    return ring_plan(kind, "ring", order, nbytes, group, compact)


def _ring(kind: str, ranks: list[str], nbytes: float, phases: list[int], view: TopologyView) -> Schedule:
    """The ring of :mod:`.ring` over the topology order; shard numbers stay those of ``ranks``."""
    order = view.topology_order(ranks)
    owner = {r: i for i, r in enumerate(ranks)}
    n = len(order)
    s = Schedule(kind, ranks, shards=n, steps=len(phases))
    for j, offset in enumerate(phases):
        for i in range(n):
            after = () if j == 0 else ((j - 1) * n + i, (j - 1) * n + (i - 1) % n)
            s.add(order[i], order[(i + 1) % n], nbytes / n, after, shards=[owner[order[(i - offset) % n]]])
    return s


@register("allreduce", "ring_topo", plan=topo_ring_plan, ring=True)
def ring_topo(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Ring allreduce over the topology order (inside a server first, then across; NCCL-like)."""
    n = len(ranks)
    return _ring("allreduce", ranks, nbytes, [j + 1 for j in range(n - 1)] + list(range(n - 1)), view)


@register("reduce_scatter", "ring_topo", plan=topo_ring_plan, ring=True)
def ring_topo_reduce_scatter(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Ring reduce-scatter over the topology order; rank i still ends with slice i."""
    return _ring("reduce_scatter", ranks, nbytes, [j + 1 for j in range(len(ranks) - 1)], view)


@register("allgather", "ring_topo", plan=topo_ring_plan, ring=True)
def ring_topo_allgather(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Ring allgather over the topology order; rank i starts with slice i."""
    return _ring("allgather", ranks, nbytes, list(range(len(ranks) - 1)), view)
