"""Uneven pipeline stages (Megatron-Core's embedding/loss accounting and first/last stage layer counts) and
the sourced training-memory model, against hand-worked cases and Megatron-Core's own offset formulas."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hcsim.errors import HcsimError
from hcsim.workload.models import TransformerSpec, block_operators, load_model
from hcsim.workload.models.precision import training_precision
from hcsim.workload.parallel import Layout, RankGrid, training_graph
from hcsim.workload.parallel.layout import PipelineSplit, pipeline_split
from hcsim.workload.parallel.memory import kept_activation_bytes, training_memory


def xs(n: int) -> list[str]:
    return [f"x{i}" for i in range(n)]


def _units(w, xpu: str) -> list[str]:
    """The units a rank runs, in first-forward order."""
    seen: list[str] = []
    for _, d in w.nodes(data=True):
        if d.get("type") == "compute" and d["location"] == xpu and d["phase"] == "F" and d["mb"] == 0:
            if d["unit"] not in seen:
                seen.append(d["unit"])
    return seen


# ------------------------------------------------------------------ the split itself
def test_llama31_405b_on_pp8_vp8_by_hand():
    """126 layers + embedding + loss = 128 = 8 x 8 x 2: virtual stage 0 holds the embedding and layer 0,
    virtual stage 63 layer 125 and the loss, every other virtual stage 2 layers (Megatron-Bridge's 405B recipe)."""
    s = pipeline_split(126, 8, 8)
    assert s.name == "account_embedding_loss"
    assert s.counts == (1,) + (2,) * 62 + (1,)
    assert s.layers(0, 0) == range(0, 1)
    assert s.layers(1, 0) == range(1, 3)
    assert s.layers(7, 0) == range(13, 15)
    assert s.layers(0, 1) == range(15, 17)  # virtual stage 8
    assert s.layers(7, 7) == range(125, 126)
    assert [s.stage_layers(p) for p in range(8)] == [15, 16, 16, 16, 16, 16, 16, 15]
    assert "account_for_embedding_in_pipeline_split" in s.describe()


def test_even_split_is_the_old_one():
    s = pipeline_split(80, 4, 5)
    assert s.even and s.counts == (4,) * 20
    assert [s.layers(p, c) for c in range(5) for p in range(4)] == [range(4 * v, 4 * v + 4) for v in range(20)]


def _megatron_offset(s: PipelineSplit, layers: int, p: int, c: int) -> int:
    """Megatron-Core's get_transformer_layer_offset (transformer_layer.py), re-derived for the check."""
    pp, vp = s.pp, s.vp
    if s.name == "first_last":
        first = s.first or 0
        last = s.last or 0
        middle_stages = pp - (s.first is not None) - (s.last is not None)
        middle = layers - first - last
        total = first // vp + middle // vp + last // vp
        if p == 0:
            return c * total
        rank = p - 1 if s.first is not None else p
        return c * total + first // vp + (rank * ((middle // vp) // middle_stages) if middle_stages else 0)
    embedding = s.name in ("account_embedding", "account_embedding_loss")
    loss = s.name in ("account_loss", "account_embedding_loss")
    n = layers + embedding + loss
    per_virtual = n // pp // vp
    offset = c * (n // vp) + p * per_virtual
    return offset - (1 if embedding and not (c == 0 and p == 0) else 0)


@settings(max_examples=200, deadline=None)
@given(
    pp=st.integers(1, 8), vp=st.integers(1, 4), per=st.integers(1, 4), extra=st.sampled_from([0, -1, -2]),
    name=st.sampled_from([None, "account_embedding", "account_loss", "account_embedding_loss"]),
)  # fmt: skip
def test_every_layer_once_in_order_and_megatrons_offsets(pp, vp, per, extra, name):
    vp = vp if pp > 1 else 1
    layers = pp * vp * per + extra
    try:
        s = pipeline_split(layers, pp, vp, name)
    except HcsimError as e:
        assert "(valid: " in str(e) and "\n" not in str(e)
        return
    got = [i for v in range(pp * vp) for i in s.layers(v % pp, v // pp)]
    assert got == list(range(layers))
    if not s.even:
        for p in range(pp):
            for c in range(vp):
                assert s.layers(p, c).start == _megatron_offset(s, layers, p, c)


@settings(max_examples=200, deadline=None)
@given(pp=st.integers(2, 6), vp=st.integers(1, 3), mid=st.integers(0, 3), first=st.integers(1, 3),
       last=st.integers(1, 3), which=st.sampled_from(["both", "first", "last"]))  # fmt: skip
def test_first_last_stage_counts(pp, vp, mid, first, last, which):
    """Megatron-Core's num_layers_in_first/last_pipeline_stage: the rest even over the middle stages."""
    f = first * vp if which != "last" else None
    la = last * vp if which != "first" else None
    middle_stages = pp - (f is not None) - (la is not None)
    layers = (f or 0) + (la or 0) + middle_stages * mid * vp
    if middle_stages and not mid:
        with pytest.raises(HcsimError, match="middle"):
            pipeline_split(layers, pp, vp, (f, la))
        return
    s = pipeline_split(layers, pp, vp, (f, la))
    assert [i for v in range(pp * vp) for i in s.layers(v % pp, v // pp)] == list(range(layers))
    if f is not None:
        assert s.stage_layers(0) == f
    if la is not None:
        assert s.stage_layers(pp - 1) == la
    for p in range(pp):
        for c in range(vp):
            assert s.layers(p, c).start == _megatron_offset(s, layers, p, c)


@pytest.mark.parametrize(
    "args,message",
    [
        ((126, 4, 3, None), r"126 layers, not divisible by pp x vp = 4 x 3 = 12 \(valid: pp x vp dividing 126 "),
        ((126, 5, 1, None), r"126 layers, not divisible by pp=5 \(valid: "),
        ((126, 8, 8, "even"), r"pipeline split even needs pp x vp = 8 x 8 = 64 dividing 126 \(valid: "),
        ((126, 8, 8, "thirds"), r"pipeline split 'thirds' is unknown \(valid: even, account_embedding, "),
        ((126, 8, 8, (1, 2)), r"1 layers on the first stage are not divisible by vp=8"),
        ((126, 8, 1, (14, 14)), r"first=14, last=14 leave 98 for 6 middle stages \(valid: "),
        ((12, 1, 1, (6, 6)), r"needs pipeline parallelism"),
        ((12, 2, 1, (0, 6)), r"is invalid \(valid: "),
    ],
)
def test_bad_splits_are_one_line(args, message):
    with pytest.raises(HcsimError, match=message) as e:
        pipeline_split(*args)
    assert "\n" not in str(e.value)


# ------------------------------------------------------------------ the graph
SIX = TransformerSpec("six", layers=6, hidden=256, heads=8, kv_heads=2, intermediate=512, vocab=1000, sequence=64)


def test_graph_places_layers_by_the_uneven_split():
    """6 layers on pp=2, vp=2: 6 + 2 = 8 = 4 x 2, so virtual stages hold emb+L0 | L1 L2 | L3 L4 | L5+head."""
    w = training_graph(SIX, "pp=2,vp=2", xs(2), microbatches=2)
    assert _units(w, "x0") == ["emb", "L0", "L3", "L4"]
    assert _units(w, "x1") == ["L1", "L2", "L5", "head"]
    assert "decoder layers per stage 3, 3" in w.graph["pipeline_split"]
    two = TransformerSpec("two", layers=2, hidden=256, heads=8, kv_heads=2, intermediate=512, vocab=1000, sequence=64)
    lone = training_graph(two, "pp=2,vp=2", xs(2), microbatches=2)  # the embedding and the loss alone on a chunk
    assert _units(lone, "x0") == ["emb", "L1"] and _units(lone, "x1") == ["L0", "head"]
    first_last = training_graph(SIX, "pp=3", xs(3), microbatches=3, pipeline_split=(1, 1))
    assert [_units(first_last, f"x{p}") for p in range(3)] == [["emb", "L0"], ["L1", "L2", "L3", "L4"], ["L5", "head"]]
    assert "first stage 1, last stage 1" in first_last.graph["pipeline_split"]


def test_even_graphs_are_unchanged():
    """An even split builds the same graph whether said or not, and says nothing."""
    a = training_graph(SIX, "dp=2,pp=3", xs(6), microbatches=3)
    b = training_graph(SIX, "dp=2,pp=3", xs(6), microbatches=3, pipeline_split="even")
    assert "pipeline_split" not in a.graph
    assert list(a.nodes(data=True)) == list(b.nodes(data=True))
    assert list(a.edges(data=True)) == list(b.edges(data=True))


def test_a_graph_refuses_a_split_that_does_not_fit():
    with pytest.raises(HcsimError, match=r"six has 6 layers, not divisible by pp x vp = 2 x 3 = 6|dividing 8"):
        training_graph(SIX, "pp=2,vp=3", xs(2), microbatches=2, pipeline_split="account_embedding_loss")


# ------------------------------------------------------------------ memory per stage
@pytest.mark.parametrize(
    "layout,kw",
    [("pp=2,vp=2", {"precision": "bf16", "zero": 1}), ("dp=2,pp=3", {"precision": "fp8", "pipeline_split": (1, 1)}),
     ("tp=2,pp=2,vp=2", {"precision": "fp8", "sequence_parallel": True, "grad_reduce_in_fp32": False})],
)  # fmt: skip
def test_memory_per_stage_is_the_graphs_footprint(layout, kw):
    lay = Layout.parse(layout)
    w = training_graph(SIX, lay, xs(lay.ranks), microbatches=4, **kw)
    stages = training_memory(SIX, lay, microbatches=4, **kw)
    grid = RankGrid(lay, xs(lay.ranks))
    for s in stages:
        x = grid.xpu(0, s.stage, 0)
        total = sum(d["footprint"] for _, d in w.nodes(data=True) if d.get("type") == "compute" and d["location"] == x)
        assert s.resident == pytest.approx(total, rel=1e-12)
    split = pipeline_split(6, lay.pp, lay.vp, kw.get("pipeline_split"))
    assert [s.layers for s in stages] == [split.stage_layers(p) for p in range(lay.pp)]


def test_llama31_405b_memory_per_stage():
    """The published 405B layout fits 80 GB on every stage; the middle stages (16 layers) need the most."""
    spec = load_model("llama3-405b")
    kw = {"micro_batch": 1, "sequence": 8192, "microbatches": 64, "zero": 1, "precision": "fp8",
          "sequence_parallel": True, "grad_reduce_in_fp32": False, "xpus": 1024}  # fmt: skip
    stages = training_memory(spec, "tp=8,pp=8,cp=2,vp=8", **kw)
    assert [s.layers for s in stages] == [15, 16, 16, 16, 16, 16, 16, 15]
    worst = max(stages, key=lambda s: s.total)
    assert 1 <= worst.stage <= 6 and worst.total < 80 * 2**30


# ------------------------------------------------------------------ the sourced byte counts
GPT = TransformerSpec("gpt", layers=4, hidden=1024, heads=16, kv_heads=16, intermediate=4096, vocab=1000,
                      sequence=512, gated_mlp=False, bias=True)  # fmt: skip


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_gpt_block_keeps_korthikantis_bytes_without_dropout(tp):
    """KOR Table 2 (SP + selective): 34·sbh/t, of which two sbh are dropout masks (1 B each, none here);
    FlashAttention adds its fp32 softmax statistics, 4·s·b·a/t. bf16: 32·sbh/t + 4·sba/t."""
    t = 512
    policy = training_precision("bf16")
    ops = block_operators(GPT, t, tp=tp, precision=policy)
    kept = sum(kept_activation_bytes(o, tp=tp, sequence_parallel=True, policy=policy) for o in ops)
    assert kept == pytest.approx(32 * t * GPT.hidden / tp + 4 * t * GPT.heads / tp, rel=1e-12)


@pytest.mark.parametrize("tp", [1, 2])
def test_fp8_linear_inputs_are_kept_in_one_byte(tp):
    """Under fp8 TE keeps each linear layer's input quantized (1 B): QKV and fc1 inputs h, proj input q=h,
    fc2 input f = 4h -> 32 - 1 - 1 + 1 - 4 = 27·sbh/t (+ the softmax statistics)."""
    t = 512
    policy = training_precision("fp8")
    ops = block_operators(GPT, t, tp=tp, precision=policy)
    kept = sum(kept_activation_bytes(o, tp=tp, sequence_parallel=True, policy=policy) for o in ops)
    assert kept == pytest.approx(27 * t * GPT.hidden / tp + 4 * t * GPT.heads / tp, rel=1e-12)


@pytest.mark.parametrize("fp8_param_gather", [False, True])
@pytest.mark.parametrize("grad_reduce_in_fp32", [True, False])
def test_state_bytes_by_parameter_kind(fp8_param_gather, grad_reduce_in_fp32):
    """fp8 copies only on TE's linear layers (2 B beside the bf16 copy, or the fp8 parameter itself, 1 + 1 B);
    16-bit main gradients with an fp32 gradient shard in the optimizer (dist_optimizer.md: 4 + 16/d)."""
    spec, d = load_model("llama2-7b"), 8
    stage = training_memory(spec, f"dp={d}", precision="fp8", zero=1, grad_reduce_in_fp32=grad_reduce_in_fp32,
                            fp8_param_gather=fp8_param_gather)[0]  # fmt: skip
    n = spec.parameters()
    other = spec.hidden * (spec.vocab + spec.vocab) + spec.hidden * (2 * spec.layers + 1)  # emb, head, norms
    linear = n - other
    assert linear == spec.layers * (4 * spec.hidden**2 + 3 * spec.hidden * spec.intermediate)
    assert stage.weights == pytest.approx(linear * 2 + other * 2 if fp8_param_gather else linear * 4 + other * 2)
    grad = 4 if grad_reduce_in_fp32 else 2
    assert stage.grads == pytest.approx(n * grad)
    # dist_optimizer.md's 16/d, of which the fp32 gradient shard (4/d) is held only through the optimizer step
    assert stage.optimizer + stage.step_only == pytest.approx(n * (12 if grad_reduce_in_fp32 else 16) / d)
    assert stage.step_only == pytest.approx(0.0 if grad_reduce_in_fp32 else n * 4 / d)


def test_bf16_with_16_bit_gradients_is_megatrons_16_bit_row():
    """Megatron's dist_optimizer.md: 16-bit parameters and gradients, 20 B/param; 4 + 16/d distributed."""
    p = training_precision("bf16", grad_reduce_in_fp32=False)
    assert p.state_bytes_per_param(0, 1) == 20
    for d in (2, 8, 64):
        assert p.state_bytes_per_param(1, d) == pytest.approx(4 + 16 / d)


# ------------------------------------------------------------------ the engine runs an uneven pipeline
def _uniform(layers: int):
    """A model of ``layers`` blocks of 2 s forward, 4 s backward at RATE (attention + MLP); free embedding/head."""
    from types import SimpleNamespace

    from hcsim.workload.models.ops import Operator

    def op(name: str, kind: str, flops: float) -> Operator:
        return Operator(name, kind, flops, 2 * flops, 0.0, 0.0, 0, 0.0)

    def block(spec, tokens, *, tp=1, ep=1, layer=0, phase="train"):
        return [op("attn.core", "attention", RATE), op("mlp.up", "linear", RATE)]

    def free(spec, tokens, *, tp=1):
        return [op("embedding", "embedding", 0.0)]

    spec = SimpleNamespace(name="uniform", layers=layers, hidden=1, heads=4, kv_heads=4, sequence=1,
                           precision="fp16", bytes_per_value=2, experts=0, top_k=0)  # fmt: skip
    return spec, SimpleNamespace(block_operators=block, embedding_operators=free, head_operators=free)


RATE = 1e12


@pytest.mark.parametrize("m", [1, 3, 8])
def test_simulated_uneven_1f1b_is_paced_by_the_larger_stage(compiled, m):
    """4 layers on 2 stages, 1F1B; the last stage paces. Even (2 + 2 layers, 4 s forward and 8 s backward per
    stage): stage 1 starts at 4 s, runs forward + backward (12 s) per microbatch back to back, then stage 0's
    last backward (8 s): 12m + 12. First/last (1, 3): stage 1 (6 + 12 s) starts at 2 s: 2 + 18m + 4 = 18m + 6."""
    from hcsim.engine import simulate
    from hcsim.platform import Topology

    t = Topology()
    t.add_switch("sw", "generic")
    for i in range(2):
        t.add_xpu(f"x{i}", fp16=RATE, fp32=RATE, memory=1e15, memory_bandwidth=1e18, device="test", rank=i)
        t.add_link(f"x{i}", "sw", 1e15, 1e-9)
    path = compiled(t)
    spec, ops = _uniform(4)
    even = training_graph(spec, "pp=2", xs(2), microbatches=m, ops=ops)
    uneven = training_graph(spec, "pp=2", xs(2), microbatches=m, ops=ops, pipeline_split=(1, 3))
    assert simulate(path, even, 1).makespan == pytest.approx(12 * m + 12, rel=1e-6)
    assert simulate(path, uneven, 1).makespan == pytest.approx(18 * m + 6, rel=1e-6)
