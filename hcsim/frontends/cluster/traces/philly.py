"""Philly traces (``format="philly"``): Microsoft's ``cluster_job_log`` JSON.

:func:`read_philly` reads msr-fiddle/philly-traces' job list (or a single job object):
vc becomes the partition, status the state; the GPUs and shape come from the last
attempt placed on GPUs, the duration is the sum of the attempts' run times (the service
received, without the re-queueing gaps the simulated scheduler must produce itself).
Jobs still running when the trace was cut, or with no complete attempt or no GPUs, are
skipped.

Invariant: JSON has no useful line numbers, so messages name ``job #k`` (1-based) and its
jobid, and ``Job.line`` is k; the list is sorted by submit time after reading.

Every field and its mapping: docs/cluster.md, "Trace formats".
"""

from __future__ import annotations

import json
import os
from typing import Any

from hcsim.errors import HcsimError
from hcsim.frontends.cluster.jobs import Job, Trace
from hcsim.frontends.cluster.traces._common import (
    _check_gpus_per_node,
    _finish,
    _label,
    _parse_time,
    _Progress,
    _read_text,
    _show,
)

__all__ = ["read_philly"]

_PHILLY_STATUS = {"Pass": "COMPLETED", "Failed": "FAILED", "Killed": "CANCELLED"}


def read_philly(path: str | os.PathLike[str], *, gpus_per_node: int = 8, progress: bool | None = None) -> Trace:
    """Read Microsoft Philly's ``cluster_job_log`` (JSON list of jobs with their attempts)."""
    gpn = _check_gpus_per_node(gpus_per_node)
    text = _read_text(path, "Philly cluster_job_log (JSON)")
    label = _label(path)
    valid_file = "(valid: a Philly cluster_job_log, a JSON list of job objects, or one job object)"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise HcsimError(f"{label} line {e.lineno} column {e.colno}: not valid JSON ({e.msg}) {valid_file}") from None
    except RecursionError:
        raise HcsimError(f"{label}: JSON nested too deeply for a job log {valid_file}") from None
    if isinstance(data, dict) and "jobid" in data:
        data = [data]  # one job object, as the Philly README shows an entry
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
