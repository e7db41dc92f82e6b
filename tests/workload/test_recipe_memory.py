"""What the published recipes hold per rank, against closed forms: Megatron-Core's recompute modules
(``layernorm``, ``moe_act``, ``mlp``), the fp32 gradient shard that lives only through the optimizer
step, and NeMo 1's bf16 Adam state (docs/training-features.md, "Memory in HBM")."""

from __future__ import annotations

import pytest

from hcsim.errors import HcsimError
from hcsim.workload.models import TransformerSpec, block_operators, load_model
from hcsim.workload.models.precision import training_precision
from hcsim.workload.parallel import training_graph
from hcsim.workload.parallel.costs import block_cost, check_recompute, recompute_modules
from hcsim.workload.parallel.memory import check_fits, training_memory, unit_memory
from hcsim.workload.parallel.optimizer import optimizer_bytes_per_param

T, H, B = 64, 128, 2  # tokens, hidden, bytes per value (bf16)
MOE = TransformerSpec("moe", layers=2, hidden=H, heads=4, kv_heads=2, intermediate=256, vocab=1000, sequence=T,
                      experts=4, top_k=2, expert_intermediate=96)  # fmt: skip
DENSE = TransformerSpec("dense", layers=2, hidden=H, heads=4, kv_heads=2, intermediate=256, vocab=1000, sequence=T)


def kept(spec, recompute):
    block = block_operators(spec, T, precision="bf16")
    return block_cost(block, recompute).activation_bytes, block


def by_name(block, name):
    return next(o for o in block if o.name == name)


@pytest.mark.parametrize("modules", ["layernorm", "moe_act", "layernorm,moe_act", "core_attn,layernorm,moe_act"])
def test_moe_recompute_modules_drop_their_tensors(modules):
    """layernorm: the pre-MLP norm's output (the router's saved input, t·h·b); moe_act: fc2's input (k·t·f·b)."""
    base, block = kept(MOE, "none")
    after, _ = kept(MOE, f"selective:{modules}")
    drop = 0.0
    if "layernorm" in modules:
        drop += T * H * B
    if "moe_act" in modules:
        drop += MOE.top_k * T * MOE.expert_intermediate * B
    assert after == pytest.approx(base - drop, rel=1e-12)
    # the same through the memory model's per-unit accounting (Megatron-Core + TE bytes)
    policy = training_precision("bf16")
    cost = block_cost(block, f"selective:{modules}")
    a = unit_memory(cost, policy, zero=1, replicas=1, recompute=f"selective:{modules}")[3]
    a0 = unit_memory(block_cost(block), policy, zero=1, replicas=1)[3]
    assert a == pytest.approx(a0 - drop, rel=1e-12)


def test_layernorm_recompute_changes_nothing_in_a_dense_te_block():
    """Megatron-Core's TE spec fuses both norms of a dense block into the linear layers: nothing to recompute."""
    base, _ = kept(DENSE, "none")
    after, _ = kept(DENSE, "selective:layernorm")
    assert after == base


def test_mlp_recompute_keeps_only_the_mlp_input():
    base, block = kept(DENSE, "none")
    after, _ = kept(DENSE, "selective:mlp")
    mlp = sum(by_name(block, n).activation_bytes for n in ("mlp.up", "mlp.act", "mlp.down"))
    assert after == pytest.approx(base - mlp, rel=1e-12)
    assert by_name(block, "norm2").activation_bytes == T * H * B  # what stays: the MLP's input


def compute(w):
    return {n: d for n, d in w.nodes(data=True) if d["type"] == "compute"}


@pytest.mark.parametrize("modules", ["layernorm", "moe_act", "mlp"])
def test_recompute_modules_add_their_forward_to_the_backward(modules):
    """Each backward vertex gains exactly the recomputed operators' forward FLOPs, nothing else changes."""
    base = compute(training_graph(MOE, "dp=1", ["x0"], precision="bf16"))
    again = compute(training_graph(MOE, "dp=1", ["x0"], precision="bf16", recompute=f"selective:{modules}"))
    block = block_operators(MOE, T, precision="bf16", layer=0)
    extra = {"mlp": 0.0, "experts": 0.0}
    if modules == "layernorm":
        extra["mlp"] = by_name(block, "norm2").fwd_flops  # the MoE block's separate pre-MLP norm
    if modules == "moe_act":
        extra["experts"] = 4.0 * MOE.top_k * T * MOE.expert_intermediate  # the activation between the GEMMs
    for n, d in base.items():
        sub = n.rsplit(".", 1)[-1]
        gained = extra.get(sub, 0.0) if d["phase"] == "B" and ".L" in n else 0.0
        assert again[n]["flops"] == pytest.approx(d["flops"] + gained, rel=1e-12), n


@pytest.mark.parametrize(
    "value,message",
    [("selective:moe", "is not modelled: it re-runs the token dispatch"), ("selective:qkv", "is unknown"),
     ("selective:moe_act,moe_act", "name one twice"), ("partial", "is unknown")],
)  # fmt: skip
def test_recompute_errors_are_one_line(value, message):
    with pytest.raises(HcsimError, match=message) as e:
        check_recompute(value)
    assert "\n" not in str(e.value)


def test_plain_selective_is_megatrons_default_core_attn():
    assert recompute_modules("selective") == {"core_attn"}
    base, block = kept(MOE, "selective")
    same, _ = kept(MOE, "selective:core_attn")
    assert base == same
    assert block_cost(block, "selective").attention.recompute_flops == pytest.approx(
        block_cost(block, "selective:core_attn").attention.recompute_flops, rel=0
    )


def test_the_fp32_gradient_shard_lives_only_through_the_step():
    """16-bit main grads: 2 + 2 + 12/d B/param held with the activations, + 4/d only during the step."""
    m = load_model("llama2-7b")
    d = 8
    s = training_memory(m, "dp=8", precision="bf16", zero=1, grad_reduce_in_fp32=False)[0]
    p = m.parameters()
    assert s.weights + s.grads + s.optimizer == pytest.approx(p * (2 + 2 + 12 / d), rel=1e-12)
    assert s.step_only == pytest.approx(p * 4 / d, rel=1e-12)
    assert s.total == pytest.approx(s.weights + s.grads + s.optimizer + max(s.activations, s.step_only), rel=1e-12)
    # fp32 main grads: the optimizer steps on them, no copy
    f = training_memory(m, "dp=8", precision="bf16", zero=1)[0]
    assert f.step_only == 0.0
    assert f.weights + f.grads + f.optimizer == pytest.approx(p * (6 + 12 / d), rel=1e-12)


def test_bf16_adam_state_has_no_master_copy():
    """NeMo 1's distributed Adam with optim.dtype bf16: moments 2 + 2 B, no master, no fp32 gradient copy."""
    m = load_model("llama2-7b")
    s = training_memory(m, "dp=2", precision="bf16", zero=1, grad_reduce_in_fp32=False, optimizer_dtype="bf16")[0]
    p = m.parameters()
    assert s.weights + s.grads + s.optimizer == pytest.approx(p * (2 + 2 + 4 / 2), rel=1e-12)
    assert s.step_only == 0.0
    policy = training_precision("fp8", grad_reduce_in_fp32=False, optimizer_dtype="bf16")
    assert (policy.optimizer_bytes, policy.master_bytes, policy.step_grad_bytes) == (4.0, 0.0, 0.0)
    # the step: norm G, Adam G + S + P, writes S + P (no master to copy from): 2 + 8 + 6
    assert optimizer_bytes_per_param(policy) == 16.0


@pytest.mark.parametrize(
    "kw,message",
    [({"optimizer_dtype": "fp16"}, "optimizer dtype 'fp16' is unknown"),
     ({"optimizer_dtype": "bf16"}, "needs 16-bit main gradients"),
     ({"optimizer_dtype": "bf16", "name": "fp16"}, "needs precision bf16 or fp8")],
)  # fmt: skip
def test_optimizer_dtype_errors_are_one_line(kw, message):
    kw = dict(kw)
    name = kw.pop("name", "bf16")
    with pytest.raises(HcsimError, match=message) as e:
        training_precision(name, **kw)
    assert "\n" not in str(e.value)


def test_a_layout_that_does_not_fit_is_refused_in_one_line():
    """GPT-OSS-120B at micro-batch 4 with the recipe's recompute modules still needs more than 80 GB."""
    g = load_model("gpt-oss-120b")
    stages = training_memory(g, "tp=1,pp=4,ep=8", micro_batch=4, sequence=4096, microbatches=8, zero=1,
                             precision="bf16", grad_reduce_in_fp32=False, xpus=64,
                             recompute="selective:layernorm,moe_act")  # fmt: skip
    with pytest.raises(HcsimError, match=r"^each rank of pipeline stage 0 needs \d+\.\d GiB") as e:
        check_fits(stages, 80 * 2.0**30)
    assert "\n" not in str(e.value)
