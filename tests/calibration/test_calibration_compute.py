"""The compute model against closed forms: peak x fraction, wave quantization, bandwidth bounds, FA tables."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pytest

from hcsim.calibration import attention_seconds, gemm_seconds, load_calibration, op_seconds, wave_efficiency
from hcsim.calibration.compute import _interp
from hcsim.errors import HcsimError

H100 = load_calibration("dgx-h100")
A100 = load_calibration("dgx-a100")


def _op(kind, fwd_flops=0.0, bwd_flops=0.0, fwd_bytes=0.0, bwd_bytes=0.0, **shape):
    return SimpleNamespace(
        kind=kind, fwd_flops=fwd_flops, bwd_flops=bwd_flops, fwd_bytes=fwd_bytes, bwd_bytes=bwd_bytes, **shape
    )


@pytest.mark.parametrize(
    "calib, precision",
    [(c, p) for c in (H100, A100) for p in ("bf16", "fp16", "fp32", "fp8") if p in c.peak],
    ids=lambda x: getattr(x, "name", x),
)
def test_large_gemm_full_waves_hits_peak_times_fraction(calib, precision):
    tm, tn = calib.tiles[0]
    m, n, k = tm * calib.sms, tn * 4, 16384  # exactly 4 full waves
    assert wave_efficiency(m, n, (tm, tn), calib.sms) == 1.0
    t = gemm_seconds(m, n, k, precision, calib, launch=False)
    expected = calib.peak[precision] * calib.gemm_fraction[precision]
    assert 2 * m * n * k / t == pytest.approx(expected, rel=1e-12)
    assert gemm_seconds(m, n, k, precision, calib) == pytest.approx(t + calib.launch, rel=1e-12)


def test_wave_quantization_just_above_a_tile_multiple():
    tm, tn = H100.tiles[0]
    n, k = tn * 2, 8192
    m_full = tm * 66  # 66 x 2 = 132 tiles: one full wave
    m_over = m_full + 1  # 67 x 2 = 134 tiles: a second wave with 2 tiles
    assert wave_efficiency(m_over, n, (tm, tn), 132) == 134 / 264
    t_full = gemm_seconds(m_full, n, k, "bf16", H100, launch=False)
    t_over = gemm_seconds(m_over, n, k, "bf16", H100, launch=False)
    rate = H100.peak["bf16"] * H100.gemm_fraction["bf16"]
    assert t_full == pytest.approx(2 * m_full * n * k / rate, rel=1e-12)
    assert t_over == pytest.approx(2 * m_over * n * k / (rate * 134 / 264), rel=1e-12)
    assert t_over / t_full > 1.9  # one extra row costs a whole wave
    off = dataclasses.replace(H100, wave_quantization=False)
    assert gemm_seconds(m_over, n, k, "bf16", off, launch=False) == pytest.approx(2 * m_over * n * k / rate)


def test_candidate_tiles_take_the_best_wave():
    calib = dataclasses.replace(H100, tiles=((128, 256), (64, 64)), hbm_achieved=1e30)  # compute term only
    m, n = 64, 2112  # 64x64: 33 tiles (0.25); 128x256: 9 tiles (9/132)
    assert wave_efficiency(m, n, (64, 64), 132) == 33 / 132
    t = gemm_seconds(m, n, 1 << 20, "bf16", calib, launch=False)
    assert t == pytest.approx(2 * m * n * (1 << 20) / (989.4e12 * H100.gemm_fraction["bf16"] * 0.25), rel=1e-12)


def test_small_m_gemm_is_bandwidth_bound():
    m, n, k = 8, 28672, 8192  # decode-like: bytes dominate
    t = gemm_seconds(m, n, k, "bf16", H100, launch=False)
    nbytes = (m * k + k * n) * 2 + m * n * 2
    assert t == pytest.approx(nbytes / 2668e9, rel=1e-12)
    t8 = gemm_seconds(m, n, k, "fp8", H100, launch=False)  # FP8 reads half the weights, writes BF16
    assert t8 == pytest.approx(((m * k + k * n) + m * n * 2) / 2668e9, rel=1e-12)


def test_backward_is_dgrad_plus_wgrad():
    m, n, k = 4096, 14336, 4096
    expected = gemm_seconds(m, k, n, "bf16", H100) + gemm_seconds(k, n, m, "bf16", H100)
    assert gemm_seconds(m, n, k, "bf16", H100, "bwd") == pytest.approx(expected, rel=1e-12)


def test_op_seconds_linear_uses_the_operator_flops_and_shape():
    m, n, k = 8192, 14336, 4096
    f, b = 2.0 * m * n * k, 2.0 * (m * k + k * n + m * n)
    op = _op("linear", f, 2 * f, b, 2 * b, gemm=(m, n, k))
    tm, tn = H100.tiles[0]
    rate = 989.4e12 * H100.gemm_fraction["bf16"]
    fwd = max(f / (rate * wave_efficiency(m, n, (tm, tn), 132)), b / 2668e9) + 2.5e-6
    assert op_seconds(op, "fwd", "bf16", H100) == pytest.approx(fwd, rel=1e-12)
    bwd = (
        f / (rate * wave_efficiency(m, k, (tm, tn), 132))
        + f / (rate * wave_efficiency(k, n, (tm, tn), 132))
        + 2 * 2.5e-6
    )
    assert op_seconds(op, "bwd", "bf16", H100) == pytest.approx(bwd, rel=1e-12)
    fp8 = max(f / (1979e12 * H100.gemm_fraction["fp8"] * wave_efficiency(m, n, (tm, tn), 132)), b / 2668e9)
    quantize = m * k * 4 / 2668e9 + 2.5e-6  # the FP8 input cast row-wise + column-wise (TE), one kernel
    assert op_seconds(op, "fwd", "fp8", H100) == pytest.approx(fp8 + 2.5e-6 + quantize, rel=1e-12)


def test_op_without_shape_falls_back_to_the_roofline():
    f, b = 1e12, 1e9
    for op in (_op("linear", f, 2 * f, b, b), _op("linear", f, 2 * f, b, b, gemm=None)):
        expected = f / (989.4e12 * H100.gemm_fraction["bf16"]) + 2.5e-6
        assert op_seconds(op, "fwd", "bf16", H100) == pytest.approx(expected, rel=1e-12)
    att = _op("attention", f, 2 * f, b, b, attention=None)
    # FP8 training keeps attention in BF16
    assert op_seconds(att, "fwd", "fp8", H100) == op_seconds(att, "fwd", "bf16", H100)


def test_memory_bound_ops_at_achieved_bandwidth():
    for kind in ("norm", "elementwise", "embedding"):
        op = _op(kind, 1e3, 2e3, 1e8, 2e8)
        assert op_seconds(op, "fwd", "fp8", H100) == pytest.approx(1e8 / 2668e9 + 2.5e-6, rel=1e-12)
        assert op_seconds(op, "bwd", "bf16", A100) == pytest.approx(2e8 / 1737e9 + 2.7e-6, rel=1e-12)
    assert op_seconds(_op("norm"), "bwd", "bf16", H100) == 0.0  # nothing to do: no kernel


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_the_flash_attention_tables(causal):
    b, h, d = 4, 16, 128
    for i, s in enumerate(H100.attention_seqlens):
        s = int(s)
        fa_fwd = 4.0 * b * s * s * h * d / (2 if causal else 1)
        t_fwd = attention_seconds((b, s, s, h, d, causal), "fwd", H100, launch=False)
        assert fa_fwd / t_fwd == pytest.approx(H100.attention_fwd[(d, causal)][i], rel=1e-12)
        t_bwd = attention_seconds((b, s, s, h, d, causal), "bwd", H100, launch=False)
        # FA counts bwd = 2.5 x fwd; the H100 bwd table has the unmasked reading only
        assert 2.5 * fa_fwd / t_bwd == pytest.approx(H100.attention_bwd[(d, False)][i], rel=1e-12)


def test_attention_convention_independent_of_operator_flops():
    shape = (2, 4096, 4096, 32, 128, True)
    a = _op("attention", 1e12, 2e12, 1e9, 2e9, attention=shape)
    b = _op("attention", 7e12, 14e12, 1e9, 2e9, attention=shape)  # Megatron-style or any count
    for p in ("fwd", "bwd"):
        assert op_seconds(a, p, "bf16", H100) == op_seconds(b, p, "bf16", H100)
        assert op_seconds(a, p, "bf16", H100) == pytest.approx(attention_seconds(shape, p, H100), rel=1e-12)


def test_attention_interpolates_in_log_seqlen_and_clamps():
    t = H100.attention_fwd[(64, False)]
    s = int(2 ** ((math.log2(1024) + math.log2(2048)) / 2))
    rate = 4.0 * s * s * 1 * 64 / attention_seconds((1, s, s, 1, 64, False), "fwd", H100, launch=False)
    x = (math.log2(s) - 10) / 1.0
    assert rate == pytest.approx(t[1] + (t[2] - t[1]) * x, rel=1e-9)
    big = 4.0 * 65536 * 65536 * 64 / attention_seconds((1, 65536, 65536, 1, 64, False), "fwd", H100, launch=False)
    assert big == pytest.approx(t[-1])
    # a null reading is skipped: a missing 1k reading lies between the 512 and 2k readings
    assert _interp((512.0, 1024.0, 2048.0), (1.0, None, 3.0), 1024) == pytest.approx(2.0, rel=1e-12)
    # a head dim beyond the tables (256) takes the nearest measured one (128)
    r256 = 4.0 * 4096 * 4096 * 256 / attention_seconds((1, 4096, 4096, 1, 256, False), "fwd", H100, launch=False)
    assert r256 == pytest.approx(H100.attention_fwd[(128, False)][3])
    # nearest head dim: 96 -> 128 (tie between 64 and 128 goes to the larger)
    r96 = 4.0 * 4096 * 4096 * 96 / attention_seconds((1, 4096, 4096, 1, 96, False), "fwd", H100, launch=False)
    assert r96 == pytest.approx(H100.attention_fwd[(128, False)][3])


def test_bad_input_is_one_line():
    op = _op("linear", 1.0, 1.0, 1.0, 1.0)
    cases = [
        (lambda: op_seconds(_op("conv"), "fwd", "bf16", H100), "operator kind 'conv' is unknown"),
        (lambda: op_seconds(op, "fwdd", "bf16", H100), "pass 'fwdd' is unknown (valid: fwd, bwd)"),
        (lambda: op_seconds(op, "fwd", "int4", H100), "precision 'int4' is unknown"),
        (lambda: op_seconds(op, "fwd", "fp8", A100), "precision 'fp8' is not available on dgx-a100"),
        (lambda: op_seconds(_op("linear", 1, 1, 1, 1, gemm=(0, 1, 1)), "fwd", "bf16", H100), "gemm (0, 1, 1)"),
        (lambda: op_seconds(_op("linear", -1.0, 1, 1, 1), "fwd", "bf16", H100), "negative or NaN"),
        (lambda: attention_seconds((1, 1, 1, 1, 1), "fwd", H100), "attention (1, 1, 1, 1, 1) is invalid"),
        (lambda: attention_seconds((1, 1, 1, 1, 1, 1), "fwd", H100), "causal flag 1 is invalid"),
    ]
    for call, message in cases:
        with pytest.raises(HcsimError) as err:
            call()
        assert message in str(err.value) and "\n" not in str(err.value)


def test_experts_op_is_a_grouped_gemm_with_token_permutation():
    """Local experts run as one grouped GEMM (each group pads its rows to whole tiles) plus the
    dispatcher's permute and un-permute (two memory-bound kernels over pairs x hidden BF16 values)."""
    from hcsim.calibration.compute import grouped_efficiency

    pairs, up, h, groups = 8 * 200, 2 * 1024, 2048, 8  # 200 rows per expert: two 128-row tiles, 72 wasted
    f, b = 2.0 * pairs * up * h, 1e3
    op = _op("experts", f, 2 * f, b, 2 * b, gemm=(pairs, up, h))
    grouped = SimpleNamespace(**{**op.__dict__, "groups": groups})
    tm, tn = H100.tiles[0]
    rows = -(-pairs // groups)
    tiles = groups * -(-rows // tm) * -(-up // tn)
    eff = pairs * up / (-(-tiles // 132) * 132 * tm * tn)
    assert grouped_efficiency(pairs, up, groups, (tm, tn), 132) == pytest.approx(eff, rel=1e-12)
    permute = 2 * (2 * pairs * h * 2) / 2668e9 + 2 * 2.5e-6
    rate = 989.4e12 * H100.gemm_fraction["bf16"]
    assert op_seconds(grouped, "fwd", "bf16", H100) == pytest.approx(f / (rate * eff) + 2.5e-6 + permute, rel=1e-12)
    one = max(f / (rate * wave_efficiency(pairs, up, (tm, tn), 132)), b / 2668e9) + 2.5e-6 + permute
    assert op_seconds(op, "fwd", "bf16", H100) == pytest.approx(one, rel=1e-12)  # one local expert: still dispatched
    assert op_seconds(grouped, "fwd", "bf16", H100) > op_seconds(op, "fwd", "bf16", H100)  # padding
    bad = SimpleNamespace(**{**op.__dict__, "groups": 0})
    with pytest.raises(HcsimError, match="groups 0"):
        op_seconds(bad, "fwd", "bf16", H100)
