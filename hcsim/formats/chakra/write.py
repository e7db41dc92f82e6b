"""Writing a workload as a Chakra trace: one ``NAME.RANK.et`` file per rank.

:func:`write_chakra` plans the trace (ranks, process groups, a dependency order, node ids;
refusing what Chakra cannot hold), then encodes each rank's messages. Compute vertices
become COMP_NODEs, p2p vertices a SEND and a RECV, collectives a COMM_COLL_NODE on every
member; what Chakra has no field for goes to ``hcsim_*`` attributes other readers ignore.

Invariant: :func:`~hcsim.formats.chakra.read.read_chakra` gives back the same graph
(vertices, edges, attributes), and the same workload always gives the same bytes. See
docs/formats.md.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import networkx as nx

from hcsim.errors import HcsimError
from hcsim.files import atomic_path
from hcsim.formats.chakra.files import COLLECTIVE_KINDS, SCHEMA_VERSION, frame, schema
from hcsim.workload.graph import Workload

__all__ = ["write_chakra"]

#: vertex attributes with a Chakra field (or an hcsim_* attribute of their own); the rest go to hcsim_attrs
CORE = frozenset(
    ("type", "flops", "location", "precision", "mem_bytes", "footprint", "data", "is_start", "bytes", "kind",
     "algorithm", "scope")
)  # fmt: skip


def write_chakra(workload: Workload, directory: str | os.PathLike[str], name: str | None = None) -> list[str]:
    """Write ``workload`` as per-rank Chakra ET files ``DIRECTORY/NAME.RANK.et``; return their paths.

    Ranks are ``graph["ranks"]`` (else the XPUs in order of first use). Compute vertices
    become COMP_NODEs with ``num_ops`` (FLOPs, rounded to an integer) and ``tensor_size``
    (``mem_bytes``); p2p vertices a SEND on the source and a RECV on the destination;
    collectives a COMM_COLL_NODE on every member, with a process group (declared in a
    METADATA_NODE, PyTorch's format) when the scope is not every rank in order. Every
    dependency must stay on one rank: an edge from a vertex on rank a to one that rank a
    takes no part in has no Chakra equivalent and is an error.
    """
    pb = schema()
    w = workload
    if w.number_of_nodes() == 0:
        raise HcsimError("workload is empty: nothing to write as a Chakra trace")
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise HcsimError(f"Chakra output directory '{directory}' does not exist")
    name = name or str(w.graph.get("name") or "workload")
    if not name or "/" in name or os.sep in name:
        raise HcsimError(f"Chakra trace name {name!r} is invalid (valid: a file name without '/')")
    plan = _plan(w)
    files = [frame(_rank_messages(pb, w, plan, r)) for r in range(len(plan.ranks))]
    paths = []
    for r, data in enumerate(files):
        path = os.path.join(directory, f"{name}.{r}.et")
        with atomic_path(path, ".et") as tmp, open(tmp, "wb") as f:
            f.write(data)
        paths.append(path)
    return paths


@dataclass(frozen=True)
class _Plan:
    """What every rank file shares: ranks, process groups, the vertex order, node ids, JSON extras."""

    ranks: list[str]
    rank_of: dict[str, int]
    groups: dict[tuple[str, ...], str]  # scope -> pg_name, for collectives not over every rank in order
    order: list[str]
    ids: list[dict[str, int]]  # per rank: vertex -> node id
    extra: dict[str, str]  # per vertex: attributes Chakra has no field for, as JSON ("" for none)
    graph_json: str


def _on(w: Workload, v: str) -> list[str]:
    """The ranks (XPUs) vertex ``v`` runs on."""
    d = w.nodes[v]
    return [d["location"]] if d["type"] == "compute" else list(d["scope"])


def _plan(w: Workload) -> _Plan:
    """Ranks, groups, order and ids of the trace; refuses an edge no rank can hold."""
    ranks = [str(r) for r in w.graph.get("ranks", [])]
    used = []
    for v in w.nodes:
        for x in _on(w, v):
            if x not in used:
                used.append(x)
    if not ranks or not set(used) <= set(ranks):
        ranks = used
    rank_of = {x: i for i, x in enumerate(ranks)}
    world = list(ranks)
    groups: dict[tuple[str, ...], str] = {}
    for _, d in w.nodes(data=True):
        if d["type"] == "comm" and d["kind"] != "p2p" and list(d["scope"]) != world:
            groups.setdefault(tuple(d["scope"]), str(len(groups) + 1))
    for u, v in w.edges:
        d = w.nodes[v]
        if d["type"] == "comm" and d["kind"] == "p2p" and d["scope"][0] not in _on(w, u):
            raise HcsimError(
                f"edge '{u}' -> '{v}': the transfer's sender {d['scope'][0]} takes no part in '{u}' (in Chakra a "
                "send starts on its own rank's dependencies)"
            )
        if not set(_on(w, u)) & set(_on(w, v)):
            raise HcsimError(
                f"edge '{u}' -> '{v}' crosses ranks ({', '.join(_on(w, u))} -> {', '.join(_on(w, v))}) with no rank "
                "taking part in both (Chakra dependencies stay on one rank)"
            )
    order = _write_order(w)
    extra = {
        v: _json_extras({k: x for k, x in d.items() if k not in CORE}, f"vertex '{v}'") for v, d in w.nodes(data=True)
    }
    graph_json = _json_extras({k: x for k, x in w.graph.items() if k not in ("ranks", "chakra_skipped")}, "graph")
    ids: list[dict[str, int]] = [{} for _ in ranks]
    for v in order:
        for x in _on(w, v):
            r = rank_of[x]
            ids[r][v] = len(ids[r]) + (1 if groups else 0)  # id 0 is the METADATA_NODE when there are groups
    return _Plan(ranks, rank_of, groups, order, ids, extra, graph_json)


def _rank_messages(pb: Any, w: Workload, plan: _Plan, r: int) -> list[bytes]:
    """The serialized messages of rank ``r``'s file: GlobalMetadata, the process groups, then its nodes."""
    x, ids, rank_of, groups = plan.ranks[r], plan.ids[r], plan.rank_of, plan.groups
    comm_type = {kind: pb.CollectiveCommType.Value(c) for c, kind in COLLECTIVE_KINDS.items()}
    meta = pb.GlobalMetadata(version=SCHEMA_VERSION)
    if plan.graph_json:
        meta.attr.add(name="hcsim_graph", string_val=plan.graph_json)
    out = [meta.SerializeToString()]
    if groups:
        table = [{"pg_name": g, "ranks": [rank_of[s] for s in scope]} for scope, g in groups.items()]
        md = pb.Node(id=0, name="process_groups", type=pb.METADATA_NODE)
        md.inputs.values = str([json.dumps(table)])
        out.append(md.SerializeToString())
    for v in plan.order:
        if v not in ids:
            continue
        d = w.nodes[v]
        node = pb.Node(id=ids[v], name=v)
        receiving = d["type"] == "comm" and d["kind"] == "p2p" and x == d["scope"][1]
        if not receiving:  # a RECV is posted at once: the transfer waits for the sender's side only
            node.data_deps.extend(
                ids[u] for u, _, e in w.in_edges(v, data=True) if not e.get("skip_first_iteration") and u in ids
            )
        loops = [ids[u] for u, _, e in w.in_edges(v, data=True) if e.get("skip_first_iteration") and u in ids]
        attr = node.attr.add
        if d["type"] == "compute":
            node.type = pb.COMP_NODE
            attr(name="is_cpu_op", bool_val=False)
            attr(name="num_ops", uint64_val=int(round(d["flops"])))
            attr(name="tensor_size", uint64_val=int(round(d.get("mem_bytes", 0.0))))
            attr(name="hcsim_precision", string_val=d["precision"])
            if d.get("footprint", d.get("mem_bytes", 0.0)) != d.get("mem_bytes", 0.0):
                attr(name="hcsim_footprint", double_val=float(d["footprint"]))
            if "data" in d:
                attr(name="hcsim_data", string_val=str(d["data"]))
        elif d["kind"] == "p2p":
            src, dst = d["scope"]
            node.type = pb.COMM_SEND_NODE if x == src else pb.COMM_RECV_NODE
            attr(name="is_cpu_op", bool_val=False)
            attr(name="comm_src", int32_val=rank_of[src])
            attr(name="comm_dst", int32_val=rank_of[dst])
            attr(name="comm_size", int64_val=int(round(d["bytes"])))
            attr(name="comm_tag", int32_val=0)
            attr(name="hcsim_algorithm", string_val=str(d["algorithm"]))
        else:
            node.type = pb.COMM_COLL_NODE
            attr(name="is_cpu_op", bool_val=False)
            attr(name="comm_type", int64_val=comm_type[d["kind"]])
            size = d["bytes"] / len(d["scope"]) if d["kind"] == "allgather" else d["bytes"]  # ASTRA-sim's reading
            attr(name="comm_size", int64_val=int(round(size)))
            if d["kind"] == "allgather" and int(round(size)) * len(d["scope"]) != d["bytes"]:
                attr(name="hcsim_bytes", double_val=float(d["bytes"]))
            if tuple(d["scope"]) in groups:
                attr(name="pg_name", string_val=groups[tuple(d["scope"])])
            attr(name="hcsim_algorithm", string_val=str(d["algorithm"]))
        if loops:
            attr(name="hcsim_loop_deps", uint64_list=pb.Uint64List(values=loops))
        if plan.extra[v]:
            attr(name="hcsim_attrs", string_val=plan.extra[v])
        out.append(node.SerializeToString())
    return out


def _json_extras(values: dict[str, Any], what: str) -> str:
    """Attributes Chakra has no field for, as JSON text ("" when there are none)."""
    if not values:
        return ""
    try:
        return json.dumps(values, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise HcsimError(f"{what}: an attribute cannot be written to Chakra ({exc}; valid: JSON values)") from None


def _write_order(w: Workload) -> list[str]:
    """Vertices in a dependency order (same-iteration edges), ties by insertion: the same order on every rank."""
    position = {v: i for i, v in enumerate(w.nodes)}
    same = nx.DiGraph()
    same.add_nodes_from(w.nodes)
    same.add_edges_from((u, v) for u, v, d in w.edges(data=True) if not d.get("skip_first_iteration"))
    try:
        return list(nx.lexicographical_topological_sort(same, key=position.__getitem__))
    except nx.NetworkXUnfeasible:
        raise HcsimError(
            "workload has a dependency cycle within one iteration: it cannot be written as Chakra"
        ) from None
