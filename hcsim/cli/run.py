"""``hcsim run``: run a workload graph on a platform and print its metrics.

The platform is a compiled XML file (``--platform``) or a system built on the fly
(``--system``, the options of ``hcsim platform build``), run through
:func:`hcsim.fast.system.simulate_system` (``--fast`` folds, memoizes and extrapolates
repeating iterations; ``--repeat`` does the last alone). The workload is picked by
:func:`hcsim.formats.workload_files.load_workload`, or is a transformer (``--model``): one
inference step with ``--inference``, else parallel training iterations
(:class:`hcsim.workload.parallel.factory.TrainingWorkload`). The options are in
:func:`hcsim.cli.parsers.add_run`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hcsim.calibration import Calibration, load_calibration
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.cli.platform import build_topology
from hcsim.collectives import algorithm
from hcsim.collectives.algorithms.nccl_rings import calibrated_name
from hcsim.engine import report
from hcsim.engine.memory import all_local, fill_local_first
from hcsim.errors import HcsimError
from hcsim.fast import simulate, simulate_system
from hcsim.fast.system import FoldRefused
from hcsim.files import check_output_path
from hcsim.formats.workload_files import load_workload, xpu_rates_from_platform
from hcsim.platform import simgrid_files
from hcsim.platform.dgx import DGX_SYSTEMS
from hcsim.platform.probe import host_facts, precheck_platform
from hcsim.platform.topology import Topology
from hcsim.workload.catalog import DATA_PARALLEL
from hcsim.workload.graph import Workload
from hcsim.workload.models.inference import check_inference, inference_step
from hcsim.workload.models.spec import load_model, model_flops_per_token
from hcsim.workload.parallel.factory import TrainingWorkload
from hcsim.workload.parallel.layout import Layout
from hcsim.workload.parallel.memory import check_fits, training_memory

__all__ = ["MAX_ITERATIONS", "main"]

MAX_ITERATIONS = 100_000
"""Most iterations ``hcsim run`` accepts: each is simulated event by event, so a billion would
run for days (and used to end in a traceback); see docs/workloads-and-engine.md."""


def _hosts_used(work: Workload) -> set[str]:
    """The hosts a workload computes on or communicates among."""
    used: set[str] = set()
    for _, d in work.nodes(data=True):
        if d.get("type") == "compute":
            used.add(d.get("location"))
        else:
            used.update(d.get("scope") or ())
    return used


def _narrowing(args: argparse.Namespace, work: Workload, xpus: list[str]) -> str | None:
    """A warning when the workload leaves some of the platform's XPUs idle (None when it uses them all)."""
    used = len(_hosts_used(work) & set(xpus))
    if used >= len(xpus):
        return None
    if args.workload == "fig3":
        return f"--workload fig3 uses 2 of the {len(xpus)} XPUs (the paper's Fig. 3 example runs on the first two)"
    name = args.workload or f"--model {args.model}"
    return f"workload {name!r} uses {used} of the platform's {len(xpus)} XPUs (the others stay idle)"


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim run``; the exit status."""
    if args.iterations is None:
        if not args.model:
            raise HcsimError("--iterations is required (valid: an integer >= 1)")
        args.iterations = 1
    if not 1 <= args.iterations <= MAX_ITERATIONS:
        raise HcsimError(
            f"--iterations {args.iterations} is invalid (valid: an integer >= 1, at most {MAX_ITERATIONS})"
        )
    notes: list[str] = []  # printed on stderr once the run has succeeded (a failure prints one line only)
    trace = args.chrome_trace
    for out in (trace, args.csv, args.links):
        if out:
            check_output_path(out)

    rates: dict[str, float] = {}  # fp32 FLOP/s per XPU: Chakra durations and AICB times become FLOPs
    built = []

    def workload(ranks: list[str], group: int | None) -> Workload:
        w = load_workload(
            args.workload, ranks, group, size=args.bytes, what="--bytes", xpu_flops=rates, rank_map=args.rank_map,
            comm_groups=args.comm_groups, algorithm=args.algorithm,
        )  # fmt: skip
        built.append(w)
        return w

    calib = load_calibration(args.calibration)  # None: the ideal model
    training = bool(args.model) and not args.inference
    if not training:
        for flag, value in (("--precision", args.precision), ("--zero", args.zero)):
            if value is not None:
                raise HcsimError(f"{flag} applies to training (--model without --inference)")
        if args.recompute != "none" or calib is not None:
            raise HcsimError("--recompute and --calibration apply to training (--model without --inference)")
    dgx = args.system in DGX_SYSTEMS
    if args.zero is None:  # on a DGX, as NeMo's pretraining recipes run Megatron-Core: the distributed optimizer
        args.zero = 1 if dgx and training else 0
    if args.sequence_parallel is None:  # ... and sequence parallelism wherever tensor parallelism is on
        tp = Layout.parse(args.parallel, args.xpus).tp if dgx and training and args.parallel and args.xpus else 1
        args.sequence_parallel = tp > 1
    if args.model or args.workload is None:  # a transformer (issue 16)
        workload = _training_workload(args, calib) if training else _inference_workload(args)

    if args.platform:
        if args.system:
            raise HcsimError("give either --platform FILE.xml or --system, not both")
        precheck_platform(args.platform)  # values SimGrid would abort on, refused in one line first
        if args.fast:
            raise HcsimError("--fast needs --system (it folds the system before compiling it), not --platform")
        on_disk = os.path.isfile(args.platform)
        declared = simgrid_files.read_declared(args.platform) if on_disk else simgrid_files.Declared()
        config = simgrid_files.network_config(args.network_model or "file")
        facts = host_facts(args.platform)
        xpus, how = simgrid_files.choose_xpus(facts, args.xpus_from or "auto", args.platform)
        rates.update(xpu_rates_from_platform(args.platform))
        if args.coherent is not None:
            coherent, why = args.coherent, "--coherent" if args.coherent else "--no-coherent"
        elif declared.coherent is not None:
            coherent, why = declared.coherent, "the platform's 'coherent' property"
        else:
            coherent, why = False, "default: the platform sets no 'coherent' property"
        work = workload(xpus, None)
        narrowing = _narrowing(args, work, xpus)
        result = simulate(
            args.platform, work, args.iterations, coherent=coherent, xpus=xpus, config=config, repeat=args.repeat
        )
        notes.insert(
            0,
            f"platform {args.platform}: {len(xpus)} XPUs ({how}; --xpus-from), network model "
            f"{simgrid_files.model_in_force(declared, args.network_model or 'file')}, "
            f"{'coherent' if coherent else 'non-coherent'} memory ({why})",
        )
        no_memory = sum(1 for x in xpus if x in facts.without_memory)
        if no_memory:
            notes.append(
                f"warning: {no_memory} of {len(xpus)} XPUs have no 'memory' property: "
                "their memory is taken as unlimited (all data local)"
            )
    else:
        if not args.system:
            raise HcsimError("a platform is required (valid: --platform FILE.xml or --system cxl|noncoherent)")
        if args.xpus_from is not None:
            raise HcsimError("--xpus-from applies to --platform FILE.xml, not --system (its XPUs are known)")
        if args.network_model == "file":
            raise HcsimError("--network-model file applies to --platform FILE.xml; --system always runs 'raw'")
        spec = None
        if calib is not None and args.system in DGX_SYSTEMS:
            spec = calibrated_dgx_spec(DGX_SYSTEMS[args.system], calib)
        elif calib is not None:
            raise HcsimError(f"--calibration {args.calibration} needs a machine it describes (valid: --system "
                             f"{', '.join(DGX_SYSTEMS)}; or --calibration ideal)")  # fmt: skip
        topo = build_topology(args, notes, spec=spec)
        placement = fill_local_first
        if training and args.system in DGX_SYSTEMS:
            _check_fits(args, workload, topo)
            if not args.allow_spill:  # it fits (checked): nothing is spilled, as Megatron spills nothing
                placement = all_local
        rates.update({x: topo.nodes[x]["fp32_flops"] for x in topo.xpus()})
        if args.fast and not training and (args.model or args.workload not in DATA_PARALLEL):
            raise HcsimError(
                f"--fast applies to data-parallel workloads and --model training, not {args.workload or args.model!r} "
                f"(valid: {', '.join(DATA_PARALLEL)}, or --model without --inference)"
            )
        fold = None  # with --fast: fold; but only ring allreduces can stand for a larger group
        if args.fast and args.algorithm is not None:
            alg = algorithm("allreduce", args.algorithm)
            fold = None if alg.ring and alg.system_fold else False
        coherent = args.system == "cxl" if args.coherent is None else args.coherent
        why = f"--system {args.system}" if args.coherent is None else ("--coherent" if coherent else "--no-coherent")
        with warnings.catch_warnings():  # a refused fold is said once, as a note (below)
            warnings.simplefilter("ignore", FoldRefused)
            result = simulate_system(
                topo,
                workload,
                args.iterations,
                coherent=coherent,
                fast=args.fast,
                fold=fold,
                repeat=args.repeat or args.fast,
                placement=placement,
            )
        narrowing = _narrowing(args, built[0], topo.xpus()) if built and not args.fast else None
        semantics = "coherent" if coherent else "non-coherent"
        notes.insert(0, f"system {args.system}: network model raw, {semantics} memory ({why})")
        if result.fold_refused:
            notes.append(f"note: {result.fold_refused}; ran every XPU")
    if narrowing:
        notes.append(f"warning: {narrowing}")
    summary = report.summarize(result)
    if training:
        summary.update(_throughput(workload, summary, len(topo.xpus()) if not args.platform else len(xpus)))
    skipped = {
        k: v for w in built[:1] for key in ("chakra_skipped", "aicb_skipped") for k, v in w.graph.get(key, {}).items()
    }
    if skipped:  # what an imported trace held that hcsim does not run: said, never dropped silently
        summary["skipped_input"] = skipped
    if trace:
        report.write_chrome_trace(result, trace)
    if args.csv:
        report.write_csv(result, args.csv)
    if args.links:
        report.write_links_csv(result, args.links)
    for note in notes:
        print(f"hcsim: {note}", file=sys.stderr)
    text = report.format_summary(summary)
    if skipped and not args.json:
        text += "\nskipped from the input  " + ", ".join(f"{n} {k}" for k, n in skipped.items())
    print(json.dumps(summary, indent=1, sort_keys=True) if args.json else text)
    return 0


def _check_fits(args: argparse.Namespace, workload: TrainingWorkload, topo: Topology) -> None:
    """On a DGX: what each rank holds must fit in its HBM, unless ``--allow-spill`` (one line otherwise)."""
    xpus = topo.xpus()
    o = workload.options
    stages = training_memory(
        workload.spec, workload.full_layout(len(xpus)), micro_batch=o["micro_batch"], sequence=o["sequence"],
        microbatches=o["microbatches"], schedule_name=o["schedule_name"], zero=o["zero"],
        precision=o.get("precision"), recompute=o.get("recompute", "none"),
        sequence_parallel=o["sequence_parallel"], xpus=len(xpus),
    )  # fmt: skip
    check_fits(stages, topo.nodes[xpus[0]]["memory"], allow_spill=args.allow_spill)


def _throughput(workload: Any, summary: dict, gpus: int) -> dict[str, float]:
    """Tokens per second per GPU and model TFLOP/s per GPU (model FLOPs as Megatron counts them)."""
    layout = workload.full_layout(gpus)
    o = workload.options
    sequence = o["sequence"] or workload.spec.sequence
    microbatches = o["microbatches"] or (2 * layout.pp if layout.pp > 1 else 1)
    tokens = layout.dp * microbatches * o["micro_batch"] * sequence
    seconds = summary["steady_iteration_s"]
    per_gpu = tokens / seconds / gpus
    return {
        "tokens_per_s_per_gpu": per_gpu,
        "model_tflops_per_gpu": per_gpu * model_flops_per_token(workload.spec, sequence) / 1e12,
        "tokens_per_iteration": tokens,
    }


def _inference_workload(args: argparse.Namespace) -> Callable[..., Workload]:
    """The workload factory ``(ranks, group) -> Workload`` of ``hcsim run --model ...`` (checked now)."""
    if args.workload and args.model:
        raise HcsimError("give either --workload or --model, not both")
    if not args.model:
        raise HcsimError("a workload is required (valid: --workload NAME|FILE.json or --model NAME|config.json)")
    spec = load_model(args.model)
    if not args.inference:
        raise HcsimError(f"--model {args.model} needs --inference (one prefill or decode step)")
    if args.context is None:
        raise HcsimError("--inference needs --context (the prompt length for prefill, the KV length for decode)")
    check_inference(spec, args.tp or 1, batch=args.batch, context=args.context, tp=args.tp or 1)

    def workload(ranks: list[str], group: int | None = None) -> Workload:
        return inference_step(spec, ranks, batch=args.batch, context=args.context, phase=args.phase, tp=args.tp)

    return workload


def _training_workload(args: argparse.Namespace, calib: Calibration | None = None) -> TrainingWorkload:
    """The workload factory ``(ranks, group) -> Workload`` of ``hcsim run --model ...`` for training."""
    if args.workload:
        raise HcsimError("give either --workload or --model, not both")
    if getattr(args, "tp", None) is not None:
        raise HcsimError("--tp needs --inference (for training give --parallel tp=N)")
    if getattr(args, "context", None) is not None:
        raise HcsimError("--context needs --inference (for training give --sequence N, the tokens per sequence)")
    spec = load_model(args.model)

    def layout_of(xpus: int) -> Layout:
        layout = Layout.parse(args.parallel or f"dp={xpus}", xpus)
        if args.ep is not None:
            if layout.ep not in (1, args.ep):
                raise HcsimError(f"--ep {args.ep} contradicts ep={layout.ep} in --parallel")
            if args.ep < 1:
                raise HcsimError(f"--ep {args.ep} is invalid (valid: an integer >= 1)")
            layout = replace(layout, ep=args.ep)
        return layout

    calibrated = {}
    if calib is not None:  # a calibrated run: operators timed on the machine (hcsim.calibration.machine)
        calibrated["calibration"] = calib
    # collectives: NCCL's rings under the calibration (docs/collectives.md), the ideal ring otherwise
    default = calibrated_name(args.calibration) if calib is not None else "ring"
    args.dp_algorithm, args.tp_algorithm = args.dp_algorithm or default, args.tp_algorithm or default
    extra = {k: v for k, v in (("precision", args.precision), ("recompute", args.recompute)) if v not in (None, "none")}
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
        mapping=args.mapping,
        **extra,
        **calibrated,
    )
