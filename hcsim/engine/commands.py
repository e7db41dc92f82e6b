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


def _cmd_run(args: argparse.Namespace) -> int:
    import json

    from hcsim.engine import report, simulate, simulate_system
    from hcsim.files import check_output_path
    from hcsim.platform.commands import build_topology
    from hcsim.workload.named import DATA_PARALLEL, workload_by_name

    if args.iterations is None:
        if not args.model:
            raise HcsimError("--iterations is required (valid: an integer >= 1)")
        args.iterations = 1
    if isinstance(args.iterations, int) and args.iterations < 1:
        raise HcsimError(f"--iterations {args.iterations} is invalid (valid: an integer >= 1)")
    for out in (args.trace, args.csv, args.links):
        if out:
            check_output_path(out)

    def workload(ranks: list[str], group: int | None):  # noqa: ANN202 - a Workload
        return workload_by_name(args.workload, ranks, group, size=args.bytes, what="--bytes")

    if args.model or args.workload is None:  # a transformer (issue 16): hcsim.workload.models.commands
        from hcsim.workload.models.commands import model_workload
        from hcsim.workload.parallel.commands import training_workload

        workload = training_workload(args) if args.model and not args.inference else model_workload(args)

    if args.platform:
        if args.system:
            raise HcsimError("give either --platform FILE.xml or --system, not both")
        from hcsim.engine.simulator import platform_xpus

        xpus = platform_xpus(args.platform)
        if args.fast:
            raise HcsimError("--fast needs --system (it folds the system before compiling it), not --platform")
        result = simulate(args.platform, workload(xpus, None), args.iterations, coherent=bool(args.coherent))
    else:
        if not args.system:
            raise HcsimError("a platform is required (valid: --platform FILE.xml or --system cxl|noncoherent)")
        topo = build_topology(args)
        if args.fast and (args.model or args.workload not in DATA_PARALLEL):
            raise HcsimError(
                f"--fast applies to data-parallel workloads, not {args.workload or args.model!r} "
                f"(valid: {', '.join(DATA_PARALLEL)})"
            )
        coherent = args.system == "cxl" if args.coherent is None else args.coherent
        result = simulate_system(topo, workload, args.iterations, coherent=coherent, fast=args.fast)
    summary = report.summarize(result)
    if args.trace:
        report.write_chrome_trace(result, args.trace)
    if args.csv:
        report.write_csv(result, args.csv)
    if args.links:
        report.write_links_csv(result, args.links)
    print(json.dumps(summary, indent=1, sort_keys=True) if args.json else report.format_summary(summary))
    return 0


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
    r.add_argument("--workload", help=f"workload JSON file (Workload.to_json) or one of {', '.join(_WORKLOADS)}")
    from hcsim.cli import _load  # the models' options, without importing hcsim.workload (--help stays light)

    _load("hcsim.workload.models.commands").add_run_options(r)  # --model --inference --batch --context --tp
    # --parallel dp=N,tp=N,pp=N --microbatches --zero --ep --schedule --sequence-parallel (training with --model)
    _load("hcsim.workload.parallel.commands").add_training_options(r)
    r.add_argument("--bytes", default="1GiB", help="size for the allreduce workloads, e.g. 16MiB (default 1GiB)")
    r.add_argument("--iterations", type=int, help="iterations to run (>= 1; with --model default 1)")
    coh = r.add_mutually_exclusive_group()
    coh.add_argument("--coherent", dest="coherent", action="store_true", default=None, help="coherent memory")
    coh.add_argument("--no-coherent", dest="coherent", action="store_false", help="non-coherent memory")
    r.add_argument(
        "--fast",
        action="store_true",
        help="fold the system to representative servers and memoize repeated ring steps (within 1%% of exact)",
    )
    r.add_argument("--trace", help="write a Chrome/Perfetto trace (JSON)")
    r.add_argument("--csv", help="write the per-vertex trace as CSV")
    r.add_argument("--links", help="write bytes and mean/peak utilization of every used link as CSV")
    r.add_argument("--json", action="store_true", help="print the metrics as JSON")
    r.set_defaults(func=_cmd_run)
