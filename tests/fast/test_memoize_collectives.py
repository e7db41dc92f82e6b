"""Memoized rounds (hcsim/fast/rounds.py) against the exact engine, for every non-ring collective.

Every algorithm of the collective library that is not a ring (rings are MemoizedRings'
and tests/fast/test_fast.py's) runs with ``memoize=True`` and without, two iterations back to
back, and the makespans must agree within 1%: on both paper systems, a fat tree, at the
studies' extremes (CXL 16 and 128 GB/s, 200 ns and 100 us latency, mixed XPU types), and
with foreign traffic interrupting skipped rounds. Each run must also account for every
flow (simulated + memoized = the exact engine's flows).
"""

from __future__ import annotations

import pytest

from hcsim.collectives import FlowPlan, algorithm, names
from hcsim.fast import simulate
from hcsim.fast.rounds import aligned, plan_rounds
from hcsim.platform.builders import fat_tree
from hcsim.workload.graph import Workload

KINDS = ("allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall", "p2p")
MiB = 2**20


def _non_ring(coherent: bool) -> list[tuple[str, str]]:
    out = []
    for kind in KINDS:
        for name in names(kind):
            alg = algorithm(kind, name)
            if (kind == "p2p" or not alg.ring) and (coherent or not alg.coherent):
                out.append((kind, name))
    return out


def _one(ranks: list[str], kind: str, name: str, nbytes: float) -> Workload:
    w = Workload(name=f"{kind}-{name}", ranks=list(ranks))
    w.graph["samples_per_iteration"] = w.graph["batches_per_iteration"] = 1
    w.add_comm("c", nbytes, kind, ranks[:2] if kind == "p2p" else list(ranks), algorithm=name, is_start=True)
    return w


def _agree(path: str, work: Workload, iterations: int = 2) -> tuple[object, object]:
    exact = simulate(path, work, iterations, record_flows=False)
    memo = simulate(path, work, iterations, record_flows=False, memoize=True)
    assert memo.makespan == pytest.approx(exact.makespan, rel=3e-9), (work.name, memo.makespan, exact.makespan)
    assert memo.activities + memo.memoized_flows == exact.activities, work.name
    return exact, memo


def _all_algorithms(topology, path: str, coherent: bool, nbytes: float = 64 * MiB) -> int:
    """Every non-ring algorithm within 1%; returns how many flows were memoized in all."""
    memoized = 0
    for kind, name in _non_ring(coherent):
        _, memo = _agree(path, _one(topology.xpus(), kind, name, nbytes))
        memoized += memo.memoized_flows
    return memoized


@pytest.mark.parametrize("system", ["cxl", "noncoherent"])
def test_every_non_ring_algorithm_agrees_on_the_paper_systems(paper_system, system):
    topology, path = paper_system(system, 16)
    assert _all_algorithms(topology, path, system == "cxl") > 0  # something was skipped, not all run exact


def test_every_non_ring_algorithm_agrees_on_a_fat_tree(compile_cached):
    topology = fat_tree(4)  # 16 XPUs in 4 pods
    assert _all_algorithms(topology, compile_cached(topology), False) > 0


@pytest.mark.parametrize(
    "links",
    [
        {"cxl_bandwidth": "16GBps"},
        {"cxl_bandwidth": "128GBps"},
        {"cxl_latency": "200ns"},
        {"cxl_latency": "100us"},
        {"cxl_latency": "200us"},
    ],
)
def test_every_non_ring_algorithm_agrees_at_the_sweeps_extremes(paper_system, links):
    topology, path = paper_system("cxl", 16, **links)
    _all_algorithms(topology, path, True)


@pytest.mark.slow
def test_every_non_ring_algorithm_agrees_on_a_mixed_multi_rack_system(paper_system):
    """32 XPUs, H100 and A100 racks of two servers: rounds cross rack boundaries between types."""
    topology, path = paper_system("cxl", 32, mix="H100+A100", servers_per_rack=2)
    _all_algorithms(topology, path, True, nbytes=16 * MiB)


def test_foreign_traffic_interrupts_skipped_rounds(paper_system):
    """A chain broadcast skips its repeated rounds; a halving-doubling allreduce and a pairwise all-to-all on
    the same ranks start while it runs (after computes of different lengths), so skips are interrupted and
    rounds meet foreign traffic; every collective's end must agree with the exact engine."""
    topology, path = paper_system("cxl", 16)
    ranks = topology.xpus()
    w = Workload(name="interrupted", ranks=ranks)
    w.graph["samples_per_iteration"] = w.graph["batches_per_iteration"] = 1
    w.add_comm("chain", 1024 * MiB, "broadcast", ranks, algorithm="chain", is_start=True)
    w.add_compute("wait_a", 2e11, ranks[0], is_start=True)
    w.add_compute("wait_b", 6e11, ranks[1], is_start=True)
    w.add_comm("hd", 64 * MiB, "allreduce", ranks, algorithm="halving_doubling")
    w.add_comm("a2a", 16 * MiB, "alltoall", ranks, algorithm="pairwise")
    w.add_comm("p2p", 64 * MiB, "p2p", ranks[2:4], algorithm="direct")
    w.add_edge("wait_a", "hd")
    w.add_edge("wait_a", "p2p")
    w.add_edge("wait_b", "a2a")
    exact = simulate(path, w, 3, record_flows=False)
    memo = simulate(path, w, 3, record_flows=False, memoize=True)
    ends = {}
    for run in (exact, memo):
        ends[id(run)] = {(t.vertex, t.iteration): t.end for t in run.trace}
    e, m = ends[id(exact)], ends[id(memo)]
    assert e.keys() == m.keys()
    for key in e:
        assert m[key] == pytest.approx(e[key], rel=5e-3), key
    assert memo.memoized_flows > 0
    assert memo.activities + memo.memoized_flows == exact.activities


def test_rounds_are_dependency_levels_with_joins_transparent():
    # 0 -> join(1) -> 2 ; 3 waits for nothing; 4 waits for 2 and 3
    fp = FlowPlan(
        src=["a", "", "b", "c", "d"], dst=["b", "", "c", "d", "a"], size=[1, 0, 1, 1, 1],
        waits=[0, 1, 1, 0, 2], releases=[[1], [2], [4], [4], []], steps=0, joins=1,
    )  # fmt: skip
    assert plan_rounds(fp) == [(0, 3), (2,), (4,)]
    assert aligned(fp, plan_rounds(fp))  # 2 starts at b, where 0 arrived, and waits for it (through the join)


def test_a_read_waiting_for_one_of_several_writes_is_not_aligned():
    # two writes into m (rounds 0), then a read from m waiting for one of them only
    fp = FlowPlan(
        src=["a", "b", "m"], dst=["m", "m", "c"], size=[1, 1, 1], waits=[0, 0, 1], releases=[[2], [], []], steps=0
    )
    assert not aligned(fp, plan_rounds(fp))


def test_a_round_wider_than_the_limit_is_refused_in_one_line(paper_system):
    from hcsim.errors import HcsimError

    topology, path = paper_system("cxl", 16)
    w = _one(topology.xpus(), "alltoall", "direct", MiB)  # direct all-to-all over 16 ranks: 240 flows in one round
    with pytest.raises(HcsimError, match=r"240 flows in one round.*HCSIM_MAX_FLOWS_AT_ONCE"):
        simulate(path, w, 1, memoize=True, max_flows_at_once=100)


@pytest.mark.parametrize(
    "kind,name", [("allreduce", "double_binary_tree"), ("alltoall", "pairwise"), ("allreduce", "cxl_shared_memory")]
)
def test_a_skipped_whole_plan_is_replayed_when_interrupted(paper_system, kind, name):
    """Plans not run round by round are skipped whole once measured alone; a p2p started every 3 ms on their
    links (after a compute) cuts skips short, and the replayed timeline must end where exact does."""
    topology, path = paper_system("cxl", 16)
    ranks = topology.xpus()
    w = Workload(name="whole", ranks=ranks)
    w.graph["samples_per_iteration"] = w.graph["batches_per_iteration"] = 1
    w.add_comm("coll", 64 * MiB, kind, ranks, algorithm=name, is_start=True)
    w.add_compute("wait", 2e11, ranks[0], is_start=True)
    w.add_comm("p2p", 256 * MiB, "p2p", ranks[2:4], algorithm="direct")
    w.add_edge("wait", "p2p")
    exact = simulate(path, w, 4, record_flows=False)
    memo = simulate(path, w, 4, record_flows=False, memoize=True)
    e = {(t.vertex, t.iteration): t.end for t in exact.trace}
    m = {(t.vertex, t.iteration): t.end for t in memo.trace}
    assert e.keys() == m.keys()
    for key in e:
        assert m[key] == pytest.approx(e[key], rel=3e-4), key
    assert memo.memoized_flows > 0
    assert memo.activities + memo.memoized_flows == exact.activities


def test_memoize_keeps_every_flow_on_the_driver(paper_system):
    """Under memoize every flow must pass through Driver.add_flow (the ledger observes it): tasks change nothing."""
    topology, path = paper_system("cxl", 32)
    xpus = topology.xpus()
    w = Workload()  # compute, a direct all-to-all (N(N-1) flows at once: the Task route's kind), a ring, compute
    for i, x in enumerate(xpus):
        w.add_compute(f"A{i}", 1e11 * (1 + i % 3), x, is_start=True)
        w.add_compute(f"C{i}", 1e11, x, mem_bytes=3e8)
    w.add_comm("A2A", 64 * 2**20, "alltoall", xpus, algorithm="direct")
    w.add_comm("RING", 16 * 2**20, "allreduce", xpus, algorithm="ring")
    for i in range(len(xpus)):
        w.add_dependency(f"A{i}", "A2A")
        w.add_dependency("A2A", "RING")
        w.add_dependency("RING", f"C{i}")
    memo = simulate(path, w, 1, memoize=True, record_flows=False)
    both = simulate(path, w, 1, memoize=True, tasks=True, record_flows=False)
    assert both.iteration_end == memo.iteration_end and both.activities == memo.activities
