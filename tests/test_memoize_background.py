"""Background skipping: ring steps skipped while memory flows share the ring's links.

The reference is memoize without it (``MemoizedRings.background = False``): the same
step-synchronous ring, run step by step in SimGrid beside the memory flows, which is
what the skip extrapolates. The fast path as a whole is held to the exact engine by
``tests/test_fast.py`` (with background skipping on, the default).
"""

from __future__ import annotations

import pytest

from hcsim.engine import simulate, simulate_system
from hcsim.engine.memoize import MemoizedRings
from hcsim.platform import cxl_system
from hcsim.workload import Workload
from hcsim.workload.llama2 import llama2_13b


def _remote_if_marked(xpu, vertices, coherent):
    """Placement: vertices marked ``remote`` read their data from the XPU's CXL memory."""
    return {name: (xpu.remote(coherent) if data.get("remote") else None) for name, data in vertices}


def _ring_beside_loads(xs: list[str]) -> Workload:
    """A 1 GiB allreduce over every XPU beside two long remote-memory loads started with it, and a
    third load that starts while the ring runs (after 19 ms of compute), cutting a skip short."""
    w = Workload()
    w.add_comm("ring", 2**30, "allreduce", xs, is_start=True)
    w.add_compute("load0", 1e9, xs[0], mem_bytes=4e9, remote=True, is_start=True)
    w.add_compute("load8", 1e9, xs[8], mem_bytes=6e9, remote=True, is_start=True)
    w.add_compute("wait", 1.3e12, xs[5], is_start=True)
    w.add_compute("load17", 1e9, xs[17], mem_bytes=2e9, remote=True)
    w.add_dependency("wait", "load17")
    return w


# tolerance against memoize without background skips: a relaunched memory flow's latency is
# compensated at its measured mean rate, which is exact to first order only; at 100-200 us every
# relaunch's latency is as long as a step (measured: 1.4e-6 / 8.6e-7 / 3.3e-3 / 3.5e-3)
@pytest.mark.parametrize(
    "links,tolerance",
    [
        ({}, 1e-5),
        ({"cxl_bandwidth": "16GBps"}, 1e-5),
        ({"cxl_latency": "100us"}, 5e-3),
        ({"cxl_latency": "200us"}, 5e-3),
    ],
)
def test_steps_beside_memory_flows_are_skipped_and_agree(compiled, monkeypatch, links, tolerance):
    topo = cxl_system(32, servers_per_rack=2, **links)
    path = compiled(topo)
    w = _ring_beside_loads(topo.xpus())
    on = simulate(path, w, 1, placement=_remote_if_marked, record_flows=False, memoize=True)
    monkeypatch.setattr(MemoizedRings, "background", False)
    off = simulate(path, w, 1, placement=_remote_if_marked, record_flows=False, memoize=True)
    assert on.activities * 1.5 < off.activities  # steps beside the loads were skipped
    assert on.activities + on.memoized_flows == off.activities + off.memoized_flows  # every flow counted once
    starts = {row[0]: row[4] for row in on.trace}
    ends = {m: {row[0]: row[5] for row in r.trace} for m, r in (("on", on), ("off", off))}
    assert starts["load17"] < ends["on"]["ring"]  # the third load cut a skip short
    for v in ("ring", "load0", "load8", "load17"):
        assert ends["on"][v] == pytest.approx(ends["off"][v], rel=tolerance), (v, ends)


def test_a_ring_alone_beside_nothing_is_not_frozen(compiled):
    """No memory flow: the ordinary skip (two simulated steps) is all there is, and the closed form holds."""
    topo = cxl_system(16)
    path = compiled(topo)
    w = Workload()
    w.add_comm("ring", 2**30, "allreduce", topo.xpus(), is_start=True)
    exact = simulate(path, w, 1, record_flows=False)
    memo = simulate(path, w, 1, record_flows=False, memoize=True)
    assert memo.makespan == pytest.approx(exact.makespan, rel=1e-9)


@pytest.mark.slow
def test_llama2_at_1024_cxl_xpus_with_and_without_background_skips(compile_cached, monkeypatch):
    """The benchmark's row: one LLaMA2-13B iteration on 1024 CXL XPUs, fast path (measured: +4.4e-6,
    226,500 -> 75,118 activities)."""

    def run():
        return simulate_system(
            cxl_system(1024), lambda ranks, group: llama2_13b(ranks, group=group), 1, fast=True,
            record_flows=False, compile=compile_cached,
        )  # fmt: skip

    on = run()
    monkeypatch.setattr(MemoizedRings, "background", False)
    off = run()
    assert on.activities * 2 < off.activities
    assert on.makespan == pytest.approx(off.makespan, rel=1e-4)
