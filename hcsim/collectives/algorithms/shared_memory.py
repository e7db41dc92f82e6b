"""CXL shared-memory allreduce: reduction through the coherent fabric's memory (coherent systems only).

Semantics assumed (a coherent fabric, e.g. CXL 3 with Type 3 expanders, as in the
paper's Fig. 6b): every XPU can write into, and read from, the CXL memory attached to
any other XPU (:meth:`TopologyView.memory`) at the fabric's bandwidth, with hardware
coherence, so that data written by one XPU is visible to a reader once the write has
completed; and, as for the paper's coherent ring, the reduced gradient only has to
exist once, in coherent memory, not on every XPU (no allgather).

``cxl_shared_memory``: the data (S bytes per XPU) is cut into N slices; slice j belongs
to rank j. Every rank i writes its slice j (S/N) to the CXL memory of rank j, for every
j != i, all at once; rank j reads each of its N-1 peers' slices back from its memory
once that slice's write has completed, and reduces them with its own: the reduced
slice j ends at rank j (and is visible to all through coherence).

On one server of the paper's CXL system (XPUs and expanders on one CXL switch, links of
latency l and bandwidth B; a rank's N-1 writes share its link to the switch, the N-1
writes into one memory share that memory's link, and likewise for the reads):
2 (2 l + (N-1)/N S/B).
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
