"""Direct algorithms: every pair at once.

* ``direct`` all-to-all: every rank sends S/N to every other rank at once; on a
  non-blocking switch of latency L (rank to rank) and bandwidth B per port:
  L + (N-1) S/(N B);
* ``direct`` p2p: one flow of S from the first rank to the second.
"""

from __future__ import annotations

from hcsim.collectives.plans import plan as direct_plan
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
from hcsim.collectives.view import TopologyView


@register("alltoall", "direct", default=True, plan=direct_plan)
def direct_alltoall(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Direct all-to-all: N(N-1) flows of S/N at once."""
    n = len(ranks)
    s = Schedule("alltoall", ranks, shards=n * n, steps=1)
    for i, a in enumerate(ranks):
        for j, b in enumerate(ranks):
            if a != b:
                s.add(a, b, nbytes / n, shards=[i * n + j])
    return s


@register("p2p", "direct", default=True, plan=direct_plan)
def direct_p2p(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """One flow of S from the first rank to the second."""
    s = Schedule("p2p", ranks, steps=1)
    s.add(ranks[0], ranks[1], nbytes)
    return s
