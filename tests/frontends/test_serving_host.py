"""A calibration's ``serving_host`` section: vLLM's host time per continuous-batching iteration
(hcsim.calibration.host), checked against its closed form and end to end through ``hcsim serve``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from clitools import run

import hcsim.calibration
from hcsim.calibration import load_calibration
from hcsim.calibration.host import serving_host_seconds
from hcsim.calibration.schema import parse_calibration
from hcsim.errors import HcsimError

A100 = load_calibration("dgx-a100")
SHIPPED = Path(hcsim.calibration.__file__).parent / "data" / "dgx-a100.yaml"
MS = 1e-3
TP1 = (0.1648 + 0.8792 + 0.3521) * MS, 1.5873 * MS  # Vidur's batch 8, TP 1: schedule + sampler + prepare; outputs


def test_closed_form_at_a_measured_batch():
    blocking, outputs = TP1
    assert serving_host_seconds(A100, 8, 1, 1.0) == pytest.approx(blocking, rel=1e-12)  # outputs hidden
    assert serving_host_seconds(A100, 8, 1, 0.5 * MS) == pytest.approx(blocking + outputs - 0.5 * MS, rel=1e-12)
    serial = replace(A100, serving_host=(*A100.serving_host[:3], False))
    assert serving_host_seconds(serial, 8, 1, 1.0) == pytest.approx(blocking + outputs, rel=1e-12)


def test_interpolation_clamping_and_tp_fallback():
    batches, blocking, _, _ = A100.serving_host
    mid = serving_host_seconds(A100, 12, 1, 1.0)
    assert mid == pytest.approx((blocking[1][0] + blocking[1][1]) / 2, rel=1e-12)  # halfway between 8 and 16
    assert serving_host_seconds(A100, 1, 1, 1.0) == serving_host_seconds(A100, 8, 1, 1.0)  # held below 8
    assert serving_host_seconds(A100, 500, 1, 1.0) == pytest.approx(blocking[1][-1], rel=1e-12)  # held above 64
    assert serving_host_seconds(A100, 8, 8, 1.0) == serving_host_seconds(A100, 8, 4, 1.0)  # TP 8: TP 4's table
    assert serving_host_seconds(A100, 8, 3, 1.0) == serving_host_seconds(A100, 8, 2, 1.0)
    assert serving_host_seconds(A100, 0, 1, 1.0) == 0.0
    assert serving_host_seconds(replace(A100, serving_host=None), 8, 1, 1.0) == 0.0
    assert serving_host_seconds(None, 8, 1, 1.0) == 0.0


def _yaml(mutate) -> str:
    with open(SHIPPED, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    mutate(data)
    return yaml.safe_dump(data, sort_keys=False)


@pytest.mark.parametrize(
    "mutate,needle",
    [
        (lambda d: d["serving_host"]["schedule"]["tp2"].update(value=[0.1, 0.2]), "2 values for 8 batches"),
        (lambda d: d["serving_host"]["batches"].update(value=[16, 8, 24, 32, 40, 48, 56, 64]), "increasing batch"),
        (lambda d: d["serving_host"].pop("overlap_outputs"), "missing key 'serving_host.overlap_outputs'"),
        (lambda d: d["serving_host"]["schedule"].update(tp8={"value": [1], "unit": "ms", "source": "x"}), "tp8"),
    ],
)
def test_a_bad_section_is_one_line(mutate, needle):
    with pytest.raises(HcsimError, match=needle.replace("(", r"\(")):
        parse_calibration(_yaml(mutate))


TINY = {  # four small LLaMA blocks: the GPU time of an iteration is about an ms, so both terms show
    "model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 4,
    "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
}  # fmt: skip


def _serve(tmp_path, calibration):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY))
    proc = run(  # a process of its own: nothing of an earlier run in this interpreter carries over
        "serve", "--model", config, "--system", "dgx-a100", "--xpus", "1", "--tp", "1", "--scheduler", "continuous",
        "--prompt-tokens", "32", "--output-tokens", "16", "--requests", "8", "--rate", "1e6/s",
        "--calibration", calibration, "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_serve_adds_the_host_time_of_every_iteration(tmp_path):
    """8 requests at once: every iteration (the prefill, then the decodes) has 8 sequences, so without overlap the
    run is longer than the GPU-only run by iterations x (schedule + sampler + prepare + outputs) at batch 8."""
    gpu_file = tmp_path / "gpu.yaml"
    gpu_file.write_text(_yaml(lambda d: d.pop("serving_host")))
    serial_file = tmp_path / "serial.yaml"
    serial_file.write_text(_yaml(lambda d: d["serving_host"]["overlap_outputs"].update(value=False)))
    gpu, serial, shipped = (_serve(tmp_path, c) for c in (gpu_file, serial_file, "dgx-a100"))
    n = gpu["iterations"]
    assert n == serial["iterations"] == shipped["iterations"] == 17
    assert serial["duration_s"] - gpu["duration_s"] == pytest.approx(n * sum(TP1), rel=1e-9)
    # overlapped: the outputs hide behind the next forward pass except where they outlast it
    extra = shipped["duration_s"] - gpu["duration_s"]
    assert n * TP1[0] < extra < n * sum(TP1)
