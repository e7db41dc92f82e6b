"""What a run tells the user: metrics summary, per-vertex CSV trace, Chrome/Perfetto trace.

Metrics (per iteration, averaged over the XPUs that take part):

* **compute**: time the XPU computes (union of its compute intervals);
* **communication**: time it takes part in a collective or p2p vertex;
* **exposed communication**: communication time not hidden behind its compute;
* **memory stall**: time an operator waits for remote data beyond its compute (the
  copy before compute when non-coherent; the tail of the remote access when coherent);
* **throughput**: the workload's ``batches_per_iteration`` and ``samples_per_iteration``
  (graph attributes) over the mean iteration time: the paper's batch/s and samples/s;
* **whole system**: after a fold (``hcsim.fast``), ``xpus``, ``remote_vertices`` and
  ``bytes_on_links`` are the whole system's (each representative counted once per XPU
  it stands for), ``simulated_*`` what SimGrid ran; ``fold`` says what was folded;
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

import numpy as np

from hcsim.engine.simulator import RunResult
from hcsim.outputs import ChromeTrace
from hcsim.outputs import write_csv as write_csv_file

__all__ = ["link_stats", "summarize", "write_csv", "write_links_csv", "write_chrome_trace", "format_summary",
           "union_length", "minus_length", "BREAKDOWN_LABELS"]  # fmt: skip


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
    return _minus(_union(a), _union(b))


def _minus(ua: list[tuple[float, float]], ub: list[tuple[float, float]]) -> float:
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


def link_stats(result: RunResult) -> list[dict[str, Any]]:
    """Bytes, mean and peak utilization per link; columnar (a fast run records a million flows).

    The same sums in the same order as one pass over the flows: a link's bytes add up in flow
    order (a stable sort by link, then a sequential cumulative sum), its level steps through
    its flows' starts and ends sorted by (date, rate change); so the numbers are bit-identical.
    """
    flows, routes = result.flows, result.routes
    if not flows:
        return []
    srcs, dsts, sizes, starts, ends = zip(*flows, strict=True)
    pair_code: dict[tuple[str, str], int] = {}
    codes = np.fromiter((pair_code.setdefault(p, len(pair_code)) for p in zip(srcs, dsts, strict=True)), np.int64,
                        len(flows))  # fmt: skip
    link_code: dict[str, int] = {}
    pair_links = [[link_code.setdefault(link, len(link_code)) for link in routes.get(p, ())] for p in pair_code]
    counts_of_pair = np.array([len(links) for links in pair_links], np.int64)
    offset_of_pair = np.cumsum(counts_of_pair) - counts_of_pair
    flat = np.fromiter((c for links in pair_links for c in links), np.int64, int(counts_of_pair.sum()))
    counts = counts_of_pair[codes]  # per flow: the links it crosses, in route order
    total = int(counts.sum())
    if total == 0:
        return []
    first = np.cumsum(counts) - counts
    flow = np.repeat(np.arange(len(flows)), counts)
    link = flat[np.arange(total) - np.repeat(first, counts) + np.repeat(offset_of_pair[codes], counts)]
    size = np.asarray(sizes, np.float64)
    start, end = np.asarray(starts, np.float64), np.asarray(ends, np.float64)
    span_of = end - start
    rate = np.divide(size, span_of, out=np.zeros_like(size), where=end > start)
    by_link = np.argsort(link, kind="stable")  # a link's entries in flow order
    order = flow[by_link]
    link_sorted, size_s, rate_s, start_s, end_s = link[by_link], size[order], rate[order], start[order], end[order]
    cuts = [0, *(np.flatnonzero(np.diff(link_sorted)) + 1).tolist(), total]
    names = list(link_code)
    span = result.makespan or 1.0
    stats = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        name = names[int(link_sorted[a])]
        nbytes = float(np.cumsum(size_s[a:b])[-1])
        dates = np.concatenate((start_s[a:b], end_s[a:b]))
        deltas = np.concatenate((rate_s[a:b], -rate_s[a:b]))
        level = np.cumsum(deltas[np.lexsort((deltas, dates))])
        peak = max(0.0, float(level.max()))
        bw = result.link_bandwidth[name]
        stats.append(
            {
                "link": name,
                "bytes": nbytes,
                "bandwidth_Bps": bw,
                "mean_utilization": nbytes / (bw * span),
                "peak_utilization": min(peak / bw, 1.0),
            }
        )
    stats.sort(key=lambda s: (-s["mean_utilization"], s["link"]))
    return stats


def summarize(result: RunResult, top: int = 5, links: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The metrics summary of a run (plain data, JSON-ready); ``links``: its :func:`link_stats`, if already read."""
    ends = result.iteration_end
    times = [b - a for a, b in zip([0.0, *ends[:-1]], ends, strict=True)]
    mean = sum(times) / len(times)
    steady = times[1:] or times
    steady_mean = sum(steady) / len(steady)
    xpus = sorted(set(result.compute) | set(result.comm) | set(result.stall))
    k = result.iterations
    per = {"compute": 0.0, "communication": 0.0, "exposed_communication": 0.0, "memory_stall": 0.0}
    stand_in = result.graph.get("compute_stand_in") or {}  # a TP quotient: a slice computes as slice 0
    unions: dict[str, list[tuple[float, float]]] = {}  # each XPU's compute, merged once
    for x in xpus:
        y = stand_in.get(x, x)
        if y not in unions:
            unions[y] = _union(result.compute.get(y, []))
        c, m = unions[y], _union(result.comm.get(x, []))
        per["compute"] += sum(b - a for a, b in c)
        per["communication"] += sum(b - a for a, b in m)
        per["exposed_communication"] += _minus(m, c)
        per["memory_stall"] += union_length(result.stall.get(y, []))
    n = max(len(xpus), 1)
    per_iteration = {key: value / n / k for key, value in per.items()}
    batches = result.graph.get("batches_per_iteration", 1)
    samples = result.graph.get("samples_per_iteration", batches)
    if links is None:
        links = link_stats(result) if result.flows else []
    system = _system_view(result, len(xpus), links[:top])
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
        "activities": result.activities,
        "memoized_flows": result.memoized_flows,
        "memoized_iterations": result.memoized_iterations,
        "memoized_activities": result.memoized_activities,
        **system,
        "simulated_remote_vertices": sum(1 for v in result.placement.values() if v is not None),
        "simulated_bytes_on_links": sum(s["bytes"] for s in links),
        "simulated_top_links": links[:top],
    }


def _system_view(result: RunResult, simulated: int, top: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's whole-system fields: a fold's representatives scaled by the XPUs each stands for.

    ``xpus`` is the system's XPU count and ``simulated_xpus`` the XPUs run in SimGrid;
    ``folded_from``/``fold`` say what was folded (every fold: symmetry, zones, units,
    the layout's replicas). ``remote_vertices`` counts each representative's remote
    operators once per XPU it stands for (the fold's weights). ``bytes_on_links`` sums
    each recorded flow's bytes x hops once per XPU its sender (or, for a memory flow,
    its receiver) stands for: exact where the fold is proven hop class by hop class.
    The fast paths record a memoized collective's flows whole at its end
    (``hcsim.fast.system``); where memoized flows were not recorded, or a fold's weights
    are unknown, ``bytes_on_links`` is ``None``. ``top_links`` lists links of the whole
    system only when every XPU ran; after a fold it is ``None`` and
    ``simulated_top_links`` lists the simulated links (named so).
    """
    fold = result.fold
    weights: dict[str, int] = dict(getattr(fold, "weights", None) or {})
    if fold is not None:
        full, method = int(fold.group), str(getattr(fold, "method", "fold"))
    elif "folded_ranks" in result.graph:
        full, method = int(result.graph.get("folded_xpus", simulated)), "layout"
    else:
        full, method = simulated, ""
    folded = bool(method) and full != simulated
    if folded and not weights and simulated:  # the layout's replicas, each standing for full / simulated XPUs
        ran = set(result.compute) | set(result.comm) | set(result.stall)
        weights = dict.fromkeys(ran, full // simulated) if full % simulated == 0 else {}

    def weight(x: str) -> int:
        return weights.get(x, 1)

    host_of = {r[0]: r[2] for r in result.trace if r[2] in weights} if weights else {}
    remote: int | None = sum(weight(host_of.get(v, "")) for v, m in result.placement.items() if m is not None)
    if folded and remote and not host_of:  # no trace kept: which XPU holds what is unknown here
        remote = None
    recorded = result.memoized_flows == 0 or bool(result.graph.get("memoized_traffic_recorded"))
    complete = recorded and (not folded or bool(weights))
    carried = None
    if complete:
        carried = 0.0
        for src, dst, size, _, _ in result.flows:
            carried += size * len(result.routes.get((src, dst), ())) * weight(src if src in weights else dst)
    fold_text = None
    if folded:
        spread = sorted(set(weights.values())) or [0]
        fold_text = f"{method} fold: {simulated} representative XPUs stand for {full}" + (
            f" (each for {spread[0]} to {spread[-1]})" if len(spread) > 1 else f" (each for {spread[0]})"
        )
    return {
        "xpus": full,
        "simulated_xpus": simulated,
        "folded_from": full if folded else None,
        "fold": fold_text,
        "remote_vertices": remote,
        "bytes_on_links": carried,
        "top_links": top if complete and not folded else None,
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
        f"throughput            {summary['batches_per_s']:.6g} batch/s, {summary['samples_per_s']:.6g} samples/s "
        "(global batches per second of steady iteration: docs/cli.md)",
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
        + (
            f" (of the whole system; {summary['simulated_remote_vertices']} on the simulated XPUs)"
            if summary["folded_from"]
            else ""
        ),
    ]
    if summary["folded_from"]:
        lines.insert(4, f"folded                {summary['fold']}")
    if summary["folded_from"] and summary["bytes_on_links"] is not None:
        lines.append(f"bytes on links        {summary['bytes_on_links']:.6g} B (whole system: bytes x hops)")
    elif summary["bytes_on_links"] is None:
        lines.append(
            f"bytes on links        {summary['simulated_bytes_on_links']:.6g} B simulated only (bytes x hops of the "
            "flows run in SimGrid: memoized flows and folded XPUs are not in it)"
        )
    if "compute_s" in summary:  # a training run: hcsim.analysis.breakdown's buckets (they add up to the iteration)
        where = ", ".join(f"{label} {summary[key]:.4g}" for key, label in BREAKDOWN_LABELS)
        lines.insert(3, f"iteration breakdown   {where} s (first rank of every stage)")
    top = summary["top_links"]
    if top is None and summary["simulated_top_links"]:
        lines.append("top links, simulated only (mean / peak utilization, bytes):")
        top = summary["simulated_top_links"]
    elif top:
        lines.append("top links (mean / peak utilization, bytes):")
    for s in top or ():
        use = f"{s['mean_utilization']:7.1%} / {s['peak_utilization']:7.1%}"
        lines.append(f"  {s['link']:<40} {use}  {s['bytes']:.4g} B")
    return "\n".join(lines)


def write_csv(result: RunResult, path: str | os.PathLike[str]) -> None:
    """Per-vertex trace: vertex, iteration, host, kind, start_s, end_s, bytes, flops."""
    rows = sorted(result.trace, key=lambda r: (r[4], r[5], r[0], r[1]))
    columns = ["vertex", "iteration", "host", "kind", "start_s", "end_s", "bytes", "flops"]
    write_csv_file(path, rows, columns, line_end="\n")


def write_links_csv(result: RunResult, path: str | os.PathLike[str]) -> None:
    """Every link direction that carried traffic: bytes, bandwidth_Bps, mean and peak utilization."""
    columns = ["link", "bytes", "bandwidth_Bps", "mean_utilization", "peak_utilization"]
    write_csv_file(path, link_stats(result), columns, line_end="\n")


def write_chrome_trace(result: RunResult, path: str | os.PathLike[str]) -> None:
    """Chrome Trace Event JSON (opens in Perfetto): a track per XPU and per collective."""
    trace = ChromeTrace()
    for name, it, host, kind, start, end, nbytes, flops in sorted(result.trace, key=lambda r: (r[4], r[5], r[0], r[1])):
        track = host if kind == "compute" else f"{kind}: {name}"
        args = {"iteration": it, "bytes": nbytes, "flops": flops}
        trace.add(name, kind, start, end, process="hcsim", thread=track, args=args)
    trace.write(path)
