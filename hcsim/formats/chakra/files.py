"""Chakra rank files: finding ``NAME.RANK.et``, their varint framing, the schema, node attributes.

A rank file is a sequence of protobuf messages, each preceded by its length as a varint
(protobuf's own codec): one ``GlobalMetadata``, then ``Node`` messages of the schema
:file:`et_def.proto` beside this module (compiled into :mod:`.et_def_pb2`, loaded by
:func:`schema` only when a trace is read or written, so protobuf stays optional).

Invariant: every problem with a file (missing rank, truncated message, bad attribute) is
a one-line :class:`~hcsim.errors.HcsimError` naming the file. See docs/formats.md.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from hcsim.errors import HcsimError

__all__ = [
    "COLLECTIVE_KINDS",
    "SCHEMA_VERSION",
    "chakra_files",
    "frame",
    "is_chakra",
    "json_attr",
    "node_attrs",
    "number_attr",
    "read_messages",
    "schema",
]

#: Chakra's CollectiveCommType -> hcsim's collective kind (the types hcsim cannot run are errors)
COLLECTIVE_KINDS = {
    "ALL_REDUCE": "allreduce",
    "REDUCE": "reduce",
    "ALL_GATHER": "allgather",
    "BROADCAST": "broadcast",
    "ALL_TO_ALL": "alltoall",
    "REDUCE_SCATTER": "reduce_scatter",
}
SCHEMA_VERSION = "0.0.4"

_RANK_FILE = re.compile(r"^(?P<name>.+)\.(?P<rank>\d+)\.et$")


def schema() -> Any:
    """The generated schema module (imports protobuf: only when a trace is read or written)."""
    try:
        import hcsim.formats.chakra.et_def_pb2 as et_def_pb2
    except ImportError as exc:  # protobuf missing or too old for the generated code
        raise HcsimError(
            f"reading Chakra traces needs protobuf >= 7.35 ({exc}); pip install 'protobuf>=7.35.1,<8'"
        ) from None
    return et_def_pb2


# ---------------------------------------------------------------------- files
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


# ---------------------------------------------------------------------- framing
def read_messages(path: str) -> tuple[Any, list[Any]]:
    """The GlobalMetadata and Nodes of one rank file, parsed by protobuf."""
    from google.protobuf.internal.decoder import _DecodeVarint  # protobuf's own varint codec
    from google.protobuf.message import DecodeError

    pb = schema()
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


def frame(messages: list[bytes]) -> bytes:
    """Serialized messages as one rank file: each preceded by its length as a varint."""
    from google.protobuf.internal.encoder import _VarintBytes  # protobuf's own varint codec

    return b"".join(_VarintBytes(len(m)) + m for m in messages)


# ---------------------------------------------------------------------- attributes
def node_attrs(node: Any) -> dict[str, Any]:
    """A node's attributes by name, each as its Python value (whatever oneof field holds it)."""
    out: dict[str, Any] = {}
    for a in node.attr:
        kind = a.WhichOneof("value")
        if kind is None:
            continue
        value = getattr(a, kind)
        out[a.name] = list(value.values) if kind.endswith("_list") else value
    return out


def json_attr(attrs: dict[str, Any], key: str, where: str) -> dict[str, Any]:
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


def number_attr(attrs: dict[str, Any], key: str, where: str) -> float | None:
    """A numeric attribute, None when absent; a negative, infinite or non-numeric value is an error."""
    value = attrs.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or math.isinf(value):
        raise HcsimError(f"{where}: attribute {key} {value!r} is invalid (valid: a finite number >= 0)")
    return value
