"""experiments/validate_measured.py: its own logic, against a fake ``hcsim`` command.

The fake (written per test) records its arguments and prints the JSON ``hcsim run --json``
will print: tokens/s/GPU = 100 x GA with the dgx-h100 calibration and 25 x GA with the
ideal model, so every prediction, error and statistic below follows from the CSV by hand.
``--sequence 999`` makes it fail with a message, ``--sequence 777`` makes it hang.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPERIMENTS = os.path.join(ROOT, "experiments")
SCRIPT = os.path.join(EXPERIMENTS, "validate_measured.py")

FAKE = """
import json, sys, time
argv = sys.argv[1:]
with open(sys.argv[0] + ".calls", "a") as f:
    f.write(json.dumps(argv) + "\\n")
opt = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
if opt["--sequence"] == "999":
    print("hcsim: note: folding", file=sys.stderr)
    print("hcsim: error: model | does not fit in HBM", file=sys.stderr)
    sys.exit(2)
if opt["--sequence"] == "777":
    time.sleep(30)
ga = int(opt["--microbatches"])
per = 100 if opt["--calibration"] == "dgx-h100" else 25
print(json.dumps({"tokens_per_s_per_gpu": per * ga, "model_tflops_per_gpu": 2.0 * ga,
                  "breakdown": {"compute_s": 1.5, "exposed_tp_s": 0.25, "idle_s": 0.125},
                  "memory_stall_s": 0.0}))
"""

HEADER = "source,system,model,gpus,precision,gbs,mbs,seq,fsdp,tp,pp,cp,vp,ep,tokens_per_s_per_gpu,model_tflops_per_gpu"
ROWS = [
    "s,DGX-H100,LLAMA2-7B,8,FP8,128,1,4096,0,1,1,1,1,1,1000,1",  # DP 8, GA 16: 1600 (+60%), ideal 400 (-60%)
    "s,DGX-H100,LLAMA3.1-405B,1024,FP8-CS,512,1,8192,1,8,8,2,8,1,8000,1",  # DP 8, GA 64: 6400 (-20%), 1600 (-80%)
    "s,DGX-H100,GPT3-20B,64,BF16,100,2,2048,0,2,1,1,1,1,1,1",  # DP 32: 100 / (2 x 32) does not divide
    "s,DGX-H100,Nemotron-8B,64,FP8,256,4,4096,0,3,1,1,1,1,1,1",  # 64 / 3 does not divide
    "s,DGX-H100,GPT-OSS-120B,64,BF16,512,4,999,0,1,4,1,1,8,1,1",  # the fake fails
]


@pytest.fixture
def vm(monkeypatch):
    monkeypatch.syspath_prepend(EXPERIMENTS)
    import validate_measured

    return validate_measured


@pytest.fixture
def fake(tmp_path):
    path = tmp_path / "fake_hcsim.py"
    path.write_text(FAKE)
    return path


def _csv(tmp_path, rows=ROWS):
    path = tmp_path / "measured.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def _calls(fake):
    return [json.loads(line) for line in open(str(fake) + ".calls")]


def test_model_and_precision_mapping(vm):
    assert vm.preset_name("LLAMA3.1-405B") == "llama3-405b"
    assert vm.preset_name("GPT3-5B") == "gpt3-5b"
    assert vm.preset_name("Nemotron-8B") == "nemotron-8b"
    assert vm.preset_name("GPT-OSS-120B") == "gpt-oss-120b"
    # the spellings of other revisions of the published tables
    assert vm.preset_name("LLAMA3_8B") == "llama3-8b"
    assert vm.preset_name("LLAMA3.1_405B") == "llama3-405b"
    assert vm.preset_name("GPT OSS 120B") == "gpt-oss-120b"
    assert vm.preset_name("Qwen3_235B_a22B (tokendrop)") == "qwen3-235b-a22b"
    assert vm.preset_name("Mixtral-8x22B") == "mixtral-8x22b"
    from hcsim.workload.models import PRESETS

    for alias in vm.MODEL_ALIASES.values():
        assert alias in PRESETS  # every alias names a real preset
    with pytest.raises(vm.RowError, match="no hcsim preset 'llama9-1b'"):
        vm.preset_name("LLAMA9-1B", ["llama2-7b"])
    assert [vm.precision_name(p) for p in ("FP8", "FP8-CS", "BF16")] == ["fp8", "fp8", "bf16"]
    with pytest.raises(vm.RowError, match="precision 'INT4' is unknown"):
        vm.precision_name("INT4")


def test_dp_and_ga_arithmetic(vm, tmp_path):
    rows = vm.read_rows(str(_csv(tmp_path)))
    assert vm.data_parallel(rows[0]) == (8, 16)  # 8 / 1; 128 / (1 x 8)
    assert vm.data_parallel(rows[1]) == (8, 64)  # 1024 / (8 x 8 x 2); 512 / (1 x 8)
    with pytest.raises(vm.RowError, match=r"batch does not divide: GBS 100 / \(MBS 2 x DP 32\)"):
        vm.data_parallel(rows[2])
    with pytest.raises(vm.RowError, match="layout does not divide: 64 GPUs"):
        vm.data_parallel(rows[3])


def test_the_exact_command(vm, tmp_path):
    rows = vm.read_rows(str(_csv(tmp_path)))
    assert vm.command(["hcsim"], rows[1], "dgx-h100") == [
        "hcsim", "run", "--system", "dgx-h100", "--xpus", "1024", "--model", "llama3-405b", "--precision", "fp8",
        "--parallel", "tp=8,pp=8,cp=2,vp=8,ep=1", "--micro-batch", "1", "--microbatches", "64",
        "--sequence", "8192", "--zero", "3", "--fp8-recipe", "current", "--calibration", "dgx-h100", "--fast",
        "--json",
    ]  # fmt: skip
    assert "--zero" not in vm.command(["hcsim"], rows[0], "ideal")


def test_an_etp_column_is_passed_through(vm, tmp_path):
    path = tmp_path / "etp.csv"
    path.write_text(HEADER + ",etp\n" + "s,DGX-H100,Qwen3-235B-A22B,256,FP8,8192,1,4096,0,2,8,1,4,32,1,1,1\n"
                    + "s,DGX-H100,LLAMA2-7B,8,FP8,128,1,4096,0,1,1,1,1,1,1000,1,\n")  # fmt: skip
    qwen, llama = vm.read_rows(str(path))
    assert (qwen.etp, llama.etp) == (1, None)
    assert "tp=2,pp=8,cp=1,vp=4,ep=32,etp=1" in vm.command(["hcsim"], qwen, "dgx-h100")
    assert "tp=1,pp=1,cp=1,vp=1,ep=1" in vm.command(["hcsim"], llama, "dgx-h100")  # no column value: no etp
    assert vm.read_rows(str(_csv(tmp_path)))[0].etp is None  # the CSV without the column


def test_error_statistics(vm):
    assert vm.signed_error(1600, 1000) == pytest.approx(0.6)
    assert vm.error_stats([0.6, -0.2]) == pytest.approx((0.4, 0.6))
    assert vm.error_stats([-0.3, 0.1, 0.2]) == pytest.approx((0.2, 0.3))
    assert vm.error_stats([]) is None


def test_rows_option(vm):
    assert vm.parse_rows("1,3-4,3", 5) == [1, 3, 4]
    with pytest.raises(vm.RowError, match=r"row 6 does not exist \(valid: 1..5\)"):
        vm.parse_rows("5-6", 5)


def test_study_with_a_fake_hcsim(vm, fake, tmp_path, capsys):
    out = tmp_path / "validation.md"
    rc = vm.main([str(_csv(tmp_path)), "--hcsim", f"{sys.executable} {fake}", "--jobs", "2", "--out", str(out)])
    assert rc == 0
    text = out.read_text()
    # two predictions per runnable row (dgx-h100 and ideal); none for the rows that do not divide
    calls = _calls(fake)
    assert len(calls) == 6
    assert sorted(c[c.index("--calibration") + 1] for c in calls) == ["dgx-h100"] * 3 + ["ideal"] * 3
    table = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert "| dgx-h100 | 2 of 5 | 40.0% | 60.0% |" in text  # +60%, -20%
    assert "| ideal | 2 of 5 | 70.0% | 80.0% |" in text  # -60%, -80%
    assert "1,600 (32 TFLOP/s) | +60.0% |" in table["1"] and "| 400 (32 TFLOP/s) | -60.0% |" in table["1"]
    assert "6,400 (128 TFLOP/s) | -20.0% |" in table["2"] and "| 8 x 64 |" in table["2"]
    assert "FSDP" in table["2"] and "compute 1.5, tp 0.25, bubble/idle 0.125, memory 0 s" in table["2"]
    assert "not run: batch does not divide" in table["3"]
    assert "not run: layout does not divide" in table["4"]
    # the failure's last stderr line, its '|' escaped so the table keeps its columns
    assert "failed: exit 2: hcsim: error: model \\| does not fit in HBM" in table["5"]
    assert all(line.count(" | ") == table["row"].count(" | ") for k, line in table.items() if k.isdigit())
    assert "## Collectives and GEMMs" in text
    printed = capsys.readouterr().out
    assert "| dgx-h100 | 2 of 5 | 40.0% | 60.0% |" in printed and f"wrote {out}" in printed


def test_timeout_is_a_row_not_a_crash(vm, fake, tmp_path):
    rows = [ROWS[0].replace(",4096,", ",777,")]
    out = tmp_path / "v.md"
    argv = [str(_csv(tmp_path, rows)), "--hcsim", f"{sys.executable} {fake}", "--timeout", "0.5", "--out", str(out)]
    assert vm.main([*argv, "--rows", "1"]) == 0
    assert out.read_text().count("failed: timed out after 0.5 s") == 2


def test_missing_csv_is_one_line(tmp_path):
    p = subprocess.run([sys.executable, SCRIPT, str(tmp_path / "nope.csv")], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "Traceback" not in p.stderr
    assert "nope.csv does not exist" in p.stderr


def test_vendored_rows_all_build_a_command(vm):
    """Every published row maps to a preset and a precision, and its layout divides."""
    from hcsim.workload.models.spec import PRESETS

    rows = vm.read_rows(vm.DEFAULT_CSV)
    assert len(rows) == 16
    for r in rows:
        argv = vm.command(["hcsim"], r, "dgx-h100", list(PRESETS))
        assert argv[argv.index("--model") + 1] in PRESETS


def test_recipe_flags_follow_the_rows_source_and_model(vm):
    """Settings the CSV has no column for come from RECIPES by (source, model), each with its source cited."""
    rows = {r.index: r for r in vm.read_rows(vm.DEFAULT_CSV)}
    fa2 = ("--attention-backend", "flash")  # every NeMo 24.07 row: the launcher turned cuDNN attention off
    ub = ("--tp-comm-overlap",)  # the recipes with ub_tp_comm_overlap / CommOverlapConfig(tp_comm_overlap=True)
    assert vm.recipe_flags(rows[10]) == (
        *fa2,
        "--optimizer-dtype",
        "bf16",
        "--recompute",
        "selective",
    )  # Nemotron-340B, NeMo 24.07
    argv = vm.command(["hcsim"], rows[16], "dgx-h100")  # GPT-OSS-120B, Megatron-Bridge 25.11
    assert argv[argv.index("--recompute-modules") + 1] == "layernorm,moe_act"
    assert argv[-7:] == ["layernorm,moe_act", "--cross-entropy", "te", "--calibration", "dgx-h100", "--fast", "--json"]
    native, te, cs = ("--cross-entropy", "native"), ("--cross-entropy", "te"), ("--fp8-recipe", "current")
    expected = {i: fa2 for i in range(1, 13)}
    expected.update({i: (*fa2, *ub) for i in (2, 7, 8, 9, 12)})  # GPT3-20B, LLaMA2-70B, Nemotron-8B/22B, LLaMA3-70B
    expected.update({i: (*expected[i], "--hidden-dropout") for i in (1, 2, 3, 4)})  # NeMo 1's GPT-3: dropout 0.1
    expected.update({i: (*expected[i], *native) for i in (8, 9, 11, 12)})  # cross_entropy_loss_fusion: true
    expected[10] = (*fa2, "--optimizer-dtype", "bf16", "--recompute", "selective")
    expected[13] = ("--fp8-param-gather", "--recompute", "full", "--recompute-num-layers", "5", *te, *cs)
    expected[14] = expected[15] = ("--fp8-param-gather", *ub, *te, *cs)  # LLaMA3-70B, LLaMA3.1-405B FP8-CS
    expected[16] = ("--recompute-modules", "layernorm,moe_act", *te)
    assert {i: vm.recipe_flags(r) for i, r in rows.items()} == expected
    assert {rows[i].source for i in range(1, 13)} == {"nemo-24.07"}
    assert {rows[i].precision for i in (13, 14, 15)} == {"FP8-CS"}
    for _flags, why in [*vm.RECIPES.values(), *vm.PRECISION_RECIPES.values(), *vm.KERNEL_RECIPES.values()]:
        assert "@" in why  # file@commit
    for _flags, why in vm.SOURCE_RECIPES.values():
        assert "config.yaml" in why and "line" in why


def test_flags_that_pick_calibrated_tables_stay_out_of_the_ideal_command(vm):
    rows = {r.index: r for r in vm.read_rows(vm.DEFAULT_CSV)}
    calibrated, ideal = vm.command(["hcsim"], rows[10], "dgx-h100"), vm.command(["hcsim"], rows[10], "ideal")
    assert calibrated[calibrated.index("--attention-backend") + 1] == "flash"
    assert "--attention-backend" not in ideal and "flash" not in ideal
    assert ideal[ideal.index("--optimizer-dtype") + 1] == "bf16"  # a memory setting applies to both models
    for i in (1, 13):  # the stack's kernel choices too (GPT-3's dropout; FP8-CS's recipe and TE's loss)
        calibrated, ideal = vm.command(["hcsim"], rows[i], "dgx-h100"), vm.command(["hcsim"], rows[i], "ideal")
        kernels = {"--hidden-dropout", "--cross-entropy", "--fp8-recipe"}
        assert kernels & set(calibrated) and not kernels & set(ideal) and "current" not in ideal
    unknown = dataclasses.replace(rows[5], source="nemo-99.99")  # a release not listed keeps the defaults
    assert vm.recipe_flags(unknown) == ()


def test_nccl_section_is_the_calibration_checks(vm):
    pytest.importorskip("hcsim.calibration.checks")
    lines = vm._nccl_section()
    assert any("nccl-tests" in line for line in lines)
    assert not any(line.startswith("<!--") for line in lines)


def test_recipes_and_etp_follow_the_folded_spelling(vm):
    row = vm.Row(
        1, "megatron-bridge-25.11", "DGX-H100", "LLAMA3_70B", 64, "FP8-CS", 128, 1, 8192, 0, 4, 8, 1, 5, 1, 1.0
    )
    assert "--tp-comm-overlap" in vm.recipe_flags(row)  # the same recipe as "LLAMA3-70B"
    moe = dataclasses.replace(row, model="Qwen3_235B_a22B (tokendrop)", gpus=256, tp=2, pp=8, vp=4, ep=32)
    assert vm.layout_text(moe) == "tp=2,pp=8,cp=1,vp=4,ep=32,etp=1"  # Megatron-Bridge's MoE recipes: etp 1
    assert vm.layout_text(dataclasses.replace(moe, tp=1, gpus=128)) == "tp=1,pp=8,cp=1,vp=4,ep=32"
    assert vm.layout_text(dataclasses.replace(moe, source="nemo-24.07")) == "tp=2,pp=8,cp=1,vp=4,ep=32"
    assert vm.layout_text(dataclasses.replace(moe, etp=2)).endswith(",etp=2")  # a CSV column wins


# Rows of releases the vendored CSV does not have: (source, model as a table spells it, precision, gpus, tp, pp,
# cp, vp, ep, fsdp) -> (the recipe flags, the etp the layout gets). The layouts are the releases' H100 ones.
NEW_RELEASES = [
    (
        ("nemo-24.05", "LLAMA3-70B", "FP8", 64, 4, 4, 2, 5, 1, 0),
        (("--attention-backend", "flash", "--tp-comm-overlap"), None),
    ),
    (
        ("nemo-24.07", "Nemotron4-15B", "FP8", 64, 4, 1, 1, 1, 1, 0),
        (("--attention-backend", "flash", "--tp-comm-overlap", "--cross-entropy", "native"), None),
    ),
    (
        ("nemo-24.09", "LLAMA3.1-405B", "FP8", 576, 8, 9, 2, 7, 1, 0),
        (("--tp-comm-overlap", "--cross-entropy", "native"), None),
    ),
    (
        ("nemo-24.09", "Nemotron-340B", "FP8", 128, 8, 8, 1, 12, 1, 0),
        (("--optimizer-dtype", "bf16", "--recompute", "selective"), None),
    ),
    (("nemo-24.09", "GPT3-175B", "FP8", 512, 4, 8, 1, 6, 1, 0), (("--hidden-dropout",), None)),
    (("nemo-24.12", "Nemotron4-340B", "BF16", 128, 8, 8, 1, 12, 1, 0), (("--recompute", "selective"), None)),
    (
        ("nemo-24.12", "LLAMA3-70B", "FP8", 64, 4, 4, 2, 5, 1, 0),
        (("--tp-comm-overlap", "--cross-entropy", "native"), None),
    ),
    (
        ("nemo-25.02", "GPT3-175B", "FP8", 128, 4, 8, 1, 6, 1, 0),
        (("--fp8-param-gather", "--tp-comm-overlap", "--cross-entropy", "native"), None),
    ),
    (("nemo-25.02", "LLAMA3-8B", "BF16", 8, 1, 1, 2, 1, 1, 0), (("--cross-entropy", "native"), None)),
    (("nemo-25.02", "Mixtral-8x22B", "BF16", 256, 4, 4, 8, 14, 8, 0), (("--cross-entropy", "native"), 1)),
    (
        ("nemo-25.04", "Nemotron3-22B", "BF16", 64, 2, 4, 1, 10, 1, 0),
        (("--tp-comm-overlap", "--cross-entropy", "native"), None),
    ),
    (
        ("nemo-25.04", "DeepSeek-V3", "BF16", 1024, 2, 16, 1, 1, 64, 0),
        (("--recompute-modules", "mla_up_proj", "--cross-entropy", "te"), 1),
    ),
    (("nemo-25.07", "LLAMA3-8B", "FP8", 8, 1, 1, 1, 1, 1, 1), (("--fp8-param-gather", "--cross-entropy", "te"), None)),
    (
        ("nemo-25.07", "Qwen3-235B-A22B", "BF16", 256, 2, 8, 1, 4, 32, 0),
        (("--tp-comm-overlap", "--cross-entropy", "te"), 1),
    ),
    (
        ("nemo-25.09", "DeepSeekV3", "FP8", 1024, 2, 16, 1, 1, 64, 0),
        (("--fp8-param-gather", "--recompute-modules", "mla_up_proj,mlp", "--cross-entropy", "te"), 1),
    ),
    (
        ("nemo-25.09", "Mixtral-8x7B", "FP8", 64, 2, 4, 1, 8, 8, 0),
        (("--fp8-param-gather", "--cross-entropy", "te"), None),
    ),  # no etp: tp's
    (
        ("megatron-bridge-25.09", "LLAMA3_70B", "FP8-DS", 64, 4, 8, 1, 5, 1, 0),
        (("--fp8-param-gather", "--tp-comm-overlap", "--cross-entropy", "te"), None),
    ),
    (
        ("megatron-bridge-25.09", "DeepSeekV3", "BF16", 1024, 2, 8, 1, 4, 64, 0),
        (("--recompute-modules", "mla_up_proj,mlp", "--cross-entropy", "te"), 1),
    ),
    (
        ("megatron-bridge-25.11", "Qwen3_235B_a22B", "FP8-CS", 256, 2, 8, 1, 4, 32, 0),
        (("--fp8-param-gather", "--cross-entropy", "te", "--fp8-recipe", "current"), 1),
    ),
    (
        ("megatron-bridge-26.02", "LLAMA3.1_405B", "BF16", 1024, 8, 8, 2, 8, 1, 0),
        (("--tp-comm-overlap", "--cross-entropy", "te"), None),
    ),
    (
        ("megatron-bridge-26.02.01", "LLAMA3_8B", "FP8-CS", 8, 1, 1, 1, 1, 1, 0),
        (
            (
                "--fp8-param-gather",
                "--recompute",
                "full",
                "--recompute-num-layers",
                "5",
                "--cross-entropy",
                "te",
                "--fp8-recipe",
                "current",
            ),
            None,
        ),
    ),
    (
        ("megatron-bridge-26.04", "GPT OSS 120B", "BF16", 64, 1, 4, 1, 1, 8, 0),
        (("--recompute-modules", "layernorm,moe_act", "--cross-entropy", "te"), None),
    ),
    (
        ("megatron-bridge-26.04", "DeepSeekV3", "FP8-SC", 1024, 2, 8, 1, 2, 64, 0),
        (("--recompute-modules", "mla_up_proj,mlp", "--cross-entropy", "te"), 1),
    ),
    (
        ("megatron-bridge-26.06", "Qwen3_30B_a3B", "FP8-CS", 16, 1, 2, 1, 12, 8, 0),
        (("--fp8-param-gather", "--tp-comm-overlap", "--cross-entropy", "te", "--fp8-recipe", "current"), None),
    ),
    (
        ("megatron-bridge-26.06", "Qwen3_235B_a22B", "BF16", 256, 2, 8, 1, 4, 32, 0),
        (("--cross-entropy", "te"), 1),
    ),  # H100: overlap off
]


def _row_line(source, model, precision, gpus, tp, pp, cp, vp, ep, fsdp):
    return f"{source},DGX-H100,{model},{gpus},{precision},{gpus * 4},1,4096,{fsdp},{tp},{pp},{cp},{vp},{ep},,"


def test_new_releases_give_the_command_their_recipe_flags(vm, tmp_path):
    """A row of each newly covered release gets its recipe's flags (and etp) in the exact command."""
    from hcsim.workload.models import PRESETS

    rows = vm.read_rows(str(_csv(tmp_path, [_row_line(*spec) for spec, _ in NEW_RELEASES])))
    for row, (spec, (flags, etp)) in zip(rows, NEW_RELEASES, strict=True):
        argv = vm.command(["hcsim"], row, "dgx-h100", list(PRESETS))
        tail = argv[argv.index("--sequence") + 2 :]
        if row.fsdp:
            assert tail[:2] == ["--zero", "3"]
            tail = tail[2:]
        assert tuple(tail[:-4]) == flags, spec
        assert tail[-4:] == ["--calibration", "dgx-h100", "--fast", "--json"]
        layout = argv[argv.index("--parallel") + 1]
        assert layout.endswith(f",etp={etp}") if etp is not None else "etp" not in layout, spec


def test_every_recipe_entry_cites_a_file_at_a_commit(vm):
    import re

    entries = [*vm.RECIPES.values(), *vm.PRECISION_RECIPES.values(), *vm.SOURCE_RECIPES.values()]
    entries += [((f"etp={etp}",), why) for etp, why in vm.SOURCE_ETP.values()]
    assert len(entries) > 100
    for flags, why in entries:
        assert flags, why
        assert re.search(r"[\w./-]+\.(py|yaml|csv)(@| [^;]*@)[0-9a-f]{8}", why), why  # path@commit
        assert re.search(r"\bline", why), why


def test_every_recipe_flag_is_one_hcsim_run_accepts(vm):
    """Each entry's flags parse with hcsim's own ``run`` parser, and recomputed modules are ones it models."""
    from hcsim.cli.main import make_parser
    from hcsim.workload.parallel.costs import RECOMPUTE_MODULES

    parser = make_parser()
    base = ["run", "--system", "dgx-h100", "--model", "llama3-8b", "--precision", "fp8", "--calibration", "dgx-h100"]
    tables = [*vm.RECIPES.values(), *vm.PRECISION_RECIPES.values(), *vm.SOURCE_RECIPES.values()]
    for flags, _why in tables:
        parser.parse_args([*base, *flags])
        if "--recompute-modules" in flags:
            modules = flags[flags.index("--recompute-modules") + 1].split(",")
            assert set(modules) <= set(RECOMPUTE_MODULES), modules


def test_unknown_sources_and_models_get_no_recipe_flags(vm, tmp_path):
    from hcsim.workload.models import PRESETS

    for source in ("nemo-99.99", "megatron-bridge-0.0", "", "nemo-25.1"):
        for model in PRESETS:
            row = vm.Row(1, source, "DGX-H100", model, 64, "FP8-CS", 64, 1, 4096, 0, 2, 1, 1, 1, 8, None)
            assert vm.recipe_flags(row) == ("--fp8-recipe", "current")  # what the column itself names
            assert vm.recipe_flags(dataclasses.replace(row, precision="FP8")) == ()
            assert vm.layout_text(row) == "tp=2,pp=1,cp=1,vp=1,ep=8"
    # a listed source with a model it has no recipe for: only the release-wide (precision, loss) flags
    row = vm.Row(1, "nemo-25.04", "DGX-H100", "LLAMA2-7B", 8, "FP8", 64, 1, 4096, 0, 1, 1, 1, 1, 1, None)
    assert vm.recipe_flags(row) == ("--fp8-param-gather", "--cross-entropy", "native")
    assert vm.recipe_flags(dataclasses.replace(row, precision="BF16")) == ("--cross-entropy", "native")


@pytest.mark.slow  # two real hcsim runs, ~12 s
def test_a_few_new_commands_pass_hcsim_argument_checks(vm, tmp_path):
    """One dense and one MoE command of the new releases, run for real with a tiny batch: hcsim gets past its
    argument and layout checks (exit 0 with a JSON); the throughput itself is not looked at."""
    lines = [
        "nemo-25.07,DGX-H100,Nemotron4-15B,16,FP8,16,1,512,0,2,1,1,1,1,,",  # dense: tp overlap + fp8 gather
        "megatron-bridge-25.09,DGX-H100,Qwen3_30B_a3B,16,FP8-CS,32,1,256,0,1,2,1,2,8,,",  # MoE, tp overlap at tp 1
    ]
    for row in vm.read_rows(str(_csv(tmp_path, lines))):
        argv = vm.command([sys.executable, "-m", "hcsim.cli"], row, "dgx-h100")
        out = subprocess.run(argv, capture_output=True, text=True, timeout=240, cwd=ROOT)
        assert out.returncode == 0, out.stderr[-2000:]
        assert json.loads(out.stdout)["tokens_per_s_per_gpu"] > 0


def test_the_report_lists_the_new_rows_recipe_settings_with_their_sources(vm, tmp_path):
    lines = [
        "nemo-25.07,DGX-H100,Qwen3-235B-A22B,256,BF16,2048,1,4096,0,2,8,1,4,32,,",
        "megatron-bridge-26.02,DGX-H100,DeepSeekV3,1024,FP8-CS,8192,1,4096,0,2,8,1,4,64,,",
    ]
    rows = vm.read_rows(str(_csv(tmp_path, lines)))
    used = dict(vm.recipes_used(rows))
    assert used[("nemo-25.07", "qwen3-235b-a22b")][0] == ("--tp-comm-overlap",)
    assert used[("nemo-25.07", "qwen3-235b-a22b, ep > 1")][0] == ("etp=1",)
    assert used[("megatron-bridge-26.02", "deepseek-v3")][0] == ("--recompute-modules", "mla_up_proj,mlp")
    assert used[("megatron-bridge-26.02", "fp8-cs")][0] == ("--fp8-param-gather",)
    assert used[("megatron-bridge-26.02", "ep > 1")][0] == ("etp=1",)
    text = vm.render(rows, {}, ["dgx-h100", "ideal"], "x.csv", nccl=[])
    assert "model_configs_h100.csv@2381f42f (v2.4.0) line 48" in text  # the Qwen3-235B row's etp
    assert "deepseek_workload_base_configs.py@21b02e0c (v0.3.0) line 128" in text
