"""Topology-aware rings (NCCL-like order): the ring algorithms over :meth:`TopologyView.topology_order`.

``ring_topo`` allreduce, reduce-scatter and allgather are the ``ring`` algorithms with
the ranks reordered as NCCL orders a ring: the ranks of a server next to each other,
servers by rack, racks in order, so a scope listed in any order crosses each server
boundary once per direction. On a uniform network the times are the ring's: allreduce
2(N-1)(L + S/(N B)); reduce-scatter and allgather (N-1)(L + S/(N B)).

Invariants: slices keep their owners (rank i of the scope, in the order given, still ends
with or starts with slice i); the engine plan is the ring plan of the reordered scope,
so the fast paths run these like ``ring``.

Hops of different costs: docs/collectives.md, "Closed forms" (Ring).
"""

from __future__ import annotations

from hcsim.collectives.algorithms.ring import allgather_phases, reduce_scatter_phases, ring_schedule
from hcsim.collectives.plans import FlowPlan
from hcsim.collectives.plans import plan as ring_plan
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
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


@register("allreduce", "ring_topo", plan=topo_ring_plan, ring=True)
def ring_topo(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Ring allreduce over the topology order (inside a server first, then across; NCCL-like)."""
    n, order = len(ranks), view.topology_order(ranks)
    return ring_schedule("allreduce", ranks, nbytes, reduce_scatter_phases(n) + allgather_phases(n), order)


@register("reduce_scatter", "ring_topo", plan=topo_ring_plan, ring=True)
def ring_topo_reduce_scatter(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Ring reduce-scatter over the topology order; rank i still ends with slice i."""
    order = view.topology_order(ranks)
    return ring_schedule("reduce_scatter", ranks, nbytes, reduce_scatter_phases(len(ranks)), order)


@register("allgather", "ring_topo", plan=topo_ring_plan, ring=True)
def ring_topo_allgather(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Ring allgather over the topology order; rank i starts with slice i."""
    return ring_schedule("allgather", ranks, nbytes, allgather_phases(len(ranks)), view.topology_order(ranks))
