"""What a fold may keep or drop whole in a parallel layout: its units and their flows.

A ``dp x tp x pp (x ep)`` training iteration is the same program on every data-parallel
replica (with expert parallelism, on every EP group of replicas), which meet only in the
gradient rings. :func:`layout_units` describes that as a
:class:`~hcsim.fast.symmetry.UnitRing` for :func:`~hcsim.fast.symmetry.fold_units`:
the units (in rank order, position ``(e*pp + p)*tp + t``), their *inner* flows (every
pair their own collectives use, read from the plans of the algorithms the run will use,
and the pipeline's p2p both ways) and the *cross* flows to the next unit (the gradient
rings' hops). :func:`units_of` reads a workload factory's layout
(``layout_data(topology)``, a :class:`~hcsim.workload.parallel.factory.LayoutData`).

Invariant: every unit shows the same pairs by position (checked), and the gradient
collectives are rings in rank order (only a ring can stand for the full group);
otherwise one-line refusal. See ``docs/fast-paths.md`` ("Fold of a parallel layout").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hcsim.collectives import TopologyView
from hcsim.collectives.registry import algorithm, build_plan, for_kind
from hcsim.errors import HcsimError
from hcsim.fast.symmetry import UnitRing
from hcsim.workload.graph import ALGORITHMS
from hcsim.workload.parallel.comms import DP_SYNC, TP_PATTERNS
from hcsim.workload.parallel.layout import Layout, RankGrid

__all__ = ["layout_units", "units_of"]


def units_of(factory: Any, topology: Any) -> UnitRing | None:
    """The units a fold keeps or drops whole, for a workload factory that tells its layout (else None).

    A factory with ``layout_data(topology)`` (a
    :class:`~hcsim.workload.parallel.factory.TrainingWorkload`) is folded by its units;
    any other by the data-parallel ring of its XPUs. Raises a one-line HcsimError where
    the layout cannot be folded.
    """
    read = getattr(factory, "layout_data", None)
    if read is None:
        return None
    d = read(topology)
    return layout_units(
        d.layout, topology, mapping=d.mapping, zero=d.zero, sequence_parallel=d.sequence_parallel,
        dp_algorithm=d.dp_algorithm, tp_algorithm=d.tp_algorithm, alltoall_algorithm=d.alltoall_algorithm,
        experts=d.experts,
    )  # fmt: skip


_PROBE_BYTES = float(2**20)  # any size: the pairs of a plan do not depend on it


def layout_units(
    layout: Layout,
    topology: Any,
    *,
    mapping: str | Sequence[str] | None = None,
    zero: int = 0,
    sequence_parallel: bool = False,
    dp_algorithm: str = "ring",
    tp_algorithm: str = "ring",
    alltoall_algorithm: str = "direct",
    experts: bool | None = None,
) -> UnitRing:
    """The units and flows of ``layout`` on ``topology``'s XPUs (module docstring); one-line errors.

    ``experts``: whether the model has expert parameters (their gradient rings go over
    the replicas holding the same experts); default ``layout.ep > 1``.

        >>> from hcsim.platform import cxl_system
        >>> from hcsim.workload.parallel.layout import Layout
        >>> ring = layout_units(Layout.parse("dp=4,tp=8,pp=2"), cxl_system(64))
        >>> len(ring.units), len(ring.units[0]), len(ring.cross), len(ring.inner)
        (4, 16, 16, 32)
    """
    xpus = topology.xpus()
    layout.check(len(xpus))
    if layout.expert_tp != layout.tp:
        raise HcsimError(
            f"layout {layout} cannot be folded: with etp={layout.expert_tp} < tp the expert groups span TP slices "
            "(valid for a fold: etp = tp)"
        )
    grid = RankGrid(layout, xpus, mapping)
    view = TopologyView.of_topology(topology)
    tp, pp, ep = layout.tp, layout.pp, layout.ep
    dp = layout.replicas  # with context parallelism: every (replica, CP slice)
    cp = layout.cp
    experts = ep > 1 if experts is None else experts
    size = math.lcm(ep, cp)  # replicas (CP slices) per unit: whole EP groups and whole CP groups
    node_rings = _node_rings(layout, grid, view, zero, dp_algorithm, size, experts)
    if node_rings:  # NCCL's rings: a unit is one node's replicas (its rings' hops inside it, rails to the next)
        size = node_rings
    count = dp // size

    def pos(e: int, p: int, t: int) -> int:
        return (e * pp + p) * tp + t

    units = [[grid.xpu(g * size + e, p, t) for e in range(size) for p in range(pp) for t in range(tp)]
             for g in range(count)]  # fmt: skip

    def pairs(kind: str, alg: str, scope: list[str], what: str) -> list[tuple[str, str]]:
        plan = build_plan(kind, alg, scope, _PROBE_BYTES, view, compact=True)
        out = list(dict.fromkeys((a, b) for a, b, size in zip(plan.src, plan.dst, plan.size, strict=True) if size))
        members = set(scope)
        for a, b in out:
            if a not in members or b not in members:
                outside = a if a not in members else b
                raise HcsimError(
                    f"layout {layout} cannot be folded: the {what} algorithm {alg!r} sends to '{outside}', outside "
                    "its group (valid for a fold: collectives among the group's XPUs)"
                )
        return out

    # inner flows, per unit, by position; every unit must give the same ones
    inner: list[tuple[str, int, int]] | None = None
    for g, unit in enumerate(units):
        index = {x: i for i, x in enumerate(unit)}
        found: list[tuple[str, int, int]] = []
        for e in range(size):
            d = g * size + e
            for p in range(pp):
                if tp > 1:
                    pre, post = TP_PATTERNS[sequence_parallel]
                    for kind in (k for k in (pre, post) if k):
                        alg = tp_algorithm if kind == "allreduce" else for_kind(kind, tp_algorithm) or _default(kind)
                        found += [("tp", index[a], index[b]) for a, b in pairs(kind, alg, grid.tp_group(d, p), "TP")]
                if p + 1 < pp:
                    for t in range(tp):
                        found += [("pp", pos(e, p, t), pos(e, p + 1, t)), ("pp", pos(e, p + 1, t), pos(e, p, t))]
                if layout.vp > 1:  # interleaved: the last stage's chunk c feeds the first stage's chunk c+1
                    for t in range(tp):
                        found += [("pp", pos(e, pp - 1, t), pos(e, 0, t)), ("pp", pos(e, 0, t), pos(e, pp - 1, t))]
        if cp > 1:  # ring attention's KV allgather and dKV reduce-scatter within each CP group
            for first in range(g * size, (g + 1) * size, cp):
                for p in range(pp):
                    for t in range(tp):
                        scope = grid.cp_group(first, p, t)
                        for kind in ("allgather", "reduce_scatter"):
                            found += [("cp", index[a], index[b]) for a, b in pairs(kind, _default(kind), scope, "CP")]
        if ep > 1:
            for first in range(g * size, (g + 1) * size, ep):
                for p in range(pp):
                    for t in range(tp):
                        scope = grid.ep_group(first, p, t)
                        found += [
                            ("ep", index[a], index[b]) for a, b in pairs("alltoall", alltoall_algorithm, scope, "EP")
                        ]
        if node_rings:  # NCCL's rings in a node: every channel's hops i -> i+1, and the relay (last -> first)
            found += [("dp", pos(e, p, t), pos((e + 1) % size, p, t)) for e in range(size) for p in range(pp)
                      for t in range(tp)]  # fmt: skip
        elif size > 1 and count * size > 1:  # the gradient rings' hops between the replicas of one unit
            found += [("dp", pos(e, p, t), pos(e + 1, p, t)) for e in range(size - 1) for p in range(pp)
                      for t in range(tp)]  # fmt: skip
        if experts and ep > 1 and size > ep:  # the expert gradient rings' hops inside a unit (with CP)
            found += [("dp", pos(e, p, t), pos(e + ep, p, t)) for e in range(size - ep) for p in range(pp)
                      for t in range(tp)]  # fmt: skip
        found = list(dict.fromkeys(found))
        if inner is None:
            inner = found
        elif found != inner:
            raise HcsimError(
                f"layout {layout} cannot be folded: replica {g * ep}'s collectives use other pairs of XPUs than "
                "replica 0's (valid for a fold: the same pattern in every replica)"
            )
    # cross flows: the gradient rings, which must be rings to stand for the full group
    cross: list[tuple[str, int, int]] = []
    if node_rings:  # each channel leaves a node on its rail: local rank e to the next node's local rank e
        cross += [("dp", pos(e, p, t), pos(e, p, t)) for e in range(size) for p in range(pp) for t in range(tp)]
    elif dp > 1:
        kinds = list(DP_SYNC[zero]) + (["allgather"] if zero == 3 else [])
        for kind in kinds:
            alg = dp_algorithm if kind == "allreduce" else for_kind(kind, dp_algorithm) or _default(kind)
            if not algorithm(kind, alg).ring:
                raise HcsimError(
                    f"layout {layout} cannot be folded: the data-parallel {kind} algorithm {alg!r} is not a ring "
                    "(valid for a fold: a ring, which can stand for the full group)"
                )
            scope = grid.dp_group(0, 0)
            ring = list(zip(scope, scope[1:] + scope[:1], strict=True))
            if pairs(kind, alg, scope, "data-parallel") != ring:
                raise HcsimError(
                    f"layout {layout} cannot be folded: the data-parallel {kind} algorithm {alg!r} does not send "
                    "rank i -> rank i+1 (valid for a fold: a ring in rank order)"
                )
        cross += [("dp", pos(size - 1, p, t), pos(0, p, t)) for p in range(pp) for t in range(tp)]
        if experts and ep > 1 and count > 1:
            cross += [("edp", pos(size - ep + e, p, t), pos(e, p, t)) for e in range(ep) for p in range(pp)
                      for t in range(tp)]  # fmt: skip
    return UnitRing(units, inner or [], cross)


def _default(kind: str) -> str:
    return ALGORITHMS[kind][0]


def _node_rings(
    layout: Layout, grid: RankGrid, view: TopologyView, zero: int, dp_algorithm: str, size: int, experts: bool
) -> int:
    """Replicas per node when the gradient collectives are NCCL's rings over whole nodes (else 0).

    Those rings (``nccl``, ``nccl@...``: :mod:`hcsim.collectives.algorithms.nccl_rings`) are
    not rings in rank order, but a node's replicas form a unit: inside it every channel
    goes i -> i+1 (its last hop relayed to the first), and between nodes local rank e goes
    to the next node's local rank e. That holds when every data-parallel group spans >= 2
    nodes of r >= 2 replicas, replica d being local rank d mod r of node d // r, and the
    unit of whole EP and CP groups divides r; a folded run's rings over whole kept nodes
    keep the full ring's steps and chunk. Anything else: one-line refusal.
    """
    kinds = list(DP_SYNC[zero]) + (["allgather"] if zero == 3 else [])
    algs = {dp_algorithm if kind == "allreduce" else for_kind(kind, dp_algorithm) or _default(kind) for kind in kinds}
    if layout.replicas < 2 or not any(isinstance(a, str) and a.startswith("nccl") for a in algs):
        return 0
    if len(algs) != 1:
        raise HcsimError(
            f"layout {layout} cannot be folded: its gradient collectives mix NCCL's rings with "
            f"{', '.join(sorted(a for a in algs if not a.startswith('nccl')))} (valid: one algorithm)"
        )
    per_node = 0
    for p in range(layout.pp):
        for t in range(layout.tp):
            group = grid.dp_group(p, t)
            nodes = view.by_server(view.topology_order(group))
            r = len(nodes[0])
            if len(nodes) < 2 or r < 2:
                return 0  # one ring in topology order (one node, or one rank per node): a rank-order ring's fold
            if any(len(node) != r for node in nodes) or nodes != [group[i : i + r] for i in range(0, len(group), r)]:
                raise HcsimError(
                    f"layout {layout} cannot be folded: its data-parallel groups do not take whole "
                    "nodes in replica order (valid for a fold: replica d on node d // r)"
                )
            per_node = per_node or r
            if r != per_node:
                raise HcsimError(f"layout {layout} cannot be folded: its data-parallel groups take nodes unevenly")
    if per_node % size or (experts and layout.ep > 1):
        raise HcsimError(
            f"layout {layout} cannot be folded: NCCL's rings over nodes of {per_node} replicas with "
            f"units of {size} (valid for a fold: EP and CP groups inside a node, no expert rings)"
        )
    return per_node
