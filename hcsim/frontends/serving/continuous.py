"""Continuous (iteration-level) batching of LLM requests over a paged KV cache, vLLM-style.

:func:`serve_continuous` runs requests (arrival, prompt tokens, output tokens, an optional
shared prefix) on TP replicas of a compiled platform, routed by a
:class:`~hcsim.frontends.serving.router.Router` (round robin, or least outstanding
tokens). Each replica (:class:`~hcsim.frontends.serving.replica.Replica`) schedules
iterations as vLLM does (chunked prefill, preemption by recompute or swap) over a paged
KV cache in HBM, then a second and a third tier
(:class:`~hcsim.frontends.serving.kvcache.KVCache`, with prefix caching); each iteration
lasts what SimGrid simulates for its shape on the platform
(:class:`~hcsim.frontends.serving.iteration.IterationTimer`). A request's first token comes
at the end of the iteration that completes its prefill, every later one at the end of a
decode iteration. Here: requests, results, the checks and the KV statistics.
Invariant: same inputs, same seed, byte-identical results.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hcsim.errors import HcsimError
from hcsim.files import check_output_path
from hcsim.frontends.serving.batching import arrival_times
from hcsim.frontends.serving.iteration import IterationShape, IterationTimer
from hcsim.frontends.serving.kvcache import KVCache
from hcsim.frontends.serving.replica import Replica, State
from hcsim.frontends.serving.router import Router
from hcsim.outputs import write_csv, write_json

__all__ = ["KVCache", "Request", "ContinuousResult", "serve_continuous", "synthetic_requests", "write_continuous"]


@dataclass(frozen=True)
class Request:
    """A request: arrival time (s), prompt tokens and output tokens (both >= 1); the first
    ``prefix_tokens`` of its prompt shared by every request of ``prefix_id`` (prefix caching)."""

    arrival: float
    prompt: int
    output: int
    prefix_id: int = -1
    prefix_tokens: int = 0


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
    cache_blocks: tuple[int, ...],
    *,
    block_tokens: int = 16,
    max_tokens: int = 2048,
    max_seqs: int = 256,
    bucket_bound_s: float = 0.0,
    tiers: tuple[str, ...] = ("hbm",),
    fast: bool = True,
    log: list[tuple[int, float, float, IterationShape, int]] | None = None,
    router: str = "round_robin",
    swaps: list[Any] | None = None,
) -> ContinuousResult:
    """Serve ``requests`` on one replica per timer.

    ``cache_blocks``: (HBM, second tier[, third tier]) blocks per replica, a tier -1 for
    unbounded; ``bucket_bound_s``: the HBM bucket's bound per iteration (the timers'
    measured remote gap is added to it);
    ``max_tokens``: an iteration's token budget (chunked prefill); ``max_seqs``: most
    running requests; ``fast``: advance repeated decode iterations together (identical
    results); ``log``: if given, gets ``(replica, start, seconds, shape, repeats)`` per run
    of iterations; ``router``: :data:`~hcsim.frontends.serving.router.ROUTERS`;
    ``swaps``: per replica a :class:`~hcsim.frontends.serving.transfers.SwapTimer`, for
    preemption by swap (default: by recompute).
    """
    unbounded = tuple(b < 0 for b in cache_blocks)
    cache_blocks = check_serving(requests, cache_blocks, block_tokens, max_tokens, max_seqs, tiers)
    states = [State(i, r, target=r.prompt, ready=r.arrival) for i, r in enumerate(requests)]
    replicas = make_replicas(timers, cache_blocks, block_tokens, max_tokens, max_seqs, fast, log, swaps, tiers)
    route = Router(replicas, router)
    replica_of = np.zeros(len(requests), dtype=np.int64)
    for i in sorted(range(len(requests)), key=lambda i: (requests[i].arrival, i)):
        replica_of[i] = route.assign(states[i], requests[i].arrival)
    route.finish()
    blocks, mean, peak = kv_stats(replicas, cache_blocks, tiers, unbounded)
    result = ContinuousResult(
        requests,
        replica_of,
        np.array([s.first_token for s in states]),
        np.array([s.finish for s in states]),
        np.array([s.preemptions for s in states]),
        sum(r.iterations for r in replicas),
        sum(t.simulations for t in timers) + sum(s.simulations for s in swaps or ()),
        blocks,
        mean,
        peak,
        bucket_bound_s + max(t.remote_gap for t in timers),
    )
    result.extra.update(engine_extra(replicas, router, swaps))
    return result


def check_serving(
    requests: list[Request], cache_blocks: tuple[int, ...], block_tokens: int, max_tokens: int, max_seqs: int,
    tiers: tuple[str, ...],
) -> tuple[int, ...]:  # fmt: skip
    """The limits checked (one line each); the cache's blocks with an unbounded tier (-1) made finite."""
    for what, v, low in (("--block-tokens", block_tokens, 1), ("--max-tokens", max_tokens, 1),
                         ("--max-seqs", max_seqs, 1)):  # fmt: skip
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise HcsimError(f"{what} {v!r} is invalid (valid: an integer >= {low})")
    if not requests:
        raise HcsimError("no requests to serve (valid: at least one)")
    if any(b < 0 for b in cache_blocks):  # as many blocks as every request could hold at once: never full
        every = sum(-(-(r.prompt + r.output) // block_tokens) for r in requests)
        cache_blocks = tuple(every if b < 0 else b for b in cache_blocks)
    total = sum(cache_blocks)
    for i, r in enumerate(requests):
        need = -(-(r.prompt + r.output - 1) // block_tokens)
        if need > total:
            where = " + ".join(tiers)
            raise HcsimError(f"request {i} ({r.prompt} prompt + {r.output} output tokens) needs {need} KV blocks of "
                             f"{block_tokens} tokens; the KV cache ({where}) holds {total} per replica")  # fmt: skip
    return cache_blocks


def make_replicas(
    timers: list[IterationTimer], cache_blocks: tuple[int, ...], block_tokens: int, max_tokens: int, max_seqs: int,
    fast: bool, log: Any, swaps: list[Any] | None, tiers: tuple[str, ...], first: int = 0,
) -> list[Replica]:  # fmt: skip
    """One :class:`Replica` per timer, each with its own cache (and swap timer)."""
    if swaps is not None and len(swaps) != len(timers):
        raise HcsimError(f"{len(swaps)} swap timers for {len(timers)} replicas (valid: one each)")
    return [
        Replica(
            timer,
            KVCache(block_tokens, *cache_blocks),
            max_tokens,
            max_seqs,
            fast=fast,
            log=log,
            index=first + k,
            swap=None if swaps is None else swaps[k],
            three_tiers=len(tiers) > 2,
        )  # fmt: skip
        for k, timer in enumerate(timers)
    ]


def kv_stats(
    replicas: list[Replica], cache_blocks: tuple[int, ...], tiers: tuple[str, ...], unbounded: tuple[bool, ...] = ()
) -> tuple[dict[str, int | None], dict[str, float], dict[str, int]]:
    """Per tier: blocks per replica (None unbounded), time-weighted mean and peak blocks used, over ``replicas``."""
    duration = max((r.t for r in replicas), default=0.0)
    names = ["hbm", tiers[1] if len(tiers) > 1 else "remote", tiers[2] if len(tiers) > 2 else None]
    kv_area, kv_peak = [0.0, 0.0, 0.0], [0, 0, 0]
    for r in replicas:  # block-seconds: exact integer sums per duration, added in one order
        for j in range(3):
            kv_area[j] += sum(dt * blocks[j] for dt, blocks in sorted(r.area.items()))
            kv_peak[j] = max(kv_peak[j], r.peak[j])
    blocks, mean, peak = {}, {}, {}
    for j, name in enumerate(names):
        if name is None:
            continue
        blocks[name] = (
            None if j < len(unbounded) and unbounded[j] else (cache_blocks[j] if j < len(cache_blocks) else 0)
        )
        mean[name] = kv_area[j] / (duration * len(replicas)) if duration > 0 else 0.0
        peak[name] = kv_peak[j]
    return blocks, mean, peak


def engine_extra(replicas: list[Replica], router: str, swaps: list[Any] | None) -> dict[str, Any]:
    """Summary entries of the options beyond the defaults (none with the defaults: outputs unchanged)."""
    out: dict[str, Any] = {}
    if router != "round_robin":
        out["router"] = router
    if swaps is not None:
        out.update(preemption="swap", swap_out_blocks=sum(r.swap_out for r in replicas),
                   swap_in_blocks=sum(r.swap_in for r in replicas),
                   swap_seconds=sum(r.swap_seconds for r in replicas))  # fmt: skip
    hits = sum(r.cache.hit_blocks for r in replicas)
    if hits or any(r.cache.cached for r in replicas):
        out["prefix_hit_blocks"] = hits
    return out


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
