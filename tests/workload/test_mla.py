"""Multi-head latent attention (DeepSeek-V2/V3) read as published and checked against closed forms.

The shapes below are the published HuggingFace config.json values (deepseek-ai/DeepSeek-V3,
DeepSeek-V2, DeepSeek-V2-Lite; DeepSeek License, so only the shape values are held, as dicts).
Each formula of hcsim.workload.models (parameters, operators per TP rank, KV cache, model
FLOPs) is checked against an expression written out here by hand from its source.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from hcsim.errors import HcsimError
from hcsim.workload.models import block_operators, load_model
from hcsim.workload.models.flops import model_flops_per_token
from hcsim.workload.models.ops import cache_values_per_rank, kv_values_per_rank
from hcsim.workload.models.spec import from_hf_config

#: deepseek-ai/DeepSeek-V3 config.json (shape keys as published)
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
    "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1, "num_hidden_layers": 61,
    "num_attention_heads": 128, "num_key_value_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280,
    "max_position_embeddings": 163840, "num_nextn_predict_layers": 1, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "hidden_act": "silu", "attention_bias": False, "n_group": 8, "topk_group": 4,
}  # fmt: skip
#: deepseek-ai/DeepSeek-V2 config.json: 236B total, 21B activated (DeepSeek-V2 paper, abstract)
DEEPSEEK_V2 = {
    **DEEPSEEK_V3, "model_type": "deepseek_v2", "hidden_size": 5120, "intermediate_size": 12288,
    "moe_intermediate_size": 1536, "n_routed_experts": 160, "n_shared_experts": 2, "num_experts_per_tok": 6,
    "first_k_dense_replace": 1, "num_hidden_layers": 60, "vocab_size": 102400,
}  # fmt: skip
del DEEPSEEK_V2["num_nextn_predict_layers"]
#: deepseek-ai/DeepSeek-V2-Lite config.json: q_lora_rank null (no query bottleneck); 15.7B total
DEEPSEEK_V2_LITE = {
    **DEEPSEEK_V2, "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
    "n_routed_experts": 64, "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
    "q_lora_rank": None,
}  # fmt: skip


def _attention_params(h: int, n: int, r: int, c: int, dn: int, dr: int, dv: int) -> int:
    """Hand count of one MLA block's attention: DeepSeek-V3's modeling file, one matrix per line."""
    q = (h * r + r + r * n * (dn + dr)) if r else h * n * (dn + dr)  # q_a_proj, q_a_layernorm, q_b_proj
    kv = h * (c + dr) + c + c * n * (dn + dv)  # kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj
    return q + kv + n * dv * h  # o_proj


def test_the_preset_is_the_published_config() -> None:
    published = from_hf_config(DEEPSEEK_V3, "deepseek-v3")
    assert published.sequence == 163840  # max_position_embeddings; the preset trains at its 4096 pre-training length
    assert load_model("deepseek-v3") == replace(published, sequence=4096)


@pytest.mark.parametrize(
    "config, total, active",
    [(DEEPSEEK_V3, 671, 37), (DEEPSEEK_V2, 236, 21)],
)
def test_published_sizes(config: dict, total: int, active: int) -> None:
    """Totals to the published three digits; activated (top-k experts, without the input embedding
    lookup, which does no matrix product) to the published two digits: V3 36.6B, V2 20.9B."""
    m = from_hf_config(config)
    assert round(m.parameters() / 1e9) == total
    assert round((m.active_parameters() - m.embedding_parameters()) / 1e9) == active


def test_v2_lite_reads_a_null_q_lora_rank_and_has_its_size() -> None:
    m = from_hf_config(DEEPSEEK_V2_LITE)
    assert (m.q_lora_rank, m.kv_lora_rank, m.head_dim, m.v_dim) == (0, 512, 192, 16 * 128)
    assert round(m.parameters() / 1e8) == 157  # 15.7B published
    assert m.attention_parameters() == _attention_params(2048, 16, 0, 512, 128, 64, 128)


def test_v3_block_parameters_by_hand() -> None:
    m = load_model("deepseek-v3")
    h = 7168
    attn = _attention_params(h, 128, 1536, 512, 128, 64, 128)
    assert m.attention_parameters() == attn
    assert m.block_parameters(0) == 2 * h + attn + 3 * h * 18432  # dense: first_k_dense_replace 3
    moe = 2 * h + attn + h * 256 + 256 * 3 * h * 2048 + 3 * h * 2048  # router, 256 experts, 1 shared
    assert m.block_parameters(3) == moe
    assert m.parameters() == 3 * m.block_parameters(0) + 58 * moe + 2 * 129280 * h + h
    assert (m.mtp_layers, m.is_mla, m.is_moe_layer(2), m.is_moe_layer(3)) == (1, True, False, True)


def test_kv_cache_is_the_latent() -> None:
    """vLLM's MLA cache: kv_lora_rank + rope values per token and block, one copy on every TP rank."""
    m = load_model("deepseek-v3")
    assert m.kv_cache_bytes(3, 1000) == 61 * (512 + 64) * 1000 * 3 * 2
    assert cache_values_per_rank(m, 8) == cache_values_per_rank(m, 1) == 576
    assert kv_values_per_rank(m, 2) == 64 * (192 + 128)  # what ring attention (CP) moves: K and V per head


@pytest.mark.parametrize("tp", [1, 2, 8, 128])
def test_train_operators_against_megatron_core_split(tp: int) -> None:
    """Down projections duplicated (full weight on every rank), up projections and out split by heads."""
    m, t = load_model("deepseek-v3"), 512
    ops = {o.name: o for o in block_operators(m, t, tp=tp, layer=0)}
    h, n = 7168, 128 // tp
    expect = {
        "attn.q_down": (t, 1536, h), "attn.q_up": (t, n * 192, 1536), "attn.kv_down": (t, 576, h),
        "attn.kv_up": (t, n * 256, 512), "attn.out": (t, h, n * 128),
    }  # fmt: skip
    for name, (mm, nn, kk) in expect.items():
        assert ops[name].gemm == (mm, nn, kk)
        assert ops[name].fwd_flops == 2.0 * mm * nn * kk and ops[name].bwd_flops == 4.0 * mm * nn * kk
        assert ops[name].params == nn * kk
    assert ops["attn.q_norm"].params == 1536 and ops["attn.kv_norm"].params == 512
    core = ops["attn.core"]
    assert core.fwd_flops == 2.0 * t * t * n * (192 + 128)  # QK over nope + rope, PV over v
    assert core.attention == (1, t, t, n, 160, True)  # FA's 4·b·s²·h·d with d the mean of 192 and 128
    assert 4.0 * t * t * n * 160 == core.fwd_flops
    held = sum(o.params for o in ops.values() if o.name.startswith("attn."))
    replicated = 7168 * (1536 + 576) + 1536 + 512
    assert (held - replicated) * tp == m.attention_parameters() - replicated


def test_sequence_parallel_runs_the_down_projections_on_the_shard() -> None:
    m = load_model("deepseek-v3")
    plain = {o.name: o for o in block_operators(m, 4096, tp=4, layer=0)}
    sp = {o.name: o for o in block_operators(m, 4096, tp=4, layer=0, sequence_parallel=True)}
    for name in ("attn.q_down", "attn.kv_down"):
        assert sp[name].fwd_flops * 4 == plain[name].fwd_flops
        assert sp[name].activation_bytes * 4 == plain[name].activation_bytes
    sharded = ("norm1", "add1", "norm2", "add2")  # on the shard too; the memory model divides their saved input
    for name in sharded:
        assert sp[name].fwd_bytes * 4 == plain[name].fwd_bytes and sp[name].bwd_bytes * 4 == plain[name].bwd_bytes
        assert sp[name].activation_bytes == plain[name].activation_bytes
    assert all(sp[k] == plain[k] for k in plain if k not in ("attn.q_down", "attn.kv_down", *sharded))


def test_whole_model_training_flops_are_six_times_the_matmul_parameters() -> None:
    """tp 1: every linear 6·params per token, the core 6·s·heads·(nope + rope + v) per token (full square)."""
    m, s = load_model("deepseek-v3"), 1024
    total = 0.0
    for layer in range(m.layers):
        for o in block_operators(m, s, layer=layer):
            if o.kind in ("linear", "attention", "experts"):  # the experts' activation function aside
                total += o.fwd_flops + o.bwd_flops - sum(i.fwd_flops + i.bwd_flops for i in o.inner)
    linear = 0
    for layer in range(m.layers):
        dense = m.block_parameters(layer, active=True) - 2 * 7168 - (7168 * 256 if m.is_moe_layer(layer) else 0)
        linear += dense - 1536 - 512  # the q/kv norms are no matrix
    core = 61 * 6.0 * s * 128 * (192 + 128)
    assert total / s == pytest.approx(6.0 * linear + core, rel=1e-12)


def test_model_flops_as_megatron_bridge_counts_them() -> None:
    """flop_utils.py's MLA branch and MTP terms (Megatron-Bridge@067f987d), written out for DeepSeek-V3."""
    m, s = load_model("deepseek-v3"), 4096
    h, n, V, L, mtp = 7168, 128, 129280, 61, 1
    q_term = 1536 * (h + n * (128 + 64) + 1)
    attn = 3 * 2 * (L + mtp) * (
        q_term + 512 * (h + n * (128 + 128) + 1) + h * 64 + n * 128 * h
        + s * (n * (128 + 64)) / 2 + s * n * 128 / 2
    )  # fmt: skip
    dense, moe = 3, (L - 3) + mtp  # the MTP block is of the last block's kind (MoE)
    mlp = 3 * 2 * h * (18432 * 3 * dense + 2048 * 8 * 3 * moe + 2048 * 3 * moe)
    mtp_extra = 3 * 2 * mtp * (3 * h + 2 * h * h)
    logits = 3 * 2 * h * V * (mtp + 1)
    assert model_flops_per_token(m, s) == pytest.approx(mlp + attn + mtp_extra + logits, rel=1e-12)
    without = model_flops_per_token(m, s, mtp=False)
    assert model_flops_per_token(m, s) - without == pytest.approx(
        attn / (L + mtp) + 3 * 2 * h * (2048 * 8 * 3 + 2048 * 3) + mtp_extra + 3 * 2 * h * V, rel=1e-12
    )


def test_decode_is_the_absorbed_form_over_the_latent_cache() -> None:
    m, batch, ctx, tp = load_model("deepseek-v3"), 8, 1000, 2
    train = {o.name: o for o in block_operators(m, 16, tp=tp, layer=0)}
    dec = {o.name: o for o in block_operators(m, batch, tp=tp, layer=0, phase="decode", context=ctx)}
    n = 64
    assert "attn.kv_up" not in dec
    # W_UK and W_UV, absorbed: the same weights as kv_up, used per head on the latent
    assert dec["attn.q_absorb"].params + dec["attn.out_absorb"].params == train["attn.kv_up"].params
    assert dec["attn.q_absorb"].fwd_flops == 2.0 * batch * n * 128 * 512
    assert dec["attn.out_absorb"].fwd_flops == 2.0 * batch * n * 512 * 128
    core = dec["attn.core"]
    assert core.kv_cache_bytes == batch * ctx * 576 * 2 == m.kv_cache_bytes(batch, ctx) / 61
    assert core.fwd_flops == 2.0 * batch * ctx * n * (576 + 512)
    assert core.attention == (batch, 1, ctx, n, 544, False)
    assert sum(o.params for o in dec.values()) == sum(o.params for o in train.values())


def test_calibrated_attention_uses_the_nearest_measured_head_width() -> None:
    """The H100 tables measure d 64 and 128: MLA's 160 (train) and 544 (decode) take d=128's rate."""
    from hcsim.calibration import load_calibration
    from hcsim.calibration.compute import attention_seconds

    calib = load_calibration("dgx-h100")
    for d in (160, 544):
        for pass_ in ("fwd", "bwd"):
            mla = attention_seconds((2, 4096, 4096, 64, d, True), pass_, calib, launch=False)
            ref = attention_seconds((2, 4096, 4096, 64, 128, True), pass_, calib, launch=False)
            assert mla == pytest.approx(ref * d / 128, rel=1e-12)


@pytest.mark.parametrize(
    "change, match",
    [
        ({"v_head_dim": None}, "key 'v_head_dim' is missing"),
        ({"kv_lora_rank": 0}, "kv_lora_rank 0 is invalid"),
        ({"num_key_value_heads": 8}, "latent attention has kv_heads == heads"),
        ({"num_nextn_predict_layers": -1}, "num_nextn_predict_layers -1 is invalid"),
    ],
)
def test_bad_latent_configs_are_refused_in_one_line(change: dict, match: str) -> None:
    with pytest.raises(HcsimError, match=match) as err:
        from_hf_config({**DEEPSEEK_V3, **change}, source="config.json")
    assert "\n" not in str(err.value) and "config.json" in str(err.value)


def test_inference_step_writes_and_reads_the_latent() -> None:
    """A decode step's graph: every attention-side operator before the attention allreduce; the block's
    resident bytes hold the latent the step appends (batch x (kv_lora_rank + rope) values)."""
    from hcsim.workload.models.inference import inference_step

    m = replace(load_model("deepseek-v3"), layers=4)
    w = inference_step(m, ["x0", "x1"], batch=2, context=64, phase="decode", tp=2)
    attention = [v for v in w.predecessors("l0.attn.allreduce") if v.startswith("x0.")]
    assert attention == ["x0.l0.attn.out"]  # the chain norm1 .. attn.out ends at the allreduce
    chain = ["x0.l0.norm1"]
    while chain[-1] != "x0.l0.attn.out":
        chain += [v for v in w.successors(chain[-1]) if v.startswith("x0.l0.")]
    assert [v.split(".", 2)[2] for v in chain] == [
        "norm1", "attn.q_down", "attn.q_norm", "attn.q_up", "attn.kv_down", "attn.kv_norm", "attn.q_absorb",
        "attn.core", "attn.out_absorb", "attn.out",
    ]  # fmt: skip
    block = sum(o.weight_bytes + o.kv_cache_bytes for o in block_operators(m, 2, tp=2, phase="decode", context=64))
    assert w.nodes["x0.l0.norm1"]["footprint"] == block + 2 * 576 * 2  # + the latent the step appends


def test_serving_kv_bytes_and_iteration_are_the_latent() -> None:
    from hcsim.frontends.serving.iteration import IterationShape, _attention_ops, kv_bytes_per_token

    m = load_model("deepseek-v3")
    assert kv_bytes_per_token(m, 8) == 576 * 2 * 61  # not split by TP: every rank keeps the latent
    shape = IterationShape(decodes=4, kv_hbm=4000, kv_remote=0, chunks=((128, 256, 0),))
    ops = {op.name: op for op, _ in _attention_ops(m, shape, 8)}
    n = 16
    assert ops["attn.decode"].kv_cache_bytes == 4000 * 576 * 2
    assert ops["attn.decode"].fwd_flops == 4000 * 2 * n * (2 * 512 + 64)  # absorbed: QK over 576, PV over 512
    assert ops["attn.prefill0"].fwd_flops == 128 * 384 * 2 * n * (192 + 128)  # up-projected: 192 and 128 wide
    assert ops["attn.prefill0"].kv_cache_bytes == 256 * 576 * 2


def test_mla_up_proj_recompute_drops_q_k_v_and_runs_the_up_projections_again() -> None:
    """Megatron-Core's ``recompute_modules=["mla_up_proj"]``: Q, K, V (2·n(d_n + d_r) + n·d_v values per token)
    are no longer kept; q_up and kv_up run their forward again before the attention backward."""
    from hcsim.workload.parallel.costs import block_cost

    m, t, tp = load_model("deepseek-v3"), 1024, 2
    ops = block_operators(m, t, tp=tp, layer=5)
    plain, up = block_cost(ops, "none"), block_cost(ops, "selective:mla_up_proj")
    n = 64
    assert plain.attention.activation_bytes - up.attention.activation_bytes == 2 * t * (2 * n * 192 + n * 128)
    named = {o.name: o for o in ops}
    assert up.attention.recompute_flops == named["attn.q_up"].fwd_flops + named["attn.kv_up"].fwd_flops
    assert (up.mlp, up.experts) == (plain.mlp, plain.experts)
    llama = block_operators(load_model("llama2-7b"), t, tp=tp)  # no latent attention: nothing to drop
    assert block_cost(llama, "selective:mla_up_proj") == block_cost(llama, "selective:layernorm")


# ------------------------------------------------------------------ multi-token prediction (DeepSeek-V3)
#: a small latent-attention MoE with one MTP module (the graph tests' size)
TINY = {
    **DEEPSEEK_V3, "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 64, "n_routed_experts": 4,
    "num_experts_per_tok": 2, "first_k_dense_replace": 1, "num_hidden_layers": 3, "num_attention_heads": 4,
    "num_key_value_heads": 4, "q_lora_rank": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
    "v_head_dim": 32, "vocab_size": 1000, "max_position_embeddings": 128,
}  # fmt: skip


def test_mtp_module_operators_are_megatron_bridges_terms() -> None:
    """The MTP block's matrix FLOPs per token are the last block's plus eh_proj's 6·2h²; its LM head 6hV;
    its parameters the block's, two norms and eh_proj (the embedding and output weight are shared)."""
    from hcsim.workload.models.ops import mtp_operators

    m, t = load_model("deepseek-v3"), 256
    block, head = mtp_operators(m, t)
    matmul = sum(o.fwd_flops + o.bwd_flops - sum(i.fwd_flops + i.bwd_flops for i in o.inner)
                 for o in block if o.kind in ("linear", "experts"))  # fmt: skip
    last = sum(o.fwd_flops + o.bwd_flops - sum(i.fwd_flops + i.bwd_flops for i in o.inner)
               for o in block_operators(m, t, layer=60) if o.kind in ("linear", "experts"))  # fmt: skip
    assert matmul - last == 6.0 * t * 2 * 7168 * 7168
    lm = {o.name: o for o in head}["head.lm"]
    assert lm.fwd_flops + lm.bwd_flops == 6.0 * t * 7168 * 129280 and lm.params == 0
    h = 7168
    assert sum(o.params for o in block) == m.block_parameters(60) + 2 * h + 2 * h * h
    assert [o.name for o in block[:4]] == ["mtp.enorm", "mtp.embedding", "mtp.hnorm", "mtp.eh_proj"]


def test_the_pipeline_split_counts_mtp_as_megatron_bridge_lays_it_out() -> None:
    """Bridge's DeepSeek-V3 layout ``Et|(tt|)*30mL`` on pp x vp = 8 x 4: one layer beside the embedding, two per
    middle virtual stage, none beside MTP and the loss."""
    from hcsim.workload.parallel.layout import pipeline_split

    split = pipeline_split(61, 8, 4, mtp=1)
    assert split.counts == (1,) + (2,) * 30 + (0,)
    assert "MTP" in split.describe()
    with pytest.raises(HcsimError, match="61 layers, not divisible"):
        pipeline_split(61, 8, 4)


def test_training_graph_runs_the_mtp_module_on_the_last_stage() -> None:
    from hcsim.workload.parallel.builder import training_graph
    from hcsim.workload.parallel.memory import training_memory

    m = from_hf_config(TINY)
    assert (m.mtp_layers, m.layers) == (1, 3)
    w = training_graph(m, "tp=2,pp=2,dp=2,ep=2", [f"x{i}" for i in range(8)], microbatches=2, sequence=128,
                       sequence_parallel=True)  # fmt: skip
    names = list(w.nodes)
    assert any(".MTP0." in v for v in names) and any(".MTP0.head" in v for v in names)
    stages = {w.nodes[v]["location"] for v in names if ".MTP0." in v and w.nodes[v].get("type") == "compute"}
    last = {w.nodes[v]["location"] for v in names if ".head" in v and w.nodes[v].get("type") == "compute"}
    assert stages == last  # the MTP module runs where the LM head does
    plain = replace(m, mtp_layers=0)
    kw = {"sequence": 128, "microbatches": 2, "precision": "bf16", "pipeline_split": (2, 1)}  # the automatic one
    with_mtp, without = (training_memory(x, "tp=2,pp=2,dp=2,ep=2", **kw) for x in (m, plain))
    from hcsim.workload.models.ops import mtp_operators

    held = sum(o.params for o in mtp_operators(m, 128, tp=2, ep=2)[0])  # per rank: the block's split, norms, eh_proj
    assert held == sum(o.params for o in block_operators(m, 128, tp=2, ep=2, layer=2)) + 2 * 256 + 2 * 256 * 128
    assert with_mtp[0] == without[0]
    assert with_mtp[1].weights - without[1].weights == 2 * (held + 256)  # bf16, + its head's final norm
