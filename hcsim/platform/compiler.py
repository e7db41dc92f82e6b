"""Compile a :class:`~hcsim.platform.topology.Topology` to SimGrid platform XML (v4.1).

:func:`compile_platform` turns XPUs and memory nodes into ``<host>`` (an XPU's speed is
its FLOPS at the chosen precision, its attributes host properties the engine reads),
switches and CPUs into ``<router>``, and links into ``SPLITDUPLEX`` links (a bundle of
``lanes`` becomes one link of ``lanes x bandwidth``). Routes follow the topology's
zones: a ``Full`` zone per server, one route per pair of child zones above it, between
their gateways (:mod:`.routing` composes them the same way). The ``<config>`` carries
SimGrid's ``raw`` network model (:data:`NETWORK_CONFIG`), under which a lone transfer
takes exactly sum(latencies) + size / bottleneck bandwidth (paper eq. 2), plus the
solver settings a topology needs for exact times.

Invariants: the same topology gives byte-identical XML; the file is written to a
temporary name and renamed, so a failure never leaves a half-written platform.

Why each choice (duplex links, lanes, the sharing weights, zones, SimGrid's gateway
rules): docs/platform.md, "How a topology compiles", "Routing" and "Network model".
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, BinaryIO

from lxml import etree

from hcsim.errors import HcsimError
from hcsim.files import atomic_path
from hcsim.platform.routing import Router, common_zone
from hcsim.platform.topology import Topology

__all__ = ["compile_platform", "CompileStats", "NETWORK_CONFIG", "link_id", "zone_id"]

NETWORK_CONFIG = {
    "network/model": "raw",
    "network/crosstraffic": "0",
}
ROOT_ZONE = "hcsim"
#: XPU attributes written as host properties (the engine reads them from the platform)
XPU_PROPERTIES = (
    "device",
    "fp16_flops",
    "fp32_flops",
    "memory",
    "memory_bandwidth",
    "rank",
    "host_memory",
    "cxl_memory",
    "zone",  # server / rack zone: what collective algorithms see of the topology (hcsim.collectives.view)
    # optional peaks of devices that have them (H100-SXM, A100-SXM): written only when set, so platforms of
    # the other presets stay byte-identical
    "bf16_flops",
    "tf32_flops",
    "fp8_flops",
)
PRECISIONS = ("fp16", "fp32", "bf16", "tf32", "fp8")
"""Precisions whose rate may become the XPUs' host speed (bf16, tf32, fp8 only where every XPU has it)."""
SWITCH_ZONE = ".switches"
MAX_ZONE_HOSTS = 2048
"""Most hosts in one zone without sub-zones. Such a zone holds a route for every pair of its
hosts (2048 hosts: 2.1M routes, about a minute; each doubling takes four times as long and
as much disk), so a larger flat topology would look hung: group its nodes into zones."""


@dataclass
class CompileStats:
    """What a compilation produced (for logs and the platform benchmark)."""

    hosts: int = 0
    routers: int = 0
    links: int = 0
    routes: int = 0
    zones: int = 0


def link_id(u: str, v: str) -> str:
    """SimGrid name of the link joining ``u`` and ``v`` (orientation-free)."""
    a, b = (u, v) if u < v else (v, u)
    return f"{a}--{b}"


def _check_link_names(topology: Topology) -> None:
    """Refuse two links that :func:`link_id` would give the same SimGrid name (node names containing '--')."""
    named: dict[str, tuple[str, str]] = {}
    for a, b, _ in topology.iter_links():
        name = link_id(a, b)
        if name in named:
            x, y = named[name]
            raise HcsimError(
                f"links '{x}'/'{y}' and '{a}'/'{b}' would both get the SimGrid link name '{name}' "
                "(valid: node names such that no two links join to the same 'u--v'; avoid '--' in node names)"
            )
        named[name] = (a, b)


def zone_id(zone: str) -> str:
    return zone if zone else ROOT_ZONE


def _num(x: float) -> str:
    """Shortest text that parses back to exactly ``x`` (integers without a fraction)."""
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    return repr(float(x))


MAX_LATENCY = 1e6
"""Longest link latency SimGrid can simulate here (s): at a date of 1e297 s a nanosecond step is below
the clock's resolution and SimGrid never advances (a hang found by fuzzing)."""
MIN_BANDWIDTH = 1.0
"""Slowest link SimGrid can simulate here (B/s, lanes included): at 5e-300 B/s one byte takes 2e299 s,
with the same effect."""

SIMGRID_TIMING_PRECISION = 1e-9
"""SimGrid 4.1's default ``precision/timing`` (seconds)."""


def _check_simulable(topology: Topology) -> None:
    """Refuse link values SimGrid's double-precision clock cannot simulate (a valid topology may still hold them)."""
    for u, v, data in topology.iter_links():
        if data["latency"] > MAX_LATENCY:
            raise HcsimError(
                f"link '{u}'--'{v}': latency {data['latency']:g} s is too long to simulate "
                f"(valid: up to {MAX_LATENCY:g} s)"
            )
        if data["bandwidth"] * data.get("lanes", 1) < MIN_BANDWIDTH:
            raise HcsimError(
                f"link '{u}'--'{v}': bandwidth {data['bandwidth']:g} B/s x {data.get('lanes', 1)} lanes is too low "
                f"to simulate (valid: at least {MIN_BANDWIDTH:g} B/s)"
            )


def _solver_for(topology: Topology) -> dict[str, str]:
    """SimGrid settings some topologies need for exact times; both were found by fuzzing (tests/platform/test_fuzz.py).

    * ``network/optim: Full`` when a link has zero latency. With SimGrid 4.1's default
      Lazy updates a flow whose route has zero total latency completes at the date of any
      exec that ends before it (reproduced in plain SimGrid: 2083 B at 9.49 TB/s, due at
      2.19e-10 s, ends at 3.2e-12 s beside a 3.2e-12 s exec); a latency of even 1e-12 s,
      or the Full solver, gives the right date. Full costs 5-15% more time, so only
      platforms with a zero-latency link pay it.
    * a finer ``precision/timing`` when a link's latency is under 10x SimGrid's 1e-9 s:
      an event (an exec ending) while less than ``precision/timing`` of a flow's latency
      remains drops that remainder (1 B over 0 s + 1 ns links at 1 kB/s beside a 1.5e-14 s
      exec took 1e-3 s instead of 1e-3 + 1e-9 s). SimGrid warns about latencies below
      its precision and advises exactly this; hcsim sets it 1000x below the smallest latency.
    """
    config: dict[str, str] = {}
    latencies = [data["latency"] for _, _, data in topology.edges(data=True)]
    if any(lat == 0 for lat in latencies):
        config["network/optim"] = "Full"
    positive = [lat for lat in latencies if lat > 0]
    if positive and min(positive) < 10 * SIMGRID_TIMING_PRECISION:
        config["precision/timing"] = _num(min(positive) / 1000)
    return config


def _coherence(topology: Topology) -> bool | None:
    """Whether ``topology`` was built for coherent memory: its ``coherent`` attribute, else its paper system."""
    value = topology.graph.get("coherent")
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return {"cxl": True, "noncoherent": False}.get(topology.graph.get("system"))


class _Writer:
    def __init__(self, topology: Topology, precision: str, xf: Any) -> None:
        if precision not in PRECISIONS:
            raise HcsimError(f"precision {precision!r} is unknown (valid: {', '.join(PRECISIONS)})")
        if precision not in ("fp16", "fp32"):
            for x in topology.xpus():
                if f"{precision}_flops" not in topology.nodes[x]:
                    data = topology.nodes[x]
                    have = ", ".join(p for p in PRECISIONS if f"{p}_flops" in data)
                    raise HcsimError(
                        f"XPU '{x}' (device '{data.get('device')}') has no {precision} rate (valid: {have})"
                    )
        self.topo = topology
        self.precision = precision
        self.xf = xf
        self.router = Router(topology)
        self.tree = topology.zone_tree()
        self.stats = CompileStats()
        # each link is declared in the lowest zone containing both its ends
        self.links_by_zone: dict[str, list[tuple[str, str, dict]]] = {}
        zone_of = dict(topology.nodes(data="zone", default=""))
        _check_link_names(topology)
        for zone, children in self.tree.items():
            hosts = sum(1 for n in self.router.members[zone] if topology.is_host(n))
            if not children and hosts > MAX_ZONE_HOSTS:
                raise HcsimError(
                    f"zone '{zone_id(zone)}' holds {hosts} hosts and no sub-zones, which needs "
                    f"{hosts * (hosts - 1) // 2} routes (valid: at most {MAX_ZONE_HOSTS} hosts per zone; "
                    "give nodes a 'zone' such as 'r03/s07')"
                )
        for a, b, data in topology.iter_links():
            self.links_by_zone.setdefault(common_zone(zone_of[a], zone_of[b]), []).append((a, b, data))

    # ---------------------------------------------------------------- elements
    def host(self, name: str, data: dict) -> None:
        props: dict[str, str] = {"kind": data["kind"]}
        if data["kind"] == "xpu":
            speed = data[f"{self.precision}_flops"]
            for key in XPU_PROPERTIES:
                if key in data:
                    props[key] = _num(data[key]) if isinstance(data[key], (int, float)) else str(data[key])
            props["precision"] = self.precision
        else:
            speed = 1.0
            props["memory_kind"] = data["memory_kind"]
            props["capacity"] = _num(data.get("capacity", math.inf))
        with self.xf.element("host", id=name, speed=f"{_num(speed)}f"):
            for key, value in props.items():
                self.xf.write(etree.Element("prop", id=key, value=value))
        self.xf.write("\n")
        self.stats.hosts += 1

    def link(self, a: str, b: str, data: dict) -> None:
        bw = data["bandwidth"] * data.get("lanes", 1)
        el = etree.Element(
            "link",
            id=link_id(a, b),
            bandwidth=f"{_num(bw)}Bps",
            latency=f"{_num(data['latency'])}s",
            sharing_policy="SPLITDUPLEX",
        )
        etree.SubElement(el, "prop", id="kind", value=str(data.get("link_kind", "generic")))
        self.xf.write(el, "\n")
        self.stats.links += 1

    def route(self, tag: str, path: list[str], **attrs: str) -> None:
        el = etree.Element(tag, **attrs)
        for u, v in pairwise(path):
            etree.SubElement(el, "link_ctn", id=link_id(u, v), direction="UP" if u < v else "DOWN")
        self.xf.write(el, "\n")
        self.stats.routes += 1

    # ---------------------------------------------------------------- zones
    def zone(self, zone: str) -> None:
        children = self.tree[zone]
        members = sorted(self.router.members[zone])
        self.stats.zones += 1
        with self.xf.element("zone", id=zone_id(zone), routing="Full"):
            coherent = _coherence(self.topo) if not zone else None
            if coherent is not None:
                # the memory semantics the system was built for: 'hcsim run --platform' defaults to it
                self.xf.write(etree.Element("prop", id="coherent", value="true" if coherent else "false"), "\n")
            if not children:
                self._leaf_zone(zone, members)
            else:
                self._inner_zone(zone, members, children)

    def _leaf_zone(self, zone: str, members: list[str]) -> None:
        hosts = [n for n in members if self.topo.is_host(n)]
        for n in hosts:
            self.host(n, self.topo.nodes[n])
        for n in members:
            if not self.topo.is_host(n):
                self.xf.write(etree.Element("router", id=n), "\n")
                self.stats.routers += 1
        for a, b, data in self.links_by_zone.get(zone, []):
            self.link(a, b, data)
        endpoints = list(hosts)
        if zone:
            gw = self.router.gateways[zone]
            if gw not in endpoints:
                endpoints.append(gw)
        for (src, dst), path in sorted(self.router.local_routes(zone, endpoints).items()):
            if self.router.from_source and not self.router.pinned:  # each way its own route (hcsim.platform.routing)
                self.route("route", path, src=src, dst=dst, symmetrical="NO")
                self.route("route", self.router.gateway_path(zone, dst, src), src=dst, dst=src, symmetrical="NO")
            else:
                self.route("route", path, src=src, dst=dst)

    def _inner_zone(self, zone: str, members: list[str], children: list[str]) -> None:
        # SimGrid's DTD order inside a zone: sub-zones, then links, then routes
        for child in children:
            self.zone(child)
        local = f"{zone}/{SWITCH_ZONE}" if zone else SWITCH_ZONE
        if members:
            self.stats.zones += 1
            with self.xf.element("zone", id=local, routing="Full"):
                for n in members:
                    self.xf.write(etree.Element("router", id=n), "\n")
                    self.stats.routers += 1
        for a, b, data in self.links_by_zone.get(zone, []):
            self.link(a, b, data)
        # (zone id, gateway, is the gateway a direct member of that zone) for every child,
        # plus the local switch zone if routes from above must reach this zone's gateway
        ends = [(zone_id(c), self.router.gateways[c], not self.tree[c]) for c in children]
        if zone and members:
            ends.append((local, self.router.gateways[zone], True))
        for i, (za, ga, direct_a) in enumerate(ends):
            for zb, gb, direct_b in ends[i + 1 :]:
                path = self.router.gateway_path(zone, ga, gb)
                if direct_a and direct_b:
                    self.route("zoneRoute", path, src=za, dst=zb, gw_src=ga, gw_dst=gb)
                else:
                    # SimGrid 4.1 descends from a gateway by asking the gateway's own zone for a
                    # zone-to-router route, which cannot be declared; a bypass route instead has
                    # both legs resolved recursively. Bypass routes are one-way: write both.
                    self.route("bypassZoneRoute", path, src=za, dst=zb, gw_src=ga, gw_dst=gb)
                    self.route("bypassZoneRoute", path[::-1], src=zb, dst=za, gw_src=gb, gw_dst=ga)


def compile_platform(
    topology: Topology,
    path: str | os.PathLike[str] | BinaryIO,
    *,
    precision: str = "fp32",
    config: dict[str, str] | None = None,
) -> CompileStats:
    """Write ``topology`` as SimGrid platform XML to ``path`` (or an open binary file); return what was written.

    ``precision`` ("fp32", "fp16"; "bf16", "tf32" or "fp8" where every XPU has that rate)
    picks the rate that becomes each XPU's host speed;
    ``config`` adds or overrides SimGrid ``<config>`` properties. The file is written
    to a temporary name and renamed, so a reader never sees half of it::

        >>> import os, tempfile
        >>> from hcsim.platform import compile_platform, noncoherent_system
        >>> path = os.path.join(tempfile.mkdtemp(), "nc16.xml")
        >>> stats = compile_platform(noncoherent_system(16), path)
        >>> stats.hosts > 16 and os.path.getsize(path) > 0
        True
    """
    topology.validate()
    _check_simulable(topology)
    if not isinstance(path, (str, os.PathLike)):  # an open binary file (hcsim.files.anonymous_file)
        stats = _write_platform(topology, path, precision, config)
        path.flush()
        return stats
    with atomic_path(os.fspath(path), ".xml.tmp") as tmp:  # a reader never sees half a file; no temporary left
        return _write_platform(topology, tmp, precision, config)


def _write_platform(topology: Topology, target: Any, precision: str, config: dict[str, str] | None) -> CompileStats:
    with etree.xmlfile(target, encoding="utf-8") as xf:
        xf.write_declaration()
        xf.write_doctype('<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">')
        with xf.element("platform", version="4.1"):
            with xf.element("config"):
                for key, value in {**NETWORK_CONFIG, **_solver_for(topology), **(config or {})}.items():
                    xf.write(etree.Element("prop", id=key, value=str(value)))
            writer = _Writer(topology, precision, xf)
            writer.zone("")
    return writer.stats
