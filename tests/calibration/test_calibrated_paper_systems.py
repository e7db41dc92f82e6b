"""--calibration on the paper's systems: compute timed on the calibration's GPU, the network left as built."""

import json

import pytest
from clitools import assert_one_line_error, run

ARGS = ("run", "--system", "cxl", "--xpus", "8", "--model", "llama2-7b", "--precision", "bf16",
        "--micro-batch", "1", "--microbatches", "2", "--sequence", "1024", "--fast", "--json")  # fmt: skip


@pytest.mark.slow
def test_calibrated_compute_on_an_h100_cxl_system_only_lengthens_compute():
    ideal = run(*ARGS, "--calibration", "ideal")
    calibrated = run(*ARGS, "--calibration", "dgx-h100")
    assert ideal.returncode == calibrated.returncode == 0, calibrated.stderr
    assert "compute calibrated (dgx-h100)" in calibrated.stderr
    a, b = json.loads(ideal.stdout), json.loads(calibrated.stdout)
    assert b["per_xpu_per_iteration_s"]["compute"] > a["per_xpu_per_iteration_s"]["compute"]  # below datasheet peaks
    assert b["bytes_on_links"] == a["bytes_on_links"]  # the same traffic: only operator times changed


def test_a_calibration_refuses_xpus_it_does_not_describe():
    result = run("run", "--system", "cxl", "--xpus", "256", "--mix", "H100+V100", "--model", "llama2-7b",
                 "--calibration", "dgx-h100", "--fast")  # fmt: skip
    assert_one_line_error(result, "--calibration dgx-h100 times H100 XPUs", "V100")
