"""Chakra execution traces (ASTRA-sim's workload format) in and out of hcsim workload graphs.

A Chakra ET is one file per rank, ``NAME.RANK.et``: a sequence of protobuf messages, each
preceded by its length as a varint, first one ``GlobalMetadata`` then ``Node`` messages
(schema: :file:`et_def.proto` beside this module, from mlcommons/chakra). The messages
are parsed by protobuf itself from the generated :mod:`hcsim.formats.et_def_pb2`; the
varint framing uses protobuf's own varint codec.

Reading (:func:`read_chakra`) merges the per-rank graphs into one :class:`Workload`:

* ``COMP_NODE`` on rank r -> a compute vertex on XPU r. Its FLOPs are ``num_ops`` when the
  node has that attribute (with ``tensor_size`` as ``mem_bytes``), else
  ``duration_micros`` x the XPU's fp32 rate, so the vertex takes exactly the traced
  duration on that XPU (``xpu_flops`` gives the rates);
* ``COMM_SEND_NODE`` on rank a to b and ``COMM_RECV_NODE`` on b from a -> one p2p vertex,
  paired in order per (src, dst, comm_tag);
* ``COMM_COLL_NODE`` -> one collective vertex per instance: the k-th collective of
  process group P on each member rank is one vertex whose scope is P's ranks. ``pg_name``
  "" or "0" is every rank (ASTRA-sim's rule); other names come from a ``METADATA_NODE``
  (PyTorch's process-group JSON in ``inputs.values``) or from ``groups`` (ASTRA-sim's
  communicator-group JSON, ``{"1": [0, 1], ...}``);
* ``data_deps`` and ``ctrl_deps`` -> edges (an edge into or out of a merged vertex joins
  the member ranks' dependencies);
* ``METADATA_NODE``, ``INVALID_NODE`` and host-side compute (``is_cpu_op``) are skipped:
  dependencies pass through them, and the count is kept in ``graph["chakra_skipped"]``,
  which ``hcsim run`` prints. Any other node type is a one-line error.

Writing (:func:`write_chakra`, :meth:`Workload.to_chakra`) is the inverse, with the
fields Chakra has no place for (precision, footprint, algorithm, loop-carried edges, other
vertex and graph attributes as JSON) in ``hcsim_*`` attributes that other readers
ignore, so a written graph reads back equal.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hcsim.errors import HcsimError
from hcsim.workload.graph import ALGORITHMS, Workload

__all__ = ["read_chakra", "write_chakra", "chakra_files", "is_chakra", "xpu_rates_from_platform"]

#: Chakra's CollectiveCommType -> hcsim's collective kind (the types hcsim cannot run are errors)
COLLECTIVE_KINDS = {
    "ALL_REDUCE": "allreduce",
    "REDUCE": "reduce",
    "ALL_GATHER": "allgather",
    "BROADCAST": "broadcast",
    "ALL_TO_ALL": "alltoall",
    "REDUCE_SCATTER": "reduce_scatter",
}
SKIPPED_TYPES = ("METADATA_NODE", "INVALID_NODE")
WORLD = ("", "0")  # pg_name values that mean every rank (ASTRA-sim's default communicator)
SCHEMA_VERSION = "0.0.4"


def _read_json(path: str | os.PathLike[str], where: str) -> Any:
    """A small JSON side file (rank map, communicator groups); one-line errors naming ``where``."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise HcsimError(f"{where} does not exist") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise HcsimError(f"{where} is not valid JSON: {exc}") from None


def _pb() -> Any:
    """The generated schema module (imports protobuf: only when a trace is read or written)."""
    try:
        from hcsim.formats import et_def_pb2
    except ImportError as exc:  # protobuf missing or too old for the generated code
        raise HcsimError(
            f"reading Chakra traces needs protobuf >= 7.35 ({exc}); pip install 'protobuf>=7.35.1,<8'"
        ) from None
    return et_def_pb2


# ---------------------------------------------------------------------- files
_RANK_FILE = re.compile(r"^(?P<name>.+)\.(?P<rank>\d+)\.et$")


def chakra_files(prefix: str | os.PathLike[str]) -> list[str]:
    """The per-rank files ``PREFIX.0.et`` .. ``PREFIX.(N-1).et``, in rank order.

    ``prefix`` may also be a directory holding one trace, or one of the rank files.
    """
    prefix = os.fspath(prefix)
    if os.path.isdir(prefix):
        names = sorted({m.group("name") for f in os.listdir(prefix) if (m := _RANK_FILE.match(f))})
        if len(names) != 1:
            found = ", ".join(names) if names else "none"
            raise HcsimError(
                f"Chakra trace directory '{prefix}' must hold one trace NAME.RANK.et (found: {found}; "
                "valid: give PATH/NAME)"
            )
        prefix = os.path.join(prefix, names[0])
    elif (m := _RANK_FILE.match(os.path.basename(prefix))) and os.path.isfile(prefix):
        prefix = os.path.join(os.path.dirname(prefix), m.group("name"))
    folder, base = os.path.split(prefix)
    folder = folder or "."
    if not os.path.isdir(folder):
        raise HcsimError(f"Chakra trace '{prefix}': directory '{folder}' does not exist")
    ranks: dict[int, str] = {}
    for f in os.listdir(folder):
        m = _RANK_FILE.match(f)
        if m and m.group("name") == base:
            ranks[int(m.group("rank"))] = os.path.join(folder, f)
    if not ranks:
        raise HcsimError(f"Chakra trace '{prefix}' has no rank files (valid: PREFIX.0.et, PREFIX.1.et, ...)")
    missing = sorted(set(range(max(ranks) + 1)) - set(ranks))
    if missing:
        raise HcsimError(f"Chakra trace '{prefix}': rank file {prefix}.{missing[0]}.et is missing (ranks run 0..N-1)")
    return [ranks[r] for r in range(len(ranks))]


def is_chakra(name: str) -> bool:
    """Whether ``name`` names a Chakra trace: a prefix with at least one rank file, a rank file, or a folder of them.

    True as soon as one rank file is there, so that :func:`chakra_files` can say what is wrong with the rest.
    """
    name = os.fspath(name)
    if os.path.isdir(name):
        return any(_RANK_FILE.match(f) for f in os.listdir(name))
    if _RANK_FILE.match(os.path.basename(name)) and os.path.isfile(name):
        return True
    folder, base = os.path.split(name)
    if not base or not os.path.isdir(folder or "."):
        return False
    return any((m := _RANK_FILE.match(f)) and m.group("name") == base for f in os.listdir(folder or "."))


def _read_messages(path: str) -> tuple[Any, list[Any]]:
    """The GlobalMetadata and Nodes of one rank file, parsed by protobuf."""
    from google.protobuf.internal.decoder import _DecodeVarint  # protobuf's own varint codec
    from google.protobuf.message import DecodeError

    pb = _pb()
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise HcsimError(f"Chakra file '{path}' cannot be read: {exc.strerror}") from None
    messages: list[bytes] = []
    pos = 0
    while pos < len(data):
        try:
            size, start = _DecodeVarint(data, pos)
        except (DecodeError, IndexError):
            raise HcsimError(f"Chakra file '{path}' is corrupt: bad length prefix at byte {pos}") from None
        if start + size > len(data):
            raise HcsimError(
                f"Chakra file '{path}' is corrupt: message {len(messages)} at byte {pos} claims {size} bytes, "
                f"{len(data) - start} remain (truncated?)"
            )
        messages.append(data[start : start + size])
        pos = start + size
    if not messages:
        raise HcsimError(f"Chakra file '{path}' is empty (valid: a GlobalMetadata message then Node messages)")
    meta = pb.GlobalMetadata()
    nodes = []
    try:
        meta.ParseFromString(messages[0])
        for raw in messages[1:]:
            node = pb.Node()
            node.ParseFromString(raw)
            nodes.append(node)
    except DecodeError as exc:
        raise HcsimError(f"Chakra file '{path}' is corrupt: message {len(nodes) + 1} is not a Node ({exc})") from None
    return meta, nodes


def _attrs(node: Any) -> dict[str, Any]:
    """A node's attributes by name, each as its Python value (whatever oneof field holds it)."""
    out: dict[str, Any] = {}
    for a in node.attr:
        kind = a.WhichOneof("value")
        if kind is None:
            continue
        value = getattr(a, kind)
        out[a.name] = list(value.values) if kind.endswith("_list") else value
    return out


def _extras(attrs: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    """hcsim's own attributes kept in a JSON string attribute (written by :func:`write_chakra`)."""
    text = attrs.get(key)
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        raise HcsimError(f"{where}: attribute {key} is not JSON (it is hcsim's own; remove it or fix it)") from None
    if not isinstance(value, dict):
        raise HcsimError(f"{where}: attribute {key} must be a JSON object")
    return value


def _number(attrs: dict[str, Any], key: str, where: str) -> float | None:
    value = attrs.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or math.isinf(value):
        raise HcsimError(f"{where}: attribute {key} {value!r} is invalid (valid: a finite number >= 0)")
    return value


# ---------------------------------------------------------------------- reading
@dataclass
class _Merged:
    """One workload vertex made of one ET node per member rank."""

    name: str
    attrs: dict[str, Any]
    members: list[tuple[int, int]] = field(default_factory=list)  # (rank, node id)


def _pg_metadata(node: Any, n: int) -> dict[str, list[int]]:
    """PyTorch's process groups from a METADATA_NODE: ``inputs.values`` holds a JSON list of {pg_name, ranks}.

    Chakra's PyTorch converter stores ``str(values)``, a Python list around the JSON text;
    an empty ``ranks`` means every rank (as ASTRA-sim reads it).
    """
    import ast

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


def _load_groups(groups: str | os.PathLike[str] | Mapping[str, Sequence[int]] | None) -> dict[str, list[int]]:
    if groups is None:
        return {}
    if isinstance(groups, Mapping):
        data: Any = groups
        where = "process groups"
    else:
        where = f"communicator-group file '{os.fspath(groups)}'"
        data = _read_json(groups, where)
    if not isinstance(data, Mapping):
        raise HcsimError(f'{where} must map a group name to its ranks, e.g. {{"1": [0, 1]}}')
    out = {}
    for key, ranks in data.items():
        if not isinstance(ranks, list) or not all(isinstance(r, int) and not isinstance(r, bool) for r in ranks):
            raise HcsimError(f"{where}: group {key!r} must list integer ranks, got {ranks!r}")
        out[str(key)] = list(ranks)
    return out


def _load_rank_map(
    rank_map: str | os.PathLike[str] | Mapping[int, str] | Sequence[str] | None, n: int, xpus: Sequence[str]
) -> list[str]:
    """XPU of each ET rank: ``xpus`` in order, or a mapping (JSON file ``{"0": "xpu3", ...}`` or a list)."""
    if rank_map is None:
        if len(xpus) < n:
            raise HcsimError(f"the Chakra trace has {n} ranks but the platform has {len(xpus)} XPUs (valid: >= {n})")
        return list(xpus[:n])
    where = "rank map"
    data: Any = rank_map
    if isinstance(rank_map, (str, os.PathLike)):
        where = f"rank map '{os.fspath(rank_map)}'"
        data = _read_json(rank_map, where)
    if isinstance(data, Mapping):
        try:
            table = {int(k): v for k, v in data.items()}
        except (TypeError, ValueError):
            raise HcsimError(f"{where}: keys must be ranks 0..{n - 1}") from None
    elif isinstance(data, Sequence) and not isinstance(data, str):
        table = dict(enumerate(data))
    else:
        raise HcsimError(f"{where} must be a JSON object {{rank: XPU}} or a list of XPU names")
    known = set(xpus)
    out = []
    for r in range(n):
        x = table.get(r)
        if not isinstance(x, str):
            raise HcsimError(f"{where}: rank {r} has no XPU (valid: an XPU name for every rank 0..{n - 1})")
        if known and x not in known:
            raise HcsimError(f"{where}: rank {r} maps to '{x}', which is not an XPU of the platform")
        out.append(x)
    if len(set(out)) != n:
        raise HcsimError(f"{where}: two ranks map to the same XPU (valid: one XPU per rank)")
    return out


def read_chakra(
    prefix: str | os.PathLike[str],
    xpus: Sequence[str],
    *,
    xpu_flops: Mapping[str, float] | float | None = None,
    rank_map: str | os.PathLike[str] | Mapping[int, str] | Sequence[str] | None = None,
    groups: str | os.PathLike[str] | Mapping[str, Sequence[int]] | None = None,
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
    where_of = {r: f for r, f in enumerate(files)}
    xpu_of = _load_rank_map(rank_map, n, xpus)
    pg = _load_groups(groups)
    per_rank: list[list[Any]] = []
    graph_attrs: dict[str, Any] = {}
    for r, f in enumerate(files):
        meta, nodes = _read_messages(f)
        per_rank.append(nodes)
        if r == 0:
            graph_attrs = _extras(_attrs(meta), "hcsim_graph", f"Chakra file '{f}': GlobalMetadata")
    for nodes in per_rank:  # process groups first: a collective may use a group declared on another rank
        for node in nodes:
            if node.type == 1:  # METADATA_NODE
                pg.update({k: v for k, v in _pg_metadata(node, n).items() if k not in pg})
    for name, ranks in pg.items():
        bad = [r for r in ranks if not 0 <= r < n]
        if bad:
            raise HcsimError(f"process group '{name}' names rank {bad[0]}, but the trace has ranks 0..{n - 1}")
    pb = _pb()
    type_name = pb.NodeType.Name
    comm_name = pb.CollectiveCommType.Name

    merged: list[_Merged] = []
    vertex_of: dict[tuple[int, int], int] = {}  # (rank, node id) -> index in merged; -1 for skipped
    skipped: dict[str, int] = {}
    loop_deps: list[tuple[int, int, int]] = []  # (rank, from id, to id): hcsim's loop-carried edges
    sends: dict[tuple[int, int, int], list[tuple[int, Any]]] = {}  # (src, dst, tag) -> send nodes in order
    recvs: dict[tuple[int, int, int], list[tuple[int, Any]]] = {}
    colls: dict[tuple[str, int], list[tuple[int, Any]]] = {}  # (group, rank) -> collective nodes in order
    deps: dict[tuple[int, int], list[int]] = {}
    receives: set[tuple[int, int]] = set()  # RECV nodes: their deps do not gate the transfer, only what follows

    for rank, nodes in enumerate(per_rank):
        ids: set[int] = set()
        for node in nodes:
            where = f"Chakra file '{where_of[rank]}', node {node.id} ('{node.name}')"
            if node.id in ids:
                raise HcsimError(f"{where}: id {node.id} is a duplicate (node ids must be unique per rank)")
            ids.add(node.id)
            deps[(rank, node.id)] = list(node.data_deps) + [d for d in node.ctrl_deps if d not in node.data_deps]
            attrs = _attrs(node)
            for d in attrs.get("hcsim_loop_deps", []):
                loop_deps.append((rank, int(d), node.id))
            try:
                kind = type_name(node.type)
            except ValueError:
                raise HcsimError(
                    f"{where}: node type {node.type} is unknown (valid: the NodeType values of et_def.proto)"
                ) from None
            if kind in SKIPPED_TYPES or (kind == "COMP_NODE" and attrs.get("is_cpu_op") is True):
                label = "COMP_NODE (is_cpu_op)" if kind == "COMP_NODE" else kind
                skipped[label] = skipped.get(label, 0) + 1
                vertex_of[(rank, node.id)] = -1
            elif kind == "COMP_NODE":
                vertex_of[(rank, node.id)] = len(merged)
                vertex = _compute_attrs(node, attrs, xpu_of[rank], xpu_flops, where)
                merged.append(_Merged(node.name, dict(_extras(attrs, "hcsim_attrs", where), **vertex)))
                merged[-1].members.append((rank, node.id))
            elif kind in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
                send = kind == "COMM_SEND_NODE"
                peer = _number(attrs, "comm_dst" if send else "comm_src", where)
                size = _number(attrs, "comm_size", where)
                if peer is None or size is None:
                    need = "comm_dst" if send else "comm_src"
                    raise HcsimError(f"{where}: a {kind} needs {need} and comm_size attributes")
                peer = int(peer)
                own = _number(attrs, "comm_src" if send else "comm_dst", where)
                if own is not None and int(own) != rank:
                    role = "comm_src of a send" if send else "comm_dst of a receive"
                    raise HcsimError(f"{where}: {role} is {int(own)}, but the node is in rank {rank}'s file")
                if not 0 <= peer < n or peer == rank:
                    raise HcsimError(f"{where}: peer rank {peer} is invalid (valid: another rank of 0..{n - 1})")
                tag = int(_number(attrs, "comm_tag", where) or 0)
                key = (rank, peer, tag) if send else (peer, rank, tag)
                (sends if send else recvs).setdefault(key, []).append((rank, node))
            elif kind == "COMM_COLL_NODE":
                group = str(attrs.get("pg_name", ""))
                group = "" if group in WORLD else group
                if group and group not in pg:
                    raise HcsimError(
                        f"{where}: process group '{group}' is not declared (valid: '' or '0' for every rank, "
                        "a group of a METADATA_NODE, or one given with --comm-groups FILE)"
                    )
                members = list(range(n)) if not group else pg[group]
                if rank not in members:
                    raise HcsimError(f"{where}: rank {rank} is not a member of process group '{group}'")
                colls.setdefault((group, rank), []).append((rank, node))
            else:
                raise HcsimError(
                    f"{where}: node type {kind} is not supported (valid: COMP_NODE, COMM_SEND_NODE, "
                    f"COMM_RECV_NODE, COMM_COLL_NODE; skipped: {', '.join(SKIPPED_TYPES)})"
                )

    # p2p: the k-th send a->b with a tag meets the k-th receive on b from a with that tag
    for key in sorted(set(sends) | set(recvs)):
        s, r = sends.get(key, []), recvs.get(key, [])
        src, dst, tag = key
        if len(s) != len(r):
            raise HcsimError(
                f"Chakra trace '{os.fspath(prefix)}': {len(s)} sends from rank {src} to {dst} (tag {tag}) but "
                f"{len(r)} receives (every send needs its receive)"
            )
        for k, ((_, sn), (_, rn)) in enumerate(zip(s, r, strict=True)):
            sa, ra = _attrs(sn), _attrs(rn)
            if sa["comm_size"] != ra["comm_size"]:
                raise HcsimError(
                    f"Chakra trace: send {sn.id} on rank {src} has comm_size {sa['comm_size']} but its receive "
                    f"{rn.id} on rank {dst} has {ra['comm_size']} (they must agree)"
                )
            name = sn.name if sn.name and sn.name == rn.name else f"p2p:{src}->{dst}:tag{tag}#{k}"
            attrs = _extras(sa, "hcsim_attrs", f"Chakra send {sn.id} on rank {src}")
            attrs.update(type="comm", bytes=float(sa["comm_size"]), kind="p2p")
            attrs.update(scope=[xpu_of[src], xpu_of[dst]], algorithm=_algorithm("p2p", sa, algorithms))
            vertex_of[(src, sn.id)] = vertex_of[(dst, rn.id)] = len(merged)
            receives.add((dst, rn.id))
            merged.append(_Merged(name, attrs, [(src, sn.id), (dst, rn.id)]))

    # collectives: the k-th collective of a group on each member rank is one vertex
    for group in sorted({g for g, _ in colls}):
        members = list(range(n)) if not group else pg[group]
        counts = {r: len(colls.get((group, r), [])) for r in members}
        if len(set(counts.values())) != 1:
            r0 = min(counts, key=counts.get)
            r1 = max(counts, key=counts.get)
            raise HcsimError(
                f"Chakra trace '{os.fspath(prefix)}': process group '{group or '0'}' has {counts[r1]} collectives "
                f"on rank {r1} but {counts[r0]} on rank {r0} (every member must take part in each)"
            )
        for k in range(counts[members[0]]):
            instance = [colls[(group, r)][k] for r in members]
            first_rank, first = instance[0]
            fa = _attrs(first)
            where = f"Chakra file '{where_of[first_rank]}', node {first.id} ('{first.name}')"
            ctype, size = fa.get("comm_type"), _number(fa, "comm_size", where)
            if ctype is None or size is None:
                raise HcsimError(f"{where}: a COMM_COLL_NODE needs comm_type and comm_size attributes")
            try:
                cname = comm_name(int(ctype))
            except ValueError:
                cname = str(ctype)
            if cname not in COLLECTIVE_KINDS:
                raise HcsimError(f"{where}: collective {cname} is not supported (valid: {', '.join(COLLECTIVE_KINDS)})")
            for r, other in instance[1:]:
                oa = _attrs(other)
                if oa.get("comm_type") != ctype or oa.get("comm_size") != fa.get("comm_size"):
                    raise HcsimError(
                        f"Chakra trace: collective #{k} of group '{group or '0'}' is {cname} of {fa.get('comm_size')} "
                        f"bytes on rank {first_rank} but node {other.id} on rank {r} differs (type "
                        f"{oa.get('comm_type')}, size {oa.get('comm_size')})"
                    )
            kind = COLLECTIVE_KINDS[cname]
            names = {node.name for _, node in instance}
            name = first.name if len(names) == 1 and first.name else f"{kind}:{group or '0'}#{k}"
            attrs = _extras(fa, "hcsim_attrs", where)
            attrs.update(type="comm", bytes=float(size), kind=kind)
            attrs.update(scope=[xpu_of[r] for r in members], algorithm=_algorithm(kind, fa, algorithms))
            idx = len(merged)
            merged.append(_Merged(name, attrs, [(r, node.id) for r, node in instance]))
            for r, node in instance:
                vertex_of[(r, node.id)] = idx

    w = _assemble(prefix, merged, vertex_of, receives, deps, loop_deps, skipped, xpu_of, where_of)
    w.graph.update({k: v for k, v in graph_attrs.items() if k not in ("ranks", "chakra_skipped")})
    return w


def _compute_attrs(
    node: Any, attrs: dict[str, Any], xpu: str, xpu_flops: Mapping[str, float] | float | None, where: str
) -> dict[str, Any]:
    num_ops = _number(attrs, "num_ops", where)
    mem = _number(attrs, "tensor_size", where) if num_ops is not None else None
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
    footprint = _number(attrs, "hcsim_footprint", where)
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


def _assemble(
    prefix: str | os.PathLike[str],
    merged: list[_Merged],
    vertex_of: dict[tuple[int, int], int],
    receives: set[tuple[int, int]],
    deps: dict[tuple[int, int], list[int]],
    loop_deps: list[tuple[int, int, int]],
    skipped: dict[str, int],
    xpu_of: list[str],
    where_of: dict[int, str],
) -> Workload:
    """The workload graph: names made unique, edges joined through merged, receive and skipped nodes.

    A transfer starts when its SEND's dependencies are met (the sender's side, as in
    ASTRA-sim, where a receive is only a completion point); what follows a RECV waits for
    the transfer and for the RECV's own dependencies, which the RECV passes through.
    """
    import networkx as nx

    uses: dict[str, int] = {}
    for m in merged:
        uses[m.name] = uses.get(m.name, 0) + 1
    names = []
    for m in merged:
        if m.name and uses[m.name] == 1:
            names.append(m.name)
        else:
            rank, nid = m.members[0]
            names.append(f"{m.name or 'node'}@r{rank}#{nid}")
    if len(set(names)) != len(names):  # a generated name met a traced one: fall back to positions
        names = [f"{n}~{i}" for i, n in enumerate(names)]

    memo: dict[tuple[int, int], frozenset[int]] = {}

    def sources(rank: int, nid: int) -> frozenset[int]:
        """The vertices a dependency on (rank, nid) stands for: itself, or through a skipped node or a
        receive, the vertices its own dependencies stand for (iterative: chains may be long)."""
        start = (rank, nid)
        stack = [start]
        while stack:
            key = stack[-1]
            if key in memo:
                stack.pop()
                continue
            if key not in vertex_of:
                raise HcsimError(
                    f"Chakra file '{where_of[key[0]]}': a node depends on node {key[1]}, which does not exist"
                )
            v = vertex_of[key]
            if v >= 0 and key not in receives:
                memo[key] = frozenset((v,))
                stack.pop()
                continue
            pending = [(key[0], d) for d in deps[key] if (key[0], d) not in memo]
            fresh = [k for k in pending if k not in stack]
            if fresh:
                stack.extend(fresh)
                continue
            out = {v} if v >= 0 else set()
            for d in deps[key]:  # a dependency still on the stack is a cycle through skipped nodes: it adds nothing
                out |= memo.get((key[0], d), frozenset())
            memo[key] = frozenset(out)
            stack.pop()
        return memo[start]

    edges: set[tuple[int, int]] = set()
    for (rank, nid), v in vertex_of.items():
        if v < 0 or (rank, nid) in receives:
            continue
        for d in deps[(rank, nid)]:
            for u in sources(rank, d):
                if u == v:
                    raise HcsimError(
                        f"Chakra file '{where_of[rank]}': node {nid} depends on itself (through a send/receive "
                        "pair or a collective)"
                    )
                edges.add((u, v))
    loops = set()
    for rank, d, nid in loop_deps:
        for u in sources(rank, d):
            loops.add((u, vertex_of[(rank, nid)]))
    w = Workload(name=os.path.basename(os.fspath(prefix)), ranks=list(xpu_of))
    w.graph.update(samples_per_iteration=1, batches_per_iteration=1, source="chakra")
    w.graph["chakra_skipped"] = dict(sorted(skipped.items()))
    nodes = []
    has_pred = {v for _, v in edges}
    for i, m in enumerate(merged):
        nodes.append((names[i], dict(m.attrs, is_start=i not in has_pred)))
    w.add_nodes_from(nodes)
    w.add_edges_from((names[u], names[v], {"skip_first_iteration": False}) for u, v in sorted(edges))
    w.add_edges_from(
        (names[u], names[v], {"skip_first_iteration": True}) for u, v in sorted(loops) if (u, v) not in edges
    )
    if w.number_of_nodes() == 0:
        raise HcsimError(f"Chakra trace '{os.fspath(prefix)}' has no node hcsim can run (all were skipped)")
    same = nx.DiGraph((u, v) for u, v, d in w.edges(data=True) if not d["skip_first_iteration"])
    if not nx.is_directed_acyclic_graph(same):
        cycle = nx.find_cycle(same)
        raise HcsimError(
            f"Chakra trace '{os.fspath(prefix)}' deadlocks: dependency cycle through '{cycle[0][0]}' "
            "(sends, receives and collectives ordered differently on two ranks?)"
        )
    for name, d in w.nodes(data=True):
        Workload._check_vertex(name, d)
    return w


# ---------------------------------------------------------------------- writing
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
    from google.protobuf.internal.encoder import _VarintBytes  # protobuf's own varint codec

    from hcsim.files import atomic_path

    pb = _pb()
    w = workload
    if w.number_of_nodes() == 0:
        raise HcsimError("workload is empty: nothing to write as a Chakra trace")
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise HcsimError(f"Chakra output directory '{directory}' does not exist")
    name = name or str(w.graph.get("name") or "workload")
    if not name or "/" in name or os.sep in name:
        raise HcsimError(f"Chakra trace name {name!r} is invalid (valid: a file name without '/')")

    def on(v: str) -> list[str]:
        d = w.nodes[v]
        return [d["location"]] if d["type"] == "compute" else list(d["scope"])

    ranks = [str(r) for r in w.graph.get("ranks", [])]
    used = []
    for v in w.nodes:
        for x in on(v):
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
        if d["type"] == "comm" and d["kind"] == "p2p" and d["scope"][0] not in on(u):
            raise HcsimError(
                f"edge '{u}' -> '{v}': the transfer's sender {d['scope'][0]} takes no part in '{u}' (in Chakra a "
                "send starts on its own rank's dependencies)"
            )
        if not set(on(u)) & set(on(v)):
            raise HcsimError(
                f"edge '{u}' -> '{v}' crosses ranks ({', '.join(on(u))} -> {', '.join(on(v))}) with no rank taking "
                "part in both (Chakra dependencies stay on one rank)"
            )
    order = _write_order(w)
    extra = {
        v: _json_extras({k: x for k, x in d.items() if k not in CORE}, f"vertex '{v}'") for v, d in w.nodes(data=True)
    }
    graph_json = _json_extras({k: x for k, x in w.graph.items() if k not in ("ranks", "chakra_skipped")}, "graph")
    ids: list[dict[str, int]] = [{} for _ in ranks]
    for v in order:
        for x in on(v):
            r = rank_of[x]
            ids[r][v] = len(ids[r]) + (1 if groups else 0)  # id 0 is the METADATA_NODE when there are groups
    files: list[bytes] = []
    comm_type = {kind: pb.CollectiveCommType.Value(c) for c, kind in COLLECTIVE_KINDS.items()}
    for r, x in enumerate(ranks):
        meta = pb.GlobalMetadata(version=SCHEMA_VERSION)
        if graph_json:
            meta.attr.add(name="hcsim_graph", string_val=graph_json)
        out = [meta.SerializeToString()]
        if groups:
            table = [{"pg_name": g, "ranks": [rank_of[s] for s in scope]} for scope, g in groups.items()]
            md = pb.Node(id=0, name="process_groups", type=pb.METADATA_NODE)
            md.inputs.values = str([json.dumps(table)])
            out.append(md.SerializeToString())
        for v in order:
            if v not in ids[r]:
                continue
            d = w.nodes[v]
            node = pb.Node(id=ids[r][v], name=v)
            receiving = d["type"] == "comm" and d["kind"] == "p2p" and x == d["scope"][1]
            if not receiving:  # a RECV is posted at once: the transfer waits for the sender's side only
                node.data_deps.extend(
                    ids[r][u]
                    for u, _, e in w.in_edges(v, data=True)
                    if not e.get("skip_first_iteration") and u in ids[r]
                )
            loops = [ids[r][u] for u, _, e in w.in_edges(v, data=True) if e.get("skip_first_iteration") and u in ids[r]]
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
                attr(name="comm_size", int64_val=int(round(d["bytes"])))
                if tuple(d["scope"]) in groups:
                    attr(name="pg_name", string_val=groups[tuple(d["scope"])])
                attr(name="hcsim_algorithm", string_val=str(d["algorithm"]))
            if loops:
                attr(name="hcsim_loop_deps", uint64_list=pb.Uint64List(values=loops))
            if extra[v]:
                attr(name="hcsim_attrs", string_val=extra[v])
            out.append(node.SerializeToString())
        files.append(b"".join(_VarintBytes(len(m)) + m for m in out))
    paths = []
    for r, data in enumerate(files):
        path = os.path.join(directory, f"{name}.{r}.et")
        with atomic_path(path, ".et") as tmp, open(tmp, "wb") as f:
            f.write(data)
        paths.append(path)
    return paths


#: vertex attributes with a Chakra field (or an hcsim_* attribute of their own); the rest go to hcsim_attrs
CORE = frozenset(
    ("type", "flops", "location", "precision", "mem_bytes", "footprint", "data", "is_start", "bytes", "kind",
     "algorithm", "scope")
)  # fmt: skip


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
    import networkx as nx

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


# ---------------------------------------------------------------------- platform rates
def xpu_rates_from_platform(path: str | os.PathLike[str]) -> dict[str, float]:
    """fp32 FLOP/s of every XPU host of a compiled platform XML (the ``fp32_flops`` property the compiler writes)."""
    from lxml import etree

    rates: dict[str, float] = {}
    try:
        for _, el in etree.iterparse(os.fspath(path), events=("end",), tag="host", no_network=True):
            props = {p.get("id"): p.get("value") for p in el.iter("prop")}
            if props.get("kind") == "xpu":
                speed = el.get("speed", "0").rstrip("f")
                rates[el.get("id")] = float(props.get("fp32_flops") or speed)
            el.clear()
    except (etree.XMLSyntaxError, OSError, ValueError) as exc:
        raise HcsimError(f"platform file '{os.fspath(path)}' cannot be read for XPU rates: {exc}") from None
    return rates
