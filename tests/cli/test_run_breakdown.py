"""``hcsim run --model ... --json``: the iteration breakdown of a training run (hcsim.analysis.breakdown).

The JSON carries ``compute_s``, ``exposed_{tp,pp,dp,cp,ep}_s``, ``idle_s`` and
``memory_stall_s`` (the names experiments/validate_measured.py reads), per iteration and
averaged over the first rank of every stage; they add up to ``steady_iteration_s``
(1e-9 relative), calibrated or ideal, and the text output shows them on one line. A
folded ``--fast`` run gives the exact run's parts within 1% of the iteration (the fast
paths' tolerance, docs/fast-paths.md).
"""

from __future__ import annotations

import json

import pytest
from clitools import run

from hcsim.analysis.breakdown import BUCKETS

SMALL = {"num_hidden_layers": 4, "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 8,
         "intermediate_size": 4096, "vocab_size": 32000, "max_position_embeddings": 512,
         "torch_dtype": "bfloat16"}  # fmt: skip
FIELDS = ("compute_s", "exposed_tp_s", "exposed_pp_s", "exposed_dp_s", "exposed_cp_s", "exposed_ep_s", "idle_s",
          "memory_stall_s")  # fmt: skip


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL))
    return str(path)


def _run(*args) -> dict:
    p = run("run", *args, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _adds_up(out: dict) -> None:
    assert set(FIELDS) == set(BUCKETS)
    assert all(out[k] >= 0 for k in FIELDS)
    assert sum(out[k] for k in FIELDS) == pytest.approx(out["steady_iteration_s"], rel=1e-9)


@pytest.mark.parametrize(
    "args",
    [
        ("--system", "dgx-h100", "--xpus", "16", "--precision", "bf16", "--parallel", "tp=2,pp=2", "--calibration",
         "dgx-h100"),
        ("--system", "cxl", "--xpus", "8", "--parallel", "tp=2,pp=2"),
        ("--system", "noncoherent", "--xpus", "8", "--parallel", "pp=2,cp=2", "--sequence", "512"),
    ],
)  # fmt: skip
def test_the_breakdown_adds_up_to_the_iteration(model, args):
    out = _run(*args, "--model", model, "--microbatches", "4", "--iterations", "2")
    _adds_up(out)
    assert out["compute_s"] > 0 and out["exposed_pp_s"] > 0 and out["idle_s"] > 0  # a pipeline has a bubble
    if "cp=2" in args:
        assert out["exposed_cp_s"] > 0
    if "tp=2,pp=2" in args:
        assert out["exposed_tp_s"] > 0 and out["exposed_cp_s"] == 0 and out["exposed_ep_s"] == 0


def test_the_text_output_shows_it_on_one_line(model):
    p = run("run", "--system", "cxl", "--xpus", "8", "--parallel", "tp=2,pp=2", "--model", model, "--microbatches", "4")
    assert p.returncode == 0, p.stderr
    lines = [line for line in p.stdout.splitlines() if line.startswith("iteration breakdown")]
    assert len(lines) == 1
    for label in ("compute", "tp", "pp", "dp", "cp", "ep", "memory", "idle"):
        assert f" {label} " in lines[0]


def test_a_workload_that_is_not_training_has_no_breakdown():
    out = _run("--system", "cxl", "--xpus", "8", "--workload", "allreduce", "--iterations", "1")
    assert not set(FIELDS) & set(out)


@pytest.mark.slow
@pytest.mark.parametrize("calibration", ["dgx-h100", "ideal"])
def test_fast_gives_the_exact_breakdown(model, calibration):
    args = ("--system", "dgx-h100", "--xpus", "64", "--model", model, "--precision", "bf16", "--parallel", "tp=4,pp=2",
            "--microbatches", "4", "--iterations", "3", "--calibration", calibration)  # fmt: skip
    exact = _run(*args)
    fast = _run(*args, "--fast")
    assert fast["folded_from"] == 64 and fast["simulated_xpus"] < 64 == fast["xpus"]  # whole replicas folded
    for out in (exact, fast):
        _adds_up(out)
    period = exact["steady_iteration_s"]
    assert fast["steady_iteration_s"] == pytest.approx(period, rel=0.01)
    for k in FIELDS:
        assert fast[k] == pytest.approx(exact[k], abs=0.01 * period), k
    assert exact["exposed_dp_s"] > 0 and fast["exposed_dp_s"] > 0  # the folded gradient rings are in it
