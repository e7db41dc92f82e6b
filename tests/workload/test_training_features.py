"""Issue-24 training features against closed forms: operator shapes, precisions, interleaved 1F1B,
context parallelism, recomputation, memory, presets and model FLOPs."""

from __future__ import annotations

from fractions import Fraction

import pytest

from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.platform import Topology
from hcsim.workload.models import TransformerSpec, block_operators, load_model
from hcsim.workload.models.ops import Operator, embedding_operators, head_operators
from hcsim.workload.models.precision import training_precision
from hcsim.workload.parallel import Layout, RankGrid, training_graph
from hcsim.workload.parallel.schedules import in_flight, interleaved_1f1b, one_f_one_b

RATE = 1e12  # flop/s of the test XPUs


def free_platform(compiled, n: int, bandwidth: float = 1e15, latency: float = 1e-9):
    """``n`` XPUs of RATE flop/s and ample memory on one switch (as tests/workload/test_parallel.py)."""
    t = Topology()
    t.add_switch("sw", "generic")
    for i in range(n):
        t.add_xpu(f"x{i}", fp16=RATE, fp32=RATE, memory=1e15, memory_bandwidth=1e18, device="test", rank=i)
        t.add_link(f"x{i}", "sw", bandwidth, latency)
    return compiled(t), [f"x{i}" for i in range(n)]


def stand_in(layers: int = 4):
    """A TransformerSpec-like model whose operators :func:`uniform_ops` gives."""
    from types import SimpleNamespace

    return SimpleNamespace(name="tiny", layers=layers, hidden=1, heads=4, kv_heads=4, sequence=1, precision="fp16",
                           bytes_per_value=2, experts=0, top_k=0)  # fmt: skip


def uniform_ops(attn: float = 1e12, mlp: float = 1e12, params: int = 0):
    """Operators of fixed cost: attention ``attn`` flops, MLP ``mlp`` (backward twice), no memory traffic."""
    from types import SimpleNamespace

    def op(name: str, kind: str, flops: float) -> Operator:
        return Operator(name, kind, flops, 2 * flops, 0.0, 0.0, params if flops else 0, 0.0)

    def block_operators(spec, tokens, *, tp=1, ep=1, layer=0, phase="train"):
        return [op("attn.core", "attention", attn), op("mlp.up", "linear", mlp)]

    def free(spec, tokens, *, tp=1):
        return [op("embedding", "embedding", 0.0)]

    return SimpleNamespace(block_operators=block_operators, embedding_operators=free, head_operators=free)


SMALL = TransformerSpec("small", layers=4, hidden=256, heads=8, kv_heads=2, intermediate=512, vocab=1000, sequence=64)


def xs(n: int) -> list[str]:
    return [f"x{i}" for i in range(n)]


def compute(w):
    return [(n, d) for n, d in w.nodes(data=True) if d["type"] == "compute"]


# ------------------------------------------------------------------ 1. operator shapes
@pytest.mark.parametrize("tp", [1, 2])
def test_gemm_shapes_give_the_linear_flops(tp):
    """Every linear operator's (m, n, k) is its forward GEMM: 2mnk FLOPs forward, 4mnk backward."""
    ops = block_operators(SMALL, 128, tp=tp) + head_operators(SMALL, 128, tp=tp)
    linear = [o for o in ops if o.kind in ("linear",)]
    assert {o.name for o in linear} == {"attn.qkv", "attn.out", "mlp.up", "mlp.down", "head.lm"}
    for o in linear:
        m, n, k = o.gemm
        assert m == 128
        assert o.fwd_flops == 2.0 * m * n * k and o.bwd_flops == 4.0 * m * n * k
    qkv = next(o for o in linear if o.name == "attn.qkv")
    assert qkv.gemm == (128, (256 + 2 * 64) // tp, 256)  # q = 256, kv = 2 heads x 32 = 64
    assert all(o.gemm is None for o in ops if o.kind in ("norm", "elementwise"))


def test_attention_shape_gives_the_core_flops():
    """(batch, seq_q, seq_kv, heads, head_dim, causal): forward 4 b sq skv heads d (the full square)."""
    core = next(o for o in block_operators(SMALL, 2 * 64, tp=2) if o.kind == "attention")
    b, sq, skv, heads, d, causal = core.attention
    assert (b, sq, skv, heads, d, causal) == (2, 64, 64, 4, 32, True)
    assert core.fwd_flops == 4.0 * b * sq * skv * heads * d
    dec = next(o for o in block_operators(SMALL, 8, context=100, phase="decode") if o.kind == "attention")
    assert dec.attention == (8, 1, 100, 8, 32, False)


def test_moe_experts_carry_their_gemm_shape():
    mix = load_model("mixtral-8x7b")
    ops = block_operators(mix, 64, tp=2, ep=2, context=32)
    experts = next(o for o in ops if o.kind == "experts")
    assert experts.gemm == (64 * 2, 2 * 14336 // 2, 4096)  # pairs, gate+up / tp, hidden
    router = next(o for o in ops if o.kind == "router")
    assert router.gemm == (64, 8, 4096)


def test_vertices_carry_their_operators_shared_across_copies():
    """operators=True: each compute vertex has ``ops``; their FLOPs sum to the vertex's; one tuple for all copies."""
    w = training_graph(SMALL, "dp=2,tp=2,pp=2", xs(8), microbatches=3, recompute="full", operators=True)
    by_key: dict = {}
    for name, d in compute(w):
        ops = d["ops"]
        flops = sum((op.bwd_flops if pas == "bwd" else op.fwd_flops) for op, pas in ops)  # recompute: the forward again
        assert flops == pytest.approx(d["flops"], rel=1e-12)
        assert {pas for _, pas in ops} <= ({"bwd", "recompute"} if d["phase"] == "B" else {"fwd"})
        key = (name.split("/", 1)[1].split(".", 1)[1], d["phase"])  # the part, whatever rank and microbatch
        by_key.setdefault(key, set()).add(id(ops))
    assert all(len(ids) == 1 for ids in by_key.values())
    plain = training_graph(SMALL, "dp=2,tp=2,pp=2", xs(8), microbatches=3)
    assert all("ops" not in d for _, d in compute(plain))  # the default graph is as before


# ------------------------------------------------------------------ 2. precision
def test_precision_bytes_per_parameter_are_megatrons():
    """bf16: 18 B/param, 6 + 12/d with the distributed optimizer (Megatron dist_optimizer.md); fp16/fp32: 16."""
    bf16 = training_precision("bf16")
    assert bf16.state_bytes_per_param(0, 8) == 18
    for d in (2, 8, 64):
        assert bf16.state_bytes_per_param(1, d) == pytest.approx(6 + 12 / d)
    assert training_precision("fp16").state_bytes_per_param(0, 1) == 16
    assert training_precision("fp32").state_bytes_per_param(0, 1) == 16
    fp8 = training_precision("fp8")
    assert fp8.state_bytes_per_param(0, 1) == 18 + 2  # + the fp8 weight copies (row- and column-wise)
    assert training_precision("fp8", fp8_param_gather=True).param_gather_bytes == 1
    assert training_precision("bf16", grad_reduce_in_fp32=False).grad_reduce_bytes == 2
    with pytest.raises(HcsimError, match="training precision 'int4' is unknown"):
        training_precision("int4")


@pytest.mark.parametrize("zero", [0, 1])
def test_bf16_gradients_move_in_fp32_and_parameters_in_bf16(zero):
    fp16 = training_graph(SMALL, "dp=4", xs(4), zero=zero)
    bf16 = training_graph(SMALL, "dp=4", xs(4), zero=zero, precision="bf16")
    dp16 = {n: d["bytes"] for n, d in fp16.nodes(data=True) if d.get("phase") == "dp"}
    dpbf = {n: d["bytes"] for n, d in bf16.nodes(data=True) if d.get("phase") == "dp"}
    assert dp16.keys() == dpbf.keys() and dp16
    for n, size in dp16.items():
        assert dpbf[n] == (size if n.endswith("allgather") else 2 * size)  # fp32 grads, bf16 params
    # same FLOPs and memory traffic as fp16 (same width); the engine runs bf16 at the fp16 rate
    c16, cbf = dict(compute(fp16)), dict(compute(bf16))
    assert all(c16[n]["flops"] == cbf[n]["flops"] and c16[n]["mem_bytes"] == cbf[n]["mem_bytes"] for n in c16)
    assert {d["precision"] for d in cbf.values()} == {"fp16"}
    assert {d["compute_precision"] for d in cbf.values()} == {"bf16"}
    assert bf16.graph["precision"] == "bf16" and "precision" not in fp16.graph


def test_fp8_reads_gemm_operands_as_one_byte():
    """fp8 GEMM bytes: 1 x (weight + input) + 2 x output; TP traffic stays bf16; GEMM parts are 'fp8'."""
    ops = {o.name: o for o in block_operators(SMALL, 128, precision="fp8")}
    m, n, k = ops["attn.qkv"].gemm
    assert ops["attn.qkv"].fwd_bytes == 1 * (k * n + m * k) + 2 * m * n
    assert ops["attn.qkv"].precision == "fp8" and ops["attn.core"].precision == "bf16"
    assert head_operators(SMALL, 128, precision="fp8")[1].precision == "bf16"  # Megatron's output layer
    assert embedding_operators(SMALL, 128, precision="fp8")[0].precision == "bf16"
    w = training_graph(SMALL, "tp=2", xs(2), precision="fp8")
    tp = {d["bytes"] for _, d in w.nodes(data=True) if d.get("phase") == "tp"}
    assert tp == {64 * 256 * 2.0}
    kinds = {n.split(".", 2)[-1]: d["compute_precision"] for n, d in compute(w) if n.startswith("x0/F0.L0")}
    assert kinds == {"attn": "fp8", "mlp": "fp8"}


def test_legacy_precisions_build_the_same_graph():
    """precision='fp16' on an fp16 spec: exactly the default graph (vertex attributes, edges, sizes)."""
    a = training_graph(SMALL, "dp=2,tp=2,pp=2", xs(8), microbatches=4)
    b = training_graph(SMALL, "dp=2,tp=2,pp=2", xs(8), microbatches=4, precision="fp16")
    assert dict(a.nodes(data=True)) == dict(b.nodes(data=True))
    assert list(a.edges(data=True)) == list(b.edges(data=True))


# ------------------------------------------------------------------ 3. interleaved 1F1B
def test_interleaved_order_matches_megatrons_table():
    """p=4, m=8, v=2, rank 0: 2(p-1) + (v-1)p = 10 warm-up forwards, chunk 0 of mb 0..3, chunk 1, chunk 0 of 4..7."""
    order = interleaved_1f1b(4, 8, 0, 2)
    text = " ".join(f"{k}{m}.{c}" for k, m, c in order)
    assert text.startswith("F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1 F7.0 B1.1")
    assert text.endswith("B4.0 B5.0 B6.0 B7.0")
    last = interleaved_1f1b(4, 8, 3, 2)
    assert [e[0] for e in last[:6]] == ["F", "F", "F", "F", "F", "B"]  # (v-1)p = 4 warm-up, then 1F1B
    for p, m, v in [(2, 4, 3), (4, 8, 2), (3, 7, 2)]:
        for s in range(p):
            order = interleaved_1f1b(p, m, s, v)
            assert sorted(order) == sorted((k, i, c) for k in "FB" for i in range(m) for c in range(v))
    # one chunk is Megatron's non-interleaved 1F1B (warm-up 2(p-s-1) there is the interleaved formula only)
    assert in_flight(interleaved_1f1b(4, 8, 0, 2)) == 2 * 3 + 4 + 1


def _event_time(p: int, m: int, v: int, tf: Fraction, tb: Fraction) -> Fraction:
    """Makespan of the schedules with compute only: a pass waits for its rank and for its neighbour stage."""
    orders = [interleaved_1f1b(p, m, s, v) if v > 1 else [(*e, 0) for e in one_f_one_b(p, m, s)] for s in range(p)]
    stages, done = p * v, {}
    pos, clock = [0] * p, [Fraction(0)] * p
    moved = True
    while moved:
        moved = False
        for s in range(p):
            while pos[s] < len(orders[s]):
                kind, mb, c = orders[s][pos[s]]
                vs = c * p + s
                if kind == "F":
                    dep = ("F", mb, vs - 1) if vs > 0 else None
                else:
                    dep = ("B", mb, vs + 1) if vs < stages - 1 else ("F", mb, vs)
                if dep is not None and dep not in done:
                    break
                clock[s] = max(clock[s], done.get(dep, 0)) + (tf if kind == "F" else tb)
                done[(kind, mb, vs)] = clock[s]
                pos[s] += 1
                moved = True
    assert all(pos[s] == len(orders[s]) for s in range(p)), "the schedule deadlocks"
    return max(clock)


@pytest.mark.parametrize("p,m,v", [(2, 4, 3), (4, 8, 2), (4, 4, 2), (4, 12, 3), (8, 16, 4), (3, 6, 2), (4, 8, 1)])
@pytest.mark.parametrize("tb", [Fraction(1), Fraction(2)])
def test_interleaved_bubble_is_p_minus_1_over_v_m(p, m, v, tb):
    """Narayanan et al. SC'21 §2.2: bubble / ideal = (p-1)/(v m) on equal stages (exactly, in an event simulation)."""
    ideal = m * v * (1 + tb)
    assert (_event_time(p, m, v, Fraction(1), tb) - ideal) / ideal == Fraction(p - 1, v * m)


@pytest.mark.parametrize("p,m,v", [(2, 4, 2), (2, 2, 3), (4, 4, 2)])
def test_simulated_interleaved_bubble(compiled, p, m, v):
    """The engine on a vp graph (uniform blocks, free links): T = ideal x (1 + (p-1)/(v m))."""
    layers = p * v
    spec = stand_in(layers=layers)
    w = training_graph(spec, f"pp={p},vp={v}", xs(p), microbatches=m, ops=uniform_ops(attn=1e15, mlp=1e15))
    path, _ = free_platform(compiled, p)
    t = simulate(path, w, 1).makespan
    ideal = m * v * 6e3  # per rank: m microbatches x v chunks x (2e3 s forward + 4e3 s backward), 1 layer a chunk
    assert t == pytest.approx(ideal * (1 + (p - 1) / (v * m)), rel=1e-9)
    p2p = [n for n, d in w.nodes(data=True) if d.get("kind") == "p2p"]
    assert len(p2p) == 2 * m * (p * v - 1)  # forward and backward at every virtual-stage boundary


def test_vp_errors_are_one_line():
    with pytest.raises(HcsimError, match=r"small has 4 layers, not divisible by pp x vp = 2 x 4 = 8 \(valid: pp x vp"):
        training_graph(SMALL, "pp=2,vp=4", xs(2))
    with pytest.raises(HcsimError, match="vp=2 needs pipeline parallelism"):
        training_graph(SMALL, "vp=2", xs(1))
    with pytest.raises(HcsimError, match="schedule 'gpipe' has no virtual pipeline stages"):
        training_graph(SMALL, "pp=2,vp=2", xs(2), schedule_name="gpipe")


# ------------------------------------------------------------------ 4. context parallelism
def test_cp_rank_grid_is_tp_cp_pp_dp():
    grid = RankGrid(Layout.parse("dp=2,tp=2,pp=2,cp=2"), xs(16))
    assert grid.tp_group(0, 0) == ["x0", "x1"]
    assert grid.cp_group(0, 0, 0) == ["x0", "x2"]  # CP right outside TP
    assert grid.tp_group(0, 1) == ["x4", "x5"]  # then the stages
    assert grid.dp_group(0, 1) == ["x1", "x3", "x9", "x11"]  # gradients over dp x cp
    assert Layout.parse("tp=2,cp=4", 32).dp == 4


def test_cp_splits_tokens_and_exchanges_kv_in_a_ring():
    """Each CP rank computes 1/cp of the block's FLOPs; ring attention: KV allgather forward, + dKV RS backward."""
    cp, tp = 4, 2
    full = training_graph(SMALL, f"tp={tp}", xs(tp), sequence=64)
    split = training_graph(SMALL, f"tp={tp},cp={cp}", xs(tp * cp), sequence=64)
    f = {n: d["flops"] for n, d in compute(full) if n.startswith("x0/")}
    s = {n: d["flops"] for n, d in compute(split) if n.startswith("x0/")}
    assert f.keys() == s.keys()
    for n in f:
        assert s[n] == pytest.approx(f[n] / cp, rel=1e-12)
    ring = [(n, d) for n, d in split.nodes(data=True) if d.get("phase") == "cp"]
    kv = 2 * 64 * (2 // 2 * 32) * 2.0  # K and V of the whole sequence, this TP rank's 1 KV head, bf16
    assert {d["bytes"] for _, d in ring} == {kv}
    per_block = [n for n, _ in ring if n.startswith("cp0.0.0/") and ".L1." in n]
    assert sorted(x.rsplit(".", 1)[-1] for x in per_block) == ["allgather", "allgather", "reduce_scatter"]
    assert all(d["scope"] == ["x" + str(t), "x" + str(t + 2), "x" + str(t + 4), "x" + str(t + 6)] for t in (0, 1)
               for n, d in ring if n.startswith(f"cp0.0.{t}/"))  # fmt: skip
    dp = [d for _, d in split.nodes(data=True) if d.get("phase") == "dp"]
    assert dp and all(len(d["scope"]) == cp for d in dp)  # dp = 1: the gradients are summed over the CP ranks


# ------------------------------------------------------------------ 5. recomputation
@pytest.mark.parametrize("mode", ["selective", "full"])
def test_recompute_adds_the_forward_to_the_backward(mode):
    base = dict(compute(training_graph(SMALL, "dp=1", xs(1))))
    again = dict(compute(training_graph(SMALL, "dp=1", xs(1), recompute=mode)))
    core = next(o for o in block_operators(SMALL, 64) if o.kind == "attention").fwd_flops
    for n, d in base.items():
        if d["phase"] == "F" or not (".attn" in n or ".mlp" in n):
            assert again[n]["flops"] == d["flops"]
            continue
        forward = base[n.replace("/B", "/F", 1)]["flops"]
        if mode == "full":
            assert again[n]["flops"] == pytest.approx(d["flops"] + forward, rel=1e-12)
        else:
            assert again[n]["flops"] == pytest.approx(d["flops"] + (core if ".attn" in n else 0.0), rel=1e-12)
    # full recomputation keeps only each block's input: t x h x 2 bytes
    from hcsim.workload.parallel.costs import block_cost

    assert block_cost(block_operators(SMALL, 64), "full").activation_bytes == 64 * 256 * 2


@pytest.mark.parametrize("layout,n", [("dp=1", 1), ("dp=1", 7), ("dp=1,pp=2", 3), ("dp=1,pp=2,vp=2", 1)])
def test_recompute_num_layers_recomputes_the_first_blocks_of_each_chunk(layout, n):
    """Megatron's --recompute-method block: each model chunk runs its first N blocks as "full", the rest as
    "none" (flops vertex by vertex), and its memory is the same per-block mix; N >= blocks per chunk is full."""
    import re
    from dataclasses import replace

    from hcsim.workload.parallel.memory import training_memory

    spec = replace(SMALL, layers=8)
    lay = Layout.parse(layout)
    per_chunk = spec.layers // (lay.pp * lay.vp)

    def graph(mode):
        return dict(compute(training_graph(spec, lay, xs(lay.ranks), microbatches=4, recompute=mode)))

    base, full, some = graph("none"), graph("full"), graph(f"full:{n}")
    recomputed = 0
    for name, d in some.items():
        layer = re.search(r"\.L(\d+)\.", name)
        first = layer is not None and int(layer.group(1)) % per_chunk < n
        assert d["flops"] == (full if first else base)[name]["flops"], name
        recomputed += first and d["flops"] != base[name]["flops"]
    assert recomputed > 0
    mem = {m: [s.activations for s in training_memory(spec, lay, microbatches=4, recompute=m)] for m in
           ("none", "full", f"full:{n}")}  # fmt: skip
    share = min(n, per_chunk) / per_chunk
    for none, all_, mixed in zip(mem["none"], mem["full"], mem[f"full:{n}"], strict=True):
        if n >= per_chunk:
            assert mixed == all_
        else:
            assert all_ < mixed < none
            blocks = none - all_  # what the blocks' recomputation saves, proportional to how many run it
            assert mixed == pytest.approx(none - share * blocks, rel=1e-9)


@pytest.mark.parametrize("mode", ["full:0", "full:x", "full:-1", "full:1.5"])
def test_recompute_num_layers_bad_values_are_one_line(mode):
    with pytest.raises(HcsimError, match="recompute layers"):
        training_graph(SMALL, "dp=1", xs(1), recompute=mode)


# ------------------------------------------------------------------ 7. memory
@pytest.mark.parametrize(
    "layout,kw",
    [("dp=2,tp=2,pp=2", {}), ("dp=2,pp=2,vp=2", {"zero": 1, "precision": "bf16"}),
     ("dp=1,tp=2,cp=2", {"recompute": "full", "precision": "fp8"}), ("dp=2,pp=2", {"schedule_name": "gpipe"}),
     ("dp=1,pp=2", {"recompute": "full:1", "precision": "bf16"})],
)  # fmt: skip
def test_memory_is_the_graphs_footprint(layout, kw):
    """training_memory's per-rank total is the sum of the footprints the graph gives one rank of each stage."""
    from hcsim.workload.parallel.memory import training_memory

    lay = Layout.parse(layout)
    w = training_graph(SMALL, lay, xs(lay.ranks), microbatches=4, **kw)
    stages = training_memory(SMALL, lay, microbatches=4, **kw)
    grid = RankGrid(lay, xs(lay.ranks))
    for s in stages:
        x = grid.xpu(0, s.stage, 0)
        total = sum(d["footprint"] for n, d in compute(w) if d["location"] == x)
        assert s.resident == pytest.approx(total, rel=1e-12)


def test_memory_closed_form_and_the_fit_error():
    """bf16 + distributed optimizer over d: (6 + 12/d) B/param; an error names the stage, need and capacity."""
    from hcsim.workload.parallel.memory import check_fits, training_memory

    m = load_model("llama2-7b")
    stages = training_memory(m, "dp=8", precision="bf16", zero=1)
    s = stages[0]
    assert s.weights + s.grads + s.optimizer == pytest.approx(m.parameters() * (6 + 12 / 8), rel=1e-12)
    assert check_fits(stages, 80e9) is s
    with pytest.raises(HcsimError, match=r"^each rank of pipeline stage 0 needs .* GiB .* but an XPU has 9.3 GiB"):
        check_fits(stages, 10e9)
    with pytest.raises(HcsimError, match=r"^XPU x0 \(as every rank of pipeline stage 0\) needs \d"):
        check_fits(stages, 10e9, xpu_of={0: "x0"})
    assert check_fits(stages, 10e9, allow_spill=True) is s


# ------------------------------------------------------------------ 8. presets and HuggingFace configs
@pytest.mark.parametrize(
    "name,billions",
    [("gpt3-5b", 5.0), ("gpt3-20b", 20.0), ("gpt3-175b", 175.0), ("nemotron-8b", 8.5), ("nemotron-15b", 15.6),
     ("nemotron-22b", 21.3), ("nemotron-340b", 341.0), ("gpt-oss-120b", 116.8), ("llama3-405b", 405.9)],
)  # fmt: skip
def test_presets_have_their_published_size(name, billions):
    assert load_model(name).parameters() / 1e9 == pytest.approx(billions, rel=0.02)


def test_gpt_oss_attention_width_and_sliding_window():
    m = load_model("gpt-oss-120b")
    assert (m.head_dim, m.q_dim, m.kv_dim) == (64, 4096, 512)
    full = next(o for o in block_operators(m, 4096, tp=1, ep=1, layer=1) if o.kind == "attention")
    slide = next(o for o in block_operators(m, 4096, tp=1, ep=1, layer=0) if o.kind == "attention")
    assert full.fwd_flops == 4.0 * 4096 * 4096 * 4096 and slide.fwd_flops == 4.0 * 4096 * 128 * 4096
    assert m.active_parameters() < m.parameters() / 20


def _write(tmp_path, config):
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


BASE = {
    "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
    "intermediate_size": 2048, "vocab_size": 1000, "max_position_embeddings": 512, "torch_dtype": "bfloat16",
}  # fmt: skip


def test_hf_moe_spellings(tmp_path):
    mixtral = load_model(_write(tmp_path, {**BASE, "num_local_experts": 8, "num_experts_per_tok": 2}))
    assert (mixtral.experts, mixtral.top_k, mixtral.expert_intermediate) == (8, 2, 2048)
    qwen = {"num_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 256, "decoder_sparse_step": 2}
    qwen = load_model(_write(tmp_path, {**BASE, **qwen, "head_dim": 256}))
    assert (qwen.experts, qwen.top_k, qwen.expert_intermediate, qwen.moe_every, qwen.head_dim) == (16, 4, 256, 2, 256)
    assert [qwen.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    deep = load_model(_write(tmp_path, {**BASE, "n_routed_experts": 64, "num_experts_per_tok": 6,
                                        "moe_intermediate_size": 128, "first_k_dense_replace": 1,
                                        "n_shared_experts": 2}))  # fmt: skip
    assert (deep.experts, deep.top_k, deep.first_dense, deep.shared_intermediate) == (64, 6, 1, 256)
    assert [deep.is_moe_layer(i) for i in range(4)] == [False, True, True, True]
    dense_block = 2 * 1024 + deep.attention_parameters() + 3 * 1024 * 2048
    moe_block = 2 * 1024 + deep.attention_parameters() + 1024 * 64 + 64 * 3 * 1024 * 128 + 3 * 1024 * 256
    assert deep.block_parameters(0) == dense_block and deep.block_parameters(1) == moe_block
    ops = block_operators(deep, 64, layer=1)
    assert sum(o.fwd_flops for o in ops if o.name.startswith("moe.shared.") and o.kind == "linear") == (
        2.0 * 64 * 3 * 1024 * 256
    )
    oss = load_model(_write(tmp_path, {**BASE, "num_local_experts": 4, "experts_per_token": 2, "sliding_window": 128,
                                       "layer_types": ["sliding_attention", "full_attention"] * 2}))  # fmt: skip
    assert (oss.top_k, oss.sliding_window, oss.sliding_every) == (2, 128, 2)


@pytest.mark.parametrize(
    "extra,message",
    [({"kv_lora_rank": 512, "n_routed_experts": 4}, "key 'qk_nope_head_dim' is missing"),
     ({"num_experts": 4, "mlp_only_layers": [0]}, "mlp_only_layers"),
     ({"sliding_window": 64, "layer_types": ["full_attention", "sliding_attention"] * 2}, "not every k-th block"),
     ({"sliding_window": 64, "use_sliding_window": True}, "use_sliding_window")],
)  # fmt: skip
def test_hf_what_cannot_be_modelled_is_refused(tmp_path, extra, message):
    with pytest.raises(HcsimError, match=message) as err:
        load_model(_write(tmp_path, {**BASE, **extra}))
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------ 9. model FLOPs
def test_model_flops_reproduce_narayanan_and_the_causal_halving():
    """megatron-2024 = NAR's 72 B s L h^2 (1 + s/6h + V/12Lh) per token; megatron halves the 12 q s core term."""
    from hcsim.workload.models.flops import model_flops_per_token

    m, s = load_model("gpt3-175b"), 2048
    L, h, V = 96, 12288, 50257
    nar = 72 * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))
    assert model_flops_per_token(m, s, convention="megatron-2024") == pytest.approx(nar, rel=1e-12)
    assert model_flops_per_token(m, s, convention="megatron-2024") - model_flops_per_token(m, s) == pytest.approx(
        6 * h * s * L, rel=1e-12
    )
    llama = load_model("llama3-8b")  # per token: L [12h(q+k) + 6ghf + 6qs] + 6hV (research notes §1.1)
    q, k, f = 4096, 1024, 14336
    expected = 32 * (12 * 4096 * (q + k) + 6 * 3 * 4096 * f + 6 * q * 8192) + 6 * 4096 * 128256
    assert model_flops_per_token(llama, 8192) == pytest.approx(expected, rel=1e-12)
    mix = load_model("mixtral-8x7b")  # MoE: top_k x the expert width
    dense_like = model_flops_per_token(mix, 4096) - 32 * 6 * 3 * 4096 * 2 * 14336
    assert dense_like == pytest.approx(32 * (12 * 4096 * (4096 + 1024) + 6 * 4096 * 4096) + 6 * 4096 * 32000)


# ------------------------------------------------------------------ 5. FSDP every microbatch
@pytest.mark.parametrize("dp,m", [(2, 1), (4, 3)])
def test_fsdp_every_microbatch_moves_three_param_volumes_per_microbatch(compiled, dp, m):
    """Per microbatch and unit: all-gather before forward and backward, reduce-scatter after: 3 (n-1)/n S each rank."""
    ops = uniform_ops(params=1_000_000)
    w = training_graph(stand_in(layers=2), f"dp={dp}", xs(dp), zero=3, microbatches=m, ops=ops,
                       zero3_every_microbatch=True)  # fmt: skip
    per_layer = 2 * 1_000_000 * 2  # two operators of 1M parameters, 2 bytes each
    gathers = [n for n, d in w.nodes(data=True) if d.get("kind") == "allgather"]
    assert len(gathers) == 2 * 2 * m and len([n for n in w.nodes if n.endswith(f".reduce_scatter.{m - 1}")]) == 2
    path, _ = free_platform(compiled, dp)
    r = simulate(path, w, 2)
    traffic = sum(nbytes for _, _, nbytes, _, _ in r.flows)
    assert traffic == pytest.approx(2 * m * 2 * 3 * (dp - 1) * per_layer, rel=1e-12)  # 2 iterations, 2 layers
    with pytest.raises(HcsimError, match="zero3_every_microbatch needs zero=3"):
        training_graph(stand_in(layers=2), f"dp={dp}", xs(dp), zero=1, ops=ops, zero3_every_microbatch=True)


@pytest.mark.parametrize("p,m,v", [(4, 8, 2), (2, 4, 3), (8, 16, 4)])
def test_interleaved_first_stage_keeps_megatrons_activations(p, m, v):
    """MEG theoretical_memory_usage: the first stage keeps L (1 + (p-1)/(p v)) layers' activations."""
    from hcsim.workload.parallel.schedules import in_flight_by_chunk

    kept = in_flight_by_chunk(interleaved_1f1b(p, m, 0, v), v)
    assert sum(kept) == 2 * (p - 1) + (v - 1) * p + 1
    layers = p * v * 2  # two layers a chunk
    assert Fraction(sum(kept) * 2) == layers * (1 + Fraction(p - 1, p * v))
    assert in_flight_by_chunk([(*e, 0) for e in one_f_one_b(p, m, 0)], 1) == [in_flight(one_f_one_b(p, m, 0))]


def test_simulated_cp_halves_each_ranks_time(compiled):
    """On free links, cp=2 runs each rank's half of every operator: the iteration takes half as long."""
    times = {}
    for cp in (1, 2):
        w = training_graph(SMALL, f"cp={cp}" if cp > 1 else "dp=1", xs(cp), microbatches=2, sequence=64)
        path, _ = free_platform(compiled, cp)
        times[cp] = simulate(path, w, 1).makespan
    assert times[2] == pytest.approx(times[1] / 2, rel=1e-4)


# ------------------------------------------------------------------ 6. overlap_param_gather
def test_overlap_param_gather_moves_the_gathers_into_the_next_forward(compiled):
    """Distributed optimizer: reduce-scatters alone on the gradient stream; all-gathers chained in forward order,
    the first gated by the previous iteration's last reduce-scatter, each unit's forward by its own gather."""
    ops = uniform_ops(params=250_000_000)
    kw = dict(zero=1, microbatches=2, ops=ops)
    plain = training_graph(stand_in(layers=3), "dp=2", xs(2), **kw)
    w = training_graph(stand_in(layers=3), "dp=2", xs(2), overlap_param_gather=True, **kw)
    assert sorted(plain.nodes) == sorted(w.nodes)
    first = "dp0.0.0/L0.allgather"
    preds = {u: d["skip_first_iteration"] for u, _, d in w.in_edges(first, data=True)}
    assert preds == {"dp0.0.0/L0.reduce_scatter": True}  # the last reduce-scatter on the stream (L0's is last)
    assert {u for u, _ in w.in_edges("dp0.0.0/L1.allgather")} == {first, "x0/F0.L0.attn", "x1/F0.L0.attn"}
    for n in ("dp0.0.0/L1.reduce_scatter", "dp0.0.0/L0.reduce_scatter"):
        assert not any(u.endswith("allgather") for u, _ in w.in_edges(n))  # gathers left the gradient stream
    times = []
    for g in (plain, w):
        path, _ = free_platform(compiled, 2, bandwidth=1e8)  # 5 s a collective, more than a layer's backward
        r = simulate(path, g, 3)
        times.append(r.makespan)
        assert sum(b for _, _, b, _, _ in r.flows) == pytest.approx(
            3 * 3 * 2 * 1e9, rel=1e-9
        )  # 3 iterations, 3 layers, RS + AG of 1 GB
    assert times[1] < times[0]  # the gathers hide behind the forward instead of the last backward
    with pytest.raises(HcsimError, match="overlap_param_gather needs zero=1 or 2"):
        training_graph(stand_in(layers=3), "dp=2", xs(2), overlap_param_gather=True, ops=ops)
