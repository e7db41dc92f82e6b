"""GraphML written back by other tools: node names kept in an attribute, not in the node ids.

igraph has no node ids of its own: reading a GraphML keeps each ``<node id=...>`` in a
vertex attribute ``id``, and writing one numbers the nodes ``n0``, ``n1``, ... and stores
the kept names as ``<data>`` of that attribute (a graph built in igraph keeps them in
``name``). It also writes every attribute on every node: a string attribute a node never
had becomes ``""`` (numeric ones are left out when they are NaN). Gateways, pinned routes
and XPU properties such as ``host_memory`` name nodes by their real names, so such a file
read as is fails far from the cause ("gateway 'r00.cxl' is not a node of that zone").

:func:`restore_names` puts the kept names back (when every node has one, and they are
unique) and drops the empty strings igraph filled in; :func:`check_gateways_named` names
the real problem when the names are lost.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

import networkx as nx

from hcsim.errors import HcsimError

__all__ = ["NAME_ATTRIBUTES", "restore_names", "check_gateways_named"]

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
