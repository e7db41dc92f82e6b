"""Small input files for the bad-input cases: GraphML topologies, SimGrid platforms, workload JSON.

Each builder writes a small *valid* file by default; a case overrides the one item it
breaks, so the case line shows what is wrong and nothing else.
"""

from __future__ import annotations

import json
from typing import Any

XPU = {"kind": "xpu", "fp16_flops": 1e15, "fp32_flops": 6.7e13, "memory": 8e10, "memory_bandwidth": 3.35e12}
SWITCH = {"kind": "switch", "switch_kind": "generic"}
LINK = {"bandwidth": 1e9, "latency": 1e-6}

BILLION_LAUGHS_DTD = (
    '<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10))
    + "]>"
)
"""An internal DTD whose ``&lol9;`` expands to 10**9 strings (the "billion laughs" bomb)."""

XXE_DTD = '<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
"""An internal DTD declaring an external entity that reads a local file."""


def node(**overrides: Any) -> dict[str, Any]:
    """An H100-like XPU's attributes with ``overrides`` (a value of None drops the attribute)."""
    return {k: v for k, v in {**XPU, **overrides}.items() if v is not None}


def link(**overrides: Any) -> dict[str, Any]:
    """A 1 GB/s, 1 us link's attributes with ``overrides`` (a value of None drops the attribute)."""
    return {k: v for k, v in {**LINK, **overrides}.items() if v is not None}


def _type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    return "string"


def _text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def graphml(
    nodes: dict[str, dict[str, Any]] | None = None,
    edges: list[tuple[str, str, dict[str, Any]]] | None = None,
    *,
    graph: dict[str, Any] | None = None,
    doctype: str = "",
) -> str:
    """GraphML text; by default XPUs ``a`` and ``b`` joined through switch ``sw``.

    Attribute types follow the Python values (float: double, int: long, str: string),
    as NetworkX writes them.
    """
    nodes = {"a": XPU, "b": XPU, "sw": SWITCH} if nodes is None else nodes
    edges = [("a", "sw", LINK), ("b", "sw", LINK)] if edges is None else edges
    keys: dict[tuple[str, str], str] = {}
    for where, items in (("graph", [graph or {}]), ("node", nodes.values()), ("edge", [e[2] for e in edges])):
        for attrs in items:
            for name, value in attrs.items():
                keys.setdefault((where, name), _type(value))
    ids = {k: f"d{i}" for i, k in enumerate(keys)}
    out = ["<?xml version='1.0' encoding='utf-8'?>", doctype, '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">']
    out += [f'<key id="{ids[k]}" for="{k[0]}" attr.name="{k[1]}" attr.type="{t}"/>' for k, t in keys.items()]
    out.append('<graph edgedefault="undirected">')
    out += [f'<data key="{ids["graph", k]}">{_text(v)}</data>' for k, v in (graph or {}).items()]
    for name, attrs in nodes.items():
        data = "".join(f'<data key="{ids["node", k]}">{_text(v)}</data>' for k, v in attrs.items())
        out.append(f'<node id="{name}">{data}</node>')
    for u, v, attrs in edges:
        data = "".join(f'<data key="{ids["edge", k]}">{_text(v)}</data>' for k, v in attrs.items())
        out.append(f'<edge source="{u}" target="{v}">{data}</edge>')
    out.append("</graph></graphml>")
    return "\n".join(out) + "\n"


def platform_xml(
    *,
    version: str = 'version="4.1"',
    host_a: str = 'speed="1Gf"',
    link: str = 'bandwidth="1GBps" latency="1us"',
    props: bool = True,
    doctype: str = '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
) -> str:
    """SimGrid platform XML: XPUs ``xpu0`` and ``xpu1`` (kind=xpu properties) joined by one link ``l``."""
    kind = '<prop id="kind" value="xpu"/>' if props else ""
    return (
        f'<?xml version=\'1.0\'?>\n{doctype}\n<platform {version}><zone id="z" routing="Full">\n'
        f'<host id="xpu0" {host_a}>{kind}</host><host id="xpu1" speed="1Gf">{kind}</host>\n'
        f'<link id="l" {link}/>\n<route src="xpu0" dst="xpu1"><link_ctn id="l"/></route>\n</zone></platform>\n'
    )


def compute(name: str, **overrides: Any) -> dict[str, Any]:
    """A 1 GFLOP fp32 compute vertex on ``xpu0`` (not a start vertex unless overridden)."""
    d = {"id": name, "type": "compute", "flops": 1e9, "location": "xpu0", "precision": "fp32", "is_start": False}
    return {k: v for k, v in {**d, **overrides}.items() if v is not None}


def p2p(name: str, **overrides: Any) -> dict[str, Any]:
    """A 1 MB transfer from ``xpu0`` to ``xpu1``."""
    d = {"id": name, "type": "comm", "bytes": 1e6, "kind": "p2p", "scope": ["xpu0", "xpu1"], "is_start": False}
    return {k: v for k, v in {**d, **overrides}.items() if v is not None}


def workload_json(nodes: list[Any], edges: list[Any] = (), **top: Any) -> str:  # type: ignore[assignment]
    """Node-link JSON; an edge ``(u, v)`` or ``(u, v, skip_first_iteration)``, or any value as written."""
    links = []
    for e in edges:
        if isinstance(e, tuple):
            links.append({"source": e[0], "target": e[1], **({"skip_first_iteration": e[2]} if len(e) > 2 else {})})
        else:
            links.append(e)
    return json.dumps({"directed": True, "multigraph": False, "graph": {}, "nodes": nodes, "edges": links, **top})


START = compute("c", is_start=True)
"""The usual first vertex: a compute start vertex on ``xpu0``."""
