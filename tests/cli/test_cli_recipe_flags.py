"""``hcsim run`` flags for recipe settings the layout does not carry: ``--recompute-modules``,
``--optimizer-dtype``, ``--fp8-param-gather`` (docs/training-features.md). Bad values are one line,
exit 2, before anything is built; a DGX layout that does not fit is refused in one line."""

from __future__ import annotations

import pytest
from clitools import assert_refused, run_here

DGX = ["run", "--system", "dgx-h100", "--xpus", "8", "--model", "llama2-7b", "--calibration", "dgx-h100", "--fast"]


@pytest.mark.parametrize(
    "extra,needles",
    [(["--precision", "bf16", "--recompute-modules", "moe"], ("recompute module 'moe' is not modelled",)),
     (["--precision", "bf16", "--recompute-modules", "qkv"], ("recompute module 'qkv' is unknown", "moe_act")),
     (["--precision", "bf16", "--recompute", "full", "--recompute-modules", "moe_act"],
      ("--recompute-modules needs --recompute selective",)),
     (["--precision", "fp16", "--optimizer-dtype", "bf16"], ("--optimizer-dtype needs --precision bf16 or fp8",)),
     (["--precision", "bf16", "--fp8-param-gather"], ("fp8_param_gather needs precision fp8",))],
)  # fmt: skip
def test_bad_recipe_flags_are_one_line(extra, needles):
    assert_refused(run_here(*DGX, *extra), *needles)


def test_a_layout_that_does_not_fit_stays_one_line():
    """GPT-OSS-120B at micro-batch 4 on 64 H100s, with its recipe's recompute modules: still 94.7 GiB."""
    line = assert_refused(
        run_here("run", "--system", "dgx-h100", "--xpus", "64", "--model", "gpt-oss-120b", "--precision", "bf16",
                 "--parallel", "tp=1,pp=4,ep=8", "--micro-batch", "4", "--microbatches", "8", "--sequence", "4096",
                 "--recompute-modules", "layernorm,moe_act", "--calibration", "dgx-h100", "--fast", "--json"),
        "each rank of pipeline stage 0 needs", "but an XPU has 80.0 GiB",
    )  # fmt: skip
    assert "activations 57.7" in line


@pytest.mark.parametrize(
    "extra,needles",
    [(["--calibration", "ideal", "--attention-backend", "flash"],
      ("--attention-backend flash needs a calibration", "--calibration dgx-h100")),
     (["--calibration", "dgx-a100", "--precision", "bf16", "--attention-backend", "flash"],
      ("calibration dgx-a100 has no attention_flash tables", "valid: auto")),
     (["--attention-backend", "cudnn"], ("invalid choice", "'auto', 'flash'"))],
)  # fmt: skip
def test_attention_backend_needs_tables_to_choose_from(extra, needles):
    argv = [*DGX[:-3], "--fast"]  # without DGX's --calibration dgx-h100
    assert_refused(run_here(*argv, *extra), *needles)


def test_attention_backend_refused_outside_training():
    assert_refused(
        run_here("run", "--system", "dgx-h100", "--xpus", "8", "--model", "llama2-7b", "--inference",
                 "--attention-backend", "flash"),
        "--attention-backend",
    )  # fmt: skip


def test_recompute_num_layers_needs_full_recompute():
    assert_refused(run_here(*DGX, "--precision", "bf16", "--recompute-num-layers", "5"),
                   "--recompute-num-layers needs --recompute full, not none")  # fmt: skip
    assert_refused(run_here(*DGX, "--precision", "bf16", "--recompute", "full", "--recompute-num-layers", "0"),
                   "recompute layers '0' is invalid", "1 to 100,000")  # fmt: skip
