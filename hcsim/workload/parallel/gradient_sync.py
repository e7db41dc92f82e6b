"""The gradient and parameter collectives of a training iteration: DP allreduce, ZeRO, FSDP.

:class:`GradientSync` is the part of :mod:`.builder`'s graph walker that joins the
data-parallel replicas once every rank's chain of compute, TP, EP, CP and PP vertices
is laid out: per unit, the DP allreduce (``zero=0``), the ZeRO-1/2 reduce-scatter and
parameter all-gather (the latter optionally moved into the next forward:
``overlap_param_gather``), ZeRO-3's gathers before each pass, and FSDP's per-microbatch
gathers and reduce-scatters. Vertices are ``{dp|edp}{group}.{stage}.{tp}/{unit}.{kind}``
(``edp``: the expert-data-parallel groups of an MoE layer; with ``etp < tp`` they span TP
slices and are :func:`.experts.expert_gradient_sync`'s, ``edp{group}.{stage}/{unit}.{kind}``).

It is a mixin: it reads the walker's state (``layout``, ``grid``, ``units``, ``zero``,
``policy``, ``bpv``, ``full_replicas``, ``algorithms``, ``fsdp``, ``gather_forward``, the
``first``/``unit_last_bwd``/``uses``/``bwd_last`` indexes filled while the chains were
built) and appends to its ``edges`` through its ``_comm``. Each rank runs its gradient
collectives one at a time, as NCCL runs the buckets of one communicator stream.

Under a calibration each rank also runs its **optimizer step** (:mod:`.optimizer`), a
compute vertex ``{xpu}/optimizer`` after its last gradient collective and before its next
iteration and parameter all-gathers; the ideal model adds nothing.
"""

from __future__ import annotations

from typing import Any

from hcsim.collectives.registry import for_kind
from hcsim.workload.graph import Workload
from hcsim.workload.models.precision import training_precision
from hcsim.workload.parallel.comms import DP_SYNC
from hcsim.workload.parallel.costs import UnitCost
from hcsim.workload.parallel.experts import expert_gradient_sync, folded
from hcsim.workload.parallel.optimizer import optimizer_bytes_per_param, optimizer_seconds

__all__ = ["GradientSync"]


class GradientSync:
    """The data-parallel gradient and parameter collectives of :class:`.builder._Builder`."""

    layout: Any
    grid: Any
    units: list
    zero: int
    policy: Any
    bpv: float
    full_replicas: int
    expert_replicas: int  # the full system's expert-DP size (full_replicas // ep when etp = tp)
    m: int
    algorithms: dict[str, str]
    fsdp: bool
    gather_forward: bool
    first: dict[tuple, str]
    unit_last_bwd: dict[tuple, str]
    uses: dict[tuple, list[tuple[str, str, int, str]]]
    bwd_last: dict[tuple, str]
    _use_index: dict[tuple, dict]
    edges: list[tuple[str, str, bool]]
    nodes: dict[str, dict]
    orders: list[list[tuple]]
    last: dict[tuple, str]
    calibration: Any = None  # a Calibration: the optimizer step is added (the builder sets it)

    def _comm(self, name: str, nbytes: float, kind: str, scope: list[str], algorithm: str | None, **attrs) -> bool:
        raise NotImplementedError  # the graph walker's

    def _gradient_sync(self) -> None:
        """Per unit: the DP (or ZeRO) collectives of its gradients, feeding the next iteration's forward.

        A rank runs its gradient collectives one at a time, in the order the backward pass
        finishes the units (last unit first), as NCCL runs the buckets of one communicator
        stream; at 1024 XPUs, all at once would also be ~20k concurrent flows.
        """
        # (d, p, t) -> (what the rank's optimizer step waits for, parameter all-gathers that wait for it)
        self._steps: dict[tuple, tuple[list[str], list[str]]] | None = {} if self.calibration is not None else None
        if self.fsdp:
            self._fsdp_sync()
        else:
            self._replica_sync()
            if folded(self.layout):  # expert-DP groups across TP slices (etp < tp)
                expert_gradient_sync(self)
        if self._steps is not None:
            self._optimizer_steps()

    def _replica_sync(self) -> None:
        """The gradient collectives once per iteration (plain DP, ZeRO-1/2/3 without FSDP's per-microbatch ones)."""
        lay, grid = self.layout, self.grid
        steps = self._steps
        kinds = DP_SYNC[self.zero]
        dp = self.algorithms["dp"]  # also its reduce-scatter and allgather where it has them (for_kind)
        for p in range(lay.pp):
            for t in range(lay.tp):
                gathers_f: list[str] = []
                gathers_b: list[str] = []
                stream_last: dict[int, str] = {}  # replica -> its last gradient collective so far
                forward_gathers: list[tuple[str, str, list[int]]] = []  # (unit, all-gather, replicas)
                for unit, cost, _ in reversed(self.units[p]):
                    groups = [("dp", cost.params, [list(range(lay.replicas))], self.full_replicas)]
                    if isinstance(cost, UnitCost) and cost.expert_params and not folded(lay):
                        sets = [list(range(e, lay.replicas, lay.ep)) for e in range(lay.ep)]
                        groups.append(("edp", cost.expert_params, sets, self.full_replicas // lay.ep))
                    for label, params, replica_sets, size in groups:
                        stands = {} if size == len(replica_sets[0]) else {"group": size}  # a folded run
                        for gi, replicas in enumerate(replica_sets):
                            if size < 2 or params == 0:
                                continue
                            scope = [grid.xpu(d, p, t) for d in replicas]
                            nbytes = params * self.bpv
                            if self.policy is not None:  # gradients in their reduce dtype, parameters gathered
                                grad_bytes = params * self.policy.grad_reduce_bytes
                                gather_bytes = params * self.policy.param_gather_bytes
                            else:
                                grad_bytes = gather_bytes = nbytes
                            base = f"{label}{gi}.{p}.{t}/{unit}"
                            prev = [self.unit_last_bwd[(d, p, t, unit)] for d in replicas]
                            prev += sorted({stream_last[d] for d in replicas if d in stream_last})
                            for kind in kinds:
                                vertex = f"{base}.{kind}"
                                alg = dp if kind == "allreduce" else for_kind(kind, dp)
                                nb = gather_bytes if kind == "allgather" else grad_bytes
                                self._comm(vertex, nb, kind, scope, alg, phase="dp", **stands)
                                if kind == "allgather" and self.gather_forward:
                                    forward_gathers.append((unit, vertex, replicas))
                                    continue
                                self.edges.extend((u, vertex, False) for u in prev)
                                prev = [vertex]
                            sync = prev[0]
                            for d in replicas:
                                stream_last[d] = sync
                            if self.zero < 3:
                                if not self.gather_forward:
                                    self.edges.extend((sync, self.first[(d, p, t, unit, "F")], True) for d in replicas)
                                continue
                            for pas, stream in (("F", gathers_f), ("B", gathers_b)):
                                vertex = f"{base}.allgather.{pas}"
                                self._comm(vertex, gather_bytes, "allgather", scope, None, phase="dp", **stands)
                                self.edges.append((sync, vertex, True))
                                if steps is not None:
                                    self._step_gates(p, t, replicas, vertex)
                                self.edges.extend((vertex, self.first[(d, p, t, unit, pas)], False) for d in replicas)
                                stream.append(vertex)
                # ZeRO-3 prefetch: one allgather at a time, forward units in order, then backward ones in reverse
                stream = gathers_f[::-1] + gathers_b
                self.edges.extend((u, v, False) for u, v in zip(stream, stream[1:], strict=False))
                if forward_gathers:
                    self._gathers_in_forward(p, t, forward_gathers[::-1], sorted(set(stream_last.values())))
                    if steps is not None:
                        for _, vertex, replicas in forward_gathers:
                            self._step_gates(p, t, replicas, vertex)
                if steps is not None:
                    for d, sync in stream_last.items():
                        self._step(d, p, t)[0].append(sync)

    def _gathers_in_forward(self, p: int, t: int, gathers: list[tuple[str, str, list[int]]], done: list[str]) -> None:
        """overlap_param_gather: the all-gathers one at a time in forward unit order, each launched once the
        previous unit's forward has begun (its first vertex is done), the first once the last iteration's
        gradient reduce-scatters are all done (the optimizer step); a unit's forward waits for its own."""
        self.edges.extend((u, gathers[0][1], True) for u in done)
        last_gather: str | None = None
        last_unit: tuple[str, list[int]] | None = None  # the previous unit (not this one) and its replicas
        current: tuple[str, list[int]] | None = None
        for unit, vertex, replicas in gathers:
            self.edges.extend((vertex, self.first[(d, p, t, unit, "F")], False) for d in replicas)
            if last_gather is not None:
                self.edges.append((last_gather, vertex, False))
            if current is not None and current[0] != unit:
                last_unit = current
            if last_unit is not None:  # prefetch one unit ahead: the previous unit's forward has begun
                self.edges.extend((self.first[(d, p, t, last_unit[0], "F")], vertex, False) for d in last_unit[1])
            last_gather, current = vertex, (unit, replicas)

    def _fsdp_sync(self) -> None:
        """ZeRO-3 every microbatch: per use of a unit an all-gather, per backward a reduce-scatter.

        The all-gathers of a rank run one at a time in the order the rank uses the units
        (its schedule), each starting once the previous one is done and the use before it
        has begun (prefetch one unit ahead: that use's first vertex is done); the
        reduce-scatters run one at a time in the order the backward passes finish. The
        next iteration's first all-gather of a unit waits for its last reduce-scatter.
        """
        lay, grid, m = self.layout, self.grid, self.m
        for p in range(lay.pp):
            units = {u: cost for u, cost, _ in self.units[p]}
            experts = any(isinstance(c, UnitCost) and c.expert_params for c in units.values())
            for t in range(lay.tp):
                uses = self.uses[(0, p, t)]  # every replica runs the same order
                sets = [("dp", 0, list(range(lay.replicas)), self.full_replicas, False)]
                if experts:
                    sets += [("edp", e, list(range(e, lay.replicas, lay.ep)), self.full_replicas // lay.ep, True)
                             for e in range(lay.ep)]  # fmt: skip
                for label, gi, replicas, size, of_experts in sets:
                    if size < 2:
                        continue
                    stands = {} if size == len(replicas) else {"group": size}
                    scope = [grid.xpu(d, p, t) for d in replicas]
                    prev_gather: str | None = None
                    prev_use: tuple | None = None
                    prev_rs: str | None = None
                    last_rs: dict[str, str] = {}
                    first_gather: dict[str, str] = {}
                    for unit, pas, mb, _ in uses:
                        cost = units[unit]
                        if of_experts:
                            n = cost.expert_params if isinstance(cost, UnitCost) else 0
                        else:
                            n = cost.params
                        if not n:
                            continue
                        gather = n * (self.bpv if self.policy is None else self.policy.param_gather_bytes)
                        base = f"{label}{gi}.{p}.{t}/{unit}"
                        vertex = f"{base}.allgather.{pas}{mb}"
                        self._comm(vertex, gather, "allgather", scope, None, phase="dp", **stands)
                        first_gather.setdefault(unit, vertex)
                        if prev_gather is not None:
                            self.edges.append((prev_gather, vertex, False))
                        if prev_use is not None:
                            self.edges.extend((self._use_first(d, p, t, prev_use), vertex, False) for d in replicas)
                        use = (unit, pas, mb)
                        self.edges.extend((vertex, self._use_first(d, p, t, use), False) for d in replicas)
                        prev_gather, prev_use = vertex, use
                        if pas != "B":
                            continue
                        grads = n * (self.bpv if self.policy is None else self.policy.grad_reduce_bytes)
                        rs = f"{base}.reduce_scatter.{mb}"
                        self._comm(rs, grads, "reduce_scatter", scope, None, phase="dp", **stands)
                        self.edges.extend((self.bwd_last[(d, p, t, unit, mb)], rs, False) for d in replicas)
                        if prev_rs is not None:
                            self.edges.append((prev_rs, rs, False))
                        prev_rs = rs
                        if mb == m - 1:
                            last_rs[unit] = rs
                    for unit, rs in last_rs.items():  # the optimizer step gates the next iteration's gathers
                        self.edges.append((rs, first_gather[unit], True))
                    if self._steps is not None:  # the step after the last reduce-scatter, before the first gathers
                        for d in replicas:
                            if prev_rs is not None:
                                self._step(d, p, t)[0].append(prev_rs)
                        for vertex in first_gather.values():
                            self._step_gates(p, t, replicas, vertex)

    def _use_first(self, d: int, p: int, t: int, use: tuple) -> str:
        """The first vertex of replica ``d``'s use ``(unit, pass, mb)`` of a unit at stage ``p``, TP slice ``t``."""
        index = self._use_index.get((d, p, t))
        if index is None:
            index = self._use_index[(d, p, t)] = {(u, pas, mb): v for u, pas, mb, v in self.uses[(d, p, t)]}
        return index[use]

    # ---------------------------------------------------------------- the optimizer step (calibrated runs)
    def _step(self, d: int, p: int, t: int) -> tuple[list[str], list[str]]:
        """(waits for, gates) of replica ``d``'s optimizer step at stage ``p``, TP slice ``t``."""
        steps = self._steps
        assert steps is not None
        entry = steps.get((d, p, t))
        if entry is None:
            entry = steps[(d, p, t)] = ([], [])
        return entry

    def _step_gates(self, p: int, t: int, replicas: list[int], vertex: str) -> None:
        """A parameter all-gather of ``replicas`` waits for each one's optimizer step (of the last iteration)."""
        for d in replicas:
            self._step(d, p, t)[1].append(vertex)

    def _shard_params(self, p: int) -> float:
        """Parameters of stage ``p`` whose optimizer state one of its ranks holds (ZeRO >= 1: its shard)."""
        dense = sum(cost.params for _, cost, _ in self.units[p])
        experts = sum(cost.expert_params for _, cost, _ in self.units[p] if isinstance(cost, UnitCost))
        if self.zero < 1:
            return float(dense + experts)
        return dense / self.full_replicas + experts / max(self.expert_replicas, 1)

    def _optimizer_steps(self) -> None:
        """Per rank, its optimizer step: after its chain and its gradient collectives, before its next iteration."""
        lay, grid = self.layout, self.grid
        precision = self.policy or training_precision("fp32" if self.bpv >= 4 else "fp16")
        steps = self._steps
        assert steps is not None
        checked = False
        for p in range(lay.pp):
            params = self._shard_params(p)
            if params <= 0:
                continue
            seconds = optimizer_seconds(params, precision, self.calibration)
            nbytes = params * optimizer_bytes_per_param(precision)
            first_unit = self.units[p][0][0]
            for d in range(lay.replicas):
                for t in range(lay.tp):
                    xpu = grid.xpu(d, p, t)
                    vertex = f"{xpu}/optimizer"
                    self.nodes[vertex] = v = {
                        "type": "compute", "flops": 0.0, "location": xpu, "precision": "fp32", "mem_bytes": nbytes,
                        "footprint": 0.0, "is_start": False, "data": f"{xpu}/{first_unit}", "phase": "optimizer",
                        "seconds": seconds,
                    }  # fmt: skip
                    if not checked:
                        Workload._check_vertex(vertex, v)
                        checked = True
                    waits, gates = steps.get((d, p, t), ([], []))
                    chain_end = self.last[(d, p, t, *self.orders[p][-1])]
                    chain_start = self.first[(d, p, t, *self.orders[p][0])]
                    self.edges.extend((u, vertex, False) for u in [chain_end, *waits])
                    self.edges.extend((vertex, g, True) for g in [chain_start, *gates])
