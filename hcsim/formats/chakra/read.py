"""Reading a Chakra trace: per-rank ET files merged into one :class:`~hcsim.workload.graph.Workload`.

:func:`read_chakra` runs in four steps: **parse** (the rank files' messages and process
groups), **validate** (each node, sorted into compute vertices, sends, receives and
collectives), **merge** (the k-th send a->b with the k-th receive; the k-th collective of a
group on each member) and **assemble** (:mod:`.assemble`: dependencies joined through
merged and skipped nodes).

Invariant: every ET node becomes exactly one vertex (merged across ranks for p2p and
collectives) or is skipped and counted in ``graph["chakra_skipped"]``; anything hcsim
cannot run is a one-line :class:`~hcsim.errors.HcsimError`. See docs/formats.md.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hcsim.errors import HcsimError
from hcsim.formats.chakra.assemble import Merged, assemble
from hcsim.formats.chakra.files import (
    COLLECTIVE_KINDS,
    chakra_files,
    json_attr,
    node_attrs,
    number_attr,
    read_messages,
    schema,
)
from hcsim.formats.ranks import RankMap, load_rank_map, read_json_file
from hcsim.workload.graph import ALGORITHMS, Workload

__all__ = ["read_chakra"]

SKIPPED_TYPES = ("METADATA_NODE", "INVALID_NODE")
PYTORCH_CTRL = "ctrl_deps of a PyTorch trace (call-tree parents)"
"""In a trace from Chakra's PyTorch converter (its host operators carry ``rf_id`` and
``op_schema``), ``ctrl_deps`` name each operator's parent in the call tree (the root itself
is left out of the file, and a CPU operator can name the GPU kernel it waits for): they are
not followed, as Chakra's own feeder follows ``data_deps`` only; they are counted."""
PYTORCH_ATTRS = frozenset({"rf_id", "op_schema"})
HOST_SIDE = ("COMP_NODE", "COMM_COLL_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE")
"""Node types skipped with ``is_cpu_op`` true: host-side operators of a PyTorch trace (a c10d
collective's launch has no comm_type; the GPU kernel node that follows it carries the collective)."""
WORLD = ("", "0")  # pg_name values that mean every rank (ASTRA-sim's default communicator)

Groups = str | os.PathLike[str] | Mapping[str, Sequence[int]]
"""Communicator groups: an ASTRA-sim JSON file ``{"1": [0, 1], ...}`` or such a mapping."""


def read_chakra(
    prefix: str | os.PathLike[str],
    xpus: Sequence[str],
    *,
    xpu_flops: Mapping[str, float] | float | None = None,
    rank_map: RankMap | None = None,
    groups: Groups | None = None,
    algorithms: Mapping[str, str] | None = None,
) -> Workload:
    """Read the Chakra trace ``PREFIX.RANK.et`` into a workload on ``xpus`` (rank i on ``xpus[i]``).

    ``xpu_flops``: fp32 FLOP/s of each XPU (or one rate for all), which turns
    ``duration_micros`` into FLOPs; needed only when a compute node has a duration and no
    ``num_ops``. ``rank_map`` places ranks elsewhere; ``groups`` adds communicator groups;
    ``algorithms`` picks the algorithm per kind (default: each kind's default, e.g. ring).
    """
    files = chakra_files(prefix)
    n = len(files)
    xpu_of = load_rank_map(rank_map, n, xpus)
    pg = _load_groups(groups)
    per_rank, graph_attrs = _parse(files)
    _declare_groups(pg, per_rank, n)
    trace = _Trace(prefix=os.fspath(prefix), files=files, xpu_of=xpu_of, groups=pg)
    for rank, nodes in enumerate(per_rank):
        _validate(trace, rank, nodes, xpu_flops)
    _pair_transfers(trace, algorithms)
    _merge_collectives(trace, algorithms)
    w = assemble(
        prefix, trace.merged, trace.vertex_of, trace.receives, trace.deps, trace.loop_deps, trace.skipped, xpu_of, files
    )  # fmt: skip
    w.graph.update({k: v for k, v in graph_attrs.items() if k not in ("ranks", "chakra_skipped")})
    return w


@dataclass
class _Trace:
    """What the nodes of every rank file have been sorted into, on the way to merged vertices."""

    prefix: str
    files: list[str]
    xpu_of: list[str]
    groups: dict[str, list[int]]
    merged: list[Merged] = field(default_factory=list)
    vertex_of: dict[tuple[int, int], int] = field(default_factory=dict)  # (rank, node id) -> merged index; -1 skipped
    skipped: dict[str, int] = field(default_factory=dict)
    loop_deps: list[tuple[int, int, int]] = field(default_factory=list)  # (rank, from id, to id): loop-carried edges
    sends: dict[tuple[int, int, int], list[Any]] = field(default_factory=dict)  # (src, dst, tag) -> sends in order
    recvs: dict[tuple[int, int, int], list[Any]] = field(default_factory=dict)
    colls: dict[tuple[str, int], list[tuple[int, Any]]] = field(default_factory=dict)  # (group, rank) -> in order
    deps: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    receives: set[tuple[int, int]] = field(default_factory=set)  # RECVs: their deps gate only what follows them

    @property
    def n(self) -> int:
        return len(self.files)


# ---------------------------------------------------------------------- parse
def _parse(files: list[str]) -> tuple[list[list[Any]], dict[str, Any]]:
    """Every rank's nodes, and the graph attributes hcsim keeps in rank 0's GlobalMetadata."""
    per_rank: list[list[Any]] = []
    graph_attrs: dict[str, Any] = {}
    for r, f in enumerate(files):
        meta, nodes = read_messages(f)
        per_rank.append(nodes)
        if r == 0:
            graph_attrs = json_attr(node_attrs(meta), "hcsim_graph", f"Chakra file '{f}': GlobalMetadata")
    return per_rank, graph_attrs


def _load_groups(groups: Groups | None) -> dict[str, list[int]]:
    if groups is None:
        return {}
    if isinstance(groups, Mapping):
        data: Any = groups
        where = "process groups"
    else:
        where = f"communicator-group file '{os.fspath(groups)}'"
        data = read_json_file(groups, where)
    if not isinstance(data, Mapping):
        raise HcsimError(f'{where} must map a group name to its ranks, e.g. {{"1": [0, 1]}}')
    out = {}
    for key, ranks in data.items():
        if not isinstance(ranks, list) or not all(isinstance(r, int) and not isinstance(r, bool) for r in ranks):
            raise HcsimError(f"{where}: group {key!r} must list integer ranks, got {ranks!r}")
        out[str(key)] = list(ranks)
    return out


def _declare_groups(pg: dict[str, list[int]], per_rank: list[list[Any]], n: int) -> None:
    """Add the process groups METADATA_NODEs declare (those given first win); check every group's ranks."""
    for nodes in per_rank:  # process groups first: a collective may use a group declared on another rank
        for node in nodes:
            if node.type == 1:  # METADATA_NODE
                pg.update({k: v for k, v in _pg_metadata(node, n).items() if k not in pg})
    for name, ranks in pg.items():
        bad = [r for r in ranks if not 0 <= r < n]
        if bad:
            raise HcsimError(f"process group '{name}' names rank {bad[0]}, but the trace has ranks 0..{n - 1}")


def _pg_metadata(node: Any, n: int) -> dict[str, list[int]]:
    """PyTorch's process groups from a METADATA_NODE: ``inputs.values`` holds a JSON list of {pg_name, ranks}.

    Chakra's PyTorch converter stores ``str(values)``, a Python list around the JSON text;
    an empty ``ranks`` means every rank (as ASTRA-sim reads it).
    """
    text = node.inputs.values.strip()
    if not text:
        return {}
    try:
        items: Any = json.loads(text)
    except ValueError:
        try:
            items = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return {}
    if isinstance(items, list) and items and all(isinstance(i, str) for i in items):
        try:
            items = json.loads(items[0])
        except ValueError:
            return {}
    try:
        return {str(item["pg_name"]): [int(r) for r in item["ranks"]] or list(range(n)) for item in items}
    except (ValueError, TypeError, KeyError):
        return {}  # a metadata node that is not a process-group table: nothing to learn from it


# ---------------------------------------------------------------------- validate
def is_pytorch(nodes: list[Any]) -> bool:
    """Whether a rank file came from Chakra's PyTorch converter (a node with ``rf_id`` or ``op_schema``)."""
    return any(a.name in PYTORCH_ATTRS for node in nodes for a in node.attr)


def _validate(trace: _Trace, rank: int, nodes: list[Any], xpu_flops: Mapping[str, float] | float | None) -> None:
    """Check each node of one rank file and sort it: a compute vertex, skipped, a send, a receive or a collective."""
    type_name = schema().NodeType.Name
    n = trace.n
    ids: set[int] = set()
    pytorch = is_pytorch(nodes)
    for node in nodes:
        where = f"Chakra file '{trace.files[rank]}', node {node.id} ('{node.name}')"
        if node.id in ids:
            raise HcsimError(f"{where}: id {node.id} is a duplicate (node ids must be unique per rank)")
        ids.add(node.id)
        ctrl = [d for d in node.ctrl_deps if d not in node.data_deps]
        if pytorch and ctrl:  # the call-tree parent, not an order (Chakra's feeder follows data_deps only)
            trace.skipped[PYTORCH_CTRL] = trace.skipped.get(PYTORCH_CTRL, 0) + len(ctrl)
            ctrl = []
        trace.deps[(rank, node.id)] = list(node.data_deps) + ctrl
        attrs = node_attrs(node)
        for d in attrs.get("hcsim_loop_deps", []):
            trace.loop_deps.append((rank, int(d), node.id))
        try:
            kind = type_name(node.type)
        except ValueError:
            raise HcsimError(
                f"{where}: node type {node.type} is unknown (valid: the NodeType values of et_def.proto)"
            ) from None
        if kind in SKIPPED_TYPES or (kind in HOST_SIDE and attrs.get("is_cpu_op") is True):
            label = kind if kind in SKIPPED_TYPES else f"{kind} (is_cpu_op)"
            trace.skipped[label] = trace.skipped.get(label, 0) + 1
            trace.vertex_of[(rank, node.id)] = -1
        elif kind == "COMP_NODE":
            trace.vertex_of[(rank, node.id)] = len(trace.merged)
            vertex = _compute_attrs(node, attrs, trace.xpu_of[rank], xpu_flops, where)
            trace.merged.append(Merged(node.name, dict(json_attr(attrs, "hcsim_attrs", where), **vertex)))
            trace.merged[-1].members.append((rank, node.id))
        elif kind in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
            send = kind == "COMM_SEND_NODE"
            peer = number_attr(attrs, "comm_dst" if send else "comm_src", where)
            size = number_attr(attrs, "comm_size", where)
            if peer is None or size is None:
                need = "comm_dst" if send else "comm_src"
                raise HcsimError(f"{where}: a {kind} needs {need} and comm_size attributes")
            peer = int(peer)
            own = number_attr(attrs, "comm_src" if send else "comm_dst", where)
            if own is not None and int(own) != rank:
                role = "comm_src of a send" if send else "comm_dst of a receive"
                raise HcsimError(f"{where}: {role} is {int(own)}, but the node is in rank {rank}'s file")
            if not 0 <= peer < n or peer == rank:
                raise HcsimError(f"{where}: peer rank {peer} is invalid (valid: another rank of 0..{n - 1})")
            tag = int(number_attr(attrs, "comm_tag", where) or 0)
            key = (rank, peer, tag) if send else (peer, rank, tag)
            (trace.sends if send else trace.recvs).setdefault(key, []).append(node)
        elif kind == "COMM_COLL_NODE":
            group = str(attrs.get("pg_name", ""))
            group = "" if group in WORLD else group
            if group and group not in trace.groups:
                raise HcsimError(
                    f"{where}: process group '{group}' is not declared (valid: '' or '0' for every rank, "
                    "a group of a METADATA_NODE, or one given with --comm-groups FILE)"
                )
            members = list(range(n)) if not group else trace.groups[group]
            if rank not in members:
                raise HcsimError(f"{where}: rank {rank} is not a member of process group '{group}'")
            trace.colls.setdefault((group, rank), []).append((rank, node))
        else:
            raise HcsimError(
                f"{where}: node type {kind} is not supported (valid: COMP_NODE, COMM_SEND_NODE, "
                f"COMM_RECV_NODE, COMM_COLL_NODE; skipped: {', '.join(SKIPPED_TYPES)})"
            )


def _compute_attrs(
    node: Any, attrs: dict[str, Any], xpu: str, xpu_flops: Mapping[str, float] | float | None, where: str
) -> dict[str, Any]:
    num_ops = number_attr(attrs, "num_ops", where)
    mem = number_attr(attrs, "tensor_size", where) if num_ops is not None else None
    if num_ops is not None:
        flops = float(num_ops)
    elif node.duration_micros:
        rate = xpu_flops.get(xpu) if isinstance(xpu_flops, Mapping) else xpu_flops
        if rate is None or not rate > 0:
            raise HcsimError(
                f"{where}: a duration needs the XPU's FLOP rate to become FLOPs (run it on a platform, or give "
                "xpu_flops)"
            )
        flops = node.duration_micros * 1e-6 * float(rate)
    else:
        flops = 0.0
    precision = attrs.get("hcsim_precision", "fp32")
    out = {"type": "compute", "flops": flops, "location": xpu, "precision": precision}
    out["mem_bytes"] = float(mem or 0.0)
    footprint = number_attr(attrs, "hcsim_footprint", where)
    out["footprint"] = out["mem_bytes"] if footprint is None else float(footprint)
    if "hcsim_data" in attrs:
        out["data"] = str(attrs["hcsim_data"])
    return out


def _algorithm(kind: str, attrs: dict[str, Any], chosen: Mapping[str, str] | None) -> str:
    if "hcsim_algorithm" in attrs:
        return str(attrs["hcsim_algorithm"])
    if chosen and kind in chosen:
        return chosen[kind]
    return ALGORITHMS[kind][0]


def _collective_bytes(kind: str, comm_size: float, members: int, attrs: dict[str, Any], where: str) -> float:
    """hcsim's size S of a collective from Chakra's ``comm_size``, read as ASTRA-sim reads it.

    ASTRA-sim (Ring.cc) takes an all-gather's ``comm_size`` as each rank's input (its ring
    steps move ``comm_size``; the output is N times it), where hcsim's S is the gathered
    output: S = N comm_size. Every other kind's ``comm_size`` is hcsim's S (an allreduce's
    buffer, a reduce-scatter's input, an all-to-all's per-rank send buffer). hcsim's writer
    adds ``hcsim_bytes`` where S / N is not a whole number of bytes.
    """
    exact = number_attr(attrs, "hcsim_bytes", where)
    if exact is not None:
        return float(exact)
    return float(comm_size) * members if kind == "allgather" else float(comm_size)


# ---------------------------------------------------------------------- merge
def _pair_transfers(trace: _Trace, algorithms: Mapping[str, str] | None) -> None:
    """p2p: the k-th send a->b with a tag meets the k-th receive on b from a with that tag."""
    xpu_of = trace.xpu_of
    for key in sorted(set(trace.sends) | set(trace.recvs)):
        s, r = trace.sends.get(key, []), trace.recvs.get(key, [])
        src, dst, tag = key
        if len(s) != len(r):
            raise HcsimError(
                f"Chakra trace '{trace.prefix}': {len(s)} sends from rank {src} to {dst} (tag {tag}) but "
                f"{len(r)} receives (every send needs its receive)"
            )
        for k, (sn, rn) in enumerate(zip(s, r, strict=True)):
            sa, ra = node_attrs(sn), node_attrs(rn)
            if sa["comm_size"] != ra["comm_size"]:
                raise HcsimError(
                    f"Chakra trace: send {sn.id} on rank {src} has comm_size {sa['comm_size']} but its receive "
                    f"{rn.id} on rank {dst} has {ra['comm_size']} (they must agree)"
                )
            name = sn.name if sn.name and sn.name == rn.name else f"p2p:{src}->{dst}:tag{tag}#{k}"
            attrs = json_attr(sa, "hcsim_attrs", f"Chakra send {sn.id} on rank {src}")
            attrs.update(type="comm", bytes=float(sa["comm_size"]), kind="p2p")
            attrs.update(scope=[xpu_of[src], xpu_of[dst]], algorithm=_algorithm("p2p", sa, algorithms))
            trace.vertex_of[(src, sn.id)] = trace.vertex_of[(dst, rn.id)] = len(trace.merged)
            trace.receives.add((dst, rn.id))
            trace.merged.append(Merged(name, attrs, [(src, sn.id), (dst, rn.id)]))


def _merge_collectives(trace: _Trace, algorithms: Mapping[str, str] | None) -> None:
    """The k-th collective of a group on each member rank is one vertex; type and size must agree."""
    comm_name = schema().CollectiveCommType.Name
    colls, n = trace.colls, trace.n
    for group in sorted({g for g, _ in colls}):
        members = list(range(n)) if not group else trace.groups[group]
        if len(members) < 2:  # a collective over one rank moves nothing (a one-rank trace): skipped, counted
            for r in members:
                for _, node in colls.get((group, r), []):
                    trace.vertex_of[(r, node.id)] = -1
                    trace.skipped["collective over one rank"] = trace.skipped.get("collective over one rank", 0) + 1
            continue
        counts = {r: len(colls.get((group, r), [])) for r in members}
        if len(set(counts.values())) != 1:
            r0 = min(counts, key=counts.get)
            r1 = max(counts, key=counts.get)
            raise HcsimError(
                f"Chakra trace '{trace.prefix}': process group '{group or '0'}' has {counts[r1]} collectives "
                f"on rank {r1} but {counts[r0]} on rank {r0} (every member must take part in each)"
            )
        for k in range(counts[members[0]]):
            instance = [colls[(group, r)][k] for r in members]
            first_rank, first = instance[0]
            fa = node_attrs(first)
            where = f"Chakra file '{trace.files[first_rank]}', node {first.id} ('{first.name}')"
            ctype, size = fa.get("comm_type"), number_attr(fa, "comm_size", where)
            if ctype is None or size is None:
                raise HcsimError(f"{where}: a COMM_COLL_NODE needs comm_type and comm_size attributes")
            try:
                cname = comm_name(int(ctype))
            except ValueError:
                cname = str(ctype)
            if cname not in COLLECTIVE_KINDS:
                raise HcsimError(f"{where}: collective {cname} is not supported (valid: {', '.join(COLLECTIVE_KINDS)})")
            for r, other in instance[1:]:
                oa = node_attrs(other)
                if oa.get("comm_type") != ctype or oa.get("comm_size") != fa.get("comm_size"):
                    raise HcsimError(
                        f"Chakra trace: collective #{k} of group '{group or '0'}' is {cname} of {fa.get('comm_size')} "
                        f"bytes on rank {first_rank} but node {other.id} on rank {r} differs (type "
                        f"{oa.get('comm_type')}, size {oa.get('comm_size')})"
                    )
            kind = COLLECTIVE_KINDS[cname]
            names = {node.name for _, node in instance}
            name = first.name if len(names) == 1 and first.name else f"{kind}:{group or '0'}#{k}"
            attrs = json_attr(fa, "hcsim_attrs", where)
            attrs.update(type="comm", bytes=_collective_bytes(kind, size, len(members), fa, where), kind=kind)
            attrs.update(scope=[trace.xpu_of[r] for r in members], algorithm=_algorithm(kind, fa, algorithms))
            idx = len(trace.merged)
            trace.merged.append(Merged(name, attrs, [(r, node.id) for r, node in instance]))
            for r, node in instance:
                trace.vertex_of[(r, node.id)] = idx
