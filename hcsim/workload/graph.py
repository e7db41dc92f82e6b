"""The workload graph (paper Table 3): a directed graph of operators that may cycle.

A :class:`Workload` *is* a :class:`networkx.DiGraph`. Vertices are

* **compute**: ``flops``, ``precision`` ("fp16"/"fp32"), ``mem_bytes`` (bytes the
  operator reads and writes), ``footprint`` (bytes it keeps resident; defaults to
  ``mem_bytes``; decides what fits in local memory), ``data`` (the data block it works
  on, default its name: vertices on one block share its placement), ``location`` (an
  XPU), ``is_start``;
* **comm**: ``bytes``, ``kind`` (p2p, allreduce, reduce_scatter, allgather, broadcast,
  reduce, alltoall), ``algorithm`` (see :data:`ALGORITHMS`), ``scope`` (``[src, dst]``
  for p2p, the ordered rank list otherwise; ranks are XPU names), ``is_start``.

An edge u -> v means v's k-th execution needs u's k-th. An edge with
``skip_first_iteration=True`` is loop-carried: v's k-th execution needs u's (k-1)-th,
and the first execution ignores it (the backward pass of step k feeds the forward
pass of step k+1). Start vertices enter the execution container at time 0.

Graphs save to and load from JSON (NetworkX node-link format), and to and from Chakra
execution traces (:meth:`Workload.to_chakra`, :mod:`hcsim.workload.chakra`).
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


def _nonneg(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or math.isinf(value):
        raise HcsimError(f"{what} must be a finite number >= 0, got {value!r}")
    return float(value)


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

    # ------------------------------------------------------------------ checks
    def _check_new(self, name: object) -> None:
        if not isinstance(name, str) or not name:
            raise HcsimError(f"vertex name {name!r} is invalid (valid: a non-empty string)")
        if name in self:
            raise HcsimError(f"vertex '{name}' is a duplicate (vertex names must be unique)")

    @staticmethod
    def _check_vertex(name: str, d: dict[str, Any]) -> None:
        kind = d.get("type")
        if kind == "compute":
            _nonneg(d.get("flops"), f"compute vertex '{name}': flops")
            _nonneg(d.get("mem_bytes", 0.0), f"compute vertex '{name}': mem_bytes")
            _nonneg(d.get("footprint", 0.0), f"compute vertex '{name}': footprint")
            if d.get("precision") not in PRECISIONS:
                raise HcsimError(
                    f"compute vertex '{name}': precision {d.get('precision')!r} is unknown (valid: fp16, fp32)"
                )
            if not isinstance(d.get("location"), str):
                raise HcsimError(f"compute vertex '{name}' has no location (valid: the name of an XPU)")
        elif kind == "comm":
            _nonneg(d.get("bytes"), f"communication vertex '{name}': bytes")
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
        for name, d in nodes.items():
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
        from hcsim.outputs import write_json

        write_json(path, nx.node_link_data(self, edges="edges"))

    def to_chakra(self, directory: str | os.PathLike[str], name: str | None = None) -> list[str]:
        """Write per-rank Chakra ET files ``DIRECTORY/NAME.RANK.et``; see :func:`hcsim.workload.chakra.write_chakra`."""
        from hcsim.workload.chakra import write_chakra

        return write_chakra(self, directory, name)

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> Workload:
        """Load a graph saved by :meth:`to_json` (or written by hand in the same format)."""
        try:
            with open(path) as f:
                data = json.load(f)
        except FileNotFoundError:
            raise HcsimError(f"workload file '{path}' does not exist") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise HcsimError(f"workload file '{path}' is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or "nodes" not in data:
            raise HcsimError(f"workload file '{path}' is not a node-link graph (valid: a file from Workload.to_json)")
        data = dict(data, directed=True, multigraph=False)
        try:
            g = nx.node_link_graph(data, directed=True, multigraph=False, edges="edges" if "edges" in data else "links")
        except Exception as exc:  # noqa: BLE001 - malformed structure
            raise HcsimError(f"workload file '{path}' is malformed: {exc}") from None
        w = cls()
        w.graph.update(g.graph)
        w.add_nodes_from(g.nodes(data=True))
        w.add_edges_from(g.edges(data=True))
        for _, _, d in w.edges(data=True):
            d["skip_first_iteration"] = bool(d.get("skip_first_iteration", False))
        for name, d in w.nodes(data=True):
            Workload._check_vertex(name, d)
        return w
