"""SWF traces (``format="swf"``): the Standard Workload Format of the Parallel Workloads Archive.

:func:`read_swf` reads SWF 2.x (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html):
one job per line, 18 whitespace-separated numbers, ``;`` header lines, -1 = unknown; the
archive's ``.swf.gz`` downloads read as they are. Each processor is one GPU; the
partition is field 16, else field 15 (queue 0 marks interactive jobs, not a queue); the
user's requested time goes to ``extra["requested_time"]`` for backfilling. A job of
whole nodes' worth of GPUs gets whole nodes, any other job any placement.
:func:`write_swf` writes a trace back, with comments that keep non-numeric user and
partition names.

Invariants: job ids stay unique (a repeated job number, one line per partial execution,
becomes ``"<n>#<k>"``); rows with unknown run time or processors are skipped and listed.

Every field and its mapping: docs/cluster.md, "Trace formats".
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from hcsim.errors import HcsimError
from hcsim.files import atomic_write_text, check_output_path
from hcsim.frontends.cluster.jobs import Job, Trace
from hcsim.frontends.cluster.traces._common import (
    _check_gpus_per_node,
    _finish,
    _label,
    _Progress,
    _read_text,
    _show,
    _whole_nodes,
)

__all__ = ["read_swf", "write_swf"]

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
