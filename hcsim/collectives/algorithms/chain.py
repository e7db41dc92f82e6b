"""Chain broadcast and reduce: S bytes hop by hop along the rank list.

Broadcast: from the first rank along the list; reduce: to the first rank from the last.
N-1 sequential flows: (N-1)(L + S/B) on a uniform network. Both are their kind's
default (``register(..., default=True)``); docs/collectives.md, "Closed forms".
"""

from __future__ import annotations

from hcsim.collectives.plans import plan as chain_plan
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
from hcsim.collectives.view import TopologyView


def _chain(kind: str, ranks: list[str], order: list[str], nbytes: float) -> Schedule:
    n = len(ranks)
    s = Schedule(kind, ranks, shards=n, steps=n - 1)
    for k in range(n - 1):
        s.add(order[k], order[k + 1], nbytes, () if k == 0 else (k - 1,), shards=range(n))
    return s


@register("broadcast", "chain", default=True, plan=chain_plan)
def chain_broadcast(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Chain broadcast from the first rank: N-1 sequential flows of S."""
    return _chain("broadcast", ranks, ranks, nbytes)


@register("reduce", "chain", default=True, plan=chain_plan)
def chain_reduce(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Chain reduce to the first rank, from the last: N-1 sequential flows of S."""
    return _chain("reduce", ranks, ranks[::-1], nbytes)
