"""Expert tensor parallelism ``etp`` (Megatron-Core's MoE parallel folding): groups, bytes, FLOPs, memory.

Closed forms held against the graph and the memory model: with ``etp < tp`` a stage's expert
ranks are ``etp x ep x edp`` in Megatron's ``tp-ep-dp`` order; each rank dispatches its
sequence shard (``t/tp x top_k x hidden x bytes``) over its EP group, with no TP collective
around the experts; per-rank expert FLOPs equal ``etp = tp``'s; a rank holds ``experts/ep``
experts at ``1/etp`` of their width, their state sharded over ``edp = tp x dp x cp / (etp x ep)``.
The default (``etp`` unset or ``= tp``) builds the same graph as before.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from clitools import assert_refused, run_here
from hypothesis import given, settings
from hypothesis import strategies as st

from hcsim.errors import HcsimError
from hcsim.workload.models import TransformerSpec
from hcsim.workload.models.ops import block_operators
from hcsim.workload.models.precision import training_precision
from hcsim.workload.parallel import training_graph
from hcsim.workload.parallel.experts import expert_data_parallel, expert_group
from hcsim.workload.parallel.layout import MEGATRON_ORDER, Layout, RankGrid, fitting_expert_tp
from hcsim.workload.parallel.memory import training_memory

MOE = TransformerSpec("moe", layers=2, hidden=512, heads=8, kv_heads=4, intermediate=1024, vocab=4096,
                      sequence=256, experts=16, top_k=4, expert_intermediate=384)  # fmt: skip
SEQ = 256


def _graph(layout: str, n: int, **kw):
    kw = {"microbatches": 2, "sequence": SEQ, "sequence_parallel": True, "precision": "bf16", **kw}
    return training_graph(MOE, layout, [f"x{i}" for i in range(n)], **kw)


def _comms(w, **match):
    nodes = w.nodes(data=True)
    return [(v, d) for v, d in nodes if d["type"] == "comm" and all(d.get(k) == x for k, x in match.items())]


# ---------------------------------------------------------------- the layout and its groups
def test_etp_equal_to_tp_is_the_default_layout() -> None:
    assert Layout.parse("tp=2,ep=4,etp=2", 8) == Layout.parse("tp=2,ep=4", 8)
    lay = Layout.parse("tp=2,ep=8,etp=1", 8)
    assert (lay.etp, lay.expert_tp, str(lay)) == (1, 1, "dp=4,tp=2,pp=1,ep=8,etp=1")
    assert Layout.parse(str(lay), 8) == lay


def test_megatron_expert_order_tp_ep_dp() -> None:
    """parallel_state.py@d98e8a64's expert RankGenerator (order tp-ep-dp-pp, tp = etp) on 16 GPUs, tp 4, pp 1:
    etp 2, ep 2 give expert-TP groups [0,1], [2,3], ..., EP groups [0,2], [1,3], [4,6], ..., expert-DP
    groups [0,4,8,12], [1,5,9,13], ...; etp 1, ep 8: EP [0..7], [8..15], expert-DP [0,8], [1,9], ..."""
    g = [f"g{i}" for i in range(16)]
    grid = RankGrid(Layout(dp=4, tp=4, ep=2, etp=2), g, mapping=MEGATRON_ORDER)
    assert grid.expert_tp_group(0, 0, 0) == ["g0", "g1"] and grid.expert_tp_group(0, 0, 3) == ["g2", "g3"]
    assert grid.ep_group(0, 0, 0) == ["g0", "g2"] and grid.ep_group(0, 0, 1) == ["g1", "g3"]
    assert grid.ep_group(1, 0, 0) == ["g4", "g6"]
    assert grid.expert_dp_group(0, 0, 1) == ["g1", "g5", "g9", "g13"]
    one = RankGrid(Layout(dp=4, tp=4, ep=8, etp=1), g, mapping=MEGATRON_ORDER)
    assert one.ep_group(0, 0, 0) == g[:8] and one.ep_group(3, 0, 2) == g[8:]
    assert one.expert_dp_group(2, 0, 3) == ["g3", "g11"]
    assert one.expert_tp_group(2, 0, 3) == ["g11"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.integers(1, 8), st.integers(1, 2), st.data())
def test_each_kind_of_expert_group_partitions_the_stage(tp: int, dp: int, cp: int, data) -> None:
    etp = data.draw(st.sampled_from([e for e in (1, 2, 4, 8) if tp % e == 0]))
    free = tp // etp * dp * cp
    ep = data.draw(st.sampled_from([e for e in range(1, free + 1) if free % e == 0]))
    lay = Layout(dp=dp, tp=tp, cp=cp, ep=ep, etp=etp)
    lay.check(lay.ranks)
    ranks = {(d, t) for d in range(lay.replicas) for t in range(tp)}
    for kind, size in (("etp", etp), ("ep", ep), ("edp", expert_data_parallel(lay))):
        groups = {tuple(expert_group(lay, d, t, kind)) for d, t in ranks}
        assert all(len(gr) == size for gr in groups)
        assert sorted(r for gr in groups for r in gr) == sorted(ranks)  # a partition
    if etp == tp:  # the historical grouping: ep consecutive replicas at one slice
        assert expert_group(lay, 0, tp - 1, "ep") == [(e, tp - 1) for e in range(ep)]


@pytest.mark.parametrize(
    "layout,n,message",
    [
        ("tp=4,etp=3,ep=2", 8, "etp=3 does not divide tp=4"),
        ("tp=2,ep=16,etp=1", 8, "etp x ep = 16 does not divide tp x dp x cp = 8"),
        ("tp=2,ep=8", 8, "ep=8 does not divide dp=4"),  # etp = tp: the historical rule and message
        ("tp=2,etp=0", 8, "etp='0' is invalid"),
    ],
)
def test_bad_layouts_are_one_line(layout: str, n: int, message: str) -> None:
    with pytest.raises(HcsimError, match=message) as e:
        Layout.parse(layout, n).check(n)
    assert "\n" not in str(e.value)


def test_bad_options_are_one_line() -> None:
    with pytest.raises(HcsimError, match="needs sequence parallelism"):
        _graph("tp=2,ep=8,etp=1", 8, sequence_parallel=False)
    with pytest.raises(HcsimError, match="zero 0, 1 or 2"):
        _graph("tp=2,ep=8,etp=1", 8, zero=3)
    dense = dataclasses.replace(MOE, experts=0, top_k=0, expert_intermediate=0)
    with pytest.raises(HcsimError, match="dense model, etp=1 needs a mixture of experts"):
        training_graph(dense, "tp=2,etp=1", [f"x{i}" for i in range(8)], sequence_parallel=True)
    assert_refused(run_here("run", "--system", "dgx-h100", "--xpus", "16", "--model", "mixtral-8x7b", "--parallel",
                            "tp=2,ep=32,etp=1"), "etp x ep = 32 does not divide tp x dp x cp = 16")  # fmt: skip


@pytest.mark.parametrize(
    "layout,etp",
    [
        (Layout(dp=16, tp=2, pp=8, ep=32), 1),  # Qwen3-235B-A22B on 256 H100 (NeMo's and Bridge's recipes: etp 1)
        (Layout(dp=32, tp=2, pp=16, ep=64), 1),  # DeepSeek-V3 on 1024 H100 (NeMo's recipe table: etp 1)
        (Layout(dp=2, tp=4, ep=4), 2),  # the largest that fits: (4/2) x 2 = 4 ranks
        (Layout(dp=2, tp=4, ep=8), 1),
        (Layout(dp=8, tp=2, ep=8), None),  # Megatron-Core's default fits: unchanged
        (Layout(dp=2, tp=4, ep=8, etp=2), 2),  # given: unchanged (check() refuses it)
        (Layout(dp=3, tp=2, ep=4), None),  # nothing fits: unchanged, check() refuses it as before
    ],
)
def test_an_expert_layout_megatron_refuses_gets_the_largest_etp_that_fits(layout: Layout, etp: int | None) -> None:
    fitted = fitting_expert_tp(layout)
    assert fitted.etp == etp
    if etp is not None and layout.etp is None:
        fitted.check(fitted.ranks)  # it runs
        larger = range(etp + 1, fitted.tp)
        assert not any(fitted.tp % e == 0 and (fitted.tp // e) * fitted.replicas % fitted.ep == 0 for e in larger)
    else:
        assert fitted is layout


def test_the_cli_runs_such_a_layout_as_with_etp_given_and_says_so() -> None:
    """``tp=2,pp=2,ep=8`` on 16 GPUs (dp 4): Megatron-Core's etp = tp cannot place ep 8; the run is etp=1's."""
    args = ["--system", "dgx-h100", "--xpus", "16", "--model", "mixtral-8x7b", "--micro-batch", "1", "--microbatches",
            "2", "--sequence", "512", "--precision", "bf16", "--calibration", "dgx-h100", "--json"]  # fmt: skip
    status, out, err = run_here("run", *args, "--parallel", "tp=2,pp=2,ep=8")
    given = run_here("run", *args, "--parallel", "tp=2,pp=2,ep=8,etp=1")
    assert status == 0 and given[0] == 0, (err, given[2])
    assert out == given[1]
    notes = [line for line in err.splitlines() if "etp=tp" in line]
    assert len(notes) == 1 and "running etp=1" in notes[0] and "etp=N in --parallel" in notes[0]
    assert "etp=tp" not in given[2]


# ---------------------------------------------------------------- closed forms
@pytest.mark.parametrize("tp,etp", [(2, 1), (4, 1), (4, 2), (8, 1)])
def test_expert_flops_per_rank_equal_and_params_are_whole_experts(tp: int, etp: int) -> None:
    t, ep = 1024, 4
    split = {o.name: o for o in block_operators(MOE, t, tp=tp, ep=ep, phase="train")}["moe.experts"]
    folded = {o.name: o for o in block_operators(MOE, t, tp=tp, ep=ep, phase="train", etp=etp)}
    experts, router = folded["moe.experts"], folded["moe.router"]
    assert experts.fwd_flops == pytest.approx(split.fwd_flops, rel=1e-12)
    assert experts.bwd_flops == pytest.approx(split.bwd_flops, rel=1e-12)
    width = MOE.expert_intermediate // etp  # SwiGLU: gate + up (2 x width) and down (width), no bias
    assert experts.params == MOE.experts // ep * 3 * MOE.hidden * width
    pairs = t // tp * MOE.top_k * etp
    assert experts.gemm == (pairs, 2 * width, MOE.hidden)
    assert experts.activation_bytes == pairs * 2 * (MOE.hidden + 2 * width + width)  # fc1 in, fc1 out, fc2 in
    assert router.fwd_flops == pytest.approx(2.0 * (t // tp) * MOE.hidden * MOE.experts)  # the SP shard


def test_etp1_dispatches_the_sequence_shard_with_no_tp_collective_around_the_experts() -> None:
    tp, n, ep = 2, 8, 8
    w = _graph(f"tp={tp},ep={ep},etp=1", n)
    t = SEQ  # micro_batch 1
    a2a = _comms(w, kind="alltoall")
    assert {d["bytes"] for _, d in a2a} == {t / tp * MOE.top_k * MOE.hidden * 2}  # bf16
    assert {len(d["scope"]) for _, d in a2a} == {ep}
    assert any(d["scope"] == [f"x{i}" for i in range(8)] for _, d in a2a)  # across TP slices
    assert not [v for v, _ in _comms(w, phase="tp") if ".mlp." in v]  # the attention's and embedding/head's only
    assert not _comms(w, kind="allgather", phase="ep")  # etp = 1: no expert-TP gather
    default = _graph(f"tp={tp},ep=4", n)
    assert {d["bytes"] for _, d in _comms(default, kind="alltoall")} == {t * MOE.top_k * MOE.hidden * 2}
    kinds = Counter(d["kind"] for v, d in _comms(default, phase="tp") if ".mlp." in v)
    # the default's MoE half: an allgather and a reduce-scatter per replica, layer, pass and microbatch
    assert kinds == {"allgather": (n // tp) * 2 * 2 * 2, "reduce_scatter": (n // tp) * 2 * 2 * 2}
    assert len(_comms(default, phase="tp")) - len(_comms(w, phase="tp")) == sum(kinds.values())


def test_expert_tp_between_one_and_tp_gathers_over_its_group() -> None:
    w = _graph("tp=4,ep=2,etp=2", 8)
    gathers = _comms(w, kind="allgather", phase="ep")
    shard = SEQ / 4 * MOE.top_k * MOE.hidden * 2
    assert gathers and {d["bytes"] for _, d in gathers} == {2 * shard}
    assert {len(d["scope"]) for _, d in gathers} == {2}
    assert len(_comms(w, kind="reduce_scatter", phase="ep")) == len(gathers)
    assert {d["bytes"] for _, d in _comms(w, kind="alltoall")} == {shard}


def test_expert_gradients_are_reduced_over_the_expert_dp_group() -> None:
    w = _graph("tp=2,ep=4,etp=1", 8)  # edp = 2 x 4 / 4 = 2, across TP slices
    edp = [(v, d) for v, d in _comms(w, phase="dp") if v.startswith("edp")]
    assert edp and {len(d["scope"]) for _, d in edp} == {2}
    expert_params = {o.name: o for o in block_operators(MOE, SEQ, tp=2, ep=4, etp=1)}["moe.experts"].params
    assert {d["bytes"] for _, d in edp} == {expert_params * 4.0}  # fp32 gradient reduce (bf16 default)
    none = _graph("tp=2,ep=8,etp=1", 8)  # edp = 1: nothing to reduce
    assert not [v for v, _ in _comms(none, phase="dp") if v.startswith("edp")]


def test_memory_holds_whole_experts_sharded_over_edp() -> None:
    """bf16 with the distributed optimizer: 2 + 4 + 12/shards bytes per parameter (Megatron's dist_optimizer.md)."""
    kw = {"sequence": SEQ, "precision": "bf16", "zero": 1, "sequence_parallel": True}
    split = training_memory(MOE, Layout.parse("tp=2,ep=4", 8), **kw)[0]
    folded = training_memory(MOE, Layout.parse("tp=2,ep=4,etp=1", 8), **kw)[0]
    per = MOE.experts // 4 * 3 * MOE.hidden * MOE.expert_intermediate  # one layer's experts on a rank, etp = 1
    layers = MOE.layers
    # etp = tp: half-width experts, edp = 4 / 4 = 1; etp = 1: full width, edp = 2 x 4 / 4 = 2
    assert folded.weights - split.weights == pytest.approx(layers * (per - per / 2) * 2)
    assert folded.grads - split.grads == pytest.approx(layers * (per - per / 2) * 4)
    assert folded.optimizer == pytest.approx(split.optimizer)  # per x 12 / 2 = (per / 2) x 12 / 1
    policy = training_precision("bf16")
    assert policy.state_bytes_per_param(1, 2) == pytest.approx(2 + 4 + 12 / 2)


def test_the_default_graph_is_unchanged_when_etp_equals_tp() -> None:
    a, b = _graph("tp=2,ep=4", 8), _graph("tp=2,ep=4,etp=2", 8)
    assert dict(a.nodes(data=True)) == dict(b.nodes(data=True))
    assert sorted(a.edges(data=True)) == sorted(b.edges(data=True))
