"""GraphML topologies: :func:`read_graphml` and :func:`write_graphml` (yEd, Gephi, Cytoscape, igraph).

A topology is one GraphML graph: node and link attributes as :mod:`hcsim.platform.topology`
names them, gateways and pinned routes as JSON graph attributes (``gateways_json``,
``routes_json``). Reading takes rates, sizes and times as numbers in SI units or as strings
with units (``"128GBps"``); it parses (duplicates refused before NetworkX merges them,
entities never expanded), restores the names igraph moves into a node attribute
(:func:`restore_names`), assembles the :class:`Topology` and validates it.

Invariant: ``read_graphml(write_graphml(t))`` is ``t`` (same nodes, links, attributes,
gateways, routes), and a file that is not a valid topology is a one-line
:class:`~hcsim.errors.HcsimError` naming it. See docs/formats.md.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

import networkx as nx

from hcsim.errors import HcsimError
from hcsim.files import atomic_path, check_input_file
from hcsim.platform.topology import Topology
from hcsim.units import parse_bandwidth, parse_bytes, parse_flops, parse_time

__all__ = ["read_graphml", "write_graphml", "restore_names", "check_gateways_named", "NAME_ATTRIBUTES"]


def write_graphml(topology: Topology, path: str | os.PathLike[str]) -> None:
    """Save ``topology`` as GraphML (editable in yEd, Gephi, Cytoscape); gateways and routes as JSON."""
    g = nx.Graph(topology)
    g.graph = {k: v for k, v in topology.graph.items() if k not in ("gateways", "routes")}
    g.graph["gateways_json"] = json.dumps(topology.gateways(), sort_keys=True)
    g.graph["routes_json"] = json.dumps([[s, d, p] for (s, d), p in sorted(topology.routes().items())])
    with atomic_path(path, ".graphml") as tmp:
        nx.write_graphml(g, tmp)


def read_graphml(path: str | os.PathLike[str]) -> Topology:
    """Load a topology written by :func:`write_graphml` (or by hand, or by igraph, with the same attributes).

    Rates, sizes and times may be numbers in SI units or strings with units
    (``"128GBps"``, ``"200ns"``, ``"80GiB"``, ``"67TFLOPS"``), as the ``add_*`` methods take them.
    """
    path, g = _parse(path)
    topo = _assemble(g, path)
    check_gateways_named(topo, topo.gateways(), path)
    return topo.validate()


def _parse(path: str | os.PathLike[str]) -> tuple[str, nx.Graph]:
    """The file's graph, with repeated nodes and links refused and igraph's renamed nodes named again."""
    path = _check_graphml_unique(path)
    try:
        g = nx.read_graphml(path)
    except Exception as exc:  # noqa: BLE001 - any parse failure is bad input
        raise HcsimError(f"GraphML file '{path}' cannot be read: {str(exc).splitlines()[0]}") from None
    return path, restore_names(g, path)  # nodes renamed n0, n1, ... by igraph, names kept in an attribute


def _assemble(g: nx.Graph, path: str) -> Topology:
    """The topology of a parsed graph: units parsed, integers made ints, gateways and routes from their JSON."""
    topo = Topology()
    topo.graph.update({k: v for k, v in g.graph.items() if not k.endswith("_json")})
    for name, data in g.nodes(data=True):
        topo.add_node(name, **_with_units(data, _NODE_UNITS, f"node '{name}'"))
    for u, v, data in g.edges(data=True):
        data = dict(data)
        data.pop("id", None)
        topo.add_edge(u, v, **_with_units(data, _LINK_UNITS, f"link '{u}'--'{v}'"))
    for _, data in topo.nodes(data=True):
        data.setdefault("zone", "")
    topo.graph["gateways"] = _graph_json(g, path, "gateways_json", "{}", _gateways_shape)
    routes = _graph_json(g, path, "routes_json", "[]", _routes_shape)
    topo.graph["routes"] = {(s, d): p for s, d, p in routes}
    return topo


# ---------------------------------------------------------------------- attributes
def _integer(value: object) -> object:
    """``value`` as an int if it is one (GraphML may store it as a double or a string), else unchanged."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    return value


_NODE_UNITS = {
    "fp16_flops": parse_flops,
    "fp32_flops": parse_flops,
    "bf16_flops": parse_flops,
    "tf32_flops": parse_flops,
    "fp8_flops": parse_flops,
    "memory": parse_bytes,
    "capacity": parse_bytes,
    "memory_bandwidth": parse_bandwidth,
    "rank": _integer,
}
_LINK_UNITS = {"bandwidth": parse_bandwidth, "latency": parse_time, "lanes": _integer}


def _with_units(data: dict[str, Any], units: dict[str, Any], what: str) -> dict[str, Any]:
    """GraphML attributes with unit strings parsed (``"128GBps"`` -> 128e9) and integers made ints."""
    out = dict(data)
    for key, parse in units.items():
        if isinstance(out.get(key), str) and parse is not _integer:
            out[key] = parse(out[key], f"{what} {key}")
        elif key in out and parse is _integer:
            out[key] = _integer(out[key])
    return out


def _gateways_shape(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _routes_shape(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(r, list)
        and len(r) == 3
        and isinstance(r[0], str)
        and isinstance(r[1], str)
        and isinstance(r[2], list)
        and all(isinstance(n, str) for n in r[2])
        for r in value
    )


def _graph_json(g: nx.Graph, path: str, key: str, default: str, shape: Any) -> Any:
    """The JSON a graph attribute holds (gateways, pinned routes), checked for its shape."""
    valid = {
        "gateways_json": 'a JSON object {"zone": "gateway node", ...}',
        "routes_json": 'a JSON list [["src", "dst", ["src", ..., "dst"]], ...]',
    }[key]
    try:
        value = json.loads(str(g.graph.get(key, default)))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise HcsimError(f"GraphML file '{path}': {key} is not valid JSON: {exc} (valid: {valid})") from None
    if not shape(value):
        raise HcsimError(f"GraphML file '{path}': {key} has the wrong shape (valid: {valid})")
    return value


def _check_graphml_unique(path: str | os.PathLike[str]) -> str:
    """NetworkX merges repeated node ids and edges silently; a topology must not. Returns the path."""
    from lxml import etree

    path = check_input_file(path, "GraphML file", "a GraphML file, e.g. from 'platform build --save-graphml'")
    nodes: set[str] = set()
    links: set[frozenset[str]] = set()
    try:
        # entities are not expanded: a GraphML topology has no use for them (billion laughs, XXE)
        for _, el in etree.iterparse(path, events=("end",), no_network=True, resolve_entities=False):
            tag = el.tag.rpartition("}")[2]
            if tag == "node":
                name = el.get("id")
                if name in nodes:
                    raise HcsimError(f"node '{name}' is a duplicate in '{path}' (node names must be unique)")
                nodes.add(name)
            elif tag == "edge":
                pair = frozenset((el.get("source"), el.get("target")))
                if pair in links:
                    a, b = sorted(pair) if len(pair) == 2 else (el.get("source"),) * 2
                    raise HcsimError(f"link '{a}'--'{b}' is a duplicate in '{path}' (use lanes for parallel links)")
                links.add(pair)
            if tag in ("node", "edge"):
                el.clear()
    except etree.XMLSyntaxError as exc:
        raise HcsimError(f"GraphML file '{path}' cannot be read: {exc}") from None
    return path


# ---------------------------------------------------------------------- names igraph moved
# igraph has no node ids of its own: reading a GraphML keeps each ``<node id=...>`` in a
# vertex attribute ``id``, and writing one numbers the nodes ``n0``, ``n1``, ... and stores
# the kept names as ``<data>`` of that attribute (a graph built in igraph keeps them in
# ``name``). It also writes every attribute on every node: a string attribute a node never
# had becomes ``""`` (numeric ones are left out when they are NaN). Gateways, pinned routes
# and XPU properties such as ``host_memory`` name nodes by their real names, so such a file
# read as is would fail far from the cause.

NAME_ATTRIBUTES = ("id", "name")
"""Node attributes that may hold a node's real name (igraph: ``id`` after a read, ``name`` when built in igraph)."""

_NUMBERED = re.compile(r"n\d+")


def _is_renamed(g: nx.Graph) -> bool:
    """Node ids look generated (``n0``, ``n1``, ...), as igraph and yEd write them."""
    return g.number_of_nodes() > 0 and all(isinstance(n, str) and _NUMBERED.fullmatch(n) for n in g)


def restore_names(g: nx.Graph, path: str | os.PathLike[str]) -> nx.Graph:
    """``g`` with each node renamed to the name kept in its ``id`` or ``name`` attribute, if it has one.

    Applies only when every node id is generated (``n<k>``) and every node keeps a
    non-empty name in the same attribute; names must be unique. Returns ``g`` unchanged
    otherwise.
    """
    if not _is_renamed(g):
        return g
    for attribute in NAME_ATTRIBUTES:
        kept = {n: d.get(attribute) for n, d in g.nodes(data=True)}
        if not any(isinstance(v, str) and v for v in kept.values()):
            continue
        missing = sorted((n for n, v in kept.items() if not (isinstance(v, str) and v)), key=_order)
        if missing:
            raise HcsimError(
                f"GraphML file '{path}': nodes are numbered (n0, n1, ...) with their names in attribute "
                f"'{attribute}', but node '{missing[0]}' has none (valid: every node keeps its name, or none does)"
            )
        seen: dict[str, str] = {}
        for n, name in kept.items():
            if name in seen:
                raise HcsimError(
                    f"GraphML file '{path}': nodes '{seen[name]}' and '{n}' both keep the name {name!r} "
                    f"in attribute '{attribute}' (node names must be unique)"
                )
            seen[name] = n
        h = nx.relabel_nodes(g, kept, copy=True)
        for _, data in h.nodes(data=True):
            data.pop(attribute, None)
            _drop_fill(data)
        for _, _, data in h.edges(data=True):
            _drop_fill(data)
        return h
    return g


def _drop_fill(data: dict[str, Any]) -> None:
    """Remove what igraph writes for attributes an element never had: "" strings and NaN numbers."""
    for key in [k for k, v in data.items() if v == "" or (isinstance(v, float) and math.isnan(v))]:
        if key != "zone":  # "" is the root zone: a real value, and the default anyway
            del data[key]


def _order(n: str) -> tuple[int, str]:
    return (int(n[1:]) if _NUMBERED.fullmatch(n) else -1, n)


def check_gateways_named(g: nx.Graph, gateways: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """When gateways name nodes the file does not have and its ids are generated, say the names were lost."""
    unknown = sorted(str(node) for node in gateways.values() if node not in g)
    if unknown and _is_renamed(g):
        raise HcsimError(
            f"GraphML file '{path}': its nodes are numbered (n0, n1, ...) but its gateways name nodes such as "
            f"'{unknown[0]}': the tool that wrote it renamed the nodes without keeping their names "
            f"(valid: node ids that are the names, or the names kept in a node attribute 'id' or 'name')"
        )
