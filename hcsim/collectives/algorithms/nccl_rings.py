"""NCCL's rings on a rail-optimised machine (DGX): channels, each a ring on its own rail.

``nccl`` allreduce, reduce-scatter and allgather over M >= 2 nodes of g >= 2 ranks (servers
of :meth:`TopologyView.by_server`, in :meth:`TopologyView.topology_order`): g channels
(NCCL's 2g, each duplicated pair run as one, :data:`CHANNELS_PER_RANK`), channel c a ring
over all ranks rotated by c mod g inside every node, leaving each node on rail c through a
PXN relay. A single node, one rank per node or nodes of unequal size: one ring over the
topology order (``ring_topo``). ``nccl@CALIBRATION`` (``nccl@dgx-h100``, ``nccl@path.yaml``)
is the same flows with NCCL's cost model (:mod:`hcsim.calibration.nccl`) on top: the
protocol's bytes on the wire (:data:`PROTOCOL_WIRE`) and the ring's latency as the
collective's fixed ``delay`` after its last flow.

Invariant: every schedule passes the data-movement check (relayed flows count as flows
from src to dst). The construction and its closed forms: docs/collectives.md, "NCCL rings".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hcsim.calibration.nccl import nccl_time
from hcsim.calibration.schema import load_calibration
from hcsim.collectives.algorithms.ring import allgather_phases, reduce_scatter_phases, ring_schedule
from hcsim.collectives.plans import FlowPlan
from hcsim.collectives.plans import plan as list_order_plan
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
from hcsim.collectives.view import TopologyView
from hcsim.errors import HcsimError

__all__ = [
    "CHANNELS_PER_RANK", "PROTOCOL_WIRE", "calibrated_name", "nccl_cost", "nccl_grid", "nccl_plan", "nccl_schedule",
    "register_calibrated",
]  # fmt: skip

CHANNELS_PER_RANK = 1
"""Flow channels per local rank of a node: NCCL's DGX ring graph has one ring per NIC, duplicated (16 on 8
GPUs); each duplicated pair runs as one channel carrying both (docs/collectives.md, "NCCL rings")."""

PROTOCOL_WIRE = {"LL": 2.0, "LL128": 128.0 / 120.0, "Simple": 1.0}
"""Bytes on the wire per byte of data: LL sends 4 data bytes and a 4-byte flag per 8-byte line;
LL128 120 data bytes per 128-byte line (NCCL src/device/prims_ll.h, prims_ll128.h)."""

_PHASES = {
    "allreduce": lambda n: reduce_scatter_phases(n) + allgather_phases(n),
    "reduce_scatter": reduce_scatter_phases,
    "allgather": allgather_phases,
}
_CALIBRATIONS: dict[str, Any] = {}  # "nccl@NAME" -> its Calibration (registered by register_calibrated)
_REGISTERED: set[str] = set()


def nccl_grid(ranks: list[str], view: TopologyView) -> list[list[str]] | None:
    """The nodes of the scope in topology order (M >= 2 nodes of g >= 2 ranks each), or None (one ring)."""
    nodes = view.by_server(view.topology_order(list(ranks)))
    if len(nodes) < 2 or len({len(node) for node in nodes}) != 1 or len(nodes[0]) < 2:
        return None
    return nodes


def nccl_cost(
    algorithm: str, kind: str, ranks: list[str], nbytes: float, view: TopologyView, group: int | None = None
) -> tuple[float, float]:
    """(bytes on the wire per byte, fixed latency in seconds) of ``algorithm`` for this call.

    ``nccl``: (1, 0). ``nccl@CALIBRATION``: the ring protocol of least time in NCCL's model
    (:func:`hcsim.calibration.nccl.nccl_time`, ties to LL, LL128, Simple in that order) and
    that model's latency term, for the scope's ranks per node and nodes (a folded scope
    standing for ``group`` ranks: as many more nodes of the same size; a scope inside one
    node: a group inside one node).
    """
    if algorithm not in _REGISTERED:
        register_calibrated(algorithm)
    calib = _CALIBRATIONS.get(algorithm)
    total = len(ranks) if group is None else group
    if calib is None or total < 2:
        return 1.0, 0.0

    servers = view.by_server(list(ranks))
    if len(servers) == 1:  # a scope in one node stands for a group in one node (folds keep whole nodes otherwise)
        per_node, nodes = total, 1
    else:
        per_node = max(len(node) for node in servers)
        nodes = -(-total // per_node)
    timed = {}
    for p in PROTOCOL_WIRE:  # a protocol the machine does not enable (LL128) is not a candidate
        try:
            timed[p] = nccl_time(kind, max(1.0, float(nbytes)), per_node * nodes, nodes, "ring", p, calib)
        except HcsimError:
            pass
    if not timed:
        raise HcsimError(
            f"algorithm {algorithm!r}: NCCL's model has no ring for {kind} over {total} ranks on {nodes} "
            f"nodes (valid: at most {calib.gpus_per_node} ranks per node)"
        )
    proto = min(timed, key=lambda p: timed[p][0])
    return PROTOCOL_WIRE[proto], timed[proto][1]


def nccl_schedule(
    kind: str, ranks: list[str], nbytes: float, view: TopologyView, wire: float = 1.0, group: int | None = None
) -> Schedule:
    """The flows of ``nccl`` (docs/collectives.md, "NCCL rings"); ``wire``: bytes sent per byte of data (protocol);
    ``group``: the ranks the scope stands for (a folded run: steps and chunks of the full ring, no check)."""
    n = len(ranks)
    total = n if group is None else group
    phases = _PHASES[kind](total)
    nodes = nccl_grid(ranks, view)
    if nodes is None:
        return ring_schedule(kind, ranks, nbytes * wire, phases, view.topology_order(list(ranks)))
    g = len(nodes[0])
    channels = CHANNELS_PER_RANK * g
    owner = {r: k for k, r in enumerate(ranks)}
    # shard k*C + c: rank k's piece on channel c (no check for a folded run)
    s = Schedule(kind, ranks, shards=n * channels if total == n else 0, steps=len(phases))
    chunk = nbytes * wire / (channels * total)
    for c in range(channels):
        o = c % g
        order = [node[(o + i) % g] for node in nodes for i in range(g)]
        # the last rank of a node sends to the next node's first through the node's first (its NIC: rail o)
        via = [nodes[i // g][o] if i % g == g - 1 else "" for i in range(n)]
        prev: list[int] = []
        for j, offset in enumerate(phases):
            cur = []
            for i in range(n):
                after = () if j == 0 else (prev[i], prev[(i - 1) % n])
                shards = [owner[order[(i - offset) % n]] * channels + c] if total == n else []
                cur.append(s.add(order[i], order[(i + 1) % n], chunk, after, shards=shards, via=via[i]))
            prev = cur
    return s


def nccl_plan(
    kind: str,
    algorithm: str,
    scope: list[str],
    nbytes: float,
    group: int | None = None,
    compact: bool = False,
    view: TopologyView | None = None,
) -> FlowPlan:
    """The engine's plan of ``nccl`` (and ``nccl@...``) over ``scope``, standing for ``group`` ranks.

    ``compact``: one step's flows (every channel's hops, a relay as its two hops, no
    dependencies) for the step-synchronous strategy (:mod:`hcsim.fast.ring_steps`); else
    the pipelined schedule's plan. A folded run (``group`` > the scope) keeps the full
    ring's steps and chunk (S / (C group)): every step of a channel crosses the same hop
    classes (NVLink, and one relayed NIC hop per node), so a scope of whole nodes stands
    for more of them. One ring (a single node, one rank per node) is ``ring_topo``'s plan.
    """
    view = view if view is not None else TopologyView()
    n = len(scope)
    total = n if group is None else group
    wire, delay = nccl_cost(algorithm, kind, list(scope), nbytes, view, group)
    nodes = nccl_grid(scope, view)
    if nodes is None:
        if total != n and len({len(node) for node in view.by_server(list(scope))}) > 1:
            raise HcsimError(f"algorithm {algorithm!r} cannot stand for {total} ranks with {n} on unequal nodes "
                             "(valid: a fold that keeps whole nodes, or no fold)")  # fmt: skip
        fp = list_order_plan(kind, "ring", view.topology_order(list(scope)), nbytes * wire, group, compact)
    elif compact:
        g = len(nodes[0])
        channels = CHANNELS_PER_RANK * g
        src: list[str] = []
        dst: list[str] = []
        for c in range(channels):
            o = c % g
            order = [node[(o + i) % g] for node in nodes for i in range(g)]
            for i in range(n):
                a, b = order[i], order[(i + 1) % n]
                if i % g == g - 1:  # relayed: both hops in the step
                    src += [a, nodes[i // g][o]]
                    dst += [nodes[i // g][o], b]
                else:
                    src.append(a)
                    dst.append(b)
        m = len(src)
        chunk = max(1, int(round(nbytes * wire / (channels * total))))
        fp = FlowPlan(src, dst, [chunk] * m, [0] * m, [[] for _ in range(m)], len(_PHASES[kind](total)))
    else:
        fp = nccl_schedule(kind, list(scope), nbytes, view, wire, group).to_plan()
    fp.delay = delay
    return fp


def _build(kind: str, name: str) -> Callable[[list[str], float, TopologyView], Schedule]:
    def build(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
        wire, delay = nccl_cost(name, kind, ranks, nbytes, view)
        s = nccl_schedule(kind, ranks, nbytes, view, wire)
        s.delay = delay
        return s

    what = {"allreduce": "", "reduce_scatter": " reduce-scatter", "allgather": " allgather"}[kind]
    if name == "nccl":
        build.__doc__ = f"NCCL's rings{what}: a channel pair per rail, each ring leaving nodes on its rail."
    else:
        build.__doc__ = f"NCCL's rings{what} with NCCL's protocol and latency ({name.partition('@')[2]})."
    build.__name__ = f"nccl_{kind}"
    return build


def calibrated_name(calibration: str) -> str:
    """The algorithm name of NCCL's rings under ``calibration`` (a shipped name or a YAML path)."""
    return f"nccl@{calibration}"


def register_calibrated(name: str) -> bool:
    """Register ``nccl`` or ``nccl@CALIBRATION`` for allreduce, reduce-scatter and allgather on first use;
    False if ``name`` is neither. (Registered on use, so ``hcsim collective --algorithm all`` and the
    library's listing stay those of the ideal model.)"""
    prefix, sep, which = name.partition("@")
    if prefix != "nccl" or (sep and not which):
        return False
    if name in _REGISTERED:
        return True
    if sep:
        calib = load_calibration(which)
        if calib is None:
            raise HcsimError(f"algorithm {name!r} needs a calibration (valid: nccl, nccl@dgx-h100, nccl@dgx-a100, "
                             "nccl@FILE.yaml)")  # fmt: skip
        _CALIBRATIONS[name] = calib
    _REGISTERED.add(name)
    for kind in _PHASES:
        register(kind, name, plan=nccl_plan, ring=True, shared_steps=True, system_fold=False)(_build(kind, name))
    return True
