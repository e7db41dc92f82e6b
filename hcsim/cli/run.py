"""``hcsim run``: run a workload graph on a platform and print its metrics.

The platform is a compiled XML file (``--platform``), a network file imported on the fly
(``--platform net.yml``: ASTRA-sim or InfraGraph, as ``hcsim platform import`` reads it)
or a system built on the fly (``--system``, the options of ``hcsim platform build``); the
last two run through
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
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hcsim.calibration import Calibration, load_calibration
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.cli.platform import build_topology, refuse_unrouted
from hcsim.collectives import algorithm
from hcsim.collectives.algorithms.nccl_rings import calibrated_name
from hcsim.engine import report
from hcsim.engine.memory import all_local, fill_local_first
from hcsim.errors import HcsimError
from hcsim.fast import simulate, simulate_system
from hcsim.fast.system import FoldRefused
from hcsim.files import check_output_path
from hcsim.formats.astra_network import compile_astra_network
from hcsim.formats.chakra import chakra_files
from hcsim.formats.topology_files import import_topology
from hcsim.formats.workload_files import (
    algorithm_choice,
    check_workload_file,
    load_workload,
    workload_format,
    xpu_rates_from_platform,
)
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
    if getattr(args, "chakra", None) is not None:  # --chakra PATH: --workload PATH, a Chakra trace or an error
        if args.workload is not None or args.model:
            raise HcsimError("give one workload: --chakra PATH, --workload or --model")
        chakra_files(args.chakra)  # what is not a Chakra trace says why (no rank files, a missing rank, ...)
        args.workload = args.chakra
    if args.iterations is None:  # a transformer or a trace is one iteration unless said otherwise
        if not args.model and not (args.workload and workload_format(args.workload)):
            if args.workload and os.path.isfile(args.workload) and not args.workload.endswith(".json"):
                check_workload_file(args.workload)  # a file of no known format: say so first
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

    imported = _imported_network(args)  # --platform net.yml: imported as 'hcsim platform import' does, then run
    if args.platform and imported is None:
        if args.system:
            raise HcsimError("give either --platform FILE.xml or --system, not both")
        precheck_platform(args.platform)  # values SimGrid would abort on, refused in one line first
        if args.fast:
            raise HcsimError(
                "--fast needs --system or the network file itself (--platform net.yml, ASTRA-sim or InfraGraph: "
                "it folds the topology before compiling it), not a platform XML"
            )
        on_disk = os.path.isfile(args.platform)
        declared = simgrid_files.read_declared(args.platform) if on_disk else simgrid_files.Declared()
        config = simgrid_files.network_config(args.network_model or "file")
        facts = host_facts(args.platform, args.xpus_from or "auto", config)  # and its routes between XPUs
        xpus, how = simgrid_files.choose_xpus(facts, args.xpus_from or "auto", args.platform)
        rates.update(xpu_rates_from_platform(args.platform))
        if args.coherent is not None:
            coherent, why = args.coherent, "--coherent" if args.coherent else "--no-coherent"
        elif declared.coherent is not None:
            coherent, why = declared.coherent, "the platform's 'coherent' property"
        else:
            coherent, why = False, "default: the platform sets no 'coherent' property"
        work = workload(xpus, None)
        refuse_unrouted(facts, work, args.platform)  # SimGrid would abort at the first flow without a route
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
        if calib is not None:
            notes.append(
                f"note: compute calibrated ({calib.name}) on every XPU of {args.platform} (its devices are not "
                "checked: a platform file does not name them); its network and collectives stay ideal"
            )
        no_memory = sum(1 for x in xpus if x in facts.without_memory)
        if no_memory:
            notes.append(
                f"warning: {no_memory} of {len(xpus)} XPUs have no 'memory' property: "
                "their memory is taken as unlimited (all data local)"
            )
    else:
        if not args.system and imported is None:
            raise HcsimError("a platform is required (valid: --platform FILE.xml or --system cxl|noncoherent)")
        if args.xpus_from is not None:
            raise HcsimError("--xpus-from applies to --platform FILE.xml, not --system (its XPUs are known)")
        if args.network_model == "file":
            raise HcsimError("--network-model file applies to --platform FILE.xml; --system always runs 'raw'")
        spec = None
        if calib is not None and args.system in DGX_SYSTEMS:
            spec = calibrated_dgx_spec(DGX_SYSTEMS[args.system], calib)
        topo = imported if imported is not None else build_topology(args, notes, spec=spec)
        if calib is not None and args.system not in DGX_SYSTEMS:
            _check_calibrated_devices(args, calib, topo, notes)
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
        chosen = algorithm_choice(args.algorithm).get("allreduce")
        if args.fast and chosen is not None:
            alg = algorithm("allreduce", chosen)
            fold = None if alg.ring and alg.system_fold else False
        coherent = args.system == "cxl" if args.coherent is None else args.coherent
        default = f"--system {args.system}" if imported is None else "default for an imported network"
        why = default if args.coherent is None else ("--coherent" if coherent else "--no-coherent")
        with warnings.catch_warnings(), tempfile.TemporaryDirectory(prefix="hcsim-run-") as tmp:
            warnings.simplefilter("ignore", FoldRefused)  # a refused fold is said once, as a note (below)
            result = simulate_system(
                topo,
                workload,
                args.iterations,
                coherent=coherent,
                fast=args.fast,
                fold=fold,
                repeat=args.repeat or args.fast,
                placement=placement,
                # an imported network compiles as 'platform import' writes it (compact zones where it can)
                compile=(lambda t: _compile_imported(t, tmp)) if imported is not None else None,
            )
        narrowing = _narrowing(args, built[0], topo.xpus()) if built and not args.fast else None
        semantics = "coherent" if coherent else "non-coherent"
        source = f"system {args.system}" if imported is None else f"network {args.platform} (imported)"
        notes.insert(0, f"{source}: network model raw, {semantics} memory ({why})")
        if result.fold_refused:
            notes.append(f"note: {result.fold_refused}; ran every XPU")
    if narrowing:
        notes.append(f"warning: {narrowing}")
    summary = report.summarize(result)
    if training:
        gpus = len(topo.xpus()) if imported is not None or not args.platform else len(xpus)
        summary.update(_throughput(workload, summary, gpus))
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


def _check_calibrated_devices(args: argparse.Namespace, calib: Calibration, topo: Topology, notes: list) -> None:
    """A calibration times compute on its own GPU only: every XPU of a non-DGX system must be that GPU.

    The system keeps its own network (links at their rates, ideal collectives); only the operators'
    times come from the calibration. Said in a note.
    """
    gpu = calib.device_name.split()[0]  # "H100 SXM5 80GB" -> "H100"
    what = f"--system {args.system}" if args.system else f"--platform {args.platform}"
    others = sorted({str(topo.nodes[x].get("device")) for x in topo.xpus()} - {gpu, f"{gpu}-SXM"})
    if others:
        raise HcsimError(
            f"--calibration {args.calibration} times {gpu} XPUs; {what} also has "
            f"{', '.join(others)} (valid: a system of {gpu} XPUs only, or --calibration ideal)"
        )
    notes.append(f"note: compute calibrated ({calib.name}); the {what} network and its collectives stay ideal")


NETWORK_FILES = (".yml", ".yaml", ".json")
"""``--platform`` files read as networks to import (ASTRA-sim YAML, InfraGraph), not as SimGrid XML."""


def _imported_network(args: argparse.Namespace) -> Topology | None:
    """The topology of ``--platform net.yml`` (a network file, as ``hcsim platform import`` reads it), else None."""
    if not args.platform or not args.platform.lower().endswith(NETWORK_FILES):
        return None
    if args.system:
        raise HcsimError("give either --platform FILE or --system, not both")
    given = (("--xpus", args.xpus), ("--xpus-from", args.xpus_from), ("--network-model", args.network_model))
    for flag, value in given:
        if value is not None:
            raise HcsimError(f"{flag} does not apply to an imported network ('{args.platform}' gives its NPUs)")
    return import_topology(args.platform, xpu=args.mix or "H100")


def _compile_imported(topology: Topology, folder: str) -> str:
    """Compile an imported network (or its fold) as ``hcsim platform import`` does; the file's path."""
    path = os.path.join(folder, f"platform{len(os.listdir(folder))}.xml")
    compile_astra_network(topology, path)
    return path


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
