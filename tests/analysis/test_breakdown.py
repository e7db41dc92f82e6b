"""The iteration breakdown (hcsim.analysis.breakdown): an exact partition of a rank's iteration.

Each instant of a rank's iteration goes to one bucket (compute > memory stall > exposed
communication by kind, shared evenly > idle): the buckets add up to the iteration
(1e-9 relative), each equals its set-algebra closed form on random intervals, and a
2-stage pipeline on a star platform, run in SimGrid, gives the hand-worked bubble.
"""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hcsim.analysis.breakdown import BUCKETS, PHASES, breakdown, rank_breakdown, representatives, steady_breakdown
from hcsim.engine.records import RunResult, TraceRecord
from hcsim.engine.report import minus_length, summarize, union_length
from hcsim.fast import simulate_system
from hcsim.platform import star
from hcsim.workload.graph import Workload

REL = 1e-9


def _graph(comms: list[tuple[str, str | None, list[str]]]) -> nx.DiGraph:
    g = nx.DiGraph()
    for name, phase, scope in comms:
        g.add_node(name, type="comm", scope=scope, **({} if phase is None else {"phase": phase}))
    return g


def test_kinds_in_flight_together_share_the_instant_evenly():
    # x: compute [0, 1], stall [1, 2], tp [0.5, 3], dp [2.5, 4], nothing [4, 5]; the iteration ends at 5
    trace = [
        TraceRecord("tp", 0, "collective", "allreduce", 0.5, 3.0, 1.0, 0.0),
        TraceRecord("dp", 0, "collective", "allreduce", 2.5, 4.0, 1.0, 0.0),
        TraceRecord("other", 0, "collective", "allreduce", 0.0, 5.0, 1.0, 0.0),  # x is not in its scope
    ]
    r = RunResult(1, False, 5.0, [5.0], trace, compute={"x": [(0.0, 1.0)]}, stall={"x": [(1.0, 2.0)]})
    g = _graph([("tp", "tp", ["x", "y"]), ("dp", "edp", ["x", "y"]), ("other", "pp", ["y", "z"])])
    got = rank_breakdown(r, g, "x")
    want = dict.fromkeys(BUCKETS, 0.0)
    want.update(compute_s=1.0, memory_stall_s=1.0, exposed_tp_s=0.5 + 0.25, exposed_dp_s=0.25 + 1.0, idle_s=1.0)
    assert got == pytest.approx(want, rel=REL, abs=1e-15)
    assert rank_breakdown(r, g, "z")["exposed_pp_s"] == 5.0  # a vertex of y and z only
    assert breakdown(r, g, ["x", "z"])["idle_s"] == pytest.approx(0.5)


_interval = st.tuples(st.floats(0.0, 10.0), st.floats(0.0, 10.0)).map(sorted).map(tuple)


@settings(max_examples=150, deadline=None)
@given(
    compute=st.lists(_interval, max_size=6),
    stall=st.lists(_interval, max_size=4),
    comms=st.lists(st.tuples(_interval, st.sampled_from((*PHASES, "edp", None))), max_size=8),
    bounds=st.tuples(st.floats(0.0, 5.0), st.floats(5.0, 12.0)),
)
def test_buckets_partition_the_window_and_equal_their_set_algebra(compute, stall, comms, bounds):
    begin, end = bounds
    trace = [TraceRecord(f"c{i}", 1, "collective", "p2p", a, b, 1.0, 0.0) for i, ((a, b), _) in enumerate(comms)]
    g = _graph([(f"c{i}", phase, ["x", "y"]) for i, (_, phase) in enumerate(comms)])
    r = RunResult(2, False, end, [begin, end], trace, compute={"x": compute}, stall={"x": stall})
    got = rank_breakdown(r, g, "x", iteration=1)
    length = end - begin
    assert sum(got.values()) == pytest.approx(length, rel=REL, abs=1e-12)

    def clip(ivs):
        return [(max(a, begin), min(b, end)) for a, b in ivs if min(b, end) > max(a, begin)]

    c, s, m = clip(compute), clip(stall), clip([iv for iv, _ in comms])
    assert got["compute_s"] == pytest.approx(union_length(c), abs=1e-9)
    assert got["memory_stall_s"] == pytest.approx(minus_length(s, c), abs=1e-9)
    exposed = sum(got[f"exposed_{p}_s"] for p in PHASES)
    assert exposed == pytest.approx(minus_length(m, c + s), abs=1e-9)
    assert got["idle_s"] == pytest.approx(length - union_length(c + s + m), abs=1e-9)
    for p in PHASES:  # a kind gets at most the time it alone would expose, at least its time with no other kind
        own = clip([iv for iv, q in comms if {"edp": "dp", None: "dp"}.get(q, q) == p])
        others = clip([iv for iv, q in comms if {"edp": "dp", None: "dp"}.get(q, q) != p])
        assert got[f"exposed_{p}_s"] <= minus_length(own, c + s) + 1e-9
        assert got[f"exposed_{p}_s"] >= minus_length(own, c + s + others) - 1e-9


# A 2-stage pipeline, forward only, on a star of 2 XPUs: stage 0 runs m microbatches of A seconds
# back to back and sends each to stage 1 (P = 2 latencies + bytes / bandwidth), which runs B seconds
# on it. With P + B <= A no two sends share a link, and stage 1 starts microbatch i at (i+1)A + P:
#   T = m A + P + B;  stage 0: compute m A, exposed pp P (the last send), idle B;
#   stage 1: compute m B, exposed pp m P, idle T - m (B + P)  (the bubble and the waits).
M, A, B, BYTES = 4, 3e-3, 1e-3, 1e6
BW, LAT = 1e9, 1e-6  # 1 GB/s, 1 us per link: P = 2 us + 1 ms
P = 2 * LAT + BYTES / BW


def _pipeline(ranks: list[str], group: int | None = None) -> Workload:
    x0, x1 = ranks[0], ranks[1]
    w = Workload(name="pipe2", ranks=[x0, x1], layout="dp=1,tp=1,pp=2")
    for i in range(M):
        w.add_compute(f"F{i}", 0.0, x0, seconds=A, is_start=i == 0, footprint=0.0)
        w.add_comm(f"send{i}", BYTES, "p2p", [x0, x1], algorithm="direct", phase="pp")
        w.add_compute(f"G{i}", 0.0, x1, seconds=B, footprint=0.0)
        w.add_dependency(f"F{i}", f"send{i}")
        w.add_dependency(f"send{i}", f"G{i}")
        if i:
            w.add_dependency(f"F{i - 1}", f"F{i}")
            w.add_dependency(f"G{i - 1}", f"G{i}")
    w.add_dependency(f"F{M - 1}", "F0", skip_first_iteration=True)  # the next iteration
    w.add_dependency(f"G{M - 1}", "F0", skip_first_iteration=True)
    return w


def test_two_stage_pipeline_bubble_is_the_closed_form():
    kept = []

    def factory(ranks, group=None):
        kept.append(_pipeline(ranks, group))
        return kept[-1]

    r = simulate_system(star(2, bandwidth=f"{BW}Bps", latency=f"{LAT}s"), factory, iterations=2)
    g = kept[0]
    period = M * A + P + B
    assert r.iteration_end == pytest.approx([period, 2 * period], rel=REL)
    s0, s1 = representatives(g)
    assert (s0, s1) == ("xpu0", "xpu1")
    zero = dict.fromkeys(BUCKETS, 0.0)
    for it in (0, 1):
        got0, got1 = rank_breakdown(r, g, s0, it), rank_breakdown(r, g, s1, it)
        assert got0 == pytest.approx({**zero, "compute_s": M * A, "exposed_pp_s": P, "idle_s": B}, rel=REL, abs=1e-15)
        idle1 = period - M * (B + P)
        assert got1 == pytest.approx({**zero, "compute_s": M * B, "exposed_pp_s": M * P, "idle_s": idle1}, rel=REL,
                                     abs=1e-15)  # fmt: skip
    steady = steady_breakdown(r, g)
    assert sum(steady.values()) == pytest.approx(summarize(r)["steady_iteration_s"], rel=REL)
    assert steady["idle_s"] == pytest.approx((B + period - M * (B + P)) / 2, rel=REL)


def test_extrapolated_iterations_have_the_same_breakdown():
    kept = []

    def factory(ranks, group=None):
        kept.append(_pipeline(ranks, group))
        return kept[-1]

    r = simulate_system(star(2, bandwidth=f"{BW}Bps", latency=f"{LAT}s"), factory, iterations=6, repeat=True)
    assert r.memoized_iterations > 0  # iteration repeat filled the last ones in (hcsim.fast.repeat)
    g, period = kept[0], M * A + P + B
    zero = dict.fromkeys(BUCKETS, 0.0)
    want = {**zero, "compute_s": M * B, "exposed_pp_s": M * P, "idle_s": period - M * (B + P)}
    for it in range(6):
        assert rank_breakdown(r, g, "xpu1", it) == pytest.approx(want, rel=1e-9, abs=1e-15), it
    assert steady_breakdown(r, g, ["xpu1"]) == pytest.approx(want, rel=1e-9, abs=1e-15)
