"""What a cluster run leaves behind: Batsim-style jobs.csv, a summary, time series, pictures.

* ``jobs.csv``: Batsim's jobs file, as Batsim and evalys read it, one row per *run
  segment* of a job (from a start until it ended, was preempted or migrated), plus
  ``partition``, ``user``, ``segment``, ``preemptions`` and ``migrations``;
* ``summary.json`` (:func:`summarize`): JCT and waiting percentiles, makespan, GPU
  utilization, AnalySIM's fragmentation measure, preemptions, migrations, rejections;
  keys of times end in ``_s`` (:data:`SUMMARY_ALIASES` keeps the old names readable);
* ``series.csv`` / ``series.png``: GPUs and nodes in use, pending and running jobs;
* ``trace.json``: a Chrome trace, a slice per run segment on the lane of every GPU held;
* ``gpus_<t>.png``: AnalySIM's cluster picture at time t.

Invariants: summing the rows active at an instant counts the GPUs really in use;
Batsim's identities hold per row on a 1/64 s grid (:data:`TIME_GRID`, exact in binary
and in 6 decimals); every file is the same byte for byte for the same trace and options
(the host time ``wall_s`` is returned and printed, never written).

Every column and state: docs/cluster.md, "jobs.csv (Batsim, evalys)".
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from hcsim.frontends.cluster.jobs import Job
from hcsim.frontends.cluster.simulator import ClusterResult
from hcsim.outputs import ChromeTrace, Summary, save_figure, write_csv, write_json

__all__ = [
    "JOB_FIELDS",
    "SERIES_FIELDS",
    "chrome_trace",
    "gpu_grid",
    "interval_set",
    "job_rows",
    "summarize",
    "workload_name",
    "write_outputs",
]

JOB_FIELDS = [
    "job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources", "requested_time",
    "success", "final_state", "starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time",
    "stretch", "consumed_energy", "allocated_resources", "partition", "user", "segment", "preemptions", "migrations",
]  # fmt: skip
#: Summary keys measured on the host, not simulated: kept out of ``summary.json`` (not reproducible).
HOST_FIELDS = ("wall_s",)
SERIES_FIELDS = ["time_s", "used_gpus", "used_nodes", "gpus_per_used_node", "pending", "running"]

#: Summary keys before they carried their unit -> today's; the old names still read (deprecated).
SUMMARY_ALIASES = {
    "jct_mean": "jct_mean_s",
    "jct_p50": "jct_p50_s",
    "jct_p90": "jct_p90_s",
    "jct_p99": "jct_p99_s",
    "wait_mean": "wait_mean_s",
    "wait_p99": "wait_p99_s",
    "makespan": "makespan_s",
    "wall_seconds": "wall_s",
}


def interval_set(ids: list[int] | tuple[int, ...]) -> str:
    """Batsim's interval-set text for resource ids: ``[0, 1, 2, 3, 8] -> "0-3 8"``."""
    out: list[str] = []
    ids = sorted(ids)
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return " ".join(out)


def _num(x: float) -> str:
    return repr(float(x)) if math.isfinite(x) else "-1"


#: jobs.csv's time grid (s): multiples of 1/64 are exact both in binary and in 6 decimals.
TIME_GRID = 1 / 64


def _on_grid(t: float) -> float:
    """``t`` on jobs.csv's time grid, so submission + waiting + execution adds up exactly to the row's finish.

    evalys rounds every column to 6 decimals and rebuilds each row's start and finish
    by adding them; with arbitrary floats, an instant where one job's segment ends and
    another's begins splits into two instants a few ulps apart, and the GPUs in use
    briefly count both jobs. Times on this grid add exactly (below 2**46 s).
    """
    return round(t / TIME_GRID) * TIME_GRID


def workload_name(source: str | os.PathLike[str] | None) -> str:
    """Batsim's name for a workload read from ``source``: the file's stem (``!`` is Batsim's separator), else ``w0``."""
    stem = os.path.basename(os.fspath(source or "")).split(".")[0].replace("!", "_").strip()
    return stem or "w0"


def job_rows(result: ClusterResult, jobs: list[Job], workload: str = "w0") -> list[dict[str, Any]]:
    """Batsim's rows: one per run segment of each job (one REJECTED row for a rejected job), jobs in input order."""
    rows = []
    for rec in result.jobs:
        job = jobs[rec.index]
        req = job.extra.get("requested_time", job.duration if job.duration is not None else -1)
        submit = _on_grid(rec.submit)
        base: dict[str, Any] = {
            "job_id": rec.job_id,
            "workload_name": workload,
            "profile": "delay" if job.workload is None else "workload",
            "submission_time": _num(submit),
            "requested_number_of_resources": rec.gpus,
            "requested_time": _num(float(req)) if req is not None else "-1",
            "consumed_energy": "-1",
            "partition": rec.partition,
            "user": job.user,
            "preemptions": rec.preemptions,
            "migrations": rec.migrations,
        }
        if rec.state != "COMPLETED" or not rec.segments:
            never = ("starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time", "stretch")
            rows.append(
                {**base, "success": 0, "final_state": "REJECTED", **dict.fromkeys(never, "-1")}
                | {"allocated_resources": "", "segment": 0}
            )
            continue
        served = 0.0
        last = len(rec.segments) - 1
        for k, (start, end, gpus) in enumerate(rec.segments):
            s, e = _on_grid(start), _on_grid(end)
            served += e - s
            turnaround = e - submit
            rows.append(
                {
                    **base,
                    "success": 1 if k == last else 0,
                    "final_state": "COMPLETED_SUCCESSFULLY" if k == last else "COMPLETED_KILLED",
                    "starting_time": _num(s),
                    "execution_time": _num(e - s),
                    "finish_time": _num(e),
                    "waiting_time": _num(s - submit),
                    "turnaround_time": _num(turnaround),
                    "stretch": _num(turnaround / served) if served > 0 else "1.0",
                    "allocated_resources": interval_set(gpus),
                    "segment": k,
                }
            )
    return rows


def _time_average(series: list[tuple[float, int, int, int, int]], column: int, end: float) -> float:
    if not series or end <= series[0][0]:
        return 0.0
    total = 0.0
    for (t, *vals), nxt in zip(series, [*series[1:], (end,)], strict=True):
        total += vals[column - 1] * (min(nxt[0], end) - t)
    return total / (end - series[0][0])


def summarize(result: ClusterResult) -> dict[str, Any]:
    """JCT, waiting, makespan, utilization and fragmentation of a run."""
    done = [r for r in result.jobs if r.state == "COMPLETED"]
    jct = np.array([r.finish - r.submit for r in done]) if done else np.zeros(0)
    wait = np.array([r.start - r.submit for r in done]) if done else np.zeros(0)
    gpus = len(result.gpu_names)
    busy = sum(r.gpus * (e - s) for r in done for s, e, _ in r.segments)
    t0 = min((r.submit for r in result.jobs), default=0.0)
    span = result.makespan - t0
    frag_num = _time_average(result.series, 1, result.makespan)
    frag_den = _time_average(result.series, 2, result.makespan)

    def pct(a: np.ndarray, q: float) -> float:
        return float(np.percentile(a, q)) if a.size else math.nan

    summary = {
        "policy": result.policy,
        "placement": result.placement,
        "migration": result.migration,
        "jobs": len(result.jobs),
        "completed": len(done),
        "rejected": len(result.jobs) - len(done),
        "gpus": gpus,
        "nodes": len(result.node_names),
        "jct_mean_s": float(jct.mean()) if jct.size else math.nan,
        "jct_p50_s": pct(jct, 50),
        "jct_p90_s": pct(jct, 90),
        "jct_p99_s": pct(jct, 99),
        "wait_mean_s": float(wait.mean()) if wait.size else math.nan,
        "wait_p99_s": pct(wait, 99),
        "makespan_s": result.makespan,
        "utilization": busy / (gpus * span) if span > 0 else 0.0,
        "gpus_per_used_node": frag_num / frag_den if frag_den > 0 else 0.0,
        "pending_mean": _time_average(result.series, 3, result.makespan),
        "running_mean": _time_average(result.series, 4, result.makespan),
        "preemptions": sum(r.preemptions for r in result.jobs),
        "migrations": sum(r.migrations for r in result.jobs),
        "events": result.events,
        "wall_s": result.wall_seconds,
        "rejections": [{"job_id": r.job_id, "reason": r.reason} for r in result.jobs if r.state != "COMPLETED"][:100],
    }
    return Summary(summary, aliases=SUMMARY_ALIASES)


def chrome_trace(result: ClusterResult) -> ChromeTrace:
    """A slice per job segment on the lane (a thread) of every GPU it holds, grouped by node (a process).

    Lanes are named in GPU order before any slice, so the trace lists nodes and GPUs in
    the cluster's order whatever ran first.
    """
    trace = ChromeTrace()
    used = sorted({g for rec in result.jobs for _, _, gpus in rec.segments for g in gpus})
    for g in used:
        trace.lane(result.node_names[result.gpu_node[g]], result.gpu_names[g])
    for rec in result.jobs:
        for k, (s, e, gpus) in enumerate(rec.segments):
            args = {"gpus": len(gpus), "segment": k, "submit_s": rec.submit, "allocated": interval_set(gpus)}
            for g in gpus:
                trace.add(
                    f"job {rec.job_id}",
                    rec.partition or "default",
                    s,
                    e,
                    process=result.node_names[result.gpu_node[g]],
                    thread=result.gpu_names[g],
                    args=args,
                )
    return trace


def gpu_grid(result: ClusterResult, at: float, path: str | os.PathLike[str], columns: int = 16) -> None:
    """AnalySIM's picture at time ``at``: a square per GPU coloured by its job, nodes by partition."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    holder: dict[int, int] = {}
    for rec in result.jobs:
        for s, e, gpus in rec.segments:
            if s <= at < e:
                for g in gpus:
                    holder[g] = rec.index
    per_node: dict[int, list[int]] = {}
    for g, n in enumerate(result.gpu_node):
        per_node.setdefault(n, []).append(g)
    parts: dict[str, list[int]] = {}
    for n, p in enumerate(result.node_partition):
        parts.setdefault(p, []).append(n)
    columns = max(1, min(columns, max(len(v) for v in parts.values())))
    side = max(1, math.ceil(math.sqrt(max(len(v) for v in per_node.values()))))
    cmap = plt.get_cmap("tab20")
    rows_needed = sum(math.ceil(len(nodes) / columns) for nodes in parts.values()) + len(parts)
    fig, ax = plt.subplots(figsize=(columns * 0.7, max(2.0, rows_needed * 0.75)))
    y = 0.0
    for part, nodes in parts.items():
        ax.text(0, -y + 0.3, f"partition {part or 'default'} ({len(nodes)} nodes)", fontsize=8, va="bottom")
        y += 0.4
        for k, n in enumerate(nodes):
            cx, cy = (k % columns) * (side + 1), -(y + (k // columns) * (side + 1.2)) - side
            ax.add_patch(Rectangle((cx - 0.1, cy - 0.1), side + 0.2, side + 0.2, fill=False, lw=0.6))
            ax.text(cx + side / 2, cy + side + 0.15, result.node_names[n], fontsize=4, ha="center")
            for i, g in enumerate(per_node[n]):
                job = holder.get(g)
                colour = "white" if job is None else cmap((job * 7919) % 20)
                ax.add_patch(
                    Rectangle((cx + i % side, cy + side - 1 - i // side), 0.9, 0.9, fc=colour, ec="grey", lw=0.3)
                )
        y += math.ceil(len(nodes) / columns) * (side + 1.2) + 0.4
    busy = len(holder)
    ax.set_title(f"GPUs at t = {at:.0f} s: {busy}/{len(result.gpu_names)} busy ({result.policy}, {result.placement})")
    ax.set_xlim(-0.5, columns * (side + 1))
    ax.set_ylim(-y - 0.5, 1.0)
    ax.set_aspect("equal")
    ax.axis("off")
    save_figure(fig, path, dpi=150, bbox_inches="tight")


def _plot_series(result: ClusterResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not result.series:
        return
    t = np.array([r[0] for r in result.series]) / 3600
    cols = np.array([r[1:] for r in result.series], dtype=float)
    fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    ratio = np.divide(cols[:, 0], cols[:, 1], out=np.zeros(len(cols)), where=cols[:, 1] > 0)
    axes[0].step(t, ratio, where="post")
    axes[0].set_ylabel("#usedGPU / #usedNodes")
    axes[1].step(t, cols[:, 2], where="post", label="pending")
    axes[1].step(t, cols[:, 3], where="post", label="running")
    axes[1].set_ylabel("jobs")
    axes[1].legend()
    axes[2].step(t, cols[:, 0], where="post")
    axes[2].set_ylabel("#usedGPU")
    axes[2].set_xlabel("time (h)")
    fig.suptitle(f"{result.policy}, {result.placement}{' + migration' if result.migration else ''}")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def write_outputs(
    result: ClusterResult,
    jobs: list[Job],
    directory: str | os.PathLike[str],
    snapshots: list[float] | None = None,
    workload: str = "w0",
) -> dict[str, Any]:
    """Write jobs.csv, summary.json, series.csv/png, trace.json and GPU pictures; return the summary.

    ``workload`` is jobs.csv's ``workload_name`` (see :func:`workload_name`).
    """
    out = os.fspath(directory)
    os.makedirs(out, exist_ok=True)
    write_csv(os.path.join(out, "jobs.csv"), job_rows(result, jobs, workload), JOB_FIELDS, line_end="\n")
    series = [(t, g, n, g / n if n else 0.0, p, r) for t, g, n, p, r in result.series]
    write_csv(os.path.join(out, "series.csv"), series, SERIES_FIELDS, line_end="\n")
    summary = summarize(result)
    write_json(os.path.join(out, "summary.json"), {k: v for k, v in summary.items() if k not in HOST_FIELDS})
    chrome_trace(result).write(os.path.join(out, "trace.json"))
    _plot_series(result, os.path.join(out, "series.png"))
    for t in snapshots if snapshots is not None else [result.makespan / 2]:
        gpu_grid(result, t, os.path.join(out, f"gpus_{t:.0f}.png"))
    return summary
