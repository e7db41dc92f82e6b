"""Training precisions (fp32, fp16, bf16, fp8): the bytes of each tensor kind and the engine's rate.

A :class:`TrainingPrecision` says how wide each kind of value is in a training step, as
Megatron-Core / Transformer Engine keep them (sources: /work/research/training-memory-and-flops.md
§2 and §5; Megatron-LM ``docs/user-guide/features/dist_optimizer.md``):

* **fp16 / fp32**: hcsim's accounting since issue 16 (ZeRO §3: 2 + 2 + 12 = 16 B/param in
  fp16, 4 + 4 + 8 in fp32), unchanged so every existing graph stays bit-identical.
* **bf16** (Megatron default): bf16 weights (2), fp32 main gradients (4), fp32 master
  copy and Adam's moments (12): 18 B/param, ``6 + 12/d`` with the distributed optimizer;
  gradients reduced in fp32 (``grad_reduce_in_fp32``), parameters gathered in bf16.
* **fp8** (Transformer Engine, delayed/current scaling): as bf16, plus GEMM operands in
  fp8 (1 byte) and the cached fp8 weight copies (row- and column-wise: 2 B/param,
  derived from TE PR #1300, no measured source); activations, TP/PP/CP/EP traffic stay bf16.

The engine runs fp16 and fp32 rates only: bf16 and fp8 vertices run at the fp16 rate
under the ideal model (:data:`ENGINE_PRECISION`), their own precision kept on the vertex.
"""

from __future__ import annotations

from dataclasses import dataclass

from hcsim.errors import HcsimError

__all__ = ["ENGINE_PRECISION", "TRAINING_PRECISIONS", "TrainingPrecision", "training_precision", "zero_shards"]

#: the engine precision a vertex of each training precision runs at in the ideal model (fp16: same peak
#: as bf16 on every device hcsim models; fp8 at the 16-bit rate until the engine knows fp8 rates)
ENGINE_PRECISION = {"fp32": "fp32", "fp16": "fp16", "bf16": "fp16", "fp8": "fp16"}

TRAINING_PRECISIONS = tuple(ENGINE_PRECISION)


def zero_shards(weights: float, grads: float, optimizer: float, zero: int, shards: int) -> tuple[float, float, float]:
    """(weights, gradients, optimizer state) left on one rank by ZeRO stage ``zero`` over ``shards`` ranks.

    Stage 1 shards the optimizer state (Megatron's distributed optimizer), 2 also the gradients, 3 the weights.
    """
    if zero >= 1:
        optimizer /= shards
    if zero >= 2:
        grads /= shards
    if zero >= 3:
        weights /= shards
    return weights, grads, optimizer


@dataclass(frozen=True)
class TrainingPrecision:
    """Bytes per value of each tensor kind in one training step (module docstring)."""

    name: str  # "fp32" | "fp16" | "bf16" | "fp8"
    value_bytes: int  # activations and their gradients, TP/PP/CP/EP traffic, non-GEMM operators
    operand_bytes: int  # GEMM inputs and weights as the GEMM reads them (1 for fp8)
    param_bytes: float  # the compute copy of the weights, per parameter
    weight_cache_bytes: float  # fp8 weight copies kept beside the compute copy (TE), per parameter
    grad_bytes: float  # the (main) gradient buffer, per parameter
    optimizer_bytes: float  # master copy and Adam moments, per parameter
    grad_reduce_bytes: int  # the data-parallel gradient collectives' element width
    param_gather_bytes: int  # the distributed optimizer's / ZeRO's parameter all-gather element width

    @property
    def engine(self) -> str:
        """The engine precision of this training precision's vertices (ideal model)."""
        return ENGINE_PRECISION[self.name]

    @property
    def gemm(self) -> str:
        """The precision GEMMs (linear and expert operators) run at."""
        return self.name

    @property
    def legacy(self) -> bool:
        """True for fp16/fp32: graphs exactly as before issue 24 (no per-operator precision)."""
        return self.name in ("fp16", "fp32")

    def state_bytes_per_param(self, zero: int, shards: int) -> float:
        """Weights + gradients + optimizer state of one parameter under ZeRO stage ``zero`` over ``shards`` ranks.

        Stage 1 is Megatron's distributed optimizer (optimizer state sharded): bf16 gives
        ``2 + 4 + 12/d = 6 + 12/d`` (dist_optimizer.md); 2 also shards the gradients, 3 the weights.
        """
        return sum(self.state_split(zero, shards))

    def state_split(self, zero: int, shards: int) -> tuple[float, float, float]:
        """(weights, gradients, optimizer state) bytes of one parameter under ZeRO stage ``zero`` over ``shards``."""
        return zero_shards(
            self.param_bytes + self.weight_cache_bytes, self.grad_bytes, self.optimizer_bytes, zero, shards
        )


def training_precision(
    name: str, *, grad_reduce_in_fp32: bool = True, fp8_param_gather: bool = False
) -> TrainingPrecision:
    """The :class:`TrainingPrecision` called ``name`` (fp32, fp16, bf16, fp8).

    ``grad_reduce_in_fp32`` (bf16/fp8; Megatron's default with bf16): the gradient
    collectives move fp32, else bf16. ``fp8_param_gather`` (fp8): the parameters are
    kept and all-gathered in fp8 (``--fp8-param-gather``), halving the all-gather.
    """
    if name == "fp32":
        return TrainingPrecision("fp32", 4, 4, 4.0, 0.0, 4.0, 8.0, 4, 4)
    if name == "fp16":
        return TrainingPrecision("fp16", 2, 2, 2.0, 0.0, 2.0, 12.0, 2, 2)
    if name not in ("bf16", "fp8"):
        raise HcsimError(f"training precision {name!r} is unknown (valid: {', '.join(TRAINING_PRECISIONS)})")
    reduce = 4 if grad_reduce_in_fp32 else 2
    if name == "bf16":
        if fp8_param_gather:
            raise HcsimError("fp8_param_gather needs precision fp8 (valid with bf16: False)")
        return TrainingPrecision("bf16", 2, 2, 2.0, 0.0, 4.0, 12.0, reduce, 2)
    if fp8_param_gather:  # fp8 compute params (1 B) and their transpose (1 B), no bf16 copy
        return TrainingPrecision("fp8", 2, 1, 1.0, 1.0, 4.0, 12.0, reduce, 1)
    return TrainingPrecision("fp8", 2, 1, 2.0, 2.0, 4.0, 12.0, reduce, 2)
