"""The batch-time table of a model served on a platform: tau[b] computed by the engine.

A request is a prompt of ``context`` tokens that generates ``output_tokens`` tokens; a
batch of ``b`` requests runs one prefill step and ``output_tokens`` decode steps (static
batching, as :mod:`hcsim.frontends.serving.batching` serves batches). For each b = 1..max_batch
the engine simulates, on the platform with SimGrid, the prefill step of b prompts and
one decode step of b sequences at the mean KV length ``context + output_tokens/2``:

    tau[b] = T_prefill(b, context) + output_tokens x T_decode(b, context + output_tokens / 2)

Taking the decode step at the mean KV length is exact while the step time is affine
in the KV length (each operator stays memory- or compute-bound over the generation);
it is an approximation where an operator crosses its roofline ridge mid-generation.
"""

from __future__ import annotations

import os

from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.workload.models.inference import inference_step
from hcsim.workload.models.spec import TransformerSpec

__all__ = ["batch_times", "step_time"]


def step_time(
    spec: TransformerSpec,
    platform: str | os.PathLike[str],
    group: list[str],
    *,
    batch: int,
    context: int,
    phase: str,
    coherent: bool = True,
) -> float:
    """Seconds of one ``phase`` step of ``batch`` sequences on the TP group ``group``, simulated by the engine."""
    w = inference_step(spec, group, batch=batch, context=context, phase=phase, tp=len(group))
    return simulate(platform, w, 1, coherent=coherent, record_flows=False, progress=False).makespan


def batch_times(
    spec: TransformerSpec,
    platform: str | os.PathLike[str],
    group: list[str],
    *,
    max_batch: int,
    context: int,
    output_tokens: int,
    coherent: bool = True,
) -> dict[int, float]:
    """tau[b] for b = 1..max_batch (see the module docstring)."""
    if isinstance(output_tokens, bool) or not isinstance(output_tokens, int) or output_tokens < 0:
        raise HcsimError(f"output tokens {output_tokens!r} is invalid (valid: an integer >= 0)")
    table = {}
    for b in range(1, max_batch + 1):
        tau = step_time(spec, platform, group, batch=b, context=context, phase="prefill", coherent=coherent)
        if output_tokens:
            mean_kv = context + output_tokens // 2
            decode = step_time(spec, platform, group, batch=b, context=mean_kv, phase="decode", coherent=coherent)
            tau += output_tokens * decode
        table[b] = tau
    return table
