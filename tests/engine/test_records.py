"""A run's result crosses from its SimGrid process pickled, its trace by columns: it must come back equal."""

from __future__ import annotations

import pickle

from hcsim.engine.records import RunResult, TraceRecord


def _result(trace: list[TraceRecord]) -> RunResult:
    r = RunResult(2, True, 3.5, [1.25, 3.5], trace, compute={"x0": [(0.0, 1.0)]}, activities=7)
    r.fold_refused = "a reason"  # set by simulate_system after the run: not a field
    return r


def test_a_pickled_result_comes_back_equal_types_included():
    trace = [
        TraceRecord("layer0.fwd", 0, "x0", "compute", 0.0, 1.0, 2.5e6, 3e9),
        TraceRecord("grad0", 0, "collective", "allreduce", 1.0, 1.25, 4096, 0.0),  # int bytes stay int
        TraceRecord("layer0.fwd", 1, "x0", "compute", 1.25, 3.5, 2.5e6, 3e9),
    ]
    back = pickle.loads(pickle.dumps(_result(trace)))
    assert back == _result(trace)
    assert all(type(t) is TraceRecord for t in back.trace)
    assert [[type(x) for x in t] for t in back.trace] == [[type(x) for x in t] for t in trace]
    assert back.fold_refused == "a reason"


def test_an_empty_trace_comes_back_empty():
    back = pickle.loads(pickle.dumps(_result([])))
    assert back.trace == [] and back.iteration_end == [1.25, 3.5]
