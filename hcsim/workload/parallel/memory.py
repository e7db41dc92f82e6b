"""Whether a training layout fits in device memory: per-rank bytes, and a one-line error when it does not.

:func:`training_memory` adds up, per pipeline stage (every TP, CP and DP rank of a stage
holds the same), what one rank of Megatron-Core + Transformer Engine (TE) keeps during
an iteration: the units' weights, gradients and optimizer state (by precision and ZeRO
stage, :mod:`hcsim.workload.models.precision`; the fp8 weight copies on TE's linear
layers only) and the activations each operator saves for its backward, times the
microbatches the schedule keeps in flight per model chunk (``vp``), after recomputation;
the optimizer step's fp32 gradient copy is held instead of the activations, never with them
(:attr:`StageMemory.total`). Every byte count cites its source (:func:`kept_activation_bytes`;
docs/training-features.md, "Memory in HBM"). The layers of each stage follow the pipeline
split (:func:`hcsim.workload.parallel.layout.pipeline_split`). :func:`check_fits` turns the
largest into a one-line :class:`~hcsim.errors.HcsimError` naming the rank, the need and
the capacity, unless a spill is allowed. Pure functions: the engine's placement decides
what a spill costs. Not counted (no public per-byte source): the CUDA context, NCCL and
TE workspaces, allocator fragmentation, dropout masks (the presets have no dropout).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hcsim.errors import HcsimError
from hcsim.workload.models import ops as model_ops
from hcsim.workload.models.precision import training_precision, zero_shards
from hcsim.workload.parallel.costs import (
    Part,
    UnitCost,
    block_cost,
    check_recompute,
    fold,
    layer_recompute,
    mtp_units,
    recompute_modules,
    recomputed_kept,
    state_bytes,
)
from hcsim.workload.parallel.experts import expert_data_parallel, folded
from hcsim.workload.parallel.layout import Layout, pipeline_split
from hcsim.workload.parallel.schedules import in_flight_by_chunk, interleaved_1f1b, schedule

__all__ = [
    "COLUMN_PARALLEL",
    "StageMemory",
    "check_fits",
    "kept_activation_bytes",
    "step_grad_memory",
    "te_linear",
    "training_memory",
    "unit_footprint",
    "unit_memory",
    "workload_memory",
]

#: column-parallel linear layers: with sequence parallelism their input arrives sequence-sharded and is
#: all-gathered for the GEMM; only the local shard is saved and the all-gather is redone in the backward
#: (Korthikanti et al. 2022, arXiv 2205.05198, §4.2.2 and Table 2: 34·sbh/t with SP + selective;
#: Megatron-LM megatron/core/tensor_parallel/layers.py, LinearWithGradAccumulationAndAsyncCommunication:
#: ``ctx.save_for_backward(input, weight)`` of the local input, all-gathered again in ``backward``;
#: TransformerEngine transformer_engine/pytorch/module/linear.py: "inputmat = inp  # Input tensor to
#: save for backward (maybe sharded)")
COLUMN_PARALLEL = ("attn.qkv", "mlp.up", "moe.shared.up", "head.lm", "attn.q", "attn.q_up", "attn.kv_up", "mtp.eh_proj")


@dataclass(frozen=True)
class StageMemory:
    """Bytes one rank of pipeline stage ``stage`` holds during an iteration."""

    stage: int
    weights: float  # the compute copy (+ fp8 weight copies)
    grads: float
    optimizer: float
    activations: float  # kept for the backward pass, at the schedule's peak
    layers: int = 0  # decoder layers the stage holds (over its model chunks)
    # held during the optimizer step only (the fp32 copy of the main-gradient shard), when no activations are
    step_only: float = 0.0

    @property
    def resident(self) -> float:
        """What is held through the forward-backward (the graph's footprints on one rank of the stage)."""
        return self.weights + self.grads + self.optimizer + self.activations

    @property
    def total(self) -> float:
        """The peak: the state plus the larger of the forward-backward's activations and the step's transients."""
        return self.weights + self.grads + self.optimizer + max(self.activations, self.step_only)


def te_linear(op: Any) -> bool:
    """Whether ``op`` is one of Transformer Engine's linear layers in Megatron-Core's GPT layer spec.

    ``linear_qkv``/``linear_fc1`` (TELayerNormColumnParallelLinear), ``linear_proj``/``linear_fc2``
    (TERowParallelLinear) and the grouped experts (Megatron-LM megatron/core/models/gpt/gpt_layer_specs.py);
    not the output layer (``tensor_parallel.ColumnParallelLinear``, gpt_model.py), the router, the
    embedding or the norms.
    """
    return op.kind in ("linear", "experts") and not op.name.startswith("head.")


def kept_activation_bytes(op: Any, *, tp: int, sequence_parallel: bool, policy: Any) -> float:
    """Bytes ``op`` keeps for its backward on one rank and microbatch, as Megatron-Core + TE keep them.

    From the operator's saved input (:func:`hcsim.workload.models.ops.block_operators`):

    * **sequence parallelism** (``tp > 1``): norms and column-parallel linear layers keep the
      sequence shard, ``1/tp`` (:data:`COLUMN_PARALLEL`; Korthikanti et al. 2022 §4.2.2).
    * **fp8** (TE linear layers, :func:`te_linear`): the input is saved quantized, one of its
      row-/column-wise copies, 1 byte per value (TE linear.py: ``inputmat = input_quantizer(inputmat)``,
      then "Discard row-wise data since it is not needed in backward pass"; the same in
      layernorm_linear.py for the norm's output). The grouped experts keep their count.
    * **the output projection's input** is the attention core's output, which the core
      (FlashAttention / cuDNN fused attention) already saves with Q, K, V and the softmax
      statistics (TE attention/dot_product_attention/backends.py: ``save_for_backward(*fp8_tensors,
      *f16_tensors, ..., *aux_ctx_tensors)`` with ``out``); at 16 bits TE's Linear keeps that same
      tensor (``cast_if_needed`` makes no copy), so it counts once; under fp8 its quantized copy (1 B) is extra.
    """
    kept = float(op.activation_bytes)
    if not kept:
        return 0.0
    if sequence_parallel and tp > 1 and (op.kind == "norm" or op.name in COLUMN_PARALLEL):
        kept /= tp
    fp8 = policy is not None and policy.operand_bytes < policy.value_bytes
    if fp8 and op.kind == "linear" and te_linear(op):
        kept *= policy.operand_bytes / policy.value_bytes
    elif op.name == "attn.out":
        kept = 0.0  # the attention core's saved output, the same tensor
    return kept


def training_memory(
    spec: Any,
    layout: Layout | str,
    *,
    micro_batch: int = 1,
    sequence: int | None = None,
    microbatches: int | None = None,
    schedule_name: str = "1f1b",
    zero: int = 0,
    precision: str | None = None,
    recompute: str = "none",
    sequence_parallel: bool = False,
    xpus: int | None = None,
    grad_reduce_in_fp32: bool = True,
    fp8_param_gather: bool = False,
    pipeline_split: Any = None,
    optimizer_dtype: str = "fp32",
) -> list[StageMemory]:
    """Per pipeline stage, what one of its ranks holds (see the module docstring); ``xpus`` fills a missing dp.

    ``grad_reduce_in_fp32``, ``fp8_param_gather``, ``optimizer_dtype``: as
    :func:`~hcsim.workload.models.precision.training_precision` (the main-gradient buffer's width follows
    the first); ``recompute``: as :func:`~hcsim.workload.parallel.costs.block_cost`; ``pipeline_split``: as
    :func:`~hcsim.workload.parallel.training_graph`.
    """
    check_recompute(recompute)
    if isinstance(layout, str):
        layout = Layout.parse(layout, xpus)
    layout.check(layout.ranks, spec, pipeline_split)
    split = _split(spec.layers, layout, pipeline_split, getattr(spec, "mtp_layers", 0))
    name = precision or spec.precision  # the spec's own: as the graph's footprints
    policy = training_precision(
        name,
        grad_reduce_in_fp32=grad_reduce_in_fp32,
        fp8_param_gather=fp8_param_gather,
        optimizer_dtype=optimizer_dtype,
    )
    seq = spec.sequence if sequence is None else sequence
    m = microbatches if microbatches is not None else (2 * layout.pp if layout.pp > 1 else 1)
    tp, pp, cp, vp, ep = layout.tp, layout.pp, layout.cp, layout.vp, layout.ep
    tokens = micro_batch * seq // cp  # context parallelism: each rank holds 1/cp of every sequence
    kw: dict[str, Any] = {"precision": policy} if precision is not None else {}
    block_kw = dict(kw)
    if cp > 1 or seq != min(spec.sequence, micro_batch * seq):
        block_kw.update(context=seq, sequences=micro_batch)
    if sequence_parallel and getattr(spec, "is_mla", False):  # latent attention's down projections: builder.py
        block_kw["sequence_parallel"] = True
    # the distributed optimizer shards over dp x cp (Megatron-Core's dp_cp group: Layout.replicas)
    where = {"zero": zero, "replicas": layout.replicas, "ep": ep, "tp": tp, "sequence_parallel": sequence_parallel}
    if folded(layout):  # etp < tp: the experts see the etp group's shards, their state shards over edp (.experts)
        block_kw["etp"] = layout.expert_tp
        where["expert_shards"] = expert_data_parallel(layout)
    out: list[StageMemory] = []
    for p in range(pp):
        if vp > 1:
            order: Sequence[Any] = interleaved_1f1b(pp, m, p, vp)
        else:
            order = [(k, i, 0) for k, i in schedule(schedule_name)(pp, m, p)]
        totals = [0.0, 0.0, 0.0, 0.0]
        step_only = 0.0
        kept_of = in_flight_by_chunk(list(order), vp)
        for c in range(vp):
            virtual = c * pp + p
            units: list[tuple[Any, str]] = []  # as the graph folds them (builder.py), with each one's mode
            if virtual == 0:
                units.append((fold(model_ops.embedding_operators(spec, tokens, tp=tp, **kw)), recompute))
            for index, layer in enumerate(split.layers(p, c)):
                block = model_ops.block_operators(spec, tokens, tp=tp, ep=ep, layer=layer, phase="train", **block_kw)
                mode = layer_recompute(recompute, index)
                units.append((block_cost(block, mode), mode))
            if virtual == pp * vp - 1:  # the MTP modules (DeepSeek-V3), then the LM head, as builder.py
                mtp = mtp_units(spec, tokens, tp=tp, ep=ep, recompute=recompute, **block_kw)
                units += [
                    (cost, layer_recompute(recompute, 0) if kind == "block" else recompute) for _, cost, kind in mtp
                ]
                units.append((fold(model_ops.head_operators(spec, tokens, tp=tp, **kw)), recompute))
            for unit, mode in units:
                w, g, o, a = unit_memory(unit, policy, recompute=mode, **where)
                for i, v in enumerate((w, g, o, a * kept_of[c])):
                    totals[i] += v
                step_only += step_grad_memory(
                    unit, policy, zero=zero, replicas=layout.replicas, ep=ep, expert_shards=where.get("expert_shards")
                )
        # the fp32 gradient shard of the step is not kept with the rest of the optimizer state
        totals[2] -= step_only
        out.append(StageMemory(p, *totals, layers=split.stage_layers(p), step_only=step_only))
    return out


def unit_memory(
    unit: Any,
    policy: Any,
    *,
    zero: int,
    replicas: int,
    ep: int = 1,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
    expert_shards: int | None = None,
) -> tuple[float, float, float, float]:
    """(weights, gradients, optimizer state, activations of one microbatch) of one unit on one rank.

    ``unit``: a block's :class:`~hcsim.workload.parallel.costs.UnitCost` (after ``recompute``) or the
    embedding's / head's :class:`~hcsim.workload.parallel.costs.Part`. Under bf16 and fp8 (Megatron-Core +
    TE) each operator's parameters and kept bytes are counted as :func:`te_linear` and
    :func:`kept_activation_bytes` say; under fp16 and fp32 (hcsim's accounting before issue 24) every
    parameter has the policy's bytes and the part's activations are kept, the norms' split ``tp``
    ways with sequence parallelism. ``expert_shards``: the expert-DP size the experts' state is
    sharded over (default ``replicas // ep``; with ``etp < tp``: :func:`.experts.expert_data_parallel`).
    """
    parts = [unit] if isinstance(unit, Part) else [p for p in (unit.attention, unit.mlp, unit.experts) if p]
    ops = [o for part in parts for o, _ in part.fwd_ops]
    sp = sequence_parallel and tp > 1
    megatron = not policy.legacy
    weights = grads = optimizer = 0.0
    experts = replicas // ep if expert_shards is None else expert_shards
    for o in ops:
        shards = experts if o.kind == "experts" else replicas
        w, g, s = policy.state_split(zero, shards, te_linear=te_linear(o) if megatron else True)
        weights += o.params * w
        grads += o.params * g
        optimizer += o.params * s
    if megatron:
        kept = [kept_activation_bytes(o, tp=tp, sequence_parallel=sequence_parallel, policy=policy) for o in ops]
    elif isinstance(unit, Part):
        kept = [o.activation_bytes for o in ops]
    else:
        kept = [o.activation_bytes / (tp if sp and o.kind == "norm" else 1) for o in ops]
    modules = recompute_modules(recompute)
    if modules and not isinstance(unit, Part):  # selective:MODULES (costs.recomputed_kept)
        kept = [recomputed_kept(o, k, modules) for o, k in zip(ops, kept, strict=True)]
    if recompute == "full" and not isinstance(unit, Part):
        activations = kept[0] if kept else 0.0  # only the block's input stays (norm1's saved input)
    else:
        activations = float(sum(kept))  # selective: a FlashAttention core keeps no score matrix to drop
    return weights, grads, optimizer, activations


def unit_footprint(
    cost: Any,
    policy: Any,
    *,
    bpv: float,
    zero: int,
    replicas: int,
    expert_shards: int,
    ep: int,
    tp: int,
    sequence_parallel: bool,
    recompute: str,
) -> tuple[float, float]:
    """(state, activations of one microbatch) one rank keeps of a unit: the training graph's footprints.

    ``policy``: a training precision, or None (the spec's own: hcsim's historical fp16/fp32
    accounting). Under bf16/fp8 (Megatron-Core + TE) :func:`unit_memory`, less the optimizer
    step's fp32 gradient copy, which is not resident through the forward-backward
    (:func:`step_grad_memory`); else the parameters' state by :func:`.costs.state_bytes` or the
    policy's bytes per parameter, the experts' sharded over ``expert_shards``.
    """
    activation = cost.activation_bytes
    if policy is not None and not policy.legacy:
        w, g, o, a = unit_memory(
            cost, policy, zero=zero, replicas=replicas, ep=ep, tp=tp, sequence_parallel=sequence_parallel,
            recompute=recompute, expert_shards=expert_shards,
        )  # fmt: skip
        step = step_grad_memory(cost, policy, zero=zero, replicas=replicas, ep=ep, expert_shards=expert_shards)
        return w + g + o - step, a
    if policy is None:
        state = state_bytes(cost.params, bpv, zero, replicas)
        if isinstance(cost, UnitCost) and cost.expert_params:
            state += state_bytes(cost.expert_params, bpv, zero, expert_shards)
    else:
        state = cost.params * policy.state_bytes_per_param(zero, replicas)
        if isinstance(cost, UnitCost) and cost.expert_params:
            per = policy.state_bytes_per_param(zero, expert_shards)
            state += cost.expert_params * per
    return state, activation


def step_grad_memory(
    unit: Any, policy: Any, *, zero: int, replicas: int, ep: int = 1, expert_shards: int | None = None
) -> float:
    """Bytes of the fp32 main-gradient shard copy one rank makes at the optimizer step for ``unit``'s parameters.

    ``policy.step_grad_bytes`` per parameter (4 with 16-bit main gradients under Megatron-Core, else 0;
    :mod:`hcsim.workload.models.precision`), sharded as the optimizer state is; freed by the next
    iteration's ``zero_grad``, so never held together with activations (:attr:`StageMemory.total`).
    """
    from hcsim.workload.parallel.costs import Part

    if not policy.step_grad_bytes:
        return 0.0
    parts = [unit] if isinstance(unit, Part) else [p for p in (unit.attention, unit.mlp, unit.experts) if p]
    total = 0.0
    experts = replicas // ep if expert_shards is None else expert_shards
    for part in parts:
        for o, _ in part.fwd_ops:
            shards = experts if o.kind == "experts" else replicas
            total += o.params * zero_shards(0.0, 0.0, policy.step_grad_bytes, zero, shards)[2]
    return total


def _split(layers: int, layout: Layout, split: Any, mtp: int = 0) -> Any:
    return pipeline_split(layers, layout.pp, layout.vp, split, mtp=mtp)


def workload_memory(workload: Any, xpus: int) -> list[StageMemory]:
    """:func:`training_memory` of a training workload (its spec, layout on ``xpus`` XPUs and options)."""
    o = workload.options
    return training_memory(
        workload.spec, workload.full_layout(xpus), micro_batch=o["micro_batch"], sequence=o["sequence"],
        microbatches=o["microbatches"], schedule_name=o["schedule_name"], zero=o["zero"],
        precision=o.get("precision"), recompute=o.get("recompute", "none"),
        sequence_parallel=o["sequence_parallel"], xpus=xpus,
        grad_reduce_in_fp32=o.get("grad_reduce_in_fp32", True), pipeline_split=o.get("pipeline_split"),
        fp8_param_gather=o.get("fp8_param_gather", False), optimizer_dtype=o.get("optimizer_dtype", "fp32"),
    )  # fmt: skip


def check_fits(
    stages: Sequence[StageMemory],
    capacity: float,
    *,
    allow_spill: bool = False,
    xpu_of: Mapping[int, str] | None = None,
) -> StageMemory:
    """The stage that needs the most; a one-line error if it exceeds ``capacity`` bytes and no spill is allowed.

    ``xpu_of``: an XPU name per stage (e.g. ``{p: grid.xpu(0, p, 0)}``) to name in the error.
    """
    worst = max(stages, key=lambda s: s.total)
    if worst.total > capacity and not allow_spill:
        gib = 2.0**30
        who = f"each rank of pipeline stage {worst.stage}"
        if xpu_of is not None and worst.stage in xpu_of:
            who = f"XPU {xpu_of[worst.stage]} (as every rank of pipeline stage {worst.stage})"
        names = ("weights", "gradients", "optimizer", "activations")
        parts = (worst.weights, worst.grads, worst.optimizer, worst.activations)
        split = ", ".join(f"{k} {v / gib:.1f}" for k, v in zip(names, parts, strict=True))
        raise HcsimError(
            f"{who} needs {worst.total / gib:.1f} GiB ({split}) but an XPU has "
            f"{capacity / gib:.1f} GiB (valid: a layout that fits, more ZeRO sharding or recomputation, or "
            "allowing a spill)"
        )
    return worst
