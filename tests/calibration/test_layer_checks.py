"""The layer-level check: the calibrated per-operator models summed over a TE benchmark layer."""

from hcsim.calibration.compute import op_seconds
from hcsim.calibration.schema import load_calibration
from hcsim.workload.models.layer_checks import TE_LAYER, te_layer_rows
from hcsim.workload.models.ops import block_operators
from hcsim.workload.models.precision import training_precision
from hcsim.workload.models.spec import TransformerSpec


def test_te_layer_rows_within_their_tolerance_and_never_slow():
    rows = te_layer_rows()
    assert len(rows) == 3
    for row in rows:
        assert abs(row.error) <= row.tolerance, row
        assert row.predicted < row.measured, row  # the benchmark's dropout is not modelled: never slower


def test_fp8_quantization_is_timed_once_per_operand_as_a_memory_bound_kernel():
    calib = load_calibration("dgx-h100")
    c = TE_LAYER
    spec = TransformerSpec("l", 1, c["hidden"], c["heads"], c["heads"], c["ffn"], 32000, 2048, gated_mlp=False)
    ops = block_operators(spec, 4096, phase="train", precision=training_precision("fp8"), context=2048, sequences=2)
    qkv = next(o for o in ops if o.name == "attn.qkv")
    m, n, k = qkv.gemm
    plain = calib.__class__(**{**calib.__dict__, "fp8_quantize_bytes": 0.0})
    extra_fwd = op_seconds(qkv, "fwd", "fp8", calib) - op_seconds(qkv, "fwd", "fp8", plain)
    extra_bwd = op_seconds(qkv, "bwd", "fp8", calib) - op_seconds(qkv, "bwd", "fp8", plain)
    # the QKV input comes from the fused norm: under delayed scaling the norm writes FP8 (1 B instead of 2) and
    # one FP8 transpose (read 1, write 1) makes the column-wise copy: 4 - 3 = 1 B per element, one kernel
    assert qkv.after_norm
    assert abs(extra_fwd - (m * k * 1 / calib.hbm_achieved + calib.launch)) < 1e-15
    assert abs(extra_bwd - (m * n * 4 / calib.hbm_achieved + calib.launch)) < 1e-15
    out = next(o for o in ops if o.name == "attn.out")
    mo, _, ko = out.gemm
    extra_out = op_seconds(out, "fwd", "fp8", calib) - op_seconds(out, "fwd", "fp8", plain)
    assert not out.after_norm and abs(extra_out - (mo * ko * 4 / calib.hbm_achieved + calib.launch)) < 1e-15
    assert op_seconds(qkv, "fwd", "bf16", calib) == op_seconds(qkv, "fwd", "bf16", plain)  # BF16: nothing to quantize
