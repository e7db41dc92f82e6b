"""SimAI / AICB workload files: the hand-written sample parses, groups follow SimAI's rules, times are exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.formats.aicb import parse_aicb, read_aicb
from hcsim.formats.workload_files import load_workload
from hcsim.platform import compile_platform, star

SAMPLE = Path(__file__).parents[1] / "data" / "aicb_tp2_pp2_ga2.txt"
X = [f"x{i}" for i in range(8)]
RATE = 1e12  # FLOP/s: 1 ns of compute is 1000 FLOPs


def test_sample_header_and_layers() -> None:
    spec = parse_aicb(SAMPLE)
    assert (spec.policy, spec.tp, spec.ep, spec.pp, spec.ga, spec.all_gpus) == (
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD", 2, 2, 2, 2, 8,
    )  # fmt: skip
    assert spec.pp_comm == 4194304
    assert [layer.name for layer in spec.layers] == [
        "embedding_layer",
        "attention_layer",
        "mlp_layer",
        "moe_layer",
        "norm",
    ]
    assert spec.layers[3].fwd_comm == "ALLTOALL_EP" and spec.layers[3].wg_comm == "ALLGATHER_DP_EP"


def test_sample_graph_follows_simai_groups() -> None:
    w = read_aicb(SAMPLE, X, xpu_flops=RATE)
    w.validate(set(X))
    # rank = t + 2 (d + 2 p): stage 0 is x0..x3, stage 1 x4..x7; layers 0-1 on stage 0, 2-4 on stage 1
    scope = dict(w.nodes(data="scope"))
    assert scope["mb0/L0:embedding_layer/fwd-comm@tp0.0"] == ["x0", "x1"]  # forward comm: tensor-parallel group
    assert scope["mb1/L2:mlp_layer/fwd-comm@tp1.1"] == ["x6", "x7"]
    assert scope["L1:attention_layer/wg-comm@dp0.0"] == ["x0", "x2"]  # weight-gradient comm: data-parallel group
    assert scope["L2:mlp_layer/wg-comm@dp1.1"] == ["x5", "x7"]
    assert scope["mb0/L3:moe_layer/fwd-comm@ep1.0.1"] == ["x5", "x7"]  # _EP: ep consecutive data-parallel ranks
    assert w.nodes["mb0/L3:moe_layer/fwd-comm@ep1.0.1"]["kind"] == "alltoall"
    # pipeline: activations stage 0 -> 1 per micro-batch, gradients back, each pp_comm bytes
    p2p = {n: d for n, d in w.nodes(data=True) if d["type"] == "comm" and d["kind"] == "p2p"}
    assert len(p2p) == 2 * 2 * 4 and all(d["bytes"] == 4194304 for d in p2p.values())
    assert p2p["mb1/act0->1:x2->x6"]["scope"] == ["x2", "x6"]
    assert p2p["mb0/grad1->0:x6->x2"]["scope"] == ["x6", "x2"]
    # compute: ns at the XPU's rate
    assert w.nodes["x4/mb0/L2:mlp_layer/fwd"]["flops"] == pytest.approx(45000e-9 * RATE)
    # what SimAI ignores or what moves nothing, counted: norm's BROADCAST (2 micro-batches x 4 ranks),
    # its zero forward time, and the DP_EP allgather over a group of one (dp 2 / ep 2)
    assert w.graph["aicb_skipped"] == {"zero-time compute": 8, "collective over one rank": 4, "BROADCAST comm": 8}
    # weight-gradient comm and update once per iteration, after the last micro-batch
    # (one per data-parallel group, 2 per stage: attention, mlp and norm's; moe's DP_EP group has one rank)
    assert sorted(n for n in w if "/wg-comm@" in n) == [
        "L1:attention_layer/wg-comm@dp0.0", "L1:attention_layer/wg-comm@dp1.0",
        "L2:mlp_layer/wg-comm@dp0.1", "L2:mlp_layer/wg-comm@dp1.1",
        "L4:norm/wg-comm@dp0.1", "L4:norm/wg-comm@dp1.1",
    ]  # fmt: skip
    assert w.nodes["L4:norm/wg-comm@dp0.1"]["kind"] == "reduce_scatter"
    assert sum(1 for n in w if n.endswith("/update")) == 4 * 2 + 4 * 3  # each rank, each layer of its stage


def test_micro_benchmark_time_is_exact(tmp_path: Path) -> None:
    """fwd + ig + wg compute, a ring allreduce over the data-parallel group, the update: a closed form."""
    f = tmp_path / "micro.txt"
    f.write_text("MICRO\n1\nmicro_test\t-1\t1000\tNONE\t0\t2000\tNONE\t0\t3000\tALLREDUCE\t4194304\t500\n")
    lat, bw, n, size = 1e-6, 100e9, 4, 4194304
    topo = star(n, "H100", bandwidth=bw, latency=lat)
    path = str(tmp_path / "star.xml")
    compile_platform(topo, path)
    w = load_workload(str(f), topo.xpus(), xpu_flops={x: topo.nodes[x]["fp32_flops"] for x in topo.xpus()})
    makespan = simulate(path, w, 1).makespan
    closed = (1000 + 2000 + 3000 + 500) * 1e-9 + 2 * (n - 1) * (2 * lat + size / (n * bw))
    assert makespan == pytest.approx(closed, rel=1e-9)
    two = simulate(path, w, 2)
    assert two.makespan == pytest.approx(2 * closed, rel=1e-9)  # iterations back to back


def test_sample_runs(tmp_path: Path) -> None:
    topo = star(8, "H100")
    path = str(tmp_path / "star.xml")
    compile_platform(topo, path)
    w = read_aicb(SAMPLE, topo.xpus(), xpu_flops={x: topo.nodes[x]["fp32_flops"] for x in topo.xpus()})
    result = simulate(path, w, 2)
    assert {r.vertex for r in result.trace} == set(w.nodes)
    assert result.iteration_end[1] > result.iteration_end[0] > 0


@pytest.mark.parametrize(
    "text, match",
    [
        ("BOGUS\n0\n", "policy 'BOGUS' is unknown"),
        ("MICRO\n2\nl\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t1\n", "announces 2 layers but 1"),
        ("MICRO\n1\nl\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\n", "11 fields"),
        ("MICRO\n1\nl\t-1\t1\tGATHER\t8\t1\tNONE\t0\t1\tNONE\t0\t1\n", "comm type 'GATHER' is not supported"),
        ("MICRO\n1\nl\t-1\tfast\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t1\n", "forward compute time: 'fast' is not a number"),
        ("MICRO\n1\nl\t-1\t-5\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t1\n", "negative"),
        ("MICRO tp: 2\n0\n", "header item 'tp:' is unknown"),
        ("HYBRID_TRANSFORMER model_parallel_NPU_group: 3 all_gpus: 8\n0\n", "not a multiple of TP 3"),
        (
            "HYBRID_TRANSFORMER pp: 2 all_gpus: 8\n2\nl\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t1\n"
            "l\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t1\n",
            "pp_comm > 0",
        ),  # fmt: skip
    ],
)
def test_bad_files_are_one_line(tmp_path: Path, text: str, match: str) -> None:
    f = tmp_path / "w.txt"
    f.write_text(text)
    with pytest.raises(HcsimError, match=match) as e:
        read_aicb(f, X, xpu_flops=RATE)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("ga", [1, 2])
def test_pipeline_sends_gradient_before_its_allreduce(tmp_path: Path, ga: int) -> None:
    """TP2 PP2 DP2 on a star of 8, one layer per stage, a hand-worked GPipe timeline.

    A hop is X = 2L + P/B (two star links); a ring allreduce over the 2 data-parallel
    ranks is AR = 2 (2L + S/(2B)). Stage 1 runs its last backward, sends the gradient
    back, and only then allreduces and updates; stage 0, the last to finish, ends at
    (ga+1) F + 2 ga X + (ga+1)(I + G) + AR + U (F, I, G, U: forward, input-gradient,
    weight-gradient and update times). Sending after the allreduce and update
    (the old order) made it exactly AR + U later.
    """
    f_ns, i_ns, g_ns, u_ns, s, pp_bytes = 3000, 5000, 7000, 1100, 8388608, 1048576
    line = f"\t-1\t{f_ns}\tNONE\t0\t{i_ns}\tNONE\t0\t{g_ns}\tALLREDUCE\t{s}\t{u_ns}\n"
    text = (
        f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 2 ga: {ga} all_gpus: 8 "
        f"pp_comm: {pp_bytes}\n2\nfirst{line}second{line}"
    )
    f = tmp_path / "tp2pp2dp2.txt"
    f.write_text(text)
    lat, bw = 1e-6, 100e9
    topo = star(8, "H100", bandwidth=bw, latency=lat)
    path = str(tmp_path / "star.xml")
    compile_platform(topo, path)
    w = read_aicb(f, topo.xpus(), xpu_flops={x: topo.nodes[x]["fp32_flops"] for x in topo.xpus()})
    hop = 2 * lat + pp_bytes / bw
    ar = 2 * (2 * lat + s / (2 * bw))
    fw, ig, wg, up = (v * 1e-9 for v in (f_ns, i_ns, g_ns, u_ns))
    closed = (ga + 1) * fw + 2 * ga * hop + (ga + 1) * (ig + wg) + ar + up
    assert simulate(path, w, 1).makespan == pytest.approx(closed, rel=1e-9)
    # on every rank of stage 1, the allreduce waits for the gradient's send (program order)
    for x in topo.xpus()[4:]:
        send = next(n for n in w if n.startswith("mb0/grad1->0:") and n.split(":")[1].startswith(f"{x}->"))
        allreduce = next(n for n in w if n.startswith("L1:second/wg-comm@") and x in w.nodes[n]["scope"])
        assert w.has_edge(send, allreduce) and not w.edges[send, allreduce]["skip_first_iteration"]
