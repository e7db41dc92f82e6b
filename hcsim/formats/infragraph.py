"""InfraGraph infrastructure files (YAML or JSON) as hcsim :class:`~hcsim.platform.topology.Topology` objects.

InfraGraph (keysight/infragraph, the ``infragraph`` PyPI package, MIT) describes devices
made of components, instances of them and edges between component endpoints; its own
service (``InfraGraphService.set_graph``) expands a file into a NetworkX graph, which
:func:`infragraph_topology` maps: ``xpu`` nodes to XPUs (a preset such as H100, ranked in
the graph's order), ``memory`` to memory nodes, every other type to a switch, edges to
full-duplex links with their ``bandwidth`` and ``latency`` (or ``link_bandwidth`` /
``link_latency`` when a link declares none).

Invariant: a file whose instances would expand past :data:`MAX_COMPONENTS` components
(or :data:`MAX_EDGES` links) is refused before expansion, naming the instance; a link
without a byte rate or a latency is a one-line error naming it; components with no edge
and self-loops carry no traffic, are left out and counted in
``graph["infragraph_dropped"]``. See docs/formats.md.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any

import networkx as nx

from hcsim.errors import HcsimError
from hcsim.files import load_yaml
from hcsim.platform.devices import Device
from hcsim.platform.topology import Topology
from hcsim.units import parse_bandwidth, parse_time

__all__ = ["read_infragraph", "infragraph_topology", "is_infragraph", "MAX_COMPONENTS", "MAX_EDGES"]

_UNITS = {"Gbps": "Gbps", "GBps": "GBps", "ms": "ms", "us": "us", "ns": "ns"}
SWITCH_KIND = {"switch": "generic", "nic": "nic", "cpu": "cpu"}


def is_infragraph(path: str) -> bool:
    """Whether ``path`` looks like an InfraGraph file (YAML/JSON with devices and instances)."""
    import yaml

    try:
        with open(path) as f:
            data = load_yaml(f.read(), f"InfraGraph file '{path}'")
    except (OSError, yaml.YAMLError, UnicodeDecodeError, HcsimError):  # not an InfraGraph file hcsim reads
        return False
    return isinstance(data, dict) and "instances" in data and "devices" in data


def read_infragraph(
    path: str | os.PathLike[str],
    xpu: str | Device = "H100",
    *,
    link_bandwidth: object = None,
    link_latency: object = None,
) -> Topology:
    """The topology of an InfraGraph file, expanded by the ``infragraph`` package's own service."""
    path = os.fspath(path)
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        raise HcsimError(f"InfraGraph file '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HcsimError(f"InfraGraph file '{path}' cannot be read: {exc}") from None
    try:
        from infragraph.infragraph_service import InfraGraphService
    except ImportError:
        raise HcsimError("reading InfraGraph needs the infragraph package (pip install 'infragraph>=3.1,<4')") from None
    _check_size(text, path)
    service = InfraGraphService()
    try:
        with warnings.catch_warnings():  # it warns of unlinked components, which hcsim counts itself
            warnings.simplefilter("ignore")
            service.set_graph(text)
            graph = service.get_networkx_graph()
    except Exception as exc:  # noqa: BLE001 - the package raises many kinds for a bad file; all are bad input
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise HcsimError(f"InfraGraph file '{path}' is invalid: {first}") from None
    return infragraph_topology(
        graph, xpu, link_bandwidth=link_bandwidth, link_latency=link_latency, where=f"InfraGraph file '{path}'"
    )


MAX_COMPONENTS = 1_000_000
"""Most components an InfraGraph file may expand to (instances x components of their device)."""
MAX_EDGES = 4_000_000
"""Most links an InfraGraph file may expand to (a many2many edge joins every pair of its two ends)."""


def _count(value: Any) -> int:
    """A declared count as an int (the package refuses the ones that are not; they count as 1 here)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 1


def _check_size(text: str, path: str) -> None:
    """Refuse, before the package expands it, a file whose instances x components pass :data:`MAX_COMPONENTS`
    or whose edges pass :data:`MAX_EDGES` (an upper bound: a many2many edge counts both devices' components)."""
    import yaml

    try:
        data = load_yaml(text, f"InfraGraph file '{path}'")  # a key given twice, or a bomb: one line here
    except HcsimError:
        raise
    except (yaml.YAMLError, ValueError):  # e.g. a date PyYAML cannot construct
        return  # the package says what is wrong with it
    if not isinstance(data, dict):
        return
    devices = {}
    for d in data.get("devices") or []:
        if isinstance(d, dict):
            comps = [c for c in d.get("components") or [] if isinstance(c, dict)]
            parts = {str(c.get("name")): _count(c.get("count", 1)) for c in comps}
            pairs = sum(_count(c.get("count", 1)) ** 2 for c in comps)  # many2many inside a device, at worst
            devices[str(d.get("name"))] = (sum(parts.values()), pairs * max(1, len(d.get("edges") or [])))
    components = edges = 0
    for inst in data.get("instances") or []:
        if not isinstance(inst, dict):
            continue
        n = _count(inst.get("count", 1))
        size, links = devices.get(str(inst.get("device")), (0, 0))
        if n > MAX_COMPONENTS or n * size > MAX_COMPONENTS:
            raise HcsimError(
                f"InfraGraph file '{path}': instance '{inst.get('name')}' (count {n}) of device "
                f"'{inst.get('device')}' ({size} components each) expands to {n * size} components "
                f"(valid: at most {MAX_COMPONENTS} in all)"
            )
        components += n * size
        edges += n * links
    if components > MAX_COMPONENTS:
        raise HcsimError(
            f"InfraGraph file '{path}': its instances expand to {components} components "
            f"(valid: at most {MAX_COMPONENTS} in all; lower the instances' count)"
        )
    if edges > MAX_EDGES:
        raise HcsimError(
            f"InfraGraph file '{path}': its devices' edges may expand to {edges} links "
            f"(valid: at most {MAX_EDGES}; lower a component's or an instance's count)"
        )


def _quantity(text: Any, parse: Any, what: str) -> float:
    """'100 Gbps' / '400.0 GBps' / '5 ns' -> SI, through hcsim.units."""
    m = re.fullmatch(r"\s*([-+0-9.eE]+)\s*(\S+)\s*", str(text))
    if not m:
        raise HcsimError(f"{what} {text!r} cannot be read (valid: a number and a unit, e.g. '100 Gbps', '5 ns')")
    number, unit = m.groups()
    if unit == "GT/s":
        raise HcsimError(f"{what} {text!r} is in transfers per second, which has no byte rate (valid: Gbps or GBps)")
    if unit not in _UNITS:
        raise HcsimError(f"{what} {text!r}: unit {unit!r} is unknown (valid: Gbps, GBps, ms, us, ns)")
    return parse(f"{number}{_UNITS[unit]}", what)


def infragraph_topology(
    graph: Any,
    xpu: str | Device = "H100",
    *,
    link_bandwidth: object = None,
    link_latency: object = None,
    where: str = "InfraGraph",
) -> Topology:
    """An hcsim topology from the NetworkX graph InfraGraph's service builds (typed nodes, link edges)."""
    topo = Topology(name=str(graph.graph.get("name") or "infragraph"), system="infragraph")
    used = {n for e in graph.edges if e[0] != e[1] for n in e}
    dropped = {"unlinked components": graph.number_of_nodes() - len(used), "self-loops": nx_selfloops(graph)}
    rank = 0
    hosts = set()
    for name, data in graph.nodes(data=True):
        if name not in used:
            continue
        kind = data.get("type")
        label = str(name)
        if kind == "xpu":
            topo.add_xpu(label, xpu, rank=rank, infragraph_device=str(data.get("device", "")))
            rank += 1
            hosts.add(label)
        elif kind == "memory":
            topo.add_memory(label, "inf", "host_dram")
            hosts.add(label)
        else:
            topo.add_switch(label, SWITCH_KIND.get(str(kind), "generic"), infragraph_type=str(kind))
    if rank == 0:
        raise HcsimError(f"{where}: the infrastructure has no linked xpu component (valid: at least one)")
    for u, v, data in graph.edges(data=True):
        if u == v:
            continue
        what = f"{where}: link '{data.get('link', '?')}' between '{u}' and '{v}'"
        if "bandwidth" in data:
            bw = _quantity(data["bandwidth"], parse_bandwidth, f"{what}: bandwidth")
        elif link_bandwidth is not None:
            bw = parse_bandwidth(link_bandwidth, "--link-bandwidth")
        else:
            raise HcsimError(
                f"{what} has no bandwidth (valid: give the link a physical bandwidth, or a default for the links "
                "that declare none: --link-bandwidth, e.g. --link-bandwidth 100Gbps)"
            )
        if "latency" in data:
            lat = _quantity(data["latency"], parse_time, f"{what}: latency")
        elif link_latency is not None:
            lat = parse_time(link_latency, "--link-latency")
        else:
            raise HcsimError(
                f"{what} has no latency (valid: give the link a physical latency, or a default for the links "
                "that declare none: --link-latency, e.g. --link-latency 1us)"
            )
        topo.add_link(str(u), str(v), bw, lat, link_kind=str(data.get("link", "generic")))
    # XPUs joined directly (no switch between) route through each other
    topo.graph["host_transit"] = any(u in hosts and v in hosts for u, v in topo.edges)
    topo.graph["infragraph_dropped"] = {k: n for k, n in dropped.items() if n}
    return topo.validate()


def nx_selfloops(graph: Any) -> int:
    """Self-loops of a NetworkX graph (a count-1 many2many edge expands to one)."""
    return nx.number_of_selfloops(graph)
