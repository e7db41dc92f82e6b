"""The workload graph (paper Table 3): a directed graph of operators that may cycle.

A :class:`Workload` *is* a :class:`networkx.DiGraph`. Vertices are **compute**
(``flops``, ``precision``, ``mem_bytes``, ``footprint``, ``data``: the data block it
works on, ``location``: an XPU, ``is_start``) or **comm** (``bytes``, ``kind``: p2p,
allreduce, reduce_scatter, allgather, broadcast, reduce or alltoall, ``algorithm``: see
:data:`ALGORITHMS`, ``scope``: the ranks, ``is_start``).

Invariant: an edge u -> v means v's k-th execution needs u's k-th; an edge with
``skip_first_iteration=True`` is loop-carried (v's k-th needs u's (k-1)-th, and the first
execution ignores it), which is how the backward pass of step k feeds the forward pass of
step k+1. Start vertices enter the execution container at time 0.

Graphs save to and load from JSON (NetworkX node-link format); Chakra execution traces
and AICB files are read and written by functions of :mod:`hcsim.formats`.

Guide: docs/workloads-and-engine.md, "Workloads" and "Limits".
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping
from typing import Any

import networkx as nx

from hcsim.collectives.registry import KINDS, algorithm, names
from hcsim.errors import HcsimError
from hcsim.files import check_input_file
from hcsim.outputs import write_json

__all__ = ["Workload", "COMM_KINDS", "ALGORITHMS", "PRECISIONS"]

PRECISIONS = ("fp16", "fp32")


class _Algorithms(Mapping[str, tuple[str, ...]]):
    """Kind -> the algorithms registered for it (the first is the default): a view of
    :mod:`hcsim.collectives.registry`, which also takes ``module:function`` plug-ins and
    MSCCL-IR ``.xml`` files."""

    def __getitem__(self, kind: str) -> tuple[str, ...]:
        if kind not in KINDS:
            raise KeyError(kind)
        return names(kind)

    def __iter__(self) -> Iterator[str]:
        return iter(KINDS)

    def __len__(self) -> int:
        return len(KINDS)


#: algorithms each communication kind accepts (the first is the default)
ALGORITHMS: Mapping[str, tuple[str, ...]] = _Algorithms()
COMM_KINDS = KINDS


MAX_BYTES = 2**50
"""Largest size a vertex may move or hold (``bytes``, ``mem_bytes``, ``footprint``): 1 PiB. A
collective splits or multiplies a vertex's bytes into flows by at most the number of ranks, and
SimGrid takes a flow's size as a 64-bit integer (2**64 bytes and more used to abort the run)."""


def _nonneg(value: object, what: str, limit: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise HcsimError(f"{what} must be a finite number >= 0, got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond any float
        number = math.inf
    if not number >= 0 or math.isinf(number) or number > limit:
        bound = "" if math.isinf(limit) else f" and at most {limit:g} (1 PiB)"
        shown = f"{value!r}" if number < 1e30 or isinstance(value, float) else f"{number:g}"
        raise HcsimError(f"{what} must be a finite number >= 0{bound}, got {shown}")
    return number


def _flag(d: dict[str, Any], key: str, what: str) -> None:
    value = d.get(key, False)
    if not isinstance(value, bool):
        raise HcsimError(f"{what}: {key} must be true or false, got {value!r}")


_clear_cache = getattr(nx, "_clear_cache", lambda graph: None)  # NetworkX >= 3.3 caches backend conversions per graph


class Workload(nx.DiGraph):
    """An AI task as compute and communication vertices; cycles allowed."""

    def add_compute(
        self,
        name: str,
        flops: float,
        location: str,
        *,
        precision: str = "fp32",
        mem_bytes: float = 0.0,
        footprint: float | None = None,
        is_start: bool = False,
        **attrs: Any,
    ) -> None:
        """Add an operator of ``flops`` that runs on XPU ``location``."""
        self._check_new(name)
        self.add_node(
            name,
            type="compute",
            flops=flops,
            location=location,
            precision=precision,
            mem_bytes=mem_bytes,
            footprint=mem_bytes if footprint is None else footprint,
            is_start=is_start,
            **attrs,
        )
        self._check_vertex(name, self.nodes[name])

    def add_comm(
        self,
        name: str,
        nbytes: float,
        kind: str,
        scope: list[str],
        *,
        algorithm: str | None = None,
        is_start: bool = False,
        **attrs: Any,
    ) -> None:
        """Add a communication of ``nbytes`` (per rank for collectives) among ``scope``."""
        self._check_new(name)
        if algorithm is None and kind in ALGORITHMS:
            algorithm = ALGORITHMS[kind][0]
        self.add_node(
            name,
            type="comm",
            bytes=nbytes,
            kind=kind,
            algorithm=algorithm,
            scope=list(scope),
            is_start=is_start,
            **attrs,
        )
        self._check_vertex(name, self.nodes[name])

    def add_dependency(self, u: str, v: str, *, skip_first_iteration: bool = False) -> None:
        """v waits for u (in the same iteration, or in the previous one if skip_first_iteration)."""
        for end in (u, v):
            if end not in self:
                raise HcsimError(f"dependency '{u}' -> '{v}': vertex '{end}' does not exist")
        self.add_edge(u, v, skip_first_iteration=bool(skip_first_iteration))

    def _add_built(self, nodes: list[tuple[str, dict[str, Any]]], edges: list[tuple[str, str, dict[str, Any]]]) -> None:
        """Store vertices and edges made by a builder straight into NetworkX's own dicts.

        The same graph, in the same order, as ``add_nodes_from(nodes)`` then
        ``add_edges_from(edges)``, but each attribute dict is kept as given: NetworkX copies a
        vertex's dict twice and an edge's once, which was most of the time of building a folded
        LLaMA2-13B graph (38k vertices, 59k edges). So the caller hands its dicts over (and no
        longer uses them) and guarantees what NetworkX would otherwise settle: the vertex names
        are new and distinct (the builders check that, with their own message), and every edge
        is new, distinct and joins two of them. It checks nothing else: the caller runs
        :meth:`_check_vertex` as before.
        """
        node, succ, pred = self._node, self._succ, self._pred
        for name, attrs in nodes:
            node[name] = attrs
            succ[name] = {}
            pred[name] = {}
        for u, v, attrs in edges:
            succ[u][v] = attrs
            pred[v][u] = attrs
        _clear_cache(self)

    # ------------------------------------------------------------------ checks
    def _check_new(self, name: object) -> None:
        if not isinstance(name, str) or not name:
            raise HcsimError(f"vertex name {name!r} is invalid (valid: a non-empty string)")
        if name in self:
            raise HcsimError(f"vertex '{name}' is a duplicate (vertex names must be unique)")

    @staticmethod
    def _check_vertex(name: str, d: dict[str, Any]) -> None:
        kind = d.get("type")
        if kind == "compute":  # validate() memoizes this branch on what it reads: keep its key in step
            _nonneg(d.get("flops"), f"compute vertex '{name}': flops")
            _nonneg(d.get("mem_bytes", 0.0), f"compute vertex '{name}': mem_bytes", MAX_BYTES)
            if "seconds" in d:
                _nonneg(d["seconds"], f"compute vertex '{name}': seconds")
            _nonneg(d.get("footprint", 0.0), f"compute vertex '{name}': footprint", MAX_BYTES)
            _flag(d, "is_start", f"compute vertex '{name}'")
            if d.get("precision") not in PRECISIONS:
                raise HcsimError(
                    f"compute vertex '{name}': precision {d.get('precision')!r} is unknown (valid: fp16, fp32)"
                )
            if not isinstance(d.get("location"), str):
                raise HcsimError(f"compute vertex '{name}' has no location (valid: the name of an XPU)")
        elif kind == "comm":
            _nonneg(d.get("bytes"), f"communication vertex '{name}': bytes", MAX_BYTES)
            _flag(d, "is_start", f"communication vertex '{name}'")
            ck = d.get("kind")
            if ck not in ALGORITHMS:
                raise HcsimError(
                    f"communication vertex '{name}': kind {ck!r} is unknown (valid: {', '.join(COMM_KINDS)})"
                )
            if d.get("algorithm") not in ALGORITHMS[ck]:
                try:  # a plug-in (module:function) or an MSCCL-IR file: it must load
                    if not isinstance(d.get("algorithm"), str):
                        raise HcsimError(f"algorithm {d.get('algorithm')!r} is unknown for {ck}")
                    algorithm(ck, d["algorithm"])
                except HcsimError as e:
                    raise HcsimError(f"communication vertex '{name}': {e}") from None
            scope = d.get("scope")
            if not isinstance(scope, list) or not all(isinstance(r, str) for r in scope):
                raise HcsimError(f"communication vertex '{name}': scope must be a list of XPU names")
            if ck == "p2p" and len(scope) != 2:
                raise HcsimError(f"communication vertex '{name}': p2p scope must be [src, dst], got {scope!r}")
            if ck != "p2p" and len(scope) < 2:
                raise HcsimError(f"communication vertex '{name}': {ck} needs at least 2 ranks, got {scope!r}")
            group = d.get("group")
            if group is not None and (
                isinstance(group, bool) or not isinstance(group, int) or group < len(scope) or ck == "p2p"
            ):
                raise HcsimError(
                    f"communication vertex '{name}': group {group!r} is invalid (valid: an integer >= the "
                    f"{len(scope)} ranks of its scope, the ranks it stands for in a folded run; not for p2p)"
                )
            seen = set()
            for r in scope:
                if r in seen:
                    raise HcsimError(f"communication vertex '{name}': rank '{r}' is repeated in its scope")
                seen.add(r)
        else:
            raise HcsimError(f"vertex '{name}': type {kind!r} is unknown (valid: compute, comm)")

    def validate(self, xpus: set[str] | None = None, hosts: set[str] | None = None) -> Workload:
        """Check every vertex and edge; with ``xpus`` also that locations and ranks are XPUs."""
        if self.number_of_nodes() == 0:
            raise HcsimError("workload is empty (add compute and communication vertices)")
        nodes, preds = self._node, self._pred  # NetworkX's own dicts: views cost too much on 100k-vertex graphs
        check = self._check_vertex
        starts = []
        passed: set[tuple] = set()  # compute vertices already checked, by the identity of what the check reads
        for name, d in nodes.items():
            if d.get("type") == "compute":
                # A compute vertex's check reads these six values and whether its location is a string; every
                # rank's copy of a layer holds the very same value objects (38k vertices, 1.2k distinct at 1024
                # XPUs), so one check covers them all. Keys are object ids: all alive (in the graph) meanwhile.
                key = (
                    id(d.get("flops")),
                    id(d.get("mem_bytes", 0.0)),
                    id(d.get("footprint", 0.0)),
                    id(d.get("is_start", False)),
                    id(d.get("precision")),
                    id(d.get("seconds")),
                    isinstance(d.get("location"), str),
                )
                if key not in passed:
                    check(name, d)
                    passed.add(key)
            else:
                check(name, d)
            if d.get("is_start"):
                starts.append(name)
        if xpus is not None:
            self.check_placement(xpus, hosts)
        if not starts:
            raise HcsimError("workload has no start vertex (mark at least one with is_start=True)")
        for n, d in nodes.items():
            ins = preds[n]
            if d.get("is_start"):
                required = [u for u, e in ins.items() if not e.get("skip_first_iteration")]
                if required:
                    raise HcsimError(
                        f"start vertex '{n}' depends on '{required[0]}' in the same iteration "
                        "(a start vertex may only have skip_first_iteration dependencies)"
                    )
            elif not ins:
                raise HcsimError(f"vertex '{n}' has no dependency and is not a start vertex (it would never run)")
        return self

    def check_placement(self, xpus: set[str], hosts: set[str] | None = None) -> None:
        """Check that every location and rank is one of ``xpus`` (``hosts``: the platform's, for the message)."""
        for name, d in self._node.items():
            for p in [d["location"]] if d["type"] == "compute" else d["scope"]:
                if p not in xpus:
                    what = "a host that is not an XPU" if hosts and p in hosts else "an unknown host"
                    raise HcsimError(f"vertex '{name}' is placed on '{p}', {what} (valid: an XPU of the platform)")

    # ------------------------------------------------------------------ JSON
    def to_json(self, path: str | os.PathLike[str]) -> None:
        """Save as NetworkX node-link JSON."""
        write_json(path, nx.node_link_data(self, edges="edges"))

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> Workload:
        """Load a graph saved by :meth:`to_json` (or written by hand in the same format).

        Vertex attributes left out take :meth:`add_compute` / :meth:`add_comm`'s defaults
        (``precision`` fp32, ``mem_bytes`` 0, ``footprint`` = ``mem_bytes``, the kind's
        default ``algorithm``, ``is_start`` false). Every shape problem is one line naming it.
        """
        path = check_input_file(path, "workload file", "a JSON file from Workload.to_json")
        where = f"workload file '{path}'"
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise HcsimError(f"{where} is not valid JSON: {exc}") from None
        except RecursionError:
            raise HcsimError(
                f"{where} is nested too deeply to be a workload graph (valid: a node-link graph)"
            ) from None
        if not isinstance(data, dict) or "nodes" not in data:
            raise HcsimError(f"{where} is not a node-link graph (valid: a file from Workload.to_json)")
        w = cls()
        graph = data.get("graph", {})
        if not isinstance(graph, dict):
            raise HcsimError(f"{where}: 'graph' must be an object of graph attributes, got {type(graph).__name__}")
        w.graph.update(graph)
        nodes = data["nodes"]
        if not isinstance(nodes, list):
            raise HcsimError(f"{where}: 'nodes' must be a list of vertex objects, got {type(nodes).__name__}")
        for i, node in enumerate(nodes):
            if not isinstance(node, dict):
                raise HcsimError(f'{where}: node {i} is {node!r}, not an object (valid: {{"id": NAME, ...}})')
            if "id" not in node:
                raise HcsimError(f"{where}: node {i} has no 'id' (valid: a vertex name, unique in the graph)")
            attrs = dict(node)
            name = attrs.pop("id")
            w._check_new(name)
            w.add_node(name, **_defaults(attrs))
        key = "edges" if "edges" in data else "links"
        edges = data.get(key, [])
        if not isinstance(edges, list):
            raise HcsimError(f"{where}: '{key}' must be a list of dependency objects, got {type(edges).__name__}")
        for i, edge in enumerate(edges):
            if not isinstance(edge, dict) or "source" not in edge or "target" not in edge:
                raise HcsimError(
                    f"{where}: edge {i} is {edge!r}, not an object with 'source' and 'target' "
                    '(valid: {"source": U, "target": V, "skip_first_iteration": false})'
                )
            attrs = dict(edge)
            u, v = attrs.pop("source"), attrs.pop("target")
            for end in (u, v):
                if not isinstance(end, str) or end not in w:
                    raise HcsimError(f"{where}: edge '{u}' -> '{v}': {end!r} is not a vertex of the graph")
            _flag(attrs, "skip_first_iteration", f"{where}: edge '{u}' -> '{v}'")
            attrs["skip_first_iteration"] = bool(attrs.get("skip_first_iteration", False))
            w.add_edge(u, v, **attrs)
        for name, d in w.nodes(data=True):
            Workload._check_vertex(name, d)
        return w


def _defaults(attrs: dict[str, Any]) -> dict[str, Any]:
    """A vertex's attributes from JSON with the defaults :meth:`Workload.add_compute` / ``add_comm`` give."""
    out = dict(attrs)
    if out.get("type") == "compute":
        out.setdefault("precision", "fp32")
        out.setdefault("mem_bytes", 0.0)
        out.setdefault("footprint", out["mem_bytes"])
        out.setdefault("is_start", False)
    elif out.get("type") == "comm":
        kind = out.get("kind")
        if out.get("algorithm") is None and isinstance(kind, str) and kind in ALGORITHMS:
            out["algorithm"] = ALGORITHMS[kind][0]
        out.setdefault("is_start", False)
    return out
