"""``hcsim sweep``: run a parameter sweep from a YAML spec (resumable; local processes or Dask).

The sweep itself is :func:`hcsim.sweep.run_sweep`; the options are in
:func:`hcsim.cli.parsers.add_sweep`. The exit status is 1 when a point failed.
"""

from __future__ import annotations

import argparse

from hcsim.errors import HcsimError
from hcsim.sweep import load_spec, run_sweep

__all__ = ["MAX_WORKERS", "main"]

MAX_WORKERS = 256
"""Most parallel points (``-j/--workers``): each is a process (and a Dask worker with ``--executor dask``)."""


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim sweep``; the exit status."""
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
