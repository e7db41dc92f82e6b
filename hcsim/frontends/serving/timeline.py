"""A continuous-batching run over time: KV held and KV traffic per tier as a CSV series, a Chrome trace.

Both come from the iteration log :func:`~hcsim.frontends.serving.continuous.serve_continuous`
fills (``(replica, start, seconds, shape, repeats)`` per run of identical iterations). An
iteration's KV reads follow from its shape exactly as the iteration graph charges them:
the decode KV tokens in HBM and in the second tier, and every prefill chunk's prior KV
(:func:`kv_bytes_per_token` bytes per token per rank, times the TP ranks); its live KV is
the KV tokens of the requests it schedules (decode contexts, and chunks' prior plus new
tokens). Repeated decode iterations each read one token more per request than the last.
:func:`series` spreads every iteration's quantities uniformly over its span and adds them
into bins of ``interval`` seconds per replica, exactly (piecewise-linear cumulative sums),
so bins add up to the run's totals (tested). :func:`chrome_trace` has one slice per run of
iterations per replica.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hcsim.errors import HcsimError
from hcsim.frontends.serving.iteration import IterationShape
from hcsim.outputs import ChromeTrace

__all__ = ["SERIES_COLUMNS", "chrome_trace", "iteration_arrays", "series"]

Log = list[tuple[int, float, float, IterationShape, int]]

SERIES_COLUMNS = [
    "replica", "t_start_s", "t_end_s", "busy_fraction", "iterations", "tokens", "kv_live_tokens_mean",
    "kv_hbm_read_bytes", "kv_remote_read_bytes", "kv_remote_read_GBps",
]  # fmt: skip


def iteration_arrays(log: Log, replica: int) -> dict[str, np.ndarray]:
    """Per iteration of ``replica`` (runs expanded): start, seconds, tokens, live KV, KV tokens read per tier."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("start", "dt", "tokens", "live", "hbm", "remote")}
    for rep, start, dt, shape, m in log:
        if rep != replica:
            continue
        j = np.arange(m, dtype=float)
        prior_h = sum(c[1] for c in shape.chunks)
        prior_r = sum(c[2] for c in shape.chunks)
        chunk_tokens = sum(c[0] for c in shape.chunks)
        grow = j * shape.decodes  # a repeated decode iteration reads one more token per request
        cols["start"].append(start + j * dt)
        cols["dt"].append(np.full(m, dt))
        cols["tokens"].append(np.full(m, float(shape.tokens)))
        cols["hbm"].append(shape.kv_hbm + prior_h + grow)
        cols["remote"].append(np.full(m, float(shape.kv_remote + prior_r)))
        cols["live"].append(shape.kv_hbm + shape.kv_remote + prior_h + prior_r + chunk_tokens + grow)
    return {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}


def _cumulative(starts: np.ndarray, dts: np.ndarray, q: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """F(edge): the sum of ``q`` up to each edge, each iteration's ``q`` spread uniformly over its span."""
    before = np.concatenate([[0.0], np.cumsum(q)])
    i = np.searchsorted(starts, edges, side="right") - 1
    out = np.zeros(len(edges))
    inside = i >= 0
    k = i[inside]
    frac = np.clip((edges[inside] - starts[k]) / np.where(dts[k] > 0, dts[k], 1.0), 0.0, 1.0)
    out[inside] = before[k] + q[k] * frac
    return out


def series(log: Log, replicas: int, kv_bytes_per_token: float, tp: int, interval: float) -> list[dict[str, Any]]:
    """Rows of :data:`SERIES_COLUMNS`, one per replica per ``interval`` seconds from 0 to the last iteration's end."""
    if not (math.isfinite(interval) and interval > 0):
        raise HcsimError(f"--series-interval {interval!r} is invalid (valid: a duration > 0, e.g. 1s)")
    end = max((s + dt * m for _, s, dt, _, m in log), default=0.0)
    bins = max(1, math.ceil(end / interval))
    if bins > 1_000_000:
        raise HcsimError(f"--series-interval {interval:g}s gives {bins:,} rows over {end:.6g} s "
                         "(valid: an interval giving at most 1,000,000 rows)")  # fmt: skip
    edges = np.arange(bins + 1, dtype=float) * interval
    per_token = kv_bytes_per_token * tp
    rows = []
    for k in range(replicas):
        a = iteration_arrays(log, k)
        if len(a["start"]):
            busy = np.diff(_cumulative(a["start"], a["dt"], a["dt"], edges))
            tokens = np.diff(_cumulative(a["start"], a["dt"], a["tokens"], edges))
            live = np.diff(_cumulative(a["start"], a["dt"], a["live"] * a["dt"], edges))
            hbm = np.diff(_cumulative(a["start"], a["dt"], a["hbm"], edges)) * per_token
            remote = np.diff(_cumulative(a["start"], a["dt"], a["remote"], edges)) * per_token
            started = np.diff(np.searchsorted(a["start"], edges, side="left"))
        else:
            busy = tokens = live = hbm = remote = np.zeros(bins)
            started = np.zeros(bins, dtype=int)
        for b in range(bins):
            rows.append({
                "replica": k, "t_start_s": float(edges[b]), "t_end_s": float(edges[b + 1]),
                "busy_fraction": float(busy[b]) / interval, "iterations": int(started[b]),
                "tokens": float(tokens[b]), "kv_live_tokens_mean": float(live[b]) / interval,
                "kv_hbm_read_bytes": float(hbm[b]), "kv_remote_read_bytes": float(remote[b]),
                "kv_remote_read_GBps": float(remote[b]) / interval / 1e9,
            })  # fmt: skip
    return rows


def chrome_trace(log: Log) -> ChromeTrace:
    """One slice per run of iterations on lane ``iterations`` of process ``replica K``, its shape in ``args``."""
    trace = ChromeTrace()
    for rep, start, dt, shape, m in sorted(log, key=lambda e: (e[0], e[1])):
        kind = "decode" if not shape.chunks else ("prefill" if not shape.decodes else "prefill+decode")
        name = kind if m == 1 else f"{kind} x{m}"
        args = {"decodes": shape.decodes, "prefill_chunks": len(shape.chunks), "tokens": shape.tokens,
                "kv_hbm_tokens": shape.kv_hbm, "kv_remote_tokens": shape.kv_remote, "repeats": m,
                "iteration_s": dt}  # fmt: skip
        trace.add(name, "iteration", start, start + dt * m, process=f"replica {rep}", thread="iterations", args=args)
    return trace
