"""``hcsim run``: run a workload graph on a platform and print its metrics.

The platform is a compiled XML file (``--platform``) or a system built on the fly
(``--system``, the options of ``hcsim platform build``), run through
:func:`hcsim.fast.system.simulate_system` (``--fast`` folds, memoizes and extrapolates
repeating iterations; ``--repeat`` does the last alone). The workload
is picked by :func:`hcsim.workload.catalog.workload_by_name`. Only the standard library at
the top: the ``hcsim`` command loads this module for ``--help`` (see :mod:`hcsim.cli`).
"""

from __future__ import annotations

import argparse

from hcsim.errors import HcsimError
from hcsim.cli.flags import DeprecatedAlias

__all__ = ["register"]

_WORKLOADS = ("allreduce", "coherent-allreduce", "fig3", "llama2-13b")  # hcsim.workload.catalog.WORKLOADS
MAX_ITERATIONS = 100_000
"""Most iterations ``hcsim run`` accepts: each is simulated event by event, so a billion would
run for days (and used to end in a traceback); see docs/workloads-and-engine.md."""


def _hosts_used(work) -> set[str]:  # noqa: ANN001 - a Workload
    """The hosts a workload computes on or communicates among."""
    used: set[str] = set()
    for _, d in work.nodes(data=True):
        if d.get("type") == "compute":
            used.add(d.get("location"))
        else:
            used.update(d.get("scope") or ())
    return used


def _narrowing(args: argparse.Namespace, work, xpus: list[str]) -> str | None:  # noqa: ANN001 - a Workload
    """A warning when the workload leaves some of the platform's XPUs idle (None when it uses them all)."""
    used = len(_hosts_used(work) & set(xpus))
    if used >= len(xpus):
        return None
    if args.workload == "fig3":
        return f"--workload fig3 uses 2 of the {len(xpus)} XPUs (the paper's Fig. 3 example runs on the first two)"
    name = args.workload or f"--model {args.model}"
    return f"workload {name!r} uses {used} of the platform's {len(xpus)} XPUs (the others stay idle)"


def _cmd_run(args: argparse.Namespace) -> int:
    import json
    import sys
    import warnings

    from hcsim.cli.platform import build_topology
    from hcsim.engine import report, simulate
    from hcsim.fast import simulate_system
    from hcsim.fast.system import FoldRefused
    from hcsim.files import check_output_path
    from hcsim.workload.catalog import DATA_PARALLEL, workload_by_name

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

    def workload(ranks: list[str], group: int | None):  # noqa: ANN202 - a Workload
        w = workload_by_name(
            args.workload, ranks, group, size=args.bytes, what="--bytes", xpu_flops=rates, rank_map=args.rank_map,
            comm_groups=args.comm_groups, algorithm=args.algorithm,
        )  # fmt: skip
        built.append(w)
        return w

    if args.model or args.workload is None:  # a transformer (issue 16): hcsim.cli.model_options
        from hcsim.cli.model_options import model_workload
        from hcsim.cli.training_options import training_workload

        workload = training_workload(args) if args.model and not args.inference else model_workload(args)

    if args.platform:
        if args.system:
            raise HcsimError("give either --platform FILE.xml or --system, not both")
        from hcsim.platform import simgrid_files as foreign
        from hcsim.platform.probe import host_facts, precheck_platform

        precheck_platform(args.platform)  # values SimGrid would abort on, refused in one line first
        from hcsim.formats.chakra import xpu_rates_from_platform

        if args.fast:
            raise HcsimError("--fast needs --system (it folds the system before compiling it), not --platform")
        declared = foreign.read_declared(args.platform) if _is_file(args.platform) else foreign.Declared()
        config = foreign.network_config(args.network_model or "file")
        facts = host_facts(args.platform)
        xpus, how = foreign.choose_xpus(facts, args.xpus_from or "auto", args.platform)
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
            f"{foreign.model_in_force(declared, args.network_model or 'file')}, "
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
        topo = build_topology(args, notes)
        rates.update({x: topo.nodes[x]["fp32_flops"] for x in topo.xpus()})
        training = bool(args.model) and not args.inference  # --fast folds whole replicas of its layout
        if args.fast and not training and (args.model or args.workload not in DATA_PARALLEL):
            raise HcsimError(
                f"--fast applies to data-parallel workloads and --model training, not {args.workload or args.model!r} "
                f"(valid: {', '.join(DATA_PARALLEL)}, or --model without --inference)"
            )
        fold = None  # with --fast: fold; but only ring allreduces can stand for a larger group
        if args.fast and args.algorithm is not None:
            from hcsim.collectives import algorithm

            fold = None if algorithm("allreduce", args.algorithm).ring else False
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
            )
        narrowing = _narrowing(args, built[0], topo.xpus()) if built and not args.fast else None
        semantics = "coherent" if coherent else "non-coherent"
        notes.insert(0, f"system {args.system}: network model raw, {semantics} memory ({why})")
        if result.fold_refused:
            notes.append(f"note: {result.fold_refused}; ran every XPU")
    if narrowing:
        notes.append(f"warning: {narrowing}")
    summary = report.summarize(result)
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


def _is_file(path: str) -> bool:
    import os

    return os.path.isfile(path)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``hcsim run``."""
    from hcsim.cli.platform import SYSTEMS

    r = sub.add_parser("run", help="run a workload graph on a platform and print its metrics")
    r.add_argument("--platform", help="platform XML (from 'hcsim platform build')")
    r.add_argument("--system", choices=SYSTEMS, help="or build this system on the fly")
    r.add_argument("--xpus", type=int, help="with --system: number of XPUs")
    r.add_argument("--mix", help="with --system: XPU type(s), e.g. H100+A100")
    r.add_argument("--cxl-bandwidth", help=argparse.SUPPRESS)
    r.add_argument("--cxl-latency", help=argparse.SUPPRESS)
    r.add_argument("--link-bandwidth", help=argparse.SUPPRESS)
    r.add_argument("--link-latency", help=argparse.SUPPRESS)
    r.add_argument("--hosts-per-leaf", type=int, default=16, help=argparse.SUPPRESS)
    r.add_argument("--spines", type=int, default=4, help=argparse.SUPPRESS)
    r.add_argument(
        "--workload",
        help=f"workload JSON file (Workload.to_json), Chakra trace PATH/PREFIX (PREFIX.RANK.et), AICB workload file, "
        f"or one of {', '.join(_WORKLOADS)}",
    )
    r.add_argument("--rank-map", help='Chakra/AICB: JSON file placing ranks on XPUs ({"0": "xpu3", ...} or a list)')
    r.add_argument("--comm-groups", help='Chakra: ASTRA-sim communicator-group JSON ({"1": [0, 1], ...})')
    from hcsim.cli.main import _load  # the models' options, without importing hcsim.workload (--help stays light)

    _load("hcsim.cli.model_options").add_run_options(r)  # --model --inference --batch --context --tp
    # --parallel dp=N,tp=N,pp=N --microbatches --zero --ep --schedule --sequence-parallel (training with --model)
    _load("hcsim.cli.training_options").add_training_options(r)
    r.add_argument("--bytes", default="1GiB", help="size for the allreduce workloads, e.g. 16MiB (default 1GiB)")
    r.add_argument(
        "--algorithm",
        help="allreduce algorithm of llama2-13b and allreduce (default ring): a name of 'hcsim collective "
        "--algorithm all', module:function, or an MSCCL-IR .xml",
    )
    r.add_argument("--iterations", type=int, help="iterations to run (>= 1; with --model default 1)")
    coh = r.add_mutually_exclusive_group()
    coh.add_argument(
        "--coherent",
        dest="coherent",
        action="store_true",
        default=None,
        help="coherent memory (default: --system cxl, or a --platform whose root zone has coherent=true)",
    )
    coh.add_argument(
        "--no-coherent",
        dest="coherent",
        action="store_false",
        help="non-coherent memory (default for other systems and for platforms without a 'coherent' property)",
    )
    r.add_argument(
        "--fast",
        action="store_true",
        help="fold the system to representative servers, memoize repeated ring steps and extrapolate repeating "
        "iterations (within 1%% of exact)",
    )
    r.add_argument(
        "--repeat",
        action="store_true",
        help="extrapolate the iterations after one that repeats the one before on an idle network (--fast: on)",
    )
    r.add_argument(
        "--xpus-from",
        choices=("auto", "property", "all-hosts"),  # hcsim.platform.simgrid_files.XPUS_FROM
        help="with --platform: which hosts are XPUs: those with kind=xpu ('property'), every host ('all-hosts'), "
        "or 'auto' (default): 'property' if any host has kind=xpu, else every host",
    )
    r.add_argument(
        "--network-model",
        choices=("file", "raw"),  # hcsim.platform.simgrid_files.NETWORK_MODELS
        help="with --platform: 'file' (default) runs the model the file's <config> names, or SimGrid's default "
        "LV08 if none; 'raw' forces SimGrid's raw model (lone transfer = latency + size/bandwidth)",
    )
    r.add_argument("--chrome-trace", metavar="FILE", help="write a Chrome/Perfetto trace (JSON)")
    # in 'hcsim cluster' --trace is an input: here the old spelling still works, with a note
    r.add_argument("--trace", dest="chrome_trace", metavar="FILE", action=DeprecatedAlias, new="--chrome-trace")
    r.add_argument("--csv", help="write the per-vertex trace as CSV")
    r.add_argument("--links", help="write bytes and mean/peak utilization of every used link as CSV")
    r.add_argument("--json", action="store_true", help="print the metrics as JSON")
    r.set_defaults(func=_cmd_run)
