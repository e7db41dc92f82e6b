"""A serving framework's host time per continuous-batching iteration, from a calibration's ``serving_host``.

vLLM's engine does CPU work around every forward pass (schedule, prepare inputs, sample, process
outputs); the ``serving_host`` section holds those phases as measured per iteration by a
microbenchmark (Vidur's vLLM profile) against batch size at TP 1, 2 and 4. Invariant: a pure
function of (calibration, sequences in the iteration, TP degree, the iteration's GPU seconds),
0 without the section; linear in the batch between measured sizes, held constant beyond them;
a TP degree without a table takes the largest measured one below it. With ``overlap_outputs``
(vLLM's async output processing) output processing runs beside the next forward pass, so only
what exceeds the iteration's GPU time adds. Guide: docs/serving.md, "Host time".
"""

from __future__ import annotations

import bisect

from hcsim.calibration.schema import SERVING_TPS, Calibration

__all__ = ["serving_host_seconds"]


def _interp(xs: tuple[float, ...], ys: tuple[float, ...], x: float) -> float:
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = bisect.bisect_right(xs, x)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def serving_host_seconds(calib: Calibration | None, sequences: int, tp: int, gpu_seconds: float) -> float:
    """Host seconds one iteration of ``sequences`` requests on a TP-``tp`` replica adds to its GPU time.

    >>> from hcsim.calibration import load_calibration
    >>> calib = load_calibration("dgx-a100")
    >>> round(serving_host_seconds(calib, 8, 1, 0.010) * 1e3, 4)  # schedule + sampler + prepare at batch 8, TP 1
    1.3961
    >>> round(serving_host_seconds(calib, 8, 1, 0.001) * 1e3, 4)  # + the 0.5873 ms of output processing past the GPU
    1.9834
    """
    if calib is None or calib.serving_host is None or sequences < 1:
        return 0.0
    batches, blocking, outputs, overlap = calib.serving_host
    measured = max(t for t in SERVING_TPS if t <= max(1, tp))
    host = _interp(batches, blocking[measured], sequences)
    out = _interp(batches, outputs[measured], sequences)
    return host + (max(0.0, out - gpu_seconds) if overlap else out)
