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
import contextlib
import glob
import json
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

from hcsim.analysis.breakdown import GraphKept, steady_breakdown
from hcsim.calibration import Calibration, load_calibration
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.cli.platform import build_topology, refuse_system_flags, refuse_unrouted
from hcsim.cli.training import POLICY_FLAGS, steady_run, steady_run_plan
from hcsim.cli.training import pipeline_note as _pipeline_note
from hcsim.cli.training import throughput as _throughput
from hcsim.cli.training import training_workload as _training_workload
from hcsim.collectives import algorithm
from hcsim.engine import report
from hcsim.engine.memory import all_local, fill_local_first
from hcsim.errors import HcsimError
from hcsim.fast import simulate, simulate_system
from hcsim.fast.system import FoldRefused
from hcsim.files import anonymous_file, check_outputs
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
from hcsim.workload.models.spec import load_model
from hcsim.workload.parallel.factory import TrainingWorkload
from hcsim.workload.parallel.layout import Layout
from hcsim.workload.parallel.memory import check_fits, workload_memory

__all__ = ["MAX_BATCH", "MAX_DEGREE", "MAX_ITERATIONS", "MAX_MICROBATCHES", "MAX_MICRO_BATCH", "MAX_TOKENS", "main"]

MAX_ITERATIONS = 100_000
"""Most iterations ``hcsim run`` accepts: each is simulated event by event, so a billion would
run for days (and used to end in a traceback); see docs/workloads-and-engine.md."""


MAX_MICROBATCHES = 1024
"""Most ``--microbatches``: each adds a forward and a backward pass of every layer on every stage to the graph
(Megatron's GPT-3 175B run uses 192 per pipeline; 10**9 used to build for ever)."""
MAX_MICRO_BATCH = 1024
"""Most ``--micro-batch`` sequences: the activations of one microbatch grow with it."""
MAX_TOKENS = 2**20
"""Most ``--sequence`` (training) and ``--context`` (inference) tokens: 1Mi, the longest context of published models."""
MAX_BATCH = 4096
"""Most ``--batch`` sequences of one inference step."""
MAX_DEGREE = 4096
"""Most ``--tp`` and ``--ep``: a degree beyond the largest system built here cannot be laid out."""


def _check_sizes(args: argparse.Namespace) -> None:
    """Every flag that sizes the work, bounded before anything is built: one line naming the flag."""
    bounds = (
        ("--microbatches", args.microbatches, MAX_MICROBATCHES),
        ("--micro-batch", args.micro_batch, MAX_MICRO_BATCH),
        ("--sequence", args.sequence, MAX_TOKENS),
        ("--context", args.context, MAX_TOKENS),
        ("--batch", args.batch, MAX_BATCH),
        ("--tp", args.tp, MAX_DEGREE),
        ("--ep", args.ep, MAX_DEGREE),
    )
    for flag, value, most in bounds:
        if value is not None and not 1 <= value <= most:
            raise HcsimError(f"{flag} {value} is invalid (valid: an integer from 1 to {most:,}; docs/cli.md, Limits)")


_TRAINING_FLAGS = (
    ("parallel", "--parallel"), ("microbatches", "--microbatches"), ("micro_batch", "--micro-batch"),
    ("sequence", "--sequence"), ("zero", "--zero"), ("ep", "--ep"), ("schedule", "--schedule"),
    ("sequence_parallel", "--sequence-parallel/--no-sequence-parallel"), ("mapping", "--mapping"),
    ("precision", "--precision"), ("recompute", "--recompute"), ("recompute_modules", "--recompute-modules"),
    ("recompute_num_layers", "--recompute-num-layers"),
    ("optimizer_dtype", "--optimizer-dtype"), ("fp8_param_gather", "--fp8-param-gather"),
    ("calibration", "--calibration"), ("attention_backend", "--attention-backend"),
    ("cross_entropy", "--cross-entropy"), ("fp8_recipe", "--fp8-recipe"), ("hidden_dropout", "--hidden-dropout"),
    ("allow_spill", "--allow-spill"), ("dp_algorithm", "--dp-algorithm"), ("tp_algorithm", "--tp-algorithm"),
    ("tp_comm_overlap", "--tp-comm-overlap/--no-tp-comm-overlap"), ("exact_microbatches", "--exact-microbatches"),
)  # fmt: skip
_INFERENCE_FLAGS = (("phase", "--phase"), ("batch", "--batch"), ("context", "--context"), ("tp", "--tp"))
_DEFAULTS = {
    "bytes": "1GiB", "phase": "decode", "batch": 1, "micro_batch": 1, "schedule": "1f1b", "recompute": "none",
    "calibration": "ideal",
}  # fmt: skip
"""What the flags of ``run`` default to; the parser leaves them None so a flag the user gave is known
(``--dp-algorithm``/``--tp-algorithm``: ring, or NCCL's rings on a calibrated DGX: ``_training_workload``)."""


def _given(args: argparse.Namespace, dest: str) -> bool:
    """Whether the user gave the flag: the parser leaves it None (store_true flags: False) otherwise."""
    value = getattr(args, dest, None)
    return value is not None and not (dest == "allow_spill" and value is False)


def _check_applies(args: argparse.Namespace) -> None:
    """A flag that does nothing in the chosen mode is refused, one line naming it and the mode it belongs to."""
    training = bool(args.model) and not args.inference
    if args.inference and not args.model:
        raise HcsimError("--inference applies to --model (valid: --model NAME --inference, or drop --inference)")
    if not training:
        mode = "--inference" if args.model else f"--workload {args.workload}" if args.workload else "this run"
        for dest, flag in _TRAINING_FLAGS:
            if _given(args, dest):
                raise HcsimError(
                    f"{flag} applies to training (--model without --inference), not {mode} (valid: drop {flag})"
                )
    if not args.inference:
        skip = ("tp", "context") if training else ()  # said by the training workload, with the flag to use instead
        mode = "training (--model without --inference)" if training else "--workload"
        for dest, flag in _INFERENCE_FLAGS:
            if dest not in skip and _given(args, dest):
                raise HcsimError(f"{flag} applies to --model NAME --inference, not {mode} (valid: drop {flag})")
    if args.model:
        for dest, flag, instead in (
            ("bytes", "--bytes", "the model sets the sizes"),
            ("algorithm", "--algorithm", "for training give --dp-algorithm/--tp-algorithm"),
        ):
            if _given(args, dest):
                raise HcsimError(f"{flag} applies to --workload allreduce|llama2-13b, not --model ({instead})")
    if args.platform and not args.system:
        if args.platform.lower().endswith(NETWORK_FILES):  # --mix: its NPUs' type; --xpus said by _imported_network
            # --link-bandwidth/--link-latency: an InfraGraph file's links that declare none (import_topology checks)
            allow = ("mix", "xpus", "link_bandwidth", "link_latency")
            refuse_system_flags(args, f"--platform {args.platform} (an imported network)", allow=allow)
        else:
            refuse_system_flags(args, "--platform FILE.xml (the file fixes the system)")
    calibrated = _given(args, "calibration") and args.calibration != "ideal"
    if args.exact_microbatches and not (args.fast and (calibrated or args.system in DGX_SYSTEMS)):
        raise HcsimError("--exact-microbatches applies to --fast with --calibration or a DGX system (only those "
                         "extrapolate micro-batches; valid: drop it)")  # fmt: skip
    if args.allow_spill and args.system not in DGX_SYSTEMS:
        raise HcsimError(
            f"--allow-spill applies to --system {'|'.join(DGX_SYSTEMS)} (their HBM is checked), not "
            f"{'--system ' + args.system if args.system else '--platform'} (valid: drop it)"
        )
    for dest, default in _DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)


def _setup(args: argparse.Namespace, calib: Calibration, layout: str) -> dict[str, Any]:
    """What a calibrated training run assumed, resolved (defaults filled in), for its JSON: the model, the
    machine, the layout run (``layout``: dp and etp filled in), every other training flag's value (None: not
    given, and nothing of its own to default to: ``ep`` follows the layout) and the stack the calibration times
    (the attention kernel, the loss's kernels, the FP8 recipe, hidden dropout), so a result says what it stands for.
    """
    setup: dict[str, Any] = {"model": args.model, "system": args.system or args.platform, "xpus": args.xpus}
    defaults = {dest: default for dest, _, default in POLICY_FLAGS} | {"exact_microbatches": False}
    for dest, _ in _TRAINING_FLAGS:
        value = getattr(args, dest, None)
        setup[dest] = defaults.get(dest) if value is None else value
    setup["parallel"] = layout
    fp8_recipe = calib.fp8_recipe if args.precision == "fp8" else None
    setup.update(calibration=calib.name, attention_kernel=calib.attention_kernel, cross_entropy=calib.cross_entropy)
    setup.update(fp8_recipe=fp8_recipe, hidden_dropout=calib.dropout)
    return setup


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
    _check_applies(args)  # a flag the chosen mode ignores is refused; then the defaults are filled in
    _check_sizes(args)
    notes: list[str] = []  # printed on stderr once the run has succeeded (a failure prints one line only)
    trace = args.chrome_trace
    check_outputs(files={"--chrome-trace": trace, "--csv": args.csv, "--links": args.links}, inputs=_input_files(args))

    rates: dict[str, float] = {}  # fp32 FLOP/s per XPU: Chakra durations and AICB times become FLOPs
    built = []
    steady = None  # a steady run's extrapolated report (hcsim.cli.training)

    def workload(ranks: list[str], group: int | None) -> Workload:
        w = load_workload(
            args.workload, ranks, group, size=args.bytes, what="--bytes", xpu_flops=rates, rank_map=args.rank_map,
            comm_groups=args.comm_groups, algorithm=args.algorithm,
        )  # fmt: skip
        built.append(w)
        return w

    calib = load_calibration(args.calibration)  # None: the ideal model
    if args.attention_backend is not None and calib is None and args.model and not args.inference:
        raise HcsimError(f"--attention-backend {args.attention_backend} needs a calibration, the ideal model has no "
                         "attention kernel (valid: --calibration dgx-h100, dgx-a100, a YAML, or drop it)")  # fmt: skip
    calib = calib.with_attention(args.attention_backend or "auto") if calib is not None else None
    stack = (("--cross-entropy", args.cross_entropy), ("--fp8-recipe", args.fp8_recipe),
             ("--hidden-dropout", args.hidden_dropout))  # fmt: skip
    for flag, value in stack:
        if value is not None and calib is None and args.model and not args.inference:
            raise HcsimError(f"{flag} needs a calibration, the ideal model times no kernels "
                             "(valid: --calibration dgx-h100, dgx-a100, a YAML, or drop it)")  # fmt: skip
    if args.fp8_recipe is not None and args.precision != "fp8" and args.model and not args.inference:
        raise HcsimError(f"--fp8-recipe {args.fp8_recipe} needs --precision fp8 (valid: add it, or drop the recipe)")
    calib = calib.with_stack(args.cross_entropy, args.fp8_recipe, args.hidden_dropout) if calib is not None else None
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
    # ... main gradients in bf16, as NVIDIA's benchmark recipes set them (Megatron-Bridge perf_recipes/_common.py:
    # grad_reduce_in_fp32 = False; NeMo launcher configs: grad_sync_dtype bf16)
    args.grad_reduce_in_fp32 = not (dgx and training)
    if args.sequence_parallel is None:  # ... and sequence parallelism wherever tensor parallelism is on
        tp = Layout.parse(args.parallel, args.xpus).tp if dgx and training and args.parallel and args.xpus else 1
        args.sequence_parallel = tp > 1
    if args.tp_comm_overlap is None:  # opt-in for now (docs/training-features.md, "TP communication overlap")
        args.tp_comm_overlap = False
    if args.model or args.workload is None:  # a transformer (issue 16)
        workload = GraphKept(_training_workload(args, calib)) if training else _inference_workload(args)

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
        if args.placement != "auto":
            raise HcsimError(f"--placement {args.placement} applies to --system, not --platform")
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
            args.platform, work, args.iterations, coherent=coherent, xpus=xpus, config=config, repeat=args.repeat,
            progress=args.progress,
        )  # fmt: skip
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
        coherent = args.system == "cxl" if args.coherent is None else args.coherent
        placement = fill_local_first if args.placement != "local" else all_local
        kept_local = None  # with --placement auto on XPUs that name no memory to spill to: said once it ran
        if training:
            note = _pipeline_note(workload, len(topo.xpus()))
            if note:
                notes.append(f"note: {note}")
        if args.placement == "auto" and training and args.system in DGX_SYSTEMS:
            _check_fits(args, workload, topo)
            if not args.allow_spill:  # it fits (checked): nothing is spilled, as Megatron spills nothing
                placement = all_local
        elif args.placement == "auto" and not _spills_somewhere(topo, coherent):
            placement = all_local
            kept_local = (
                f"note: the XPUs of '{args.system or args.platform}' name no {'CXL' if coherent else 'host'} "
                "memory, so each operator's data stays in its XPU's memory, its capacity not checked "
                "(--placement local; --placement spill refuses what does not fit)"
            )
        if training and args.fast and calib is not None and placement is all_local:
            # TP slices share one compute vertex (training_graph's tp_quotient): calibrated fast runs whose data
            # stays in HBM only (no memory flows that differ by slice), so never the paper's studies
            workload.options["tp_quotient"] = True
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
        default = f"--system {args.system}" if imported is None else "default for an imported network"
        why = default if args.coherent is None else ("--coherent" if coherent else "--no-coherent")
        # fast runs (calibrated or on a DGX) of one iteration in HBM, nothing written per vertex: steady periods
        # extrapolated (never the paper's studies, whose systems spill to CXL or host memory)
        plan = steady_run_plan(workload, len(topo.xpus()), allowed=training and args.fast and placement is all_local
                               and (calib is not None or args.system in DGX_SYSTEMS) and args.iterations == 1
                               and not args.exact_microbatches and not (trace or args.csv or args.links))  # fmt: skip
        with warnings.catch_warnings(), contextlib.ExitStack() as scratch:
            warnings.simplefilter("ignore", FoldRefused)  # a refused fold is said once, as a note (below)

            def run_system(bar: bool = True) -> Any:
                return simulate_system(
                    topo,
                    workload,
                    args.iterations,
                    coherent=coherent,
                    fast=args.fast,
                    fold=fold,
                    repeat=args.repeat or args.fast,
                    shared_ring_steps=calib is not None,  # every ring's measured steps shared (not the paper's)
                    dp_quotient=calib is not None,  # the layout fold blind to links that never limit a rate (same)
                    placement=placement,
                    progress=args.progress if bar else False,
                    compile=(lambda t: _compile_imported(t, scratch)) if imported is not None else None,
                )

            if plan is None:
                result = run_system()
            else:
                steady, result = steady_run(plan, workload, run_system)
                notes.append(f"note: {plan.describe()}")
        narrowing = _narrowing(args, built[0], topo.xpus()) if built and not args.fast else None
        semantics = "coherent" if coherent else "non-coherent"
        source = f"system {args.system}" if imported is None else f"network {args.platform} (imported)"
        notes.insert(0, f"{source}: network model raw, {semantics} memory ({why})")
        if result.fold_refused:
            notes.append(f"note: {result.fold_refused}; ran every XPU")
        if kept_local and result.placement:  # only where operators hold data
            notes.append(kept_local)
    if narrowing:
        notes.append(f"warning: {narrowing}")
    summary = report.summarize(result) if steady is None else steady
    if training:
        gpus = len(topo.xpus()) if imported is not None or not args.platform else len(xpus)
        summary.update(_throughput(workload, summary, gpus))
        if calib is not None:
            summary["setup"] = _setup(args, calib, str(workload.full_layout(gpus)))
        if steady is None:  # first rank of every stage (hcsim.analysis); a steady run's is extrapolated
            summary.update(steady_breakdown(result, workload.graph))
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


def _input_files(args: argparse.Namespace) -> dict[str, str]:
    """The files ``run`` reads (flag -> path), which no output may name; a Chakra prefix stands for its ranks."""
    given = {
        "--platform": args.platform, "--workload": args.workload, "--rank-map": args.rank_map,
        "--comm-groups": args.comm_groups, "--calibration": args.calibration, "--model": args.model,
        "--algorithm": args.algorithm,
    }  # fmt: skip
    for flag, path in given.items():
        if path and os.path.isdir(path) and flag != "--workload":  # a directory of Chakra traces is valid
            raise HcsimError(f"{flag} '{path}' is a directory, not a file (valid: a file path)")
    found = {flag: path for flag, path in given.items() if path and os.path.isfile(path)}
    if args.workload and not os.path.exists(args.workload):
        for i, path in enumerate(sorted(glob.glob(glob.escape(args.workload) + ".*.et"))):
            found[f"--workload (rank file {i})"] = path
    return found


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
    return import_topology(
        args.platform, xpu=args.mix or "H100", link_bandwidth=args.link_bandwidth, link_latency=args.link_latency
    )


def _compile_imported(topology: Topology, scratch: contextlib.ExitStack) -> str:
    """An imported network (or its fold) compiled as ``platform import`` does (compact zones); a path to it.

    The XML is an anonymous file (on no disk: a SIGKILL leaves nothing), open until ``scratch`` closes.
    """
    f, path = scratch.enter_context(anonymous_file("platform.xml"))
    compile_astra_network(topology, f)
    return path


def _check_fits(args: argparse.Namespace, workload: TrainingWorkload, topo: Topology) -> None:
    """On a DGX: what each rank holds must fit in its HBM, unless ``--allow-spill`` (one line otherwise)."""
    xpus = topo.xpus()
    check_fits(workload_memory(workload, len(xpus)), topo.nodes[xpus[0]]["memory"], allow_spill=args.allow_spill)


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


def _spills_somewhere(topology: Topology, coherent: bool) -> bool:
    """Whether every XPU of ``topology`` names the memory that data spills to (CXL if coherent, else host)."""
    key = "cxl_memory" if coherent else "host_memory"
    return all(topology.nodes[x].get(key) for x in topology.xpus())
