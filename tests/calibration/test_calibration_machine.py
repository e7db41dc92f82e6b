"""A calibration applied to a machine: vertex times and a DGX whose links carry NCCL's rates, in SimGrid."""

from types import SimpleNamespace

import pytest

from hcsim.calibration import load_calibration
from hcsim.calibration.compute import op_seconds
from hcsim.calibration.machine import calibrated_dgx_spec, vertex_seconds
from hcsim.errors import HcsimError
from hcsim.platform import compile_platform
from hcsim.platform.dgx import dgx_system
from hcsim.platform.probe import simulate_transfers

H100 = load_calibration("dgx-h100")


def test_vertex_seconds_adds_its_operators_and_times_a_recompute_as_a_forward():
    up = SimpleNamespace(kind="linear", fwd_flops=2 * 4096**3, bwd_flops=4 * 4096**3, fwd_bytes=6 * 4096**2,
                         bwd_bytes=12 * 4096**2, gemm=(4096, 4096, 4096), precision=None)  # fmt: skip
    fp8 = SimpleNamespace(**{**vars(up), "precision": "fp8"})
    fwd, bwd = op_seconds(up, "fwd", "bf16", H100), op_seconds(up, "bwd", "bf16", H100)
    assert vertex_seconds([(up, "fwd"), (up, "bwd"), (up, "recompute")], "bf16", H100) == pytest.approx(
        2 * fwd + bwd, rel=1e-15
    )
    # an operator's own precision wins over the vertex's
    assert vertex_seconds([(fp8, "fwd")], "bf16", H100) == op_seconds(up, "fwd", "fp8", H100) < fwd
    with pytest.raises(HcsimError, match="pass 'sideways'"):
        vertex_seconds([(up, "sideways")], "bf16", H100)


def test_calibrated_dgx_links_time_transfers_as_nccls_model_in_simgrid(tmp_path):
    spec = calibrated_dgx_spec("h100", H100)
    assert spec.nvlink_bandwidth == pytest.approx(20.6e9 * 18)
    assert spec.nic_bandwidth == pytest.approx(50e9)
    path = tmp_path / "dgx.xml"
    compile_platform(dgx_system(16, spec=spec), path)
    size = 1 << 26
    same_node, same_rail = simulate_transfers(path, [("n0.gpu0", "n0.gpu5", size), ("n0.gpu3", "n1.gpu3", size)])
    # a lone transfer: the physical route latency, then the bytes at NCCL's rate (raw model: exact)
    assert same_node == pytest.approx(2 * spec.nvlink_latency + size / (20.6e9 * 18), rel=1e-9)
    rail = 4 * spec.pcie_latency + 2 * spec.nic_latency + spec.switch_latency
    assert same_rail == pytest.approx(rail + size / 50e9, rel=1e-9)


def test_a100_calibration_gives_its_own_links():
    spec = calibrated_dgx_spec("a100", load_calibration("dgx-a100"))
    assert spec.nvlink_bandwidth == pytest.approx(20.0e9 * 12)
    assert spec.nic_bandwidth == pytest.approx(25e9)
