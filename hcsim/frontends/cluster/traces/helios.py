"""Helios traces (``format="helios"``): SenseTime's ``cluster_log.csv``.

:func:`read_helios` reads the HeliosData file (S-Lab-System-Group/HeliosData, SC'21) or
a derived one (the Lucid artifact's): only ``job_id, vc, gpu_num, submit_time`` and
``duration`` (or ``start_time`` and ``end_time``) are required, times are wall-clock
strings read as UTC. vc becomes the partition, gpu_num the GPUs, node_num a rigid shape
when it divides evenly and fits a node; CPU-only rows are skipped.

Invariant: rows must be sorted by submit time, as the trace's job ids are
(``sort=True`` sorts instead of rejecting).

Every field and its mapping: docs/cluster.md, "Trace formats".
"""

from __future__ import annotations

import csv
import io
import math
import os
from typing import Any

from hcsim.errors import HcsimError
from hcsim.frontends.cluster.jobs import Job, Trace
from hcsim.frontends.cluster.traces._common import (
    _MISSING,
    _check_gpus_per_node,
    _finish,
    _label,
    _parse_time,
    _Progress,
    _read_text,
    _show,
)

__all__ = ["HELIOS_OPTIONAL", "HELIOS_REQUIRED", "read_helios"]

HELIOS_REQUIRED = ("job_id", "vc", "gpu_num", "submit_time")
HELIOS_OPTIONAL = ("user", "jobname", "cpu_num", "node_num", "state", "start_time", "end_time", "duration", "queue")


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
