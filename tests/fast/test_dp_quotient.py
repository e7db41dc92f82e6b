"""The DP quotient (``dp_quotient=True``): the layout fold blind to links that never limit a rate.

On a rail-optimised fat tree the data-parallel replicas differ, for the exact fold, by their
distance to a scalable-unit (SU) boundary; with the switch on, the refinement leaves out the
links a cut of narrower links always covers (spine, node-to-leaf bundles, PCIe behind a NIC),
so the fold keeps the fewest replicas. Held against the switch off (the exact fold, or every
XPU where that is refused) at **2e-3** (measured: 0 in 17 of 18 cases, -4.2e-4 in the last)
on calibrated DGX-H100 layouts with 2 and 4 SUs at the extremes the validation rows use
(tp=8, pp=8, vp=2, cp=2, dp=4 and 8, ZeRO-1), at the calibrated links, NVLink 16 GB/s and
NIC 100 us; a tapered spine that can limit a rate stays in, and dp=2 is left as it was.
"""

from __future__ import annotations

import dataclasses

import pytest

from hcsim.calibration import load_calibration
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.fast import simulate_system, symmetry
from hcsim.fast.units import layout_units
from hcsim.platform.dgx import dgx_system
from hcsim.platform.routing import Router
from hcsim.workload.models import TransformerSpec
from hcsim.workload.parallel.factory import TrainingWorkload
from hcsim.workload.parallel.layout import Layout

pytestmark = pytest.mark.filterwarnings("ignore::hcsim.fast.system.FoldRefused")
CALIB = load_calibration("dgx-h100")
NCCL = {"dp_algorithm": "nccl@dgx-h100", "tp_algorithm": "nccl@dgx-h100", "calibration": CALIB}
# (xpus, nodes per SU, layout, options, layers, kept GPUs off / on: None = every XPU)
LAYOUTS = {
    "tp8 pp2 dp4, 4 SUs": (64, 2, "tp=8,pp=2", {}, 4, (32, 32)),
    "tp4 pp8 vp2 dp4 zero1, 2 SUs": (128, 8, "tp=4,pp=8,vp=2", {"zero": 1}, 16, (None, 64)),
    "tp2 pp2 cp2 dp4 zero1, 4 SUs": (32, 1, "tp=2,pp=2,cp=2", {"zero": 1}, 4, (16, 16)),
    "tp4 pp2 dp8 zero1, 2 SUs": (64, 4, "tp=4,pp=2", {"zero": 1}, 4, (32, 32)),
    "tp8 pp2 cp2 vp2 dp4, 4 SUs": (128, 4, "tp=8,pp=2,cp=2,vp=2", {}, 4, (64, 64)),
    "tp8 pp2 dp2, 2 SUs": (32, 2, "tp=8,pp=2", {}, 4, (None, None)),
}
LINKS = {"calibrated": {}, "nvlink 16 GB/s": {"nvlink_bandwidth": 16e9}, "nic 100 us": {"nic_latency": 100e-6}}
SLOW = pytest.mark.slow  # contention settings: the same cases again (about 10 CPU s each set)
TOLERANCE = 2e-3


def _run(name: str, links: str, quotient: bool):
    xpus, per_su, layout, options, layers, _ = LAYOUTS[name]
    spec = TransformerSpec("tiny", layers=layers, hidden=1024, heads=16, kv_heads=8, intermediate=4096, vocab=32000,
                           sequence=2048)  # fmt: skip
    work = TrainingWorkload(spec, layout, microbatches=4, precision="fp8", tp_quotient=True, **NCCL, **options)
    spec_links = dataclasses.replace(calibrated_dgx_spec("h100", CALIB), **LINKS[links])
    topo = dgx_system(xpus, nodes_per_leaf=per_su, spec=spec_links)
    return simulate_system(topo, work, 1, progress=False, fast=True, shared_ring_steps=True, dp_quotient=quotient)


@pytest.mark.parametrize("links", [pytest.param(k, marks=() if k == "calibrated" else SLOW) for k in LINKS])
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_the_quotient_matches_the_exact_fold(name: str, links: str) -> None:
    on, off = _run(name, links, True), _run(name, links, False)
    kept = tuple(len(r.fold.ranks) if r.fold else None for r in (off, on))
    assert kept == LAYOUTS[name][-1]  # the quotient keeps fewer replicas where SUs told them apart
    assert on.makespan == pytest.approx(off.makespan, rel=TOLERANCE)
    if kept[0] == kept[1]:  # the same replicas kept: the same run
        assert on.makespan == off.makespan


def _layout_flows(taper: float):
    topo = dgx_system(128, nodes_per_leaf=8, taper=taper)
    ring = layout_units(Layout.parse("tp=4,pp=8,vp=2", 128), topo, zero=1, dp_algorithm="nccl@dgx-h100",
                        tp_algorithm="nccl@dgx-h100")  # fmt: skip
    return topo, ring, symmetry._flows(topo, Router(topo), ring.units, ring, "full", ("host_memory",))


def test_only_links_a_cut_covers_are_left_out() -> None:
    topo, _, flows = _layout_flows(1.0)
    left = {link for f in symmetry._unbinding(flows, topo) for link in f.links}
    gone = {link for f in flows for link in f.links} - left
    names = {(a.split(".")[-1], b.split(".")[-1]) for _, a, b in gone}
    assert {("leaf", "spine"), ("spine", "leaf"), ("rails", "leaf"), ("leaf", "rails")} <= names
    assert all("nic" not in a or "rails" not in b for _, a, b in gone)  # the NIC ports limit: they stay
    assert all("nvsw" not in a + b for _, a, b in gone)  # so does NVLink
    for f, g in zip(flows, symmetry._unbinding(flows, topo), strict=True):  # keys follow their links
        assert len(g.start[3]) == len(g.links) and set(g.links) <= set(f.links)


def test_a_spine_that_can_limit_stays_and_the_fold_is_refused_as_before() -> None:
    topo, ring, flows = _layout_flows(1 / 16)  # the spine carries 1/16 of an SU's NIC bandwidth
    left = {link for f in symmetry._unbinding(flows, topo) for link in f.links}
    assert any(b == "spine" for _, _, b in left)
    for quotient in (False, True):
        with pytest.raises(Exception, match="no unit class repeats"):
            symmetry.fold_units(topo, ring, False, quotient=quotient)
    topo, ring, _ = _layout_flows(1.0)
    assert len(symmetry.fold_units(topo, ring, False, quotient=True).ranks) == 64


@pytest.mark.parametrize(("calibration", "on"), [("dgx-h100", True), ("ideal", False)])
def test_only_calibrated_cli_runs_turn_it_on(tmp_path, monkeypatch, calibration: str, on: bool) -> None:
    import json

    from clitools import run_here, tiny_llama_config

    import hcsim.cli.run as cli_run

    seen: list[bool] = []
    original = cli_run.simulate_system
    monkeypatch.setattr(
        cli_run, "simulate_system", lambda *a, **k: seen.append(k.get("dp_quotient")) or original(*a, **k)
    )
    config = tiny_llama_config(tmp_path)
    status, out, err = run_here("run", "--system", "dgx-h100", "--xpus", "16", "--model", config, "--precision", "fp8",
                                "--parallel", "tp=4,pp=2", "--micro-batch", "1", "--microbatches", "2",
                                "--sequence", "1024", "--json", "--fast", "--calibration", calibration)  # fmt: skip
    assert status == 0, err
    assert seen == [on]
    assert json.loads(out)["tokens_per_s_per_gpu"] > 0
