"""Pairwise-exchange all-to-all: N-1 steps, one partner per step.

In step k (1..N-1) rank i sends its piece for rank i+k mod N (S/N bytes) to that rank
and receives rank i-k's piece; a rank's step-k send waits for its step k-1 send and
for the step k-1 piece it received. On a non-blocking star (alpha: rank-to-rank
latency, B: port bandwidth) each step is one flow per port: (N-1)(alpha + S/(N B)).
"""

from __future__ import annotations

from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
from hcsim.collectives.view import TopologyView


@register("alltoall", "pairwise")
def pairwise_alltoall(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Pairwise-exchange all-to-all: N-1 steps; in step k rank i sends S/N to rank i+k."""
    n = len(ranks)
    s = Schedule("alltoall", ranks, shards=n * n, steps=n - 1)
    sent: list[int | None] = [None] * n  # each rank's flow of the previous step
    received: list[int | None] = [None] * n  # the flow into each rank in the previous step
    for k in range(1, n):
        now_sent, now_received = [0] * n, [0] * n
        for i in range(n):
            j = (i + k) % n
            after = [f for f in (sent[i], received[i]) if f is not None]
            now_sent[i] = now_received[j] = s.add(ranks[i], ranks[j], nbytes / n, after, shards=[i * n + j])
        sent, received = list(now_sent), list(now_received)
    return s
