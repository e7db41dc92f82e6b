"""The ``hcsim`` command: the table of subcommands, the top-level parser and dispatch.

Each subcommand is one module with ``main(args) -> int`` (the exit status); its options
are built by :mod:`hcsim.cli.parsers`, which imports no library module, so ``hcsim
--help`` and usage errors load no networkx, numpy or SimGrid. :data:`COMMANDS` pairs
them, in ``--help`` order; a command's module is imported only when the command runs::

    hcsim platform build|compile|import|check|draw   hcsim.cli.platform
    hcsim run                                        hcsim.cli.run
    hcsim collective                                 hcsim.cli.collective
    hcsim sweep                                      hcsim.cli.sweep
    hcsim serve (alias queue)                        hcsim.cli.serve
    hcsim cluster                                    hcsim.cli.cluster
    hcsim queue-selection (alias queues)             hcsim.cli.queue_selection
    hcsim demo                                       hcsim.cli.demo

Every bad input ends the same way: one line ``hcsim: error: ...`` naming the item and
what is valid, exit status 2, no traceback, no partial output file.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import NamedTuple

from hcsim.cli.parsers import (
    add_cluster,
    add_collective,
    add_demo,
    add_platform,
    add_queue_selection,
    add_run,
    add_serve,
    add_sweep,
)
from hcsim.errors import HcsimError

__all__ = ["COMMANDS", "Command", "load_handler", "main", "make_parser"]


class Command(NamedTuple):
    """A subcommand: its name, the function adding its parser, and its handler as ``module:function``."""

    name: str
    add_parser: Callable[[argparse._SubParsersAction], argparse.ArgumentParser]
    handler: str


COMMANDS = (
    Command("platform", add_platform, "hcsim.cli.platform:main"),
    Command("run", add_run, "hcsim.cli.run:main"),
    Command("collective", add_collective, "hcsim.cli.collective:main"),
    Command("sweep", add_sweep, "hcsim.cli.sweep:main"),
    Command("serve", add_serve, "hcsim.cli.serve:main"),
    Command("cluster", add_cluster, "hcsim.cli.cluster:main"),
    Command("queue-selection", add_queue_selection, "hcsim.cli.queue_selection:main"),
    Command("demo", add_demo, "hcsim.cli.demo:main"),
)
"""The subcommands, in the order ``--help`` lists them."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (exit 2) like every other bad input."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"hcsim: error: {message} (see '{self.prog} --help')\n")


def make_parser() -> argparse.ArgumentParser:
    """The ``hcsim`` parser with every subcommand; ``args.handler`` names the one to run."""
    parser = _Parser(prog="hcsim", description="Simulate heterogeneous, cache-coherent AI systems on SimGrid.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.add_parser(sub).set_defaults(handler=command.handler)
    return parser


def load_handler(spec: str) -> Callable[[argparse.Namespace], int]:
    """The function ``module:function`` names, importing its module (and the library with it) now."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


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
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _dispatch(args, exit_when_stopped=argv is None)
    finally:  # once stopped, both signals stay ignored until the process has exited
        if own and not _STOPPED_BY:
            for s, handler in previous.items():
                signal.signal(s, handler)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: object = None,
    line: object = None,
) -> None:
    """hcsim's own warnings as one line ``hcsim: warning: ...`` (no source line); others as Python shows them."""
    if os.path.abspath(filename).startswith(_PACKAGE):
        print(f"hcsim: warning: {message}", file=sys.stderr)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, None))


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _dispatch(args: argparse.Namespace, exit_when_stopped: bool = False) -> int:
    """Run the command; turn the ways it can fail into one line and an exit status.

    ``exit_when_stopped`` (the program's own entry, ``argv`` from the command line): once a
    signal has stopped the command and its cleanup has run (the simulation child killed and
    reaped, scratch files removed, both on the way out), the process ends at once, before
    Python frees the run's objects (a large workload graph takes a second or more).
    """
    try:
        return load_handler(args.handler)(args)
    except HcsimError as exc:
        print(f"hcsim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        terminated = bool(_STOPPED_BY) and _STOPPED_BY[0] == signal.SIGTERM
        print("hcsim: terminated" if terminated else "hcsim: interrupted", file=sys.stderr)
        status = 128 + signal.SIGTERM if terminated else 130
        if exit_when_stopped:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(status)
        return status
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
