"""What a collective algorithm may know of the topology: which ranks share a server, a rack.

Topology-aware algorithms (hierarchical allreduce, NCCL-like ring order, 2D rings)
group ranks by server and rack; nothing else of the platform is theirs to see (the
engine times their flows on the real routes). A rank's *zone* is its server zone in
the topology (``r01/s03`` in the paper's systems); the rack is the zone's parent.
Ranks with no zone (a platform not written by hcsim) each form a server of their own
inside one rack, so topology-aware algorithms degrade to their flat versions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TopologyView"]


@dataclass(frozen=True)
class TopologyView:
    """Server and rack of each rank (``zones``: rank -> server zone)."""

    zones: Mapping[str, str] = field(default_factory=dict)
    memories: Mapping[str, str] = field(default_factory=dict)  # rank -> its CXL memory host, if any

    @classmethod
    def of_topology(cls, topology: Any) -> TopologyView:
        """From an :class:`hcsim.platform.Topology` (its XPUs' ``zone`` attributes)."""
        xs = topology.xpus()
        memories = {x: m for x in xs if (m := topology.nodes[x].get("cxl_memory"))}
        return cls({x: str(topology.nodes[x].get("zone", "")) for x in xs}, memories)

    @classmethod
    def of_hosts(cls, hosts: Mapping[str, Any]) -> TopologyView:
        """From SimGrid hosts (the ``zone`` property the compiler writes on XPUs)."""
        zones, memories = {}, {}
        for name, h in hosts.items():
            if h.get_property("kind") == "xpu" or h.get_property("zone") is not None:
                zones[name] = h.get_property("zone") or ""
                if h.get_property("cxl_memory"):
                    memories[name] = h.get_property("cxl_memory")
        return cls(zones, memories)

    def memory(self, rank: str) -> str | None:
        """The CXL (coherent) memory host attached to ``rank``, or None on a non-coherent system."""
        return self.memories.get(rank)

    def server(self, rank: str) -> str:
        zone = self.zones.get(rank, "")
        return zone if zone else f"<{rank}>"

    def rack(self, rank: str) -> str:
        zone = self.zones.get(rank, "")
        return zone.rsplit("/", 1)[0] if "/" in zone else ""

    def by_server(self, ranks: list[str]) -> list[list[str]]:
        """``ranks`` grouped by server, servers in order of first appearance, ranks in list order."""
        groups: dict[str, list[str]] = {}
        for r in ranks:
            groups.setdefault(self.server(r), []).append(r)
        return list(groups.values())

    def topology_order(self, ranks: list[str]) -> list[str]:
        """Ranks ordered as NCCL orders a ring: inside a server first, servers by rack, racks in order."""
        racks: dict[str, dict[str, list[str]]] = {}
        for r in ranks:
            racks.setdefault(self.rack(r), {}).setdefault(self.server(r), []).append(r)
        return [r for servers in racks.values() for members in servers.values() for r in members]
