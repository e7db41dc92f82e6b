"""Expert tensor parallelism ``etp < tp`` under ``--fast``: the fold refuses (EP groups span TP slices);
the TP quotient is exact (1e-9 against off, measured 0, exact engine) and the memoized ring steps
stay within memoize's TP bound of docs/fast-paths.md (5e-4 against the exact engine; within 1e-9 at
the calibrated links, 5.3e-5 at NVLink 16 GB/s, the same as the etp = tp layout tp4 ep2 pp2 there),
on calibrated DGX-H100 layouts at the extremes: etp=1 with EP across two nodes, 1 < etp < tp with pp.
"""

from __future__ import annotations

import dataclasses

import pytest

from hcsim.calibration import load_calibration
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.fast import simulate_system
from hcsim.platform.dgx import dgx_system
from hcsim.workload.models import TransformerSpec
from hcsim.workload.parallel.factory import TrainingWorkload

pytestmark = pytest.mark.filterwarnings("ignore::hcsim.fast.system.FoldRefused")
CALIB = load_calibration("dgx-h100")
NCCL = {"dp_algorithm": "nccl@dgx-h100", "tp_algorithm": "nccl@dgx-h100", "calibration": CALIB}
MOE = TransformerSpec("tiny-moe", layers=2, hidden=1024, heads=16, kv_heads=8, intermediate=2048, vocab=32000,
                      sequence=1024, experts=16, top_k=4, expert_intermediate=512)  # fmt: skip
LAYOUTS = {"etp1 ep16 over 2 nodes": "tp=2,ep=16,etp=1", "tp4 etp2 ep4": "tp=4,ep=4,etp=2,pp=2"}
LINKS = {"calibrated": {}, "nvlink 16 GB/s": {"nvlink_bandwidth": 16e9}}


def _run(layout: str, links: str, quotient: bool, **switches: object):
    work = TrainingWorkload(MOE, layout, microbatches=4, precision="fp8", sequence_parallel=True, zero=1,
                            tp_quotient=quotient, **NCCL)  # fmt: skip
    topo = dgx_system(16, spec=dataclasses.replace(calibrated_dgx_spec("h100", CALIB), **LINKS[links]))
    return simulate_system(topo, work, 1, progress=False, **switches)


@pytest.mark.parametrize("links", list(LINKS))
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_fast_matches_exact_with_expert_tp(name: str, links: str) -> None:
    fast = _run(LAYOUTS[name], links, True, fast=True)
    exact = _run(LAYOUTS[name], links, False, memoize=False)
    quotient = _run(LAYOUTS[name], links, True, memoize=False)
    assert fast.fold is None and "etp" in (fast.fold_refused or "")
    assert quotient.makespan == pytest.approx(exact.makespan, rel=1e-9)
    assert fast.makespan == pytest.approx(exact.makespan, rel=5e-4)
    assert fast.makespan > 0
