"""The optimizer step of a training iteration, timed as memory-bound kernels on a calibrated GPU.

Megatron-Core's step (``megatron/core/optimizer/distrib_optimizer.py`` and
``optimizer.py``: ``prepare_grads`` / ``step_with_ready_grads``) with
``--clip-grad 1.0`` (its default) and Transformer Engine's fused multi-tensor Adam
(``transformer_engine/pytorch/optimizers/fused_adam.py``) makes three passes over the
rank's shard of the parameters, each a memory-bound multi-tensor kernel:

1. the gradient norm for clipping (``get_grad_norm_fp32``, ``multi_tensor_l2norm``):
   reads the main gradient;
2. Adam (``multi_tensor_adam``): reads the gradient, the fp32 master weight and both
   moments, writes the master weight and both moments;
3. ``_copy_main_params_to_model_params``: reads the fp32 master weight, writes the
   model's (bf16, or fp8 with ``--fp8-param-gather``) parameter.

Per parameter, with ``G`` the main gradient's bytes, ``S`` the optimizer state's (fp32
master + moments: 12; fp32 training keeps no separate master: 8) and ``P`` the model
parameter's: ``G + (G + S) + S + (4 + P)`` = 38 B in bf16, 37 B with fp8 parameters;
fp32: ``G + (G + S + P) + (S + P)`` = 32 B (Adam updates the weight in place, no copy); the
same form without a master copy (``master_bytes`` 0: bf16 moments, NeMo 1's distributed Adam with
``optim.dtype: bf16``, S = 4): 16 B in bf16.
The shard is 1/DP (x CP) of the stage's parameters under the distributed optimizer
(ZeRO >= 1), all of them without it. Each pass launches one kernel per 320 chunks of
65,536 elements (TE: ``multi_tensor_applier = MultiTensorApply(2048 * 32)``,
``depth_to_max_blocks = 320`` in ``common/multi_tensor/multi_tensor_apply.cuh``).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["CHUNK", "CHUNKS_PER_LAUNCH", "optimizer_bytes_per_param", "optimizer_launches", "optimizer_seconds"]

CHUNK = 2048 * 32  # elements a block of TE's multi-tensor kernels handles (multi_tensor_apply.py)
CHUNKS_PER_LAUNCH = 320  # blocks of one launch (depth_to_max_blocks, multi_tensor_apply.cuh)
PASSES = 3  # grad norm, Adam, master -> model copy (module docstring)
MASTER_BYTES = 4  # the fp32 master weight, in the optimizer state of mixed-precision training


def optimizer_bytes_per_param(precision: Any) -> float:
    """HBM bytes the step reads and writes per parameter of the shard (module docstring).

    ``precision``: a :class:`~hcsim.workload.models.precision.TrainingPrecision` (its
    ``grad_bytes``, ``optimizer_bytes``, ``param_bytes``).
    """
    g, s, p = precision.grad_bytes, precision.optimizer_bytes, precision.param_bytes
    norm = g
    if precision.master_bytes == 0:  # the weight is the master: Adam reads and writes it, nothing to copy
        return norm + (g + s + p) + (s + p)
    return norm + (g + s) + s + (MASTER_BYTES + p)


def optimizer_launches(params: float) -> int:
    """Kernel launches of the step over ``params`` parameters: each pass one per 320 chunks of 65,536."""
    if params <= 0:
        return 0
    return PASSES * math.ceil(params / (CHUNK * CHUNKS_PER_LAUNCH))


def optimizer_seconds(params: float, precision: Any, calibration: Any) -> float:
    """The step over ``params`` parameters at the calibration's achieved HBM bandwidth, plus its launches."""
    nbytes = params * optimizer_bytes_per_param(precision)
    return nbytes / calibration.hbm_achieved + optimizer_launches(params) * calibration.launch
