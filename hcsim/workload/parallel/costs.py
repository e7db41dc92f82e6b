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
from dataclasses import dataclass
from typing import Any

__all__ = ["Part", "UnitCost", "block_cost", "fold", "state_bytes"]


@dataclass(frozen=True)
class Part:
    """Operators run as one compute vertex: their summed costs, per rank."""

    fwd_flops: float = 0.0
    bwd_flops: float = 0.0
    fwd_bytes: float = 0.0
    bwd_bytes: float = 0.0
    params: int = 0
    activation_bytes: float = 0.0


def fold(operators: Sequence[Any]) -> Part:
    """The sum of ``operators`` (objects with the fields of :class:`Part`)."""
    return Part(
        fwd_flops=float(sum(o.fwd_flops for o in operators)),
        bwd_flops=float(sum(o.bwd_flops for o in operators)),
        fwd_bytes=float(sum(o.fwd_bytes for o in operators)),
        bwd_bytes=float(sum(o.bwd_bytes for o in operators)),
        params=int(sum(o.params for o in operators)),
        activation_bytes=float(sum(o.activation_bytes for o in operators)),
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


def block_cost(operators: Sequence[Any]) -> UnitCost:
    """Split a block's operators into attention, mlp and experts parts (see the module doc)."""
    last_attention = max((i for i, o in enumerate(operators) if o.name.startswith("attn")), default=-1)
    attention, rest = operators[: last_attention + 1], operators[last_attention + 1 :]
    experts = [o for o in rest if o.kind == "experts"]
    around = [o for o in rest if o.kind != "experts"]
    return UnitCost(fold(attention), fold(around), fold(experts) if experts else None)


def state_bytes(params: int, bytes_per_value: int, zero: int, dp: int) -> float:
    """Training state of ``params`` parameters on one rank under ZeRO stage ``zero`` over ``dp`` replicas."""
    weights = grads = float(bytes_per_value)
    optimizer = 12.0 if bytes_per_value < 4 else 8.0
    if zero >= 1:
        optimizer /= dp
    if zero >= 2:
        grads /= dp
    if zero >= 3:
        weights /= dp
    return params * (weights + grads + optimizer)
