"""The trace-format registry: name -> reader, writer, file extensions and content sniffing.

:func:`read_trace` and :func:`guess_format` know the formats only through this table, so
a new format is one module plus one :func:`register_format` call. A format's ``sniff``
looks at the start of a file and says how sure it is that the file is in that format
(0: not this format; higher wins, the first registered on a tie).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from hcsim.errors import HcsimError
from hcsim.frontends.cluster.jobs import Trace
from hcsim.frontends.cluster.traces._common import _label, _read_text, _show
from hcsim.frontends.cluster.traces.helios import read_helios
from hcsim.frontends.cluster.traces.philly import read_philly
from hcsim.frontends.cluster.traces.swf import read_swf, write_swf
from hcsim.registry import Registry

__all__ = [
    "FORMATS",
    "TRACE_FORMATS",
    "TraceFormat",
    "guess_format",
    "read_trace",
    "register_format",
    "write_trace",
]

_SNIFF_BYTES = 65536  # only the start of a file: real traces reach 100 MB


@dataclass(frozen=True)
class TraceFormat:
    """One trace format.

    ``read(path, *, gpus_per_node, progress, sort)`` returns a Trace (``sort`` sorts an
    unsorted file of a format defined as sorted, instead of rejecting it); ``write(trace,
    path)`` saves one, or is None for read-only formats; ``extensions`` (lower case, with
    the dot) name the format by themselves; ``sniff(start, first_line)`` rates the file's
    first characters (0 = not this format).
    """

    name: str
    read: Callable[..., Trace]
    write: Callable[[Trace, str | os.PathLike[str]], None] | None
    extensions: tuple[str, ...]
    sniff: Callable[[str, str], int]


FORMATS: Registry[TraceFormat] = Registry("trace format", show=_show)


def register_format(fmt: TraceFormat) -> TraceFormat:
    """Add (or replace) a format in the registry; returns it."""
    return FORMATS.register(fmt.name, fmt)


def _sniff_helios(start: str, first_line: str) -> int:
    header = {column.strip() for column in first_line.split(",")}
    return 2 if "gpu_num" in header and "submit_time" in header else 0


def _sniff_philly(start: str, first_line: str) -> int:
    if start.startswith("["):
        return 3
    return 2 if start.startswith("{") else 0  # one job object, as in the Philly README's example


def _sniff_swf(start: str, first_line: str) -> int:
    if start.startswith(";"):
        return 3
    return 1 if len(first_line.split()) == 18 else 0


def _read_philly(path: str | os.PathLike[str], *, gpus_per_node: int, progress: bool | None, sort: bool) -> Trace:
    return read_philly(path, gpus_per_node=gpus_per_node, progress=progress)  # sorted after reading, always


register_format(TraceFormat("helios", read_helios, None, (".csv",), _sniff_helios))
register_format(TraceFormat("philly", _read_philly, None, (".json",), _sniff_philly))
register_format(TraceFormat("swf", read_swf, write_swf, (".swf",), _sniff_swf))

#: The built-in formats' names.
TRACE_FORMATS = tuple(FORMATS)


def _names() -> str:
    return ", ".join(FORMATS.names())


def guess_format(path: str | os.PathLike[str]) -> str:
    """The trace format of a file from its extension or first characters, so users need not say it."""
    name = os.fspath(path)
    stem, ext = os.path.splitext(name)
    ext = ext.lower()
    if ext == ".gz":  # trace.swf.gz: the format is named by the extension under the compression
        ext = os.path.splitext(stem)[1].lower()
    for fmt in FORMATS.values():
        if ext in fmt.extensions:
            return fmt.name
    start = _read_text(name, "trace", head=_SNIFF_BYTES).lstrip()
    first_line = start.split("\n", 1)[0]
    best, score = None, 0
    for fmt in FORMATS.values():
        s = fmt.sniff(start, first_line)
        if s > score:
            best, score = fmt.name, s
    if best is None:
        extensions = "/".join(e for fmt in reversed(FORMATS.values()) for e in fmt.extensions)
        raise HcsimError(
            f"{_label(name)}: cannot tell the trace format (valid: {_names()}; "
            f"name it with --format (format= in Python), or use a {extensions} file, gzipped or not)"
        )
    return best


def _lookup(format: str) -> TraceFormat:
    if isinstance(format, str) and format.lower() in FORMATS:
        return FORMATS[format.lower()]
    raise FORMATS.unknown(format)


def read_trace(
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    gpus_per_node: int = 8,
    progress: bool | None = None,
    sort: bool = False,
) -> Trace:
    """Read a job trace in any supported format (guessed from the file when ``format`` is None).

    One entry point for the CLI and experiments; ``sort`` applies to the formats defined
    as sorted (Helios, SWF): sort an unsorted file instead of rejecting it.
    """
    fmt = FORMATS[guess_format(path)] if format is None else _lookup(format)
    return fmt.read(path, gpus_per_node=gpus_per_node, progress=progress, sort=sort)


def write_trace(trace: Trace, path: str | os.PathLike[str], format: str = "swf") -> None:
    """Save ``trace`` in ``format`` (a format with a writer: swf)."""
    fmt = _lookup(format)
    if fmt.write is None:
        writable = ", ".join(f.name for f in FORMATS.values() if f.write is not None)
        raise HcsimError(f"trace format {fmt.name!r} cannot be written (valid: {writable})")
    fmt.write(trace, path)
