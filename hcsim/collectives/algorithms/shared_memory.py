"""CXL shared-memory allreduce: reduction through the coherent fabric's memory (coherent systems only).

``cxl_shared_memory``: the data (S bytes per XPU) is cut into N slices, slice j
belonging to rank j. Every rank writes its slice j to the CXL memory of rank j
(:meth:`TopologyView.memory`), all at once; rank j reads each peer's slice back once its
write has completed and reduces it with its own, so the reduced slice j ends at rank j,
visible to all through coherence (no allgather, as for the paper's coherent ring).

On one server of the paper's CXL system (links of latency l and bandwidth B):
2 (2 l + (N-1)/N S/B).

The coherence semantics assumed: docs/collectives.md, "Closed forms" (CXL shared memory).
"""

from __future__ import annotations

from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
from hcsim.collectives.view import TopologyView
from hcsim.errors import HcsimError


@register("allreduce", "cxl_shared_memory", coherent=True)
def cxl_shared_memory(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """CXL shared-memory allreduce: write slice j to rank j's CXL memory, rank j reads and reduces it (coherent)."""
    n = len(ranks)
    memory = [view.memory(r) for r in ranks]
    for r, m in zip(ranks, memory, strict=True):
        if m is None:
            raise HcsimError(
                f"algorithm 'cxl_shared_memory' needs a CXL memory for every rank, and rank '{r}' has none "
                "(valid: a coherent system, e.g. --system cxl)"
            )
    s = Schedule("allreduce", ranks, shards=n, coherent=True, steps=2, pools=list(dict.fromkeys(memory)))
    writes: list[list[int]] = [[] for _ in ranks]  # writes into the memory of each slice owner
    for i, a in enumerate(ranks):
        for j in range(n):
            if i != j:
                writes[j].append(s.add(a, memory[j], nbytes / n, shards=[j]))
    for j in range(n):
        for w in writes[j]:
            s.add(memory[j], ranks[j], nbytes / n, [w], shards=[j])
    return s
