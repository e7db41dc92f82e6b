"""``hcsim run --model M`` for training: its workload factory, its throughput, and the steady-micro-batch run.

:func:`training_workload` turns the parsed flags into a
:class:`~hcsim.workload.parallel.factory.TrainingWorkload` (checked in one line before
anything is built); :func:`throughput` reads tokens/s/GPU and model TFLOP/s/GPU off a
run's report; :func:`steady_run` runs a calibrated ``--fast`` iteration as two short
ones and extrapolates the steady pipeline periods between them
(:mod:`hcsim.fast.microbatches`).

Invariant: the throughput counts the micro-batches the user asked for, whichever runs
stood for them; a steady run restores the factory's options however it ends.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hcsim.analysis.breakdown import steady_breakdown
from hcsim.calibration import Calibration
from hcsim.collectives.algorithms.nccl_rings import calibrated_name
from hcsim.engine import report
from hcsim.errors import HcsimError
from hcsim.fast.microbatches import SteadyPlan, extrapolate, steady_plan
from hcsim.platform.dgx import DGX_SYSTEMS
from hcsim.simgrid_runtime import start_isolated
from hcsim.workload.models.flops import model_flops_per_token
from hcsim.workload.models.spec import load_model
from hcsim.workload.parallel.factory import TrainingWorkload
from hcsim.workload.parallel.layout import Layout, expert_tp_note, experts_order, fitting_expert_tp, pipeline_split

TOP_LINKS = 5
"""Busiest links a report lists (as :func:`hcsim.engine.report.summarize`)."""

__all__ = [
    "POLICY_FLAGS",
    "TOP_LINKS",
    "pipeline_note",
    "steady_run",
    "steady_run_plan",
    "throughput",
    "training_workload",
]


def microbatches_of(workload: Any, gpus: int) -> int:
    """The micro-batches per iteration of a training factory (Megatron's default: 2 per stage, else 1)."""
    layout = workload.full_layout(gpus)
    return workload.options["microbatches"] or (2 * layout.pp if layout.pp > 1 else 1)


def steady_run_plan(workload: Any, gpus: int, *, allowed: bool) -> SteadyPlan | None:
    """The plan of a steady run of ``workload`` on ``gpus`` (None where not ``allowed`` or where it does not pay)."""
    return steady_plan(microbatches_of(workload, gpus), workload.full_layout(gpus).pp) if allowed else None


def steady_run(
    plan: SteadyPlan, workload: Any, run: Callable[[bool], Any], *, at_once: bool | None = None
) -> tuple[dict[str, Any], Any]:
    """The report of ``plan.total`` micro-batches from runs at ``plan.first`` and ``plan.second``; the last result.

    ``run(bar)`` runs the iteration of ``workload``'s factory (whose ``graph`` is the
    last one built, as :class:`~hcsim.analysis.breakdown.GraphKept` keeps it; ``bar``:
    it may show a progress bar). ``at_once`` (default: when this process may use two
    CPUs or more) runs the first in a forked process of its own beside the second: the
    same two simulations, so the same report. The report carries each run's iteration
    breakdown, extrapolated, and ``microbatches_simulated``.
    """
    asked, first = workload.options.get("microbatches"), None
    if at_once is None:
        at_once = len(os.sched_getaffinity(0)) >= 2 if hasattr(os, "sched_getaffinity") else False

    def part(microbatches: int, bar: bool) -> tuple[dict[str, Any], Any]:
        workload.options["microbatches"] = microbatches
        result = run(bar)
        links = report.link_stats(result) if result.flows else []  # every link's, read once: the report's too
        summary = {**report.summarize(result, links=links), **steady_breakdown(result, workload.graph)}
        return {**summary, "links": links}, result

    try:
        if at_once:
            first = start_isolated(lambda: part(plan.first, False)[0])
            two, result = part(plan.second, True)
            one = first.result()
        else:
            one, _ = part(plan.first, True)
            two, result = part(plan.second, True)
    finally:
        if first is not None:
            first.stop()
        workload.options["microbatches"] = asked
    folded = two["top_links"] is None
    for p in (one, two):  # the short runs' busiest links are not the iteration's: they come from every link's
        del p["top_links"], p["simulated_top_links"]
    summary = extrapolate(one, two, plan)
    links = summary.pop("links")[:TOP_LINKS]
    summary.update(simulated_top_links=links, top_links=None if folded else links)
    summary["microbatches_simulated"] = [plan.first, plan.second]
    return summary, result


def pipeline_note(workload: TrainingWorkload, xpus: int) -> str | None:
    """The pipeline split in one line when it is not even (LLaMA-3.1-405B's 126 layers on pp x vp = 64)."""
    layout = workload.full_layout(xpus)
    layout.check(xpus, workload.spec, workload.options.get("pipeline_split"))
    mtp = getattr(workload.spec, "mtp_layers", 0)
    split = pipeline_split(workload.spec.layers, layout.pp, layout.vp, workload.options.get("pipeline_split"), mtp=mtp)
    return None if split.even else split.describe()


def throughput(workload: Any, summary: dict, gpus: int) -> dict[str, float]:
    """Tokens per second per GPU and model TFLOP/s per GPU (model FLOPs as Megatron counts them)."""
    layout = workload.full_layout(gpus)
    o = workload.options
    sequence = o["sequence"] or workload.spec.sequence
    microbatches = microbatches_of(workload, gpus)
    tokens = layout.dp * microbatches * o["micro_batch"] * sequence
    seconds = summary["steady_iteration_s"]
    per_gpu = tokens / seconds / gpus
    return {
        "tokens_per_s_per_gpu": per_gpu,
        "model_tflops_per_gpu": per_gpu * model_flops_per_token(workload.spec, sequence) / 1e12,
        "tokens_per_iteration": tokens,
    }


#: the precision policy's flags of ``run``: (dest, flag, the value it defaults to)
POLICY_FLAGS = (("optimizer_dtype", "--optimizer-dtype", "fp32"), ("fp8_param_gather", "--fp8-param-gather", False))


def training_workload(args: argparse.Namespace, calib: Calibration | None = None) -> TrainingWorkload:
    """The workload factory ``(ranks, group) -> Workload`` of ``hcsim run --model ...`` for training."""
    if args.workload:
        raise HcsimError("give either --workload or --model, not both")
    if getattr(args, "tp", None) is not None:
        raise HcsimError("--tp needs --inference (for training give --parallel tp=N)")
    if getattr(args, "context", None) is not None:
        raise HcsimError("--context needs --inference (for training give --sequence N, the tokens per sequence)")
    spec = load_model(args.model)

    noted: list[str] = []  # the etp note, said once however many layouts are asked for

    def layout_of(xpus: int) -> Layout:
        layout = Layout.parse(args.parallel or f"dp={xpus}", xpus)
        if args.ep is not None:
            if layout.ep not in (1, args.ep):
                raise HcsimError(f"--ep {args.ep} contradicts ep={layout.ep} in --parallel")
            if args.ep < 1:
                raise HcsimError(f"--ep {args.ep} is invalid (valid: an integer >= 1)")
            layout = replace(layout, ep=args.ep)
        fitted = fitting_expert_tp(layout)
        if fitted is not layout and not noted:
            noted.append(expert_tp_note(layout, fitted))
            print(f"hcsim: note: {noted[0]}", file=sys.stderr)
        return fitted

    calibrated = {}
    if calib is not None:  # a calibrated run: operators timed on the machine (hcsim.calibration.machine)
        calibrated["calibration"] = calib
    # collectives: NCCL's rings under the calibration on a DGX (docs/collectives.md), the ideal ring otherwise
    default = calibrated_name(args.calibration) if calib is not None and args.system in DGX_SYSTEMS else "ring"
    args.dp_algorithm, args.tp_algorithm = args.dp_algorithm or default, args.tp_algorithm or default
    recompute = args.recompute
    modules = getattr(args, "recompute_modules", None)
    if modules is not None:  # Megatron-Core: recompute_modules act under recompute_granularity selective
        if recompute not in ("none", "selective"):
            raise HcsimError(f"--recompute-modules needs --recompute selective, not {recompute} (valid: drop one)")
        recompute = "selective:" + ",".join(m.strip() for m in modules.split(","))
    count = getattr(args, "recompute_num_layers", None)
    if count is not None:  # Megatron: recompute_method block applies to granularity full only
        if recompute != "full":
            raise HcsimError(f"--recompute-num-layers needs --recompute full, not {recompute} (valid: add "
                             "--recompute full, or drop --recompute-num-layers)")  # fmt: skip
        recompute = f"full:{count}"
    extra = {k: v for k, v in (("precision", args.precision), ("recompute", recompute)) if v not in (None, "none")}
    if getattr(args, "tp_comm_overlap", None):
        extra["tp_comm_overlap"] = True
    if args.precision in ("bf16", "fp8") and not getattr(args, "grad_reduce_in_fp32", True):
        extra["grad_reduce_in_fp32"] = False
    for dest, flag, default in POLICY_FLAGS:
        value = getattr(args, dest, None)
        if value is not None and value != default:
            if args.precision not in ("bf16", "fp8"):
                raise HcsimError(f"{flag} needs --precision bf16 or fp8 (valid: drop {flag})")
            extra[dest] = value
    if "recompute" in extra or extra.get("optimizer_dtype") or extra.get("fp8_param_gather"):
        from hcsim.workload.models.precision import training_precision
        from hcsim.workload.parallel.costs import check_recompute

        check_recompute(extra.get("recompute", "none"))  # one line before anything is built
        if args.precision is not None:
            training_precision(
                args.precision, grad_reduce_in_fp32=extra.get("grad_reduce_in_fp32", True),
                fp8_param_gather=extra.get("fp8_param_gather", False),
                optimizer_dtype=extra.get("optimizer_dtype", "fp32"),
            )  # fmt: skip
    # a factory that also tells its layout, so --fast folds whole replicas (hcsim.fast.units)
    return TrainingWorkload(
        spec,
        layout_of,
        microbatches=args.microbatches,
        micro_batch=args.micro_batch,
        sequence=args.sequence,
        schedule_name=args.schedule,
        zero=args.zero,
        sequence_parallel=args.sequence_parallel,
        dp_algorithm=args.dp_algorithm,
        tp_algorithm=args.tp_algorithm,
        mapping=args.mapping or (experts_order(args.parallel, args.ep) if args.system in DGX_SYSTEMS else None),
        **extra,
        **calibrated,
    )
