"""NCCL's rings as flows (hcsim.collectives.algorithms.nccl_rings): data movement, closed forms, NCCL's model.

* every schedule delivers what its kind promises (relayed flows included), on grids of nodes;
* the plan: channels rotated per node, relays as two hops and a join, one ring inside a node;
* in SimGrid: an idealised machine (NVLink free, no latency) against the closed form, C = g
  channels (NCCL's channel pairs) on g rails = g x one ring's bandwidth; the calibrated DGX-H100 against NCCL's model
  and nccl-tests (the table of docs/calibration.md); the fast path against the exact engine;
  NCCL's latency as the collective's fixed delay.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hcsim.calibration import load_calibration
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.calibration.nccl import nccl_time
from hcsim.collectives import Schedule, TopologyView, build_plan, build_schedule
from hcsim.collectives.algorithms.nccl_rings import CHANNELS_PER_RANK, PROTOCOL_WIRE, nccl_cost, nccl_grid, nccl_plan
from hcsim.collectives.registry import algorithm, for_kind
from hcsim.errors import HcsimError
from hcsim.fast import simulate_system
from hcsim.platform.dgx import dgx_system, with_spec
from hcsim.workload import Workload

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ("allreduce", "reduce_scatter", "allgather")


def grid_view(nodes: int, per_node: int) -> tuple[list[str], TopologyView]:
    ranks = [f"n{a}.gpu{r}" for a in range(nodes) for r in range(per_node)]
    return ranks, TopologyView({x: f"su0/n{x.split('.')[0][1:]}" for x in ranks})


# ------------------------------------------------------------------ schedules and plans
@settings(max_examples=12, deadline=None)
@given(st.integers(2, 3), st.integers(2, 4), st.sampled_from(KINDS), st.booleans())
def test_every_schedule_delivers(nodes: int, per_node: int, kind: str, shuffle: bool) -> None:
    ranks, view = grid_view(nodes, per_node)
    scope = ranks[::-1] if shuffle else ranks  # any order: the rings follow the topology, shards their owners
    s = build_schedule(kind, "nccl", scope, 1e6, view)  # validated and data-checked
    channels = CHANNELS_PER_RANK * per_node
    n = nodes * per_node
    steps = 2 * (n - 1) if kind == "allreduce" else n - 1
    assert s.shards == n * channels and s.steps == steps
    assert len(s.flows) == channels * steps * n
    relayed = [f for f in s.flows if f.via]
    assert len(relayed) == channels * steps * nodes  # one relayed hop per node, channel and step
    for f in relayed:  # the relay is on the destination's rail, in the sender's node
        assert f.via.split(".")[0] == f.src.split(".")[0] and f.via.split(".")[1] == f.dst.split(".")[1]


def test_a_wrong_relay_fails_the_check() -> None:
    """A relayed flow counts as a flow from src to dst: dropping one leaves a rank short."""
    ranks, view = grid_view(2, 2)
    s = build_schedule("allgather", "nccl", ranks, 1e6, view)
    first = next(i for i, f in enumerate(s.flows) if f.via)
    bad = Schedule("allgather", ranks, [f for i, f in enumerate(s.flows) if i != first], s.shards, name="cut")
    bad.flows = [f.__class__(f.src, f.dst, f.nbytes, tuple(d - (d > first) for d in f.after if d != first), f.shards,
                             via=f.via) for f in bad.flows]  # fmt: skip
    from hcsim.collectives import check_schedule

    with pytest.raises(HcsimError, match="never receives shard"):
        check_schedule(bad)


def test_relay_plan_and_validation() -> None:
    s = Schedule("p2p", ["a", "b", "c"], name="relay")
    first = s.add("a", "c", 100, via="b")
    s.add("c", "a", 100, after=[first])
    s.delay = 2e-6
    s.validate()
    fp = s.to_plan()
    assert (fp.src, fp.dst, fp.size) == (["a", "b", "", "c"], ["b", "c", "", "a"], [100, 100, 0, 100])
    assert fp.waits == [0, 0, 2, 1] and fp.releases == [[2], [2], [3], []] and fp.joins == 1
    assert fp.delay == 2e-6
    for via, what in (("a", "a third rank"), ("z", "a third rank")):
        bad = Schedule("p2p", ["a", "b", "c"], name="bad")
        bad.add("a", "c", 100, via=via)
        with pytest.raises(HcsimError, match=f"relayed via '{via}' .valid: {what}"):
            bad.validate()
    bad = Schedule("p2p", ["a", "b"], name="late", delay=-1.0)
    bad.add("a", "b", 1)
    with pytest.raises(HcsimError, match="delay -1.0"):
        bad.validate()


def test_plans_rotate_channels_and_fall_back_to_one_ring() -> None:
    ranks, view = grid_view(2, 4)
    compact = nccl_plan("allreduce", "nccl", ranks, 8e6, compact=True, view=view)
    c = CHANNELS_PER_RANK * 4
    assert compact.steps == 14 and len(compact) == c * (8 + 2)  # per channel: 8 hops, one of them relayed (2)
    assert set(compact.size) == {round(8e6 / (c * 8))} and not any(compact.waits)
    # channel k enters node n0 on local rank k mod 4 and leaves from local rank k-1, through rank k mod 4
    starts = [compact.src[k * 10] for k in range(c)]
    assert starts == [f"n0.gpu{k % 4}" for k in range(c)]
    full = build_plan("allreduce", "nccl", ranks, 8e6, view)
    assert full.flows == c * 14 * 10 and full.joins == c * 14 * 2 and full.delay == 0.0
    folded = nccl_plan("allreduce", "nccl", ranks, 8e6, group=32, compact=True, view=view)
    assert folded.steps == 62 and folded.size[0] == round(8e6 / (c * 32))
    # one node, one rank per node: ring_topo's plan
    one, view1 = grid_view(1, 8)
    assert nccl_grid(one, view1) is None
    assert vars(build_plan("allreduce", "nccl", one, 8e6, view1)) == vars(build_plan("allreduce", "ring_topo", one, 8e6,
                                                                                     view1))  # fmt: skip
    rails, view2 = grid_view(4, 1)
    assert vars(build_plan("reduce_scatter", "nccl", rails, 8e6, view2)) == vars(
        build_plan("reduce_scatter", "ring_topo", rails, 8e6, view2)
    )
    with pytest.raises(HcsimError, match="cannot stand for 64 ranks"):
        nccl_plan("allreduce", "nccl", ranks[:6], 8e6, group=64, view=view)
    # one rank per node (rails): a folded ring of them stands for a longer one, as the ring's fold
    assert vars(nccl_plan("allreduce", "nccl", rails[:2], 8e6, group=4, view=view2)) == vars(
        build_plan("allreduce", "ring", rails[:2], 8e6, view2, group=4)
    )


def test_registered_on_use_for_every_ring_kind() -> None:
    for kind in KINDS:
        assert algorithm(kind, "nccl").ring and algorithm(kind, "nccl@dgx-h100").shared_steps
        assert for_kind(kind, "nccl@dgx-a100") == "nccl@dgx-a100"
    assert for_kind("broadcast", "nccl") is None and for_kind("reduce_scatter", "coherent_ring") is None
    with pytest.raises(HcsimError, match="nccl@ideal"):
        algorithm("allreduce", "nccl@ideal")
    with pytest.raises(HcsimError, match="calibration"):
        algorithm("allreduce", "nccl@no-such-machine")


def test_calibrated_protocol_and_latency_are_nccls() -> None:
    """nccl@dgx-h100: the ring protocol of least time in NCCL's model, and its latency as the delay."""
    calib = load_calibration("dgx-h100")
    ranks, view = grid_view(2, 8)
    for size in (1024, 1 << 20, 1 << 30):
        times = {p: nccl_time("allreduce", size, 16, 2, "ring", p, calib) for p in PROTOCOL_WIRE}
        proto = min(times, key=lambda p: times[p][0])
        assert nccl_cost("nccl@dgx-h100", "allreduce", ranks, size, view) == (PROTOCOL_WIRE[proto], times[proto][1])
    assert nccl_cost("nccl@dgx-h100", "allreduce", ranks, 1024, view)[0] == 2.0  # LL for small messages
    assert nccl_cost("nccl@dgx-h100", "allreduce", ranks, 1 << 30, view)[0] == 1.0  # Simple for large ones
    assert nccl_cost("nccl", "allreduce", ranks, 1 << 30, view) == (1.0, 0.0)
    # a folded scope: two kept nodes of 8 standing for 4 nodes, half a node standing for the node
    four, view4 = grid_view(4, 8)
    for size in (1024, 1 << 30):
        assert nccl_cost("nccl@dgx-h100", "allreduce", ranks, size, view, group=32) == nccl_cost(
            "nccl@dgx-h100", "allreduce", four, size, view4
        )
        node, view1 = grid_view(1, 8)
        assert nccl_cost("nccl@dgx-h100", "reduce_scatter", node[:4], size, view1, group=8) == nccl_cost(
            "nccl@dgx-h100", "reduce_scatter", node, size, view1
        )


# ------------------------------------------------------------------ in SimGrid
def _allreduce(topo, algorithm: str, nbytes: float, fast: bool = False, kind: str = "allreduce", **options) -> float:
    def factory(ranks: list[str], group: int | None = None) -> Workload:
        w = Workload(name="c", ranks=list(ranks))
        w.graph["samples_per_iteration"] = w.graph["batches_per_iteration"] = 1
        w.add_comm("c", nbytes, kind, list(ranks), algorithm=algorithm, is_start=True)
        return w

    return simulate_system(topo, factory, 1, fast=fast, fold=False, progress=False, **options).makespan


def test_idealised_rails_closed_form() -> None:
    """NVLink free and no latency: C = g channel pairs on g rails, one per NIC, move g x one ring's bandwidth.

    nccl: 2(N-1) steps of S/(g N) per NIC at B: 2(N-1) S/(g N B); ring (rank order): each node boundary on
    one NIC, 2(N-1) steps of S/N at B.
    """
    spec = with_spec("h100", nvlink_bandwidth=1e18, nvlink_latency=0.0, nic_latency=0.0, switch_latency=0.0,
                     pcie_latency=0.0, pcie_bandwidth=1e18)  # fmt: skip
    nodes, g, nic, size = 2, 8, 50e9, float(1 << 28)
    topo = dgx_system(nodes * g, spec=spec)
    n = nodes * g
    nccl = _allreduce(topo, "nccl", size)
    ring = _allreduce(topo, "ring", size)
    assert nccl == pytest.approx(2 * (n - 1) * size / (g * n * nic), rel=1e-6)
    assert ring == pytest.approx(2 * (n - 1) * size / (n * nic), rel=1e-6)
    assert ring / nccl == pytest.approx(g, rel=1e-6)


@pytest.fixture(scope="module")
def dgx16():
    return dgx_system(16, spec=calibrated_dgx_spec("h100", load_calibration("dgx-h100")))


def test_fast_matches_exact_and_nccls_model(dgx16) -> None:
    """2 DGX-H100 nodes, 1 GiB: memoized ring steps equal the exact engine; busbw is NCCL's ring model's."""
    calib = load_calibration("dgx-h100")
    size = 1 << 30
    exact = _allreduce(dgx16, "nccl@dgx-h100", size)
    fast = _allreduce(dgx16, "nccl@dgx-h100", size, fast=True)
    assert fast == pytest.approx(exact, rel=1e-9)
    model = nccl_time("allreduce", size, 16, 2, "ring", "Simple", calib)[0]
    assert exact == pytest.approx(model, rel=0.01)
    for kind in ("reduce_scatter", "allgather"):
        e, f = _allreduce(dgx16, "nccl@dgx-h100", size, kind=kind), _allreduce(dgx16, "nccl@dgx-h100", size, True, kind)
        assert f == pytest.approx(e, rel=1e-9)
        assert e == pytest.approx(nccl_time(kind, size, 16, 2, "ring", "Simple", calib)[0], rel=0.01)


def test_latency_is_the_collectives_delay(dgx16) -> None:
    """nccl@ = nccl's flows (Simple: same bytes) + NCCL's latency once, after the last flow."""
    ranks = dgx16.xpus()
    view = TopologyView.of_topology(dgx16)
    size = 1 << 28
    wire, delay = nccl_cost("nccl@dgx-h100", "allreduce", ranks, size, view)
    assert wire == 1.0 and delay > 50e-6
    with_latency = _allreduce(dgx16, "nccl@dgx-h100", size)
    assert with_latency - _allreduce(dgx16, "nccl", size) == pytest.approx(delay, rel=1e-9)
    assert _allreduce(dgx16, "nccl@dgx-h100", size, tasks=True) == with_latency  # on SimGrid's Task plugin too


def test_busbw_table_in_the_docs() -> None:
    """docs/calibration.md's simulated busbw table is what experiments/nccl_flows.py computes now."""
    import sys

    sys.path.insert(0, os.path.join(ROOT, "experiments"))
    try:
        import nccl_flows
    finally:
        sys.path.pop(0)
    table = nccl_flows.rows()
    for r in table:  # the flows reach NCCL's own ring model, and the measurement within 5%
        assert r.simulated == pytest.approx(r.model_ring, rel=0.01)
        assert abs(r.simulated / r.measured - 1) < 0.05
    with open(os.path.join(ROOT, "docs", "calibration.md"), encoding="utf-8") as f:
        doc = f.read()
    block = re.search(r"<!-- nccl flows: generated.*?-->\n(.*?)\n<!-- end nccl flows -->", doc, re.S)
    assert block is not None and block.group(1).strip() == nccl_flows.markdown(table).strip()


def test_collective_fast_does_not_take_a_rank_order_fold() -> None:
    """`hcsim collective --fast`: the system fold proven for the rank-order ring keeps too few rails for
    NCCL's rings, so they run every XPU (memoized), equal to the exact engine."""
    from hcsim.sweep.collective_bench import measure_fast

    topo = dgx_system(32)  # the rank-order fold keeps 2 of its 4 nodes
    assert not algorithm("allreduce", "nccl").system_fold and algorithm("allreduce", "ring").system_fold
    fast = measure_fast(topo, "allreduce", "nccl", 1 << 30, coherent=False)["time_us"] * 1e-6
    assert fast == pytest.approx(_allreduce(topo, "nccl", 1 << 30), rel=1e-9)
