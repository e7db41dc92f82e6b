"""TP communication overlap (``tp_comm_overlap``, TE userbuffers under Megatron-Core): closed form and invariants.

One layer on ``tp`` GPUs of a calibrated DGX-H100 (dp = 1, one microbatch): the iteration is a
single chain per rank, so overlapping a half changes it by exactly ``(overlapped half) - (plain
half)``, each a closed form of its pieces' calibrated seconds and its collectives' durations.
"""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

import pytest

from hcsim.analysis.breakdown import BUCKETS, steady_breakdown
from hcsim.calibration import load_calibration, parse_calibration
from hcsim.calibration.compute import linear_parts, op_seconds
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.errors import HcsimError
from hcsim.fast import simulate_system
from hcsim.platform.dgx import dgx_system
from hcsim.workload.models import TransformerSpec
from hcsim.workload.models.ops import block_operators
from hcsim.workload.parallel import training_graph
from hcsim.workload.parallel.costs import block_cost
from hcsim.workload.parallel.factory import TrainingWorkload
from hcsim.workload.parallel.tp_overlap import overlap_plan

H100 = load_calibration("dgx-h100")
SPEC = TransformerSpec("tiny", layers=1, hidden=2048, heads=16, kv_heads=16, intermediate=8192, vocab=32000,
                       sequence=2048)  # fmt: skip
#: wide enough that the backward's gather of the norm output ends within the first GEMM's dgrad at tp 4
WIDE = TransformerSpec("wide", layers=1, hidden=8192, heads=64, kv_heads=64, intermediate=28672, vocab=32000,
                       sequence=2048)  # fmt: skip


def _run(tp: int, overlap: bool, calib=H100, spec=SPEC, iterations: int = 1):  # noqa: ANN001, ANN202
    kept = {}
    work = TrainingWorkload(spec, f"tp={tp}", microbatches=1, calibration=calib, precision="bf16",
                            sequence_parallel=True, tp_algorithm="nccl@dgx-h100", dp_algorithm="nccl@dgx-h100",
                            tp_comm_overlap=overlap)  # fmt: skip

    def factory(ranks: list[str], group: int | None = None):  # noqa: ANN202
        kept["graph"] = work(ranks, group)
        return kept["graph"]

    result = simulate_system(dgx_system(tp, spec=calibrated_dgx_spec("h100", H100)), factory, iterations,
                             progress=False)  # fmt: skip
    durations = {r[0]: r[5] - r[4] for r in result.trace if r[2] == "collective"}
    return result, kept["graph"], durations


def _first_gemm_backward(s, c, b: str) -> float:
    """The first GEMM's backward: the norm output gathered again beside its dgrad, the reduce-scatter beside its
    wgrad, then the operators after (the gather ends within the dgrad, so the two never share a link)."""
    assert c[f"tp0.0/{b}.regather"] <= s(f"{b}.g1.dgrad"), b
    return s(f"{b}.g1.dgrad") + max(s(f"{b}.g1.wgrad"), c[f"tp0.0/{b}.post"]) + s(f"{b}.post")


@pytest.mark.parametrize("tp", [2, 4])
def test_one_layer_iteration_is_the_closed_form(tp: int) -> None:
    off, g_off, c_off = _run(tp, False, spec=WIDE)
    on, g_on, c = _run(tp, True, spec=WIDE)
    x = g_on.graph["ranks"][0]

    def s(name: str) -> float:
        return g_on.nodes[f"{x}/{name}"]["seconds"]

    def s_off(name: str) -> float:
        return g_off.nodes[f"{x}/{name}"]["seconds"]

    expected = off.iteration_end[0]
    for half in ("attn", "mlp"):
        # the plain halves: forward all-gather, compute, reduce-scatter in the chain; backward (SP alone) the
        # gradient's all-gather, the last GEMM, the rest, then the first GEMM as with userbuffers
        f, b = f"F0.L0.{half}", f"B0.L0.{half}"
        expected -= c_off[f"tp0.0/{f}.pre"] + s_off(f) + c_off[f"tp0.0/{f}.post"]
        expected -= ((s_off(f"{b}.pre") if half == "mlp" else 0.0) + c_off[f"tp0.0/{b}.pre"] + s_off(f"{b}.g2")
                     + s_off(f"{b}.mid") + _first_gemm_backward(s_off, c_off, b))  # fmt: skip
        for pas in ("F", "B"):
            tp_ = f"tp0.0/{pas}0.L0.{half}"
            assert c[f"{tp_}.pre"] == pytest.approx(c_off[f"{tp_}.pre"], rel=1e-12)  # the same all-gather, beside
        # forward: all-gather beside the first GEMM's first (tp-1)/tp; the last GEMM's 4 chunks on 132 - reserved
        # SMs with the reduce-scatter of 3 of them beside the last 3; the last chunk's after (the drain)
        expected += (s(f"{f}.pre") + max(s(f"{f}.g1"), c[f"tp0.0/{f}.pre"]) + s(f"{f}.g1.last") + s(f"{f}.mid")
                     + s(f"{f}.g2.first") + max(s(f"{f}.g2"), c[f"tp0.0/{f}.post"]) + c[f"tp0.0/{f}.post.last"]
                     + (s(f"{f}.post") if half == "mlp" else 0.0))  # fmt: skip
        assert s(f"{f}.g1") == pytest.approx((tp - 1) * s(f"{f}.g1.last"), rel=1e-12)
        assert s(f"{f}.g2") == pytest.approx(3 * s(f"{f}.g2.first"), rel=1e-12)
        # backward: the gradient's all-gather beside the last GEMM's dgrad (proj / fc2, met first), its wgrad
        expected += ((s(f"{b}.pre") if half == "mlp" else 0.0) + max(s(f"{b}.g2.dgrad"), c[f"tp0.0/{b}.pre"])
                     + s(f"{b}.g2.dgrad.last") + s(f"{b}.g2.wgrad") + s(f"{b}.mid")
                     + _first_gemm_backward(s, c, b))  # fmt: skip
        # the backward's GEMMs are the half's own, last GEMM first
        last, first = ("attn.out", "attn.qkv") if half == "attn" else ("mlp.down", "mlp.up")
        assert [o.name for o, _ in g_on.nodes[f"{x}/{b}.g2.wgrad"]["ops"]] == [last]
        assert [o.name for o, _ in g_on.nodes[f"{x}/{b}.g1.wgrad"]["ops"]] == [first]
        assert [o.name for o, _ in g_off.nodes[f"{x}/{b}.g2"]["ops"]] == [last]
    assert on.iteration_end[0] == pytest.approx(expected, rel=1e-9)


def test_the_reduce_scatter_pipeline_reserves_sms_of_the_last_gemm() -> None:
    """proj (attention output) on 132 - 24 SMs, fc2 (MLP down) on 132 - 16 (dgx-h100.yaml, NeMo's ub_cfg)."""
    block = block_cost(block_operators(SPEC, 2048, tp=2, precision=None))
    for half, reserved in ((block.attention, 24), (block.mlp, 16)):
        plan = overlap_plan(half, False, 2, "bf16", H100)
        pieces = {st.piece.suffix: st.piece.seconds for st in plan if st.piece is not None}
        last = [op for op, _ in half.fwd_ops if op.kind == "linear"][-1]
        (slow,) = linear_parts(last, "fwd", "bf16", H100, sms=132 - reserved)
        assert pieces["g2.first"] + pieces["g2"] == pytest.approx(slow, rel=1e-12)
        assert slow >= op_seconds(last, "fwd", "bf16", H100)
        free = overlap_plan(half, False, 2, "bf16", replace(H100, ub_proj_fprop_sms=0, ub_fc2_fprop_sms=0))
        unreserved = {st.piece.suffix: st.piece.seconds for st in free if st.piece is not None}
        assert unreserved["g2.first"] + unreserved["g2"] == pytest.approx(op_seconds(last, "fwd", "bf16", H100))


@pytest.mark.parametrize("tp", [2, 4])
@pytest.mark.parametrize("hidden", [512, 2048, 4096])
def test_overlap_is_never_slower_without_reserved_sms(tp: int, hidden: int) -> None:
    """No SM reserved and the reduce-scatter unchunked: each collective only moves beside compute (max <= sum)."""
    calib = replace(H100, ub_proj_fprop_sms=0, ub_fc2_fprop_sms=0, ub_rs_splits=1)
    spec = replace(SPEC, hidden=hidden, heads=hidden // 128, kv_heads=hidden // 128, intermediate=4 * hidden)
    off = _run(tp, False, calib, spec)[0].iteration_end[0]
    on = _run(tp, True, calib, spec)[0].iteration_end[0]
    assert on <= off * (1 + 1e-12)


@pytest.mark.parametrize("calibrated", [True, False])
def test_pieces_keep_the_halves_work_memory_and_bytes(calibrated: bool) -> None:
    calib = H100 if calibrated else None
    kw = dict(sequence_parallel=True, precision="bf16", calibration=calib, microbatches=2, recompute="selective")
    ranks = [f"x{i}" for i in range(8)]
    spec = replace(SPEC, layers=2)
    off = training_graph(spec, "tp=4,pp=2", ranks, **kw)
    on = training_graph(spec, "tp=4,pp=2", ranks, tp_comm_overlap=True, **kw)
    assert on.number_of_nodes() > off.number_of_nodes()

    def totals(g):  # noqa: ANN001, ANN202
        out: dict = {}
        for d in g._node.values():
            if d["type"] == "compute":
                row = out.setdefault(d["location"], [0.0, 0.0, 0.0, 0.0])
                row[0] += d["flops"]
                row[1] += d["mem_bytes"]
                row[2] += d["footprint"]
                row[3] += d.get("seconds", 0.0) if calib is not None else 0.0
            else:
                out[d["kind"]] = out.get(d["kind"], 0.0) + d["bytes"]
        return out

    t_off, t_on = totals(off), totals(on)
    assert t_on.keys() == t_off.keys()
    for key, value in t_off.items():
        if isinstance(value, list):
            assert t_on[key][:3] == pytest.approx(value[:3], rel=1e-12)  # FLOPs, bytes, the memory footprint
            assert t_on[key][3] >= value[3] * (1 - 1e-12)  # calibrated: reserved SMs only slow the last GEMMs
        else:
            assert t_on[key] == pytest.approx(value, rel=1e-12)  # the same bytes on the wire per kind


def test_breakdown_still_partitions_the_iteration_and_tp_is_less_exposed() -> None:
    on, g_on, _ = _run(4, True, iterations=2)
    off, g_off, _ = _run(4, False, iterations=2)
    b_on, b_off = steady_breakdown(on, g_on), steady_breakdown(off, g_off)
    steady = on.iteration_end[1] - on.iteration_end[0]
    assert sum(b_on[k] for k in BUCKETS) == pytest.approx(steady, rel=1e-9)
    assert b_on["exposed_tp_s"] < b_off["exposed_tp_s"]


def test_overlap_needs_sequence_parallelism_and_a_sane_calibration() -> None:
    with pytest.raises(HcsimError, match="tp_comm_overlap needs sequence_parallel"):
        training_graph(SPEC, "tp=2", ["a", "b"], tp_comm_overlap=True)
    training_graph(SPEC, "tp=1", ["a"], tp_comm_overlap=True)  # nothing to overlap: allowed
    text = (resources.files("hcsim.calibration") / "data" / "dgx-h100.yaml").read_text(encoding="utf-8")
    with pytest.raises(HcsimError, match="tp_overlap.proj_fprop_sms: 132 SMs"):
        parse_calibration(text.replace("proj_fprop_sms: {value: 24", "proj_fprop_sms: {value: 132"))
    with pytest.raises(HcsimError, match="unknown key 'tp_overlap.qkv_sms'"):
        parse_calibration(text.replace("  rs_splits:", "  qkv_sms: {value: 1, unit: count, source: x}\n  rs_splits:"))


def test_linear_parts_add_up_to_the_operator_and_check_their_sms() -> None:
    block = block_operators(SPEC, 2048, tp=2, precision="fp8")
    for op in (o for o in block if o.kind == "linear"):
        for pass_ in ("fwd", "bwd"):
            assert sum(linear_parts(op, pass_, "fp8", H100)) == pytest.approx(op_seconds(op, pass_, "fp8", H100))
    with pytest.raises(HcsimError, match="SMs 0 are invalid"):
        linear_parts(block[1], "fwd", "bf16", H100, sms=0)
    with pytest.raises(HcsimError, match="is not a linear"):
        linear_parts(block[0], "fwd", "bf16", H100)


def test_cli_flag_turns_it_on_and_off(tmp_path) -> None:
    from clitools import assert_one_line_error, run

    row = ["run", "--system", "dgx-h100", "--xpus", "8", "--model", "llama2-7b", "--precision", "fp8", "--parallel",
           "tp=4", "--micro-batch", "1", "--microbatches", "1", "--sequence", "1024", "--fast", "--json"]  # fmt: skip

    def tokens(*extra: str) -> float:
        out = run(*row, *extra)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["tokens_per_s_per_gpu"]

    calibrated = tokens("--calibration", "dgx-h100")  # opt-in: off unless asked
    assert calibrated == tokens("--calibration", "dgx-h100", "--no-tp-comm-overlap")
    assert calibrated < tokens("--calibration", "dgx-h100", "--tp-comm-overlap")
    assert tokens("--calibration", "ideal") == tokens("--calibration", "ideal", "--no-tp-comm-overlap")
    assert_one_line_error(run(*row, "--tp-comm-overlap", "--no-sequence-parallel"), "needs sequence_parallel")


def test_the_fast_path_matches_the_exact_engine_with_overlap() -> None:
    """16 GPUs on 2 nodes, tp=4 x dp=4: the pieces and the collectives beside them, fast (memoized rings) vs exact."""
    spec = replace(SPEC, layers=2)

    def run(fast: bool):  # noqa: ANN202
        work = TrainingWorkload(spec, "tp=4", microbatches=2, zero=1, calibration=H100, precision="bf16",
                                sequence_parallel=True, tp_algorithm="nccl@dgx-h100", dp_algorithm="nccl@dgx-h100",
                                tp_comm_overlap=True)  # fmt: skip
        topo = dgx_system(16, spec=calibrated_dgx_spec("h100", H100))
        return simulate_system(topo, work, 1, fast=fast, fold=False, progress=False)

    assert run(True).makespan == pytest.approx(run(False).makespan, rel=1e-9)


@pytest.mark.parametrize("overlap", [False, True])
def test_the_backward_gathers_the_norm_output_again_for_the_wgrad(overlap: bool) -> None:
    """Sequence parallelism keeps the norm output's shard; the first GEMM's wgrad needs all of it, so the backward
    all-gathers it again beside the dgrad (TE layernorm_linear.py ``ln_out_needs_gather``): the forward's bytes."""
    ranks = [f"x{i}" for i in range(4)]
    kw = dict(sequence_parallel=True, precision="bf16", calibration=H100, microbatches=2, tp_comm_overlap=overlap)
    g = training_graph(replace(SPEC, layers=2), "tp=4", ranks, **kw)
    again = [v for v in g if v.endswith(".regather")]
    assert len(again) == 2 * 2 * 2  # microbatches x layers x halves
    for v in again:
        fwd = v.replace("/B", "/F").replace(".regather", ".pre")
        assert g.nodes[v]["kind"] == g.nodes[fwd]["kind"] == "allgather"
        assert g.nodes[v]["bytes"] == g.nodes[fwd]["bytes"]
        wgrads = [u for u in g.successors(v) if u.endswith(".g1.wgrad")]  # every TP rank's wgrad waits for it
        assert len(wgrads) == 4
        for u in wgrads:
            assert [o.name for o, _ in g.nodes[u]["ops"]] == (["attn.qkv"] if ".attn." in v else ["mlp.up"])
    plain = training_graph(replace(SPEC, layers=2), "tp=4", ranks, **{**kw, "sequence_parallel": False,
                                                                      "tp_comm_overlap": False})  # fmt: skip
    assert not [v for v in plain if v.endswith(".regather")]


@pytest.mark.parametrize("overlap", [False, True])
def test_fp8_blocks_gather_one_byte_per_value(overlap: bool) -> None:
    """FP8 training: TE quantizes a block's GEMM inputs before gathering them (the norm output forward and again
    backward, the output gradient backward), so its all-gathers move half a BF16 reduce-scatter's bytes."""
    ranks = [f"x{i}" for i in range(4)]
    kw = dict(sequence_parallel=True, calibration=H100, microbatches=1, tp_comm_overlap=overlap)
    bf16 = training_graph(SPEC, "tp=4", ranks, precision="bf16", **kw)
    fp8 = training_graph(SPEC, "tp=4", ranks, precision="fp8", **kw)
    for v, d in fp8.nodes(data=True):
        if d.get("phase") != "tp":
            continue
        block = ".L0." in v
        half = d["kind"] == "allgather" and block
        assert d["bytes"] == pytest.approx(bf16.nodes[v]["bytes"] / (2 if half else 1), rel=1e-15), v
    assert sum(".L0." in v and d["kind"] == "allgather" for v, d in fp8.nodes(data=True) if d.get("phase") == "tp") == 6
