"""Overlapping memoized rings (group counters) and twin flows, against the exact engine.

LLaMA2-13B's per-decoder gradient allreduces overlap: the backward pass makes a new one
every ~80 ms while each takes longer, so up to 37 rings share the fat tree's links at
1024 XPUs. ``hcsim/fast/groups.py`` counts what rings of one layout do to each other
per flow index, and keeps twin flows (identical routes that carry only their own index's
flows) out of SimGrid, following one representative. Checked here, on the folded small
fat tree (and at the studies' extremes, 16 GB/s and 100 us links):

* against the exact engine (memoize off, same folded system): within 1% (the contract);
* against memoize with twins off: the same iteration time within 1e-12 (the twins'
  claim is exact, not an approximation);
* simulated + memoized flows = the exact engine's flows, with and without twins;
* a flow that the twin classes did not foresee (forced here) breaks them mid-step and the
  run still agrees with the exact engine.
"""

from __future__ import annotations

import pytest

from hcsim.engine.memory import all_local
from hcsim.fast import simulate, simulate_system
from hcsim.platform.builders import fat_tree
from hcsim.workload.llama2 import llama2_13b


def _llama(topology, compile_cached, memoize: bool, **options):
    return simulate_system(
        topology, lambda ranks, group: llama2_13b(ranks, group=group), 1, coherent=False, fold=True,
        memoize=memoize, repeat=False, record_flows=False, placement=all_local, compile=compile_cached, **options,
    )  # fmt: skip


def _overlapping(trace) -> int:
    """The most collectives in progress at once."""
    spans = sorted((rec.start, rec.end) for rec in trace if rec.host == "collective")
    most = 0
    for i, (start, _) in enumerate(spans):
        most = max(most, sum(1 for s, e in spans[: i + 1] if s <= start < e))
    return most


# (k, links): k = 4 at the studies' extremes; k = 8 (128 XPUs, 254 steps a ring) overlaps more rings for longer
CASES = [
    (4, {}),
    (4, {"host_link": ("16GBps", "5us"), "fabric_link": ("16GBps", "5us")}),
    (4, {"host_link": ("12.5GBps", "100us"), "fabric_link": ("12.5GBps", "100us")}),
    pytest.param(8, {}, marks=pytest.mark.slow),  # ~10 s quiet, 35 s loaded
]


@pytest.mark.parametrize("k,links", CASES, ids=["k4", "k4-16GBps", "k4-100us", "k8"])
def test_overlapping_rings_on_a_folded_fat_tree_agree_with_the_exact_engine(compile_cached, k, links):
    topo = fat_tree(k, **links)
    exact = _llama(topo, compile_cached, memoize=False)
    memo = _llama(topo, compile_cached, memoize=True)
    assert exact.fold is not None and len(exact.fold.ranks) == 8  # the symmetry fold, on both
    assert _overlapping(memo.trace) >= 2  # the case at hand: gradient rings overlap
    assert memo.makespan == pytest.approx(exact.makespan, rel=8e-5), (memo.makespan, exact.makespan)
    assert memo.activities + memo.memoized_flows == exact.activities
    plain = _llama(topo, compile_cached, memoize=True, twins=False)
    assert plain.activities + plain.memoized_flows == exact.activities
    assert memo.activities < plain.activities  # twins kept flows out of SimGrid
    assert memo.makespan == pytest.approx(plain.makespan, rel=1e-12, abs=0.0)
    for a, b in zip(memo.trace, plain.trace, strict=True):
        assert (a.vertex, a.iteration) == (b.vertex, b.iteration)
        assert a.end == pytest.approx(b.end, rel=1e-12, abs=0.0), a.vertex


def test_a_flow_the_twins_did_not_foresee_breaks_them(compiled, watched):
    """Twin classes claim no other flow crosses their links; if one does anyway (forced
    here: the strategy is told the p2p does not exist), the twins become flows of their own
    mid-step with the bytes their representative has left, and the run stays within 1%."""
    from hcsim.platform import ring
    from hcsim.workload import Workload

    topo = ring(4, bandwidth=10e9, latency=1e-6)
    path = compiled(topo)
    xs = topo.xpus()
    w = Workload()
    w.add_comm("A", 4e9, "allreduce", xs, is_start=True)
    w.add_comm("B", 4e9, "allreduce", xs, is_start=True)
    w.add_compute("wait", 2.67e13, xs[2], is_start=True)  # ~0.4 s: the p2p starts while A and B run
    w.add_comm("bg", 1e9, "p2p", [xs[1], xs[2]])
    w.add_dependency("wait", "bg")
    exact = simulate(path, w, 1, record_flows=False)
    paths, log = watched(blind=True)
    memo = simulate(path, w, 1, record_flows=False, memoize=True, paths=paths)
    seen = log.broken()
    assert seen and seen[0][1] == 1  # one representative stood for the ring's four flows until the p2p came
    ends = {m: {row[0]: row[5] for row in r.trace} for m, r in (("exact", exact), ("memo", memo))}
    assert seen[0][0] == pytest.approx(ends["exact"]["wait"], rel=1e-9)  # when the p2p starts
    for v in ("A", "B", "bg"):
        assert ends["memo"][v] == pytest.approx(ends["exact"][v], rel=2e-6), (v, ends)
    assert memo.activities + memo.memoized_flows == exact.activities
