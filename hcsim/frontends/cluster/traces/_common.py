"""What every trace reader shares: file reading, one-line errors, time parsing, the rebased Trace.

Files are read as UTF-8 text (gzip too, bounded by :data:`MAX_GUNZIPPED_BYTES`); a bad
file or row is one :class:`~hcsim.errors.HcsimError` naming the file and the line, with
what would be valid. Every reader returns a :class:`~hcsim.frontends.cluster.jobs.Trace`
whose times start at its earliest submit. Formats: docs/cluster.md, "Trace formats".
"""

from __future__ import annotations

import datetime as _dt
import gzip
import math
import os
import zlib
from typing import Any

import numpy as np

from hcsim.errors import HcsimError
from hcsim.frontends.cluster.jobs import Job, Trace
from hcsim.progress import progress_bar

_PROGRESS_STEP = 1000  # rows between progress-bar updates (per-row updates would cost more than parsing)
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_MISSING = ("", "None", "none", "null", "NULL", "NaN", "nan", "NaT")
_GZIP_MAGIC = b"\x1f\x8b"
#: Largest decompressed trace read from a .gz file (the Parallel Workloads Archive's largest logs are far smaller).
MAX_GUNZIPPED_BYTES = 1 << 30


def _show(value: Any, limit: int = 40) -> str:
    """A short one-line repr of a bad value for messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _label(path: str | os.PathLike[str]) -> str:
    """The file name used in messages (short, like the examples users see)."""
    name = os.fspath(path)
    return os.path.basename(name) or name


def _read_text(path: str | os.PathLike[str], what: str, head: int = -1) -> str:
    """The file (or its first ``head`` bytes) as text; any problem reading it becomes one HcsimError line."""
    name = os.fspath(path)
    valid = f"(valid: a path to a {what} file)"
    if not os.path.exists(name):
        raise HcsimError(f"trace file '{name}' does not exist {valid}")
    if os.path.isdir(name):
        raise HcsimError(f"trace file '{name}' is a directory {valid}")
    try:
        with open(name, "rb") as f:
            data = f.read(head)
    except OSError as e:
        raise HcsimError(f"trace file '{name}' cannot be read: {e.strerror} {valid}") from None
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip(name, head, valid)
    try:
        text = data.decode("utf-8-sig", errors="strict" if head < 0 else "replace")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise HcsimError(f"{_label(name)} line {line}: not UTF-8 text {valid}") from None
    nul = text.find("\x00")
    if nul >= 0:  # valid UTF-8, yet no trace format has NUL: a damaged or padded file
        line = text.count("\n", 0, nul) + 1
        raise HcsimError(f"{_label(name)} line {line}: a NUL byte (valid: a text file; a binary or damaged file?)")
    if not text.strip():
        raise HcsimError(f"{_label(name)}: the file is empty {valid}")
    return text


def _gunzip(name: str, head: int, valid: str) -> bytes:
    """The decompressed bytes of a gzip file (all of them, or its first ``head``), bounded against bombs.

    The Parallel Workloads Archive distributes its logs as ``.swf.gz``; any trace format
    may be gzipped, recognised by its magic bytes whatever the file is called.
    """
    limit = MAX_GUNZIPPED_BYTES if head < 0 else head
    try:
        with gzip.open(name, "rb") as f:
            data = f.read(limit + 1)
    except (OSError, EOFError, zlib.error) as e:
        if head >= 0:  # sniffing the start: a truncated file still shows its first lines
            return b""
        raise HcsimError(f"{_label(name)}: a broken gzip file ({e}) {valid}") from None
    if head >= 0:
        return data[:head]
    if len(data) > limit:
        raise HcsimError(
            f"{_label(name)}: decompresses to more than {MAX_GUNZIPPED_BYTES >> 20} MiB "
            f"(valid: a gzipped trace up to that size; decompress larger ones first)"
        )
    return data


def _check_gpus_per_node(gpus_per_node: int) -> int:
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, int | np.integer) or gpus_per_node < 1:
        raise HcsimError(f"gpus_per_node {_show(gpus_per_node)} is invalid (valid: an integer >= 1)")
    return int(gpus_per_node)


def _whole_nodes(gpus: int, gpus_per_node: int) -> tuple[int | None, int | None]:
    """Rigid shape for a job that has none in its source: whole nodes when larger than one."""
    if gpus > gpus_per_node and gpus % gpus_per_node == 0:
        return gpus // gpus_per_node, gpus_per_node
    return None, None


def _parse_time(text: str, cache: dict[str, float]) -> float:
    """Seconds since 1970-01-01 of a wall-clock time read as UTC.

    Fast path for the fixed ``YYYY-MM-DD HH:MM:SS`` layout of Helios and Philly (dates
    cached: a trace has few distinct days); ISO 8601 and plain numbers of seconds are
    also accepted. Raises ValueError for anything else.
    """
    if len(text) == 19 and text[4] == "-" and text[7] == "-" and text[10] in " T" and text[13] == ":":
        day = cache.get(text[:10])
        if day is None:
            date = _dt.date(int(text[0:4]), int(text[5:7]), int(text[8:10]))
            day = float((date.toordinal() - _EPOCH_ORDINAL) * 86400)
            cache[text[:10]] = day
        if text[16] != ":":
            raise ValueError(text)
        h, m, s = int(text[11:13]), int(text[14:16]), int(text[17:19])
        if not (0 <= h <= 23 and 0 <= m <= 59 and 0 <= s <= 60):
            raise ValueError(text)
        return day + h * 3600 + m * 60 + s
    try:
        value = float(text)
    except ValueError:
        stamp = _dt.datetime.fromisoformat(text)
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=_dt.UTC)
        return stamp.timestamp()
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _finish(
    jobs: list[Job], skipped: list[tuple[int, str]], source: str, fmt: str, epoch_offset: float, label: str, sort: bool
) -> Trace:
    """Rebase times to the earliest submit and wrap the jobs in a Trace."""
    if not jobs:
        hint = ""
        if skipped:
            where = "job #" if fmt == "philly" else "line "
            hint = f"; {len(skipped)} skipped, e.g. {where}{skipped[0][0]}: {skipped[0][1]}"
        raise HcsimError(f"{label}: no jobs (valid: at least one GPU job{hint})")
    if sort:
        jobs.sort(key=lambda job: job.submit)  # stable: file order among equal submits
    t0 = jobs[0].submit
    for job in jobs:
        job.submit -= t0
        if job.trace_start is not None:
            job.trace_start -= t0
        _check_span(job, fmt, label)
    return Trace(jobs=jobs, source=source, format=fmt, submit_epoch=epoch_offset + t0, skipped=skipped)


MAX_SECONDS = 1e10
"""Longest time a trace may span, and longest job (s; about 317 years): beyond it no result or plot means anything."""


def _check_span(job: Job, fmt: str, label: str) -> None:
    """Refuse a job whose submit time (from the trace's start), start or run time exceeds :data:`MAX_SECONDS`."""
    for what, value in (("submit time", job.submit), ("start time", job.trace_start), ("run time", job.duration)):
        if value is not None and not value <= MAX_SECONDS:
            where = f"job #{job.line}" if fmt == "philly" else f"line {job.line}"
            raise HcsimError(
                f"{label} {where} (job {job.job_id}): {what} {value:.6g} s is out of range "
                f"(valid: times from the trace's first submit and run times up to {MAX_SECONDS:.0e} s, ~317 years)"
            )


class _Progress:
    """Progress bar updated every ``_PROGRESS_STEP`` items, closed on exit."""

    def __init__(self, total: int | None, unit: str, show: bool | None) -> None:
        self.bar = progress_bar(total, "reading trace", unit, show=show)
        self.done = 0

    def at(self, count: int) -> None:
        if count - self.done >= _PROGRESS_STEP:
            self.bar.update(count - self.done)
            self.done = count

    def close(self, count: int) -> None:
        if count > self.done:
            self.bar.update(count - self.done)
        self.bar.close()
