"""The TP quotient (``training_graph(tp_quotient=True)``): one compute vertex per TP group.

The TP slices of a stage run the same compute; with the switch on, slice 0's vertex sits in
every slice's chain and the collectives and p2p keep every slice's flows. Held against the
switch off at 1e-9 (measured: identical makespans) on calibrated DGX-H100 layouts at the
extremes the validation rows use (tp=2 and tp=8, pp=8, vp>1, cp=2, ZeRO-1, TP overlap), at
the calibrated links and at slow NVLink / slow NICs (contention), with the fast paths and
with the exact engine; the report's per-XPU averages read slice 0's compute for every slice.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from clitools import run_here, tiny_llama_config

from hcsim.analysis.breakdown import steady_breakdown
from hcsim.calibration import load_calibration
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.engine import report
from hcsim.fast import simulate_system
from hcsim.platform.dgx import dgx_system
from hcsim.workload.models import TransformerSpec
from hcsim.workload.parallel.factory import TrainingWorkload

pytestmark = pytest.mark.filterwarnings("ignore::hcsim.fast.system.FoldRefused")  # small systems: nothing to fold
CALIB = load_calibration("dgx-h100")
NCCL = {"dp_algorithm": "nccl@dgx-h100", "tp_algorithm": "nccl@dgx-h100", "calibration": CALIB}
# (xpus, layout, options, layers): the validation rows' extremes, small
LAYOUTS = {
    "tp2 pp2": (16, "tp=2,pp=2", {}, 4),
    "tp4 pp2 vp2 zero1": (16, "tp=4,pp=2,vp=2", {"zero": 1}, 4),
    "tp8 pp8 vp2": (64, "tp=8,pp=8,vp=2", {}, 16),
    "tp8 pp2 cp2 vp2": (32, "tp=8,pp=2,cp=2,vp=2", {}, 4),
    "tp4 pp2 sp overlap": (16, "tp=4,pp=2", {"sequence_parallel": True, "tp_comm_overlap": True}, 4),
}
LINKS = {"calibrated": {}, "nvlink 16 GB/s": {"nvlink_bandwidth": 16e9}, "nic 100 us": {"nic_latency": 100e-6}}


def _run(name: str, links: str, quotient: bool, **switches: object):
    xpus, layout, options, layers = LAYOUTS[name]
    spec = TransformerSpec("tiny", layers=layers, hidden=1024, heads=16, kv_heads=8, intermediate=4096, vocab=32000,
                           sequence=2048)  # fmt: skip
    work = TrainingWorkload(spec, layout, microbatches=4, precision="fp8", tp_quotient=quotient, **NCCL, **options)
    topo = dgx_system(xpus, spec=dataclasses.replace(calibrated_dgx_spec("h100", CALIB), **LINKS[links]))
    result = simulate_system(topo, work, 1, progress=False, shared_ring_steps=True, **switches)
    return result, work(result.fold.ranks if result.fold else topo.xpus(), group=xpus if result.fold else None)


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_the_quotient_matches_every_slice_computing(name: str) -> None:
    on, graph = _run(name, "calibrated", True, fast=True)
    off, _ = _run(name, "calibrated", False, fast=True)
    assert on.makespan == pytest.approx(off.makespan, rel=1e-9)
    assert on.activities < off.activities  # the other slices' compute left SimGrid
    assert "compute_stand_in" in graph.graph
    a, b = report.summarize(on), report.summarize(off)
    for key, value in b["per_xpu_per_iteration_s"].items():  # every slice reads slice 0's compute
        assert a["per_xpu_per_iteration_s"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    for key, value in steady_breakdown(off, graph).items():
        assert steady_breakdown(on, graph)[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


@pytest.mark.parametrize("links", ["nvlink 16 GB/s", "nic 100 us"])
@pytest.mark.parametrize("name", ["tp4 pp2 vp2 zero1", "tp8 pp2 cp2 vp2"])
def test_the_quotient_holds_under_contention_and_in_the_exact_engine(name: str, links: str) -> None:
    on, _ = _run(name, links, True, fast=True)
    off, _ = _run(name, links, False, fast=True)
    assert on.makespan == pytest.approx(off.makespan, rel=1e-9)
    exact_on, _ = _run(name, links, True, memoize=False)
    exact_off, _ = _run(name, links, False, memoize=False)
    assert exact_on.makespan == pytest.approx(exact_off.makespan, rel=1e-9)


def test_without_tp_the_graph_is_unchanged() -> None:
    spec = TransformerSpec("tiny", layers=2, hidden=1024, heads=16, kv_heads=8, intermediate=4096, vocab=32000,
                           sequence=1024)  # fmt: skip
    ranks = [f"x{i}" for i in range(4)]
    a = TrainingWorkload(spec, "pp=2", microbatches=2, tp_quotient=True)(ranks)
    b = TrainingWorkload(spec, "pp=2", microbatches=2)(ranks)
    assert dict(a.nodes(data=True)) == dict(b.nodes(data=True)) and set(a.edges) == set(b.edges)
    assert "compute_stand_in" not in a.graph


CLI_CASES = {  # (system, flags, on): calibrated --fast runs whose data stays in HBM only
    "dgx calibrated fast": ("dgx-h100", ("--calibration", "dgx-h100", "--fast"), True),
    "dgx calibrated exact": ("dgx-h100", ("--calibration", "dgx-h100"), False),
    "dgx ideal fast": ("dgx-h100", ("--calibration", "ideal", "--fast"), False),
    "dgx calibrated fast, spill allowed": ("dgx-h100", ("--calibration", "dgx-h100", "--fast", "--allow-spill"), False),
    "cxl calibrated fast (spills to CXL)": ("cxl", ("--calibration", "dgx-h100", "--fast"), False),
}


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_only_calibrated_fast_cli_runs_in_hbm_turn_it_on(tmp_path, monkeypatch, case: str) -> None:
    import hcsim.cli.run as cli_run

    system, flags, on = CLI_CASES[case]
    built: list[TrainingWorkload] = []
    original = cli_run._training_workload
    monkeypatch.setattr(cli_run, "_training_workload", lambda *a: built.append(original(*a)) or built[-1])
    config = tiny_llama_config(tmp_path)
    status, out, err = run_here("run", "--system", system, "--xpus", "16", "--model", config, "--precision", "fp8",
                                "--parallel", "tp=4,pp=2", "--micro-batch", "1", "--microbatches", "2",
                                "--sequence", "1024", "--json", *flags)  # fmt: skip
    assert status == 0, err
    assert built[0].options.get("tp_quotient", False) is on
    assert json.loads(out)["tokens_per_s_per_gpu"] > 0
