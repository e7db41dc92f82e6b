"""NCCL's rings in training runs: the calibrated CLI's default, user overrides, fast against exact.

``hcsim run --calibration dgx-h100`` makes ``nccl@dgx-h100`` the data- and tensor-parallel
algorithm (reduce-scatter and allgather included); a ``--dp-algorithm`` given is kept; the
fast paths match the exact engine: memoized ring steps (also from a ring's first step), and
the fold of a layout whose units are whole nodes (hcsim.fast.units).
"""

from __future__ import annotations

import json

import pytest
from clitools import run, tiny_llama_config

from hcsim.calibration import load_calibration
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.fast import simulate_system
from hcsim.fast.system import FoldRefused
from hcsim.platform.dgx import dgx_system
from hcsim.workload.models import TransformerSpec
from hcsim.workload.parallel.factory import TrainingWorkload


def test_calibrated_runs_default_to_nccl_rings_and_keep_overrides(tmp_path) -> None:
    config = tiny_llama_config(tmp_path)
    row = ["run", "--system", "dgx-h100", "--xpus", "16", "--model", config, "--precision", "bf16", "--parallel",
           "tp=2", "--micro-batch", "1", "--microbatches", "2", "--sequence", "1024", "--calibration", "dgx-h100",
           "--fast", "--json"]  # fmt: skip

    def tokens(*extra: str) -> float:
        out = run(*row, *extra)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["tokens_per_s_per_gpu"]

    default = tokens()
    assert default == tokens("--dp-algorithm", "nccl@dgx-h100", "--tp-algorithm", "nccl@dgx-h100")
    ring = tokens("--dp-algorithm", "ring", "--tp-algorithm", "ring")
    assert default > ring  # the data-parallel rings cross nodes on all 8 rails, not one NIC


def _workload() -> TrainingWorkload:
    spec = TransformerSpec("tiny", layers=4, hidden=2048, heads=16, kv_heads=16, intermediate=8192, vocab=32000,
                           sequence=1024)  # fmt: skip
    return TrainingWorkload(spec, "tp=1", microbatches=2, zero=1, calibration=load_calibration("dgx-h100"),
                            dp_algorithm="nccl@dgx-h100", tp_algorithm="nccl@dgx-h100")  # fmt: skip


def test_fast_matches_exact_on_a_training_iteration() -> None:
    """dp=16 on two DGX-H100 nodes: ZeRO-1's reduce-scatter and allgather as NCCL rings across the nodes."""
    topo = dgx_system(16, spec=calibrated_dgx_spec("h100", load_calibration("dgx-h100")))
    exact = simulate_system(topo, _workload(), 1, progress=False)
    with pytest.warns(FoldRefused, match="a ring of 2 unit.s. has nothing to fold"):  # units: nodes
        fast = simulate_system(topo, _workload(), 1, fast=True, progress=False)
    assert fast.makespan == pytest.approx(exact.makespan, rel=1e-9)
    assert fast.memoized_flows > 10 * fast.activities  # ring steps skipped, also from a ring's first step


def _layout_run(layout: str, gpus: int, fold: bool | None, fast: bool = True):
    spec = TransformerSpec("tiny", layers=4, hidden=2048, heads=16, kv_heads=16, intermediate=8192, vocab=32000,
                           sequence=1024)  # fmt: skip
    work = TrainingWorkload(spec, layout, microbatches=2, zero=1, calibration=load_calibration("dgx-h100"),
                            sequence_parallel="tp=1" not in layout, dp_algorithm="nccl@dgx-h100",
                            tp_algorithm="nccl@dgx-h100")  # fmt: skip
    topo = dgx_system(gpus, spec=calibrated_dgx_spec("h100", load_calibration("dgx-h100")))
    return simulate_system(topo, work, 1, fast=fast, fold=fold, progress=False)


@pytest.mark.parametrize("layout", ["tp=1", "tp=4", "tp=2,pp=2"])
def test_a_fold_of_whole_nodes_matches_every_xpu(layout: str) -> None:
    """32 GPUs on 4 nodes: the fold keeps whole nodes (units of one node's replicas) within 1% of every XPU."""
    folded = _layout_run(layout, 32, None)
    every = _layout_run(layout, 32, False)
    assert folded.fold is not None and len(folded.fold.ranks) < 32 and len(folded.fold.ranks) % 8 == 0
    assert folded.makespan == pytest.approx(every.makespan, rel=0.01)


@pytest.mark.slow
def test_a_fold_of_whole_nodes_matches_the_exact_engine() -> None:
    folded = _layout_run("tp=1", 32, None)
    exact = _layout_run("tp=1", 32, False, fast=False)
    assert folded.makespan == pytest.approx(exact.makespan, rel=0.01)
