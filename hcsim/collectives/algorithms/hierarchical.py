"""Topology-aware allreduce over servers: hierarchical (NCCL/Horovod-like) and the 2D ring.

The ranks are grouped by server (:meth:`TopologyView.by_server`): M servers of g ranks;
every phase is a ring, and a rank enters the next phase once its own last send and
receive of the previous one have completed.

* ``hierarchical``: ring reduce-scatter inside each server, a ring allreduce of slice l
  across the servers among the local ranks l (the g rings at once), ring allgather
  inside each server: 2 (g-1)(a_s + S/(g B_s)) + 2 (M-1)(a_x + S/(M B_x));
* ``ring_2d``: a ring allreduce of all S bytes inside each server, then across the
  servers among the local ranks l: 2 (g-1)(a_s + S/(g B_s)) + 2 (M-1)(a_x + g S/(M B_x)).

(a_s, B_s: an intra-server step; a_x, B_x: an inter-server step and the server's uplink.)
With one server, one rank per server, or servers of unequal size, both are the plain ring
(over :meth:`TopologyView.topology_order` in the last case).

Derivation: docs/collectives.md, "Closed forms" (Hierarchical and 2D ring).
"""

from __future__ import annotations

from hcsim.collectives.algorithms.ring import allgather_phases, reduce_scatter_phases
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
from hcsim.collectives.view import TopologyView


class _Rings:
    """Ring phases over groups of ranks; each rank remembers its last send and receive."""

    def __init__(self, s: Schedule) -> None:
        self.s = s
        self.last: dict[str, list[int]] = {r: [] for r in s.ranks}

    def ring(self, members: list[str], nbytes: float, chunks: list[list[int]], phases: list[int]) -> None:
        """A ring over ``members`` moving ``nbytes`` per flow; in step j member i sends chunk (i - phases[j]) mod n."""
        n = len(members)
        if n < 2:
            return
        sent = [list(self.last[r]) for r in members]  # the first step waits for the previous phase
        got = [[] for _ in members]
        for offset in phases:
            flows = []
            for i in range(n):
                dst, shards = members[(i + 1) % n], chunks[(i - offset) % n]
                flows.append(self.s.add(members[i], dst, nbytes, sent[i] + got[i], shards=shards))
            sent = [[f] for f in flows]
            got = [[flows[(i - 1) % n]] for i in range(n)]
        for i, r in enumerate(members):
            self.last[r] = sent[i] + got[i]


def _grid(ranks: list[str], view: TopologyView) -> list[list[str]] | None:
    servers = view.by_server(ranks)
    return servers if len({len(g) for g in servers}) == 1 else None


@register("allreduce", "hierarchical")
def hierarchical(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Hierarchical allreduce: intra-server ring reduce-scatter, inter-server ring allreduce, intra-server allgather."""
    servers = _grid(ranks, view)
    if servers is None:
        return _fallback(ranks, nbytes, view)
    m, g = len(servers), len(servers[0])
    s = Schedule("allreduce", ranks, shards=g * m)  # shard l*M + k: chunk k of slice l
    slices = [list(range(lo * m, lo * m + m)) for lo in range(g)]
    rings = _Rings(s)
    for members in servers:
        rings.ring(members, nbytes / g, slices, reduce_scatter_phases(g))
    for lo in range(g):
        across = [members[lo] for members in servers]
        rings.ring(
            across, nbytes / (g * m), [[lo * m + k] for k in range(m)], reduce_scatter_phases(m) + allgather_phases(m)
        )
    for members in servers:
        rings.ring(members, nbytes / g, slices, allgather_phases(g))
    s.steps = 2 * (g - 1) + 2 * (m - 1)
    return s


@register("allreduce", "ring_2d")
def ring_2d(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """2D ring allreduce: a ring allreduce inside each server, then one across servers per local rank."""
    servers = _grid(ranks, view)
    if servers is None:
        return _fallback(ranks, nbytes, view)
    m, g = len(servers), len(servers[0])
    s = Schedule("allreduce", ranks, shards=g * m)  # intra chunk c: shards c*M..; inter chunk c: shards c*g..
    rings = _Rings(s)
    intra = [list(range(c * m, c * m + m)) for c in range(g)]
    for members in servers:
        rings.ring(members, nbytes / g, intra, reduce_scatter_phases(g) + allgather_phases(g))
    inter = [list(range(c * g, c * g + g)) for c in range(m)]
    for lo in range(g):
        rings.ring(
            [members[lo] for members in servers], nbytes / m, inter, reduce_scatter_phases(m) + allgather_phases(m)
        )
    s.steps = 2 * (g - 1) + 2 * (m - 1)
    return s


def _fallback(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """The ring allreduce over the topology order (servers of unequal size have no grid)."""
    n = len(ranks)
    s = Schedule("allreduce", ranks, shards=n, steps=2 * (n - 1))
    _Rings(s).ring(
        view.topology_order(ranks), nbytes / n, [[k] for k in range(n)], reduce_scatter_phases(n) + allgather_phases(n)
    )
    return s
