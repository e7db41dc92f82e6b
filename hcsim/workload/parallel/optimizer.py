"""The optimizer step of a training iteration, timed as memory-bound kernels on a calibrated GPU.

Megatron-Core's step with Transformer Engine's fused multi-tensor Adam makes three passes
over the rank's shard of the parameters (gradient norm, Adam, master -> model copy), each
a memory-bound multi-tensor kernel: 38 B per parameter in bf16, 37 B with fp8 parameters,
32 B in fp32 (:func:`optimizer_bytes_per_param`), one launch per :data:`CHUNKS_PER_LAUNCH`
chunks of :data:`CHUNK` elements and pass. The shard is 1/DP (x CP) of the stage's
parameters under the distributed optimizer (ZeRO >= 1), all of them without it.

The byte accounting, each number sourced: docs/calibration.md, "The optimizer step".
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["CHUNK", "CHUNKS_PER_LAUNCH", "optimizer_bytes_per_param", "optimizer_launches", "optimizer_seconds"]

CHUNK = 2048 * 32  # elements a block of TE's multi-tensor kernels handles (multi_tensor_apply.py)
CHUNKS_PER_LAUNCH = 320  # blocks of one launch (depth_to_max_blocks, multi_tensor_apply.cuh)
PASSES = 3  # grad norm, Adam, master -> model copy (docs/calibration.md)
MASTER_BYTES = 4  # the fp32 master weight, in the optimizer state of mixed-precision training


def optimizer_bytes_per_param(precision: Any) -> float:
    """HBM bytes the step reads and writes per parameter of the shard (docs/calibration.md, "The optimizer step").

    ``precision``: a :class:`~hcsim.workload.models.precision.TrainingPrecision` (its
    ``grad_bytes``, ``optimizer_bytes``, ``param_bytes``).
    """
    g, s, p = precision.grad_bytes, precision.optimizer_bytes, precision.param_bytes
    norm = g
    if precision.name == "fp32":  # the weight is the master: Adam reads and writes it, nothing to copy
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
