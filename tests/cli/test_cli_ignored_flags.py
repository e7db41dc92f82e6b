"""Issue 25, item 10: a flag the chosen mode would ignore is refused in one line naming it (docs/cli.md).

Each case gives one flag that does nothing in its mode; the answer names the flag and
where it applies. The same flags in their own mode are accepted (the last test).
"""

from __future__ import annotations

import pytest
from clitools import assert_refused, run_here

WORKLOAD = ["run", "--system", "cxl", "--xpus", "8", "--workload", "allreduce", "--bytes", "1MiB", "--iterations", "1"]
TRAIN = ["run", "--system", "cxl", "--xpus", "8", "--model", "llama2-7b"]
INFER = [*TRAIN, "--inference", "--context", "8"]
PLATFORM = ["run", "--platform", "{p}", "--workload", "allreduce", "--iterations", "1"]
COLLECTIVE = ["collective", "--platform", "{p}", "--sizes", "1KiB"]
DRAW = ["platform", "draw", "--graphml", "{p}", "-o", "{p}.png"]

TRAINING_FLAGS = [
    ["--parallel", "tp=2"], ["--microbatches", "2"], ["--micro-batch", "2"], ["--sequence", "128"], ["--zero", "1"],
    ["--ep", "2"], ["--schedule", "gpipe"], ["--sequence-parallel"], ["--no-sequence-parallel"],
    ["--mapping", "tp,dp"], ["--precision", "bf16"], ["--recompute", "full"], ["--calibration", "dgx-h100"],
    ["--recompute-modules", "moe_act"], ["--optimizer-dtype", "bf16"], ["--fp8-param-gather"],
    ["--allow-spill"], ["--dp-algorithm", "tree"], ["--tp-algorithm", "tree"], ["--tp-comm-overlap"],
    ["--no-tp-comm-overlap"],
]  # fmt: skip
CASES = [
    *[(WORKLOAD, f, f[0].split("/")[0], "applies to training") for f in TRAINING_FLAGS],
    *[(INFER, f, f[0].split("/")[0], "not --inference") for f in TRAINING_FLAGS],
    *[(WORKLOAD, f, f[0], "applies to --model NAME --inference") for f in
      (["--phase", "prefill"], ["--batch", "2"], ["--context", "8"], ["--tp", "2"])],
    *[(TRAIN, f, f[0], "applies to --model NAME --inference") for f in (["--phase", "prefill"], ["--batch", "2"])],
    (TRAIN, ["--tp", "2"], "--tp", "needs --inference"),
    (TRAIN, ["--context", "8"], "--context", "needs --inference"),
    (TRAIN, ["--bytes", "1MiB"], "--bytes", "not --model"),
    (TRAIN, ["--algorithm", "ring"], "--algorithm", "--dp-algorithm"),
    (INFER, ["--bytes", "1MiB"], "--bytes", "not --model"),
    (["run", "--system", "cxl", "--xpus", "8", "--inference", "--workload", "fig3", "--iterations", "1"], [],
     "--inference", "applies to --model"),
    *[(base, f, f[0], "applies to a system built on the fly") for base in (PLATFORM, COLLECTIVE, DRAW) for f in
      (["--xpus", "8"], ["--mix", "H100"], ["--cxl-bandwidth", "1GBps"], ["--cxl-latency", "1us"],
       ["--link-bandwidth", "1GBps"], ["--link-latency", "1us"], ["--hosts-per-leaf", "8"], ["--spines", "2"])],
    *[(WORKLOAD, f, f[0], "applies to 'leafspine' only") for f in (["--hosts-per-leaf", "8"], ["--spines", "2"])],
    (["platform", "build", "star", "--xpus", "8", "--spines", "2", "-o", "x.xml"], [], "--spines", "'leafspine'"),
    (["collective", "--system", "ring", "--xpus", "8", "--hosts-per-leaf", "2"], [], "--hosts-per-leaf", "'leafspine'"),
    (TRAIN, ["--allow-spill"], "--allow-spill", "applies to --system dgx-h100"),
    (["collective", "--system", "cxl", "--xpus", "8", "--host-times"], [], "--host-times", "with --json"),
]  # fmt: skip


@pytest.mark.parametrize("base,extra,flag,where", CASES, ids=[f"{c[0][1]}-{c[0][-1]}-{c[2]}" for c in CASES])
def test_a_flag_that_does_not_apply_is_refused(base, extra, flag, where, tmp_path):
    argv = [a.replace("{p}", str(tmp_path / "p.xml")) for a in [*base, *extra]]
    if "{p}" in " ".join(base):
        assert run_here("platform", "build", "cxl", "--xpus", "8", "-o", tmp_path / "p.xml")[0] == 0
    assert_refused(run_here(*argv), flag, where)


def test_the_same_flags_apply_in_their_own_mode(tmp_path):
    status, _, err = run_here(*INFER, "--phase", "prefill", "--batch", "2", "--tp", "2", "--json")
    assert status == 0, err
    status, _, err = run_here("run", "--system", "leafspine", "--xpus", "16", "--hosts-per-leaf", "8", "--spines", "2",
                              "--workload", "allreduce", "--bytes", "1MiB", "--iterations", "1", "--json")  # fmt: skip
    assert status == 0, err
