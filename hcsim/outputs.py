"""One way to write what hcsim produces: CSV, JSON, figures and Chrome traces, every file atomic.

:func:`write_csv` / :func:`csv_text` (floats by ``repr``, the shortest text that reads
back the same), :func:`write_json` / :func:`json_text` / :func:`json_line` (sorted keys),
:func:`save_figure` and :class:`ChromeTrace` (the Trace Event format of chrome://tracing
and Perfetto, times given in seconds and written in microseconds).

Invariant: every writer goes through a temporary file beside the target and a rename
(:mod:`hcsim.files`), so a crash or Ctrl-C never leaves half a file, and the same rows
give the same bytes.

Example::

    write_csv("jobs.csv", [{"job": 1, "latency_s": 0.25}])
    write_json("summary.json", {"makespan_s": 12.5})
    trace = ChromeTrace()
    trace.add("all-reduce", "collective", 0.0, 1e-3, process="hcsim", thread="xpu0")
    trace.write("trace.json")

Guide: docs/workloads-and-engine.md, "Outputs" (every format's rules).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hcsim.files import atomic_path, atomic_write_text

__all__ = [
    "ChromeTrace",
    "Summary",
    "atomic_write_text",
    "csv_text",
    "json_line",
    "json_text",
    "save_figure",
    "write_csv",
    "write_json",
]

PathLike = str | os.PathLike[str]


# ------------------------------------------------------------------ CSV
def _columns(rows: list[Any]) -> list[str]:
    columns: dict[str, None] = {}
    for row in rows:
        if isinstance(row, Mapping):
            columns.update(dict.fromkeys(row))
    return list(columns)


def csv_text(
    rows: Iterable[Mapping[str, Any] | Sequence[Any]],
    columns: Sequence[str] | None = None,
    *,
    line_end: str = "\r\n",
    nan: str | None = None,
) -> str:
    """The CSV text of ``rows`` under a header of ``columns``; ``nan``: the text of a NaN cell (default ``nan``)."""
    rows = list(rows)
    header = list(columns) if columns is not None else _columns(rows)
    known = set(header)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator=line_end)
    writer.writerow(header)
    for row in rows:
        if isinstance(row, Mapping):
            extra = [k for k in row if k not in known]
            if extra:
                raise ValueError(f"row has keys that are not columns: {extra}")
            cells = [row.get(k, "") for k in header]
        else:
            cells = list(row)
        if nan is not None:
            cells = [nan if isinstance(c, float) and math.isnan(c) else c for c in cells]
        writer.writerow(cells)
    return buf.getvalue()


def write_csv(
    path: PathLike,
    rows: Iterable[Mapping[str, Any] | Sequence[Any]],
    columns: Sequence[str] | None = None,
    *,
    line_end: str = "\r\n",
    nan: str | None = None,
) -> None:
    """Write ``rows`` as CSV to ``path``, atomically (see :func:`csv_text`)."""
    atomic_write_text(path, csv_text(rows, columns, line_end=line_end, nan=nan))


# ------------------------------------------------------------------ JSON
def json_text(obj: Any, *, indent: int | None = 1) -> str:
    """``obj`` as JSON with sorted keys and a final newline (``indent=None``: compact, one line)."""
    separators = (",", ":") if indent is None else None
    return json.dumps(obj, indent=indent, sort_keys=True, separators=separators) + "\n"


def write_json(path: PathLike, obj: Any, *, indent: int | None = 1) -> None:
    """Write ``obj`` as JSON to ``path``, atomically (see :func:`json_text`)."""
    atomic_write_text(path, json_text(obj, indent=indent))


def json_line(row: Mapping[str, Any]) -> str:
    """One line of a JSON-lines file: sorted keys, values JSON cannot hold written by ``str``."""
    return json.dumps(row, sort_keys=True, default=str) + "\n"


class Summary(dict):
    """A summary (plain dict, JSON-ready) whose keys renamed to carry their unit still read by the old name.

    ``aliases`` maps an old key to its new one (``{"makespan": "makespan_s"}``); only
    reading falls back to it, so files hold the new names alone. For callers not yet
    ported; the old names are deprecated.
    """

    def __init__(self, data: Mapping[str, Any] = (), aliases: Mapping[str, str] | None = None) -> None:
        super().__init__(data)
        self.aliases = dict(aliases or {})

    def __missing__(self, key: str) -> Any:
        new = self.aliases.get(key)
        if new is None or new not in self:
            raise KeyError(key)
        return self[new]


# ------------------------------------------------------------------ figures
def save_figure(fig: Any, path: PathLike, *, close: bool = True, **savefig: Any) -> None:
    """``fig.savefig(path, **savefig)`` through a temporary file and a rename; then close ``fig`` (``close``)."""
    try:
        with atomic_path(path, os.path.splitext(os.fspath(path))[1] or ".tmp") as tmp:
            fig.savefig(tmp, **savefig)
    finally:
        if close:
            import matplotlib.pyplot as plt

            plt.close(fig)


# ------------------------------------------------------------------ Chrome traces
class ChromeTrace:
    """A Chrome Trace Event document (chrome://tracing, Perfetto) built slice by slice.

    :meth:`add` places a complete event (``ph`` X) on the lane ``thread`` of ``process``;
    the first use of a process or thread gives it the next integer id (from 1) and its
    metadata events. :meth:`document` returns the JSON-ready dict; :meth:`write` saves it.
    """

    METADATA = "__metadata"  # the category of metadata events, as Chrome names it

    def __init__(self, generator: str = "hcsim") -> None:
        self.generator = generator
        self._pids: dict[str, int] = {}
        self._tids: dict[tuple[str, str], int] = {}
        self._meta: list[dict[str, Any]] = []
        self._events: list[dict[str, Any]] = []

    def _meta_event(self, name: str, pid: int, tid: int, args: dict[str, Any]) -> None:
        self._meta.append({"name": name, "cat": self.METADATA, "ph": "M", "pid": pid, "tid": tid, "args": args})

    def lane(self, process: str, thread: str) -> tuple[int, int]:
        """The (pid, tid) of ``thread`` in ``process``, named on first use."""
        key = (process, thread)
        tid = self._tids.get(key)
        if tid is not None:
            return self._pids[process], tid
        pid = self._pids.get(process)
        if pid is None:
            pid = self._pids[process] = len(self._pids) + 1
            self._meta_event("process_name", pid, 0, {"name": process})
        tid = self._tids[key] = sum(1 for p, _ in self._tids if p == process) + 1
        self._meta_event("thread_name", pid, tid, {"name": thread})
        self._meta_event("thread_sort_index", pid, tid, {"sort_index": tid})
        return pid, tid

    def add(
        self,
        name: str,
        cat: str,
        start: float,
        end: float,
        *,
        process: str,
        thread: str,
        args: dict[str, Any] | None = None,
    ) -> None:
        """A slice ``name`` of category ``cat`` from ``start`` to ``end`` seconds on ``thread`` of ``process``."""
        pid, tid = self.lane(process, thread)
        event = {
            "name": name,
            "cat": cat,
            "ph": "X",
            "pid": pid,
            "tid": tid,
            "ts": start * 1e6,
            "dur": (end - start) * 1e6,
        }
        if args is not None:
            event["args"] = args
        self._events.append(event)

    def document(self) -> dict[str, Any]:
        """The trace as a JSON-ready dict: metadata events first, then the slices in the order added."""
        return {
            "traceEvents": self._meta + self._events,
            "displayTimeUnit": "ms",
            "otherData": {"generator": self.generator},
        }

    def write(self, path: PathLike) -> None:
        """Save the trace as compact JSON (sorted keys), atomically."""
        write_json(path, self.document(), indent=None)
