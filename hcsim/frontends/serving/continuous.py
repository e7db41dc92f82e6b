"""Continuous (iteration-level) batching of LLM requests over a paged KV cache, vLLM-style.

:func:`serve_continuous` runs requests (arrival, prompt tokens, output tokens) on TP
replicas of a compiled platform, routed round robin. Each replica loops over iterations:
running requests first, in admission order (a decode token each, or the next chunk of an
unfinished prefill), then waiting ones FIFO, within a token budget (chunked prefill) and a
sequence limit; a request's KV lives in blocks of ``block_tokens`` tokens, in HBM first,
then in the second tier (:class:`KVCache`). When a running request needs a block and none is
free, the newest running request is preempted by recompute (its blocks freed, re-queued at
the head of the waiting queue, its prompt and generated tokens prefilled again), as vLLM
does. Each iteration lasts what SimGrid simulates for its shape on the platform
(:class:`~hcsim.frontends.serving.iteration.IterationTimer`). A request's first token comes
at the end of the iteration that completes its prefill, every later one at the end of a
decode iteration. Invariant: same inputs, same seed, byte-identical results.
"""

from __future__ import annotations

import math
import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hcsim.errors import HcsimError
from hcsim.files import check_output_path
from hcsim.frontends.serving.batching import arrival_times
from hcsim.frontends.serving.iteration import IterationShape, IterationTimer
from hcsim.outputs import write_csv, write_json

__all__ = ["KVCache", "Request", "ContinuousResult", "serve_continuous", "synthetic_requests", "write_continuous"]


@dataclass(frozen=True)
class Request:
    """A request: arrival time (s), prompt tokens and output tokens (both >= 1)."""

    arrival: float
    prompt: int
    output: int


def synthetic_requests(
    count: int, rate: float, prompt: int | tuple[int, int], output: int | tuple[int, int], seed: int = 0
) -> list[Request]:
    """``count`` Poisson arrivals at ``rate``/s; a length is fixed or ``(low, high)``, uniform integers inclusive."""
    for what, value in (("--prompt-tokens", prompt), ("--output-tokens", output)):
        low, high = value if isinstance(value, tuple) else (value, value)
        if not 1 <= low <= high:
            raise HcsimError(f"{what} {low if low == high else f'{low}:{high}'} is invalid "
                             "(valid: an integer >= 1, or LOW:HIGH with 1 <= LOW <= HIGH)")  # fmt: skip
    arrivals = arrival_times("poisson", rate, count, seed)
    rng = np.random.default_rng([seed, 1])  # lengths: a stream of their own, arrivals unchanged by them

    def draw(value: int | tuple[int, int]) -> list[int]:
        if isinstance(value, tuple):
            return [int(v) for v in rng.integers(value[0], value[1] + 1, count)]
        return [value] * count

    prompts, outputs = draw(prompt), draw(output)
    return [Request(float(a), p, o) for a, p, o in zip(arrivals.tolist(), prompts, outputs, strict=True)]


class KVCache:
    """Blocks of ``block_tokens`` tokens: ``hbm`` blocks, then ``remote`` blocks of the second tier."""

    def __init__(self, block_tokens: int, hbm: int, remote: int = 0) -> None:
        self.block_tokens, self.hbm, self.remote = block_tokens, hbm, remote
        self.free_hbm, self.free_remote = hbm, remote

    @property
    def free(self) -> int:
        return self.free_hbm + self.free_remote

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_tokens)

    def allocate(self, state: _State, blocks: int) -> None:
        """Give ``state`` ``blocks`` more blocks, HBM first (the caller checked ``free``)."""
        h = min(blocks, self.free_hbm)
        self.free_hbm -= h
        self.free_remote -= blocks - h
        state.hbm_blocks += h
        state.remote_blocks += blocks - h

    def release(self, state: _State) -> None:
        self.free_hbm += state.hbm_blocks
        self.free_remote += state.remote_blocks
        state.hbm_blocks = state.remote_blocks = 0


@dataclass
class _State:
    """A request's progress: KV tokens written, prefill target, tokens generated, its blocks."""

    index: int
    req: Request
    computed: int = 0
    target: int = 0
    generated: int = 0
    hbm_blocks: int = 0
    remote_blocks: int = 0
    first_token: float = math.nan
    finish: float = math.nan
    preemptions: int = 0


@dataclass
class ContinuousResult:
    """A run: per request (arrays in request order) and per replica counters; :meth:`summary`."""

    requests: list[Request]
    replica: np.ndarray
    first_token: np.ndarray
    finish: np.ndarray
    preemptions: np.ndarray
    iterations: int
    simulations: int
    kv_blocks: dict[str, int | None]
    kv_mean: dict[str, float]
    kv_peak: dict[str, int]
    bucket_bound_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    def ttft(self) -> np.ndarray:
        return self.first_token - np.array([r.arrival for r in self.requests])

    def tpot(self) -> np.ndarray:
        """Seconds per output token after the first, of requests with more than one (vLLM's TPOT)."""
        out = np.array([r.output for r in self.requests])
        keep = out > 1
        return (self.finish[keep] - self.first_token[keep]) / (out[keep] - 1)

    def e2e(self) -> np.ndarray:
        return self.finish - np.array([r.arrival for r in self.requests])

    def summary(self) -> dict[str, Any]:
        """The metrics: TTFT, TPOT and end-to-end percentiles, throughput, KV occupancy, counters."""
        out: dict[str, Any] = dict(self.extra)
        for name, values in (("ttft", self.ttft()), ("tpot", self.tpot()), ("e2e", self.e2e())):
            for p in (50, 90, 99):
                out[f"{name}_p{p}_s"] = float(np.percentile(values, p)) if len(values) else math.nan
            out[f"{name}_mean_s"] = float(values.mean()) if len(values) else math.nan
        start = min(r.arrival for r in self.requests)
        span = float(self.finish.max()) - start
        tokens = sum(r.output for r in self.requests)
        out.update(
            requests=len(self.requests),
            output_tokens=tokens,
            prompt_tokens=sum(r.prompt for r in self.requests),
            duration_s=span,
            throughput_tokens_per_s=tokens / span if span > 0 else math.inf,
            throughput_requests_per_s=len(self.requests) / span if span > 0 else math.inf,
            preemptions=int(self.preemptions.sum()),
            iterations=self.iterations,
            simulations=self.simulations,
            kv_bucket_bound_s=self.bucket_bound_s,
        )
        for tier, blocks in self.kv_blocks.items():  # blocks None: an unbounded tier (no occupancy fraction)
            out[f"kv_{tier}_blocks"] = blocks
            out[f"kv_{tier}_mean_blocks"] = self.kv_mean[tier]
            out[f"kv_{tier}_peak_blocks"] = self.kv_peak[tier]
            out[f"kv_{tier}_occupancy_mean"] = self.kv_mean[tier] / blocks if blocks else None
            out[f"kv_{tier}_occupancy_peak"] = self.kv_peak[tier] / blocks if blocks else None
        return out


def serve_continuous(
    timers: list[IterationTimer],
    requests: list[Request],
    cache_blocks: tuple[int, int],
    *,
    block_tokens: int = 16,
    max_tokens: int = 2048,
    max_seqs: int = 256,
    bucket_bound_s: float = 0.0,
    tiers: tuple[str, ...] = ("hbm",),
    fast: bool = True,
    log: list[tuple[int, float, float, IterationShape, int]] | None = None,
) -> ContinuousResult:
    """Serve ``requests`` on one replica per timer (round robin).

    ``cache_blocks``: (HBM, second tier) blocks per replica, the second -1 for unbounded;
    ``bucket_bound_s``: the HBM bucket's bound per iteration (the timers' measured remote
    gap is added to it);
    ``max_tokens``: an iteration's token budget (chunked prefill); ``max_seqs``: most
    running requests; ``fast``: advance repeated decode iterations together (identical
    results); ``log``: if given, gets ``(replica, start, seconds, shape, repeats)`` per run
    of iterations.
    """
    for what, v, low in (("--block-tokens", block_tokens, 1), ("--max-tokens", max_tokens, 1),
                         ("--max-seqs", max_seqs, 1)):  # fmt: skip
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise HcsimError(f"{what} {v!r} is invalid (valid: an integer >= {low})")
    if not requests:
        raise HcsimError("no requests to serve (valid: at least one)")
    unbounded = cache_blocks[1] < 0
    if unbounded:  # as many blocks as every request could hold at once: never full
        cache_blocks = (cache_blocks[0], sum(-(-(r.prompt + r.output) // block_tokens) for r in requests))
    total = cache_blocks[0] + cache_blocks[1]
    for i, r in enumerate(requests):
        need = -(-(r.prompt + r.output - 1) // block_tokens)
        if need > total:
            where = " + ".join(tiers)
            raise HcsimError(f"request {i} ({r.prompt} prompt + {r.output} output tokens) needs {need} KV blocks of "
                             f"{block_tokens} tokens; the KV cache ({where}) holds {total} per replica")  # fmt: skip
    states = [_State(i, r, target=r.prompt) for i, r in enumerate(requests)]
    order = sorted(range(len(requests)), key=lambda i: (requests[i].arrival, i))
    replicas = len(timers)
    iterations = 0
    kv_area = {"hbm": 0.0, "remote": 0.0}
    kv_peak = {"hbm": 0, "remote": 0}
    duration = 0.0
    replica_of = np.zeros(len(requests), dtype=np.int64)
    for k, timer in enumerate(timers):
        mine = [states[i] for n, i in enumerate(order) if n % replicas == k]
        for s in mine:
            replica_of[s.index] = k
        cache = KVCache(block_tokens, *cache_blocks)
        n, area, peak, span = _replica_loop(timer, mine, cache, max_tokens, max_seqs, fast, log, k)
        iterations += n
        duration = max(duration, span)
        for j, tier in enumerate(kv_area):  # block-seconds: exact integer sums per duration, added in one order
            kv_area[tier] += sum(dt * blocks[j] for dt, blocks in sorted(area.items()))
            kv_peak[tier] = max(kv_peak[tier], peak[j])
    names = {"hbm": "hbm", "remote": tiers[1] if len(tiers) > 1 else "remote"}
    blocks = {names["hbm"]: cache_blocks[0], names["remote"]: None if unbounded else cache_blocks[1]}
    mean = {names[t]: kv_area[t] / (duration * replicas) if duration > 0 else 0.0 for t in kv_area}
    return ContinuousResult(
        requests,
        replica_of,
        np.array([s.first_token for s in states]),
        np.array([s.finish for s in states]),
        np.array([s.preemptions for s in states]),
        iterations,
        sum(t.simulations for t in timers),
        blocks,
        mean,
        {names[t]: v for t, v in kv_peak.items()},
        bucket_bound_s + max(t.remote_gap for t in timers),
    )


def _replica_loop(
    timer: IterationTimer,
    mine: list[_State],
    cache: KVCache,
    max_tokens: int,
    max_seqs: int,
    fast: bool = True,
    log: list[tuple[int, float, float, IterationShape, int]] | None = None,
    replica: int = 0,
) -> tuple[int, dict[float, list[int]], list[int], float]:
    """One replica's iterations; fills the states' times.

    Returns (iterations, {iteration seconds: [HBM, remote] blocks summed over the iterations
    that lasted it}, peak [HBM, remote] blocks, end). ``fast``: repeated decode iterations
    (:func:`_steady`) advance together, with the same additions in the same order as one by
    one, so the results are identical (tested).
    """
    B = cache.block_tokens
    waiting: deque[_State] = deque()
    running: list[_State] = []
    t, nxt, done, iterations = 0.0, 0, 0, 0
    area: dict[float, list[int]] = {}
    peak = [0, 0]
    count = len(mine)
    while done < count:
        while nxt < count and mine[nxt].req.arrival <= t:
            waiting.append(mine[nxt])
            nxt += 1
        if not running and not waiting:
            t = mine[nxt].req.arrival
            continue
        budget = max_tokens
        decodes: list[_State] = []
        chunks: list[tuple[_State, int]] = []
        i = 0
        while i < len(running) and budget > 0:
            s = running[i]
            n = 1 if s.computed >= s.target else min(s.target - s.computed, budget)
            need = cache.blocks_for(s.computed + n) - s.hbm_blocks - s.remote_blocks
            victim = None
            while need > cache.free and victim is not s:  # preempt the newest (recompute); it may be s itself
                victim = running.pop()
                cache.release(victim)
                victim.computed, victim.target = 0, victim.req.prompt + victim.generated
                victim.preemptions += 1
                waiting.appendleft(victim)
            if victim is s:
                break
            cache.allocate(s, need)
            if s.computed >= s.target:
                decodes.append(s)
            else:
                chunks.append((s, n))
            budget -= n
            i += 1
        while waiting and budget > 0 and len(running) < max_seqs:
            s = waiting[0]
            n = min(s.target - s.computed, budget)
            need = cache.blocks_for(s.computed + n) - s.hbm_blocks - s.remote_blocks
            if need > cache.free:
                break
            waiting.popleft()
            cache.allocate(s, need)
            running.append(s)
            chunks.append((s, n))
            budget -= n
        shape = _shape(decodes, chunks, B)
        dt = timer.seconds(shape)
        if log is not None:
            log.append((replica, t, dt, shape, 1))
        used_h, used_r = cache.hbm - cache.free_hbm, cache.remote - cache.free_remote
        acc = area.setdefault(dt, [0, 0])
        acc[0] += used_h
        acc[1] += used_r
        peak[0], peak[1] = max(peak[0], used_h), max(peak[1], used_r)
        t += dt
        iterations += 1
        for s in decodes:
            s.computed += 1
            s.generated += 1
        for s, n in chunks:
            s.computed += n
            if s.computed == s.target:
                s.generated += 1
                if s.generated == 1:
                    s.first_token = t
        done += _finish(running, cache, t)
        k = _steady(running, waiting, cache, timer.kv_bucket, max_tokens) if fast else 0
        if k > 1 and not (nxt < count and mine[nxt].req.arrival <= t):
            kv = sum(s.computed + 1 for s in running)
            shape = IterationShape(len(running), kv, 0)
            dt = timer.seconds(shape)
            arrival = mine[nxt].req.arrival if nxt < count else math.inf
            start, m = t, 0
            while m < k and not arrival <= t:  # as the loop above: an arrival at t joins the next iteration
                t += dt
                m += 1
            if log is not None:
                log.append((replica, start, dt, shape, m))
            acc = area.setdefault(dt, [0, 0])
            acc[1] += m * (cache.remote - cache.free_remote)
            used = cache.hbm - cache.free_hbm
            for s in running:
                acc[0] += _block_sum(s.computed, s.hbm_blocks, m, B) - m * s.hbm_blocks
                cache.allocate(s, max(0, -(-(s.computed + m) // B) - s.hbm_blocks))
                s.computed += m
                s.generated += m
            acc[0] += m * used
            peak[0] = max(peak[0], cache.hbm - cache.free_hbm)
            iterations += m
            done += _finish(running, cache, t)
    return iterations, area, peak, t


def _finish(running: list[_State], cache: KVCache, t: float) -> int:
    """Requests that generated their last token end at ``t``: blocks freed; how many."""
    finished = [s for s in running if s.generated == s.req.output]
    for s in finished:
        s.finish = t
        cache.release(s)
        running.remove(s)
    return len(finished)


def _steady(running: list[_State], waiting: deque[_State], cache: KVCache, bucket: int, max_tokens: int) -> int:
    """How many next iterations are the same decode iteration (same memo key), 0 if the next is not one.

    Steady: nobody waits, every running request decodes with all its KV in HBM, and all fit
    the token budget. It lasts while no request finishes (its last token ends a run), the
    HBM KV total stays in its bucket, and the blocks the requests grow into fit the free HBM
    (so none is preempted and none goes to the second tier).
    """
    n = len(running)
    if not n or waiting or n > max_tokens:
        return 0
    for s in running:
        if s.computed < s.target or s.remote_blocks:
            return 0
    k = min(s.req.output - s.generated for s in running)
    if bucket == 1:
        return min(k, 1)
    kv = sum(s.computed + 1 for s in running)
    k = min(k, (-(-kv // bucket) * bucket - kv) // n + 1)
    B = cache.block_tokens
    if sum(max(0, -(-(s.computed + k) // B) - s.hbm_blocks) for s in running) > cache.free_hbm:
        k = min(k, min(s.hbm_blocks * B - s.computed for s in running))  # no block needed
    return k


def _block_sum(c: int, h: int, m: int, B: int) -> int:
    """Sum over j = 1..m of max(h, ceil((c + j) / B)): a request's blocks after each of m decode iterations."""
    total, j = 0, 1
    while j <= m:
        q = -(-(c + j) // B)
        end = min(m, q * B - c)
        total += max(h, q) * (end - j + 1)
        j = end + 1
    return total


def _shape(decodes: list[_State], chunks: list[tuple[_State, int]], B: int) -> IterationShape:
    """The iteration's shape: decode KV split by tier (a request's HBM blocks hold its first tokens)."""
    kv_h = kv_r = 0
    for s in decodes:
        ctx = s.computed + 1
        h = min(ctx, s.hbm_blocks * B)
        kv_h += h
        kv_r += ctx - h
    parts = []
    for s, n in chunks:
        h = min(s.computed, s.hbm_blocks * B)
        parts.append((n, h, s.computed - h))
    return IterationShape(len(decodes), kv_h, kv_r, tuple(sorted(parts)))


def write_continuous(result: ContinuousResult, directory: str) -> None:
    """requests.csv (one row per request) and summary.json in ``directory``."""
    os.makedirs(directory, exist_ok=True)
    check_output_path(os.path.join(directory, "summary.json"))
    ttft, e2e = result.ttft().tolist(), result.e2e().tolist()
    rows = []
    for i, r in enumerate(result.requests):
        tpot = (result.finish[i] - result.first_token[i]) / (r.output - 1) if r.output > 1 else math.nan
        rows.append((i, r.arrival, r.prompt, r.output, int(result.replica[i]), float(result.first_token[i]),
                     float(result.finish[i]), ttft[i], float(tpot), e2e[i], int(result.preemptions[i])))  # fmt: skip
    columns = ["request", "arrival_s", "prompt_tokens", "output_tokens", "replica", "first_token_s", "finish_s",
               "ttft_s", "tpot_s", "e2e_s", "preemptions"]  # fmt: skip
    write_csv(os.path.join(directory, "requests.csv"), rows, columns, line_end="\n")
    write_json(os.path.join(directory, "summary.json"), result.summary())
