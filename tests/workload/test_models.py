"""Transformer specs and operators (hcsim.workload.models): parameters vs published sizes, FLOPs vs 6ND, Table 4.

Published sizes: Meta's model cards (LLaMA 2: 6.74B / 13.0B / 69.0B; LLaMA 3: 8.03B /
70.6B; LLaMA 3.1 405B: 405.9B), Mistral's Mixtral paper (46.7B total, 12.9B active per
token), GPT-3's paper (175B), and HuggingFace's GPT-2 (124,439,808, counted exactly); the MoE presets
against their model cards (Mistral's Mixtral 8x22B announcement: 141B total, 39B active; Qwen's Qwen3-30B-A3B
and Qwen3-235B-A22B cards: 30.5B / 3.3B and 235B / 22B).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from hcsim.errors import HcsimError
from hcsim.workload import llama2
from hcsim.workload.models import PRESETS, block_operators, embedding_operators, head_operators, load_model
from hcsim.workload.models.ops import check_layout, touched_experts
from hcsim.workload.models.spec import PRESET_ALIASES

ROOT = Path(__file__).resolve().parents[2]

PUBLISHED = {  # total parameters (billions), tolerance
    "llama2-7b": (6.74, 0.01),
    "llama2-13b": (13.0, 0.01),
    "llama2-70b": (69.0, 0.01),
    "llama3-8b": (8.03, 0.01),
    "llama3-70b": (70.6, 0.01),
    "llama3-405b": (405.9, 0.01),
    "mixtral-8x7b": (46.7, 0.01),
    "gpt3-175b": (175.0, 0.01),
    "mixtral-8x22b": (141.0, 0.01),
    "qwen3-30b-a3b": (30.5, 0.01),
    "qwen3-235b-a22b": (235.0, 0.01),
}

ACTIVE = {"mixtral-8x7b": 12.9, "mixtral-8x22b": 39.0, "qwen3-30b-a3b": 3.3, "qwen3-235b-a22b": 22.0}  # billions


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_counts_match_the_published_sizes(name):
    published, tol = PUBLISHED[name]
    assert load_model(name).parameters() / 1e9 == pytest.approx(published, rel=tol)


@pytest.mark.parametrize("name", sorted(ACTIVE))
def test_moe_active_parameters_match_the_model_cards(name):
    m = load_model(name)
    # the cards round to 0.1B (3.3B: +-1.5%) or to 1B (22B, 39B: +-2.3%)
    assert m.active_parameters() / 1e9 == pytest.approx(ACTIVE[name], rel=0.025)
    assert m.moe_layers() == m.layers


def test_dense_models_have_as_many_active_as_total_parameters():
    for name in ("llama2-7b", "llama3-70b", "gpt3-175b"):
        m = load_model(name)
        assert m.active_parameters() == m.parameters()


def test_llama2_13b_decoder_equals_the_table4_transcription_parameters():
    m = load_model("llama2-13b")
    assert m.block_parameters() == llama2.decoder_parameters()


def _write(tmp_path: Path, config: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


LLAMA2_13B_HF = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 5120,
    "intermediate_size": 13824,
    "max_position_embeddings": 4096,
    "model_type": "llama",
    "num_attention_heads": 40,
    "num_hidden_layers": 40,
    "num_key_value_heads": 40,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
    "vocab_size": 32000,
}
MIXTRAL_HF = {
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mixtral",
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 32000,
}
GPT2_HF = {  # HuggingFace gpt2 (124M)
    "activation_function": "gelu_new",
    "model_type": "gpt2",
    "n_ctx": 1024,
    "n_embd": 768,
    "n_head": 12,
    "n_layer": 12,
    "n_positions": 1024,
    "vocab_size": 50257,
}


@pytest.mark.parametrize(("config", "preset"), [(LLAMA2_13B_HF, "llama2-13b"), (MIXTRAL_HF, "mixtral-8x7b")])
def test_a_huggingface_config_reads_as_its_preset(tmp_path, config, preset):
    spec = load_model(_write(tmp_path, config))
    assert replace(spec, name=preset) == PRESETS[preset]


def test_gpt2_config_counts_huggingface_parameters_exactly(tmp_path):
    spec = load_model(_write(tmp_path, GPT2_HF))
    assert (spec.gated_mlp, spec.tied_embeddings, spec.bias, spec.precision) == (False, True, True, "fp32")
    assert spec.parameters() == 124_439_808  # sum(p.numel() for p in GPT2LMHeadModel(...).parameters())


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"hidden_size": None}, "hidden_size.*missing"),
        ({"num_attention_heads": 0}, "num_attention_heads 0 is invalid"),
        ({"num_hidden_layers": "40"}, "num_hidden_layers '40' is invalid"),
        ({"torch_dtype": "int8"}, "torch_dtype 'int8' is unsupported"),
        ({"num_attention_heads": 48}, "not divisible by heads 48"),
        ({"num_key_value_heads": 7}, "not divisible by kv_heads 7"),
        ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
    ],
)
def test_bad_config_keys_are_one_line_errors(tmp_path, change, match):
    config = {k: v for k, v in {**LLAMA2_13B_HF, **change}.items() if v is not None}
    with pytest.raises(HcsimError, match=match) as err:
        load_model(_write(tmp_path, config))
    assert "\n" not in str(err.value) and "config.json" in str(err.value)


def test_unknown_models_and_unreadable_files_are_one_line_errors(tmp_path):
    with pytest.raises(HcsimError, match="unknown.*llama2-7b"):
        load_model("llama9")
    with pytest.raises(HcsimError, match="does not exist"):
        load_model(str(tmp_path / "none.json"))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(HcsimError, match="not valid JSON"):
        load_model(str(tmp_path / "bad.json"))
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(HcsimError, match="not a JSON object"):
        load_model(str(tmp_path / "list.json"))


# ------------------------------------------------------------------ FLOPs
def _training_flops(spec, tokens, seq):
    """Forward + backward FLOPs of one step of ``tokens`` tokens (sequences of ``seq``) from the operators."""
    ops = embedding_operators(spec, tokens) + head_operators(spec, tokens)
    for i in range(spec.layers):
        ops += block_operators(spec, tokens, layer=i, context=seq)
    return sum(o.fwd_flops + o.bwd_flops for o in ops), ops


def _matmul_parameters(spec):
    """Parameters that are multiplied per token: attention and MLP matrices and the LM head (not embeddings, norms)."""
    h, q, kv = spec.hidden, spec.q_dim, spec.kv_dim
    mats = 3 if spec.gated_mlp else 2
    return spec.layers * (2 * h * q + 2 * h * kv + mats * h * spec.intermediate) + spec.vocab * h


@pytest.mark.parametrize("name", ["llama2-7b", "llama2-13b", "llama3-70b", "gpt3-175b"])
def test_training_flops_are_6nd_plus_the_attention_term(name):
    """Dense: 6 x (matmul parameters) x D + 12 x L x s x q x D, plus norms and elementwise ops (< 0.5%)."""
    spec = load_model(name)
    seq = spec.sequence
    tokens = 2 * seq
    total, ops = _training_flops(spec, tokens, seq)
    expected = 6 * _matmul_parameters(spec) * tokens + 12 * spec.layers * seq * spec.q_dim * tokens
    memory_bound = sum(o.fwd_flops + o.bwd_flops for o in ops if o.kind in ("norm", "elementwise", "embedding"))
    assert total - memory_bound == pytest.approx(expected, rel=1e-12)
    assert memory_bound / total < 0.005
    # against 6 x (all parameters) x D: the embedding table costs no FLOPs, attention adds 12 L s q
    six_nd = 6 * spec.parameters() * tokens
    attention = 12 * spec.layers * seq * spec.q_dim * tokens
    assert (total - attention) / six_nd == pytest.approx(1.0, abs=0.02)


def test_llama2_13b_training_flops_vs_6nd_numbers():
    spec = load_model("llama2-13b")
    total, _ = _training_flops(spec, 4096, 4096)
    six_nd = 6 * spec.parameters() * 4096
    assert six_nd / 1e12 == pytest.approx(319.9, abs=0.1)
    assert total / 1e12 == pytest.approx(357.1, abs=0.1)  # 6ND - embeddings (4.0) + attention (41.2) + norms (0.05)
    assert total / six_nd == pytest.approx(1.116, abs=0.001)


def test_moe_training_flops_follow_the_active_parameters():
    spec = load_model("mixtral-8x7b")
    seq = 4096
    total, ops = _training_flops(spec, seq, seq)
    h, e, k = spec.hidden, spec.experts, spec.top_k
    per_layer = 2 * h * spec.q_dim + 2 * h * spec.kv_dim + h * e + k * 3 * h * spec.expert_intermediate
    matmul = spec.layers * per_layer + spec.vocab * h
    expected = 6 * matmul * seq + 12 * spec.layers * seq * spec.q_dim * seq
    swiglu = 3 * 4 * seq * k * spec.expert_intermediate * spec.layers  # the experts' activation, fwd + bwd
    memory_bound = sum(o.fwd_flops + o.bwd_flops for o in ops if o.kind in ("norm", "elementwise", "embedding"))
    assert total - memory_bound - swiglu == pytest.approx(expected, rel=1e-12)
    assert (total - expected) / total < 0.005


# ------------------------------------------------------------------ Table 4
# Table 4's GFLOP are units of 2^40 / 1000 FLOP: its linear_k 195 is 2 x 4096 x 5120^2 = 214.7e9 FLOP
# divided by 1.0995e9 (195.3; the table rounds), and its attention 312.5 is 4 x 4096^2 x 5120 / 1.0995e9 exactly.
TABLE4_UNIT = 2**40 / 1000


def _derived_llama2_13b_layer():
    spec = load_model("llama2-13b")
    return {o.name: o for o in block_operators(spec, 4096, context=4096)}


def _table(name):
    return next(row for row in llama2.TABLE4 if row[0] == name)


def test_llama2_13b_attention_rows_match_table4():
    ops = _derived_llama2_13b_layer()
    per_linear = ops["attn.qkv"].fwd_flops / 3  # MHA: Q, K and V are h x h each
    for row in ("linear_k", "linear_q", "linear_v"):
        assert per_linear / TABLE4_UNIT == pytest.approx(_table(row)[1], rel=0.002)
        assert 2 * per_linear / TABLE4_UNIT == pytest.approx(_table(row)[4], rel=0.002)
    assert ops["attn.out"].fwd_flops / TABLE4_UNIT == pytest.approx(_table("linear_out")[1], rel=0.002)
    assert ops["attn.core"].fwd_flops / TABLE4_UNIT == pytest.approx(_table("attention")[1], rel=1e-12)
    assert ops["attn.core"].bwd_flops / TABLE4_UNIT == pytest.approx(_table("attention")[4], rel=1e-12)


def test_llama2_13b_mlp_differs_from_table4_row_by_row_but_not_in_sum():
    """The paper's MLP is two 4h linears (780 each); LLaMA's is SwiGLU: gate+up 2 x h x 13824, down 13824 x h."""
    ops = _derived_llama2_13b_layer()
    up, down = ops["mlp.up"].fwd_flops / TABLE4_UNIT, ops["mlp.down"].fwd_flops / TABLE4_UNIT
    assert up / _table("linear_up")[1] == pytest.approx(1.352, abs=0.001)  # 2 x 13824 vs 4 x 5120 = 20480
    assert down / _table("linear_down")[1] == pytest.approx(0.676, abs=0.001)
    assert (up + down) / (_table("linear_up")[1] + _table("linear_down")[1]) == pytest.approx(1.014, abs=0.001)


def test_llama2_13b_layer_flops_within_one_percent_of_table4():
    ops = _derived_llama2_13b_layer()
    derived = sum(o.fwd_flops + o.bwd_flops for o in ops.values()) / TABLE4_UNIT
    table = sum(row[1] + row[4] for row in llama2.TABLE4)
    assert derived / table == pytest.approx(1.0, abs=0.01)
    assert derived / table > 1.0  # the SwiGLU MLP is 1.4% above the table's two 4h linears


# ------------------------------------------------------------------ TP, KV cache, layouts
@pytest.mark.parametrize("name", ["llama2-13b", "llama3-70b", "mixtral-8x7b"])
def test_tensor_parallel_splits_gemm_flops_and_weights_evenly(name):
    spec = load_model(name)
    one = {o.name: o for o in block_operators(spec, 1024, context=1024)}
    tp = 8 if spec.heads % 8 == 0 else 4
    split = {o.name: o for o in block_operators(spec, 1024, context=1024, tp=tp)}
    for op in ("attn.qkv", "attn.core", "attn.out", "mlp.up", "mlp.down", "moe.experts"):
        if op in one:
            assert split[op].fwd_flops * tp == pytest.approx(one[op].fwd_flops, rel=1e-12)
            assert split[op].params * tp == one[op].params
    assert split["norm1"].fwd_flops == one["norm1"].fwd_flops  # replicated


@pytest.mark.parametrize(("name", "batch", "context"), [("llama2-7b", 8, 4096), ("llama3-70b", 3, 1000)])
def test_kv_cache_bytes_per_decode_step(name, batch, context):
    """2 x layers x kv_heads x head_dim x context x b x bytes."""
    spec = load_model(name)
    read = sum(
        o.kv_cache_bytes
        for i in range(spec.layers)
        for o in block_operators(spec, batch, layer=i, context=context, phase="decode")
    )
    closed = 2 * spec.layers * spec.kv_heads * spec.head_dim * context * batch * spec.bytes_per_value
    assert read == closed == spec.kv_cache_bytes(batch, context)
    tp = 8
    per_rank = sum(o.kv_cache_bytes for o in block_operators(spec, batch, context=context, phase="decode", tp=tp))
    assert per_rank * tp * spec.layers == closed


def test_decode_reads_the_weights_once_per_step():
    spec = load_model("llama2-13b")
    ops = block_operators(spec, 4, context=2048, phase="decode")
    assert sum(o.weight_bytes for o in ops) == (spec.block_parameters() - 2 * spec.hidden) * 2
    assert all(o.bwd_flops == 0 and o.activation_bytes == 0 for o in ops)


def test_decode_experts_touched_grow_with_the_batch():
    spec = load_model("mixtral-8x7b")
    assert touched_experts(spec, 1) == pytest.approx(2.0)
    assert touched_experts(spec, 64) == pytest.approx(8.0, rel=1e-6)
    one = {o.name: o for o in block_operators(spec, 1, context=128, phase="decode")}
    assert one["moe.experts"].weight_bytes == pytest.approx(2 * spec.expert_parameters() * 2)


@pytest.mark.parametrize(
    ("name", "tp", "ep", "match"),
    [
        ("llama2-13b", 16, 1, "tp 16 does not divide the 40 attention heads"),
        ("llama3-70b", 3, 1, "tp 3 does not divide the 64 attention heads"),
        ("mixtral-8x7b", 1, 3, "ep 3 does not divide the 8 experts"),
        ("llama2-7b", 1, 2, "ep 2 needs a mixture-of-experts model"),
        ("llama2-7b", 0, 1, "tp 0 is invalid"),
    ],
)
def test_impossible_layouts_are_one_line_errors(name, tp, ep, match):
    with pytest.raises(HcsimError, match=match):
        check_layout(load_model(name), tp, ep)


def test_kv_heads_are_replicated_beyond_tp_kv_heads():
    spec = load_model("llama3-70b")  # 8 KV heads
    check_layout(spec, 16 if spec.heads % 16 == 0 else 8)
    ops = {o.name: o for o in block_operators(spec, 1, context=100, phase="decode", tp=16)}
    assert ops["attn.core"].kv_cache_bytes == 2 * 100 * 1 * spec.head_dim * 2  # one KV head per rank


def test_bad_phase_tokens_and_context_are_errors():
    spec = load_model("llama2-7b")
    with pytest.raises(HcsimError, match="phase 'serve' is unknown"):
        block_operators(spec, 8, phase="serve")
    with pytest.raises(HcsimError, match="decode step needs context"):
        block_operators(spec, 8, phase="decode")
    with pytest.raises(HcsimError, match="tokens 0 is invalid"):
        block_operators(spec, 0)
    assert math.isfinite(sum(o.fwd_bytes for o in block_operators(spec, 8, context=1)))


# ------------------------------------------------------------------ docs/models.md
def test_the_docs_python_example_runs_and_prints_what_the_page_says(tmp_path):
    page = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    block = re.search(r"^```python[ \t]*\n(.*?)^```[ \t]*$\n*It prints `([^`]*)`", page, re.M | re.S)
    assert block, "docs/models.md needs a ```python block followed by 'It prints `...`'"
    code, printed = block.group(1), block.group(2)
    assert len(code.strip().splitlines()) <= 12, "the example should stay about ten lines"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300, env=_env()
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == printed


def _env():
    import os

    return dict(os.environ, PYTHONPATH=str(ROOT))


@pytest.mark.parametrize("alias", sorted(PRESET_ALIASES))
def test_nvidia_table_spellings_load_their_preset(alias):
    assert PRESET_ALIASES[alias] in PRESETS
    assert load_model(alias) is PRESETS[PRESET_ALIASES[alias]]
    assert load_model(alias.upper()) is PRESETS[PRESET_ALIASES[alias]]
    assert alias not in PRESETS.unknown("x").args[0]  # the valid list names the presets only


def test_an_unknown_model_name_is_still_one_line():
    with pytest.raises(HcsimError, match=r"model 'llama3.2-405b' is unknown \(valid: a config.json file or one of"):
        load_model("llama3.2-405b")
