"""Ring all-to-all: ASTRA-sim's ``ring`` all-to-all implementation, as a step-synchronous schedule.

``ring`` all-to-all (ASTRA-sim's ``Ring`` with ``ComType::All_to_All``, Ring.cc: messages
of S/N, N(N-1)/2 of them per rank, all to the next rank of the ring): in step k
(k = 1 .. N-1) every rank i sends to rank i+1 the N-k pieces of S/N that started at rank
i-k+1 and are still on their way (those for ranks i+1 .. i-k+N); rank i+1 keeps its own
piece and forwards the rest in step k+1. Each step waits for the previous step's flow
into the sender. On a ring of links of latency L and bandwidth B per direction:

    sum_k (L + (N-k) S/(N B)) = (N-1) L + (N-1) S / (2 B).

Ranks are taken in the order given (ASTRA-sim's ring is the NPU order of the dimension);
S is the per-rank send buffer, as for every all-to-all here.
"""

from __future__ import annotations

from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
from hcsim.collectives.view import TopologyView


@register("alltoall", "ring")
def ring_alltoall(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Ring all-to-all (ASTRA-sim's): N-1 steps to the next rank, step k carrying N-k pieces of S/N."""
    n = len(ranks)
    s = Schedule("alltoall", ranks, shards=n * n, steps=n - 1)
    into: list[int | None] = [None] * n  # the flow of the previous step into each rank
    for k in range(1, n):
        flows: list[int] = []
        for i in range(n):
            src = (i - k + 1) % n  # the rank the pieces started at
            pieces = [src * n + (src + d) % n for d in range(k, n)]  # still travelling: distance >= k
            after = [] if into[i] is None else [into[i]]
            flows.append(s.add(ranks[i], ranks[(i + 1) % n], nbytes * len(pieces) / n, after=after, shards=pieces))
        into = [flows[(i - 1) % n] for i in range(n)]
    return s
