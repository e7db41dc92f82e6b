"""Calibrated operator time: GEMMs by shape, FlashAttention by sequence length, memory-bound ops.

Pure functions of a loaded :class:`~hcsim.calibration.schema.Calibration` (formulas in
docs/calibration.md):

* GEMM: ``max(flops / (peak x max_fraction x wave_efficiency), bytes / hbm_achieved) + launch``;
  the backward is two GEMMs (dgrad (m, k, n), wgrad (k, n, m)) of half the backward FLOPs each.
* attention with a shape: FlashAttention's own FLOP count (fwd 4*b*sq*skv*h*d, halved when
  causal; bwd 2.5 x fwd) over the measured rate at ``seq_kv``, so the operator's FLOP
  convention (Megatron counts bwd = 2 x fwd) does not matter.
* anything else, or a GEMM/attention without a shape: a roofline at the achieved ceilings.

Under ``fp8`` only GEMMs use the FP8 peak; attention and element-wise ops stay BF16, as
Transformer Engine runs them, and a linear's FP8 operands are quantized by a memory-bound kernel
(``gemm.fp8_quantize_bytes``).
"""

from __future__ import annotations

import math
from typing import Any

from hcsim.calibration.schema import PRECISIONS, Calibration
from hcsim.errors import HcsimError

__all__ = [
    "attention_seconds",
    "gemm_seconds",
    "grouped_efficiency",
    "linear_parts",
    "op_seconds",
    "wave_efficiency",
]

_KINDS = ("linear", "attention", "norm", "elementwise", "embedding", "router", "experts")
_GEMM_KINDS = ("linear", "experts", "router")
_IN_BYTES = {"fp8": 1, "bf16": 2, "fp16": 2, "fp32": 4}
_OUT_BYTES = {"fp8": 2, "bf16": 2, "fp16": 2, "fp32": 4}  # FP8 GEMMs write BF16


def _check_precision(precision: str, calib: Calibration) -> None:
    if precision not in PRECISIONS:
        raise HcsimError(f"precision {precision!r} is unknown (valid: {', '.join(PRECISIONS)})")
    if precision not in calib.peak:
        valid = ", ".join(p for p in PRECISIONS if p in calib.peak)
        raise HcsimError(f"precision {precision!r} is not available on {calib.name} (valid: {valid})")


def wave_efficiency(m: int, n: int, tile: tuple[int, int], sms: int) -> float:
    """Fraction of SM-waves doing useful work: tiles / (sms x waves) for ``ceil(m/Tm) x ceil(n/Tn)`` tiles.

    >>> wave_efficiency(128 * 132, 256, (128, 256), 132)
    1.0
    >>> round(wave_efficiency(128 * 132 + 1, 256, (128, 256), 132), 4)  # one more tile: a second wave
    0.5038
    """
    tiles = math.ceil(m / tile[0]) * math.ceil(n / tile[1])
    waves = math.ceil(tiles / sms)
    return tiles / (sms * waves)


def grouped_efficiency(m: int, n: int, groups: int, tile: tuple[int, int], sms: int) -> float:
    """Useful work of a grouped GEMM: ``groups`` GEMMs of ``ceil(m / groups)`` rows each in one kernel.

    Every group pads its rows to whole tiles (tile quantization) and all groups' tiles share the
    SM waves (wave quantization): ``m n / (waves x sms x Tm x Tn)`` with ``waves =
    ceil(groups x ceil(mg/Tm) x ceil(n/Tn) / sms)``.

    >>> grouped_efficiency(8 * 128 * 132, 256, 8, (128, 256), 132)  # whole tiles, whole waves
    1.0
    >>> round(grouped_efficiency(8 * 64, 256 * 132, 8, (128, 256), 132), 4)  # 64-row groups fill half a tile
    0.5
    """
    rows = math.ceil(m / groups)
    tiles = groups * math.ceil(rows / tile[0]) * math.ceil(n / tile[1])
    waves = math.ceil(tiles / sms)
    return min(1.0, m * n / (waves * sms * tile[0] * tile[1]))


def _best_wave(m: int, n: int, calib: Calibration, groups: int = 1, sms: int | None = None) -> float:
    if sms is not None:  # a GEMM on sms of the GPU's SMs: tiles / (all SMs x its waves on sms SMs)
        if not calib.wave_quantization:
            return sms / calib.sms
        return max(wave_efficiency(m, n, tile, sms) for tile in calib.tiles) * sms / calib.sms
    if not calib.wave_quantization:
        return 1.0
    if groups > 1:
        return max(grouped_efficiency(m, n, groups, tile, calib.sms) for tile in calib.tiles)
    return max(wave_efficiency(m, n, tile, calib.sms) for tile in calib.tiles)


def _gemm_kernel(
    flops: float,
    nbytes: float,
    m: int,
    n: int,
    precision: str,
    calib: Calibration,
    groups: int = 1,
    sms: int | None = None,
) -> float:
    rate = calib.peak[precision] * calib.gemm_fraction[precision] * _best_wave(m, n, calib, groups, sms)
    return max(flops / rate, nbytes / calib.hbm_achieved)


def _permute(kind: str, pairs: int, hidden: int, groups: int, calib: Calibration) -> float:
    """Seconds to put an expert op's tokens in expert order and back, per pass (MoE token dispatch).

    Megatron-Core's dispatcher permutes each (token, expert) pair's hidden vector into expert
    order before the grouped GEMM and un-permutes (weighted sum) after it: two memory-bound
    kernels, each reading and writing ``pairs x hidden`` BF16 values.
    """
    if kind != "experts" or groups < 1:
        return 0.0
    return 2.0 * (2.0 * pairs * hidden * 2.0) / calib.hbm_achieved + 2.0 * calib.launch


def _quantize(op: Any, pass_: str, elements: int, precision: str, calib: Calibration) -> float:
    """Seconds to quantize an FP8 linear's activation (forward) or output gradient (backward).

    Transformer Engine casts the BF16 tensor to FP8 twice, row-wise for this GEMM and column-wise
    (transposed) for the weight-gradient GEMM (``gemm.fp8_quantize_bytes`` per element ``Q``: read 2,
    write 1 + 1), one memory-bound kernel; the FP8 weight is cached across micro-batches. Under the
    ``delayed`` recipe a linear fed by its fused norm (``after_norm``) gets FP8 from the norm kernel
    itself, which writes 1 byte where the norm operator counts 2, and the transposed copy is one FP8
    transpose (read 1, write 1): ``Q - 3`` bytes, one kernel. Under ``current`` scaling each cast first
    reads its input for the amax (2 bytes) and computes the scale (a kernel): ``Q + 2`` bytes, three
    kernels; after a norm, whose kernel returns the amax, ``Q`` bytes and two kernels. Expert GEMMs
    (grouped) and 16-bit GEMMs are not timed here.
    """
    if precision != "fp8" or getattr(op, "kind", None) != "linear" or not calib.fp8_quantize_bytes:
        return 0.0
    fused = pass_ == "fwd" and bool(getattr(op, "after_norm", False))
    per_element, kernels = calib.fp8_quantize_bytes, 1
    if calib.fp8_recipe == "delayed" and fused:
        per_element = calib.fp8_quantize_bytes - 3.0
    elif calib.fp8_recipe == "current":
        per_element, kernels = (calib.fp8_quantize_bytes, 2) if fused else (calib.fp8_quantize_bytes + 2.0, 3)
    return elements * per_element / calib.hbm_achieved + kernels * calib.launch


def _rope(op: Any, calib: Calibration) -> float:
    """Seconds of the fused rotary embedding around an attention core, per pass: one kernel for the query
    and one for the key, each reading and writing its BF16 values (``op.rope`` values: 4 bytes each;
    Megatron-Core's ``apply_rope_fusion``, Transformer Engine's fused RoPE; 0 s without rotary positions)."""
    values = float(getattr(op, "rope", 0.0) or 0.0)
    return values * 4.0 / calib.hbm_achieved + 2.0 * calib.launch if values > 0 else 0.0


#: the loss's kernels per pass, (bytes per logit element, kernels), by ``Calibration.cross_entropy``:
#: unfused (megatron/core/tensor_parallel/cross_entropy.py@d98e8a64): forward .float() r2 w4, max r4, subtract
#: r4 w4, exp r4 w4, sum r4, divide r4 w4; backward the target update, multiply r4 w4, autograd's cast back r4 w2.
#: native (megatron/core/fusions/fused_cross_entropy.py@d98e8a64, jit-fused): float+max r2 w4, subtract+exp+sum
#: r4 w4 (and the target gather), log+divide r4 w4; backward update, multiply+cast r4 w2.
#: te (TransformerEngine@d0067d0d transformer_engine/pytorch/triton/cross_entropy.py): online softmax r2,
#: loss and FP32 gradient r2 w4; backward element_mul r4 w4, autograd's cast to the logits' BF16 r4 w2.
CROSS_ENTROPY_KERNELS = {
    "unfused": {"fwd": (38.0, 6), "bwd": (14.0, 3)},
    "native": {"fwd": (22.0, 4), "bwd": (6.0, 2)},
    "te": {"fwd": (8.0, 2), "bwd": (14.0, 2)},
}


def _cross_entropy(logits: float, pass_: str, calib: Calibration) -> float:
    per_element, kernels = CROSS_ENTROPY_KERNELS[calib.cross_entropy][pass_]
    return logits * per_element / calib.hbm_achieved + kernels * calib.launch


def _layout_copies(op: Any, calib: Calibration) -> float:
    """A kernel's layout copies around attention, per pass: ``attention_copies`` HBM passes over the kernel's
    operands (q, k, v, out; backward: their gradients, the same sizes; not a KV cache), in four copy kernels
    (0 s when the kernel reads the layout in place)."""
    if not calib.attention_copies:
        return 0.0
    operands = float(op.fwd_bytes) - float(getattr(op, "kv_cache_bytes", 0.0))  # a KV cache is read in place
    return calib.attention_copies * operands / calib.hbm_achieved + 4 * calib.launch


def _check_shape(shape: Any, what: str, size: int) -> tuple[int, ...]:
    ok = isinstance(shape, (tuple, list)) and len(shape) == size
    if ok:
        ok = all(not isinstance(x, bool) and isinstance(x, int) and x >= 1 for x in shape[:5])
    if not ok:
        valid = "(m, n, k)" if size == 3 else "(batch, seq_q, seq_kv, heads, head_dim, causal)"
        raise HcsimError(f"{what} {shape!r} is invalid (valid: {valid}, positive integers)")
    return tuple(shape)


def gemm_seconds(
    m: int, n: int, k: int, precision: str, calib: Calibration, pass_: str = "fwd", launch: bool = True
) -> float:
    """Seconds of one GEMM ``[m, k] x [k, n]`` (``pass_="bwd"``: its dgrad + wgrad), bytes counted
    as ``(m*k + k*n) * in + m*n * out`` (FP8 inputs write BF16). ``launch=False`` gives kernel time only.

    >>> from hcsim.calibration import load_calibration
    >>> calib = load_calibration("dgx-h100")
    >>> m = 128 * 132; t = gemm_seconds(m, 256 * 8, 8192, "bf16", calib, launch=False)
    >>> round(2 * m * 2048 * 8192 / t / 1e12, 1)  # one full wave: peak x MAMF fraction
    794.5
    """
    m, n, k = _check_shape((m, n, k), "gemm", 3)
    _check_precision(precision, calib)
    if pass_ not in ("fwd", "bwd"):
        raise HcsimError(f"pass {pass_!r} is unknown (valid: fwd, bwd)")
    i, o = _IN_BYTES[precision], _OUT_BYTES[precision]
    if pass_ == "fwd":
        shapes = [(m, n, k)]
    else:
        shapes = [(m, k, n), (k, n, m)]
    t = 0.0
    for a, b, c in shapes:
        t += _gemm_kernel(2.0 * a * b * c, (a * c + c * b) * i + a * b * o, a, b, precision, calib)
    return t + (len(shapes) * calib.launch if launch else 0.0)


def _interp(seqlens: tuple[float, ...], values: tuple[float | None, ...], s: float) -> float:
    """Piecewise linear in log2(seqlen) over the non-null readings, held constant beyond the ends."""
    pts = [(math.log2(x), v) for x, v in zip(seqlens, values, strict=True) if v is not None]
    x = math.log2(s)
    if x <= pts[0][0]:
        return pts[0][1]
    if x >= pts[-1][0]:
        return pts[-1][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
        if x0 <= x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    raise AssertionError("unreachable")  # pragma: no cover


def _table_rate(table: Any, head_dim: int, causal: bool, seq: int, calib: Calibration) -> float:
    """The measured rate for the nearest head dim (ties: the larger), the same mask if measured."""
    dims = sorted({d for d, _ in table}, key=lambda d: (abs(d - head_dim), -d))
    d = dims[0]
    values = table.get((d, causal)) or table[(d, not causal)]
    return _interp(calib.attention_seqlens, values, seq)


def _fa_fwd_flops(batch: int, seq_q: int, seq_kv: int, heads: int, head_dim: int, causal: bool) -> float:
    pairs = float(seq_q) * seq_kv
    if causal:  # bottom-right aligned mask; s*s/2 when seq_q == seq_kv, FA's convention
        pairs = seq_q * seq_kv / 2.0 if seq_q >= seq_kv else seq_q * seq_kv - seq_q * seq_q / 2.0
    return 4.0 * batch * pairs * heads * head_dim


def attention_seconds(shape: Any, pass_: str, calib: Calibration, launch: bool = True) -> float:
    """Seconds of a FlashAttention pass for ``shape = (batch, seq_q, seq_kv, heads, head_dim, causal)``.

    FLOPs are FA's (fwd ``4*b*sq*skv*h*d``, halved when causal; bwd 2.5 x fwd), divided by the
    calibrated rate at ``seq_kv`` (BF16: the kernel Transformer Engine also uses under FP8).

    >>> from hcsim.calibration import load_calibration
    >>> calib = load_calibration("dgx-h100")
    >>> shape = (4, 4096, 4096, 16, 128, True)
    >>> round(4 * 4 * 4096 * 4096 * 16 * 128 / 2 / attention_seconds(shape, "fwd", calib, launch=False) / 1e12)
    518
    """
    b, sq, skv, h, d, causal = _check_shape(shape, "attention", 6)
    if not isinstance(causal, bool):
        raise HcsimError(f"attention causal flag {causal!r} is invalid (valid: True, False)")
    if pass_ not in ("fwd", "bwd"):
        raise HcsimError(f"pass {pass_!r} is unknown (valid: fwd, bwd)")
    fwd = _fa_fwd_flops(b, sq, skv, h, d, causal)
    if pass_ == "fwd":
        t = fwd / _table_rate(calib.attention_fwd, d, causal, skv, calib)
    else:
        t = 2.5 * fwd / _table_rate(calib.attention_bwd, d, causal, skv, calib)
    return t + (calib.launch if launch else 0.0)


def op_seconds(op: Any, pass_: str, precision: str, calib: Calibration) -> float:
    """Seconds of one operator pass on one GPU under ``calib``.

    ``op`` needs ``kind``, ``fwd_flops``, ``bwd_flops``, ``fwd_bytes``, ``bwd_bytes`` and may carry
    ``gemm = (m, n, k)`` (linear/experts/router: the forward GEMM) and ``attention = (batch, seq_q,
    seq_kv, heads, head_dim, causal)``; a missing or ``None`` shape falls back to the roofline
    ``max(flops / (peak x max_fraction), bytes / hbm_achieved) + launch``. A pass with neither
    FLOPs nor bytes launches nothing and takes 0 s.

    GEMM ops use the operator's own FLOPs and bytes (an experts op may hold several GEMMs) with the
    wave efficiency of its shape; the backward is split evenly between dgrad and wgrad.

    >>> from types import SimpleNamespace
    >>> from hcsim.calibration import load_calibration
    >>> calib = load_calibration("dgx-h100")
    >>> norm = SimpleNamespace(kind="norm", fwd_flops=0.0, bwd_flops=0.0, fwd_bytes=2668e6, bwd_bytes=0.0)
    >>> round(op_seconds(norm, "fwd", "bf16", calib) * 1e6, 1)  # 1 ms at 2668 GB/s + 2.5 us launch
    1002.5
    """
    kind = getattr(op, "kind", None)
    if kind not in _KINDS:
        raise HcsimError(f"operator kind {kind!r} is unknown (valid: {', '.join(_KINDS)})")
    if pass_ not in ("fwd", "bwd"):
        raise HcsimError(f"pass {pass_!r} is unknown (valid: fwd, bwd)")
    _check_precision(precision, calib)
    flops = float(getattr(op, f"{pass_}_flops"))
    nbytes = float(getattr(op, f"{pass_}_bytes"))
    if flops < 0 or nbytes < 0 or math.isnan(flops) or math.isnan(nbytes):
        raise HcsimError(f"operator {getattr(op, 'name', kind)!r}: negative or NaN {pass_} FLOPs/bytes")
    if flops == 0 and nbytes == 0:
        return 0.0
    gemm = getattr(op, "gemm", None)
    attention = getattr(op, "attention", None)
    if kind in _GEMM_KINDS and gemm is not None:
        m, n, k = _check_shape(gemm, "gemm", 3)
        groups = getattr(op, "groups", 1) if kind == "experts" else 1
        if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
            raise HcsimError(f"operator {getattr(op, 'name', kind)!r}: groups {groups!r} (valid: an integer >= 1)")
        extra = _permute(kind, m, k, groups, calib)
        if pass_ == "fwd":
            kernel = _gemm_kernel(flops, nbytes, m, n, precision, calib, groups)
            return kernel + calib.launch + _quantize(op, pass_, m * k, precision, calib) + extra
        half_f, half_b = flops / 2.0, nbytes / 2.0
        dgrad = _gemm_kernel(half_f, half_b, m, k, precision, calib, groups)
        wgrad = _gemm_kernel(half_f, half_b, k * groups, n, precision, calib, groups)  # a (k, n) output per group
        return dgrad + wgrad + 2.0 * calib.launch + _quantize(op, pass_, m * n, precision, calib) + extra
    # attention and element-wise work stay BF16 under FP8 (Transformer Engine)
    p = "bf16" if precision == "fp8" else precision
    if kind == "attention" and attention is not None and p != "fp32":
        return attention_seconds(attention, pass_, calib) + _layout_copies(op, calib) + _rope(op, calib)
    if getattr(op, "logits", 0.0):  # the loss: the stack's cross-entropy kernels
        return _cross_entropy(float(op.logits), pass_, calib)
    if kind in _GEMM_KINDS:
        p = precision
    kernel_bwd = getattr(op, "kernel_bwd_bytes", None)
    if pass_ == "bwd" and kernel_bwd is not None:  # the backward kernels' own traffic (module docstring)
        nbytes = float(kernel_bwd)
    rate = calib.peak[p] * calib.gemm_fraction[p]
    return max(flops / rate, nbytes / calib.hbm_achieved) + calib.launch + _dropout(op, pass_, calib)


def _dropout(op: Any, pass_: str, calib: Calibration) -> float:
    """A hidden dropout's cost on a residual add (``dropout_elements`` values; only with ``calib.dropout``):
    Megatron's fused bias-dropout-add also writes a 1-byte mask; the backward's dropout kernel reads the
    gradient (2) and the mask (1) and writes the masked gradient (2)."""
    elements = float(getattr(op, "dropout_elements", 0.0) or 0.0)
    if not calib.dropout or elements <= 0:
        return 0.0
    if pass_ == "fwd":
        return elements / calib.hbm_achieved
    return elements * 5.0 / calib.hbm_achieved + calib.launch


def linear_parts(op: Any, pass_: str, precision: str, calib: Calibration, sms: int | None = None) -> tuple[float, ...]:
    """A linear operator's pass as the GEMMs it launches, on ``sms`` SMs (default: all of ``calib.sms``).

    ``fwd``: ``(seconds,)``; ``bwd``: ``(dgrad, wgrad)``, the output gradient's FP8 quantization
    with the dgrad. With every SM they add up to :func:`op_seconds` (to rounding). Fewer SMs (a
    GEMM beside a userbuffers reduce-scatter that reserves the rest, Transformer Engine's
    ``set_sm_margin``) run its tiles in ``ceil(tiles / sms)`` waves: the rate is the full GPU's
    times ``tiles / (calib.sms x waves)``. A linear without a ``gemm`` shape splits its backward
    evenly and scales its roofline by ``sms / calib.sms``.

    >>> from types import SimpleNamespace
    >>> from hcsim.calibration import load_calibration
    >>> calib = load_calibration("dgx-h100")
    >>> m, n, k = 128 * 132, 256, 8192
    >>> op = SimpleNamespace(kind="linear", gemm=(m, n, k), fwd_flops=2.0 * m * n * k, bwd_flops=4.0 * m * n * k,
    ...                      fwd_bytes=0.0, bwd_bytes=0.0)
    >>> full, = linear_parts(op, "fwd", "bf16", calib)
    >>> part, = linear_parts(op, "fwd", "bf16", calib, sms=132 - 24)  # 132 tiles on 108 SMs: two waves
    >>> round((part - calib.launch) / (full - calib.launch), 4)
    2.0
    """
    if getattr(op, "kind", None) != "linear":
        raise HcsimError(f"operator {getattr(op, 'name', '?')!r} is not a linear (valid: kind 'linear')")
    if pass_ not in ("fwd", "bwd"):
        raise HcsimError(f"pass {pass_!r} is unknown (valid: fwd, bwd)")
    if sms is not None and (isinstance(sms, bool) or not isinstance(sms, int) or not 1 <= sms <= calib.sms):
        raise HcsimError(f"SMs {sms!r} are invalid (valid: an integer from 1 to {calib.sms})")
    _check_precision(precision, calib)
    flops = float(getattr(op, f"{pass_}_flops"))
    nbytes = float(getattr(op, f"{pass_}_bytes"))
    if flops == 0 and nbytes == 0:
        return (0.0,) if pass_ == "fwd" else (0.0, 0.0)
    gemm = getattr(op, "gemm", None)
    share = 1.0 if sms is None else sms / calib.sms
    if gemm is None:
        rate = calib.peak[precision] * calib.gemm_fraction[precision] * share
        t = max(flops / rate, nbytes / calib.hbm_achieved)
        return (t + calib.launch,) if pass_ == "fwd" else (t / 2.0 + calib.launch, t / 2.0 + calib.launch)
    m, n, k = _check_shape(gemm, "gemm", 3)
    if pass_ == "fwd":
        kernel = _gemm_kernel(flops, nbytes, m, n, precision, calib, 1, sms)
        return (kernel + calib.launch + _quantize(op, "fwd", m * k, precision, calib),)
    half_f, half_b = flops / 2.0, nbytes / 2.0
    dgrad = _gemm_kernel(half_f, half_b, m, k, precision, calib, 1, sms)
    wgrad = _gemm_kernel(half_f, half_b, k, n, precision, calib, 1, sms)
    return dgrad + calib.launch + _quantize(op, "bwd", m * n, precision, calib), wgrad + calib.launch
