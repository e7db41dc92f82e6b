"""Steady micro-batches (``hcsim.fast.microbatches``): an iteration from two short runs of it.

Held against the same run with every micro-batch simulated (fold, memoize and the TP quotient
as ``hcsim run --calibration dgx-h100 --fast`` runs them) on calibrated DGX-H100 layouts at
the extremes the validation rows use: pipelines of 1, 2, 4 and 8 stages, interleaved or not,
micro-batches not a multiple of the stages, CP, EP, ZeRO-3 with fp8 gathers and full
recomputation, TP overlap; at the calibrated links, slow NVLink and slow NICs. Time, bytes,
rates and compute: 1e-9 relative (measured 1e-13). Each other bucket of the iteration
breakdown: within 2e-2 of the iteration (measured 1.0e-2 here, 4.6e-4 on validation row 3):
how the waiting time splits between exposed communication and idle alternates from one
period to the next, while their sum does not. Fewer SimGrid activities is not asserted: on
these tiny models a full run memoizes its later micro-batches' collectives almost whole
(validation row 3: 152,013 activities -> 51,557).
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from clitools import assert_one_line_error, run, run_here, tiny_llama_config

from hcsim.analysis.breakdown import BUCKETS, GraphKept, steady_breakdown
from hcsim.calibration import load_calibration
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.cli.training import TOP_LINKS, steady_run
from hcsim.engine import report
from hcsim.fast import simulate_system
from hcsim.fast.microbatches import SteadyPlan, extrapolate, steady_plan
from hcsim.platform.dgx import dgx_system
from hcsim.workload.models import TransformerSpec
from hcsim.workload.parallel.factory import TrainingWorkload

pytestmark = pytest.mark.filterwarnings("ignore::hcsim.fast.system.FoldRefused")  # small systems: nothing to fold
CALIB = load_calibration("dgx-h100")
NCCL = {"dp_algorithm": "nccl@dgx-h100", "tp_algorithm": "nccl@dgx-h100", "calibration": CALIB, "precision": "fp8"}
DENSE = {"layers": 8, "experts": 0}
MOE = {"layers": 4, "experts": 8, "top_k": 2, "expert_intermediate": 2048}
# (xpus, layout, micro-batches, model, options): the validation rows' extremes, small
CASES = {
    "pp1 zero3 fp8 gather, full recompute": (8, "dp=8", 10, DENSE,
                                            {"zero": 3, "fp8_param_gather": True, "recompute": "full"}),
    "tp2 pp2, 21 micro-batches": (16, "tp=2,pp=2", 21, DENSE, {}),
    "tp4 pp4 vp2 zero1": (16, "tp=4,pp=4,vp=2", 24, DENSE, {"zero": 1}),
    "tp2 pp8, 66 micro-batches": (16, "tp=2,pp=8", 66, DENSE, {}),
    "tp4 pp2 cp2 vp2 overlap": (32, "tp=4,pp=2,cp=2,vp=2", 12, DENSE,
                                {"sequence_parallel": True, "tp_comm_overlap": True}),
    "moe pp2 ep4": (16, "pp=2,ep=4", 12, MOE, {}),
}  # fmt: skip
LINKS = {"calibrated": {}, "nvlink 16 GB/s": {"nvlink_bandwidth": 16e9}, "nic 100 us": {"nic_latency": 100e-6}}


def _runs(case: str, links: str, at_once: bool = False) -> tuple[dict, dict, SteadyPlan]:
    """(every micro-batch simulated, steady run, its plan) as the CLI makes its report."""
    xpus, layout, microbatches, model, options = CASES[case]
    spec = TransformerSpec("tiny", hidden=1024, heads=16, kv_heads=8, intermediate=4096, vocab=32000, sequence=2048,
                           **model)  # fmt: skip
    work = GraphKept(TrainingWorkload(spec, layout, microbatches=microbatches, tp_quotient=True, **NCCL, **options))
    topo = dgx_system(xpus, spec=dataclasses.replace(calibrated_dgx_spec("h100", CALIB), **LINKS[links]))

    def once(bar: bool = False):
        return simulate_system(topo, work, 1, progress=False, fast=True, shared_ring_steps=True, dp_quotient=True)

    result = once()
    full = {**report.summarize(result), **steady_breakdown(result, work.graph), "links": report.link_stats(result)}
    plan = steady_plan(microbatches, work.full_layout(xpus).pp)
    assert plan is not None, case
    steady, _ = steady_run(plan, work, once, at_once=at_once)
    assert work.options["microbatches"] == microbatches  # given back
    return full, steady, plan


def _assert_agree(full: dict, steady: dict, plan: SteadyPlan) -> None:
    assert steady["microbatches_simulated"] == [plan.first, plan.second]
    period = full["steady_iteration_s"]
    for key in ("makespan_s", "steady_iteration_s", "mean_iteration_s", "batches_per_s", "samples_per_s",
                "compute_s", "bytes_on_links", "simulated_bytes_on_links"):  # fmt: skip
        if full[key] is None:
            assert steady[key] is None, key
        else:
            assert steady[key] == pytest.approx(full[key], rel=1e-9, abs=1e-12), key
    for key in BUCKETS:
        assert abs(steady[key] - full[key]) <= 2e-2 * period, (key, steady[key], full[key])
    assert sum(steady[k] for k in BUCKETS) == pytest.approx(period, rel=1e-9)
    busiest = full["links"][:TOP_LINKS]
    assert [row["link"] for row in steady["simulated_top_links"]] == [row["link"] for row in busiest]
    for mine, theirs in zip(steady["simulated_top_links"], busiest, strict=True):
        assert mine["bytes"] == pytest.approx(theirs["bytes"], rel=1e-9)
        assert mine["mean_utilization"] == pytest.approx(theirs["mean_utilization"], rel=1e-9)


@pytest.mark.parametrize("case", list(CASES))
def test_two_short_runs_stand_for_the_iteration(case: str) -> None:
    _assert_agree(*_runs(case, "calibrated"))


@pytest.mark.slow
@pytest.mark.parametrize("links", ["nvlink 16 GB/s", "nic 100 us"])
@pytest.mark.parametrize("case", ["tp4 pp4 vp2 zero1", "tp4 pp2 cp2 vp2 overlap", "moe pp2 ep4"])
def test_they_hold_under_contention(case: str, links: str) -> None:
    _assert_agree(*_runs(case, links))


def test_the_first_run_beside_the_second_gives_the_same_report() -> None:
    _, alone, _ = _runs("tp2 pp2, 21 micro-batches", "calibrated")
    _, beside, _ = _runs("tp2 pp2, 21 micro-batches", "calibrated", at_once=True)
    assert json.dumps(beside, sort_keys=True) == json.dumps(alone, sort_keys=True)


def test_the_plan() -> None:
    assert steady_plan(64, 8) == SteadyPlan(64, 8, 16, 7)
    assert steady_plan(58, 8) == SteadyPlan(58, 10, 18, 6)  # r = 58 mod 8 rides in both runs
    assert steady_plan(16, 1) == SteadyPlan(16, 2, 3, 14)  # one stage: a period is one micro-batch, from the second
    assert steady_plan(47, 8) is None and steady_plan(9, 1) is None  # 8 + 16 and 2 + 3: more than half
    for m in range(1, 200):
        for p in (1, 2, 3, 4, 8, 16):
            plan = steady_plan(m, p)
            if plan is not None:
                assert plan.first + plan.periods * (plan.second - plan.first) == m
                assert plan.first >= max(p, 2) and 2 * (plan.first + plan.second) <= m


def test_a_field_not_known_to_grow_is_not_guessed() -> None:
    plan = SteadyPlan(10, 2, 4, 4)
    one = {"makespan_s": 1.0, "steady_iteration_s": 1.0, "activities": 5, "links": [], "xpus": 8}
    two = {"makespan_s": 1.5, "steady_iteration_s": 1.5, "activities": 7, "links": [], "xpus": 8}
    out = extrapolate(one, two, plan)
    assert out["makespan_s"] == 3.0 and out["activities"] == 12 and out["xpus"] == 8
    with pytest.raises(RuntimeError, match="'new_field'"):
        extrapolate({**one, "new_field": 1}, {**two, "new_field": 2}, plan)


def test_the_cli_extrapolates_calibrated_fast_runs_and_says_so(tmp_path) -> None:
    config = tiny_llama_config(tmp_path, layers=4, positions=2048)
    argv = ("run", "--system", "dgx-h100", "--xpus", "16", "--model", config, "--precision", "fp8", "--parallel",
            "tp=2,pp=4", "--microbatches", "24", "--sequence", "1024", "--calibration", "dgx-h100", "--fast",
            "--json")  # fmt: skip
    status, out, err = run_here(*argv)
    assert status == 0, err
    assert "micro-batches 24 extrapolated from runs of 4 and 8" in err
    steady = json.loads(out)
    status, out, err = run_here(*argv, "--exact-microbatches")
    assert status == 0, err
    full = json.loads(out)
    assert "extrapolated" not in err and full.get("microbatches_simulated") is None
    assert steady["microbatches_simulated"] == [4, 8]
    for key in ("tokens_per_s_per_gpu", "model_tflops_per_gpu", "steady_iteration_s", "bytes_on_links"):
        assert steady[key] == pytest.approx(full[key], rel=1e-9), key
    assert steady["tokens_per_iteration"] == full["tokens_per_iteration"]


def test_the_ideal_model_on_a_dgx_extrapolates_too(tmp_path) -> None:
    config = tiny_llama_config(tmp_path, layers=4, positions=2048)
    argv = ("run", "--system", "dgx-h100", "--xpus", "16", "--model", config, "--precision", "bf16", "--parallel",
            "tp=2,pp=2,vp=2", "--microbatches", "17", "--sequence", "1024", "--fast", "--json")  # fmt: skip
    status, out, err = run_here(*argv)
    assert status == 0, err
    steady = json.loads(out)
    assert steady["microbatches_simulated"] == [3, 5]
    status, out, err = run_here(*argv, "--exact-microbatches")
    assert status == 0, err
    full = json.loads(out)
    for key in ("tokens_per_s_per_gpu", "steady_iteration_s", "bytes_on_links"):
        assert steady[key] == pytest.approx(full[key], rel=1e-9), key


def test_the_switch_is_refused_where_nothing_is_extrapolated() -> None:
    argv = ("run", "--system", "dgx-h100", "--xpus", "8", "--model", "llama2-7b", "--calibration", "dgx-h100",
            "--exact-microbatches", "--json")  # fmt: skip
    assert_one_line_error(run(*argv), "--exact-microbatches applies to --fast with --calibration or a DGX system")
