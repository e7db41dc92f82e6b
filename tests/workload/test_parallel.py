"""Parallel training graphs (issue 16) against closed forms and hand-worked orders, run on SimGrid."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hcsim.collectives import TopologyView
from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.platform import Topology
from hcsim.workload.models import load_model
from hcsim.workload.models.ops import Operator
from hcsim.workload.parallel import Layout, RankGrid, gpipe, one_f_one_b, training_graph
from hcsim.workload.parallel.layout import MEGATRON_ORDER
from hcsim.workload.parallel.schedules import in_flight

RATE = 1e12  # flop/s of the test XPUs (fp16 and fp32)


def free_platform(compiled, n: int, bandwidth: float = 1e15, latency: float = 1e-9, per_server: int | None = None):
    """``n`` XPUs of RATE flop/s and ample memory on one switch (servers of ``per_server`` XPUs as zones)."""
    t = Topology()
    t.add_switch("sw", "generic")
    for i in range(n):
        zone = f"r0/s{i // per_server}" if per_server else ""
        t.add_xpu(f"x{i}", fp16=RATE, fp32=RATE, memory=1e15, memory_bandwidth=1e18, device="test", rank=i, zone=zone)
        t.add_link(f"x{i}", "sw", bandwidth, latency)
    return compiled(t), [f"x{i}" for i in range(n)]


def stand_in(layers: int = 4, heads: int = 4, hidden: int = 1, experts: int = 0, top_k: int = 0):
    """A tiny TransformerSpec-like model for closed forms (uniform blocks, free embedding and head)."""
    return SimpleNamespace(
        name="tiny", layers=layers, hidden=hidden, heads=heads, kv_heads=heads, sequence=1, precision="fp16",
        bytes_per_value=2, experts=experts, top_k=top_k,
    )  # fmt: skip


def uniform_ops(attn: float = 1e12, mlp: float = 1e12, experts: float = 0.0, params: int = 0):
    """Operators of fixed cost: attention ``attn`` flops, MLP ``mlp`` (backward twice), no memory traffic."""

    def op(name: str, kind: str, flops: float, p: int = params) -> Operator:
        return Operator(name, kind, flops, 2 * flops, 0.0, 0.0, p, 0.0)

    def block_operators(spec, tokens, *, tp=1, ep=1, layer=0, phase="train"):
        ops = [op("attn.core", "attention", attn), op("mlp.up", "linear", mlp)]
        if spec.experts:
            ops.append(op("moe.experts", "experts", experts))
        return ops

    def free(spec, tokens, *, tp=1):
        return [op("embedding", "embedding", 0.0, 0)]

    return SimpleNamespace(block_operators=block_operators, embedding_operators=free, head_operators=free)


def run(compiled, n, graph, iterations=1, **kw):
    path, _ = free_platform(compiled, n, **kw)
    return simulate(path, graph, iterations)


# ------------------------------------------------------------------ schedules by hand
ONE_F_ONE_B = {  # (stages, microbatches) -> per stage, worked by hand from Megatron's rule
    (2, 3): ["F0 F1 B0 F2 B1 B2", "F0 B0 F1 B1 F2 B2"],
    (3, 4): ["F0 F1 F2 B0 F3 B1 B2 B3", "F0 F1 B0 F2 B1 F3 B2 B3", "F0 B0 F1 B1 F2 B2 F3 B3"],
    (4, 6): [
        "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5",
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5",
        "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5",
    ],
}


def _text(order):
    return " ".join(f"{k}{i}" for k, i in order)


@pytest.mark.parametrize("stages,microbatches", sorted(ONE_F_ONE_B))
def test_1f1b_order_is_megatrons(stages, microbatches):
    assert [_text(one_f_one_b(stages, microbatches, s)) for s in range(stages)] == ONE_F_ONE_B[(stages, microbatches)]
    # stage s keeps at most p - s microbatches' activations (GPipe keeps all m)
    assert [in_flight(one_f_one_b(stages, microbatches, s)) for s in range(stages)] == [
        min(stages - s, microbatches) for s in range(stages)
    ]
    assert in_flight(gpipe(stages, microbatches, 0)) == microbatches


def simulated_order(result, xpu):
    """The (pass, microbatch) sequence the XPU ran, from SimGrid's start times."""
    # zero-cost vertices (the stand-in's free embedding and head) take no time and tie with their neighbours
    records = sorted(
        (r.start, r.vertex) for r in result.trace if r.host == xpu and r.kind == "compute" and r.end > r.start
    )
    out = []
    for _, vertex in records:
        tag = vertex.split("/", 1)[1].split(".", 1)[0]
        if not out or out[-1] != tag:
            out.append(tag)
    return " ".join(out)


@pytest.mark.parametrize("stages,microbatches", sorted(ONE_F_ONE_B))
def test_simulated_1f1b_runs_in_the_hand_worked_order(compiled, stages, microbatches):
    spec = stand_in(layers=stages)
    w = training_graph(spec, f"pp={stages}", [f"x{i}" for i in range(stages)], microbatches=microbatches,
                       ops=uniform_ops())  # fmt: skip
    r = run(compiled, stages, w)
    assert [simulated_order(r, f"x{s}") for s in range(stages)] == ONE_F_ONE_B[(stages, microbatches)]


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_simulated_gpipe_runs_all_forwards_then_all_backwards(compiled, stages):
    spec = stand_in(layers=stages)
    w = training_graph(spec, f"pp={stages}", [f"x{i}" for i in range(stages)], microbatches=3, schedule_name="gpipe",
                       ops=uniform_ops())  # fmt: skip
    r = run(compiled, stages, w)
    assert [simulated_order(r, f"x{s}") for s in range(stages)] == ["F0 F1 F2 B0 B1 B2"] * stages


# ------------------------------------------------------------------ the bubble
@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize("stages,microbatches", [(2, 1), (2, 4), (3, 3), (4, 8)])
def test_pipeline_bubble_is_p_minus_1_over_m_plus_p_minus_1(compiled, schedule, stages, microbatches):
    """Uniform stages (one block each: forward 2000 s, backward 4000 s) and free links: T = (m + p - 1)(tf + tb)."""
    spec = stand_in(layers=stages)
    w = training_graph(spec, f"pp={stages}", [f"x{i}" for i in range(stages)], microbatches=microbatches,
                       schedule_name=schedule, ops=uniform_ops(attn=1e15, mlp=1e15))  # fmt: skip
    t = run(compiled, stages, w).makespan  # links cost ~1e-8 s on the critical path: 1e-12 of it
    work = microbatches * (2e3 + 4e3)  # per stage: m x (tf + tb), tf = 2e15 flop / 1e12 flop/s
    assert t == pytest.approx((microbatches + stages - 1) * 6e3, rel=1e-9)
    assert 1 - work / t == pytest.approx((stages - 1) / (microbatches + stages - 1), rel=1e-9)


# ------------------------------------------------------------------ communication volumes
def flow_bytes(result):
    return sum(nbytes for _, _, nbytes, _, _ in result.flows)


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_tp_collectives_move_four_activations_per_block(compiled, sequence_parallel):
    """Megatron TP: 2 allreduces forward + 2 backward of tokens x hidden x bytes per block and microbatch; with
    sequence parallelism an all-gather and a reduce-scatter for each, and the backward gathers the norm outputs
    again for the QKV and fc1 weight gradients (2 more all-gathers)."""
    spec = load_model("llama2-7b")
    tokens, tp, m = 64, 4, 2
    w = training_graph(spec, f"tp={tp}", [f"x{i}" for i in range(tp)], sequence=tokens, microbatches=m,
                       sequence_parallel=sequence_parallel)  # fmt: skip
    s = tokens * spec.hidden * spec.bytes_per_value
    tp_vertices = [d for _, d in w.nodes(data=True) if d.get("phase") == "tp"]
    per_layer = [d for n, d in w.nodes(data=True) if d.get("phase") == "tp" and ("/F0.L3." in n or "/B0.L3." in n)]
    kinds = {"allreduce"} if not sequence_parallel else {"allgather", "reduce_scatter"}
    assert {d["kind"] for d in per_layer} == kinds
    assert len(per_layer) == (4 if not sequence_parallel else 10)
    assert all(d["bytes"] == s for d in per_layer)
    # on the wire (ring): an allreduce of S moves 2(n-1)S in all; an AG or an RS of S (n-1)S
    r = run(compiled, tp, w)
    wire = 2 * len(tp_vertices) if not sequence_parallel else len(tp_vertices)
    assert flow_bytes(r) == pytest.approx(wire * (tp - 1) * s, rel=1e-12)
    per_block = 4 if not sequence_parallel else 10
    assert len(tp_vertices) == m * (per_block * spec.layers + (1 + 1) * (1 if not sequence_parallel else 2))


@pytest.mark.parametrize("dp", [2, 4])
def test_zero3_moves_one_and_a_half_times_the_allreduce(compiled, dp):
    spec = stand_in(layers=2)
    ops = uniform_ops(params=1_000_000)
    traffic = {}
    for zero in (0, 1, 2, 3):
        w = training_graph(spec, f"dp={dp}", [f"x{i}" for i in range(dp)], zero=zero, ops=ops)
        traffic[zero] = flow_bytes(run(compiled, dp, w))
    per_layer = 2 * 1_000_000 * 2  # two operators of 1M parameters, 2 bytes each
    assert traffic[0] == pytest.approx(2 * 2 * (dp - 1) * per_layer, rel=1e-12)  # 2 layers, ring allreduce
    assert traffic[1] == traffic[2] == pytest.approx(traffic[0], rel=1e-12)
    assert traffic[3] == pytest.approx(1.5 * traffic[0], rel=1e-12)


def test_alltoall_bytes_per_moe_block(compiled):
    """Dispatch + combine, forward and backward: 4 all-to-alls of tokens x top_k x hidden x bytes per block."""
    spec = stand_in(layers=2, hidden=16, experts=4, top_k=2)
    ep = dp = 4
    w = training_graph(spec, f"dp={dp},ep={ep}", [f"x{i}" for i in range(dp)], sequence=8,
                       ops=uniform_ops(experts=1e12))  # fmt: skip
    a2a = [d for n, d in w.nodes(data=True) if d.get("kind") == "alltoall" and ".L1." in n]
    size = 8 * 2 * 16 * 2
    assert len(a2a) == 4 and all(d["bytes"] == size for d in a2a)
    r = run(compiled, dp, w)
    assert flow_bytes(r) == pytest.approx(2 * 4 * (ep - 1) * size, rel=1e-12)  # direct: each sends S/n to n-1 peers
    mixtral = load_model("mixtral-8x7b")
    w = training_graph(mixtral, "dp=8,ep=8", [f"x{i}" for i in range(8)], sequence=32)
    a2a = [d for n, d in w.nodes(data=True) if d.get("kind") == "alltoall" and ".L5." in n]
    assert sorted(d["bytes"] for d in a2a) == [32 * 2 * 4096 * 2] * 4


def test_gradient_sync_gates_the_next_iteration(compiled):
    spec = stand_in(layers=2)
    w = training_graph(spec, "dp=2", ["x0", "x1"], ops=uniform_ops(params=10**9))
    r = run(compiled, 2, w, iterations=2, bandwidth=1e9)  # 4 GB allreduces of 4 s each: they show
    ends = {(t.vertex, t.iteration): t.end for t in r.trace}
    starts = {(t.vertex, t.iteration): t.start for t in r.trace}
    for unit in ("L0", "L1"):
        assert starts[(f"x0/F0.{unit}.attn", 1)] >= ends[(f"dp0.0.0/{unit}.allreduce", 0)]
    assert r.iteration_end[1] - r.iteration_end[0] > 8.0
    # a rank runs its gradient collectives one at a time, last unit first (one NCCL stream)
    syncs = sorted((t.start, t.end, t.vertex) for t in r.trace if t.iteration == 0 and t.vertex.startswith("dp"))
    assert [v for _, _, v in syncs] == ["dp0.0.0/L1.allreduce", "dp0.0.0/L0.allreduce"]
    assert syncs[1][0] >= syncs[0][1]


# ------------------------------------------------------------------ layouts
def test_default_mapping_puts_tp_inside_servers_and_pp_across():
    xpus = [f"x{i}" for i in range(16)]
    view = TopologyView({x: f"r0/s{int(x[1:]) // 4}" for x in xpus})
    grid = RankGrid(Layout(dp=2, tp=4, pp=2), xpus[8:] + xpus[:8], view=view)  # XPU order scrambled by server
    assert len({view.server(x) for x in grid.tp_group(0, 0)}) == 1
    assert view.server(grid.xpu(0, 0, 0)) != view.server(grid.xpu(0, 1, 0))
    custom = RankGrid(Layout(dp=2, tp=4, pp=2), xpus, mapping="dp,tp,pp")
    assert custom.dp_group(0, 0) == ["x0", "x1"]
    explicit = RankGrid(Layout(dp=2, tp=2, pp=1), ["x0", "x1", "x2", "x3"], mapping=["x3", "x2", "x1", "x0"])
    assert explicit.tp_group(0, 0) == ["x3", "x2"]


def test_megatron_order_gives_megatron_cores_own_groups():
    """initialize_model_parallel's docstring (megatron/core/parallel_state.py): 16 GPUs, tp 2, pp 4 give TP
    groups [g0, g1], ..., DP groups [g0, g2], [g1, g3], [g4, g6], ... and PP groups [g0, g4, g8, g12], ..."""
    g = [f"g{i}" for i in range(16)]
    grid = RankGrid(Layout(dp=2, tp=2, pp=4), g, mapping=",".join(MEGATRON_ORDER))
    assert [grid.tp_group(d, 0) for d in range(2)] == [["g0", "g1"], ["g2", "g3"]]
    assert grid.dp_group(0, 0) == ["g0", "g2"] and grid.dp_group(0, 1) == ["g1", "g3"]
    assert grid.dp_group(1, 0) == ["g4", "g6"]
    assert [grid.xpu(0, p, 0) for p in range(4)] == ["g0", "g4", "g8", "g12"]
    # EP carved out of a stage's consecutive replicas: one server of 8 holds a whole EP group
    moe = RankGrid(Layout(dp=8, pp=2, ep=8), g, mapping=MEGATRON_ORDER)
    assert moe.ep_group(0, 0, 0) == g[:8] and moe.ep_group(0, 1, 0) == g[8:]
    assert RankGrid(Layout(dp=8, pp=2, ep=8), g).ep_group(0, 0, 0) == g[0:16:2]  # tp,pp,dp: across servers


def test_expert_groups_are_carved_from_data_parallel_replicas():
    grid = RankGrid(Layout(dp=4, ep=2), ["a", "b", "c", "d"])
    assert grid.ep_group(3, 0, 0) == ["c", "d"] and grid.expert_dp_group(3, 0, 0) == ["b", "d"]


@pytest.mark.parametrize(
    "layout,n,message",
    [
        ("dp=2,tp=4,pp=2", 8, "needs dp x tp x pp = 16 XPUs but the platform has 8"),
        ("tp=3", 3, "64 attention heads, not divisible by tp=3"),
        ("pp=3", 3, "80 layers, not divisible by pp=3"),
        ("dp=4,ep=4", 4, "dense model"),
        ("dp=2,tp=2,pp=2,zz=1", 8, "'zz=1' is invalid"),
        ("dp=0", 8, "dp='0' is invalid"),
    ],
)
def test_impossible_layouts_are_one_line_errors(layout, n, message):
    with pytest.raises(HcsimError, match=message.replace("(", r"\(")) as e:
        training_graph(load_model("llama3-70b"), layout, [f"x{i}" for i in range(n)])
    assert "\n" not in str(e.value)


def test_experts_not_divisible_by_ep_is_an_error():
    with pytest.raises(HcsimError, match="8 experts, not divisible by ep=3"):
        training_graph(load_model("mixtral-8x7b"), "dp=3,ep=3", ["a", "b", "c"])


def test_zero_shards_the_state_that_decides_placement():
    spec = stand_in(layers=2)
    params = 1000

    def footprint(zero):
        w = training_graph(spec, "dp=4", [f"x{i}" for i in range(4)], zero=zero, ops=uniform_ops(params=params))
        return sum(d["footprint"] for d in w.nodes.values() if d.get("location") == "x0")

    per_unit = 2 * params  # two operators
    assert footprint(0) == pytest.approx(2 * per_unit * 16)
    assert footprint(1) == pytest.approx(2 * per_unit * (2 + 2 + 12 / 4))
    assert footprint(2) == pytest.approx(2 * per_unit * (2 + (2 + 12) / 4))
    assert footprint(3) == pytest.approx(2 * per_unit * 16 / 4)


def test_the_graph_builds_the_same_twice():
    spec = load_model("mixtral-8x7b")
    a = training_graph(spec, "dp=4,tp=2,pp=2,ep=2", [f"x{i}" for i in range(16)], sequence=64, zero=3)
    b = training_graph(spec, "dp=4,tp=2,pp=2,ep=2", [f"x{i}" for i in range(16)], sequence=64, zero=3)
    assert list(a.nodes(data=True)) == list(b.nodes(data=True)) and list(a.edges) == list(b.edges)
    a.validate()


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
def test_every_option_together_runs_two_iterations(compiled, schedule):
    """dp x tp x pp x ep with ZeRO-3 and sequence parallelism: no deadlock, iteration 2 as long as iteration 1."""
    spec = load_model("mixtral-8x7b")
    w = training_graph(spec, "dp=2,tp=2,pp=2,ep=2", [f"x{i}" for i in range(8)], sequence=32, zero=3,
                       sequence_parallel=True, schedule_name=schedule, microbatches=3)  # fmt: skip
    r = run(compiled, 8, w, iterations=2, bandwidth=1e11, latency=1e-6)
    first, second = r.iteration_end[0], r.iteration_end[1] - r.iteration_end[0]
    assert second == pytest.approx(first, rel=0.05)
    assert len(r.trace) == 2 * w.number_of_nodes()


def test_docs_example_runs():
    """The Python example of docs/parallelism.md runs as written and prints a throughput."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "parallelism.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root).stdout
    assert re.fullmatch(r"\d+\.\d sequences/s\n", out)


def test_cli_trains_a_model(capsys):
    from hcsim.cli import main

    argv = ["run", "--system", "cxl", "--xpus", "16", "--model", "llama3-8b", "--parallel", "tp=4,pp=2",
            "--microbatches", "2", "--sequence", "1024", "--zero", "1", "--sequence-parallel", "--json"]  # fmt: skip
    assert main(argv) == 0
    import json

    summary = json.loads(capsys.readouterr().out)
    assert summary["xpus"] == 16 and summary["samples_per_s"] > 0
