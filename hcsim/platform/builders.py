"""Ready-made topologies: the paper's two systems (Fig. 6) and the generic shapes.

* :func:`noncoherent_system` (Fig. 6a) and :func:`cxl_system` (Fig. 6b): servers of 8
  XPUs (2 CPUs, a PCIe switch per CPU with 4 XPUs, an XPU switch, a NIC), 16 servers per
  ToR (``servers_per_rack``), ToRs to one core switch, Table 5's links
  (:data:`TABLE5`); host DRAM behind each CPU, and in the CXL system a CXL fabric
  (a switch per server with a Type 3 expander per XPU, cascaded per rack and to a top
  switch) that carries the inter-server XPU traffic;
* :func:`single_server`, :func:`ring` (a ring topology), :func:`star`,
  :func:`leaf_spine` and :func:`fat_tree`.

Names: ``r03s07.xpu5`` is XPU 5 of server 7 of rack 3, zones ``r03/s07`` inside ``r03``;
XPUs carry a global, rack-major ``rank``. Every assumption the paper leaves open (host
DRAM links, the NIC's attachment, CXL inter-switch links, memory capacities) is a
parameter.

Guide: docs/platform.md, "The paper's systems".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hcsim.errors import HcsimError
from hcsim.platform.devices import Device, device
from hcsim.platform.topology import Topology, check_link_parameters
from hcsim.units import parse_bandwidth, parse_time

__all__ = [
    "TABLE5",
    "LinkSpec",
    "noncoherent_system",
    "cxl_system",
    "paper_system",
    "single_server",
    "ring",
    "star",
    "leaf_spine",
    "fat_tree",
    "parse_mix",
    "XPUS_PER_SERVER",
    "MAX_XPUS",
    "MAX_SPINES",
    "MAX_BUILD_XPUS",
    "MAX_FABRIC_LINKS",
    "MAX_FAT_TREE_ARITY",
    "SERVERS_PER_RACK",
]

XPUS_PER_SERVER = 8
MAX_XPUS = {"noncoherent": 4096, "cxl": 4096, "server": 8, "ring": 256, "star": 1024, "leafspine": 4096}
"""Largest system each builder is offered for from the command line. The paper's systems
and leaf-spine route through zones and compile 4096 XPUs in under a minute; a ring or a
star is one flat zone with a route for every pair of XPUs, and a ring's routes also grow
with its length (n**3 link references: a 1024-XPU ring takes minutes). Beyond these, a
command would look hung."""
MAX_SPINES = 256
"""Most spine switches ``leafspine`` is offered for from the command line (and the Python builder)."""
MAX_BUILD_XPUS = 16384
"""Most XPUs the generic Python builders (ring, star, leaf_spine, fat_tree) make, as
:data:`hcsim.platform.dgx.MAX_GPUS`: each builds in about 2 s and 100 MB; the paper's systems
stop at their documented 4096 (:data:`MAX_XPUS`)."""
MAX_FABRIC_LINKS = 65536
"""Most leaf-to-spine links of :func:`leaf_spine` (leaves x spines)."""
MAX_FAT_TREE_ARITY = 40
"""Largest k of :func:`fat_tree`: k**3/4 = 16000 XPUs, within :data:`MAX_BUILD_XPUS`."""
XPUS_PER_PCIE_SWITCH = 4
SERVERS_PER_RACK = 16
PCIE_LANES_CPU_TO_SWITCH = 4


@dataclass(frozen=True)
class LinkSpec:
    """Bandwidth (bytes/s per lane) and latency (s) of one kind of link."""

    bandwidth: float
    latency: float
    lanes: int = 1

    @classmethod
    def of(cls, bandwidth: object, latency: object, lanes: int = 1, what: str = "link") -> LinkSpec:
        bw = parse_bandwidth(bandwidth, f"{what} bandwidth")
        lat = parse_time(latency, f"{what} latency")
        check_link_parameters(what, bw, lat, lanes)
        return cls(bw, lat, lanes)


#: Paper Table 5 (CXL is a parameter; 128 GB/s and 200 ns are its defaults).
TABLE5 = {
    "tor_to_core": LinkSpec.of("12.5GBps", "5us"),
    "nic_to_tor": LinkSpec.of("12.5GBps", "5us"),
    "upi": LinkSpec.of("62.4GBps", "100ns"),
    "pcie": LinkSpec.of("128GBps", "250ns"),
    "xpu": LinkSpec.of("900GBps", "100ns"),
    "cxl": LinkSpec.of("128GBps", "200ns"),
    "host_memory": LinkSpec.of("128GBps", "100ns", lanes=4),
}


def parse_mix(mix: str | Sequence[str | Device] | None, racks: int) -> list[Device]:
    """XPU type of each rack from a mix: "H100", "H100+A100" (racks alternate), or a list per rack."""
    if mix is None:
        mix = "H100"
    if isinstance(mix, str):
        names = [m.strip() for m in mix.split("+")]
        if not all(names):
            raise HcsimError(f"mix {mix!r} is invalid (valid: 'H100', 'H100+A100', 'H100+V100', ...)")
        kinds = [device(n) for n in names]
        return [kinds[r % len(kinds)] for r in range(racks)]
    kinds = [device(m) for m in mix]
    if len(kinds) != racks:
        raise HcsimError(f"mix lists {len(kinds)} rack types but the system has {racks} racks (give one per rack)")
    return kinds


def _check_scale(xpus: int, servers_per_rack: int = SERVERS_PER_RACK) -> tuple[int, int]:
    most = MAX_XPUS["cxl"]
    if (
        isinstance(xpus, bool)
        or not isinstance(xpus, int)
        or not XPUS_PER_SERVER <= xpus <= most
        or xpus % XPUS_PER_SERVER
    ):
        raise HcsimError(
            f"xpus {xpus!r} is invalid for the paper's systems (valid: a multiple of the server size "
            f"{XPUS_PER_SERVER}: 8, 16, ..., at most {most})"
        )
    _check_count(servers_per_rack, "servers_per_rack", 1, most // XPUS_PER_SERVER)
    servers = xpus // XPUS_PER_SERVER
    return servers, math.ceil(servers / servers_per_rack)


def _server(
    topo: Topology, rack: int, slot: int, kind: Device, first_rank: int, links: dict[str, LinkSpec], tor: str
) -> str:
    """Add one paper server; return its name prefix."""
    p = f"r{rack:02d}s{slot:02d}"
    zone = f"r{rack:02d}/s{slot:02d}"

    def link(u: str, v: str, spec: LinkSpec, kind_: str) -> None:
        topo.add_link(u, v, spec.bandwidth, spec.latency, link_kind=kind_, lanes=spec.lanes)

    topo.add_switch(f"{p}.xsw", "xpu", zone=zone)
    topo.add_switch(f"{p}.nic", "nic", zone=zone)
    for c in range(2):
        topo.add_switch(f"{p}.cpu{c}", "cpu", zone=zone)
        topo.add_switch(f"{p}.pcie{c}", "pcie", zone=zone)
        topo.add_memory(f"{p}.dram{c}", math.inf, "host_dram", zone=zone)
        bundle = LinkSpec(links["pcie"].bandwidth, links["pcie"].latency, PCIE_LANES_CPU_TO_SWITCH)
        link(f"{p}.cpu{c}", f"{p}.pcie{c}", bundle, "pcie")
        link(f"{p}.cpu{c}", f"{p}.dram{c}", links["host_memory"], "memory")
    link(f"{p}.cpu0", f"{p}.cpu1", links["upi"], "upi")
    link(f"{p}.pcie0", f"{p}.nic", links["pcie"], "pcie")
    link(f"{p}.nic", tor, links["nic_to_tor"], "ethernet")
    for i in range(XPUS_PER_SERVER):
        x = f"{p}.xpu{i}"
        topo.add_xpu(x, kind, zone=zone, rank=first_rank + i, host_memory=f"{p}.dram{i // XPUS_PER_PCIE_SWITCH}")
        link(x, f"{p}.pcie{i // XPUS_PER_PCIE_SWITCH}", links["pcie"], "pcie")
        link(x, f"{p}.xsw", links["xpu"], "xpu")
    return p


def paper_system(
    xpus: int,
    *,
    coherent: bool,
    mix: str | Sequence[str | Device] | None = "H100",
    cxl_bandwidth: object = "128GBps",
    cxl_latency: object = "200ns",
    links: dict[str, LinkSpec] | None = None,
    servers_per_rack: int = SERVERS_PER_RACK,
) -> Topology:
    """The paper's Fig. 6 system with ``xpus`` XPUs (a multiple of 8): (b) if coherent else (a).

    ``servers_per_rack`` (the paper's 16 by default) makes small multi-rack systems, e.g.
    mixed-type tests with 4 racks of 2 servers at 64 XPUs.
    """
    servers, racks = _check_scale(xpus, servers_per_rack)
    kinds = parse_mix(mix, racks)
    spec = dict(TABLE5)
    spec.update(links or {})
    spec["cxl"] = LinkSpec.of(cxl_bandwidth, cxl_latency, what="CXL link")
    topo = Topology(
        name=f"{'cxl' if coherent else 'noncoherent'}-{xpus}",
        system="cxl" if coherent else "noncoherent",
        mix="+".join(sorted({k.name for k in kinds}, key=[k.name for k in kinds].index)),
    )
    cxl = spec["cxl"]
    multi_rack = racks > 1
    if multi_rack:
        topo.add_switch("core", "core")
        if coherent:
            topo.add_switch("cxl.top", "cxl")
    for r in range(racks):
        rz = f"r{r:02d}"
        tor = f"{rz}.tor"
        rack_servers = min(servers_per_rack, servers - r * servers_per_rack)
        topo.add_switch(tor, "tor", zone=rz)
        if coherent:
            topo.add_switch(f"{rz}.cxl", "cxl", zone=rz)
        for s in range(rack_servers):
            first = (r * servers_per_rack + s) * XPUS_PER_SERVER
            p = _server(topo, r, s, kinds[r], first, spec, tor)
            zone = f"{rz}/s{s:02d}"
            if coherent:
                leaf = f"{p}.cxl"
                topo.add_switch(leaf, "cxl", zone=zone)
                for c in range(2):
                    topo.add_link(f"{p}.cpu{c}", leaf, cxl.bandwidth, cxl.latency, link_kind="cxl")
                for i in range(XPUS_PER_SERVER):
                    t3 = f"{p}.t3_{i}"
                    topo.add_memory(t3, math.inf, "cxl_type3", zone=zone)
                    topo.nodes[f"{p}.xpu{i}"]["cxl_memory"] = t3
                    topo.add_link(f"{p}.xpu{i}", leaf, cxl.bandwidth, cxl.latency, link_kind="cxl")
                    topo.add_link(t3, leaf, cxl.bandwidth, cxl.latency, link_kind="cxl")
                topo.add_link(leaf, f"{rz}.cxl", cxl.bandwidth, cxl.latency, link_kind="cxl")
                topo.set_gateway(zone, leaf)
            else:
                topo.set_gateway(zone, f"{p}.nic")
        if multi_rack:
            topo.add_link(tor, "core", spec["tor_to_core"].bandwidth, spec["tor_to_core"].latency, link_kind="ethernet")
            if coherent:
                topo.add_link(f"{rz}.cxl", "cxl.top", cxl.bandwidth, cxl.latency, link_kind="cxl")
        topo.set_gateway(rz, f"{rz}.cxl" if coherent else tor)
    return topo


def noncoherent_system(xpus: int, **kwargs: object) -> Topology:
    """Paper Fig. 6(a): no coherent fabric; expansion memory at the CPUs; Ethernet between servers."""
    return paper_system(xpus, coherent=False, **kwargs)  # type: ignore[arg-type]


def cxl_system(xpus: int, **kwargs: object) -> Topology:
    """Paper Fig. 6(b): the same plus a cascaded CXL fabric with a Type 3 expander per XPU.

    Keyword arguments as :func:`paper_system` (``mix``, ``cxl_bandwidth``, ``cxl_latency``, ...)::

        >>> from hcsim.platform import cxl_system
        >>> t = cxl_system(256, mix="H100+V100", cxl_latency="1us")
        >>> len(t.xpus()), sorted({t.nodes[x]["device"] for x in t.xpus()})
        (256, ['H100', 'V100'])
    """
    return paper_system(xpus, coherent=True, **kwargs)  # type: ignore[arg-type]


def single_server(xpu: str | Device = "H100", links: dict[str, LinkSpec] | None = None) -> Topology:
    """One paper server (8 XPUs, 2 CPUs, 2 PCIe switches, XPU switch, NIC) with its ToR."""
    spec = dict(TABLE5)
    spec.update(links or {})
    topo = Topology(name="server", system="server")
    topo.add_switch("tor", "tor")
    _server(topo, 0, 0, device(xpu), 0, spec, "tor")
    for n in list(topo.nodes):
        topo.nodes[n]["zone"] = ""
    return topo


def _check_count(n: int, what: str, minimum: int, maximum: int = MAX_BUILD_XPUS) -> None:
    """Refuse a count that is not an integer from ``minimum`` to ``maximum``, before anything is allocated."""
    if isinstance(n, bool) or not isinstance(n, int) or not minimum <= n <= maximum:
        raise HcsimError(f"{what} {n!r} is invalid (valid: an integer from {minimum} to {maximum:,})")


def ring(n: int, xpu: str | Device = "H100", bandwidth: object = "128GBps", latency: object = "1us") -> Topology:
    """``n`` XPUs in a bidirectional ring, each joined to its two neighbours by a direct link.

    A direct-connect topology: routes to non-neighbours pass through the XPUs between
    (``host_transit``), the shorter way round.
    """
    _check_count(n, "ring size", 2)
    spec = LinkSpec.of(bandwidth, latency, what="ring link")
    topo = Topology(name=f"ring-{n}", system="ring", host_transit=True)
    width = len(str(n - 1))
    names = [f"xpu{i:0{width}d}" for i in range(n)]
    for i, name in enumerate(names):
        topo.add_xpu(name, xpu, rank=i)
    for i in range(n if n > 2 else 1):
        topo.add_link(names[i], names[(i + 1) % n], spec.bandwidth, spec.latency, link_kind="xpu")
    return topo


def star(n: int, xpu: str | Device = "H100", bandwidth: object = "128GBps", latency: object = "1us") -> Topology:
    """``n`` XPUs on one switch."""
    _check_count(n, "star size", 1)
    spec = LinkSpec.of(bandwidth, latency, what="star link")
    topo = Topology(name=f"star-{n}", system="star")
    topo.add_switch("switch", "generic")
    width = len(str(n - 1))
    for i in range(n):
        name = f"xpu{i:0{width}d}"
        topo.add_xpu(name, xpu, rank=i)
        topo.add_link(name, "switch", spec.bandwidth, spec.latency, link_kind="generic")
    return topo


def leaf_spine(
    leaves: int,
    spines: int,
    hosts_per_leaf: int,
    xpu: str | Device = "H100",
    host_link: object = ("12.5GBps", "5us"),
    fabric_link: object = ("12.5GBps", "5us"),
) -> Topology:
    """Two-level leaf-spine (folded Clos): every leaf joins every spine.

    A k-port two-level fat tree is ``leaf_spine(k, k // 2, k // 2)``. Each leaf is a
    zone whose gateway is the leaf switch; between two leaves the route takes the spine
    with the smallest name among the equal-latency choices (no ECMP spreading).
    """
    _check_count(leaves, "leaf count", 1)
    _check_count(spines, "spine count", 1, MAX_SPINES)
    _check_count(hosts_per_leaf, "hosts per leaf", 1)
    if leaves * hosts_per_leaf > MAX_BUILD_XPUS:
        raise HcsimError(
            f"leaf_spine: {leaves} leaves x {hosts_per_leaf} hosts per leaf = {leaves * hosts_per_leaf:,} XPUs "
            f"(valid: at most {MAX_BUILD_XPUS:,})"
        )
    if leaves * spines > MAX_FABRIC_LINKS:
        raise HcsimError(
            f"leaf_spine: {leaves} leaves x {spines} spines = {leaves * spines:,} fabric links "
            f"(valid: at most {MAX_FABRIC_LINKS:,})"
        )
    host = LinkSpec.of(*host_link, what="host link")  # type: ignore[misc]
    fabric = LinkSpec.of(*fabric_link, what="fabric link")  # type: ignore[misc]
    topo = Topology(name=f"leafspine-{leaves}x{hosts_per_leaf}", system="leafspine")
    lw, sw, hw = len(str(leaves - 1)), len(str(spines - 1)), len(str(hosts_per_leaf - 1))
    for s in range(spines):
        topo.add_switch(f"spine{s:0{sw}d}", "core")
    rank = 0
    for leaf in range(leaves):
        zone = f"leaf{leaf:0{lw}d}"
        ls = f"{zone}.switch"
        topo.add_switch(ls, "tor", zone=zone)
        topo.set_gateway(zone, ls)
        for s in range(spines):
            topo.add_link(ls, f"spine{s:0{sw}d}", fabric.bandwidth, fabric.latency, link_kind="ethernet")
        for h in range(hosts_per_leaf):
            name = f"{zone}.xpu{h:0{hw}d}"
            topo.add_xpu(name, xpu, zone=zone, rank=rank)
            rank += 1
            topo.add_link(name, ls, host.bandwidth, host.latency, link_kind="ethernet")
    return topo


def fat_tree(
    k: int,
    xpu: str | Device = "H100",
    host_link: object = ("12.5GBps", "5us"),
    fabric_link: object = ("12.5GBps", "5us"),
) -> Topology:
    """Three-level k-ary fat tree (Al-Fares et al., SIGCOMM 2008): k pods, k^3/4 XPUs.

    Pod p has k/2 edge and k/2 aggregation switches, every edge switch joined to every
    aggregation switch of its pod, each edge switch to k/2 XPUs; aggregation switch a of
    every pod joins the k/2 core switches ``core{a}.{j}``. Each edge switch and its XPUs
    are a zone (``p{p}e{e}``) whose gateway is the edge switch; aggregation and core
    switches are in the root zone. Routes are latency-weighted shortest paths (2 links
    under one edge switch, 4 within a pod, 6 across pods), one per pair, ties broken by
    name as everywhere in hcsim (single path: no ECMP spreading). XPU ranks run edge by
    edge, pod by pod.
    """
    _check_count(k, "fat-tree arity k", 2, MAX_FAT_TREE_ARITY)
    if k % 2:
        raise HcsimError(f"fat-tree arity k {k} is invalid (valid: an even integer from 2 to {MAX_FAT_TREE_ARITY})")
    host = LinkSpec.of(*host_link, what="host link")  # type: ignore[misc]
    fabric = LinkSpec.of(*fabric_link, what="fabric link")  # type: ignore[misc]
    h = k // 2
    topo = Topology(name=f"fattree-k{k}", system="fattree")
    pw, hw = len(str(k - 1)), len(str(h - 1))
    for a in range(h):
        for j in range(h):
            topo.add_switch(f"core{a:0{hw}d}.{j:0{hw}d}", "core")
    rank = 0
    for p in range(k):
        aggs = [f"p{p:0{pw}d}.agg{a:0{hw}d}" for a in range(h)]
        for a, agg in enumerate(aggs):
            topo.add_switch(agg, "core")  # aggregation layer
            for j in range(h):
                topo.add_link(agg, f"core{a:0{hw}d}.{j:0{hw}d}", fabric.bandwidth, fabric.latency, link_kind="ethernet")
        for e in range(h):
            zone = f"p{p:0{pw}d}e{e:0{hw}d}"
            es = f"{zone}.switch"
            topo.add_switch(es, "tor", zone=zone)
            topo.set_gateway(zone, es)
            for agg in aggs:
                topo.add_link(es, agg, fabric.bandwidth, fabric.latency, link_kind="ethernet")
            for x in range(h):
                name = f"{zone}.xpu{x:0{hw}d}"
                topo.add_xpu(name, xpu, zone=zone, rank=rank)
                rank += 1
                topo.add_link(name, es, host.bandwidth, host.latency, link_kind="ethernet")
    return topo
