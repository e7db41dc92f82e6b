"""Job traces for the cluster front end: three public trace formats and a synthetic generator.

Every reader returns a :class:`~hcsim.frontends.cluster.jobs.Trace` whose jobs are sorted
by submit time (stable: file order among equal submits), with time 0 = the earliest
submit; ``Trace.submit_epoch`` keeps the absolute time of time 0 in the format's own
clock. Rows that are well formed but cannot be a GPU job (CPU-only jobs, jobs that never
ran) are left out and listed in ``Trace.skipped`` as ``(line, reason)``. Malformed input
raises :class:`~hcsim.errors.HcsimError` with one line naming the file, the line (or the
job index in JSON) and what would be valid.

Helios (``format="helios"``)
    ``cluster_log.csv`` of SenseTime's Helios traces (S-Lab-System-Group/HeliosData,
    SC'21 "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU
    Datacenters"); the AnalySIM paper uses a SenseTime Slurm trace of the same kind.
    Header (HeliosData README): ``job_id,user,vc,gpu_num,cpu_num,node_num,state,
    submit_time,start_time,end_time,duration,queue``; times are ``YYYY-MM-DD HH:MM:SS``
    wall-clock strings without time zone (read as UTC, so no daylight-saving jumps),
    ``duration`` = end - start and ``queue`` = start - submit in seconds; states
    COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL. Derived files (e.g. the Lucid
    artifact's) add ``jobname`` or drop ``node_num``, so only ``job_id, vc, gpu_num,
    submit_time`` and ``duration`` (or ``start_time`` and ``end_time``) are required.
    Mapping: vc -> partition, gpu_num -> gpus, jobname -> name, start_time -> trace_start;
    node_num -> a rigid shape ``node_num x gpu_num/node_num`` when that divides evenly
    and fits a node of ``gpus_per_node`` GPUs (Slurm placed the job that way), else no
    shape (any placement). ``gpu_num == 0`` rows are CPU jobs and are skipped. The
    README says job ids follow submission order, so rows must be sorted by submit time;
    ``sort=True`` sorts an unsorted file instead of rejecting it.

Philly (``format="philly"``)
    ``cluster_job_log`` of Microsoft's Philly trace (msr-fiddle/philly-traces, ATC'19
    "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads"): a
    JSON list of ``{"status": Pass|Killed|Failed, "vc", "jobid", "user",
    "submitted_time", "attempts": [{"start_time", "end_time", "detail": [{"ip",
    "gpus": ["gpu0", ...]}]}]}``, times as ``YYYY-MM-DD HH:MM:SS`` or ``"None"``
    (schema from the trace's analysis notebook). Mapping: vc -> partition, status ->
    state (Pass COMPLETED, Failed FAILED, Killed CANCELLED, as in the Lucid artifact);
    GPUs and shape from the *last* attempt that was placed on GPUs (the allocation the
    job ended with; the notebook counts the first attempt's); nodes = its machines,
    per-node GPUs when uniform. duration = the *sum* of ``end - start`` over the
    attempts with both times: the service the job received; the notebook's "run time"
    (last end - first start) would also count the re-queueing gaps between attempts,
    which the simulated scheduler must produce itself. trace_start = the first attempt's
    start. Jobs whose last attempt has a start but no end were still running when the
    trace was cut (the notebook leaves them out too) and are skipped, as are jobs with
    no attempt that has both times or no GPUs. JSON has no useful line numbers: messages
    name ``job #k`` (1-based index in the list) and its jobid, and ``Job.line`` is k.
    The list is sorted by submit time after reading.

SWF (``format="swf"``)
    Standard Workload Format 2.x of the Parallel Workloads Archive
    (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): one job per line, 18
    whitespace-separated numbers, ``;`` header/comment lines, -1 = unknown, lines sorted
    by submit time. Fields: 1 job number, 2 submit, 3 wait, 4 run time, 5 allocated
    processors, 6 average CPU time, 7 used memory, 8 requested processors, 9 requested
    time, 10 requested memory, 11 status (1 completed, 0 failed, 5 cancelled, 2-4 partial
    executions), 12 user, 13 group, 14 executable, 15 queue, 16 partition, 17 preceding
    job, 18 think time. Mapping: each processor is one GPU; gpus = field 5, else field 8;
    duration = field 4; trace_start = submit + wait when the wait is known; user = field
    12; partition = field 16, else field 15, as text when > 0 (queue 0 conventionally
    marks interactive jobs, not a queue); state from field 11 (-1 -> UNKNOWN, other
    codes as their number); field 9 -> ``extra["requested_time"]`` (the user's estimate,
    for backfilling). Rows with unknown run time or processors, or 0 processors, are
    skipped. SWF has no job shape; like :func:`synthetic_trace`, a job of more than
    ``gpus_per_node`` GPUs that is a multiple of it gets whole nodes (``gpus /
    gpus_per_node`` x ``gpus_per_node``), any other job any placement. A repeated job
    number (SWF writes each partial execution of a job on its own line) gets the id
    ``"<n>#<k>"`` for its k-th repetition so ids stay unique. The ``; UnixStartTime:``
    header, when present, is added to ``submit_epoch``; :func:`write_swf` also writes
    ``; hcsim-users:`` / ``; hcsim-partitions:`` comments (JSON: number -> name) so
    non-numeric names survive a round trip.

Synthetic traces (:func:`synthetic_trace`) draw Poisson or Pareto (Lomax) arrivals and
heavy-tailed (lognormal or Pareto) durations with the requested means, GPU counts from a
mix, users with Zipf-like activity and partitions from weights; :func:`scale_load`
compresses submit times for load sweeps.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from hcsim.errors import HcsimError
from hcsim.files import atomic_write_text, check_output_path
from hcsim.frontends.cluster.jobs import Job, Trace
from hcsim.progress import progress_bar

__all__ = [
    "DEFAULT_GPU_MIX",
    "HELIOS_OPTIONAL",
    "HELIOS_REQUIRED",
    "TRACE_FORMATS",
    "guess_format",
    "read_helios",
    "read_philly",
    "read_swf",
    "read_trace",
    "scale_load",
    "synthetic_trace",
    "write_swf",
]

TRACE_FORMATS = ("helios", "philly", "swf")

#: Helios-like GPU-count mix: mostly 1-GPU jobs with a tail up to 64 GPUs. An assumption
#: shaped after the Helios characterisation (SC'21: most GPU jobs use one GPU, a few
#: percent use more than 8), not fitted to the trace.
DEFAULT_GPU_MIX: dict[int, float] = {1: 0.60, 2: 0.10, 4: 0.10, 8: 0.12, 16: 0.05, 32: 0.02, 64: 0.01}

HELIOS_REQUIRED = ("job_id", "vc", "gpu_num", "submit_time")
HELIOS_OPTIONAL = ("user", "jobname", "cpu_num", "node_num", "state", "start_time", "end_time", "duration", "queue")

_PROGRESS_STEP = 1000  # rows between progress-bar updates (per-row updates would cost more than parsing)
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_MISSING = ("", "None", "none", "null", "NULL", "NaN", "nan", "NaT")

_SWF_FIELDS = (
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user",
    "group",
    "executable",
    "queue",
    "partition",
    "preceding job",
    "think time",
)
_SWF_STATUS = {1: "COMPLETED", 0: "FAILED", 5: "CANCELLED", -1: "UNKNOWN"}
_SWF_STATUS_CODE = {"COMPLETED": 1, "FAILED": 0, "CANCELLED": 5}
_PHILLY_STATUS = {"Pass": "COMPLETED", "Failed": "FAILED", "Killed": "CANCELLED"}


# --------------------------------------------------------------------------- helpers


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
    try:
        text = data.decode("utf-8-sig", errors="strict" if head < 0 else "replace")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise HcsimError(f"{_label(name)} line {line}: not UTF-8 text {valid}") from None
    if not text.strip():
        raise HcsimError(f"{_label(name)}: the file is empty {valid}")
    return text


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
    return Trace(jobs=jobs, source=source, format=fmt, submit_epoch=epoch_offset + t0, skipped=skipped)


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


# --------------------------------------------------------------------------- dispatch


def guess_format(path: str | os.PathLike[str]) -> str:
    """The trace format of a file from its extension or first characters, so users need not say it."""
    name = os.fspath(path)
    ext = os.path.splitext(name)[1].lower()
    if ext == ".swf":
        return "swf"
    if ext == ".json":
        return "philly"
    if ext == ".csv":
        return "helios"
    start = _read_text(name, "trace", head=65536).lstrip()  # only the start: real traces reach 100 MB
    first_line = start.split("\n", 1)[0]
    if start.startswith(";"):
        return "swf"
    if start.startswith("["):
        return "philly"
    header = {column.strip() for column in first_line.split(",")}
    if "gpu_num" in header and "submit_time" in header:
        return "helios"
    if len(first_line.split()) == 18:
        return "swf"
    raise HcsimError(
        f"{_label(name)}: cannot tell the trace format (valid: {', '.join(TRACE_FORMATS)}; "
        "name it with format=..., or use a .swf/.json/.csv file)"
    )


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
    if format is None:
        fmt = guess_format(path)
    elif isinstance(format, str) and format.lower() in TRACE_FORMATS:
        fmt = format.lower()
    else:
        raise HcsimError(f"trace format {_show(format)} is unknown (valid: {', '.join(TRACE_FORMATS)})")
    if fmt == "helios":
        return read_helios(path, gpus_per_node=gpus_per_node, progress=progress, sort=sort)
    if fmt == "philly":
        return read_philly(path, gpus_per_node=gpus_per_node, progress=progress)
    return read_swf(path, gpus_per_node=gpus_per_node, progress=progress, sort=sort)


# --------------------------------------------------------------------------- Helios


def read_helios(
    path: str | os.PathLike[str], *, gpus_per_node: int = 8, progress: bool | None = None, sort: bool = False
) -> Trace:
    """Read a Helios ``cluster_log.csv`` (SenseTime's Slurm GPU clusters, the AnalySIM kind of trace)."""
    gpn = _check_gpus_per_node(gpus_per_node)
    text = _read_text(path, "Helios cluster_log.csv")
    label = _label(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    required = f"{', '.join(HELIOS_REQUIRED)} and duration or start_time+end_time"
    try:
        header = [name.strip() for name in next(reader)]
    except csv.Error as e:
        raise HcsimError(f"{label} line 1: bad CSV header ({e}) (valid: a header naming {required})") from None
    col = {name: i for i, name in enumerate(header)}
    for name in HELIOS_REQUIRED:
        if name not in col:
            raise HcsimError(
                f"{label} line 1: the header has no column '{name}' "
                f"(valid: a Helios cluster_log.csv header with {required}; "
                "optional: user, jobname, node_num, state, cpu_num)"
            )
    has_duration = "duration" in col
    if not has_duration and not ("start_time" in col and "end_time" in col):
        raise HcsimError(
            f"{label} line 1: the header has neither 'duration' nor 'start_time' and 'end_time' "
            f"(valid: a Helios cluster_log.csv header with {required})"
        )
    i_id, i_vc, i_gpu, i_submit = (col[name] for name in HELIOS_REQUIRED)
    i_dur, i_start, i_end = col.get("duration"), col.get("start_time"), col.get("end_time")
    i_nodes, i_user, i_state = col.get("node_num"), col.get("user"), col.get("state")
    i_name, i_cpu = col.get("jobname"), col.get("cpu_num")
    ncols = len(header)

    cache: dict[str, float] = {}
    jobs: list[Job] = []
    skipped: list[tuple[int, str]] = []
    prev_submit = -math.inf
    prev_text, prev_line = "", 0
    bar = _Progress(text.count("\n"), "row", progress)
    line = 1
    try:
        for row in reader:
            line = reader.line_num
            bar.at(line)
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != ncols:
                raise HcsimError(
                    f"{label} line {line}: {len(row)} fields, the header has {ncols} (valid: one value per column)"
                )

            at = f"{label} line {line}"
            job_id = row[i_id].strip()
            if not job_id:
                raise HcsimError(f"{at}: job_id is empty (valid: the job's id)")
            gpus = _count(row[i_gpu], at, "gpu_num")
            submit_text = row[i_submit].strip()
            if submit_text in _MISSING:
                raise HcsimError(f"{at}: submit_time is missing (valid: YYYY-MM-DD HH:MM:SS)")
            submit = _time(submit_text, cache, at, "submit_time")
            if submit < prev_submit and not sort:
                raise HcsimError(
                    f"{label} line {line}: submit_time '{submit_text}' is before '{prev_text}' on line {prev_line} "
                    "(valid: rows sorted by submit_time, as Slurm assigns job ids; pass sort=True to sort them)"
                )
            prev_submit, prev_text, prev_line = submit, submit_text, line
            start = end = None
            if i_start is not None and row[i_start].strip() not in _MISSING:
                start = _time(row[i_start].strip(), cache, at, "start_time")
            if i_end is not None and row[i_end].strip() not in _MISSING:
                end = _time(row[i_end].strip(), cache, at, "end_time")
            if start is not None and end is not None and end < start:
                raise HcsimError(
                    f"{label} line {line}: end_time '{row[i_end].strip()}' is before start_time "
                    f"'{row[i_start].strip()}' (valid: end_time >= start_time)"
                )
            duration: float | None = None
            if has_duration and row[i_dur].strip() not in _MISSING:
                duration = _seconds(row[i_dur], at, "duration")
            elif start is not None and end is not None:
                duration = end - start
            nodes_text = row[i_nodes].strip() if i_nodes is not None else ""
            node_num = None
            if nodes_text not in _MISSING:
                node_num = _count(nodes_text, at, "node_num")
            if gpus == 0:
                skipped.append((line, "CPU job (gpu_num 0): it uses no GPU"))
                continue
            if duration is None:
                skipped.append((line, "no duration and no start_time/end_time: the job never ran"))
                continue
            nodes = per_node = None
            extra: dict[str, Any] = {}
            if node_num and gpus % node_num == 0 and gpus // node_num <= gpn:
                nodes, per_node = node_num, gpus // node_num
            elif node_num is not None:
                extra["node_num"] = node_num
            if i_cpu is not None and row[i_cpu].strip() not in _MISSING:
                extra["cpu_num"] = _count(row[i_cpu], at, "cpu_num")
            state = row[i_state].strip() if i_state is not None else "COMPLETED"
            jobs.append(
                Job(
                    job_id=job_id,
                    submit=submit,
                    gpus=gpus,
                    duration=duration,
                    nodes=nodes,
                    gpus_per_node=per_node,
                    user=row[i_user].strip() if i_user is not None else "",
                    partition=row[i_vc].strip(),
                    name=row[i_name].strip() if i_name is not None else "",
                    state=state or "UNKNOWN",
                    trace_start=start,
                    line=line,
                    extra=extra,
                )
            )
    except csv.Error as e:
        raise HcsimError(f"{label} line {reader.line_num}: bad CSV ({e}) (valid: comma-separated values)") from None
    finally:
        bar.close(line)
    return _finish(jobs, skipped, os.fspath(path), "helios", 0.0, label, sort)


def _count(text: str, at: str, column: str) -> int:
    """A non-negative integer count (GPUs, nodes, CPUs); '4.0' is accepted as 4."""
    text = text.strip()
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise HcsimError(f"{at}: {column} {_show(text)} is not a number (valid: an integer >= 0)") from None
        if not number.is_integer():
            raise HcsimError(f"{at}: {column} {_show(text)} is not an integer (valid: an integer >= 0)") from None
        value = int(number)
    if value < 0:
        raise HcsimError(f"{at}: {column} {_show(text)} is negative (valid: an integer >= 0)")
    return value


def _seconds(text: str, at: str, column: str) -> float:
    """A non-negative finite number of seconds."""
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        raise HcsimError(f"{at}: {column} {_show(text)} is not a number (valid: seconds >= 0)") from None
    if not math.isfinite(value) or value < 0:
        raise HcsimError(f"{at}: {column} {_show(text)} is invalid (valid: seconds >= 0)")
    return value


def _time(text: str, cache: dict[str, float], at: str, column: str) -> float:
    try:
        return _parse_time(text, cache)
    except (ValueError, OverflowError):
        raise HcsimError(f"{at}: {column} {_show(text)} is not a time (valid: YYYY-MM-DD HH:MM:SS)") from None


# --------------------------------------------------------------------------- Philly


def read_philly(path: str | os.PathLike[str], *, gpus_per_node: int = 8, progress: bool | None = None) -> Trace:
    """Read Microsoft Philly's ``cluster_job_log`` (JSON list of jobs with their attempts)."""
    gpn = _check_gpus_per_node(gpus_per_node)
    text = _read_text(path, "Philly cluster_job_log (JSON)")
    label = _label(path)
    valid_file = "(valid: a Philly cluster_job_log, a JSON list of job objects)"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise HcsimError(f"{label} line {e.lineno} column {e.colno}: not valid JSON ({e.msg}) {valid_file}") from None
    if not isinstance(data, list):
        raise HcsimError(f"{label}: the top level is a JSON {type(data).__name__} {valid_file}")
    if not data:
        raise HcsimError(f"{label}: no jobs (the list is empty) {valid_file}")

    cache: dict[str, float] = {}
    jobs: list[Job] = []
    skipped: list[tuple[int, str]] = []
    bar = _Progress(len(data), "job", progress)
    k = 0
    try:
        for k, entry in enumerate(data, 1):
            bar.at(k)
            if not isinstance(entry, dict):
                raise HcsimError(f"{label} job #{k}: a JSON {type(entry).__name__}, not an object {valid_file}")
            jobid = entry.get("jobid")
            if isinstance(jobid, bool) or not isinstance(jobid, str | int) or str(jobid).strip() == "":
                raise HcsimError(f"{label} job #{k}: 'jobid' is {_show(jobid)} (valid: a non-empty string)")
            where = f"{label} job #{k} (jobid {' '.join(str(jobid).split())[:40]})"
            submit = _philly_time(entry, "submitted_time", where, cache)
            if submit is None:
                raise HcsimError(f"{where}: 'submitted_time' is missing (valid: 'YYYY-MM-DD HH:MM:SS')")
            attempts = entry.get("attempts")
            if not isinstance(attempts, list):
                raise HcsimError(f"{where}: 'attempts' is {_show(attempts)} (valid: a list of attempt objects)")
            ran = 0.0
            used = 0
            first_start = None
            placed: list[int] | None = None
            for a, attempt in enumerate(attempts, 1):
                at = f"{where} attempt {a}"
                if not isinstance(attempt, dict):
                    raise HcsimError(f"{at}: {_show(attempt)} is not an object (valid: start_time, end_time, detail)")
                start = _philly_time(attempt, "start_time", at, cache)
                end = _philly_time(attempt, "end_time", at, cache)
                if start is not None and end is not None:
                    if end < start:
                        raise HcsimError(
                            f"{at}: end_time '{attempt['end_time']}' is before start_time "
                            f"'{attempt['start_time']}' (valid: end_time >= start_time)"
                        )
                    ran += end - start
                    used += 1
                if start is not None and first_start is None:
                    first_start = start
                counts = _philly_detail(attempt, at)
                if sum(counts) > 0:
                    placed = [c for c in counts if c > 0]
            last = attempts[-1] if attempts else {}
            if last.get("start_time") not in _MISSING_JSON and last.get("end_time") in _MISSING_JSON:
                skipped.append((k, "still running when the trace ended (last attempt has no end_time)"))
                continue
            if used == 0:
                skipped.append((k, "no attempt with both start_time and end_time: the job never ran"))
                continue
            if placed is None:
                skipped.append((k, "no attempt was placed on GPUs (empty 'detail')"))
                continue
            gpus = sum(placed)
            nodes = per_node = None
            if len(set(placed)) == 1 and placed[0] <= gpn:
                nodes, per_node = len(placed), placed[0]
            status = entry.get("status")
            status_text = str(status) if status is not None else ""
            vc, user = entry.get("vc"), entry.get("user")
            jobs.append(
                Job(
                    job_id=str(jobid),
                    submit=submit,
                    gpus=gpus,
                    duration=ran,
                    nodes=nodes,
                    gpus_per_node=per_node,
                    user="" if user is None else str(user),
                    partition="" if vc is None else str(vc),
                    state=_PHILLY_STATUS.get(status_text, status_text or "UNKNOWN"),
                    trace_start=first_start,
                    line=k,
                    extra={"status": status_text, "attempts": len(attempts)},
                )
            )
    finally:
        bar.close(k)
    return _finish(jobs, skipped, os.fspath(path), "philly", 0.0, label, sort=True)


_MISSING_JSON = (None, "", "None", "none", "null")


def _philly_time(obj: dict[str, Any], key: str, where: str, cache: dict[str, float]) -> float | None:
    value = obj.get(key)
    if value in _MISSING_JSON:
        return None
    if not isinstance(value, str):
        raise HcsimError(f"{where}: '{key}' is {_show(value)} (valid: 'YYYY-MM-DD HH:MM:SS' or 'None')")
    try:
        return _parse_time(value.strip(), cache)
    except (ValueError, OverflowError):
        raise HcsimError(f"{where}: '{key}' {_show(value)} is not a time (valid: 'YYYY-MM-DD HH:MM:SS')") from None


def _philly_detail(attempt: dict[str, Any], where: str) -> list[int]:
    """GPUs per machine of one attempt."""
    detail = attempt.get("detail", [])
    if detail is None:
        return []
    valid = "(valid: a list of {'ip': ..., 'gpus': ['gpu0', ...]})"
    if not isinstance(detail, list):
        raise HcsimError(f"{where}: 'detail' is {_show(detail)} {valid}")
    counts = []
    for machine in detail:
        gpus = machine.get("gpus") if isinstance(machine, dict) else None
        if not isinstance(gpus, list):
            raise HcsimError(f"{where}: detail entry {_show(machine)} has no 'gpus' list {valid}")
        counts.append(len(gpus))
    return counts


# --------------------------------------------------------------------------- SWF


def read_swf(
    path: str | os.PathLike[str], *, gpus_per_node: int = 8, progress: bool | None = None, sort: bool = False
) -> Trace:
    """Read a Standard Workload Format file (Parallel Workloads Archive logs and models)."""
    gpn = _check_gpus_per_node(gpus_per_node)
    text = _read_text(path, "SWF")
    label = _label(path)
    lines = text.splitlines()
    jobs: list[Job] = []
    skipped: list[tuple[int, str]] = []
    names: dict[str, dict[str, str]] = {"users": {}, "partitions": {}}
    unix_start = 0.0
    seen: dict[str, int] = {}
    prev_submit, prev_line = -math.inf, 0
    bar = _Progress(len(lines), "line", progress)
    lineno = 0
    try:
        for lineno, raw in enumerate(lines, 1):
            bar.at(lineno)
            s = raw.strip()
            if not s:
                continue
            if s[0] == ";":
                key, _, value = s[1:].partition(":")
                key = key.strip()
                if key == "UnixStartTime":
                    try:
                        unix_start = float(value)
                    except ValueError:
                        raise HcsimError(
                            f"{label} line {lineno}: UnixStartTime {_show(value.strip())} is not a number "
                            "(valid: seconds since 1970)"
                        ) from None
                elif key in ("hcsim-users", "hcsim-partitions"):
                    names[key[6:]] = _swf_names(value, f"{label} line {lineno}", key)
                continue
            fields = s.split()
            if len(fields) != 18:
                raise HcsimError(
                    f"{label} line {lineno}: {len(fields)} fields (valid: 18 whitespace-separated numbers, "
                    "-1 if unknown, or a ';' comment)"
                )
            v = []
            for i, field in enumerate(fields):
                try:
                    number = float(field)
                except ValueError:
                    number = math.nan
                if not math.isfinite(number):
                    raise HcsimError(
                        f"{label} line {lineno}: field {i + 1} ({_SWF_FIELDS[i]}) {_show(field)} is not a number "
                        "(valid: a number, or -1 if unknown)"
                    )
                v.append(number)

            for i in (1, 5, 8, 11, 12, 15, 16):
                if not v[i - 1].is_integer():
                    raise _swf_error(
                        label, lineno, fields, i, "is not an integer (valid: an integer, or -1 if unknown)"
                    )
            submit, wait, run = v[1], v[2], v[3]
            if submit == -1:
                raise _swf_error(label, lineno, fields, 2, "is unknown (valid: the submit time in seconds >= 0)")
            if submit < 0:
                raise _swf_error(label, lineno, fields, 2, "is negative (valid: seconds >= 0)")
            if submit < prev_submit and not sort:
                raise _swf_error(
                    label,
                    lineno,
                    fields,
                    2,
                    f"is before {_swf_number(prev_submit)} on line {prev_line} "
                    "(valid: lines sorted by submit time, as SWF requires; pass sort=True to sort them)",
                )
            prev_submit, prev_line = submit, lineno
            for i in (3, 4, 5, 8, 9):
                if v[i - 1] < 0 and v[i - 1] != -1:
                    raise _swf_error(label, lineno, fields, i, "is negative (valid: a value >= 0, or -1 if unknown)")
            if run == -1:
                skipped.append((lineno, "run time unknown (-1)"))
                continue
            gpus = int(v[4]) if v[4] != -1 else int(v[7])
            if gpus == -1:
                skipped.append((lineno, "processors unknown (fields 5 and 8 are -1)"))
                continue
            if gpus == 0:
                skipped.append((lineno, "0 processors: the job did not run"))
                continue
            number = str(int(v[0]))
            repeat = seen.get(number, 0)
            seen[number] = repeat + 1
            job_id = number if repeat == 0 else f"{number}#{repeat}"
            user = "" if v[11] == -1 else str(int(v[11]))
            part_no = int(v[15]) if v[15] > 0 else int(v[14]) if v[14] > 0 else None
            partition = "" if part_no is None else str(part_no)
            status = int(v[10])
            nodes, per_node = _whole_nodes(gpus, gpn)
            extra: dict[str, Any] = {}
            if v[8] != -1:
                extra["requested_time"] = v[8]
            jobs.append(
                Job(
                    job_id=job_id,
                    submit=submit,
                    gpus=gpus,
                    duration=run,
                    nodes=nodes,
                    gpus_per_node=per_node,
                    user=names["users"].get(user, user),
                    partition=names["partitions"].get(partition, partition),
                    state=_SWF_STATUS.get(status, str(status)),
                    trace_start=None if wait == -1 else submit + wait,
                    line=lineno,
                    extra=extra,
                )
            )
    finally:
        bar.close(lineno)
    return _finish(jobs, skipped, os.fspath(path), "swf", unix_start, label, sort)


def _swf_error(label: str, line: int, fields: list[str], i: int, why: str) -> HcsimError:
    """Field ``i`` (1-based) of an SWF line is bad."""
    return HcsimError(f"{label} line {line}: field {i} ({_SWF_FIELDS[i - 1]}) {_show(fields[i - 1])} {why}")


def _swf_names(value: str, where: str, key: str) -> dict[str, str]:
    """The number -> name map of an ``; hcsim-users:`` / ``; hcsim-partitions:`` comment."""
    try:
        mapping = json.loads(value)
    except json.JSONDecodeError:
        mapping = None
    if not isinstance(mapping, dict) or not all(isinstance(n, str) for n in mapping.values()):
        raise HcsimError(f'{where}: {key} {_show(value.strip())} is invalid (valid: a JSON object {{"1": "name"}})')
    return {str(k): n for k, n in mapping.items()}


def _swf_number(x: float) -> str:
    """Shortest exact text of a number: integers without a decimal point, floats by repr."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


def _swf_codes(values: list[str]) -> tuple[dict[str, int], dict[str, str]]:
    """SWF numbers for names: kept when all are natural numbers, else 1, 2, ... by first use."""
    distinct = [name for name in dict.fromkeys(values) if name]
    if all(name.isdigit() and int(name) > 0 and str(int(name)) == name for name in distinct):
        return {name: int(name) for name in distinct}, {}
    codes = {name: i for i, name in enumerate(distinct, 1)}
    return codes, {str(i): name for name, i in codes.items()}


def write_swf(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Save a trace as SWF, so synthetic or converted traces can be shared and re-read.

    Jobs are written sorted by submit time. Job ids are kept when they are distinct
    natural numbers, else jobs are numbered 1, 2, ...; non-numeric user and partition
    names are numbered and listed in ``; hcsim-users:`` / ``; hcsim-partitions:``
    comments that :func:`read_swf` reads back. Rigid shapes are not stored (SWF has no
    field for them; the reader re-derives whole-node shapes). A job without a recorded
    duration is written with run time -1, which the reader skips.
    """
    check_output_path(path)
    jobs = sorted(trace.jobs, key=lambda job: job.submit)
    ids = [job.job_id for job in jobs]
    keep_ids = all(i.isdigit() and int(i) > 0 and str(int(i)) == i for i in ids) and len(set(ids)) == len(ids)
    users, user_names = _swf_codes([job.user for job in jobs])
    parts, part_names = _swf_codes([job.partition for job in jobs])
    source = " ".join(str(trace.source).split())
    out = [
        "; Version: 2.2",
        "; Computer: hcsim cluster front end",
        f"; Note: written by hcsim write_swf from {trace.format or 'a'} trace {source}".rstrip(),
        f"; MaxJobs: {len(jobs)}",
        f"; MaxRecords: {len(jobs)}",
        f"; MaxProcs: {max((job.gpus for job in jobs), default=0)}",
    ]
    if trace.submit_epoch:
        out.append(f"; UnixStartTime: {_swf_number(trace.submit_epoch)}")
    if user_names:
        out.append(f"; hcsim-users: {json.dumps(user_names)}")
    if part_names:
        out.append(f"; hcsim-partitions: {json.dumps(part_names)}")
    for n, job in enumerate(jobs, 1):
        wait = -1.0 if job.trace_start is None else max(job.trace_start - job.submit, 0.0)
        state = job.state
        status = _SWF_STATUS_CODE.get(state, int(state) if state.lstrip("-").isdigit() else -1)
        requested = job.extra.get("requested_time", -1)
        fields = [
            job.job_id if keep_ids else str(n),
            _swf_number(job.submit),
            _swf_number(wait),
            _swf_number(-1 if job.duration is None else job.duration),
            str(job.gpus),
            "-1",
            "-1",
            str(job.gpus),
            _swf_number(requested if isinstance(requested, int | float) else -1),
            "-1",
            str(status),
            str(users.get(job.user, -1)),
            "-1",
            "-1",
            "-1",
            str(parts.get(job.partition, -1)),
            "-1",
            "-1",
        ]
        out.append(" ".join(fields))
    atomic_write_text(path, "\n".join(out) + "\n")


# --------------------------------------------------------------------------- synthetic


def _positive(name: str, value: Any, valid: str = "a finite number > 0") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not math.isfinite(value):
        raise HcsimError(f"{name} {_show(value)} is invalid (valid: {valid})")
    if value <= 0:
        raise HcsimError(f"{name} {_show(value)} is invalid (valid: {valid})")
    return float(value)


def _shape(name: str, value: Any) -> float:
    """A Pareto shape with a finite mean."""
    shape = _positive(name, value, "a number > 1, so that the mean is finite")
    if shape <= 1:
        raise HcsimError(f"{name} {_show(value)} is invalid (valid: a number > 1, so that the mean is finite)")
    return shape


def _weights(name: str, mix: Mapping[Any, Any], key_ok: Any, key_valid: str) -> tuple[list[Any], np.ndarray]:
    """Keys and normalised probabilities of a weight mapping, checked."""
    if not isinstance(mix, Mapping) or not mix:
        raise HcsimError(f"{name} {_show(mix)} is invalid (valid: a non-empty mapping of {key_valid} to weights)")
    keys, weights = [], []
    for key, weight in mix.items():
        if not key_ok(key):
            raise HcsimError(f"{name} key {_show(key)} is invalid (valid: {key_valid})")
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float | np.number)
            or not math.isfinite(weight)
            or weight < 0
        ):
            raise HcsimError(f"{name}[{key!r}] weight {_show(weight)} is invalid (valid: a finite number >= 0)")
        keys.append(key)
        weights.append(float(weight))
    total = sum(weights)
    if total <= 0:
        raise HcsimError(f"{name} weights sum to 0 (valid: at least one weight > 0)")
    return keys, np.asarray(weights) / total


def synthetic_trace(
    n_jobs: int,
    *,
    seed: int,
    arrival: str = "poisson",
    mean_interarrival: float = 60.0,
    pareto_shape: float = 1.5,
    gpu_mix: Mapping[int, float] | None = None,
    duration: str = "lognormal",
    mean_duration: float = 3600.0,
    duration_sigma: float = 2.0,
    duration_shape: float = 1.5,
    partitions: Mapping[str, float] | None = None,
    users: int = 50,
    gpus_per_node: int = 8,
) -> Trace:
    """Draw a reproducible GPU-cluster trace, for scheduler studies without a real trace.

    * arrivals: ``"poisson"`` (exponential gaps) or ``"pareto"`` (Lomax gaps of shape
      ``pareto_shape`` > 1: bursty, finite mean; variance finite only for shape > 2);
      the first job arrives at 0 and gaps have mean ``mean_interarrival`` seconds;
    * durations: ``"lognormal"`` (log-sd ``duration_sigma``; 2 gives the heavy tail of
      DL training jobs, mostly short with a few of days) or ``"pareto"`` (shape
      ``duration_shape`` > 1, minimum ``mean (shape - 1) / shape``), mean ``mean_duration``;
    * GPUs from ``gpu_mix`` (count -> weight; default :data:`DEFAULT_GPU_MIX`, an
      assumed Helios-like mix, not fitted); jobs of more than ``gpus_per_node`` GPUs that
      are a multiple of it ask for whole nodes (rigid shape), others for any GPUs;
    * users ``"1"`` .. ``str(users)`` with Zipf-like activity (weight 1/k: a few users
      submit most jobs, as in shared clusters); partitions from ``partitions`` (name ->
      weight; default: all jobs in the default partition ``""``).

    Same arguments and seed give identical jobs (``numpy.random.default_rng(seed)``).
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs < 1:
        raise HcsimError(f"n_jobs {_show(n_jobs)} is invalid (valid: an integer >= 1)")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise HcsimError(f"seed {_show(seed)} is invalid (valid: an integer >= 0)")
    if arrival not in ("poisson", "pareto"):
        raise HcsimError(f"arrival {_show(arrival)} is unknown (valid: poisson, pareto)")
    if duration not in ("lognormal", "pareto"):
        raise HcsimError(f"duration {_show(duration)} is unknown (valid: lognormal, pareto)")
    mean_gap = _positive("mean_interarrival", mean_interarrival, "seconds > 0")
    mean_run = _positive("mean_duration", mean_duration, "seconds > 0")
    if isinstance(users, bool) or not isinstance(users, int | np.integer) or users < 1:
        raise HcsimError(f"users {_show(users)} is invalid (valid: an integer >= 1)")
    gpn = _check_gpus_per_node(gpus_per_node)
    sizes, size_p = _weights(
        "gpu_mix",
        DEFAULT_GPU_MIX if gpu_mix is None else gpu_mix,
        lambda k: not isinstance(k, bool) and isinstance(k, int | np.integer) and k >= 1,
        "GPU counts >= 1",
    )
    if partitions is None:
        part_names, part_p = [""], np.ones(1)
    else:
        part_names, part_p = _weights("partitions", partitions, lambda k: isinstance(k, str), "partition names")

    n = int(n_jobs)
    rng = np.random.default_rng(int(seed))
    if arrival == "poisson":
        gaps = rng.exponential(mean_gap, n - 1)
    else:
        shape = _shape("pareto_shape", pareto_shape)
        gaps = mean_gap * (shape - 1) * rng.pareto(shape, n - 1)  # Lomax(shape, scale): mean scale / (shape - 1)
    submits = np.concatenate(([0.0], np.cumsum(gaps)))
    gpus = np.asarray(sizes)[rng.choice(len(sizes), size=n, p=size_p)]
    if duration == "lognormal":
        sigma = _positive("duration_sigma", duration_sigma)
        runs = rng.lognormal(math.log(mean_run) - sigma * sigma / 2, sigma, n)  # mean exp(mu + sigma^2 / 2)
    else:
        shape = _shape("duration_shape", duration_shape)
        runs = mean_run * (shape - 1) / shape * (1.0 + rng.pareto(shape, n))  # Pareto(x_m): mean shape x_m/(shape-1)
    zipf = 1.0 / np.arange(1, int(users) + 1)
    who = rng.choice(int(users), size=n, p=zipf / zipf.sum()) + 1
    where = rng.choice(len(part_names), size=n, p=part_p)

    jobs = []
    for i in range(n):
        g = int(gpus[i])
        nodes, per_node = _whole_nodes(g, gpn)
        jobs.append(
            Job(
                job_id=str(i + 1),
                submit=float(submits[i]),
                gpus=g,
                duration=float(runs[i]),
                nodes=nodes,
                gpus_per_node=per_node,
                user=str(int(who[i])),
                partition=part_names[int(where[i])],
            )
        )
    source = f"synthetic(n_jobs={n}, seed={int(seed)}, arrival={arrival}, duration={duration})"
    return Trace(jobs=jobs, source=source, format="synthetic")


def scale_load(trace: Trace, factor: float) -> Trace:
    """A copy of ``trace`` with submit times divided by ``factor`` (> 1: more load), for load sweeps.

    Durations and shapes are unchanged; ``trace_start`` is dropped because the real
    system's start times belong to the original arrivals.
    """
    f = _positive("load factor", factor, "a finite number > 0, e.g. 2 for twice the arrival rate")
    jobs = [replace(job, submit=job.submit / f, trace_start=None, extra=dict(job.extra)) for job in trace.jobs]
    return Trace(
        jobs=jobs,
        source=trace.source,
        format=trace.format,
        submit_epoch=trace.submit_epoch,
        skipped=list(trace.skipped),
    )
