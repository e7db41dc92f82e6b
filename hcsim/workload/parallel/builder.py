"""The training iteration of a transformer under a ``dp x tp x pp (x ep)`` layout, as a workload graph.

:func:`training_graph`: every pipeline (data-parallel replica) runs ``m`` microbatches
through its stages in the order of the pipeline schedule (:mod:`.schedules`), then
synchronizes gradients (:mod:`.comms`). A **compute vertex** per part of a unit
(:mod:`.costs`), pass and microbatch is named ``{xpu}/F{mb}.{unit}.{part}`` (``B`` for
backward) and shares the unit's data block ``{xpu}/{unit}``; **TP** collectives
(``tp{d}.{p}/...``), **EP** all-to-alls (``ep...``), **PP** p2p (``pp{d}.{t}/F{mb}.s{p}``)
and the **DP/ZeRO** gradient collectives (``dp.{p}.{t}/{unit}...``) join the ranks.

Invariant: per rank, the vertices of an iteration form one chain in schedule order (a
rank runs one operator at a time, as a GPU stream does); the next iteration's first
forward of a unit waits for its gradients (a ``skip_first_iteration`` edge), and each
rank's next iteration for the end of its chain.

Guide: docs/parallelism.md, "The graph".
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hcsim.calibration.machine import vertex_seconds
from hcsim.collectives.registry import for_kind
from hcsim.errors import HcsimError
from hcsim.workload.builders import _gc_paused
from hcsim.workload.graph import ALGORITHMS, Workload
from hcsim.workload.models import ops as model_ops
from hcsim.workload.models.precision import training_precision
from hcsim.workload.parallel.comms import TP_PATTERNS, activation_bytes, alltoall_bytes, p2p_bytes
from hcsim.workload.parallel.costs import Part, block_cost, check_recompute, fold, mtp_units
from hcsim.workload.parallel.costs import layer_recompute as block_mode
from hcsim.workload.parallel.experts import check_folded, dispatch_bytes, expert_coords, expert_data_parallel, folded
from hcsim.workload.parallel.gradient_sync import GradientSync
from hcsim.workload.parallel.layout import Layout, RankGrid
from hcsim.workload.parallel.layout import pipeline_split as split_layers
from hcsim.workload.parallel.memory import unit_footprint
from hcsim.workload.parallel.schedules import in_flight_by_chunk, interleaved_1f1b, schedule
from hcsim.workload.parallel.tp_overlap import overlap_plan

__all__ = ["training_graph"]

ZERO_STAGES = (0, 1, 2, 3)


def training_graph(
    spec: Any,
    layout: Layout | str,
    xpus: Sequence[str],
    *,
    microbatches: int | None = None,
    micro_batch: int = 1,
    sequence: int | None = None,
    schedule_name: str = "1f1b",
    zero: int = 0,
    sequence_parallel: bool = False,
    dp_algorithm: str = "ring",
    tp_algorithm: str = "ring",
    alltoall_algorithm: str = "direct",
    mapping: str | Sequence[str] | None = None,
    view: Any = None,
    ops: Any = None,
    name: str | None = None,
    group: int | None = None,
    precision: str | None = None,
    grad_reduce_in_fp32: bool = True,
    fp8_param_gather: bool = False,
    optimizer_dtype: str = "fp32",
    recompute: str = "none",
    operators: bool = False,
    zero3_every_microbatch: bool = False,
    overlap_param_gather: bool = False,
    calibration: Any = None,
    pipeline_split: Any = None,
    tp_comm_overlap: bool = False,
    tp_quotient: bool = False,
) -> Workload:
    """One training iteration of ``spec`` (a :class:`~hcsim.workload.models.TransformerSpec`) on ``xpus``.

    ``layout``: a :class:`Layout` or ``"dp=32,tp=8,pp=4[,ep=8]"`` (``dp`` may be left out);
    ``microbatches`` per pipeline and iteration (default ``2 x pp``, 1 without PP),
    ``micro_batch`` sequences of ``sequence`` tokens each (default ``spec.sequence``);
    ``schedule_name``: ``"1f1b"`` or ``"gpipe"``; ``zero``: 0 (plain DP allreduce), 1, 2
    or 3 (FSDP); ``dp_algorithm``/``tp_algorithm``: any registered allreduce (plug-ins and
    MSCCL-IR files too); ``mapping`` and ``view``: see :class:`RankGrid`; ``ops``: where
    the operators come from (default :mod:`hcsim.workload.models.ops`).

    ``group``: in a folded run (:mod:`.units`), ``xpus`` are the representatives of a
    system of ``group`` XPUs that ``layout`` describes: whole units (data-parallel
    replicas, whole expert-parallel groups of them) in rank order. The graph then has
    the kept replicas only, and their data-parallel collectives stand for the full
    groups (each ring keeps the full chunk and step count, as in
    :func:`hcsim.workload.builders.data_parallel`); ZeRO shards and the samples per
    iteration are the full layout's.

    Issue-24 options (docs/training-features.md): ``layout`` may carry ``cp`` (context
    parallelism: ring attention, gradients reduced over ``dp x cp``) and ``vp`` (model
    chunks per rank: Megatron's interleaved 1F1B); ``precision``: a training precision
    (:mod:`hcsim.workload.models.precision`: fp32, fp16, bf16, fp8; default the spec's,
    as before) with ``grad_reduce_in_fp32``, ``fp8_param_gather`` and ``optimizer_dtype``; ``recompute``:
    "none", "selective", "full", "full:N" or "selective:MODULES" (:mod:`.costs`); ``operators``: each compute
    vertex carries ``ops``, its ``(Operator, pass)`` pairs (one tuple shared by all copies);
    ``zero3_every_microbatch`` (with ``zero=3``): FSDP as Megatron-FSDP and PyTorch FSDP run
    it with gradient accumulation: every microbatch all-gathers each unit's parameters
    before its forward and again before its backward (prefetched one unit ahead) and
    reduce-scatters its gradients after its backward; ``overlap_param_gather`` (with ``zero``
    1 or 2, Megatron's distributed optimizer): the parameter all-gathers leave the gradient
    stream and run in the next iteration's forward, one unit ahead, once every gradient
    reduce-scatter of the stage is done (the optimizer step). ``calibration`` (a
    :class:`~hcsim.calibration.Calibration`): each compute vertex also carries ``seconds``, its
    operators timed on the calibrated machine's GPU (:func:`hcsim.calibration.machine.vertex_seconds`),
    which the engine runs instead of the roofline of ``flops`` and ``mem_bytes``.

    ``pipeline_split`` (:func:`.layout.pipeline_split`): which decoder layers each (virtual)
    stage holds. None: even when ``pp x vp`` divides the layers, else Megatron-Core's
    embedding/loss accounting when ``pp x vp`` divides ``layers + 2`` (LLaMA-3.1-405B's 126
    layers on pp=8, vp=8); "even", "account_embedding", "account_loss",
    "account_embedding_loss", or ``(first, last)`` decoder layers of the first and last
    stage. An uneven split is said in ``w.graph["pipeline_split"]`` (one line).

    ``tp_comm_overlap`` (with ``sequence_parallel``): a dense block half's TP collectives beside the GEMMs
    they overlap (Megatron-Core's ``--tp-comm-overlap``, :mod:`.tp_overlap`); with SP alone the backward's are.

    ``tp_quotient`` (a fast-path switch, off by default): the TP slices of a stage run the same
    compute, so each block's compute vertex is built once, on slice 0, and sits in every slice's
    chain (its predecessors and successors are all slices'); the collectives and p2p keep every
    slice's flows. ``w.graph["compute_stand_in"]`` maps each other slice to slice 0. Exact where
    every slice's compute takes the same time (docs/fast-paths.md, "TP quotient").
    """
    if calibration is not None:
        operators = True
    full = len(xpus) if group is None else group
    if isinstance(layout, str):
        layout = Layout.parse(layout, full)
    layout.check(full, spec, pipeline_split)
    split = split_layers(spec.layers, layout.pp, layout.vp, pipeline_split, mtp=getattr(spec, "mtp_layers", 0))
    full_dp = layout.dp
    full_layout = layout
    if full != len(xpus):
        layout, mapping, view = layout.representatives(len(xpus)), list(xpus), None
    if microbatches is None:
        microbatches = 2 * layout.pp if layout.pp > 1 else 1
    for what, value in (("microbatches", microbatches), ("micro_batch", micro_batch)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise HcsimError(f"{what} {value!r} is invalid (valid: an integer >= 1)")
    if zero not in ZERO_STAGES:
        raise HcsimError(f"ZeRO stage {zero!r} is invalid (valid: 0, 1, 2 or 3)")
    sequence = spec.sequence if sequence is None else sequence
    if isinstance(sequence, bool) or not isinstance(sequence, int) or sequence < 1:
        raise HcsimError(f"sequence {sequence!r} is invalid (valid: an integer >= 1)")
    cp = layout.cp
    if cp > 1 and sequence % (2 * cp):
        raise HcsimError(
            f"context parallelism: sequence {sequence} is not divisible by 2 x cp = {2 * cp} (valid: a sequence "
            "split into 2 x cp chunks, as Megatron's load-balanced causal split needs)"
        )
    if sequence_parallel and (sequence // cp) % layout.tp:
        raise HcsimError(f"sequence parallelism: sequence {sequence} is not divisible by tp={layout.tp}")
    if tp_comm_overlap and layout.tp > 1 and not sequence_parallel:
        raise HcsimError("tp_comm_overlap needs sequence_parallel (valid: both, as Megatron-Core requires)")
    check_recompute(recompute)
    if zero3_every_microbatch and zero != 3:
        raise HcsimError(f"zero3_every_microbatch needs zero=3 (FSDP), not zero={zero}")
    if overlap_param_gather and zero not in (1, 2):
        raise HcsimError(f"overlap_param_gather needs zero=1 or 2 (a distributed optimizer), not zero={zero}")
    check_folded(layout, sequence_parallel, zero, zero3_every_microbatch or overlap_param_gather)
    if layout.vp > 1:
        if schedule_name != "1f1b":
            raise HcsimError(
                f"schedule {schedule_name!r} has no virtual pipeline stages (valid with vp={layout.vp}: 1f1b, "
                "Megatron's interleaved schedule)"
            )
        vp = layout.vp

        def order_of(stages: int, m: int, stage: int) -> list:
            return interleaved_1f1b(stages, m, stage, vp)
    else:
        order_of = schedule(schedule_name)
    policy = None
    if precision is not None:
        policy = training_precision(
            precision, grad_reduce_in_fp32=grad_reduce_in_fp32, fp8_param_gather=fp8_param_gather,
            optimizer_dtype=optimizer_dtype,
        )  # fmt: skip
    grid = RankGrid(layout, xpus, mapping, view)
    shown = replace(full_layout, dp=full_dp)
    with _gc_paused():
        builder = _Builder(
            spec, layout, grid, ops or model_ops, microbatches, micro_batch * sequence, order_of, zero,
            sequence_parallel, dp_algorithm, tp_algorithm, alltoall_algorithm, full_dp,
            policy=policy, recompute=recompute, operators=operators, micro_batch=micro_batch, sequence=sequence,
            full_replicas=full_layout.replicas, fsdp=zero3_every_microbatch, split=split,
        )  # fmt: skip
        builder.gather_forward = overlap_param_gather
        builder.tp_quotient = bool(tp_quotient)
        builder.tp_overlap = bool(tp_comm_overlap) and layout.tp > 1
        builder.calibration = calibration  # the optimizer step's time (GradientSync); none in the ideal model
        w = builder.build(name or f"{spec.name}-{shown}")
        if calibration is not None:
            _calibrated_seconds(w, calibration, builder.precision)
    dp = full_dp
    w.graph.update(
        samples_per_iteration=dp * microbatches * micro_batch,
        batches_per_iteration=dp * microbatches,
        tokens_per_iteration=dp * microbatches * micro_batch * sequence,
        layout=str(shown),
        microbatches=microbatches,
        schedule=schedule_name,
        zero=zero,
        sequence_parallel=bool(sequence_parallel),
    )
    if policy is not None:
        w.graph["precision"] = policy.name
    if recompute != "none":
        w.graph["recompute"] = recompute
    if not split.even:
        w.graph["pipeline_split"] = split.describe()
    if full != len(xpus):  # a folded run: what the report says it stands for
        w.graph.update(folded_ranks=len(xpus), folded_xpus=full)
    if tp_quotient and layout.tp > 1:  # each TP slice's compute is slice 0's (the report reads it there)
        w.graph["compute_stand_in"] = {grid.xpu(d, p, t): grid.xpu(d, p, 0) for d in range(layout.replicas)
                                       for p in range(layout.pp) for t in range(1, layout.tp)}  # fmt: skip
    return w


def _takes(function: Any, keyword: str) -> bool:
    """Whether ``function`` takes ``keyword`` (an operator provider written before issue 24 may not)."""
    try:
        return keyword in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def _calibrated_seconds(w: Workload, calibration: Any, precision: str) -> None:
    """Give every compute vertex its calibrated ``seconds`` (computed once per shared ``ops`` tuple)."""
    known: dict[tuple[int, str], float] = {}
    for d in w._node.values():  # NetworkX's node dict: every vertex once, no view objects
        ops = d.get("ops")
        if ops is None or "seconds" in d:  # a TP-overlap piece was timed when it was cut (.tp_overlap)
            continue
        p = d.get("compute_precision", precision)
        key = (id(ops), p)
        t = known.get(key)
        if t is None:
            t = known[key] = vertex_seconds(ops, p, calibration)
        d["seconds"] = t


class _Builder(GradientSync):
    """Walks every rank's schedule once, appending vertices and edges to flat lists.

    The data-parallel gradient and parameter collectives it adds last are :class:`GradientSync`'s.
    """

    # fmt: off
    def __init__(self, spec, layout, grid, ops, m, tokens, order_of, zero, sp,  # noqa: ANN001, ANN204
                 dp_alg, tp_alg, a2a_alg, full_dp, *, policy=None, recompute="none",  # noqa: ANN001
                 operators=False, micro_batch=1, sequence=None, full_replicas=None, fsdp=False,  # noqa: ANN001
                 split=None):  # noqa: ANN001
        # fmt: on
        self.spec, self.layout, self.grid, self.m = spec, layout, grid, m
        cp, vp = layout.cp, layout.vp
        self.tokens = tokens = tokens // cp  # per rank: context parallelism splits every sequence cp ways
        self.full_dp = full_dp  # the replicas the graph's stand for (layout.dp unless folded)
        self.full_replicas = full_dp * cp if full_replicas is None else full_replicas  # ... and their CP slices
        self.folded = folded(layout)  # etp < tp: the expert ranks regrouped (.experts)
        self.expert_replicas = expert_data_parallel(layout, self.full_replicas)  # full_replicas // ep if not folded
        self.zero, self.sp = zero, sp
        self.algorithms = {"dp": dp_alg, "tp": tp_alg, "alltoall": a2a_alg}
        self.policy, self.operators, self.recompute = policy, operators, recompute
        self.precision = spec.precision if policy is None else policy.engine
        self.bpv = spec.bytes_per_value if policy is None else policy.value_bytes
        tp, ep = layout.tp, layout.ep
        if split is None:
            split = split_layers(spec.layers, layout.pp, vp, mtp=getattr(spec, "mtp_layers", 0))
        self.orders = [order_of(layout.pp, m, p) for p in range(layout.pp)]
        if vp == 1:
            self.orders = [[(pas, mb, 0) for pas, mb in order] for order in self.orders]
        # keyword arguments beyond the operators' historical ones, only when they change something
        extra: dict[str, Any] = {}
        if policy is not None:
            extra["precision"] = policy
        seq = spec.sequence if sequence is None else sequence
        if cp > 1 or (seq != min(spec.sequence, tokens) and _takes(ops.block_operators, "context")):
            extra.update(context=seq, sequences=micro_batch)  # the attention spans the whole sequence
        # sequence parallelism: norms, residual adds (and latent attention's down projections) on the SP shard
        block_extra = {**extra, "sequence_parallel": True} if sp and layout.tp > 1 else extra
        block_extra = {**block_extra, "etp": layout.expert_tp} if self.folded else block_extra
        side_extra = {"precision": policy} if policy is not None else {}
        # units of each stage and chunk: (name, UnitCost | Part, kind) with kind "block", "embedding" or "head";
        # chunk c of stage p holds the layers of virtual stage c*pp + p
        self.chunks: list[list[list[tuple[str, Any, str]]]] = []
        self.unit_recompute: dict[str, str] = {}  # a block's own mode (recompute "full:N": the chunk's first N)
        for p in range(layout.pp):
            stage: list[list[tuple[str, Any, str]]] = []
            for c in range(vp):
                units: list[tuple[str, Any, str]] = []
                virtual = c * layout.pp + p
                if virtual == 0:
                    units.append(("emb", fold(ops.embedding_operators(spec, tokens, tp=tp, **side_extra)), "embedding"))
                for index, layer in enumerate(split.layers(p, c)):
                    block = ops.block_operators(spec, tokens, tp=tp, ep=ep, layer=layer, phase="train", **block_extra)
                    mode = self.unit_recompute[f"L{layer}"] = block_mode(recompute, index)
                    units.append((f"L{layer}", block_cost(block, mode), "block"))
                if virtual == layout.pp * vp - 1:  # the MTP modules (DeepSeek-V3), then the LM head
                    units += mtp_units(spec, tokens, tp=tp, ep=ep, recompute=recompute, **block_extra)
                    self.unit_recompute.update({u: block_mode(recompute, 0) for u, _, k in units if u[:3] == "MTP"})
                    units.append(("head", fold(ops.head_operators(spec, tokens, tp=tp, **side_extra)), "head"))
                stage.append(units)
            self.chunks.append(stage)
        self.units: list[list[tuple[str, Any, str]]] = [[u for units in stage for u in units] for stage in self.chunks]
        self.act = activation_bytes(tokens, spec.hidden, self.bpv)
        self.p2p = max(1.0, p2p_bytes(tokens, spec.hidden, self.bpv, tp, sp))
        self.a2a = alltoall_bytes(tokens, max(1, getattr(spec, "top_k", 0)), spec.hidden, self.bpv)
        if self.folded:  # each rank dispatches its sequence shard; the expert-TP group gathers (.experts)
            self.a2a, self.etp_bytes = dispatch_bytes(layout, tokens, spec, self.bpv)
        if cp > 1:  # the KV of the whole sequence, this TP rank's K and V widths (ring attention's allgather)
            self.cp_bytes = float(tokens * cp * model_ops.kv_values_per_rank(spec, tp) * self.bpv)
        self.nodes: dict[str, dict] = {}
        self.edges: list[tuple[str, str, bool]] = []
        self.checked: set[str] = set()
        # per (d, p, t): first vertex of (pass, mb) and of (unit, pass at mb 0); last of (pass, mb)
        self.first: dict[tuple, str] = {}
        self.last: dict[tuple, str] = {}
        self.unit_last_bwd: dict[tuple, str] = {}
        self.fsdp = fsdp  # ZeRO-3 gathers and reduce-scatters every microbatch
        self.tp_overlap, self.calibration, self._plans = False, None, {}  # TP overlap pieces (.tp_overlap)
        self.gather_forward = False  # ZeRO-1/2 parameter all-gathers in the next forward (overlap_param_gather)
        self.tp_quotient = False  # one compute vertex per TP group, on slice 0, in every slice's chain
        self.uses: dict[tuple, list[tuple[str, str, int, str]]] = {}  # (d, p, t) -> (unit, pass, mb, first vertex)
        self.bwd_last: dict[tuple, str] = {}  # (d, p, t, unit, mb) -> the unit's last backward vertex
        self._use_index: dict[tuple, dict] = {}

    # ---------------------------------------------------------------- vertices
    def _comm(self, name: str, nbytes: float, kind: str, scope: list[str], algorithm: str | None, **attrs) -> bool:
        """Add a collective once (it is shared by its ranks); True if it was new."""
        if name in self.nodes:
            return False
        d = {"type": "comm", "bytes": float(nbytes), "kind": kind, "scope": scope, "is_start": False, **attrs}
        d["algorithm"] = algorithm or ("direct" if kind == "p2p" else None)
        if d["algorithm"] is None:
            d["algorithm"] = ALGORITHMS[kind][0]
        key = (kind, d["algorithm"], len(scope))
        if key not in self.checked:  # one check per kind, algorithm and group size
            self.checked.add(key)
            Workload._check_vertex(name, d)
        self.nodes[name] = d
        return True

    # ---------------------------------------------------------------- build
    def build(self, name: str) -> Workload:
        lay = self.layout
        for d in range(lay.replicas):
            for p in range(lay.pp):
                self._stage(d, p)
        self._pipeline_edges()
        self._gradient_sync()
        w = Workload(name=name, ranks=[self.grid.xpu(d, p, t) for d in range(lay.replicas) for p in range(lay.pp)
                                       for t in range(lay.tp)])  # fmt: skip
        # Straight into NetworkX's adjacency dicts (as DiGraph.add_*_from would fill them): the
        # 1024-XPU LLaMA-3-70B graph has 0.76M vertices and 1.4M edges, and the checks and
        # attribute merging of add_*_from took half of the build.
        node, succ, pred = w._node, w._succ, w._pred
        for n, d in self.nodes.items():
            node[n], succ[n], pred[n] = d, {}, {}
        needs: set[str] = set()  # vertices with a same-iteration predecessor
        for u, v, skip in self.edges:
            e = {"skip_first_iteration": skip}
            succ[u][v] = e
            pred[v][u] = e
            if not skip:
                needs.add(v)
        for n, d in node.items():  # a vertex with no same-iteration predecessor starts the iteration
            if n not in needs:
                d["is_start"] = True
        return w

    def _stage(self, d: int, p: int) -> None:
        lay, grid = self.layout, self.grid
        ranks = grid.tp_group(d, p)
        order = self.orders[p]
        kept_of = in_flight_by_chunk(order, lay.vp)
        chunk_of = {unit: c for c, units in enumerate(self.chunks[p]) for unit, _, _ in units}
        units = self.units[p]
        chains: list[list[str]] = [[] for _ in ranks]  # each rank's vertices in the order it runs them
        side: list[list[str]] = [[] for _ in ranks]  # vertices beside the chain the next chain vertex waits for
        last_compute: list[str] = [""] * lay.tp
        check = d == 0
        placed: set[str] = set()
        edges = self.edges
        policy, operators = self.policy, self.operators
        gemm_precision = policy is not None and not policy.legacy

        def append(t: int, vertex: str) -> None:
            chain = chains[t]
            if chain:
                edges.append((chain[-1], vertex, False))
            chain.append(vertex)
            if side[t]:
                edges.extend((u, vertex, False) for u in side[t])
                side[t].clear()

        link = append
        nodes, precision = self.nodes, self.precision
        quotient = self.tp_quotient and lay.tp > 1

        def step_compute(tag: str, part: Part, backward: bool, unit: str, phase: str, mb: int, piece=None) -> None:  # noqa: ANN001
            if piece is not None:  # a piece of a half cut for TP overlap (.tp_overlap)
                flops, mem = piece.flops, piece.mem
            else:
                flops = part.bwd_flops if backward else part.fwd_flops
                mem = part.bwd_bytes if backward else part.fwd_bytes
            if backward and part.recompute_flops and piece is None:
                flops += part.recompute_flops
                mem += part.recompute_bytes
            for t, xpu in enumerate(ranks[:1] if quotient else ranks):
                vertex = f"{xpu}/{tag}"
                block = f"{xpu}/{unit}"
                footprint = 0.0
                if block not in placed:  # the unit's data block is counted once, on its first vertex
                    placed.add(block)
                    footprint = kept[unit][0] + kept[unit][1] * kept_of[chunk_of[unit]]
                nodes[vertex] = d = {
                    "type": "compute", "flops": flops, "location": xpu, "precision": precision, "mem_bytes": mem,
                    "footprint": footprint, "is_start": False, "data": block, "unit": unit, "phase": phase, "mb": mb,
                }  # fmt: skip
                if gemm_precision:
                    d["compute_precision"] = part.precision or policy.name
                if operators:
                    d["ops"] = (part.bwd_ops if backward else part.fwd_ops) if piece is None else piece.ops
                if piece is not None and piece.seconds is not None:
                    d["seconds"] = piece.seconds
                if check and t == 0:
                    Workload._check_vertex(vertex, d)
                for u in range(lay.tp) if quotient else (t,):  # TP quotient: slice 0's vertex in every chain
                    append(u, vertex)
                    last_compute[u] = vertex

        def step_tp(tag: str, kind: str | None, fraction: float = 1.0, beside=None, part=None) -> None:  # noqa: ANN001
            if kind is None or lay.tp == 1:
                return
            vertex = f"tp{d}.{p}/{tag}"
            alg = self.algorithms["tp"] if kind == "allreduce" else for_kind(kind, self.algorithms["tp"])
            fp8 = kind == "allgather" and part and gemm_precision and (part.precision or policy.name) == "fp8"
            self._comm(vertex, self.act * fraction / (self.bpv if fp8 else 1), kind, ranks, alg, phase="tp")  # TE: FP8
            for t in range(lay.tp):
                if beside is None:
                    link(t, vertex)
                else:  # after the chain's last vertex, beside the next one (which the one after waits for)
                    edges.append((chains[t][-1], vertex, False))
                    beside.append((t, vertex))

        def step_overlapped(here: str, half: str, part: Part, backward: bool, unit: str, phase: str, mb: int) -> bool:
            """The half as TP-overlap pieces (:func:`.tp_overlap.overlap_plan`); False if it has none."""
            if (unit, half, backward) not in self._plans:
                prec = part.precision or policy.name if gemm_precision else self.precision
                self._plans[unit, half, backward] = overlap_plan(part, backward, lay.tp, prec, self.calibration,
                                                                 userbuffers=self.tp_overlap)  # fmt: skip
            plan = self._plans[unit, half, backward]
            if plan is None:
                return False
            beside: list = []
            for step in plan:
                if step.piece is None:  # beside only after a vertex of this pass (not before the pipeline's p2p)
                    inside = step.beside and all(len(c) > pass_start[t] for t, c in enumerate(chains))
                    step_tp(f"{here}.{half}.{step.name}", step.kind, step.fraction, beside if inside else None, part)
                    continue
                tag = f"{here}.{half}.{step.piece.suffix}"
                if half == "attn" and step.piece.suffix == "mid":  # the core: CP's ring exchange beside it
                    step_attention(tag, part, backward, unit, phase, mb, step.piece)
                else:
                    step_compute(tag, part, backward, unit, phase, mb, step.piece)
                for t, vertex in beside:
                    side[t].append(vertex)
                beside.clear()
            return True

        def step_ep(tag: str, kind: str = "alltoall") -> None:  # or (folded, 1 < etp < tp) the expert-TP ones
            a2a = kind == "alltoall"
            if (lay.ep if a2a else lay.expert_tp) == 1:
                return
            for t in range(lay.tp):
                et, e, ed = expert_coords(lay, d, t)  # (t, d % ep, d // ep) unless folded
                if a2a:
                    vertex = f"ep{ed}.{p}.{et}/{tag}"
                    self._comm(vertex, self.a2a, kind, grid.ep_group(d, p, t), self.algorithms["alltoall"],
                               phase="ep")  # fmt: skip
                else:
                    vertex = f"etp{ed}.{e}.{p}/{tag}"
                    self._comm(vertex, self.etp_bytes, kind, grid.expert_tp_group(d, p, t), None, phase="ep")
                link(t, vertex)

        def step_attention(tag: str, part: Part, backward: bool, unit: str, phase: str, mb: int, piece=None) -> None:  # noqa: ANN001
            """The attention part; with CP, ring attention's KV exchange beside it (overlapped with its compute)."""
            if lay.cp == 1:
                step_compute(tag, part, backward, unit, phase, mb, piece)
                return
            before = [c[-1] if c else None for c in chains]
            step_compute(tag, part, backward, unit, phase, mb, piece)
            kinds = ("allgather", "reduce_scatter") if backward else ("allgather",)  # bwd: KV again, then dKV
            for t in range(lay.tp):
                prev = before[t]
                for kind in kinds:
                    vertex = f"cp{d // lay.cp}.{p}.{t}/{tag}.{kind}"
                    self._comm(vertex, self.cp_bytes, kind, grid.cp_group(d, p, t), None, phase="cp")
                    if prev is not None:
                        edges.append((prev, vertex, False))
                    prev = vertex
                side[t].append(prev)

        kept = {unit: unit_footprint(  # what a rank keeps of each unit: (state, activations of one microbatch)
            cost, policy, bpv=self.bpv, zero=self.zero, replicas=self.full_replicas, expert_shards=self.expert_replicas,
            ep=lay.ep, tp=lay.tp, sequence_parallel=self.sp, recompute=self.unit_recompute.get(unit, self.recompute),
        ) for unit, cost, _ in units}  # fmt: skip

        pre, post = TP_PATTERNS[self.sp]
        for pas, mb, chunk in order:
            backward = pas == "B"
            pass_start = [len(c) for c in chains]
            here_units = self.chunks[p][chunk]
            for unit, cost, kind in reversed(here_units) if backward else here_units:
                here = f"{pas}{mb}.{unit}"
                attrs = {"phase": pas, "mb": mb}
                unit_start = [len(c) for c in chains]
                if kind == "embedding":  # its output is reduced (forward); with SP gathered back (backward)
                    if backward:
                        step_tp(f"{here}.pre", pre)
                    step_compute(here, cost, backward, unit, **attrs)
                    if not backward:
                        step_tp(f"{here}.post", post)
                elif kind == "head":
                    if not backward:
                        step_tp(f"{here}.pre", pre)
                    step_compute(here, cost, backward, unit, **attrs)
                    if backward:
                        step_tp(f"{here}.post", post)
                else:
                    halves = [("attn", cost.attention), ("mlp", cost.mlp)]
                    for half, part in reversed(halves) if backward else halves:
                        moe = half == "mlp" and cost.experts is not None
                        cut = self.tp_overlap or (self.sp and backward)  # SP's backward: collectives beside GEMMs
                        if cut and not moe and step_overlapped(here, half, part, backward, unit, **attrs):
                            continue
                        tp_around = not (moe and self.folded and not self.spec.shared_intermediate)
                        if tp_around:  # folded: the SP shard is dispatched (a shared expert gathers it)
                            step_tp(f"{here}.{half}.pre", pre, part=None if moe else part)
                        if moe:
                            moe = [("mlp", cost.mlp), ("dispatch", "alltoall"), ("gather", "allgather"),
                                   ("experts", cost.experts), ("scatter", "reduce_scatter"), ("combine", "alltoall")]
                            for sub, subpart in reversed(moe) if backward else moe:
                                if isinstance(subpart, str):
                                    if self.folded or subpart == "alltoall":
                                        step_ep(f"{here}.{sub}", subpart)
                                else:
                                    step_compute(f"{here}.{sub}", subpart, backward, unit, **attrs)
                        elif half == "attn":
                            step_attention(f"{here}.{half}", part, backward, unit, **attrs)
                        else:
                            step_compute(f"{here}.{half}", part, backward, unit, **attrs)
                        if tp_around:
                            step_tp(f"{here}.{half}.post", post)
                for t in range(lay.tp):
                    self.first.setdefault((d, p, t, unit, pas), chains[t][unit_start[t]])
                    if backward and mb == self.m - 1:
                        self.unit_last_bwd[(d, p, t, unit)] = last_compute[t]
                    if self.fsdp:
                        self.uses.setdefault((d, p, t), []).append((unit, pas, mb, chains[t][unit_start[t]]))
                        if backward:
                            self.bwd_last[(d, p, t, unit, mb)] = last_compute[t]
            for t in range(lay.tp):
                self.first[(d, p, t, pas, mb, chunk)] = chains[t][pass_start[t]]
                self.last[(d, p, t, pas, mb, chunk)] = chains[t][-1]
        for t in range(lay.tp):  # the rank's next iteration starts when this one has ended
            edges.append((chains[t][-1], chains[t][0], True))
            edges.extend((u, chains[t][0], True) for u in side[t])  # a last exchange beside the chain (CP)

    def _pipeline_edges(self) -> None:
        """Activations forward and their gradients backward, virtual stage to virtual stage, per microbatch.

        Virtual stage ``c*pp + p`` is chunk ``c`` of stage ``p``; without interleaving (``vp = 1``) it is
        stage ``p``. With ``vp > 1`` the last stage's chunk ``c`` sends to the first stage's chunk ``c+1``.
        """
        lay, grid = self.layout, self.grid
        stages = lay.pp * lay.vp
        for d in range(lay.replicas):
            for v in range(stages - 1):
                p, c, q, c2 = v % lay.pp, v // lay.pp, (v + 1) % lay.pp, (v + 1) // lay.pp
                for t in range(lay.tp):
                    a, b = grid.xpu(d, p, t), grid.xpu(d, q, t)
                    for mb in range(self.m):
                        for pas, src, dst, sv, dv, s_at, d_at in (
                            ("F", a, b, v, v + 1, (p, c), (q, c2)), ("B", b, a, v + 1, v, (q, c2), (p, c))
                        ):  # fmt: skip
                            vertex = f"pp{d}.{t}/{pas}{mb}.s{sv}-s{dv}"
                            self._comm(vertex, self.p2p, "p2p", [src, dst], "direct", phase="pp")
                            self.edges.append((self.last[(d, s_at[0], t, pas, mb, s_at[1])], vertex, False))
                            self.edges.append((vertex, self.first[(d, d_at[0], t, pas, mb, d_at[1])], False))
