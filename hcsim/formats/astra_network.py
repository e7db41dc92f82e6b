"""ASTRA-sim analytical network YAML as an hcsim :class:`~hcsim.platform.topology.Topology`.

The format (astra-sim/astra-network-analytical, ``NetworkParser``): four lists of equal
length, one entry per dimension: ``topology`` (``Ring``, ``FullyConnected`` or ``Switch``),
``npus_count``, ``bandwidth`` (GB/s per link and direction, GB = 2**30 bytes as ASTRA-sim
reads it) and ``latency`` (ns per link). NPU ids run dimension 0 fastest; every line of
NPUs along a dimension forms one building block.

:func:`read_astra_network` parses a file; :func:`astra_network_topology` validates the
parsed mapping and assembles the topology (NPUs as XPUs ``npuNN`` ranked by id).
:func:`compile_astra_network` writes it as SimGrid XML with routes by rule where the
shape allows (:func:`compact_routing`: a switch as one ``Cluster`` zone, a ring or a grid of
several dimensions as a ``DijkstraCache`` zone of one route per link, :mod:`.astra_routes`),
else through the compiler's explicit routes.

Invariants: links and latencies are ASTRA-sim's; routes are hcsim's (latency-weighted
shortest paths), identical to ASTRA-sim's for one dimension, and the compact XML takes
the explicit XML's route for every pair, link by link. Sizes are bounded
(:data:`MAX_NPUS`, :data:`MAX_LINKS`) before anything is built. See docs/formats.md.
"""

from __future__ import annotations

import math
import os
from itertools import combinations
from typing import Any, BinaryIO

from lxml import etree

from hcsim.errors import HcsimError
from hcsim.files import load_yaml, temporary_beside
from hcsim.formats.astra_routes import (
    GB,
    grid_lines,
    grid_route_order,
    grid_spec,
    npu_names,
    ring_route_order,
    route_ranks,
)
from hcsim.platform.compiler import (
    NETWORK_CONFIG,
    PRECISIONS,
    ROOT_ZONE,
    XPU_PROPERTIES,
    CompileStats,
    _check_simulable,
    _num,
    _solver_for,
    compile_platform,
    link_id,
)
from hcsim.platform.devices import Device
from hcsim.platform.topology import Topology

__all__ = [
    "read_astra_network",
    "astra_network_topology",
    "compact_routing",
    "compile_astra_network",
    "BLOCKS",
    "GB",
    "MAX_NPUS",
    "MAX_LINKS",
]

BLOCKS = ("Ring", "FullyConnected", "Switch")


MAX_NPUS = 65536
"""Most NPUs per dimension and in all (the product of ``npus_count``) hcsim builds from a network file."""
MAX_LINKS = 1 << 20
"""Most links a network file may need (a FullyConnected block of N NPUs has N(N-1)/2): about 1 GB in SimGrid."""


def _links_of(block: str, n: int) -> int:
    """Links of one block of ``n`` NPUs (one ring link for two NPUs, as the builder below)."""
    if n < 2:
        return 0
    if block == "FullyConnected":
        return n * (n - 1) // 2
    return 1 if block == "Ring" and n == 2 else n


def read_astra_network(path: str | os.PathLike[str], xpu: str | Device = "H100") -> Topology:
    """The topology of an ASTRA-sim network YAML file, with ``xpu`` as every NPU."""
    import yaml

    path = os.fspath(path)
    try:
        with open(path) as f:
            data = load_yaml(f.read(), f"ASTRA-sim network file '{path}'")  # a key given twice is refused
    except FileNotFoundError:
        raise HcsimError(f"ASTRA-sim network file '{path}' does not exist") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HcsimError(f"ASTRA-sim network file '{path}' is not valid YAML: {first}") from None
    return astra_network_topology(data, xpu, where=f"ASTRA-sim network file '{path}'")


def _list(data: dict[str, Any], key: str, where: str) -> list[Any]:
    if key not in data:
        raise HcsimError(f"{where}: '{key}' is missing (valid: topology, npus_count, bandwidth, latency lists)")
    value = data[key]
    return value if isinstance(value, list) else [value]


def astra_network_topology(data: object, xpu: str | Device = "H100", where: str = "ASTRA-sim network") -> Topology:
    """The topology of a parsed ASTRA-sim network description (the YAML's mapping)."""
    blocks, counts, bws, lats = _validate(data, where)
    return _assemble(blocks, counts, bws, lats, xpu)


def _validate(data: object, where: str) -> tuple[list[str], list[int], list[float], list[float]]:
    """The description's dimensions (blocks, NPU counts, GB/s, ns), each checked; one line naming a bad item."""
    if not isinstance(data, dict):
        raise HcsimError(f"{where} must be a mapping with topology, npus_count, bandwidth and latency")
    blocks = _list(data, "topology", where)
    counts = _list(data, "npus_count", where)
    bws = _list(data, "bandwidth", where)
    lats = _list(data, "latency", where)
    dims = len(blocks)
    if dims == 0:
        raise HcsimError(f"{where}: topology is empty (valid: a list such as [ Ring ] or [ Switch, Switch ])")
    for key, values in (("npus_count", counts), ("bandwidth", bws), ("latency", lats)):
        if len(values) != dims:
            raise HcsimError(f"{where}: {key} has {len(values)} entries but topology has {dims} (one per dimension)")
    for d in range(dims):
        if blocks[d] not in BLOCKS:
            raise HcsimError(f"{where}: topology {blocks[d]!r} (dimension {d}) is unknown (valid: {', '.join(BLOCKS)})")
        n = counts[d]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise HcsimError(f"{where}: npus_count {n!r} (dimension {d}) is invalid (valid: an integer >= 1)")
        if n > MAX_NPUS:
            raise HcsimError(
                f"{where}: npus_count {n} (dimension {d}) is more than hcsim builds from a network file "
                f"(valid: <= {MAX_NPUS} NPUs in all)"
            )
        bw, lat = bws[d], lats[d]
        if isinstance(bw, bool) or not isinstance(bw, (int, float)) or not bw > 0 or math.isinf(bw):
            raise HcsimError(f"{where}: bandwidth {bw!r} (dimension {d}) is invalid (valid: GB/s > 0)")
        if isinstance(lat, bool) or not isinstance(lat, (int, float)) or not lat >= 0 or math.isinf(lat):
            raise HcsimError(f"{where}: latency {lat!r} (dimension {d}) is invalid (valid: ns >= 0)")
    total = math.prod(counts)
    if total < 2:
        raise HcsimError(f"{where}: the network has {total} NPU (valid: at least 2)")
    if total > MAX_NPUS:
        shape = " x ".join(str(c) for c in counts)
        raise HcsimError(
            f"{where}: npus_count {shape} = {total} NPUs is more than hcsim builds from a network file "
            f"(valid: <= {MAX_NPUS})"
        )
    links = sum(_links_of(blocks[d], counts[d]) * (total // counts[d]) for d in range(dims))
    if links > MAX_LINKS:
        worst = max(range(dims), key=lambda d: _links_of(blocks[d], counts[d]) * (total // counts[d]))
        raise HcsimError(
            f"{where}: the network needs {links} links ({blocks[worst]} dimension {worst} of {counts[worst]} NPUs: "
            f"{_links_of(blocks[worst], counts[worst])} per block) (valid: at most {MAX_LINKS} links in all; "
            "a FullyConnected block of N NPUs has N(N-1)/2)"
        )
    return blocks, counts, bws, lats


def _assemble(blocks: list[str], counts: list[int], bws: list[float], lats: list[float], xpu: str | Device) -> Topology:
    """The topology of checked dimensions: NPUs in row-major order, each dimension's blocks along its lines."""
    dims = len(blocks)
    shape = "x".join(str(c) for c in counts)
    # Ring and FullyConnected route through NPUs, and so does every route from one line of NPUs to another
    # (an NPU relays between its dimensions, as in ASTRA-sim); only a lone switch never needs an NPU between
    direct = any(b != "Switch" for b in blocks) or sum(1 for c in counts if c > 1) > 1
    topo = Topology(name=f"astra-{'-'.join(blocks)}-{shape}", system="astra-sim", host_transit=direct)
    names = npu_names(counts)
    for i, name in enumerate(names):
        topo.add_xpu(name, xpu, rank=i)
    for d in range(dims):
        n, bw, lat = counts[d], bws[d] * GB, lats[d] * 1e-9
        if n < 2:
            continue
        for base, ids in grid_lines(counts, d):
            line = [names[i] for i in ids]
            kind = blocks[d]
            if kind == "Ring":
                pairs = [(line[i], line[(i + 1) % n]) for i in range(n if n > 2 else 1)]
            elif kind == "FullyConnected":
                pairs = list(combinations(line, 2))
            else:
                sw = f"dim{d}.switch{base}"
                topo.add_switch(sw, "generic")
                pairs = [(x, sw) for x in line]
            for a, b in pairs:
                topo.add_link(a, b, bw, lat, link_kind=f"dim{d}")
    # what the network was imported from: compact_routing writes a grid's routes by rule (hcsim.formats.astra_routes)
    spec = {"topology": list(blocks), "npus_count": list(counts), "bandwidth": list(bws), "latency": list(lats)}
    topo.graph["astra_network"] = spec
    if sum(1 for c in counts if c > 1) > 1:
        # several dimensions: routed as SimGrid's Dijkstra zone routes them (hcsim.formats.astra_routes),
        # each way from its own source, ties to the node SimGrid numbers first
        topo.graph["routes_from_source"] = True
        for node, rank in route_ranks(spec).items():
            topo.nodes[node]["route_rank"] = rank
    return topo.validate()


# ---------------------------------------------------------------------- compact platform XML
def compact_routing(topology: Topology) -> str | None:
    """SimGrid routing that expresses ``topology`` by rule, or None when it needs explicit routes.

    Read from the topology's shape, not from where it came from (a folded topology is
    another shape): ``"Cluster"`` for XPUs each linked to one and the same switch and to
    nothing else (SimGrid's star: a route is the source's up-link, then the destination's
    down-link, the only path there is); ``"DijkstraCache"`` for 3 or more XPUs in one cycle
    of equal links, in the order of their names, that XPUs route through (routes declared
    between neighbours only; SimGrid takes the fewest-hop path, which on equal links is the
    latency-shortest one, and breaks ties as hcsim's router does: :func:`~hcsim.formats.astra_routes.ring_route_order`);
    ``"DijkstraCache"`` too for an imported grid of several dimensions, Switches and at most
    one Ring or FullyConnected (:func:`~hcsim.formats.astra_routes.grid_spec`: one route per
    link, switches as routers). Anything else (a full mesh, a torus, memory nodes, pinned
    routes or zones) keeps the compiler's explicit routes.
    """
    if grid_spec(topology) is not None:
        return "DijkstraCache"
    nodes = topology.number_of_nodes()
    xpus = topology.nodes_of("xpu")
    if topology.routes() or topology.gateways() or any(z for _, z in topology.nodes(data="zone", default="")):
        return None
    others = nodes - len(xpus)
    degrees = dict(topology.degree())
    if others == 1 and topology.number_of_edges() == len(xpus) >= 2:
        switches = topology.nodes_of("switch")
        if len(switches) == 1 and all(degrees[x] == 1 and topology.has_edge(x, switches[0]) for x in xpus):
            return "Cluster"
        return None
    if others == 0 and len(xpus) >= 3 and topology.number_of_edges() == len(xpus):
        ring = sorted(xpus)
        along = all(topology.has_edge(a, b) for a, b in zip(ring, ring[1:] + ring[:1], strict=True))
        values = {(d["latency"], d["bandwidth"] * d.get("lanes", 1)) for _, _, d in topology.edges(data=True)}
        if along and topology.graph.get("host_transit") and len(values) == 1:
            return "DijkstraCache"
    return None


def compile_astra_network(
    topology: Topology, path: str | os.PathLike[str] | BinaryIO, *, precision: str = "fp32"
) -> CompileStats:
    """Write an imported ASTRA-sim network as SimGrid XML: compact zones where :func:`compact_routing` has one.

    The hosts, links and link directions are those :func:`~hcsim.platform.compiler.compile_platform`
    writes (same names, same properties), so a run gives the same times; only the routes are
    written by rule instead of one per pair of NPUs. Without a compact form, ``compile_platform``.
    """
    routing = compact_routing(topology)
    if routing is None:
        return compile_platform(topology, path, precision=precision)
    topology.validate()
    _check_simulable(topology)
    if precision not in PRECISIONS:
        raise HcsimError(f"precision {precision!r} is unknown (valid: {', '.join(PRECISIONS)})")
    hosts = sorted(topology.xpus())
    for x in hosts:
        if f"{precision}_flops" not in topology.nodes[x]:
            raise HcsimError(f"XPU '{x}' (device '{topology.nodes[x].get('device')}') has no {precision} rate")
    stats = CompileStats(zones=1)
    if not isinstance(path, (str, os.PathLike)):  # an open binary file (hcsim.files.anonymous_file)
        _write_compact(topology, path, routing, hosts, precision, stats)
        path.flush()
        return stats
    path = os.fspath(path)
    tmp = temporary_beside(path, ".xml.tmp")
    try:
        _write_compact(topology, tmp, routing, hosts, precision, stats)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return stats


def _write_compact(
    topology: Topology, target: Any, routing: str, hosts: list[str], precision: str, stats: CompileStats
) -> None:
    with etree.xmlfile(target, encoding="utf-8") as xf:
        xf.write_declaration()
        xf.write_doctype('<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">')
        with xf.element("platform", version="4.1"):
            with xf.element("config"):
                for key, value in {**NETWORK_CONFIG, **_solver_for(topology)}.items():
                    xf.write(etree.Element("prop", id=key, value=str(value)))
            with xf.element("zone", id=ROOT_ZONE, routing=routing):
                for x in hosts:
                    xf.write(_host_element(topology.nodes[x], x, precision), "\n")
                    stats.hosts += 1
                spec = grid_spec(topology) if routing == "DijkstraCache" else None
                for sw in sorted(topology.nodes_of("switch")) if spec else ():
                    xf.write(etree.Element("router", id=sw), "\n")
                    stats.routers += 1
                links = list(topology.iter_links())
                for a, b, data in links:
                    xf.write(_link_element(a, b, data), "\n")
                    stats.links += 1
                if routing == "Cluster":
                    for a, b, _ in links:
                        npu, sw = (a, b) if topology.is_host(a) else (b, a)
                        name = link_id(a, b)
                        # the compiler's direction for npu -> switch: UP when npu < switch
                        up, down = ("UP", "DOWN") if npu < sw else ("DOWN", "UP")
                        xf.write(etree.Element("host_link", id=npu, up=f"{name}_{up}", down=f"{name}_{down}"), "\n")
                        stats.routes += 1
                else:
                    for a, b in grid_route_order(spec) if spec else ring_route_order(hosts):
                        xf.write(_route_element(topology, a, b), "\n")
                        stats.routes += 1


def _route_element(topology: Topology, a: str, b: str) -> Any:
    """The route over the link ``a``--``b`` both ways; ``a == b`` (a switch): one way over its first link, naming it."""
    if a == b:
        b = min(topology.adj[a])
        route = etree.Element("route", src=a, dst=a, symmetrical="NO")
    else:
        route = etree.Element("route", src=a, dst=b, symmetrical="YES")
    etree.SubElement(route, "link_ctn", id=link_id(a, b), direction="UP" if a < b else "DOWN")
    return route


def _host_element(data: dict[str, Any], name: str, precision: str) -> Any:
    """An XPU's ``<host>``, as the compiler writes it (speed at ``precision``, XPU properties)."""
    el = etree.Element("host", id=name, speed=f"{_num(data[f'{precision}_flops'])}f")
    etree.SubElement(el, "prop", id="kind", value="xpu")
    for key in XPU_PROPERTIES:
        if key in data:
            value = data[key]
            etree.SubElement(el, "prop", id=key, value=_num(value) if isinstance(value, (int, float)) else str(value))
    etree.SubElement(el, "prop", id="precision", value=precision)
    return el


def _link_element(a: str, b: str, data: dict[str, Any]) -> Any:
    """A link as the compiler writes it (split-duplex, ``lanes x bandwidth``, its kind)."""
    el = etree.Element(
        "link",
        id=link_id(a, b),
        bandwidth=f"{_num(data['bandwidth'] * data.get('lanes', 1))}Bps",
        latency=f"{_num(data['latency'])}s",
        sharing_policy="SPLITDUPLEX",
    )
    etree.SubElement(el, "prop", id="kind", value=str(data.get("link_kind", "generic")))
    return el
