"""The ``hcsim`` command: the top-level parser and dispatch, nothing else.

Each package registers its own subcommands: a module ``commands.py`` with
``register(sub)`` that adds its parser(s) with ``set_defaults(func=handler)``, where
``handler(args) -> int`` returns the exit status. The commands and where they live:

=============================  ===========================================
``hcsim platform ...``         :mod:`hcsim.cli.platform`
``hcsim run``                  :mod:`hcsim.cli.run`
``hcsim collective``           :mod:`hcsim.cli.collective`
``hcsim sweep``                :mod:`hcsim.cli.sweep`
``hcsim serve`` (``queue``)    :mod:`hcsim.cli.serve`
``hcsim cluster``              :mod:`hcsim.cli.cluster`
``hcsim queue-selection``      :mod:`hcsim.cli.queue_selection`
(``queues``)
``hcsim demo``                 :mod:`hcsim.cli.demo`
=============================  ===========================================

A commands module imports only the standard library, :mod:`hcsim.errors` and
:mod:`hcsim.units` at its top; everything else inside its handlers. This module loads
it without running its package's ``__init__`` (which pulls in networkx, numpy and
SimGrid), so ``hcsim --help`` and bad usage answer at once.

Every bad input ends the same way: one line ``hcsim: error: ...`` naming the item and
what is valid, exit status 2, no traceback, no partial output file.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import ModuleType

from hcsim.errors import HcsimError

COMMAND_MODULES = (
    "hcsim.cli.platform",
    "hcsim.cli.run",
    "hcsim.cli.collective",
    "hcsim.cli.sweep",
    "hcsim.cli.serve",
    "hcsim.cli.cluster",
    "hcsim.cli.queue_selection",
    "hcsim.cli.demo",
)
"""The modules whose ``register(sub)`` adds the subcommands, in the order ``--help`` lists them."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (exit 2) like every other bad input."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"hcsim: error: {message} (see '{self.prog} --help')\n")


def _load(name: str) -> ModuleType:
    """Import the commands module ``name``, without running its package's ``__init__`` if not imported yet.

    The module is registered in ``sys.modules`` under its own name, so ``from
    hcsim.cli.platform import build_topology`` finds it later like any module.
    """
    parent = name.rpartition(".")[0]
    if name in sys.modules or parent in sys.modules:
        return importlib.import_module(name)
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), *name.split(".")[1:]) + ".py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, name
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def make_parser() -> argparse.ArgumentParser:
    """The ``hcsim`` parser with every package's subcommands."""
    parser = _Parser(prog="hcsim", description="Simulate heterogeneous, cache-coherent AI systems on SimGrid.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMAND_MODULES:
        _load(name).register(sub)
    return parser


_STOPPED_BY: list[int] = []  # the signal that stopped the command, if one did


def _interrupt_once(signum: int, frame: object) -> None:
    """The first Ctrl-C (or SIGTERM) stops the command; later ones are ignored while it cleans up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _STOPPED_BY.append(signum)
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the command, return its exit status.

    Ctrl-C, once or several times, ends with one line ``hcsim: interrupted`` and exit 130
    (SIGTERM: ``hcsim: terminated``, 143): the first signal interrupts, and the cleanup it
    starts (kill the simulation children, remove temporary files) is not interrupted by
    the next ones.
    """
    parser = make_parser()
    args = parser.parse_args(argv)
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    own = (
        threading.current_thread() is threading.main_thread()
        and previous[signal.SIGINT] is signal.default_int_handler
        and previous[signal.SIGTERM] == signal.SIG_DFL
    )
    if own:
        _STOPPED_BY.clear()
        for s in previous:
            signal.signal(s, _interrupt_once)
    try:
        return _dispatch(args)
    finally:  # once stopped, both signals stay ignored until the process has exited
        if own and not _STOPPED_BY:
            for s, handler in previous.items():
                signal.signal(s, handler)


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command; turn the ways it can fail into one line and an exit status."""
    try:
        return args.func(args)
    except HcsimError as exc:
        print(f"hcsim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if _STOPPED_BY and _STOPPED_BY[0] == signal.SIGTERM:
            print("hcsim: terminated", file=sys.stderr)
            return 128 + signal.SIGTERM
        print("hcsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into head: nothing left to say
        sys.stderr.close()
        return 0
    except OSError as exc:  # a path the system refused (read-only, /proc, a directory, ...): name it
        where = f" '{exc.filename}'" if exc.filename else ""
        reason = exc.strerror or str(exc)
        print(
            f"hcsim: error: cannot use{where}: {reason} (valid: a readable input file, a writable output path)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
