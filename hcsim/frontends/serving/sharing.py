"""Whether replicas simulated one by one could slow each other down: the links their routes share.

Each replica's iterations are SimGrid runs of its own group alone (memoized by shape), so
two replicas never contend in the simulation. That is exact when no link carries traffic
of two replicas: :func:`shared_links` lists the links (node pairs) on the routes of two or
more groups, a route being every pair of the group's ranks (a superset of what its
collectives use) and each rank to the memory nodes its KV tiers or swaps use. SimGrid's
switches are routing points without a capacity of their own, so only links can be shared.
Invariant: an empty list means the separate runs are what one joint run would give.
"""

from __future__ import annotations

from itertools import pairwise

from hcsim.platform.routing import Router
from hcsim.platform.topology import Topology

__all__ = ["shared_links"]


def shared_links(topo: Topology, groups: list[list[str]], memories: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Links used by two or more ``groups``; ``memories``: XPU attributes naming memory nodes reached
    (``cxl_memory``, ``host_memory``)."""
    router = Router(topo)
    owners: dict[tuple[str, str], set[int]] = {}
    for k, group in enumerate(groups):
        used: set[tuple[str, str]] = set()
        for a in group:
            ends = [b for b in group if b != a]
            ends += [m for m in (topo.nodes[a].get(attr) for attr in memories) if m]
            for b in ends:
                used.update(tuple(sorted(e)) for e in pairwise(router.path(a, b)))  # type: ignore[misc]
        for e in used:
            owners.setdefault(e, set()).add(k)
    return sorted(e for e, ks in owners.items() if len(ks) > 1)
