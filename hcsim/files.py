"""Output files: refuse unwritable paths up front, write atomically (never half a file).

:func:`check_input_file` and :func:`check_output_path` refuse a missing, unreadable or
unwritable path before any work starts, in one line naming it; :func:`atomic_path`,
:func:`atomic_write_text` and :func:`temporary_beside` write to a temporary file beside
the target and rename it at the end.

Invariant: a crash or Ctrl-C leaves either the old file or the whole new one, never half
a file. :mod:`hcsim.outputs` writes every format through this module.
"""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from hcsim.errors import HcsimError

__all__ = ["check_input_file", "check_output_path", "atomic_path", "atomic_write_text", "temporary_beside"]


def check_input_file(path: str | os.PathLike[str], what: str, valid: str) -> str:
    """Refuse an input that is missing, a directory or unreadable, naming it; return the path as a string.

    ``what`` names the input (e.g. "GraphML file"), ``valid`` says what would do. Root
    passes ``os.access`` for any file, so readability is checked by opening it.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise HcsimError(f"{what} '{path}' is a directory (valid: {valid})")
    if not os.path.exists(path):
        raise HcsimError(f"{what} '{path}' does not exist (valid: {valid})")
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as exc:
        raise HcsimError(f"{what} '{path}' cannot be read: {exc.strerror} (valid: {valid})") from None
    return path


def check_output_path(path: str | os.PathLike[str]) -> str:
    """Refuse an output path that cannot be written; return its directory."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(directory):
        raise HcsimError(f"output '{path}': directory '{directory}' does not exist (valid: a writable path)")
    if not os.access(directory, os.W_OK):
        raise HcsimError(f"output '{path}': directory '{directory}' is not writable (valid: a writable path)")
    if os.path.isdir(path):
        raise HcsimError(f"output '{path}' is a directory (valid: a file path)")
    return directory


def temporary_beside(path: str | os.PathLike[str], suffix: str = ".tmp") -> str:
    """A new empty file next to ``path``, to be renamed over it when complete."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".hcsim-", suffix=suffix, dir=check_output_path(path))
    except OSError as exc:  # root passes os.access on read-only mounts, /proc and /sys: the create tells
        raise HcsimError(
            f"output '{os.fspath(path)}' cannot be written: {exc.strerror} (valid: a writable path)"
        ) from None
    os.close(fd)
    os.chmod(tmp, 0o644)
    return tmp


@contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str = ".tmp") -> Iterator[str]:
    """A temporary path beside ``path`` to write; renamed over ``path`` if the block ends normally, else removed.

    ``suffix`` keeps the extension writers look at (e.g. ``".png"`` for matplotlib).
    """
    tmp = None
    try:
        with _signals_held():  # a Ctrl-C or SIGTERM lands after ``tmp`` is known, so the finally removes it
            tmp = temporary_beside(path, suffix)
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait (blocked by the OS) until the block ends: it cannot be cut in two."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        f.write(text)
