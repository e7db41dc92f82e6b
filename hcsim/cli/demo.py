"""``hcsim demo``: the paper's two systems at a small scale (see :mod:`hcsim.demo`).

Only the standard library at the top: the ``hcsim`` command loads this module for
``--help`` (see :mod:`hcsim.cli`).
"""

from __future__ import annotations

import argparse

__all__ = ["register"]


def _cmd_demo(args: argparse.Namespace) -> int:
    from hcsim.demo import run_demo

    return run_demo(args.xpus, args.out)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``hcsim demo``."""
    demo = sub.add_parser("demo", help="build the CXL system, simulate transfers in SimGrid, draw it")
    demo.add_argument(
        "--xpus", type=int, default=32, help="XPUs of the demo systems: a multiple of 8 from 16 to 256 (default 32)"
    )
    demo.add_argument("--out", default="results/demo", help="directory for the demo's files")
    demo.set_defaults(func=_cmd_demo)
