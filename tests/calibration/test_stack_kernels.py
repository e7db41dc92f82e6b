"""The training stack's kernels a calibration times around the operators (docs/calibration.md, "Compute model"):
fused RoPE, the loss's cross-entropy kernels, Transformer Engine's FP8 casts by recipe, the memory-bound
backward kernels, hidden dropout, and the norms and adds on the sequence-parallel shard. Closed forms."""

from __future__ import annotations

import pytest

from hcsim.calibration import load_calibration, op_seconds
from hcsim.calibration.compute import CROSS_ENTROPY_KERNELS
from hcsim.errors import HcsimError
from hcsim.workload.models import block_operators, embedding_operators, head_operators, load_model
from hcsim.workload.parallel.costs import block_cost

CALIB = load_calibration("dgx-h100")
B, L = CALIB.hbm_achieved, CALIB.launch


def _ops(model: str = "llama2-7b", tokens: int = 4096, **kw):
    return {o.name: o for o in block_operators(load_model(model), tokens, precision="fp8", **kw)}


def test_rope_is_two_kernels_over_the_query_and_key_values_and_only_on_rotary_models():
    core = _ops()["attn.core"]
    spec = load_model("llama2-7b")
    assert core.rope == 4096 * (spec.q_dim + spec.kv_heads * spec.head_dim)
    without = type(core)(**{**core.__dict__, "rope": 0.0})
    for p in ("fwd", "bwd"):
        extra = op_seconds(core, p, "fp8", CALIB) - op_seconds(without, p, "fp8", CALIB)
        assert extra == pytest.approx(core.rope * 4 / B + 2 * L, rel=1e-12)
    assert _ops("gpt3-5b", 2048)["attn.core"].rope == 0.0  # learned positions
    assert _ops(phase="prefill")["attn.core"].rope == 0.0  # serving does not time it


def test_selective_recompute_runs_the_core_again_without_its_rotary_embedding():
    ops = list(block_operators(load_model("llama2-7b"), 4096, precision="fp8"))
    cost = block_cost(ops, "selective")
    again = [op for op, p in cost.attention.bwd_ops if p == "recompute"]
    assert [o.name for o in again] == ["attn.core"] and again[0].rope == 0.0
    full = block_cost(ops, "full")
    assert any(op.rope > 0 for op, p in full.attention.bwd_ops if p == "recompute")


@pytest.mark.parametrize("impl", ["unfused", "native", "te"])
def test_the_loss_is_its_implementations_kernels(impl):
    spec = load_model("llama3-8b")
    loss = next(o for o in head_operators(spec, 8192, tp=2, precision="fp8") if o.name == "head.loss")
    assert loss.logits == 8192 * (spec.vocab // 2)
    calib = CALIB.with_stack(cross_entropy=impl)
    for p in ("fwd", "bwd"):
        per_element, kernels = CROSS_ENTROPY_KERNELS[impl][p]
        assert op_seconds(loss, p, "fp8", calib) == pytest.approx(loss.logits * per_element / B + kernels * L)
    assert CALIB.cross_entropy == "unfused"  # Megatron-Core's default


def test_fp8_casts_by_recipe_and_by_whether_a_norm_feeds_the_linear():
    ops = _ops()
    current = CALIB.with_stack(fp8_recipe="current")
    for name, fused in (("attn.qkv", True), ("mlp.up", True), ("attn.out", False), ("mlp.down", False)):
        op = ops[name]
        assert op.after_norm is fused
        m, n, k = op.gemm
        plain = CALIB.__class__(**{**CALIB.__dict__, "fp8_quantize_bytes": 0.0})
        fwd_delayed = op_seconds(op, "fwd", "fp8", CALIB) - op_seconds(op, "fwd", "fp8", plain)
        fwd_current = op_seconds(op, "fwd", "fp8", current) - op_seconds(op, "fwd", "fp8", plain)
        bwd_current = op_seconds(op, "bwd", "fp8", current) - op_seconds(op, "bwd", "fp8", plain)
        want_delayed = (1 if fused else 4) * m * k / B + L
        want_current = (4 * m * k / B + 2 * L) if fused else (6 * m * k / B + 3 * L)
        assert fwd_delayed == pytest.approx(want_delayed, rel=1e-9)
        assert fwd_current == pytest.approx(want_current, rel=1e-9)
        assert bwd_current == pytest.approx(6 * m * n / B + 3 * L, rel=1e-9)  # gradients: never after a norm


def test_memory_bound_backward_kernels_move_their_own_bytes_and_the_model_sums_keep_two_forwards():
    ops = _ops()
    t, h = 4096, load_model("llama2-7b").hidden
    for name, kernel in (("norm1", 3 * t * h * 2), ("add1", 3 * t * h * 2)):
        op = ops[name]
        assert op.bwd_bytes == 2 * op.fwd_bytes  # what the ideal model sums is unchanged
        assert op.kernel_bwd_bytes == kernel
        assert op_seconds(op, "bwd", "fp8", CALIB) == pytest.approx(kernel / B + L)
    act = ops["mlp.act"]
    inner = load_model("llama2-7b").intermediate
    assert act.kernel_bwd_bytes == (inner + 2 * 2 * inner) * t * 2  # read dy and the gated input, write dx
    emb = embedding_operators(load_model("llama2-7b"), t, precision="fp8")[0]
    assert emb.kernel_bwd_bytes == 32000 * h * 12 + 4 * t * h


def test_hidden_dropout_adds_a_mask_to_the_residual_adds_only_when_on():
    add = _ops()["add2"]
    on = CALIB.with_stack(dropout=True)
    assert op_seconds(add, "fwd", "fp8", on) - op_seconds(add, "fwd", "fp8", CALIB) == pytest.approx(
        add.dropout_elements / B
    )
    assert op_seconds(add, "bwd", "fp8", on) - op_seconds(add, "bwd", "fp8", CALIB) == pytest.approx(
        5 * add.dropout_elements / B + L
    )
    norm = _ops()["norm2"]
    assert op_seconds(norm, "fwd", "fp8", on) == op_seconds(norm, "fwd", "fp8", CALIB)


def test_sequence_parallelism_runs_the_norms_and_adds_on_the_shard():
    plain = _ops("llama2-70b", 4096, tp=4)
    sp = _ops("llama2-70b", 4096, tp=4, sequence_parallel=True)
    for name in ("norm1", "add1", "norm2", "add2"):
        assert sp[name].fwd_bytes * 4 == plain[name].fwd_bytes
        assert sp[name].kernel_bwd_bytes * 4 == plain[name].kernel_bwd_bytes
        assert sp[name].activation_bytes == plain[name].activation_bytes  # the memory model divides it
    for name in ("attn.qkv", "attn.core", "mlp.act", "mlp.down"):
        assert sp[name] == plain[name]


def test_stack_choices_refuse_unknown_values():
    with pytest.raises(HcsimError, match="cross entropy 'fused' is unknown"):
        CALIB.with_stack(cross_entropy="fused")
    with pytest.raises(HcsimError, match="fp8 recipe 'mx' is unknown"):
        CALIB.with_stack(fp8_recipe="mx")
    with pytest.raises(HcsimError, match="dropout 1 is invalid"):
        CALIB.with_stack(dropout=1)  # type: ignore[arg-type]
    assert CALIB.with_stack() == CALIB


_RUN = ("run", "--system", "dgx-h100", "--xpus", "8", "--model", "llama2-7b", "--parallel", "tp=1",
        "--micro-batch", "1", "--microbatches", "2", "--sequence", "1024", "--fast", "--json")  # fmt: skip


def test_cli_stack_flags_need_a_calibration_and_the_recipe_needs_fp8():
    from clitools import assert_refused, run_here

    assert_refused(run_here(*_RUN, "--cross-entropy", "te"), "--cross-entropy needs a calibration")
    assert_refused(run_here(*_RUN, "--hidden-dropout"), "--hidden-dropout needs a calibration")
    assert_refused(
        run_here(*_RUN, "--calibration", "dgx-h100", "--precision", "bf16", "--fp8-recipe", "current"),
        "--fp8-recipe current needs --precision fp8",
    )


def test_cli_stack_flags_slow_the_run_down_by_their_kernels():
    import json

    from clitools import run

    base = (*_RUN, "--calibration", "dgx-h100", "--precision", "fp8")
    plain = json.loads(run(*base).stdout)["tokens_per_s_per_gpu"]
    stack = json.loads(run(*base, "--fp8-recipe", "current", "--hidden-dropout").stdout)["tokens_per_s_per_gpu"]
    fused = json.loads(run(*base, "--cross-entropy", "te").stdout)["tokens_per_s_per_gpu"]
    assert stack < plain < fused  # more kernels, fewer tokens; TE's loss moves 22 B a logit where unfused moves 52


def test_a_calibrated_runs_json_says_what_it_assumed_and_an_ideal_one_is_unchanged():
    import json

    from clitools import run

    out = json.loads(run(*_RUN, "--calibration", "dgx-h100", "--precision", "fp8", "--cross-entropy", "te",
                         "--attention-backend", "flash", "--hidden-dropout").stdout)  # fmt: skip
    setup = out["setup"]
    assert setup["calibration"] == "dgx-h100" and setup["precision"] == "fp8"
    assert setup["cross_entropy"] == "te" and setup["fp8_recipe"] == "delayed" and setup["hidden_dropout"] is True
    assert setup["attention_kernel"].startswith("FlashAttention-2")
    assert setup["zero"] == 1 and setup["optimizer_dtype"] == "fp32" and setup["fp8_param_gather"] is False
    assert setup["model"] == _RUN[_RUN.index("--model") + 1] and setup["xpus"] == int(_RUN[_RUN.index("--xpus") + 1])
    assert setup["parallel"] == "dp=8,tp=1,pp=1"  # the layout run, dp filled in
    bf16 = json.loads(run(*_RUN, "--calibration", "dgx-h100", "--precision", "bf16").stdout)["setup"]
    assert bf16["fp8_recipe"] is None and bf16["cross_entropy"] == "unfused" and bf16["hidden_dropout"] is False
    assert bf16["attention_kernel"].startswith("cuDNN")
    assert "setup" not in json.loads(run(*_RUN, "--precision", "fp8").stdout)  # the ideal model's JSON as before
