"""``hcsim demo``: the paper's two systems at a small scale.

The demo itself is :func:`hcsim.demo.run_demo`: it builds the CXL system, simulates
transfers in SimGrid and draws it into ``--out``; ``--xpus`` is checked there (a
multiple of 8 from 16 to 256). The options are in :func:`hcsim.cli.parsers.add_demo`.
"""

from __future__ import annotations

import argparse

from hcsim.demo import run_demo
from hcsim.files import check_outputs

__all__ = ["main"]


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim demo``; the exit status."""
    check_outputs(dirs={"--out": args.out})
    return run_demo(args.xpus, args.out)
