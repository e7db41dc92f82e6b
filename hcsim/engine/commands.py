"""``hcsim run``: run a workload graph on a platform and print its metrics.

The platform is a compiled XML file (``--platform``) or a system built on the fly
(``--system``, the options of ``hcsim platform build``), run through
:func:`hcsim.engine.fast.simulate_system` (``--fast`` folds and memoizes). The workload
is picked by :func:`hcsim.workload.named.workload_by_name`. Only the standard library at
the top: the ``hcsim`` command loads this module for ``--help`` (see :mod:`hcsim.cli`).
"""

from __future__ import annotations

import argparse

from hcsim.errors import HcsimError

__all__ = ["register"]

_WORKLOADS = ("allreduce", "coherent-allreduce", "fig3", "llama2-13b")  # hcsim.workload.named.WORKLOADS


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
    return f"workload {args.workload!r} uses {used} of the platform's {len(xpus)} XPUs (the others stay idle)"


def _chrome_trace_path(args: argparse.Namespace, notes: list[str]) -> str | None:
    """``--chrome-trace``, or the deprecated ``--trace`` (an output here, an input in 'hcsim cluster')."""
    if args.trace_deprecated is None:
        return args.chrome_trace
    if args.chrome_trace is not None:
        raise HcsimError("give --chrome-trace only (--trace is its deprecated alias), not both")
    notes.append("warning: --trace is deprecated in 'run' (it writes a Chrome trace): use --chrome-trace")
    return args.trace_deprecated


def _cmd_run(args: argparse.Namespace) -> int:
    import json
    import sys

    from hcsim.engine import report, simulate, simulate_system
    from hcsim.files import check_output_path
    from hcsim.platform.commands import build_topology
    from hcsim.workload.named import DATA_PARALLEL, workload_by_name

    if isinstance(args.iterations, int) and args.iterations < 1:
        raise HcsimError(f"--iterations {args.iterations} is invalid (valid: an integer >= 1)")
    notes: list[str] = []  # printed on stderr once the run has succeeded (a failure prints one line only)
    trace = _chrome_trace_path(args, notes)
    for out in (trace, args.csv, args.links):
        if out:
            check_output_path(out)

    def workload(ranks: list[str], group: int | None):  # noqa: ANN202 - a Workload
        return workload_by_name(args.workload, ranks, group, size=args.bytes, what="--bytes")

    if args.platform:
        if args.system:
            raise HcsimError("give either --platform FILE.xml or --system, not both")
        from hcsim.platform import foreign
        from hcsim.platform.probe import host_facts

        if args.fast:
            raise HcsimError("--fast needs --system (it folds the system before compiling it), not --platform")
        declared = foreign.read_declared(args.platform) if _is_file(args.platform) else foreign.Declared()
        config = foreign.network_config(args.network_model or "file")
        facts = host_facts(args.platform)
        xpus, how = foreign.choose_xpus(facts, args.xpus_from or "auto", args.platform)
        if args.coherent is not None:
            coherent, why = args.coherent, "--coherent" if args.coherent else "--no-coherent"
        elif declared.coherent is not None:
            coherent, why = declared.coherent, "the platform's 'coherent' property"
        else:
            coherent, why = False, "default: the platform sets no 'coherent' property"
        work = workload(xpus, None)
        narrowing = _narrowing(args, work, xpus)
        result = simulate(args.platform, work, args.iterations, coherent=coherent, xpus=xpus, config=config)
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
        if args.fast and args.workload not in DATA_PARALLEL:
            raise HcsimError(
                f"--fast applies to data-parallel workloads, not {args.workload!r} (valid: {', '.join(DATA_PARALLEL)})"
            )
        narrowing = None
        if args.workload not in DATA_PARALLEL:  # the named data-parallel workloads use every XPU
            narrowing = _narrowing(args, workload(topo.xpus(), None), topo.xpus())
        coherent = args.system == "cxl" if args.coherent is None else args.coherent
        why = f"--system {args.system}" if args.coherent is None else ("--coherent" if coherent else "--no-coherent")
        result = simulate_system(topo, workload, args.iterations, coherent=coherent, fast=args.fast)
        semantics = "coherent" if coherent else "non-coherent"
        notes.insert(0, f"system {args.system}: network model raw, {semantics} memory ({why})")
    if narrowing:
        notes.append(f"warning: {narrowing}")
    summary = report.summarize(result)
    if trace:
        report.write_chrome_trace(result, trace)
    if args.csv:
        report.write_csv(result, args.csv)
    if args.links:
        report.write_links_csv(result, args.links)
    for note in notes:
        print(f"hcsim: {note}", file=sys.stderr)
    print(json.dumps(summary, indent=1, sort_keys=True) if args.json else report.format_summary(summary))
    return 0


def _is_file(path: str) -> bool:
    import os

    return os.path.isfile(path)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``hcsim run``."""
    from hcsim.platform.commands import SYSTEMS

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
        "--workload", required=True, help=f"workload JSON file (Workload.to_json) or one of {', '.join(_WORKLOADS)}"
    )
    r.add_argument("--bytes", default="1GiB", help="size for the allreduce workloads, e.g. 16MiB (default 1GiB)")
    r.add_argument("--iterations", type=int, required=True, help="iterations to run (>= 1)")
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
        help="fold the system to representative servers and memoize repeated ring steps (within 1%% of exact)",
    )
    r.add_argument(
        "--xpus-from",
        choices=("auto", "property", "all-hosts"),  # hcsim.platform.foreign.XPUS_FROM
        help="with --platform: which hosts are XPUs: those with kind=xpu ('property'), every host ('all-hosts'), "
        "or 'auto' (default): 'property' if any host has kind=xpu, else every host",
    )
    r.add_argument(
        "--network-model",
        choices=("file", "raw"),  # hcsim.platform.foreign.NETWORK_MODELS
        help="with --platform: 'file' (default) runs the model the file's <config> names, or SimGrid's default "
        "LV08 if none; 'raw' forces SimGrid's raw model (lone transfer = latency + size/bandwidth)",
    )
    r.add_argument("--chrome-trace", metavar="FILE", help="write a Chrome/Perfetto trace (JSON)")
    r.add_argument("--trace", dest="trace_deprecated", metavar="FILE", help=argparse.SUPPRESS)  # old --chrome-trace
    r.add_argument("--csv", help="write the per-vertex trace as CSV")
    r.add_argument("--links", help="write bytes and mean/peak utilization of every used link as CSV")
    r.add_argument("--json", action="store_true", help="print the metrics as JSON")
    r.set_defaults(func=_cmd_run)
