"""``hcsim queue-selection`` (alias ``queues``): Kawanami's queue selection for batch supercomputers.

The simulation clock is in minutes, so ``--period`` and ``--offset`` take a bare number
as minutes, or a duration with a unit (``--period 168h``, ``--offset 2.5h``). The run
itself is :func:`hcsim.frontends.queue_selection.runner.run_from_arguments`. Only the
standard library at the top: the ``hcsim`` command loads this module for ``--help``
(see :mod:`hcsim.cli`).
"""

from __future__ import annotations

import argparse

from hcsim.cli.flags import rate_type
from hcsim.units import parse_minutes

__all__ = ["add_arguments", "minutes_list", "register"]


def minutes_list(text: str, what: str) -> str:
    """``text`` (comma-separated windows) with every duration that has a unit turned into minutes."""
    items = []
    for item in str(text).split(","):
        try:
            float(item)
        except ValueError:
            if item.strip():
                item = repr(parse_minutes(item, what))
        items.append(item)  # bare numbers are minutes already and are checked by the run as before
    return ",".join(items)


def _cmd_queue_selection(args: argparse.Namespace) -> int:
    from hcsim.frontends.queue_selection.runner import run_from_arguments

    return run_from_arguments(args)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``hcsim queue-selection`` (alias ``queues``, its former name)."""
    p = sub.add_parser(
        "queue-selection",
        aliases=["queues"],
        help="queue selection for batch supercomputers (Kawanami): Random/MQL/MAQL/Offset",
    )
    add_arguments(p)
    p.set_defaults(func=_cmd_queue_selection)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``hcsim queue-selection`` (for other parsers too: the studies, the tests)."""
    p.add_argument(
        "--method",
        default="all",
        help="random, mql, maql, offset, a comma-separated list, or all (= all four; default all)",
    )
    p.add_argument("--set", dest="set_name", metavar="SET", default="1d", help="parameter set 1a..3d (default 1d)")
    p.add_argument(
        "--offset",
        default="150",
        help="offset window M, e.g. 150 or 2.5h (bare number: minutes); several comma-separated (default 150)",
    )
    p.add_argument("--model", default="paper", help="paper (no waiting, the paper's model) or fifo (default paper)")
    p.add_argument("--servers", type=int, default=None, help="fifo: servers per queue (default 1)")
    p.add_argument("--replications", type=int, default=20, help="simulated periods (default 20)")
    p.add_argument(
        "--period", help="length of a replication, e.g. 10080 or 168h (bare number: minutes; default 10080, a week)"
    )
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--arrival", default="lomax", help="lomax (the paper's) or poisson (with --rate)")
    p.add_argument(
        "--rate",
        type=rate_type("--rate", per="min"),
        default=None,
        help="poisson arrival rate, e.g. 0.1/min or 6/h (bare number: per minute)",
    )
    p.add_argument("--offset-ties", default="lowest", help="offset ties: lowest id or random (default lowest)")
    p.add_argument(
        "--offset-rule", default="fewest", help="offset picks the queue with the fewest (default) or most completions"
    )
    p.add_argument("-j", "--workers", type=int, default=1, help="parallel SimGrid processes (default 1)")
    p.add_argument("--out", default=None, help="directory for summary.csv, cdf.csv, cdf.png")
