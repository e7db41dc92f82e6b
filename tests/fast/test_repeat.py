"""Iteration memoization (``repeat=True``) against the full simulation of every iteration.

The argument (``hcsim/fast/repeat.py``): from an idle iteration boundary the run is
the previous iteration shifted, exactly in real arithmetic; SimGrid's absolute clock
rounds differently at later dates (about 1e-13 of an iteration measured), so the
extrapolated iterations must agree with the simulated ones within the tolerance the
engine itself checks, REPEAT_TOLERANCE (1e-9) of the period, date by date.
"""

from __future__ import annotations

import pytest

from hcsim.errors import HcsimError
from hcsim.fast import simulate, simulate_system
from hcsim.fast.repeat import REPEAT_TOLERANCE, platform_is_stationary
from hcsim.platform import ring
from hcsim.workload import Workload
from hcsim.workload.llama2 import llama2_13b


def _agree(full, memo, iterations: int) -> None:
    """Same per-iteration times, same vertex executions at the same dates, same activity count."""
    assert memo.memoized_iterations > 0, memo.repeat
    assert memo.activities < full.activities  # fewer were really simulated
    assert memo.activities + memo.memoized_activities == full.activities
    assert memo.memoized_flows == full.memoized_flows
    period = full.iteration_end[0]
    tol = REPEAT_TOLERANCE * period
    assert len(memo.iteration_end) == iterations
    for a, b in zip(full.iteration_end, memo.iteration_end, strict=True):
        assert abs(a - b) <= tol * iterations
    per_full = [b - a for a, b in zip([0.0, *full.iteration_end], full.iteration_end, strict=False)]
    per_memo = [b - a for a, b in zip([0.0, *memo.iteration_end], memo.iteration_end, strict=False)]
    for a, b in zip(per_full, per_memo, strict=True):
        assert abs(a - b) <= 2 * tol * iterations
    key = lambda t: (t.iteration, t.vertex)  # noqa: E731
    trace_full, trace_memo = sorted(full.trace, key=key), sorted(memo.trace, key=key)
    assert [key(t) for t in trace_full] == [key(t) for t in trace_memo]
    worst = max(max(abs(a.start - b.start), abs(a.end - b.end)) for a, b in zip(trace_full, trace_memo, strict=True))
    assert worst <= tol * iterations
    assert len(full.flows) == len(memo.flows)
    for what in ("compute", "comm", "stall"):
        counts = [{h: len(v) for h, v in getattr(r, what).items()} for r in (full, memo)]
        assert counts[0] == counts[1]


@pytest.mark.parametrize("system", ["cxl", "noncoherent"])
def test_llama2_data_parallel_iterations_are_extrapolated_exactly(paper_system, system):
    topology, path = paper_system(system, 8)
    iterations = 5
    runs = {
        repeat: simulate_system(
            topology, llama2_13b, iterations, repeat=repeat, record_flows=True, compile=lambda _t: path
        )
        for repeat in (False, True)
    }
    full, memo = runs[False], runs[True]
    assert full.memoized_iterations == 0 and full.repeat == ""
    _agree(full, memo, iterations)
    assert memo.memoized_iterations == 3  # iterations 0 and 1 simulated, 1 repeats 0
    assert "extrapolated from iteration 1" in memo.repeat


@pytest.mark.slow  # 15 s
def test_fast_mode_extrapolates_folded_memoized_iterations(paper_system):
    """fast=True is fold + memoize + repeat: against fold + memoize alone."""
    topology, _ = paper_system("cxl", 64)
    iterations = 6
    base = simulate_system(topology, llama2_13b, iterations, fast=True, repeat=False, record_flows=False)
    memo = simulate_system(topology, llama2_13b, iterations, fast=True, record_flows=False)
    _agree(base, memo, iterations)


def _ring_pipeline() -> Workload:
    """A stage on x0, a p2p to x1, a stage on x1, then an allreduce of all four; loop-carried edges close it."""
    x = ring(4).xpus()
    w = Workload()
    w.add_compute("S0", 2e9, x[0], is_start=True)
    w.add_comm("P01", 3e8, "p2p", [x[0], x[1]])
    w.add_compute("S1", 1e9, x[1])
    w.add_compute("T2", 5e8, x[2], is_start=True)
    w.add_compute("T3", 7e8, x[3], is_start=True)
    w.add_comm("AR", 4e8, "allreduce", x, algorithm="ring")
    for u, v in [("S0", "P01"), ("P01", "S1"), ("S1", "AR"), ("T2", "AR"), ("T3", "AR")]:
        w.add_dependency(u, v)
    for v in ("S0", "T2", "T3"):
        w.add_dependency("AR", v, skip_first_iteration=True)
    w.add_dependency("S1", "T3", skip_first_iteration=True)  # ignored in iteration 0 only
    return w


def test_loop_carried_edges_repeat_after_the_first_iteration(compiled):
    path = compiled(ring(4, bandwidth=50e9, latency=2e-6))
    iterations = 8
    full = simulate(path, _ring_pipeline(), iterations, repeat=False)
    memo = simulate(path, _ring_pipeline(), iterations, repeat=True)
    _agree(full, memo, iterations)
    assert memo.memoized_iterations == iterations - 2


def test_overlapping_iterations_are_not_extrapolated(compiled):
    """Two independent chains: x0's next iteration starts while x1's is running, so no boundary is idle."""
    path = compiled(ring(2, bandwidth=50e9, latency=2e-6))
    x = ring(2).xpus()
    w = Workload()
    w.add_compute("A", 1e9, x[0], is_start=True)
    w.add_compute("B", 3e9, x[1], is_start=True)
    full = simulate(path, w, 6, repeat=False)
    memo = simulate(path, w, 6, repeat=True)
    assert memo.memoized_iterations == 0 and memo.memoized_activities == 0
    assert "not idle" in memo.repeat
    assert memo.iteration_end == full.iteration_end  # the same simulation, date for date
    assert memo.activities == full.activities


def test_a_single_repeat_needs_two_closed_iterations(compiled):
    """With two iterations nothing is left to extrapolate; the run is the full one."""
    path = compiled(ring(4, bandwidth=50e9, latency=2e-6))
    full = simulate(path, _ring_pipeline(), 2, repeat=False)
    memo = simulate(path, _ring_pipeline(), 2, repeat=True)
    assert memo.memoized_iterations == 0
    assert memo.iteration_end == full.iteration_end


def test_time_varying_platforms_are_refused(compiled, tmp_path):
    assert platform_is_stationary('<link id="l" bandwidth="1GBps"/>')
    assert not platform_is_stationary('<link id="l" bandwidth="1GBps" bandwidth_file="bw.txt"/>')
    path = compiled(ring(2, bandwidth=50e9, latency=2e-6))
    text = open(path, encoding="utf-8").read().replace("<link ", '<link bandwidth_file="bw.txt" ', 1)
    varying = tmp_path / "varying.xml"
    varying.write_text(text, encoding="utf-8")
    w = Workload()
    w.add_compute("A", 1e9, ring(2).xpus()[0], is_start=True)
    with pytest.raises(HcsimError, match="time-varying profiles"):
        simulate(str(varying), w, 3, repeat=True)


def test_cli_repeat_flag_extrapolates(capsys):
    import json

    from hcsim.cli import main

    argv = "run --system cxl --xpus 8 --workload allreduce --bytes 1MiB --iterations 4 --json"
    assert main([*argv.split(), "--repeat"]) == 0
    memo = json.loads(capsys.readouterr().out)
    assert main(argv.split()) == 0
    full = json.loads(capsys.readouterr().out)
    assert memo["memoized_iterations"] == 2 and full["memoized_iterations"] == 0
    assert memo["activities"] + memo["memoized_activities"] == full["activities"]
