"""Cluster front end: hand-worked schedules, closed forms, real contention, outputs, bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hcsim.errors import HcsimError
from hcsim.frontends.cluster import Cluster, Job, WorkloadJob, simulate_cluster
from hcsim.frontends.cluster.outputs import interval_set, write_outputs
from hcsim.frontends.cluster.placement import best_fit, first_fit, free_gpu, shape_of
from hcsim.frontends.cluster.traces import synthetic_trace
from hcsim.frontends.serving.batching import confidence_interval
from hcsim.platform import noncoherent_system
from hcsim.workload.builders import Layer, data_parallel

# Two 8-GPU nodes (n0 = GPUs 0-7, n1 = GPUs 8-15); preemption/migration overhead 8 s.
FIVE = [
    Job("A", 0, 8, 100.0, user="u1"),
    Job("B", 10, 16, 20.0, user="u1"),
    Job("C", 20, 4, 30.0, user="u2"),
    Job("D", 30, 4, 10.0, user="u3"),
    Job("E", 40, 2, 5.0, user="u1"),
]

# Each schedule below is worked out by hand in the comment above it: job -> [(start, end, GPUs)].
HAND = {
    # strict FCFS: B (16 GPUs) waits for A; C, D, E wait behind B (head-of-line blocking)
    ("fcfs", ()): {
        "A": [(0, 100, 8)], "B": [(100, 120, 16)], "C": [(120, 150, 4)], "D": [(120, 130, 4)], "E": [(120, 125, 2)],
    },
    # EASY: B reserved at t=100 (A's end, 16 GPUs free then, 0 extra); C, D, E all end before 100
    ("easy", ()): {
        "A": [(0, 100, 8)], "B": [(100, 120, 16)], "C": [(20, 50, 4)], "D": [(30, 40, 4)], "E": [(40, 45, 2)],
    },
    # SJF (strict): at 20 B (20 s) outranks C (30 s) and blocks; at 30 D (10 s) heads and fits; at 40 E (5 s)
    # likewise; C only after B
    ("sjf", ()): {
        "A": [(0, 100, 8)], "B": [(100, 120, 16)], "C": [(120, 150, 4)], "D": [(30, 40, 4)], "E": [(40, 45, 2)],
    },
    # LAS by user service: at 20 u2 (0) beats u1 (A: 160 GPU-s) so C runs; at 30 u3 (0) so D; at 40 E and B are
    # both u1's: tie -> submit order, B first, which blocks E until B ends
    ("las", ()): {
        "A": [(0, 100, 8)], "B": [(100, 120, 16)], "C": [(20, 50, 4)], "D": [(30, 40, 4)], "E": [(120, 125, 2)],
    },
    # RR, slice 40: at 40 A's slice ends (D ends, E arrives): order B, C, A, E; B preempts A and C and runs
    # 40-60; at 60 C (n0), A (n1), E (n0) resume/start: C 60+8+10, A 60+8+60, E 60+5
    ("rr", (("slice", 40.0),)): {
        "A": [(0, 40, 8), (60, 128, 8)], "B": [(40, 60, 16)], "C": [(20, 40, 4), (60, 78, 4)],
        "D": [(30, 40, 4)], "E": [(60, 65, 2)],
    },
    # MLFQ quanta (25, 1000): A demoted at 25, B (queue 0) preempts A and C (5 s done) and runs 25-45; at 45
    # C, D (n0) and E (n1) run, A (8) does not fit until E ends at 50: A 50+8+75, C 45+8+25
    ("mlfq", (("quanta", (25.0, 1000.0)),)): {
        "A": [(0, 25, 8), (50, 133, 8)], "B": [(25, 45, 16)], "C": [(20, 25, 4), (45, 78, 4)],
        "D": [(45, 55, 4)], "E": [(45, 50, 2)],
    },
    # LAS-MLFQ quanta (100, 1000) of GPU-time: A (8 GPUs) demoted after 12.5 s, B runs, is demoted after
    # 100/16 = 6.25 s, A (queue 1, entered first) resumes 18.75+8+87.5; C, D, E fit beside it; B last:
    # 114.25+8+13.75
    ("las-mlfq", (("quanta", (100.0, 1000.0)),)): {
        "A": [(0, 12.5, 8), (18.75, 114.25, 8)], "B": [(12.5, 18.75, 16), (114.25, 136, 16)],
        "C": [(20, 50, 4)], "D": [(30, 40, 4)], "E": [(40, 45, 2)],
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def two_nodes():
    return noncoherent_system(16)


@pytest.mark.parametrize("policy,options", list(HAND))
def test_hand_worked_schedules(two_nodes, policy, options):
    result = simulate_cluster(two_nodes, FIVE, policy_name=policy, policy_options=dict(options))
    got = {r.job_id: [(s, e, len(g)) for s, e, g in r.segments] for r in result.jobs}
    want = HAND[(policy, options)]
    assert set(got) == set(want)
    for job, segments in want.items():
        assert len(got[job]) == len(segments), (job, got[job])
        for (s, e, g), (s2, e2, g2) in zip(got[job], segments, strict=True):
            assert (s, e, g) == pytest.approx((s2, e2, g2), abs=1e-6), (job, got[job])
    assert all(r.state == "COMPLETED" for r in result.jobs)


def test_preempted_jobs_pay_the_overhead_and_keep_their_work(two_nodes):
    result = simulate_cluster(two_nodes, FIVE, policy_name="rr", policy_options={"slice": 40.0}, overhead=3.0)
    a = next(r for r in result.jobs if r.job_id == "A")
    assert a.preemptions == 1
    # 40 s done before the preemption, 60 s left plus the 3 s overhead after resuming at 60
    assert a.segments[-1][1] == pytest.approx(60 + 3 + 60)


def test_placements():
    free = [3, 8, 5, 8]
    assert shape_of(20, None, None, 8) == [8, 8, 4]
    assert shape_of(16, 4, 4, 8) == [4, 4, 4, 4]
    assert first_fit([4], range(4), free) == [(1, 4)]
    assert best_fit([4], range(4), free) == [(2, 4)]  # smallest sufficient hole
    assert best_fit([8, 4], range(4), free) == [(1, 8), (2, 4)]
    assert first_fit([8, 8, 8], range(4), free) is None
    assert free_gpu([8, 8, 8], range(4), free) == [(1, 8), (3, 8), (2, 5), (0, 3)]  # all 24 free GPUs
    assert free_gpu([8, 8, 8, 1], range(4), free) is None
    assert free_gpu([8, 8, 4], range(4), free) == [(1, 8), (3, 8), (2, 4)]  # fewest nodes: largest holes first
    assert free_gpu([6], range(4), free) == [(1, 6)]
    assert interval_set([8, 0, 1, 2, 3, 10, 11]) == "0-3 8 10-11"


def test_free_gpu_uses_scattered_gpus_that_rigid_shapes_cannot(two_nodes):
    # Two 6-GPU jobs leave 2 + 2 GPUs; a 4-GPU job fits only if it may span both nodes.
    jobs = [Job("x", 0, 6, 100.0), Job("y", 0, 6, 100.0), Job("z", 1, 4, 10.0)]
    rigid = simulate_cluster(two_nodes, jobs, placement_name="best-fit")
    anywhere = simulate_cluster(two_nodes, jobs, placement_name="free-gpu")
    z_rigid = next(r for r in rigid.jobs if r.job_id == "z")
    z_free = next(r for r in anywhere.jobs if r.job_id == "z")
    assert z_rigid.start == pytest.approx(100.0)
    assert z_free.start == pytest.approx(1.0)
    assert len({g // 8 for g in z_free.segments[0][2]}) == 2


def test_migration_consolidates_and_costs_memory_over_pcie(two_nodes):
    # best-fit: A -> n0, B -> n0 (fills it), C -> n1. When A ends at 50, B (smallest, alone on n0) moves next
    # to C, emptying n0, and pays overhead + 4 GPUs' memory over PCIe.
    jobs = [Job("A", 0, 4, 50.0), Job("B", 1, 4, 200.0), Job("C", 2, 4, 300.0)]
    cluster = Cluster.from_topology(two_nodes)
    cost = 8.0 + 4 * cluster.gpu_memory / cluster.pcie_bandwidth
    moved = simulate_cluster(two_nodes, jobs, migration=True)
    stay = simulate_cluster(two_nodes, jobs, migration=False)
    b, b0 = (next(r for r in res.jobs if r.job_id == "B") for res in (moved, stay))
    assert b.migrations == 1 and b0.migrations == 0
    assert {g // 8 for g in b.segments[-1][2]} == {1}
    assert b.finish == pytest.approx(b0.finish + cost)
    assert sum(r.migrations for r in moved.jobs) == 1


def test_fcfs_single_gpu_jobs_match_erlang_c():
    """Poisson arrivals, exponential run times, c = 8 GPUs, FCFS: an M/M/8 queue (Erlang C mean wait)."""
    c, rho, mean_s, n = 8, 0.7, 100.0, 60_000
    rng = np.random.default_rng(5)
    lam = rho * c / mean_s
    submit = np.cumsum(rng.exponential(1 / lam, n))
    run = rng.exponential(mean_s, n)
    jobs = [Job(str(i), float(submit[i]), 1, float(run[i])) for i in range(n)]
    result = simulate_cluster(noncoherent_system(8), jobs, policy_name="fcfs")
    wait = np.array([r.start - r.submit for r in result.jobs])
    a = lam * mean_s
    terms = sum(a**k / math.factorial(k) for k in range(c))
    last = a**c / math.factorial(c) / (1 - rho)
    erlang_c = last / (terms + last)
    exact = erlang_c * mean_s / (c * (1 - rho))
    mean, half = confidence_interval(wait, batches=30, level=0.99)
    assert abs(mean - exact) <= half, (mean, half, exact)


def _training(layers: int = 2) -> WorkloadJob:
    spec = [Layer(f"L{i}", 2e12, 2e12, 1e9, 1e9, 256e6) for i in range(layers)]
    return WorkloadJob(lambda gpus: data_parallel(gpus, spec), iterations=3)


def test_workload_job_slows_down_when_another_shares_its_links(two_nodes):
    """Two 2-node training jobs on the same two servers share the servers' NIC links: both run longer."""
    alone = simulate_cluster(two_nodes, [Job("j", 0, 8, nodes=2, gpus_per_node=4, workload=_training())])
    t_alone = alone.jobs[0].finish - alone.jobs[0].start
    pair = [
        Job("j", 0, 8, nodes=2, gpus_per_node=4, workload=_training()),
        Job("k", 0, 8, nodes=2, gpus_per_node=4, workload=_training()),
    ]
    both = simulate_cluster(two_nodes, pair, placement_name="first-fit")
    spans = [r.finish - r.start for r in both.jobs]
    assert all({g // 8 for g in r.segments[0][2]} == {0, 1} for r in both.jobs)  # really on both servers
    assert min(spans) > t_alone * 1.05, (spans, t_alone)
    # on one server each (no NIC traffic) the same pair does not slow down
    apart = simulate_cluster(
        two_nodes,
        [Job("j", 0, 8, workload=_training()), Job("k", 0, 8, workload=_training())],
    )
    inside = simulate_cluster(two_nodes, [Job("j", 0, 8, workload=_training())])
    t_inside = inside.jobs[0].finish - inside.jobs[0].start
    assert [r.finish - r.start for r in apart.jobs] == pytest.approx([t_inside, t_inside], rel=1e-9)


def test_preempted_workload_job_resumes_from_its_last_iteration(two_nodes):
    solo = simulate_cluster(two_nodes, [Job("w", 0, 16, workload=_training())])
    t_iter = (solo.jobs[0].finish - solo.jobs[0].start) / 3
    jobs = [Job("w", 0, 16, workload=_training()), Job("short", t_iter * 1.5, 8, 10.0)]
    result = simulate_cluster(two_nodes, jobs, policy_name="mlfq", policy_options={"quanta": (t_iter * 1.2, 1e9)})
    w = result.jobs[0]
    assert w.preemptions == 1
    # 1 iteration survived the preemption; 2 more run after the overhead; the partial one is lost
    first_end = w.segments[0][1]
    assert w.finish == pytest.approx(w.segments[1][0] + 8.0 + 2 * t_iter, rel=1e-6)
    assert first_end == pytest.approx(t_iter * 1.5, rel=1e-9)


def test_rejected_jobs_are_reported_and_the_run_goes_on(two_nodes, tmp_path):
    jobs = [Job("ok", 0, 8, 10.0), Job("huge", 1, 64, 10.0), Job("shape", 2, 12, 5.0, nodes=1, gpus_per_node=12)]
    result = simulate_cluster(two_nodes, jobs)
    states = {r.job_id: (r.state, r.reason) for r in result.jobs}
    assert states["ok"][0] == "COMPLETED"
    assert states["huge"] == ("REJECTED", "it needs 64 GPUs but partition '' has 16")
    assert states["shape"][0] == "REJECTED" and "never fits" in states["shape"][1]
    summary = write_outputs(result, jobs, tmp_path)
    assert summary["rejected"] == 2 and summary["completed"] == 1
    rows = (tmp_path / "jobs.csv").read_text().splitlines()
    assert rows[0].startswith("job_id,workload_name,profile,submission_time,requested_number_of_resources")
    assert ",REJECTED," in rows[2]


def test_partitions_have_their_own_pool_and_policy(two_nodes):
    jobs = [
        Job("a", 0, 8, 50.0, partition="p"),
        Job("b", 1, 8, 50.0, partition="p"),
        Job("c", 2, 8, 5.0, partition="q"),
    ]
    result = simulate_cluster(two_nodes, jobs, partitions={"p": 1, "q": 1}, policy_name={"p": "fcfs", "q": "sjf"})
    by = {r.job_id: r for r in result.jobs}
    assert by["b"].start == pytest.approx(50.0)  # p has one node: b waits although q's node idles after 7 s
    assert by["c"].start == pytest.approx(2.0)
    with pytest.raises(HcsimError, match="partition 'x' asks for 3 nodes"):
        simulate_cluster(two_nodes, jobs, partitions={"x": 3})
    odd = simulate_cluster(two_nodes, [Job("z", 0, 1, 1.0, partition="nope")], partitions={"p": 1, "q": 1})
    assert odd.jobs[0].state == "REJECTED" and "unknown" in odd.jobs[0].reason


def test_bad_input_is_one_line(two_nodes):
    with pytest.raises(HcsimError, match=r"policy 'lottery' is unknown \(valid: .*mlfq"):
        simulate_cluster(two_nodes, FIVE, policy_name="lottery")
    with pytest.raises(HcsimError, match=r"placement 'worst-fit' is unknown"):
        simulate_cluster(two_nodes, FIVE, placement_name="worst-fit")
    with pytest.raises(HcsimError, match=r"job 'b' \(#1\) is submitted at 5 s, before the previous job"):
        simulate_cluster(two_nodes, [Job("a", 10, 1, 1.0), Job("b", 5, 1, 1.0)])
    with pytest.raises(HcsimError, match="no jobs"):
        simulate_cluster(two_nodes, [])
    with pytest.raises(HcsimError, match=r"policy 'mlfq': quanta"):
        simulate_cluster(two_nodes, FIVE, policy_name="mlfq", policy_options={"quanta": (0,)})


def test_seeded_runs_are_byte_identical(tmp_path):
    topo = noncoherent_system(64)
    trace = synthetic_trace(400, seed=3, mean_interarrival=30.0, mean_duration=600.0)
    out = []
    for k in range(2):
        d = tmp_path / f"run{k}"
        result = simulate_cluster(topo, trace, policy_name="mlfq", placement_name="best-fit", migration=True)
        write_outputs(result, trace.jobs, d, snapshots=[1000.0])
        out.append({f: (d / f).read_bytes() for f in ("jobs.csv", "series.csv", "trace.json")})
    assert out[0] == out[1]
    summary = json.loads((tmp_path / "run0" / "summary.json").read_text())
    assert summary["completed"] == 400 and 0 < summary["utilization"] <= 1
    assert 1 <= summary["gpus_per_used_node"] <= 8
