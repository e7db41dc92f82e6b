"""Predict published DGX-H100 training throughput with hcsim; write docs/results/validation.md.

Every row of the measured CSV (default: the vendored copy in experiments/data/measured/;
columns and sources in its README) runs as its own subprocess, twice: with the machine's
calibration (``--calibration dgx-h100``) and with the ideal model (``--calibration ideal``):

    python -m hcsim.cli run --system dgx-h100 --xpus G --model M --precision P
        --parallel tp=T,pp=P,cp=C,vp=V,ep=E --micro-batch MBS --microbatches GA --sequence SEQ
        [--zero 3 when fsdp=1] [the row's recipe flags, RECIPES] --calibration dgx-h100 --fast --json

with DP = G / (T x P x C) and GA = GBS / (MBS x DP); a row where either does not divide is
reported as such. The JSON's ``tokens_per_s_per_gpu`` is compared with the row's; its
``model_tflops_per_gpu`` and breakdown (``breakdown`` or top-level ``compute_s``,
``exposed_{tp,pp,dp,cp,ep}_s``, ``idle_s``, ``memory_stall_s``) are shown. THE RULE: the
measured throughput columns are read only to compute the error, never to set a parameter.
A row that fails (error, timeout, no JSON) shows its one-line reason in the table.

    python experiments/validate_measured.py                      # every row, one at a time
    python experiments/validate_measured.py --rows 1,5-7 --jobs 2 --out /tmp/v.md
    python experiments/validate_measured.py other.csv --hcsim "python fake_hcsim.py"
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from recipes_measured import FP8_CS_RECIPE, KERNEL_RECIPES, PRECISION_RECIPES, RECIPES, SOURCE_ETP, SOURCE_RECIPES

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CSV = os.path.join(REPO, "experiments", "data", "measured", "dgx-h100-training.csv")
DEFAULT_OUT = os.path.join(REPO, "docs", "results", "validation.md")
IDEAL = "ideal"

#: The CSV's model spellings whose hcsim preset is not simply the lower-cased name.
MODEL_ALIASES = {
    "llama3.1-8b": "llama3-8b",  # LLaMA 3.1 keeps LLaMA 3's shapes (HF configs); only RoPE scaling differs
    "llama3.1-70b": "llama3-70b",
    "llama3.1-405b": "llama3-405b",
    "nemotron4-15b": "nemotron-15b",
    "nemotron4-340b": "nemotron-340b",
    "nemotron3-8b": "nemotron-8b",  # NeMo 2's recipe names (nemotron3_8b, nemotron3_22b) of the same models
    "nemotron3-22b": "nemotron-22b",
    "deepseekv3": "deepseek-v3",  # Megatron-Bridge's table spells it DeepSeekV3
    "qwen3-30b-a3b": "qwen3-30b-a3b",
    "qwen3-235b-a22b": "qwen3-235b-a22b",
}
#: The CSV's precision column to hcsim's --precision (FP8-CS: FP8 with current scaling; still FP8 GEMMs).
#: FP8-SC: Megatron-Bridge's FP8 with sub-channel (blockwise) scaling, still FP8 GEMMs.
PRECISIONS = {
    "fp8": "fp8",
    "fp8-cs": "fp8",
    "fp8-ds": "fp8",
    "fp8-sc": "fp8",
    "bf16": "bf16",
    "fp16": "fp16",
    "fp32": "fp32",
}
#: Recipe flags that choose among a calibration's tables or kernels, with the values each takes: left out of the
#: ideal model's command.
CALIBRATED_FLAGS = {"--attention-backend": 1, "--cross-entropy": 1, "--fp8-recipe": 1, "--hidden-dropout": 0}
#: Columns a row needs (the throughput ones are read into ``Row.measured`` only).
COLUMNS = ("model", "gpus", "precision", "gbs", "mbs", "seq", "fsdp", "tp", "pp", "cp", "vp", "ep")
#: Breakdown fields of the JSON, as they are labelled in the table (seconds per iteration).
BREAKDOWN = (
    ("compute_s", "compute"),
    ("exposed_tp_s", "tp"),
    ("exposed_pp_s", "pp"),
    ("exposed_dp_s", "dp"),
    ("exposed_cp_s", "cp"),
    ("exposed_ep_s", "ep"),
    ("idle_s", "bubble/idle"),
    ("memory_stall_s", "memory"),
)


class RowError(Exception):
    """A row that cannot be predicted: its one-line reason goes in the table."""


@dataclass(frozen=True)
class Row:
    """One published configuration; ``measured`` (tokens/s/GPU) is used for the error only."""

    index: int  # 1-based, in the CSV's order
    source: str
    system: str
    model: str
    gpus: int
    precision: str
    gbs: int
    mbs: int
    seq: int
    fsdp: int
    tp: int
    pp: int
    cp: int
    vp: int
    ep: int
    measured: float | None
    etp: int | None = None  # Megatron-Core's expert_tensor_parallel_size, if the CSV has the column (default tp)


@dataclass
class Outcome:
    """One subprocess run: its numbers, or the one-line reason it has none."""

    tokens: float | None = None
    tflops: float | None = None
    breakdown: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0
    failure: str | None = None


def read_rows(path: str) -> list[Row]:
    """The CSV's rows (a malformed row still becomes a Row if its layout columns are integers)."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise RowError(f"{path}: missing column(s) {', '.join(missing)} (valid: {', '.join(COLUMNS)}, ...)")
        rows = []
        for i, r in enumerate(reader, 1):
            try:
                ints = {c: int(r[c]) for c in COLUMNS if c not in ("model", "precision")}
            except (TypeError, ValueError) as e:
                raise RowError(f"{path}: row {i}: a layout column is not an integer ({e})") from None
            try:
                etp = int(r["etp"]) if (r.get("etp") or "").strip() else None
            except ValueError:
                raise RowError(f"{path}: row {i}: etp is not an integer") from None
            try:
                measured = float(r.get("tokens_per_s_per_gpu") or "nan")
            except ValueError:
                raise RowError(f"{path}: row {i}: tokens_per_s_per_gpu is not a number") from None
            rows.append(
                Row(
                    index=i,
                    source=r.get("source", ""),
                    system=r.get("system", "DGX-H100"),
                    model=r["model"],
                    precision=r["precision"],
                    measured=None if measured != measured else measured,  # NaN: not given
                    etp=etp,
                    **ints,
                )
            )
    return rows


def model_key(model: str) -> str:
    """The CSV's model spelling folded (case, ``_`` and spaces to ``-``, a trailing parenthesised note dropped):
    the key of :data:`RECIPES` and, through :data:`MODEL_ALIASES`, of the presets."""
    key = re.sub(r"\s*\([^)]*\)\s*$", "", model.strip()).lower()
    return re.sub(r"[\s_]+", "-", key)


def preset_name(model: str, presets: Sequence[str] | None = None) -> str:
    """The hcsim preset of the CSV's model spelling (LLAMA3.1-405B -> llama3-405b, GPT3-5B -> gpt3-5b).

    The published tables spell one model several ways (``LLAMA3_8B``, ``GPT OSS 120B``, ``Qwen3_30B_a3B
    (tokendrop)``): case, ``_`` and spaces are folded to ``-`` and a trailing parenthesised note dropped.

    >>> preset_name("Qwen3_30B_a3B (tokendrop)"), preset_name("GPT OSS 120B"), preset_name("LLAMA3.1_70B")
    ('qwen3-30b-a3b', 'gpt-oss-120b', 'llama3-70b')
    """
    key = model_key(model)
    key = MODEL_ALIASES.get(key, key)
    if presets is not None and key not in presets:
        raise RowError(f"model {model!r} has no hcsim preset {key!r} (valid: {', '.join(presets)})")
    return key


def precision_name(precision: str) -> str:
    """hcsim's --precision of the CSV's precision column (FP8 and FP8-CS -> fp8, BF16 -> bf16)."""
    try:
        return PRECISIONS[precision.strip().lower()]
    except KeyError:
        raise RowError(f"precision {precision!r} is unknown (valid: {', '.join(PRECISIONS)})") from None


def machine(system: str) -> str:
    """The --system and --calibration name of the CSV's system column (DGX-H100 -> dgx-h100)."""
    return system.strip().lower()


def data_parallel(row: Row) -> tuple[int, int]:
    """``(DP, GA)``: DP = G / (TP x PP x CP), GA = GBS / (MBS x DP); RowError if either does not divide."""
    per_replica = row.tp * row.pp * row.cp
    if per_replica < 1 or row.gpus % per_replica:
        raise RowError(f"layout does not divide: {row.gpus} GPUs / (tp {row.tp} x pp {row.pp} x cp {row.cp})")
    dp = row.gpus // per_replica
    if row.mbs < 1 or row.gbs % (row.mbs * dp):
        raise RowError(f"batch does not divide: GBS {row.gbs} / (MBS {row.mbs} x DP {dp})")
    return dp, row.gbs // (row.mbs * dp)


def layout_text(row: Row) -> str:
    """The --parallel value: every dimension, 1s included; ``etp`` when the CSV gives it, or when the row's
    source's recipe sets it for expert-parallel layouts with tp > 1 (:data:`SOURCE_ETP`, by (source, model) or
    source; with tp 1 it is tp anyway)."""
    etp_value = row.etp if row.etp is not None else _recipe_etp(row)
    etp = f",etp={etp_value}" if etp_value is not None else ""
    return f"tp={row.tp},pp={row.pp},cp={row.cp},vp={row.vp},ep={row.ep}{etp}"


def command(hcsim: Sequence[str], row: Row, calibration: str, presets: Sequence[str] | None = None) -> list[str]:
    """The exact ``hcsim run`` arguments of ``row`` under ``calibration`` (RowError if it cannot be built)."""
    _, ga = data_parallel(row)
    argv = [*hcsim, "run", "--system", machine(row.system), "--xpus", str(row.gpus)]
    argv += ["--model", preset_name(row.model, presets), "--precision", precision_name(row.precision)]
    argv += ["--parallel", layout_text(row), "--micro-batch", str(row.mbs), "--microbatches", str(ga)]
    argv += ["--sequence", str(row.seq)]
    if row.fsdp:
        argv += ["--zero", "3"]
    flags = list(recipe_flags(row))
    if calibration == IDEAL:
        flags = _without_calibrated(flags)
    argv += flags
    return argv + ["--calibration", calibration, "--fast", "--json"]


def _without_calibrated(flags: list[str]) -> list[str]:
    kept, i = [], 0
    while i < len(flags):
        if flags[i] in CALIBRATED_FLAGS:
            i += 1 + CALIBRATED_FLAGS[flags[i]]
        else:
            kept.append(flags[i])
            i += 1
    return kept


def recipe_model_keys(model: str) -> tuple[str, ...]:
    """The model keys of the recipe tables a CSV spelling is looked up by: its folded spelling, then (if it
    differs) its preset name (``Nemotron4-340B`` -> ``nemotron4-340b``, ``nemotron-340b``)."""
    key = model_key(model)
    preset = MODEL_ALIASES.get(key, key)
    return (key,) if preset == key else (key, preset)


def _lookup(table: dict, source: str, model: str, *rest: str) -> tuple | None:
    for key in recipe_model_keys(model):
        if (source, key, *rest) in table:
            return table[(source, key, *rest)]
    return None


def _recipe_etp(row: Row) -> int | None:
    if not row.ep > 1 < row.tp:
        return None
    source = row.source.strip().lower()
    entry = _lookup(SOURCE_ETP, source, row.model) or SOURCE_ETP.get((source,))
    return entry[0] if entry else None


def recipe_flags(row: Row) -> tuple[str, ...]:
    """The row's published recipe settings beyond the CSV's columns (:data:`RECIPES`), as flags."""
    source, precision = row.source.strip().lower(), row.precision.strip().lower()
    by_precision = PRECISION_RECIPES.get((source, precision))
    by_model = _lookup(RECIPES, source, row.model)
    by_both = _lookup(RECIPES, source, row.model, precision)
    by_source = SOURCE_RECIPES.get(source)
    flags = (by_source[0] if by_source else ()) + (by_precision[0] if by_precision else ())
    flags += (by_model[0] if by_model else ()) + (by_both[0] if by_both else ())
    kernels = _kernel_entry(row)
    flags += kernels[1][0] if kernels else ()
    return flags + (FP8_CS_RECIPE[0] if precision == "fp8-cs" else ())


def _kernel_entry(row: Row) -> tuple[tuple[str, ...], tuple[tuple[str, ...], str]] | None:
    """The row's :data:`KERNEL_RECIPES` key and entry: by (source, model), else by (source,)."""
    source = row.source.strip().lower()
    for model in recipe_model_keys(row.model):
        if (source, model) in KERNEL_RECIPES:
            return (source, model), KERNEL_RECIPES[(source, model)]
    return ((source,), KERNEL_RECIPES[(source,)]) if (source,) in KERNEL_RECIPES else None


def recipes_used(rows: Sequence[Row]) -> list[tuple[tuple[str, str], tuple[tuple[str, ...], str]]]:
    """The recipe entries ``rows`` use, as ((source, what it applies to), (flags, why)), in table order."""
    keys = set()
    for r in rows:
        source, precision = r.source.strip().lower(), r.precision.strip().lower()
        for model in recipe_model_keys(r.model):
            keys |= {(source, model), (source, model, precision)}
    used = [((key[0], " ".join(key[1:])), RECIPES[key]) for key in RECIPES if key in keys]
    precisions = {(r.source.strip().lower(), r.precision.strip().lower()) for r in rows}
    used += [(key, PRECISION_RECIPES[key]) for key in PRECISION_RECIPES if key in precisions]
    sources = {r.source.strip().lower() for r in rows}
    used += [((key, "every row"), SOURCE_RECIPES[key]) for key in SOURCE_RECIPES if key in sources]
    kernel_keys = {entry[0] for entry in map(_kernel_entry, rows) if entry is not None}
    used += [((key[0], " ".join(key[1:]) or "every row"), KERNEL_RECIPES[key]) for key in KERNEL_RECIPES
             if key in kernel_keys]  # fmt: skip
    if any(r.precision.strip().lower() == "fp8-cs" for r in rows):
        used.append((("every source", "fp8-cs"), FP8_CS_RECIPE))
    moe = [r for r in rows if r.ep > 1 < r.tp and r.etp is None]
    moe_keys = {(r.source.strip().lower(), m) for r in moe for m in recipe_model_keys(r.model)}
    moe_keys |= {(r.source.strip().lower(),) for r in moe}
    for key, (etp, why) in SOURCE_ETP.items():
        if key in moe_keys:
            used.append(
                ((key[0], " ".join(key[1:]) + (", " if len(key) > 1 else "") + "ep > 1"), ((f"etp={etp}",), why))
            )
    return used


def _one_line(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[-1] if lines else "no output"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def parse_output(stdout: str) -> Outcome:
    """The numbers of the JSON ``hcsim run --json`` printed (a failure if there is none)."""
    try:
        data = json.loads(stdout)
    except ValueError:
        return Outcome(failure=f"no JSON in the output: {_one_line(stdout)}")
    if not isinstance(data, dict) or not isinstance(data.get("tokens_per_s_per_gpu"), (int, float)):
        return Outcome(failure="the JSON has no tokens_per_s_per_gpu")
    nested = data.get("breakdown") if isinstance(data.get("breakdown"), dict) else {}
    where = {}
    for key, _ in BREAKDOWN:
        value = nested.get(key, data.get(key))
        if isinstance(value, (int, float)):
            where[key] = float(value)
    tflops = data.get("model_tflops_per_gpu")
    return Outcome(
        tokens=float(data["tokens_per_s_per_gpu"]),
        tflops=float(tflops) if isinstance(tflops, (int, float)) else None,
        breakdown=where,
    )


def predict(argv: list[str], timeout: float, cwd: str = REPO) -> Outcome:
    """Run one prediction; a failure (exit code, timeout, bad JSON) becomes a one-line reason."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return Outcome(wall_s=time.perf_counter() - t0, failure=f"timed out after {timeout:g} s")
    except OSError as e:
        return Outcome(wall_s=time.perf_counter() - t0, failure=f"cannot run {argv[0]}: {e}")
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        return Outcome(wall_s=wall, failure=f"exit {p.returncode}: {_one_line(p.stderr or p.stdout)}")
    out = parse_output(p.stdout)
    out.wall_s = wall
    return out


def signed_error(predicted: float, measured: float) -> float:
    """predicted / measured - 1 (positive: hcsim predicts more throughput than was measured)."""
    return predicted / measured - 1.0


def error_stats(errors: Sequence[float]) -> tuple[float, float] | None:
    """(median, max) of |error|, or None without any."""
    if not errors:
        return None
    a = sorted(abs(e) for e in errors)
    n = len(a)
    median = a[n // 2] if n % 2 else (a[n // 2 - 1] + a[n // 2]) / 2
    return median, a[-1]


def parse_rows(text: str, count: int) -> list[int]:
    """``--rows 1,5-7`` as 1-based indexes (RowError naming an index outside 1..count)."""
    chosen: list[int] = []
    for item in text.split(","):
        lo, sep, hi = item.strip().partition("-")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise RowError(f"--rows item {item.strip()!r} is invalid (valid: N or N-M, 1-based)") from None
        for i in range(first, last + 1):
            if not 1 <= i <= count:
                raise RowError(f"--rows: row {i} does not exist (valid: 1..{count})")
            if i not in chosen:
                chosen.append(i)
    if not chosen:
        raise RowError(f"--rows {text!r} chooses no row (valid: N or N-M, 1-based)")
    return chosen


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _breakdown_text(where: dict[str, float]) -> str:
    return ", ".join(f"{label} {where[key]:.3g}" for key, label in BREAKDOWN if key in where) + (" s" if where else "")


def _nccl_section() -> list[str]:
    """The calibration's check tables (nccl-tests and GEMM), as hcsim.calibration.checks renders them."""
    try:
        from hcsim.calibration.checks import markdown
    except ImportError as e:
        return [f"Not available in this tree (hcsim.calibration.checks: {e})."]
    try:
        text = markdown()
    except Exception as e:  # noqa: BLE001 - one line in the report, not a crash of the study
        return [f"hcsim.calibration.checks.markdown() failed: {type(e).__name__}: {e}"]
    return [line for line in text.splitlines() if not line.startswith("<!--")]


def row_error(row: Row, outcome: Outcome | RowError | None) -> float | None:
    """The signed error of a row's prediction, None if it has none."""
    if isinstance(outcome, Outcome) and outcome.tokens is not None and row.measured:
        return signed_error(outcome.tokens, row.measured)
    return None


def summary_lines(
    rows: Sequence[Row], outcomes: dict[tuple[int, str], Outcome | RowError], calibrations: Sequence[str]
) -> list[str]:
    """One markdown row per calibration: rows predicted, median and max |error|."""
    lines = []
    for cal in calibrations:
        errors = [e for r in rows if (e := row_error(r, outcomes.get((r.index, cal)))) is not None]
        stats = error_stats(errors)
        text = f"{stats[0]:.1%} | {stats[1]:.1%}" if stats else "- | -"
        lines.append(f"| {cal} | {len(errors)} of {len(rows)} | {text} |")
    return lines


def render(
    rows: Sequence[Row],
    outcomes: dict[tuple[int, str], Outcome | RowError],
    calibrations: Sequence[str],
    csv_path: str,
    nccl: Sequence[str] | None = None,
) -> str:
    """docs/results/validation.md: the summary per calibration, the row table, the nccl-tests section."""
    shown_csv = os.path.relpath(csv_path, REPO) if os.path.isabs(csv_path) else csv_path

    def error_of(row: Row, cal: str) -> float | None:
        return row_error(row, outcomes.get((row.index, cal)))

    lines = [
        "# Validation: hcsim against published DGX-H100 training throughput",
        "",
        f"<!-- generated by `python experiments/validate_measured.py` from {shown_csv}; do not edit -->",
        "",
        f"Rows: {shown_csv} (sources in its README). Each prediction is one run of",
        "`hcsim run --system dgx-h100 --xpus G --model M --precision P --parallel tp=T,pp=P,cp=C,vp=V,ep=E "
        "--micro-batch MBS --microbatches GA --sequence SEQ [--zero 3] [recipe flags] --calibration C --fast --json`, "
        "DP = G / (T x P x C), GA = GBS / (MBS x DP). Error = predicted / measured - 1. The measured "
        "throughput is used for the error only; nothing was fitted to it.",
        "",
        "## Summary",
        "",
        "| calibration | rows predicted | median abs(error) | max abs(error) |",
        "|---|---|---|---|",
    ]
    lines += summary_lines(rows, outcomes, calibrations)
    head = ["row", "model", "GPUs", "precision", "layout", "DP x GA"]
    for cal in calibrations:
        head += [f"predicted ({cal})", f"error ({cal})", f"wall ({cal})"]
    head += ["measured", f"breakdown ({calibrations[0]}, s/iteration)"]
    lines += ["", "## Rows", "", "tokens/s/GPU; wall: seconds the prediction took.", ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        fsdp = ", FSDP" if r.fsdp else ""
        recipe = " ".join(recipe_flags(r))
        layout = f"{layout_text(r)}, mbs={r.mbs}, seq={r.seq}{fsdp}" + (f", {recipe}" if recipe else "")
        cells = [str(r.index), r.model, str(r.gpus), r.precision, layout]
        try:
            dp, ga = data_parallel(r)
            cells.append(f"{dp} x {ga}")
        except RowError:
            cells.append("-")
        for cal in calibrations:
            o = outcomes.get((r.index, cal))
            if isinstance(o, RowError):
                cells += [f"not run: {o}", "-", "-"]
            elif o is None:
                cells += ["not run", "-", "-"]
            elif o.failure is not None:
                cells += [f"failed: {o.failure}", "-", f"{o.wall_s:.1f}"]
            else:
                e = error_of(r, cal)
                tf = f" ({o.tflops:.0f} TFLOP/s)" if o.tflops is not None else ""
                cells += [f"{o.tokens:,.0f}{tf}", f"{e:+.1%}" if e is not None else "-", f"{o.wall_s:.1f}"]
        cells.append(f"{r.measured:,.0f}" if r.measured else "-")
        first = outcomes.get((r.index, calibrations[0]))
        cells.append(_breakdown_text(first.breakdown) if isinstance(first, Outcome) else "")
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    used = recipes_used(rows)
    if used:
        lines += [
            "",
            "Recipe settings beyond the CSV's columns (flags added to the rows' commands; flags that "
            f"choose a calibration's tables, {', '.join(CALIBRATED_FLAGS)}, only to the calibrated ones):",
            "",
        ]
        lines += [f"* {what} ({source}): `{' '.join(flags)}`: {why}." for (source, what), (flags, why) in used]
    lines += [
        "",
        "How the seed studies' conclusions move under calibration (Fig. 8, Table 6): "
        "[calibrated-seed-studies.md](calibrated-seed-studies.md).",
    ]
    lines += ["", "## Collectives and GEMMs: the calibration's check tables", ""]
    lines += list(nccl if nccl is not None else _nccl_section())
    return "\n".join(lines) + "\n"


def run_all(
    rows: Sequence[Row],
    hcsim: Sequence[str],
    jobs: int,
    timeout: float,
    presets: Sequence[str] | None,
    log: Callable[[str], None] = print,
) -> tuple[dict[tuple[int, str], Outcome | RowError], list[str]]:
    """Each row under its machine's calibration and the ideal model, ``jobs`` subprocesses at a time."""
    calibrations = sorted({machine(r.system) for r in rows}) + [IDEAL]
    outcomes: dict[tuple[int, str], Outcome | RowError] = {}
    tasks = []
    for r in rows:
        for cal in (machine(r.system), IDEAL):
            try:
                tasks.append((r, cal, command(hcsim, r, cal, presets)))
            except RowError as e:
                outcomes[(r.index, cal)] = e
                log(f"row {r.index} {cal}: not run: {e}")

    def one(task: tuple[Row, str, list[str]]) -> None:
        r, cal, argv = task
        o = outcomes[(r.index, cal)] = predict(argv, timeout)
        if o.failure is not None:
            log(f"row {r.index} {r.model} {cal}: failed: {o.failure} ({o.wall_s:.1f} s)")
        else:
            e = f" {signed_error(o.tokens, r.measured):+.1%}" if r.measured and o.tokens is not None else ""
            log(f"row {r.index} {r.model} {cal}: {o.tokens:,.0f} tokens/s/GPU{e} ({o.wall_s:.1f} s)")

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, tasks))
    return outcomes, calibrations


def _presets() -> list[str] | None:
    try:
        from hcsim.workload.models.spec import PRESETS
    except ImportError:
        return None
    return list(PRESETS)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv", nargs="?", default=DEFAULT_CSV, help="measured CSV (default: the vendored DGX-H100 rows)")
    p.add_argument("--rows", help="a subset, 1-based as in the table: e.g. 1,5-7 (default: every row)")
    p.add_argument("--jobs", type=int, default=1, help="predictions run at once (default 1)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per prediction (default 600)")
    p.add_argument("--out", default=DEFAULT_OUT, help="markdown to write (default docs/results/validation.md)")
    p.add_argument("--hcsim", default=f"{shlex.quote(sys.executable)} -m hcsim.cli", help="the hcsim command")
    args = p.parse_args(argv)
    name = os.path.basename(sys.argv[0]) if argv is None else "validate_measured.py"
    try:
        if not os.path.isfile(args.csv):
            raise RowError(f"measured CSV {args.csv} does not exist (valid: a CSV with columns {', '.join(COLUMNS)})")
        if args.jobs < 1 or args.timeout <= 0:
            raise RowError("--jobs and --timeout must be positive")
        rows = read_rows(args.csv)
        if args.rows:
            chosen = parse_rows(args.rows, len(rows))
            rows = [r for r in rows if r.index in chosen]
    except RowError as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return 2
    outcomes, calibrations = run_all(rows, shlex.split(args.hcsim), args.jobs, args.timeout, _presets())
    text = render(rows, outcomes, calibrations, args.csv)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print("| calibration | rows predicted | median abs(error) | max abs(error) |")
    print("\n".join(summary_lines(rows, outcomes, calibrations)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
