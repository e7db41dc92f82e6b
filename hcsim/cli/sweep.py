"""``hcsim sweep``: run a parameter sweep from a YAML spec (resumable; local processes or Dask).

The sweep itself is :func:`hcsim.sweep.run_sweep`; the options are in
:func:`hcsim.cli.parsers.add_sweep`. The exit status is 1 when a point failed. The
experiment scripts take the same flags (:func:`add_sweep_arguments`) and run their
specs with :func:`sweep_from_arguments`, so any of them scales out unchanged.
"""

from __future__ import annotations

import argparse
from typing import Any

from hcsim.cli.flags import DeprecatedAlias
from hcsim.errors import HcsimError
from hcsim.files import check_outputs
from hcsim.sweep import SweepSpec, load_spec, read_results, run_sweep
from hcsim.sweep.runner import timings_path

__all__ = ["MAX_WORKERS", "add_sweep_arguments", "main", "sweep_from_arguments"]

MAX_WORKERS = 256
"""Most parallel points (``-j/--workers``): each is a process (and a Dask worker with ``--executor dask``)."""


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim sweep``; the exit status."""
    if args.workers is not None and not 1 <= args.workers <= MAX_WORKERS:
        raise HcsimError(
            f"-j/--workers {args.workers} is invalid (valid: an integer from 1 to {MAX_WORKERS} parallel points)"
        )
    if args.out is not None:
        check_outputs(files={"--out": args.out})
    spec = load_spec(args.spec)
    out = args.out if args.out is not None else spec.out
    if out is not None:
        flag = "--out" if args.out is not None else "the spec's 'out:'"
        check_outputs(files={flag: out, f"{flag} (timings)": timings_path(out)}, inputs={"spec": args.spec})
    report = run_sweep(spec, out=args.out, executor=args.executor, jobs=args.workers, scheduler=args.scheduler)
    print(
        f"{report.out}: {report.total} points, {report.skipped} already done, {report.ok} ok, "
        f"{report.failed} failed, in {report.seconds:.1f} s"
    )
    return 0 if report.failed == 0 else 1


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags every experiment script shares: ``--executor``, ``--scheduler``, ``-j/--workers``."""
    parser.add_argument("--executor", choices=("local", "dask"), default="local", help="where points run")
    parser.add_argument("--scheduler", help="Dask scheduler address (default: a local cluster)")
    parser.add_argument(
        "-j", "--workers", type=int, help="parallel processes: points at once, or local Dask workers (default: CPUs)"
    )
    parser.add_argument("--jobs", dest="workers", type=int, action=DeprecatedAlias, new="-j/--workers")


def sweep_from_arguments(spec: SweepSpec, args: argparse.Namespace, out: str) -> list[dict[str, Any]]:
    """Run ``spec`` with the flags of :func:`add_sweep_arguments`; the latest ok row of every point of the spec."""
    run_sweep(spec, out=out, executor=args.executor, jobs=args.workers, scheduler=args.scheduler)
    wanted = {p.id for p in spec.expand()}
    latest = {r["id"]: r for r in read_results(out) if r.get("status") == "ok" and r["id"] in wanted}
    return [latest[p.id] for p in spec.expand() if p.id in latest]
