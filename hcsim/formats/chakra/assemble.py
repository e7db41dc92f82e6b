"""Assembling a read Chakra trace: merged vertices joined by the dependencies of their ET nodes.

A dependency on a node stands for the vertex that node became; through a skipped node
(METADATA, INVALID, host compute) or a RECV it stands for what *their* dependencies stand
for. A transfer starts when its SEND's dependencies are met (the sender's side, as in
ASTRA-sim); what follows a RECV waits for the transfer and for the RECV's own dependencies.

Invariant: the assembled workload has no same-iteration cycle (a trace that would deadlock
is a one-line error) and every vertex passes :meth:`Workload._check_vertex`. See
docs/formats.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from hcsim.errors import HcsimError
from hcsim.workload.graph import Workload

__all__ = ["Merged", "assemble"]


@dataclass
class Merged:
    """One workload vertex made of one ET node per member rank."""

    name: str
    attrs: dict[str, Any]
    members: list[tuple[int, int]] = field(default_factory=list)  # (rank, node id)


def assemble(
    prefix: str | os.PathLike[str],
    merged: list[Merged],
    vertex_of: dict[tuple[int, int], int],
    receives: set[tuple[int, int]],
    deps: dict[tuple[int, int], list[int]],
    loop_deps: list[tuple[int, int, int]],
    skipped: dict[str, int],
    xpu_of: list[str],
    where_of: Sequence[str],
) -> Workload:
    """The workload graph of the merged vertices: names made unique, edges joined through merged, receive and
    skipped nodes (``vertex_of`` -1), loop-carried edges from ``loop_deps``; ``where_of`` names each rank's file."""
    names = _unique_names(merged)
    sources = _Sources(vertex_of, receives, deps, where_of)
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
    _check(w, prefix)
    return w


def _unique_names(merged: list[Merged]) -> list[str]:
    """Vertex names: the ET node's name where no other vertex has it, else ``NAME@rRANK#ID``."""
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
    return names


class _Sources:
    """The vertices a dependency on (rank, node id) stands for: its own vertex, or, through a skipped node or a
    receive, the vertices its own dependencies stand for (iterative and memoized: chains may be long)."""

    def __init__(
        self,
        vertex_of: dict[tuple[int, int], int],
        receives: set[tuple[int, int]],
        deps: dict[tuple[int, int], list[int]],
        where_of: Sequence[str],
    ) -> None:
        self.vertex_of, self.receives, self.deps, self.where_of = vertex_of, receives, deps, where_of
        self.memo: dict[tuple[int, int], frozenset[int]] = {}

    def __call__(self, rank: int, nid: int) -> frozenset[int]:
        memo, vertex_of, deps = self.memo, self.vertex_of, self.deps
        start = (rank, nid)
        stack = [start]
        while stack:
            key = stack[-1]
            if key in memo:
                stack.pop()
                continue
            if key not in vertex_of:
                raise HcsimError(
                    f"Chakra file '{self.where_of[key[0]]}': a node depends on node {key[1]}, which does not exist"
                )
            v = vertex_of[key]
            if v >= 0 and key not in self.receives:
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


def _check(w: Workload, prefix: str | os.PathLike[str]) -> None:
    """Refuse an empty result, a same-iteration dependency cycle (the trace would deadlock), a bad vertex."""
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
