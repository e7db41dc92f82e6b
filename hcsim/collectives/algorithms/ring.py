"""Ring algorithms: allreduce, the paper's coherent ring, reduce-scatter and allgather.

Over N ranks in list order (rank i sends to rank i+1 mod N), S bytes per rank, on a
uniform ring of latency L and bandwidth B:

* ``ring`` allreduce: reduce-scatter then allgather, 2(N-1) steps of S/N bytes:
  2(N-1)(L + S/(N B));
* ``coherent_ring`` allreduce (paper Sec. 5.4): the reduce-scatter half only, N-1 steps:
  under coherence the averaged gradient must exist *somewhere*, not on every XPU;
* ``ring`` reduce-scatter and allgather: N-1 steps of S/N.

Invariant: a rank's next send waits for its previous send and for the chunk its left
neighbour sent it, so the ring is pipelined (the exact engine) or run step by step
(:mod:`hcsim.fast.ring_steps`); its plan may stand for a larger ring (``group``, a folded
run: :mod:`hcsim.fast.folding`).

Which shard moves at each step: docs/collectives.md, "Closed forms" (Ring).
"""

from __future__ import annotations

from hcsim.collectives.plans import FlowPlan
from hcsim.collectives.plans import plan as list_order_plan
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
from hcsim.collectives.view import TopologyView


def ring_plan(
    kind: str,
    algorithm: str,
    scope: list[str],
    nbytes: float,
    group: int | None = None,
    compact: bool = False,
    view: TopologyView | None = None,
) -> FlowPlan:
    """The ring plan of :func:`hcsim.collectives.plans.plan` (a ring in list order needs no view)."""
    return list_order_plan(kind, algorithm, scope, nbytes, group, compact)


def reduce_scatter_phases(n: int) -> list[int]:
    """Per reduce-scatter step j, the shard offset: rank i sends shard (i - j - 1) mod N (so it ends with shard i)."""
    return [j + 1 for j in range(n - 1)]


def allgather_phases(n: int) -> list[int]:
    """Per allgather step j, the shard offset: rank i sends shard (i - j) mod N (it starts with shard i)."""
    return list(range(n - 1))


def ring_schedule(
    kind: str, ranks: list[str], nbytes: float, phases: list[int], order: list[str] | None = None
) -> Schedule:
    """Steps of N flows around ``order`` (default: the rank list); ``phases``: each step's shard offset.

    Position i of the ring sends the shard of the rank at position (i - offset) mod N;
    shards keep the numbers of ``ranks`` (rank k's shard is k), whatever the order.
    """
    order = ranks if order is None else order
    owner = {r: k for k, r in enumerate(ranks)}
    n = len(order)
    s = Schedule(kind, ranks, shards=n, steps=len(phases))
    for j, offset in enumerate(phases):
        for i in range(n):
            after = () if j == 0 else ((j - 1) * n + i, (j - 1) * n + (i - 1) % n)
            s.add(order[i], order[(i + 1) % n], nbytes / n, after, shards=[owner[order[(i - offset) % n]]])
    return s


@register("allreduce", "ring", default=True, plan=ring_plan, ring=True)
def ring_allreduce(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Ring allreduce: reduce-scatter + allgather, 2(N-1) steps of S/N."""
    n = len(ranks)
    return ring_schedule("allreduce", ranks, nbytes, reduce_scatter_phases(n) + allgather_phases(n))


@register("allreduce", "coherent_ring", plan=ring_plan, ring=True, coherent=True)
def coherent_ring(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Coherent ring allreduce (paper Sec. 5.4): reduce-scatter only, N-1 steps of S/N."""
    s = ring_schedule("allreduce", ranks, nbytes, reduce_scatter_phases(len(ranks)))
    s.coherent = True
    return s


@register("reduce_scatter", "ring", default=True, plan=ring_plan, ring=True)
def ring_reduce_scatter(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Ring reduce-scatter: N-1 steps of S/N; rank i ends with shard i reduced."""
    return ring_schedule("reduce_scatter", ranks, nbytes, reduce_scatter_phases(len(ranks)))


@register("allgather", "ring", default=True, plan=ring_plan, ring=True)
def ring_allgather(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Ring allgather: N-1 steps of S/N; rank i starts with shard i."""
    return ring_schedule("allgather", ranks, nbytes, allgather_phases(len(ranks)))
