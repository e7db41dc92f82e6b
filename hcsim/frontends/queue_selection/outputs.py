"""What a queue-selection run reports: per-method summary, completion-time CDFs, their files.

The metric is the completion time (finish - arrival, the paper's "service time"):
:func:`summarize` gives its mean with a 95% interval across replications, median, p90,
p99 and the share of jobs per queue; :func:`cdf_points` its empirical distribution.
Times are in minutes (keys ending in ``_min``); :func:`write_outputs` writes both tables
as CSV (an interval that cannot be computed, with one replication, is an empty cell).
"""

from __future__ import annotations

import math
import os

import numpy as np

from hcsim.analysis.statistics import ratio_interval
from hcsim.files import check_output_path
from hcsim.frontends.queue_selection.model import QueueRun
from hcsim.outputs import save_figure, write_csv

__all__ = ["cdf_points", "summarize", "write_outputs"]


def summarize(run: QueueRun, reference: str | None = "random") -> list[dict]:
    """Per method: jobs, mean completion time and its 95% CI, median, p90, p99, share of jobs per queue.

    With ``reference`` among the methods, also the paired difference of the mean against
    it (same inputs per replication) and that difference's 95% CI.
    """
    rows = []
    ref = run.jobs.get(reference) if reference else None
    ref_n, ref_s = ref.replication_sums(run.replications) if ref is not None else (None, None)
    for label in run.methods:
        j = run.jobs[label]
        n, s = j.replication_sums(run.replications)
        mean, half = ratio_interval(n, s)
        c = j.completion
        shares = np.bincount(j.queue, minlength=len(run.service)) / max(1, c.size)
        row = {
            "set": run.set_name or "custom",
            "model": run.model,
            "servers": run.servers,
            "method": label,
            "replications": run.replications,
            "jobs": int(c.size),
            "mean_min": mean,
            "ci95_min": half,
            "median_min": float(np.percentile(c, 50)) if c.size else math.nan,
            "p90_min": float(np.percentile(c, 90)) if c.size else math.nan,
            "p99_min": float(np.percentile(c, 99)) if c.size else math.nan,
        }
        if ref is not None:
            d_mean, d_half = ratio_interval(n, s - ref_s)
            row["diff_vs_" + reference + "_min"] = d_mean
            row["diff_ci95_min"] = d_half
        for k, share in enumerate(shares):
            row[f"share_q{k + 1}"] = float(share)
        rows.append(row)
    return rows


def cdf_points(run: QueueRun, grid: np.ndarray | None = None) -> list[dict]:
    """The empirical CDF of the completion time per method at ``grid`` minutes (default 0, 5, ..., 1500)."""
    grid = np.arange(0.0, 1500.0 + 1e-9, 5.0) if grid is None else np.asarray(grid, dtype=float)
    rows = []
    for label in run.methods:
        c = np.sort(run.jobs[label].completion)
        f = np.searchsorted(c, grid, side="right") / max(1, c.size)
        rows += [
            {"set": run.set_name or "custom", "model": run.model, "method": label, "minutes": float(x), "cdf": float(v)}
            for x, v in zip(grid, f, strict=True)
        ]
    return rows


def _plot_cdfs(runs: list[QueueRun], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4), dpi=110)
    for run in runs:
        for label in run.methods:
            c = np.sort(run.jobs[label].completion)
            name = label if len(runs) == 1 else f"{run.set_name} {label}"
            ax.plot(c, np.arange(1, c.size + 1) / c.size, label=name)
    ax.set(xlabel="completion time (min)", ylabel="P(T <= t)", title=title, xlim=(0, None))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)


def write_outputs(run: QueueRun, directory: str) -> list[str]:
    """summary.csv, cdf.csv and cdf.png (completion-time distributions) in ``directory``; returns the paths."""
    os.makedirs(directory, exist_ok=True)
    paths = [os.path.join(directory, name) for name in ("summary.csv", "cdf.csv", "cdf.png")]
    check_output_path(paths[0])
    write_csv(paths[0], summarize(run, "random" if "random" in run.methods else None), line_end="\n", nan="")
    write_csv(paths[1], cdf_points(run), line_end="\n", nan="")
    _plot_cdfs([run], paths[2], f"set {run.set_name or 'custom'}, {run.model} model: completion time")
    return paths
