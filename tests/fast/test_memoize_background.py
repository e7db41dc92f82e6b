"""Background skipping: ring steps skipped while memory flows share the ring's links.

The reference is memoize without it (the option ``background=False``): the same
step-synchronous ring, run step by step in SimGrid beside the memory flows, which is
what the skip extrapolates. The fast path as a whole is held to the exact engine by
``tests/fast/test_fast.py`` (with background skipping on, the default).
"""

from __future__ import annotations

import pytest

from hcsim.fast import simulate, simulate_system
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
def test_steps_beside_memory_flows_are_skipped_and_agree(compiled, links, tolerance):
    topo = cxl_system(32, servers_per_rack=2, **links)
    path = compiled(topo)
    w = _ring_beside_loads(topo.xpus())
    on = simulate(path, w, 1, placement=_remote_if_marked, record_flows=False, memoize=True)
    off = simulate(path, w, 1, placement=_remote_if_marked, record_flows=False, memoize=True, background=False)
    assert on.activities * 1.5 < off.activities  # steps beside the loads were skipped
    assert on.activities + on.memoized_flows == off.activities + off.memoized_flows  # every flow counted once
    starts = {row[0]: row[4] for row in on.trace}
    ends = {m: {row[0]: row[5] for row in r.trace} for m, r in (("on", on), ("off", off))}
    assert starts["load17"] < ends["on"]["ring"]  # the third load cut a skip short
    for v in ("ring", "load0", "load8", "load17"):
        assert ends["on"][v] == pytest.approx(ends["off"][v], rel=tolerance), (v, ends)


def _ends(path, w, **kw):
    """Each vertex's (start, end) with background skips on, then off, and with the exact engine."""
    runs = {}
    for name, memoize in (("on", True), ("off", True), ("exact", False)):
        r = simulate(path, w, 1, placement=_remote_if_marked, record_flows=False, memoize=memoize,
                     background=name == "on", **kw)  # fmt: skip
        runs[name] = {row[0]: (row[4], row[5]) for row in r.trace}
    return runs


def test_a_ring_starting_during_a_freeze(compiled):
    """A second allreduce starts while the first is frozen beside a load: the first thaws before the
    second's flows start (measured against background off: 8.4e-6 on A's end, 2.4e-6 on the load's,
    B identical; 189 activities against 223)."""
    topo = cxl_system(32, servers_per_rack=2)
    path = compiled(topo)
    xs = topo.xpus()
    w = Workload()
    w.add_comm("A", 2**30, "allreduce", xs, is_start=True)
    w.add_compute("load0", 1e9, xs[0], mem_bytes=8e9, remote=True, is_start=True)
    w.add_compute("wait", 1.3e12, xs[5], is_start=True)
    w.add_comm("B", 2**28, "allreduce", xs)
    w.add_dependency("wait", "B")
    runs = _ends(path, w)
    assert runs["on"]["B"][0] < runs["on"]["A"][1]  # B started while A ran
    for v in ("A", "B", "load0"):
        assert runs["on"][v][1] == pytest.approx(runs["off"][v][1], rel=5e-5), (v, runs)
        assert runs["on"][v][1] == pytest.approx(runs["exact"][v][1], rel=2e-5), (v, runs)


@pytest.mark.parametrize("load", [True, False])
def test_a_p2p_on_a_frozen_or_skipping_rings_links_is_not_skipped(compiled, load):
    """A p2p measured alone (p1) repeats (p2) on links of a ring that is frozen beside a load, or
    skipping alone: memoized rounds would skip it (nothing of the ring is in SimGrid) and both
    would run at full speed. It runs in SimGrid instead, and the ring hears of it: without the
    load, p2 takes exactly the exact engine's time; with it, background on and off agree
    (measured 7.6e-4 of p2's duration)."""
    topo = cxl_system(32, servers_per_rack=2)
    path = compiled(topo)
    xs = topo.xpus()
    w = Workload()
    w.add_comm("p1", 2**24, "p2p", [xs[31], xs[16] if load else xs[0]], is_start=True)
    w.add_comm("ring", 2**30, "allreduce", xs)
    w.add_dependency("p1", "ring")
    if load:
        w.add_compute("load", 1e9, xs[0], mem_bytes=8e9, remote=True, is_start=True)
    w.add_compute("wait", 1e12, xs[2], is_start=True)
    w.add_comm("p2", 2**24, "p2p", [xs[31], xs[16] if load else xs[0]])
    w.add_dependency("wait", "p2")
    runs = _ends(path, w)
    (start, end), ring_end = runs["on"]["p2"], runs["on"]["ring"][1]
    assert start < ring_end  # p2 ran beside the ring
    reference = runs["off" if load else "exact"]["p2"]
    assert end - start == pytest.approx(reference[1] - reference[0], rel=5e-3 if load else 1e-9), runs


def test_background_skips_and_twins_need_the_raw_model(compiled):
    """Under another network model (LV08: latency factor, cross-traffic) the freeze's argument does
    not hold: background skips are off, so on and off give the same run to the last digit."""
    topo = cxl_system(32, servers_per_rack=2, cxl_latency="20us")
    path = compiled(topo)
    w = _ring_beside_loads(topo.xpus())
    runs = _ends(path, w, config=("network/model:LV08", "network/crosstraffic:1"))
    assert runs["on"] == runs["off"]


def test_runs_raw_reads_the_file_and_the_command_line():
    from hcsim.platform.simgrid_files import Declared, runs_raw

    hcsim_file = Declared(config={"network/model": "raw", "network/crosstraffic": "0"})
    assert runs_raw(hcsim_file)
    assert not runs_raw(hcsim_file, ("network/model:LV08",))
    assert not runs_raw(Declared(config={"network/model": "raw"}))  # SimGrid's cross-traffic is on by default
    assert runs_raw(Declared(), ("network/model:raw", "network/crosstraffic:0"))
    assert not runs_raw(Declared())


@pytest.mark.slow
def test_llama2_at_1024_cxl_xpus_with_and_without_background_skips(compile_cached):
    """The benchmark's row: one LLaMA2-13B iteration on 1024 CXL XPUs, fast path (measured: +4.4e-6,
    226,500 -> 75,118 activities)."""

    def run(background: bool):
        return simulate_system(
            cxl_system(1024), lambda ranks, group: llama2_13b(ranks, group=group), 1, fast=True,
            record_flows=False, compile=compile_cached, background=background,
        )  # fmt: skip

    on = run(True)
    off = run(False)
    assert on.activities * 2 < off.activities
    assert on.makespan == pytest.approx(off.makespan, rel=1e-4)
