"""``hcsim sweep``: run a parameter sweep from a YAML spec (resumable; local processes or Dask).

Only the standard library at the top: the ``hcsim`` command loads this module for
``--help`` (see :mod:`hcsim.cli`).
"""

from __future__ import annotations

import argparse

from hcsim.errors import HcsimError
from hcsim.cli.flags import DeprecatedAlias

__all__ = ["MAX_WORKERS", "register"]

MAX_WORKERS = 256
"""Most parallel points (``-j/--workers``): each is a process (and a Dask worker with ``--executor dask``)."""


def _cmd_sweep(args: argparse.Namespace) -> int:
    from hcsim.sweep import load_spec, run_sweep

    if args.workers is not None and not 1 <= args.workers <= MAX_WORKERS:
        raise HcsimError(
            f"-j/--workers {args.workers} is invalid (valid: an integer from 1 to {MAX_WORKERS} parallel points)"
        )
    spec = load_spec(args.spec)
    report = run_sweep(spec, out=args.out, executor=args.executor, jobs=args.workers, scheduler=args.scheduler)
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
    sw.add_argument(
        "-j",
        "--workers",
        type=int,
        help="parallel processes: points at once, or local Dask workers (a count; default: CPU count)",
    )
    sw.add_argument("--jobs", dest="workers", type=int, action=DeprecatedAlias, new="-j/--workers")
    sw.add_argument("--out", help="results file, JSON lines (default: the spec's 'out')")
    sw.set_defaults(func=_cmd_sweep)
