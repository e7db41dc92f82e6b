"""HuggingFace config.json files read as published, or refused in one line.

The vendored files (tests/data/hf_configs, Apache-2.0, see its README) and the shapes of
Gemma's and DeepSeek-MoE's published configs: each must give the model's published
parameter count. What a family's class decides and the file leaves out is read by
``model_type``: Gemma's MLP is gated GELU (GeGLU: gate, up and down matrices) and its
embeddings are tied (GemmaConfig's default), LLaMA's and Mistral's are untied.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from hcsim.errors import HcsimError
from hcsim.workload.models.spec import UnknownModelType, from_hf_config, load_model

DATA = Path(__file__).parents[1] / "data" / "hf_configs"

#: google/gemma-7b config.json (published shape; Gemma Terms of Use): no tie_word_embeddings key
GEMMA_7B = {
    "architectures": ["GemmaForCausalLM"], "attention_bias": False, "head_dim": 256, "hidden_act": "gelu",
    "hidden_size": 3072, "intermediate_size": 24576, "max_position_embeddings": 8192, "model_type": "gemma",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 16, "torch_dtype": "bfloat16",
    "vocab_size": 256000,
}  # fmt: skip
#: google/gemma-2b: 18 blocks of 2048, 8 heads of 256, one KV head (multi-query), MLP 16384
GEMMA_2B = {**GEMMA_7B, "hidden_size": 2048, "intermediate_size": 16384, "num_attention_heads": 8,
            "num_hidden_layers": 18, "num_key_value_heads": 1}  # fmt: skip
#: google/gemma-2-9b: Gemma 2 spells the activation hidden_activation and alternates a 4096-token window
GEMMA2_9B = {
    "architectures": ["Gemma2ForCausalLM"], "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584, "intermediate_size": 14336,
    "max_position_embeddings": 8192, "model_type": "gemma2", "num_attention_heads": 16, "num_hidden_layers": 42,
    "num_key_value_heads": 8, "sliding_window": 4096, "torch_dtype": "float32", "vocab_size": 256000,
}  # fmt: skip
#: deepseek-ai/deepseek-moe-16b-base (DeepSeek License): DeepSeek's MoE spellings, no latent attention
DEEPSEEK_MOE_16B = {
    "architectures": ["DeepseekForCausalLM"], "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048,
    "intermediate_size": 10944, "max_position_embeddings": 4096, "model_type": "deepseek",
    "moe_intermediate_size": 1408, "moe_layer_freq": 1, "n_routed_experts": 64, "n_shared_experts": 2,
    "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 28, "num_key_value_heads": 16,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 102400,
}  # fmt: skip


@pytest.mark.parametrize(
    "name, total, active",
    [("mixtral-8x7b-v0.1", 46.7, 12.9), ("qwen3-30b-a3b", 30.5, 3.3), ("mistral-7b-v0.1", 7.24, 7.24)],
)
def test_vendored_configs_have_their_published_size(name: str, total: float, active: float) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a known model_type: no warning
        m = load_model(DATA / f"{name}.json")
    assert m.parameters() / 1e9 == pytest.approx(total, rel=0.005)
    assert m.active_parameters() / 1e9 == pytest.approx(active, rel=0.02)  # published: two digits (3.3B)
    assert m.gated_mlp and not m.tied_embeddings and m.precision == "fp16"


def test_mixtral_reads_as_its_preset() -> None:
    m = load_model(DATA / "mixtral-8x7b-v0.1.json")
    assert (m.experts, m.top_k, m.expert_intermediate, m.moe_layers()) == (8, 2, 14336, 32)


def test_qwen3_moe_spellings() -> None:
    m = load_model(DATA / "qwen3-30b-a3b.json")
    assert (m.experts, m.top_k, m.expert_intermediate, m.moe_every, m.head_dim) == (128, 8, 768, 1, 128)
    assert m.q_dim == 4096 != m.hidden  # head_dim 128 x 32 heads, on a hidden width of 2048


def test_mistral_slides_its_window_on_every_block() -> None:
    m = load_model(DATA / "mistral-7b-v0.1.json")
    assert (m.sliding_window, m.sliding_every) == (4096, 1)
    assert m.attention_window(0, 32768) == m.attention_window(31, 32768) == 4096


@pytest.mark.parametrize(
    "config, total",
    [(GEMMA_7B, 8.54), (GEMMA_2B, 2.51), (GEMMA2_9B, 9.24)],
    ids=["gemma-7b", "gemma-2b", "gemma-2-9b"],
)
def test_gemma_is_gated_gelu_with_tied_embeddings(config: dict, total: float) -> None:
    """Read as a 2-matrix GELU MLP with an untied head, gemma-7b would count 7.2B (published: 8.54B)."""
    m = from_hf_config(config, "gemma")
    assert m.gated_mlp and m.tied_embeddings
    assert m.parameters() / 1e9 == pytest.approx(total, rel=0.005)
    assert m.head_dim == 256


def test_gemma2_alternates_its_window() -> None:
    m = from_hf_config(GEMMA2_9B, "gemma-2-9b")
    assert (m.sliding_window, m.sliding_every) == (4096, 2)
    assert [m.attention_window(i, 8192) for i in range(4)] == [4096, 8192, 4096, 8192]


def test_deepseek_moe_spellings_and_size() -> None:
    m = from_hf_config(DEEPSEEK_MOE_16B, "deepseek-moe-16b")
    assert (m.experts, m.top_k, m.first_dense, m.shared_intermediate) == (64, 6, 1, 2 * 1408)
    assert m.moe_layers() == 27 and not m.is_moe_layer(0)
    assert m.parameters() / 1e9 == pytest.approx(16.4, rel=0.005)
    assert m.active_parameters() / 1e9 == pytest.approx(2.8, rel=0.02)


def test_a_family_default_is_overridden_by_the_file() -> None:
    assert not from_hf_config({**GEMMA_7B, "tie_word_embeddings": False}).tied_embeddings
    llama = json.loads((DATA / "mistral-7b-v0.1.json").read_text())
    assert from_hf_config({**llama, "model_type": "llama", "tie_word_embeddings": True}).tied_embeddings
    assert from_hf_config({**llama, "model_type": "llama", "hidden_act": "gelu"}).gated_mlp  # LlamaMLP is gated


def test_an_unknown_model_type_warns_once_in_one_line(tmp_path: Path) -> None:
    config = {**json.loads((DATA / "mistral-7b-v0.1.json").read_text()), "model_type": "my_decoder"}
    del config["tie_word_embeddings"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.warns(UnknownModelType) as caught:
        m = load_model(path)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "\n" not in text and "model_type 'my_decoder' is not one hcsim knows" in text
    assert "gated (3-matrix) MLP" in text and "tie_word_embeddings false (LlamaConfig's default)" in text
    assert m.gated_mlp and not m.tied_embeddings
    del config["model_type"]
    with pytest.warns(UnknownModelType, match="it names no model_type"):
        from_hf_config(config)


@pytest.mark.parametrize(
    "change, match",
    [
        ({"model_type": "mamba"}, "model_type 'mamba' is not a decoder-only transformer"),
        ({"model_type": "t5", "is_encoder_decoder": True}, "not a decoder-only transformer"),
        ({"moe_layer_freq": 2}, "moe_layer_freq 2 is not modelled"),
        ({"kv_lora_rank": 512}, "key 'qk_nope_head_dim' is missing"),  # latent attention needs all its widths
        ({"kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 0}, "v_head_dim 0"),
    ],
)
def test_what_cannot_be_read_as_published_is_refused(change: dict, match: str) -> None:
    with pytest.raises(HcsimError, match=match) as err:
        from_hf_config({**DEEPSEEK_MOE_16B, **change}, source="config.json")
    assert "\n" not in str(err.value)


def test_refused_shapes_of_other_families() -> None:
    gemma3 = {**GEMMA2_9B, "model_type": "gemma3_text"}
    with pytest.raises(HcsimError, match="Gemma 3's sliding-window pattern"):
        from_hf_config(gemma3)
    with pytest.raises(HcsimError, match="multimodal config .*text_config"):
        from_hf_config({"model_type": "gemma3", "text_config": GEMMA2_9B})


def test_cli_says_the_warning_in_one_line(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    config = {**json.loads((DATA / "mistral-7b-v0.1.json").read_text()), "model_type": "my_decoder"}
    config["num_hidden_layers"] = 2
    (tmp_path / "my.json").write_text(json.dumps(config))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    args = ["run", "--system", "cxl", "--xpus", "8", "--model", "my.json", "--inference", "--batch", "1"]
    r = subprocess.run([sys.executable, "-m", "hcsim.cli", *args, "--context", "512"], capture_output=True,
                       text=True, cwd=tmp_path, env=env, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr
    warned = [line for line in r.stderr.splitlines() if "my_decoder" in line]
    assert warned == [warned[0]] and warned[0].startswith("hcsim: warning: model config 'my.json': model_type")
    assert "Traceback" not in r.stderr and "return from_hf_config" not in r.stderr  # no source line
