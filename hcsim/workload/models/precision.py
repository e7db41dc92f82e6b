"""Training precisions (fp32, fp16, bf16, fp8): the bytes of each tensor kind and the engine's rate.

A :class:`TrainingPrecision` says how wide each kind of value is in a training step, as
Megatron-Core / Transformer Engine keep them (each number's source: docs/training-features.md):

* **fp16 / fp32**: hcsim's accounting since issue 16 (ZeRO: 16 B/param in fp16, 4 + 4 + 8
  in fp32), unchanged so every existing graph stays bit-identical.
* **bf16**: bf16 weights, fp32 main gradients, fp32 master and moments (``6 + 12/d`` with
  the distributed optimizer); without ``grad_reduce_in_fp32`` bf16 gradients and an fp32
  gradient shard held only during the step (:attr:`TrainingPrecision.step_grad_bytes`);
  ``optimizer_dtype="bf16"``: bf16 moments, no master copy (4 B/param).
* **fp8**: as bf16, plus fp8 GEMM operands and TE's cached fp8 weight copies (2 B/param;
  with ``fp8_param_gather`` the fp8 copies are the parameters).

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
    # of optimizer_bytes: the fp32 copy of the main-gradient shard, held from the step to the next zero_grad only
    step_grad_bytes: float = 0.0
    master_bytes: float = 4.0  # of optimizer_bytes: the fp32 master weight (0: the optimizer updates the 16-bit copy)

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

    def state_split(self, zero: int, shards: int, *, te_linear: bool = True) -> tuple[float, float, float]:
        """(weights, gradients, optimizer state) bytes of one parameter under ZeRO stage ``zero`` over ``shards``.

        ``te_linear=False``: a parameter outside Transformer Engine's linear layers (embedding,
        output layer, norms, router): a 16-bit (``value_bytes``) copy and no fp8 copies; the same
        as ``True`` for fp32, fp16 and bf16.
        """
        weights = self.param_bytes + self.weight_cache_bytes if te_linear else float(self.value_bytes)
        return zero_shards(weights, self.grad_bytes, self.optimizer_bytes, zero, shards)


def training_precision(
    name: str, *, grad_reduce_in_fp32: bool = True, fp8_param_gather: bool = False, optimizer_dtype: str = "fp32"
) -> TrainingPrecision:
    """The :class:`TrainingPrecision` called ``name`` (fp32, fp16, bf16, fp8).

    ``grad_reduce_in_fp32`` (bf16/fp8; Megatron's default with bf16): the gradient
    collectives move fp32, else bf16. ``fp8_param_gather`` (fp8): the parameters are
    kept and all-gathered in fp8 (``--fp8-param-gather``), halving the all-gather.
    ``optimizer_dtype`` (bf16/fp8): "fp32" (Megatron-Core: fp32 master and moments) or "bf16"
    (Adam's moments in bf16, no master copy: see below).
    """
    if name in ("fp32", "fp16") and optimizer_dtype != "fp32":
        raise HcsimError(f"optimizer dtype {optimizer_dtype!r} needs precision bf16 or fp8 (valid with {name}: fp32)")
    if name == "fp32":
        return TrainingPrecision("fp32", 4, 4, 4.0, 0.0, 4.0, 8.0, 4, 4, master_bytes=0.0)
    if name == "fp16":
        return TrainingPrecision("fp16", 2, 2, 2.0, 0.0, 2.0, 12.0, 2, 2)
    if name not in ("bf16", "fp8"):
        raise HcsimError(f"training precision {name!r} is unknown (valid: {', '.join(TRAINING_PRECISIONS)})")
    # The main-gradient buffer has the reduce width: Megatron-Core groups parameters into buffers by
    # "grad_dtype: gradient reduction dtype (torch.float if grad_reduce_in_fp32, else param.dtype)"
    # (megatron/core/distributed/param_and_grad_buffer.py, group_params_for_buffers). With 16-bit main
    # gradients the distributed optimizer keeps an fp32 copy of its gradient shard beside the fp32
    # master and Adam moments: 16 B per parameter (Megatron-LM docs dist_optimizer.md, "fp16
    # parameters, fp16 gradients: 20, 4 + 16/d"); with fp32 main gradients 12 ("bf16 parameters, fp32
    # gradients: 18, 6 + 12/d").
    #
    # That fp32 gradient shard is made at the step (``shard_main_param.grad = shard_model_grad.float()``,
    # Megatron-LM megatron/core/optimizer/distrib_optimizer.py@d98e8a64, ``_copy_model_grads_to_main_grads``;
    # ``.float()`` of an fp32 main gradient is the same tensor, no copy) and freed by ``optimizer.zero_grad()``
    # (set_to_none) before the next iteration's forward-backward (megatron/training/training.py@d98e8a64,
    # ``train_step``; Megatron-Bridge src/megatron/bridge/training/train.py@00b7660b, the same): it is never
    # held together with the activations (``step_grad_bytes``, memory.py).
    if optimizer_dtype not in ("fp32", "bf16"):
        raise HcsimError(f"optimizer dtype {optimizer_dtype!r} is unknown (valid: fp32, bf16)")
    reduce = 4 if grad_reduce_in_fp32 else 2
    optimizer = 12.0 if grad_reduce_in_fp32 else 16.0
    step_grad, master = (0.0 if grad_reduce_in_fp32 else 4.0), 4.0
    if optimizer_dtype == "bf16":
        # NeMo 1's distributed_fused_adam (Apex DistributedFusedAdam) with ``optim.dtype: bf16``, as the
        # Nemotron-4 340B recipe sets it (NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/
        # nemotron/nemotron_340b.yaml@7c842fcd: ``name: distributed_fused_adam``, ``grad_sync_dtype: bf16``,
        # ``dtype: bf16``): the optimizer dtype equals the model's, so NeMo sets ``store_params = False``
        # (nemo/collections/nlp/models/language_modeling/megatron_base_model.py@579983fb,
        # ``setup_optimization``): no master copy; Apex keeps ``exp_avg_shard`` and ``exp_avg_sq_shard`` in
        # that dtype (NVIDIA/apex apex/contrib/optimizers/distributed_fused_adam.py@d571f3ee, ``StateBucket``)
        # and steps on the bf16 gradient shard in place: 2 + 2 B per parameter, no fp32 gradient copy.
        if grad_reduce_in_fp32:
            raise HcsimError("optimizer dtype bf16 needs 16-bit main gradients (valid: grad_reduce_in_fp32=False)")
        optimizer, step_grad, master = 4.0, 0.0, 0.0
    if name == "bf16":
        if fp8_param_gather:
            raise HcsimError("fp8_param_gather needs precision fp8 (valid with bf16: False)")
        return TrainingPrecision("bf16", 2, 2, 2.0, 0.0, float(reduce), optimizer, reduce, 2, step_grad, master)
    # fp8 weights of TE's linear layers, row-wise and column-wise (Hopper's fp8 GEMMs need the transpose):
    # in training TE quantizes the weight with ``set_usage(rowwise=True, columnwise=...)`` (columnwise when
    # the input needs a gradient) and keeps it across microbatches (``update_workspace`` on the first only)
    # (TransformerEngine transformer_engine/pytorch/module/linear.py, ``quantize_weight``): 1 + 1 B. With
    # ``fp8_param_gather`` (``fp8_model_init``) that fp8 tensor is the parameter itself: no bf16 copy.
    if fp8_param_gather:
        return TrainingPrecision("fp8", 2, 1, 1.0, 1.0, float(reduce), optimizer, reduce, 1, step_grad, master)
    return TrainingPrecision("fp8", 2, 1, 2.0, 2.0, float(reduce), optimizer, reduce, 2, step_grad, master)
