"""``Calibration.with_attention``: the flash-attn tables of a machine, and the layout copies its path adds."""

from __future__ import annotations

import pytest

from hcsim.calibration import load_calibration
from hcsim.calibration.compute import attention_seconds, op_seconds
from hcsim.errors import HcsimError
from hcsim.workload.models.ops import block_operators
from hcsim.workload.models.spec import load_model


def _core(model: str, tokens: int, tp: int = 1):
    ops = block_operators(load_model(model), tokens, tp=tp, precision="fp8", context=tokens)
    return next(op for op in ops if op.name == "attn.core")


def test_auto_is_the_same_calibration_and_flash_swaps_only_attention():
    calib = load_calibration("dgx-h100")
    assert calib.with_attention("auto") is calib
    flash = calib.with_attention("flash")
    assert flash.attention_kernel.startswith("FlashAttention-2") and flash.attention_copies == 2
    assert flash.attention_fwd != calib.attention_fwd and flash.attention_flash is None
    same = ("peak", "gemm_fraction", "hbm_achieved", "launch", "channels", "entries")
    assert all(getattr(flash, f) == getattr(calib, f) for f in same)
    with pytest.raises(HcsimError, match="unknown"):
        calib.with_attention("fa3")


@pytest.mark.parametrize("model,tokens,tp", [("llama2-7b", 4096, 1), ("llama3-70b", 8192, 8), ("gpt3-5b", 2048, 1)])
def test_flash_time_is_the_kernel_plus_its_layout_copies(model, tokens, tp):
    # closed form: FA2 table time + 2 HBM passes over q, k, v, out (GQA: k, v of the KV heads) + 4 launches,
    # plus the fused rotary embedding of a RoPE model (q and k read and written, two kernels)
    calib = load_calibration("dgx-h100")
    flash = calib.with_attention("flash")
    op = _core(model, tokens, tp)
    rope = op.rope * 4 / calib.hbm_achieved + 2 * calib.launch if op.rope else 0.0
    assert (op.rope > 0) == model.startswith("llama")
    for p in ("fwd", "bwd"):
        copies = 2 * op.fwd_bytes / flash.hbm_achieved + 4 * flash.launch
        assert op_seconds(op, p, "fp8", flash) == pytest.approx(
            attention_seconds(op.attention, p, flash) + copies + rope
        )
        assert op_seconds(op, p, "fp8", calib) == pytest.approx(attention_seconds(op.attention, p, calib) + rope)
        assert op_seconds(op, p, "fp8", flash) > 1.3 * op_seconds(op, p, "fp8", calib)


def test_a_flash_section_needs_its_copies(tmp_path):
    from importlib import resources

    text = resources.files("hcsim.calibration").joinpath("data/dgx-h100.yaml").read_text(encoding="utf-8")
    broken = text.replace("  layout_copies: {value: 2,", "  layout_copiez: {value: 2,")
    assert broken != text
    path = tmp_path / "c.yaml"
    path.write_text(broken)
    with pytest.raises(HcsimError, match="attention_flash.layout_copiez"):
        load_calibration(str(path))
