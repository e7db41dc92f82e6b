"""The topology graph: XPUs, memory nodes and switches joined by links.

A :class:`Topology` *is* a :class:`networkx.Graph`, so every NetworkX algorithm, view
and drawing function works on it directly. What it adds is a vocabulary (paper Table 2)
and checks: nodes of kind ``xpu`` (device, FLOPS, local memory and its bandwidth,
``rank``), ``memory`` (capacity, kind) and ``switch`` (kind); links with ``bandwidth``
(per lane), ``latency``, ``link_kind`` and ``lanes``, full duplex; an optional ``zone``
per node (``"r03/s07"``) that the compiler turns into nested SimGrid zones, each but the
root with a gateway (:meth:`Topology.set_gateway`). Attributes are in SI units.

Invariant: the ``add_*`` methods accept human units (``"128GBps"``, ``"200ns"``,
``"80GiB"``; :mod:`hcsim.units`) and refuse duplicates; :meth:`Topology.validate`
re-checks a graph built or edited by other means (plain NetworkX calls, a GraphML
file).

Guide: docs/platform.md, "Model" (every attribute) and "Limits".
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import networkx as nx

from hcsim.errors import HcsimError
from hcsim.platform.devices import OPTIONAL_RATES, Device, device
from hcsim.platform.drawing import draw_topology
from hcsim.units import parse_bandwidth, parse_bytes, parse_flops, parse_time

__all__ = [
    "Topology",
    "NODE_KINDS",
    "SWITCH_KINDS",
    "MEMORY_KINDS",
    "MIN_BANDWIDTH",
    "MAX_LATENCY",
    "check_link_parameters",
]

NODE_KINDS = ("xpu", "memory", "switch")
SWITCH_KINDS = ("pcie", "xpu", "cxl", "nic", "tor", "core", "cpu", "generic")
MEMORY_KINDS = ("host_dram", "cxl_type3", "hbm")
HOST_KINDS = ("xpu", "memory")

MIN_BANDWIDTH = 1.0
"""Slowest link accepted, in bytes/s (per link, lanes included). Below it routes cannot be
weighed (1/bandwidth overflows near 1e-293 B/s) and SimGrid's solver, whose precision is
1e-5 bytes, would not see the link move data anyway."""
MAX_LATENCY = 1e6
"""Longest link latency accepted, in seconds (about 11.6 days): beyond it, latency-weighted
routing overflows (near 1e296 s) and SimGrid's clock loses its 1 ns timing precision."""
MAX_LANES = 1 << 16
"""Most parallel lanes in one link bundle."""


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_link_parameters(what: str, bandwidth: object, latency: object, lanes: object = 1) -> None:
    """Refuse a link whose bandwidth (B/s per lane), latency (s) or lanes are out of range, naming ``what``."""
    if isinstance(bandwidth, str):
        raise HcsimError(
            f"{what}: bandwidth is the text {bandwidth!r} (valid: a number of bytes/s; add_link and "
            "read_graphml parse units such as '128GBps')"
        )
    if not _is_number(bandwidth) or not MIN_BANDWIDTH <= bandwidth < math.inf:  # type: ignore[operator]
        raise HcsimError(f"{what}: bandwidth must be a finite rate >= 1 B/s (e.g. '128GBps'), got {bandwidth!r}")
    if isinstance(latency, str):
        raise HcsimError(
            f"{what}: latency is the text {latency!r} (valid: a number of seconds; add_link and read_graphml "
            "parse units such as '200ns')"
        )
    if not _is_number(latency) or not 0 <= latency <= MAX_LATENCY:  # type: ignore[operator]
        raise HcsimError(
            f"{what}: latency must be a time >= 0 and at most {MAX_LATENCY:g} s (e.g. '200ns'), got {latency!r}"
        )
    if not isinstance(lanes, int) or isinstance(lanes, bool) or not 1 <= lanes <= MAX_LANES:
        raise HcsimError(f"{what}: lanes {lanes!r} is invalid (valid: an integer >= 1, at most {MAX_LANES})")


_clear_cache = getattr(nx, "_clear_cache", lambda graph: None)  # NetworkX >= 3.3 caches backend conversions per graph


class Topology(nx.Graph):
    """A platform topology: a NetworkX graph with typed nodes and physical links."""

    # ------------------------------------------------------------------ building
    def add_xpu(
        self,
        name: str,
        xpu: str | Device | None = None,
        *,
        fp16: object = None,
        fp32: object = None,
        memory: object = None,
        memory_bandwidth: object = None,
        zone: str = "",
        **attrs: Any,
    ) -> None:
        """Add an XPU from a preset (``"H100"``, ``"A100"``, ``"V100"``), a Device, or attributes.

        Attributes given explicitly override the preset's, so ``add_xpu("f0", fp16="40TFLOPS",
        fp32="10TFLOPS", memory="16GiB", memory_bandwidth="460GBps", device="fpga")`` makes a
        custom FPGA.
        """
        self._check_new(name)
        base = device(xpu) if xpu is not None else None
        spec = {
            "fp16_flops": parse_flops(fp16, f"XPU '{name}' fp16") if fp16 is not None else None,
            "fp32_flops": parse_flops(fp32, f"XPU '{name}' fp32") if fp32 is not None else None,
            "memory": parse_bytes(memory, f"XPU '{name}' memory") if memory is not None else None,
            "memory_bandwidth": (
                parse_bandwidth(memory_bandwidth, f"XPU '{name}' memory_bandwidth")
                if memory_bandwidth is not None
                else None
            ),
        }
        for key, value in list(spec.items()):
            if value is None:
                if base is None:
                    if key in ("fp16_flops", "fp32_flops"):
                        raise HcsimError(
                            f"XPU '{name}' has no {key[:4]} FLOPS "
                            "(give a preset such as 'H100' or fp16=/fp32= rates like '67TFLOPS')"
                        )
                    spec[key] = math.inf if key == "memory_bandwidth" else 0.0
                else:
                    spec[key] = getattr(base, key)
        attrs.setdefault("device", base.name if base is not None else "custom")
        if base is not None:  # a preset's optional peaks (bf16, tf32, fp8): only those it has
            for key in OPTIONAL_RATES:
                if getattr(base, key) is not None:
                    attrs.setdefault(key, getattr(base, key))
        self.add_node(name, kind="xpu", zone=zone, **spec, **attrs)
        self._check_node(name, self._node[name])

    def add_memory(
        self, name: str, capacity: object = "inf", memory_kind: str = "host_dram", *, zone: str = "", **attrs: Any
    ) -> None:
        """Add a memory node (host DRAM pool, CXL Type 3 expander, ...); capacity may be "inf"."""
        self._check_new(name)
        self.add_node(
            name,
            kind="memory",
            capacity=parse_bytes(capacity, f"memory '{name}' capacity"),
            memory_kind=memory_kind,
            zone=zone,
            **attrs,
        )
        self._check_node(name, self._node[name])

    def add_switch(self, name: str, switch_kind: str = "generic", *, zone: str = "", **attrs: Any) -> None:
        """Add a switch (a router in SimGrid): PCIe, XPU (NVSwitch-like), CXL, NIC, ToR, core or CPU."""
        self._check_new(name)
        self.add_node(name, kind="switch", switch_kind=switch_kind, zone=zone, **attrs)
        self._check_node(name, self._node[name])

    def add_link(
        self,
        u: str,
        v: str,
        bandwidth: object,
        latency: object,
        *,
        link_kind: str = "generic",
        lanes: int = 1,
        **attrs: Any,
    ) -> None:
        """Join ``u`` and ``v`` by a full-duplex link (``bandwidth`` per direction and per lane)."""
        for end in (u, v):
            if end not in self:
                raise HcsimError(f"link '{u}'--'{v}': node '{end}' does not exist (add it first)")
        if self.has_edge(u, v):
            raise HcsimError(f"link '{u}'--'{v}' is a duplicate (use lanes=N for parallel links)")
        what = f"link '{u}'--'{v}'"
        data = dict(
            bandwidth=parse_bandwidth(bandwidth, f"{what} bandwidth"),
            latency=parse_time(latency, f"{what} latency"),
            link_kind=link_kind,
            lanes=lanes,
            **attrs,
        )
        self._check_edge(u, v, data)  # before adding: a refused link must not stay in the graph
        # what add_edge does for two existing nodes and a new link, without copying ``data`` twice (20k links at 4096)
        self._adj[u][v] = self._adj[v][u] = data
        _clear_cache(self)

    def set_gateway(self, zone: str, node: str) -> None:
        """Declare ``node`` (a direct member of ``zone``) the zone's gateway to its parent."""
        gateways = dict(self.graph.get("gateways", {}))
        gateways[zone] = node
        self.graph["gateways"] = gateways

    def set_route(self, src: str, dst: str, path: list[str]) -> None:
        """Pin the route between two hosts to ``path`` (a node list from src to dst; symmetric)."""
        if not path or path[0] != src or path[-1] != dst:
            raise HcsimError(f"route '{src}'->'{dst}': path must start at '{src}' and end at '{dst}'")
        for a, b in pairwise(path):
            if not self.has_edge(a, b):
                raise HcsimError(f"route '{src}'->'{dst}': no link '{a}'--'{b}' (a route must follow links)")
        routes = dict(self.graph.get("routes", {}))
        routes[(src, dst)] = list(path)
        self.graph["routes"] = routes

    # ------------------------------------------------------------------ queries
    def nodes_of(self, kind: str) -> list[str]:
        """Names of the nodes of ``kind`` ("xpu", "memory" or "switch"), in insertion order."""
        return [n for n, d in self._node.items() if d.get("kind") == kind]

    def zone_of(self) -> dict[str, str]:
        """Each node's zone ("" for the root), in insertion order.

        Read from NetworkX's node dict: ``nodes(data="zone")`` costs a generator step per node, and
        folding, routing and validating each read every zone of a 4096-XPU system (13k nodes).
        """
        return {n: d.get("zone", "") for n, d in self._node.items()}

    def xpus(self) -> list[str]:
        """XPU names, ordered by ``rank`` where given (the order collectives use)."""
        xs = self.nodes_of("xpu")
        nodes = self._node  # NetworkX's node dict: a lookup costs less than through its NodeView
        # ties in rank keep insertion order: the position is in the key (not xs.index(n), which is O(N^2))
        order = sorted(range(len(xs)), key=lambda i: (nodes[xs[i]].get("rank", math.inf), i))
        return [xs[i] for i in order]

    def hosts(self) -> list[str]:
        """Nodes that become SimGrid hosts: XPUs and memory nodes."""
        return [n for n, k in self.nodes(data="kind") if k in HOST_KINDS]

    def is_host(self, node: str) -> bool:
        return self.nodes[node].get("kind") in HOST_KINDS

    def gateways(self) -> dict[str, str]:
        return dict(self.graph.get("gateways", {}))

    def routes(self) -> dict[tuple[str, str], list[str]]:
        return dict(self.graph.get("routes", {}))

    # ------------------------------------------------------------------ checks
    def _check_new(self, name: object) -> None:
        if not isinstance(name, str) or not name or name != name.strip():
            raise HcsimError(f"node name {name!r} is invalid (valid: a non-empty string without outer spaces)")
        if name in self:
            raise HcsimError(f"node '{name}' is a duplicate (node names must be unique)")

    @staticmethod
    def _check_node(name: str, data: dict[str, Any]) -> None:
        kind = data.get("kind")
        if kind not in NODE_KINDS:
            raise HcsimError(f"node '{name}': kind {kind!r} is unknown (valid: {', '.join(NODE_KINDS)})")
        if kind == "xpu":
            for key in ("fp16_flops", "fp32_flops"):
                value = data.get(key)
                if not _is_number(value) or not value > 0 or math.isinf(value):
                    raise HcsimError(
                        f"XPU '{name}' has no valid {key} (got {value!r}; valid: a finite rate > 0 such as '67TFLOPS')"
                    )
            memory = data.get("memory", 0)
            if not _is_number(memory) or not memory >= 0:
                raise HcsimError(f"XPU '{name}': memory must be >= 0 bytes (e.g. '80GiB'), got {memory!r}")
            bandwidth = data.get("memory_bandwidth", math.inf)
            if not _is_number(bandwidth) or not bandwidth > 0:
                raise HcsimError(f"XPU '{name}': memory_bandwidth must be > 0 (e.g. '3.35TBps'), got {bandwidth!r}")
            rank = data.get("rank", 0)
            if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
                raise HcsimError(f"XPU '{name}': rank {rank!r} is invalid (valid: an integer >= 0)")
        elif kind == "memory":
            if data.get("memory_kind") not in MEMORY_KINDS:
                raise HcsimError(
                    f"memory '{name}': memory_kind {data.get('memory_kind')!r} is unknown "
                    f"(valid: {', '.join(MEMORY_KINDS)})"
                )
            cap = data.get("capacity", math.inf)
            if not _is_number(cap) or not cap > 0:
                raise HcsimError(f"memory '{name}': capacity must be > 0 bytes or 'inf', got {cap!r}")
        elif data.get("switch_kind") not in SWITCH_KINDS:
            raise HcsimError(
                f"switch '{name}': switch_kind {data.get('switch_kind')!r} is unknown "
                f"(valid: {', '.join(SWITCH_KINDS)})"
            )
        zone = data.get("zone", "")
        if not isinstance(zone, str) or zone.startswith("/") or zone.endswith("/") or "//" in zone:
            raise HcsimError(f"node '{name}': zone {zone!r} is invalid (valid: '' or a path like 'r03/s07')")

    @staticmethod
    def _check_edge(u: str, v: str, data: dict[str, Any]) -> None:
        what = f"link '{u}'--'{v}'"
        if u == v:
            raise HcsimError(f"{what} joins a node to itself (valid: a link between two different nodes)")
        if data.get("bandwidth") is None:
            raise HcsimError(f"{what} has no bandwidth (valid: a rate >= 1 B/s such as '128GBps')")
        check_link_parameters(what, data.get("bandwidth"), data.get("latency"), data.get("lanes", 1))

    def validate(self) -> Topology:
        """Check every node, link, zone and gateway; raise HcsimError on the first problem."""
        if self.number_of_nodes() == 0:
            raise HcsimError("topology is empty (add XPUs, memory nodes, switches and links)")
        for name, data in self.nodes(data=True):
            if not isinstance(name, str):
                raise HcsimError(f"node name {name!r} is invalid (valid: a string)")
            self._check_node(name, data)
        for u, v, data in self.edges(data=True):
            self._check_edge(u, v, data)
        for n in self.nodes:
            if self.degree(n) == 0:
                raise HcsimError(f"node '{n}' has no link (every node must be connected)")
        if not self.xpus():
            raise HcsimError("topology has no XPU (add at least one with add_xpu)")
        zones = self.zone_tree()
        gateways = self.gateways()
        for zone in sorted(zones):
            if zone == "":
                continue
            gw = gateways.get(zone)
            if gw is None:
                raise HcsimError(f"zone '{zone}' has no gateway (call set_gateway('{zone}', NODE))")
            if gw not in self or self.nodes[gw].get("zone", "") != zone:
                raise HcsimError(f"zone '{zone}': gateway {gw!r} is not a node of that zone")
        by_zone: dict[str, list[str]] = {}
        for n, z in self.zone_of().items():
            by_zone.setdefault(z, []).append(n)
        for zone, children in zones.items():
            if children:
                for n in by_zone.get(zone, []):
                    if self.is_host(n):
                        raise HcsimError(
                            f"host '{n}' is in zone '{zone}', which has sub-zones "
                            "(hosts must sit in zones without sub-zones)"
                        )
                names = set(self.nodes)
                for child in children:
                    if child in names:
                        raise HcsimError(f"zone '{child}' has the same name as a node (rename one)")
        return self

    # ------------------------------------------------------------------ zones
    def zone_tree(self) -> dict[str, list[str]]:
        """Every zone (root is "") mapped to its sorted child zones."""
        zones: set[str] = {""}
        for zone in set(self.zone_of().values()):
            parts = zone.split("/") if zone else []
            for i in range(1, len(parts) + 1):
                zones.add("/".join(parts[:i]))
        tree: dict[str, list[str]] = {z: [] for z in zones}
        for z in zones:
            if z:
                tree[z.rpartition("/")[0]].append(z)
        for children in tree.values():
            children.sort()
        return tree

    def members(self, zone: str) -> list[str]:
        """Nodes whose zone is exactly ``zone``."""
        return [n for n, z in self.zone_of().items() if z == zone]

    def iter_links(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """Links as (a, b, data) with a < b, in sorted order (the orientation the compiler uses)."""
        for u, v in sorted(tuple(sorted(e)) for e in self.edges):
            yield u, v, self.edges[u, v]

    def draw(self, path: str | os.PathLike[str] | None = None, ax: Any = None, title: str | None = None) -> Any:
        """Draw in layers (core, ToRs, servers' switches, XPUs, memory); save to ``path`` if given."""
        return draw_topology(self, path=path, ax=ax, title=title)
