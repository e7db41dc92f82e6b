"""Twin flows that form late: once other traffic on their links is over for good.

On the non-coherent system every ring flow between servers crosses PCIe links that the
XPUs' host-memory copies also cross, so its twin class (``hcsim/fast/twins.py``,
"Twins") cannot be in force while the backward pass copies; it forms once no vertex can
start a copy there any more, none is in flight, and every twin stands where its
representative does. Checked here:

* a symmetric toy (two servers, the same copy on each): the class forms after the copies
  end, keeps flows out of SimGrid, and the run is the one without late twins to 1e-12;
* the same with one copy only: the twins stand apart (one was slowed), so the class never
  forms, and the run is again the one without late twins;
* LLaMA2-13B, non-coherent, against the exact engine within 1% at 64 XPUs (memoize alone
  and fold + memoize) and at 256 (against the exact engine on the same folded system), at
  the defaults, at PCIe 16 GB/s (copies and ring flows fight on the twins' links) and at
  100 us network latency (latency-bound steps); and against the fast path without late
  twins, to 1e-12, at every size up to 1024 XPUs (the row of ``docs/fast-paths.md``).
"""

from __future__ import annotations

import pytest

from hcsim.fast import simulate, simulate_system
from hcsim.platform import noncoherent_system
from hcsim.platform.builders import LinkSpec
from hcsim.workload import Workload
from hcsim.workload.llama2 import llama2_13b

PCIE_16 = {"pcie": LinkSpec.of("16GBps", "250ns")}
NETWORK_100US = {"nic_to_tor": LinkSpec.of("12.5GBps", "100us"), "tor_to_core": LinkSpec.of("12.5GBps", "100us")}
EXTREMES = {"defaults": {}, "pcie 16GB/s": PCIE_16, "network 100us": NETWORK_100US}


def _same_run(a, b) -> None:
    assert a.makespan == pytest.approx(b.makespan, rel=1e-12, abs=0.0)
    assert len(a.trace) == len(b.trace)
    for x, y in zip(a.trace, b.trace, strict=True):
        assert (x.vertex, x.iteration) == (y.vertex, y.iteration)
        assert x.end == pytest.approx(y.end, rel=1e-12, abs=0.0), x.vertex
    assert a.activities + a.memoized_flows == b.activities + b.memoized_flows


def _two_rings_and_copies(copies: list[int]) -> tuple[object, Workload]:
    """Two servers (PCIe at 16 GB/s), two overlapping 16-rank rings, host-memory copies on the given ranks."""
    topo = noncoherent_system(16, links=PCIE_16)
    xs = topo.xpus()
    w = Workload()
    w.add_comm("A", 4e9, "allreduce", xs, is_start=True)
    w.add_compute("wait", 1e12, xs[3], is_start=True)  # B starts ~15 ms later: the rings' steps interleave
    w.add_comm("B", 4e9, "allreduce", xs)
    w.add_dependency("wait", "B")
    for i in copies:  # a footprint beyond the XPU's memory: 3 GB copied from host DRAM, ~0.2 s
        w.add_compute(f"copy{i}", 1e9, xs[i], mem_bytes=3e9, footprint=1e12, is_start=True)
    return topo, w


def _three_runs(compiled, watched, topo, w):
    """The exact engine, memoize without late twins, and memoize with them (its formations logged)."""
    path = compiled(topo)
    exact = simulate(path, w, 1, coherent=False, record_flows=False)
    before = simulate(path, w, 1, coherent=False, record_flows=False, memoize=True, late_twins=False)
    paths, log = watched()
    late = simulate(path, w, 1, coherent=False, record_flows=False, memoize=True, paths=paths)
    return path, exact, before, late, log


def test_twins_form_once_the_copies_on_their_links_are_over(compiled, watched):
    """Copies into the first XPU of both servers (mirror images): flows 7 and 15 are twins after them."""
    topo, w = _two_rings_and_copies([0, 8])
    path, exact, before, late, log = _three_runs(compiled, watched, topo, w)
    formed = log.formed()
    # the intra-server class forms with the group (nothing else can cross its links), the server-to-server class later
    assert formed[0] == (None, [0, 7, 15])
    copies_end = max(rec.end for rec in late.trace if rec.vertex.startswith("copy"))
    later = [(at, reps) for at, reps in formed[1:] if reps == [0, 7]]
    assert later and later[0][0] >= copies_end - 0.01  # the copy flows end before their vertices' compute
    assert late.activities < before.activities  # flow 15 followed flow 7 after the copies
    _same_run(late, before)
    assert late.makespan == pytest.approx(exact.makespan, rel=1e-12)
    assert late.activities + late.memoized_flows == exact.activities
    # two iterations: the second one's copies are to come during the first, and the last would count fewer
    # activities than the ones iteration memoization copies: no late twins at all
    two = simulate(path, w, 2, coherent=False, record_flows=False, memoize=True)
    two_before = simulate(path, w, 2, coherent=False, record_flows=False, memoize=True, late_twins=False)
    assert two.activities == two_before.activities
    _same_run(two, two_before)


def test_twins_that_stand_apart_do_not_form(compiled, watched):
    """One copy only: it slows flow 15 and not flow 7, the rings carry the difference on, the class stays dormant."""
    topo, w = _two_rings_and_copies([0])
    path, exact, before, late, log = _three_runs(compiled, watched, topo, w)
    assert log.formed() == [(None, [0, 7, 15])]  # 7 and 15 stay flows of their own
    _same_run(late, before)
    assert late.activities == before.activities
    assert late.makespan == pytest.approx(exact.makespan, rel=1e-12)


#: the one run two tests of this file share (256 XPUs at the defaults, fold + memoize, late twins on): the
#: 256-XPU test at the defaults and the forced early twins' reference. Kept once a worker has run it (only
#: read: makespan, trace, counts), so it runs once when both tests fall to the same pytest-xdist worker.
_SHARED: dict[str, object] = {}


def _llama(compile_cached, xpus: int, links: dict, *, fold: bool, memoize: bool, **options):
    shared = (xpus, fold, memoize) == (256, True, True) and not links and not options
    if shared and "late 256" in _SHARED:
        return _SHARED["late 256"]
    topo = noncoherent_system(xpus, links=links)
    result = simulate_system(
        topo, lambda ranks, group: llama2_13b(ranks, group=group), 1, coherent=False, fold=fold, memoize=memoize,
        repeat=False, record_flows=False, compile=compile_cached, **options,
    )  # fmt: skip
    if shared:
        _SHARED["late 256"] = result
    return result


@pytest.mark.slow
@pytest.mark.parametrize("links", list(EXTREMES.values()), ids=list(EXTREMES))
def test_late_twins_at_64_xpus_agree_with_the_exact_engine(compile_cached, links):
    """64 XPUs in one rack: 8 server-to-server flows per ring are one class (memoize alone), 2 when folded."""
    exact = _llama(compile_cached, 64, links, fold=False, memoize=False)
    for fold in (False, True):
        before = _llama(compile_cached, 64, links, fold=fold, memoize=True, late_twins=False)
        late = _llama(compile_cached, 64, links, fold=fold, memoize=True)
        assert late.activities < before.activities, fold
        _same_run(late, before)
        assert late.makespan == pytest.approx(exact.makespan, rel=1e-5), (fold, late.makespan, exact.makespan)
        if not fold:
            assert late.activities + late.memoized_flows == exact.activities


@pytest.mark.slow
@pytest.mark.parametrize("links", list(EXTREMES.values()), ids=list(EXTREMES))
def test_late_twins_at_256_xpus_agree_with_the_exact_engine_on_the_folded_system(compile_cached, links):
    """256 XPUs, 2 racks: the exact engine on all 256 takes 23 minutes, so it runs on the same folded system."""
    exact = _llama(compile_cached, 256, links, fold=True, memoize=False)
    before = _llama(compile_cached, 256, links, fold=True, memoize=True, late_twins=False)
    late = _llama(compile_cached, 256, links, fold=True, memoize=True)
    assert late.activities < before.activities
    _same_run(late, before)
    assert late.makespan == pytest.approx(exact.makespan, rel=6e-3), (late.makespan, exact.makespan)
    assert late.activities + late.memoized_flows == exact.activities


@pytest.mark.slow
def test_late_twins_at_1024_xpus_are_the_fast_path_without_them():
    """The benchmark's row: one iteration, fast (fold + memoize + repeat), with and without late twins."""

    def run(late_twins: bool):
        topo = noncoherent_system(1024)
        return simulate_system(
            topo, lambda ranks, group: llama2_13b(ranks, group=group), 1, coherent=False, fast=True,
            record_flows=False, late_twins=late_twins,
        )  # fmt: skip

    before = run(False)
    late = run(True)
    _same_run(late, before)
    assert late.activities < 0.85 * before.activities  # measured: 309,530 against 391,092


def test_flows_no_copy_can_cross_are_twins_from_the_start(compiled, watched):
    """Four servers, a copy into the second server's first XPU: of the four server-to-server flows (one signature)
    it can cross 7 and 15, not 23 and 31, which are twins from the ring's start, with or without late twins."""
    topo = noncoherent_system(32, links=PCIE_16)
    xs = topo.xpus()
    w = Workload()
    w.add_comm("A", 4e9, "allreduce", xs, is_start=True)
    w.add_compute("copy", 1e9, xs[8], mem_bytes=3e9, footprint=1e12, is_start=True)
    path = compiled(topo)
    exact = simulate(path, w, 1, coherent=False, record_flows=False)
    runs = {}
    for on in (False, True):
        paths, log = watched()
        runs[on] = simulate(path, w, 1, coherent=False, record_flows=False, memoize=True, late_twins=on, paths=paths)
        formed = log.formed()
        assert formed[0][0] is None and {7, 15, 23}.issubset(formed[0][1]) and 31 not in formed[0][1]
    plain = simulate(path, w, 1, coherent=False, record_flows=False, memoize=True, twins=False)
    for on, run in runs.items():
        _same_run(run, plain)
        assert run.activities < plain.activities, on
        assert run.makespan == pytest.approx(exact.makespan, rel=1e-12)


def test_twins_formed_too_early_are_broken_by_the_next_copy(compile_cached, watched):
    """Forced here (every vertex passes for settled): classes form between copies and the next copy breaks them,
    relaunching the twins in flight; a twin whose representative had ended counts as ended (it once passed for a
    virtual flow and was materialized without a measured time: a crash at 256 XPUs). Within 1% of the real rule."""
    late = _llama(compile_cached, 256, {}, fold=True, memoize=True)
    paths, log = watched(settled=True)
    early = _llama(compile_cached, 256, {}, fold=True, memoize=True, paths=paths)
    assert len(log.broken()) > 1
    assert early.makespan == pytest.approx(late.makespan, rel=5e-3)
    assert early.activities + early.memoized_flows == late.activities + late.memoized_flows
