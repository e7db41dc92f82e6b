"""What a cluster run leaves behind: Batsim-style jobs.csv, a summary, time series, pictures.

* ``jobs.csv``: one row per job with Batsim's field names (``job_id``,
  ``submission_time``, ``requested_number_of_resources``, ``requested_time``,
  ``success``, ``final_state``, ``starting_time``, ``execution_time``, ``finish_time``,
  ``waiting_time``, ``turnaround_time``, ``stretch``, ``allocated_resources``), plus
  ``partition``, ``user``, ``preemptions`` and ``migrations``. As in Batsim,
  ``execution_time`` is finish - start (preempted time included) and
  ``allocated_resources`` is an interval set of GPU ids (``"0-3 8"``), here of the
  job's last placement. Rejected jobs have ``final_state`` REJECTED and -1 times.
* ``summary.json``: job completion time (JCT = turnaround) mean and percentiles,
  waiting time, makespan, GPU utilization, time-averaged #usedGPU/#usedNodes
  (AnalySIM's fragmentation measure; 8 is ideal on 8-GPU nodes), preemptions,
  migrations, rejected jobs with reasons; times in seconds, their keys end in ``_s``
  (``jct_mean_s``, ``makespan_s``; the old unsuffixed names still read from the returned
  dict, see :data:`SUMMARY_ALIASES`). The dict :func:`summarize` returns also has
  ``wall_s``, the host time of the run; it differs between identical runs, so it is
  not written to ``summary.json`` (the command prints it): every file is the same
  byte for byte for the same trace and options.
* ``series.csv`` / ``series.png``: #usedGPU, #usedNodes and their ratio, pending and
  running jobs over time.
* ``trace.json``: a Chrome trace (chrome://tracing, Perfetto; built by
  :class:`hcsim.outputs.ChromeTrace`) with one slice per run segment of each job, on its
  first GPU's lane (a thread), grouped by node (a process).
* ``gpus_<t>.png``: AnalySIM's cluster picture at time t: each GPU a square coloured by
  the job holding it (white: idle), nodes grouped by partition.
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
    "write_outputs",
]

JOB_FIELDS = [
    "job_id", "submission_time", "requested_number_of_resources", "requested_time", "success", "final_state",
    "starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time", "stretch",
    "allocated_resources", "partition", "user", "preemptions", "migrations",
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


def job_rows(result: ClusterResult, jobs: list[Job]) -> list[dict[str, Any]]:
    """One Batsim-style row per job, in input order."""
    rows = []
    for rec in result.jobs:
        job = jobs[rec.index]
        req = job.extra.get("requested_time", job.duration if job.duration is not None else -1)
        row: dict[str, Any] = {
            "job_id": rec.job_id,
            "submission_time": _num(rec.submit),
            "requested_number_of_resources": rec.gpus,
            "requested_time": _num(float(req)) if req is not None else "-1",
            "success": 1 if rec.state == "COMPLETED" else 0,
            "final_state": "COMPLETED_SUCCESSFULLY" if rec.state == "COMPLETED" else "REJECTED",
            "partition": rec.partition,
            "user": job.user,
            "preemptions": rec.preemptions,
            "migrations": rec.migrations,
        }
        if rec.state == "COMPLETED":
            execution = rec.finish - rec.start
            turnaround = rec.finish - rec.submit
            row.update(
                starting_time=_num(rec.start),
                execution_time=_num(execution),
                finish_time=_num(rec.finish),
                waiting_time=_num(rec.start - rec.submit),
                turnaround_time=_num(turnaround),
                stretch=_num(turnaround / execution) if execution > 0 else "1.0",
                allocated_resources=interval_set(rec.segments[-1][2]) if rec.segments else "",
            )
        else:
            row.update(
                starting_time="-1",
                execution_time="-1",
                finish_time="-1",
                waiting_time="-1",
                turnaround_time="-1",
                stretch="-1",
                allocated_resources="",
            )
        rows.append(row)
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
    """A slice per job segment on its first GPU's lane (a thread), grouped by node (a process)."""
    trace = ChromeTrace()
    for rec in result.jobs:
        for k, (s, e, gpus) in enumerate(rec.segments):
            first = gpus[0] if gpus else 0
            trace.add(
                f"job {rec.job_id}",
                rec.partition or "default",
                s,
                e,
                process=result.node_names[result.gpu_node[first]],
                thread=result.gpu_names[first],
                args={"gpus": len(gpus), "segment": k, "submit_s": rec.submit},
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
    result: ClusterResult, jobs: list[Job], directory: str | os.PathLike[str], snapshots: list[float] | None = None
) -> dict[str, Any]:
    """Write jobs.csv, summary.json, series.csv/png, trace.json and GPU pictures; return the summary."""
    out = os.fspath(directory)
    os.makedirs(out, exist_ok=True)
    write_csv(os.path.join(out, "jobs.csv"), job_rows(result, jobs), JOB_FIELDS, line_end="\n")
    series = [(t, g, n, g / n if n else 0.0, p, r) for t, g, n, p, r in result.series]
    write_csv(os.path.join(out, "series.csv"), series, SERIES_FIELDS, line_end="\n")
    summary = summarize(result)
    write_json(os.path.join(out, "summary.json"), {k: v for k, v in summary.items() if k not in HOST_FIELDS})
    chrome_trace(result).write(os.path.join(out, "trace.json"))
    _plot_series(result, os.path.join(out, "series.png"))
    for t in snapshots if snapshots is not None else [result.makespan / 2]:
        gpu_grid(result, t, os.path.join(out, f"gpus_{t:.0f}.png"))
    return summary
