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
from hcsim.workload.models.precision import zero_shards

__all__ = ["RECOMPUTE", "Part", "UnitCost", "block_cost", "fold", "state_bytes"]

#: activation recomputation modes (Megatron's ``--recompute-granularity``): none, selective (the
#: attention core's forward again in the backward), full (the whole block's forward again)
RECOMPUTE = ("none", "selective", "full")


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

    ``recompute`` (:data:`RECOMPUTE`): "selective" runs the attention core's forward again
    before the attention backward (its kept activations are unchanged: a FlashAttention-style
    core keeps no score matrix to drop); "full" runs every part's forward again before its
    backward, and the block keeps only its input (``norm1``'s saved activations), as
    Megatron's ``--recompute-granularity full`` does.
    """
    if recompute not in RECOMPUTE:
        raise HcsimError(f"recompute {recompute!r} is unknown (valid: {', '.join(RECOMPUTE)})")
    last_attention = max((i for i, o in enumerate(operators) if o.name.startswith("attn")), default=-1)
    attention, rest = operators[: last_attention + 1], operators[last_attention + 1 :]
    experts = [o for o in rest if o.kind == "experts"]
    around = [o for o in rest if o.kind != "experts"]
    if recompute == "none":
        return UnitCost(fold(attention), fold(around), fold(experts) if experts else None)
    if recompute == "selective":
        core = [o for o in attention if o.kind == "attention"]
        return UnitCost(fold(attention, core), fold(around), fold(experts) if experts else None)
    kept = float(operators[0].activation_bytes) if operators else 0.0  # the block's input (norm1 keeps it)
    att, mlp = fold(attention, attention), fold(around, around)
    exp = fold(experts, experts) if experts else None
    return UnitCost(
        replace(att, activation_bytes=kept),
        replace(mlp, activation_bytes=0.0),
        replace(exp, activation_bytes=0.0) if exp is not None else None,
    )


def state_bytes(params: int, bytes_per_value: int, zero: int, dp: int) -> float:
    """Training state of ``params`` parameters on one rank under ZeRO stage ``zero`` over ``dp`` replicas."""
    value = float(bytes_per_value)
    weights, grads, optimizer = zero_shards(value, value, 12.0 if bytes_per_value < 4 else 8.0, zero, dp)
    return params * (weights + grads + optimizer)
