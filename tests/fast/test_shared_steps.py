"""Shared steps for grouped rings (``shared_group_steps``): a TP ring skips from its first step.

A training layout's TP collectives under NCCL's rings (``nccl@dgx-h100``) are rings of one
layout group (4 disjoint NVLink flows per step); with the switch on, a ring of a plan whose
full step was measured alone before skips all its steps on quiet links. Held against the
switch off (the fast path as before) at 1e-12 and against the exact engine at 5e-4 (what the
memoized step-synchronous ring already costs there), at the calibrated NVLink, at 16 GB/s and
at 100 us, with pipeline p2p on the same NVLinks (tp=4, pp=2 in one node).
"""

from __future__ import annotations

import dataclasses

import pytest

from hcsim.calibration import load_calibration
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.fast import simulate_system
from hcsim.fast.system import RunOptions
from hcsim.platform.dgx import dgx_system
from hcsim.workload.models import TransformerSpec
from hcsim.workload.parallel.factory import TrainingWorkload

CALIB = load_calibration("dgx-h100")
EXTREMES = {"calibrated": {}, "nvlink 16 GB/s": {"nvlink_bandwidth": 16e9}, "nvlink 100 us": {"nvlink_latency": 100e-6}}


def _run(changes: dict, **switches: object):
    spec = TransformerSpec("tiny", layers=8, hidden=2048, heads=16, kv_heads=16, intermediate=8192, vocab=32000,
                           sequence=1024)  # fmt: skip
    work = TrainingWorkload(spec, "tp=4,pp=2", microbatches=4, calibration=CALIB, dp_algorithm="nccl@dgx-h100",
                            tp_algorithm="nccl@dgx-h100")  # fmt: skip
    topo = dgx_system(16, spec=dataclasses.replace(calibrated_dgx_spec("h100", CALIB), **changes))
    return simulate_system(topo, work, 1, progress=False, **switches)


def test_the_switch_is_on_by_default_and_part_of_the_options() -> None:
    assert RunOptions.of(fast=True).shared_group_steps
    assert not RunOptions.of(fast=True, shared_group_steps=False).shared_group_steps


@pytest.mark.parametrize("setting", list(EXTREMES))
def test_grouped_rings_skip_from_their_first_step_within_tolerance(setting: str) -> None:
    changes = EXTREMES[setting]
    on = _run(changes, memoize=True)
    off = _run(changes, memoize=True, shared_group_steps=False)
    exact = _run(changes, memoize=False)
    assert on.makespan == pytest.approx(off.makespan, rel=1e-12)  # measured 6.4e-15 at most
    assert on.makespan == pytest.approx(exact.makespan, rel=5e-4)  # measured 1.8e-4 (100 us; the same switched off)
    assert on.activities < 0.8 * off.activities  # the TP rings' first steps left SimGrid (measured 0.58-0.72)
    # every flow of the plans is either run or memoized, with or without the shortcut
    assert on.activities + on.memoized_flows == off.activities + off.memoized_flows


@pytest.mark.parametrize("setting", ["calibrated", "nic 100 us"])
def test_every_ring_algorithm_shares_steps_when_asked(setting: str) -> None:
    """Context parallelism's rings (the library's ``ring``, one step over 2 ranks on two nodes) share steps too."""
    changes = {"calibrated": {}, "nic 100 us": {"nic_latency": 100e-6}}[setting]
    spec = TransformerSpec("tiny", layers=8, hidden=2048, heads=16, kv_heads=16, intermediate=8192, vocab=32000,
                           sequence=1024)  # fmt: skip

    def run(**switches: object):
        work = TrainingWorkload(spec, "tp=4,pp=2,cp=2", microbatches=4, calibration=CALIB,
                                dp_algorithm="nccl@dgx-h100", tp_algorithm="nccl@dgx-h100")  # fmt: skip
        topo = dgx_system(32, spec=dataclasses.replace(calibrated_dgx_spec("h100", CALIB), **changes))
        return simulate_system(topo, work, 1, progress=False, **switches)

    on, off = run(memoize=True, shared_ring_steps=True), run(memoize=True)
    exact = run(memoize=False)
    assert on.makespan == pytest.approx(off.makespan, rel=1e-12)  # measured 0 (identical)
    assert on.makespan == pytest.approx(exact.makespan, rel=5e-5)  # measured 2.0e-5 (100 us; the same switched off)
    assert on.activities < off.activities - 1000  # measured 6176 against 7456
    assert on.activities + on.memoized_flows == off.activities + off.memoized_flows == exact.activities


@pytest.mark.parametrize("twins", [False, True], ids=["twins off", "twins on"])
def test_a_ring_of_a_plan_measured_before_runs_no_flow(twins: bool) -> None:
    """The next iteration's ring has the plan whose full step the first one measured alone: it skips every step.

    A 16 MiB ring allreduce on a star of 8, two iterations: the second ring starts on quiet
    links, so it runs nothing in SimGrid (as many activities as one iteration alone), where
    the step-by-step memo (``shared_ring_steps`` off) runs its first step again (twice as
    many). This is the case where the plan's key in ``SharedSteps.known`` matters.
    """
    from hcsim.platform import star
    from hcsim.workload.builders import allreduce_benchmark

    def work(ranks, group):
        return allreduce_benchmark(ranks, 16 * 2**20, "ring", group)

    switches = dict(memoize=True, twins=twins, shared_ring_steps=True, progress=False)
    one = simulate_system(star(8), work, 1, **switches)
    two = simulate_system(star(8), work, 2, **switches)
    off = simulate_system(star(8), work, 2, **{**switches, "shared_ring_steps": False})
    exact = simulate_system(star(8), work, 2, progress=False)
    assert two.activities == one.activities  # measured 8 (twins off) and 1 (one representative)
    assert off.activities == 2 * one.activities
    assert two.activities + two.memoized_flows == off.activities + off.memoized_flows == exact.activities
    assert two.makespan == pytest.approx(off.makespan, rel=1e-12)  # measured 6e-16
    assert two.makespan == pytest.approx(exact.makespan, rel=1e-12)  # measured 4e-16 (a star: one hop class)
