"""What one rank computes and keeps per pipeline unit: operators folded into vertex-sized parts.

A transformer block's operators (:func:`hcsim.workload.models.ops.block_operators`, per
TP rank) are folded into the parts the training graph runs as single compute vertices,
between the communications that separate them: **attention** (norm, QKV, core, output),
**mlp** (the rest of a dense block; in a MoE block the operators around the experts) and
**experts** (between dispatch and combine). The embedding and the LM head (+ loss) are
one part each, on the first and last stage.

Memory per rank (what decides local vs remote placement): the parameters' training state
(fp16 mixed precision: 2 bytes of weights, 2 of gradients, 12 of optimizer state; fp32:
4 + 4 + 8; ZeRO-1/2/3 shard the optimizer state, then the gradients, then the weights
over the data-parallel group) plus the part's kept activations times the microbatches
the stage keeps at once (:func:`hcsim.workload.parallel.schedules.in_flight`).

Guide: docs/parallelism.md, "The graph" (Memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from hcsim.errors import HcsimError
from hcsim.workload.models import ops as model_ops
from hcsim.workload.models.precision import zero_shards

__all__ = [
    "RECOMPUTE",
    "RECOMPUTE_MODULES",
    "Part",
    "UnitCost",
    "block_cost",
    "check_recompute",
    "fold",
    "layer_recompute",
    "mtp_units",
    "recompute_modules",
    "state_bytes",
]

#: activation recomputation modes (Megatron's ``--recompute-granularity``): none, selective (the
#: attention core's forward again in the backward), full (the whole block's forward again)
RECOMPUTE = ("none", "selective", "full")
#: Megatron-Core's ``--recompute-modules`` (with granularity selective) hcsim models, written
#: ``"selective:layernorm,moe_act"``; plain "selective" is Megatron's default, ``["core_attn"]``
#: (megatron/core/transformer/transformer_config.py@d98e8a64). What each drops and runs again:
#: docs/training-features.md, "Recompute modules".
RECOMPUTE_MODULES = ("core_attn", "layernorm", "moe_act", "mlp", "mla_up_proj")
#: modules Megatron has that hcsim does not model, and why (refused in one line)
_UNMODELLED = {
    "moe": "it re-runs the token dispatch and combine all-to-alls, which hcsim does not re-issue",
    "shared_experts": "not modelled",
}


def layer_recompute(recompute: str, index: int) -> str:
    """The mode of the ``index``-th block of a model chunk (0 = its first): ``"full:N"`` (Megatron's
    ``--recompute-granularity full --recompute-method block --recompute-num-layers N``, which each
    chunk's TransformerBlock applies to its own layers) is "full" for the first N blocks and "none"
    after them; any other mode is the same for every block.

    >>> [layer_recompute("full:2", i) for i in range(4)]
    ['full', 'full', 'none', 'none']
    """
    if recompute.startswith("full:"):
        return "full" if index < int(recompute.split(":", 1)[1]) else "none"
    return recompute


def recompute_modules(recompute: str) -> frozenset[str]:
    """The modules a selective ``recompute`` runs again (empty for "none" and "full"); one-line error if unknown."""
    check_recompute(recompute)
    if recompute == "selective":
        return frozenset({"core_attn"})
    if recompute.startswith("selective:"):
        return frozenset(recompute.split(":", 1)[1].split(","))
    return frozenset()


def check_recompute(recompute: Any) -> None:
    """One-line :class:`HcsimError` unless ``recompute`` is a mode of :data:`RECOMPUTE` or ``selective:M1,M2``."""

    if isinstance(recompute, str) and recompute in RECOMPUTE:
        return
    if isinstance(recompute, str) and recompute.startswith("full:"):
        count = recompute.split(":", 1)[1]
        if not (count.isdigit() and count.isascii() and 1 <= int(count) <= 100_000):
            raise HcsimError(f"recompute layers {count!r} is invalid (valid: an integer from 1 to 100,000)")
        return
    if not isinstance(recompute, str) or not recompute.startswith("selective:"):
        raise HcsimError(
            f"recompute {recompute!r} is unknown (valid: {', '.join(RECOMPUTE)}, full:N (the first N blocks of "
            f"each model chunk), or selective:MODULES with MODULES from {', '.join(RECOMPUTE_MODULES)})"
        )
    names = recompute.split(":", 1)[1].split(",")
    for name in names:
        if name in _UNMODELLED:
            raise HcsimError(f"recompute module {name!r} is not modelled: {_UNMODELLED[name]} "
                             f"(valid: {', '.join(RECOMPUTE_MODULES)})")  # fmt: skip
        if name not in RECOMPUTE_MODULES:
            raise HcsimError(f"recompute module {name!r} is unknown (valid: {', '.join(RECOMPUTE_MODULES)})")
    if len(set(names)) != len(names):
        raise HcsimError(f"recompute modules {','.join(names)} name one twice (valid: each at most once)")


#: operators whose saved input is a separate pre-MLP norm's output: in Megatron-Core's Transformer Engine
#: layer spec only MoE blocks have one (``pre_mlp_layernorm=TENorm if num_experts else IdentityOp``; the
#: input norm and a dense block's pre-MLP norm are fused into ``TELayerNormColumnParallelLinear``, where
#: "layernorm" recompute does nothing: megatron/core/models/gpt/gpt_layer_specs.py@d98e8a64,
#: megatron/core/transformer/transformer_layer.py@d98e8a64, ``recompute_pre_mlp_layernorm``)
NORM_OUTPUT_READERS = ("moe.router", "moe.shared.up")
#: latent attention's up projections (``q_lora_rank`` 0: one query projection), which "mla_up_proj" runs again
MLA_UP_PROJ = ("attn.q_up", "attn.q", "attn.kv_up")
#: a dense block's MLP module (fc1 with its fused norm, activation, fc2): "mlp" recompute keeps its input only
MLP_MODULE = ("norm2", "mlp.up", "mlp.act", "mlp.down")


def recomputed_kept(op: Any, kept: float, modules: frozenset[str]) -> float:
    """What ``op`` still keeps (``kept`` bytes without recomputation) when ``modules`` are recomputed.

    * layernorm: the pre-MLP norm's output is discarded after use and recomputed (Megatron's
      ``CheckpointWithoutOutput``): its readers (:data:`NORM_OUTPUT_READERS`) keep nothing;
      the norm's own input (the residual stream) stays.
    * moe_act: the experts' activation output (fc2's input) is discarded and recomputed from
      fc1's output (megatron/core/transformer/moe/experts.py@d98e8a64, ``activation_recompute``).
    * mlp (dense blocks): the MLP is checkpointed, only its input (``norm2``'s) is kept.
    * mla_up_proj (latent attention): the up projections' outputs (Q, K, V), which the core
      kept, are discarded and recomputed (megatron/core/transformer/multi_latent_attention.py@d98e8a64,
      ``CheckpointWithoutOutput`` around ``qkv_up_proj_and_rope_apply``); the core keeps O and its
      softmax statistics, the up projections their inputs.
    * core_attn: a FlashAttention-style core keeps no score matrix to drop: nothing changes.
    """
    if "mla_up_proj" in modules and op.kind == "attention" and op.inner:
        return max(0.0, kept - sum(i.activation_bytes for i in op.inner))
    if "layernorm" in modules and op.name in NORM_OUTPUT_READERS:
        return 0.0
    if "moe_act" in modules and op.kind == "experts":
        return max(0.0, kept - sum(i.activation_bytes for i in op.inner))
    if "mlp" in modules and op.name in MLP_MODULE[1:]:
        return 0.0
    return kept


@dataclass(frozen=True)
class Part:
    """Operators run as one compute vertex: their summed costs, per rank."""

    fwd_flops: float = 0.0
    bwd_flops: float = 0.0
    fwd_bytes: float = 0.0
    bwd_bytes: float = 0.0
    params: int = 0
    activation_bytes: float = 0.0
    # activation recomputation: the forward run again before the backward (0 without recompute)
    recompute_flops: float = 0.0
    recompute_bytes: float = 0.0
    # the operators, shared by every copy of the part's vertices: ((Operator, "fwd"), ...) and the
    # backward's ((Operator, "recompute"), ..., (Operator, "bwd"), ...) in the order they run
    fwd_ops: tuple = ()
    bwd_ops: tuple = ()
    precision: str | None = None  # the precision of its largest-FLOP operator with one (fp8/bf16 training)


def fold(operators: Sequence[Any], recompute: Sequence[Any] = ()) -> Part:
    """The sum of ``operators`` (objects with the fields of :class:`Part`); ``recompute``: those run again."""
    ops = list(operators)
    again = list(recompute)
    precise = [o for o in ops if getattr(o, "precision", None)]
    return Part(
        fwd_flops=float(sum(o.fwd_flops for o in ops)),
        bwd_flops=float(sum(o.bwd_flops for o in ops)),
        fwd_bytes=float(sum(o.fwd_bytes for o in ops)),
        bwd_bytes=float(sum(o.bwd_bytes for o in ops)),
        params=int(sum(o.params for o in ops)),
        activation_bytes=float(sum(o.activation_bytes for o in ops)),
        recompute_flops=float(sum(o.fwd_flops for o in again)),
        recompute_bytes=float(sum(o.fwd_bytes for o in again)),
        fwd_ops=tuple((o, "fwd") for o in ops),
        bwd_ops=tuple((o, "recompute") for o in again) + tuple((o, "bwd") for o in reversed(ops)),
        precision=max(precise, key=lambda o: o.fwd_flops).precision if precise else None,
    )


@dataclass(frozen=True)
class UnitCost:
    """A block as its parts (``experts`` is None for a dense block)."""

    attention: Part
    mlp: Part
    experts: Part | None = None

    @property
    def params(self) -> int:
        return self.attention.params + self.mlp.params

    @property
    def expert_params(self) -> int:
        return self.experts.params if self.experts is not None else 0

    @property
    def activation_bytes(self) -> float:
        extra = self.experts.activation_bytes if self.experts is not None else 0.0
        return self.attention.activation_bytes + self.mlp.activation_bytes + extra


def block_cost(operators: Sequence[Any], recompute: str = "none") -> UnitCost:
    """Split a block's operators into attention, mlp and experts parts (see the module doc).

    ``recompute`` (:data:`RECOMPUTE`, or ``selective:MODULES``: :func:`recomputed_kept`): "selective"
    runs the attention core's forward again before the attention backward (its kept
    activations are unchanged: a FlashAttention-style
    core keeps no score matrix to drop); "full" runs every part's forward again before its
    backward, and the block keeps only its input (``norm1``'s saved activations), as
    Megatron's ``--recompute-granularity full`` does.
    """
    modules = recompute_modules(recompute)
    last_attention = max((i for i, o in enumerate(operators) if o.name.startswith("attn")), default=-1)
    attention, rest = operators[: last_attention + 1], operators[last_attention + 1 :]
    experts = [o for o in rest if o.kind == "experts"]
    around = [o for o in rest if o.kind != "experts"]
    if recompute == "none":
        return UnitCost(fold(attention), fold(around), fold(experts) if experts else None)
    if recompute == "selective":
        core = [_core_again(o) for o in attention if o.kind == "attention"]
        return UnitCost(fold(attention, core), fold(around), fold(experts) if experts else None)
    if modules:
        return _selective(attention, around, experts, modules)
    kept = float(operators[0].activation_bytes) if operators else 0.0  # the block's input (norm1 keeps it)
    att, mlp = fold(attention, attention), fold(around, around)
    exp = fold(experts, experts) if experts else None
    return UnitCost(
        replace(att, activation_bytes=kept),
        replace(mlp, activation_bytes=0.0),
        replace(exp, activation_bytes=0.0) if exp is not None else None,
    )


def _core_again(op: Any) -> Any:
    """The attention core as "core_attn" recomputation runs it again: without its rotary embedding, which
    Megatron-Core applies before the checkpointed core (megatron/core/transformer/attention.py@d98e8a64:
    ``apply_rotary_pos_emb`` on the query and the key, lines 1508-1527, ahead of ``_checkpointed_attention_forward``,
    line 1556)."""
    return replace(op, rope=0.0) if getattr(op, "rope", 0.0) else op


def _selective(attention: list, around: list, experts: list, modules: frozenset[str]) -> UnitCost:
    """A block under ``selective:MODULES``: each part's recomputed operators and what it still keeps."""
    again_attn = [_core_again(o) for o in attention if o.kind == "attention"] if "core_attn" in modules else []
    if "mla_up_proj" in modules:  # latent attention's up projections run again before the attention backward
        again_attn = [o for o in attention if o.name in MLA_UP_PROJ] + again_attn
    again_mlp: list = []
    moe = any(o.name in NORM_OUTPUT_READERS for o in around)
    if "layernorm" in modules and moe:
        again_mlp += [o for o in around if o.name == "norm2"]
    if "mlp" in modules and not moe:
        again_mlp += [o for o in around if o.name in MLP_MODULE]
    again_exp = [i for o in experts for i in o.inner] if "moe_act" in modules else []

    def part(ops: list, again: list) -> Part:
        folded = fold(ops, again)
        kept = sum(recomputed_kept(o, float(o.activation_bytes), modules) for o in ops)
        return replace(folded, activation_bytes=float(kept))

    return UnitCost(part(attention, again_attn), part(around, again_mlp), part(experts, again_exp) if experts else None)


def mtp_units(spec: Any, tokens: int, *, tp: int, ep: int, recompute: str, **block: Any) -> list[tuple[str, Any, str]]:
    """The last stage's multi-token-prediction units (DeepSeek-V3's ``mtp_layers``), before the LM head:
    per module its block ``MTP{i}`` (a block unit, recomputed as a chunk's first block) and its head
    ``MTP{i}.head`` (:func:`hcsim.workload.models.ops.mtp_operators`; ``block``: their keywords)."""
    out: list[tuple[str, Any, str]] = []
    for i in range(getattr(spec, "mtp_layers", 0)):
        ops, head = model_ops.mtp_operators(spec, tokens, tp=tp, ep=ep, **block)
        out += [
            (f"MTP{i}", block_cost(ops, layer_recompute(recompute, 0)), "block"),
            (f"MTP{i}.head", fold(head), "head"),
        ]
    return out


def state_bytes(params: int, bytes_per_value: int, zero: int, dp: int) -> float:
    """Training state of ``params`` parameters on one rank under ZeRO stage ``zero`` over ``dp`` replicas."""
    value = float(bytes_per_value)
    weights, grads, optimizer = zero_shards(value, value, 12.0 if bytes_per_value < 4 else 8.0, zero, dp)
    return params * (weights + grads + optimizer)
