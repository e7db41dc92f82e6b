"""What a run tells the user: metrics summary, per-vertex CSV trace, Chrome/Perfetto trace.

Metrics (per iteration, averaged over the XPUs that take part):

* **compute**: time the XPU computes (union of its compute intervals);
* **communication**: time it takes part in a collective or p2p vertex;
* **exposed communication**: communication time not hidden behind its compute;
* **memory stall**: time an operator waits for remote data beyond its compute (the
  copy before compute when non-coherent; the tail of the remote access when coherent);
* **throughput**: the workload's ``batches_per_iteration`` and ``samples_per_iteration``
  (graph attributes) over the mean iteration time: the paper's batch/s and samples/s;
* **iteration breakdown** (a training run, :mod:`hcsim.analysis.breakdown` fills the
  summary's ``compute_s``, ``exposed_*_s``, ``memory_stall_s``, ``idle_s``): one line;
* **links**: bytes carried by each link direction (from SimGrid's own routes), mean
  utilization (bytes / (bandwidth x makespan)) and peak utilization (the highest sum of
  the average rates of the flows crossing it at one time), and the top links by mean
  utilization: the bottlenecks.
"""

from __future__ import annotations

import os
from typing import Any

from hcsim.engine.simulator import RunResult
from hcsim.outputs import ChromeTrace
from hcsim.outputs import write_csv as write_csv_file

__all__ = ["summarize", "write_csv", "write_links_csv", "write_chrome_trace", "format_summary", "union_length",
           "minus_length", "BREAKDOWN_LABELS"]  # fmt: skip


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by ``intervals``."""
    return sum(b - a for a, b in _union(intervals))


def minus_length(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Length of union(a) not covered by union(b)."""
    ua, ub = _union(a), _union(b)
    total, j = 0.0, 0
    for s, e in ua:
        covered = 0.0
        while j < len(ub) and ub[j][1] <= s:
            j += 1
        k = j
        while k < len(ub) and ub[k][0] < e:
            covered += min(e, ub[k][1]) - max(s, ub[k][0])
            k += 1
        total += (e - s) - covered
    return total


def _link_stats(result: RunResult) -> list[dict[str, Any]]:
    carried: dict[str, float] = {}
    events: dict[str, list[tuple[float, float]]] = {}
    for src, dst, size, start, end in result.flows:
        rate = size / (end - start) if end > start else 0.0
        for link in result.routes.get((src, dst), ()):
            carried[link] = carried.get(link, 0.0) + size
            ev = events.setdefault(link, [])
            ev.append((start, rate))
            ev.append((end, -rate))
    span = result.makespan or 1.0
    stats = []
    for link, nbytes in carried.items():
        bw = result.link_bandwidth[link]
        level = peak = 0.0
        for _, delta in sorted(events[link], key=lambda e: (e[0], e[1])):
            level += delta
            peak = max(peak, level)
        stats.append(
            {
                "link": link,
                "bytes": nbytes,
                "bandwidth_Bps": bw,
                "mean_utilization": nbytes / (bw * span),
                "peak_utilization": min(peak / bw, 1.0),
            }
        )
    stats.sort(key=lambda s: (-s["mean_utilization"], s["link"]))
    return stats


def summarize(result: RunResult, top: int = 5) -> dict[str, Any]:
    """The metrics summary of a run (plain data, JSON-ready)."""
    ends = result.iteration_end
    times = [b - a for a, b in zip([0.0, *ends[:-1]], ends, strict=True)]
    mean = sum(times) / len(times)
    steady = times[1:] or times
    steady_mean = sum(steady) / len(steady)
    xpus = sorted(set(result.compute) | set(result.comm) | set(result.stall))
    k = result.iterations
    per = {"compute": 0.0, "communication": 0.0, "exposed_communication": 0.0, "memory_stall": 0.0}
    for x in xpus:
        c, m, s = result.compute.get(x, []), result.comm.get(x, []), result.stall.get(x, [])
        per["compute"] += union_length(c)
        per["communication"] += union_length(m)
        per["exposed_communication"] += minus_length(m, c)
        per["memory_stall"] += union_length(s)
    n = max(len(xpus), 1)
    per_iteration = {key: value / n / k for key, value in per.items()}
    batches = result.graph.get("batches_per_iteration", 1)
    samples = result.graph.get("samples_per_iteration", batches)
    links = _link_stats(result) if result.flows else []
    return {
        "iterations": k,
        "coherent": result.coherent,
        "makespan_s": result.makespan,
        "iteration_times_s": times,
        "mean_iteration_s": mean,
        "steady_iteration_s": steady_mean,
        "batches_per_s": batches / steady_mean if steady_mean > 0 else float("inf"),
        "samples_per_s": samples / steady_mean if steady_mean > 0 else float("inf"),
        "per_xpu_per_iteration_s": per_iteration,
        "xpus": len(xpus),
        "activities": result.activities,
        "memoized_flows": result.memoized_flows,
        "memoized_iterations": result.memoized_iterations,
        "memoized_activities": result.memoized_activities,
        "folded_from": (
            result.graph.get("folded_xpus", result.graph.get("batches_per_iteration", len(xpus)))
            if "folded_ranks" in result.graph
            else None
        ),
        "remote_vertices": sum(1 for v in result.placement.values() if v is not None),
        "bytes_on_links": sum(s["bytes"] for s in links),
        "top_links": links[:top],
    }


#: a training run's iteration breakdown (:mod:`hcsim.analysis.breakdown`) as the text summary labels it
BREAKDOWN_LABELS = (
    ("compute_s", "compute"),
    ("exposed_tp_s", "tp"),
    ("exposed_pp_s", "pp"),
    ("exposed_dp_s", "dp"),
    ("exposed_cp_s", "cp"),
    ("exposed_ep_s", "ep"),
    ("memory_stall_s", "memory"),
    ("idle_s", "idle"),
)


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as the CLI prints it."""
    per = summary["per_xpu_per_iteration_s"]
    lines = [
        f"iterations            {summary['iterations']} ({'coherent' if summary['coherent'] else 'non-coherent'})",
        f"simulated time        {summary['makespan_s']:.6g} s",
        f"iteration time        {summary['steady_iteration_s']:.6g} s (first {summary['iteration_times_s'][0]:.6g} s)",
        f"throughput            {summary['batches_per_s']:.6g} batch/s, {summary['samples_per_s']:.6g} samples/s",
        "per XPU, per iteration:",
        f"  compute             {per['compute']:.6g} s",
        f"  communication       {per['communication']:.6g} s",
        f"  exposed comm.       {per['exposed_communication']:.6g} s",
        f"  memory stall        {per['memory_stall']:.6g} s",
        f"activities simulated  {summary['activities']}"
        + (f" (+ {summary['memoized_flows']} flows of memoized ring steps)" if summary["memoized_flows"] else "")
        + (
            f" (+ {summary['memoized_activities']} of {summary['memoized_iterations']} extrapolated iterations)"
            if summary["memoized_iterations"]
            else ""
        ),
        f"operators on remote memory {summary['remote_vertices']}"
        + (" (on the representative XPUs)" if summary["folded_from"] else ""),
    ]
    if summary["folded_from"]:
        lines.insert(4, f"folded                {summary['xpus']} representative XPUs of {summary['folded_from']}")
    if "compute_s" in summary:  # a training run: hcsim.analysis.breakdown's buckets (they add up to the iteration)
        where = ", ".join(f"{label} {summary[key]:.4g}" for key, label in BREAKDOWN_LABELS)
        lines.insert(3, f"iteration breakdown   {where} s (first rank of every stage)")
    if summary["top_links"]:
        lines.append("top links (mean / peak utilization, bytes):")
        for s in summary["top_links"]:
            lines.append(
                f"  {s['link']:<40} {s['mean_utilization']:7.1%} / {s['peak_utilization']:7.1%}  {s['bytes']:.4g} B"
            )
    return "\n".join(lines)


def write_csv(result: RunResult, path: str | os.PathLike[str]) -> None:
    """Per-vertex trace: vertex, iteration, host, kind, start_s, end_s, bytes, flops."""
    rows = sorted(result.trace, key=lambda r: (r[4], r[5], r[0], r[1]))
    columns = ["vertex", "iteration", "host", "kind", "start_s", "end_s", "bytes", "flops"]
    write_csv_file(path, rows, columns, line_end="\n")


def write_links_csv(result: RunResult, path: str | os.PathLike[str]) -> None:
    """Every link direction that carried traffic: bytes, bandwidth_Bps, mean and peak utilization."""
    columns = ["link", "bytes", "bandwidth_Bps", "mean_utilization", "peak_utilization"]
    write_csv_file(path, _link_stats(result), columns, line_end="\n")


def write_chrome_trace(result: RunResult, path: str | os.PathLike[str]) -> None:
    """Chrome Trace Event JSON (opens in Perfetto): a track per XPU and per collective."""
    trace = ChromeTrace()
    for name, it, host, kind, start, end, nbytes, flops in sorted(result.trace, key=lambda r: (r[4], r[5], r[0], r[1])):
        track = host if kind == "compute" else f"{kind}: {name}"
        args = {"iteration": it, "bytes": nbytes, "flops": flops}
        trace.add(name, kind, start, end, process="hcsim", thread=track, args=args)
    trace.write(path)
