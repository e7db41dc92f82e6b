"""``hcsim sweep``: run a parameter sweep from a YAML spec (resumable; local processes or Dask).

Only the standard library at the top: the ``hcsim`` command loads this module for
``--help`` (see :mod:`hcsim.cli`).
"""

from __future__ import annotations

import argparse

from hcsim.errors import HcsimError

__all__ = ["MAX_JOBS", "register"]

MAX_JOBS = 256
"""Most parallel points (``-j``): each is a process of its own (and a Dask worker with ``--executor dask``)."""


def _cmd_sweep(args: argparse.Namespace) -> int:
    from hcsim.sweep import load_spec, run_sweep

    if args.jobs is not None and not 1 <= args.jobs <= MAX_JOBS:
        raise HcsimError(f"-j/--jobs {args.jobs} is invalid (valid: an integer from 1 to {MAX_JOBS} parallel points)")
    spec = load_spec(args.spec)
    report = run_sweep(spec, out=args.out, executor=args.executor, jobs=args.jobs, scheduler=args.scheduler)
    print(
        f"{report.out}: {report.total} points, {report.skipped} already done, {report.ok} ok, "
        f"{report.failed} failed, in {report.seconds:.1f} s"
    )
    return 0 if report.failed == 0 else 1


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``hcsim sweep``."""
    sw = sub.add_parser("sweep", help="run a parameter sweep (resumable; local processes or Dask)")
    sw.add_argument("spec", help="sweep spec (YAML): function, grid, fixed, points, timeout, out")
    sw.add_argument("--executor", choices=("local", "dask"), default="local", help="where points run")
    sw.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786 (default: a local cluster)")
    sw.add_argument("-j", "--jobs", type=int, help="parallel points / local Dask workers (default: CPU count)")
    sw.add_argument("--out", help="results file, JSON lines (default: the spec's 'out')")
    sw.set_defaults(func=_cmd_sweep)
