"""One replica of continuous batching: its iteration loop over its requests, vLLM's scheduler.

:class:`Replica` runs iterations on one TP group: running requests first, in admission
order (a decode token each, or the next chunk of an unfinished prefill), then swapped-out
ones (``swap``), then waiting ones FIFO (only when none is swapped out), within a token
budget (chunked prefill) and a sequence limit. When a running request needs a block and
none is free, the newest running request is preempted: by recompute (blocks freed,
re-queued at the head of the waiting queue, its prompt and generated tokens prefilled
again) or by swap (its blocks copied to host DRAM, the copy timed in the iteration, and
back before it runs again). Requests are added with the time they are ready (arrival,
or the end of their KV transfer in a disaggregated run, then already prefilled) and
:meth:`Replica.run` advances to a horizon, so a router can look at the replicas between
arrivals. Invariant: the same requests added give the same iterations, whatever the
horizons (a run of repeated decode iterations cut at a horizon adds the same numbers).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hcsim.frontends.serving.iteration import IterationShape, IterationTimer
from hcsim.frontends.serving.kvcache import KVCache

__all__ = ["State", "Replica"]

Log = list[tuple[int, float, float, IterationShape, int]]


@dataclass
class State:
    """A request's progress: KV tokens written, prefill target, tokens generated, its blocks per tier."""

    index: int
    req: Any
    computed: int = 0
    target: int = 0
    generated: int = 0
    hbm_blocks: int = 0
    remote_blocks: int = 0
    first_token: float = math.nan
    finish: float = math.nan
    preemptions: int = 0
    host_blocks: int = 0
    ready: float = 0.0
    swapped_blocks: int = 0
    shared: list[tuple[int, int]] = field(default_factory=list)
    shared_tiers: list[int] = field(default_factory=lambda: [0, 0, 0])

    @property
    def held(self) -> int:
        return self.hbm_blocks + self.remote_blocks + self.host_blocks


class Replica:
    """A TP group's scheduler state; :meth:`add` requests (ready times), :meth:`run` to a horizon."""

    def __init__(
        self,
        timer: IterationTimer,
        cache: KVCache,
        max_tokens: int,
        max_seqs: int,
        *,
        fast: bool = True,
        log: Log | None = None,
        index: int = 0,
        swap: Callable[[int, int], float] | None = None,
        three_tiers: bool = False,
    ) -> None:
        self.timer, self.cache, self.max_tokens, self.max_seqs = timer, cache, max_tokens, max_seqs
        self.fast, self.log, self.index, self.swap, self.three = fast, log, index, swap, three_tiers
        self.pending: list[tuple[float, int, State]] = []
        self.waiting: deque[State] = deque()
        self.running: list[State] = []
        self.swapped: deque[State] = deque()
        self.t = 0.0
        self.iterations = 0
        self.area: dict[float, list[int]] = {}
        self.peak = [0, 0, 0]
        self.swap_out = self.swap_in = 0
        self.swap_seconds = 0.0

    def add(self, s: State) -> None:
        heapq.heappush(self.pending, (s.ready, s.index, s))

    def outstanding(self) -> int:
        """Tokens its requests still have to process: prompt (and recompute) tokens and output tokens."""
        total = 0
        for s in (*(p[2] for p in self.pending), *self.waiting, *self.running, *self.swapped):
            total += max(0, s.target - s.computed) + s.req.output - s.generated
        return total

    def run(self, horizon: float = math.inf) -> None:
        """Run every iteration that starts before ``horizon``."""
        cache, B, pending, waiting, running = (
            self.cache,
            self.cache.block_tokens,
            self.pending,
            self.waiting,
            self.running,
        )
        t = self.t
        while True:
            while pending and pending[0][0] <= t:
                waiting.append(heapq.heappop(pending)[2])
            if not running and not waiting and not self.swapped:
                if not pending or pending[0][0] >= horizon:
                    break
                t = pending[0][0]
                continue
            if t >= horizon:
                break
            decodes, chunks, moved = self._schedule()
            shape = _shape(decodes, chunks, B, self.three)
            dt = self.timer.seconds(shape)
            if moved != (0, 0):
                copy = self.swap(*moved)  # type: ignore[misc]
                self.swap_out += moved[0]
                self.swap_in += moved[1]
                self.swap_seconds += copy
                dt += copy
            if self.log is not None:
                self.log.append((self.index, t, dt, shape, 1))
            used = cache.used()
            acc = self.area.setdefault(dt, [0, 0, 0])
            for j in range(3):
                acc[j] += used[j]
                self.peak[j] = max(self.peak[j], used[j])
            t += dt
            self.iterations += 1
            for s in decodes:
                s.computed += 1
                s.generated += 1
            for s, n in chunks:
                s.computed += n
                if s.computed == s.target:
                    s.generated += 1
                    if s.generated == 1:
                        s.first_token = t
                if s.req.prefix_tokens:
                    cache.publish(s)
            _finish(running, cache, t)
            k = _steady(running, waiting, cache, self.timer.kv_bucket, self.max_tokens) if self.fast else 0
            if k > 1 and not self.swapped and not (pending and pending[0][0] <= t) and t < horizon:
                t = self._advance(k, t, min(pending[0][0] if pending else math.inf, horizon))
        self.t = t

    def _schedule(self) -> tuple[list[State], list[tuple[State, int]], tuple[int, int]]:
        """The next iteration's decodes and chunks; blocks swapped (out, in) for it."""
        cache, running, waiting, swapped = self.cache, self.running, self.waiting, self.swapped
        budget = self.max_tokens
        decodes: list[State] = []
        chunks: list[tuple[State, int]] = []
        out = inn = 0
        preempted = False
        i = 0
        while i < len(running) and budget > 0:
            s = running[i]
            n = 1 if s.computed >= s.target else min(s.target - s.computed, budget)
            need = cache.blocks_for(s.computed + n) - s.held
            victim = None
            while need > cache.free and victim is not s:  # preempt the newest; it may be s itself
                victim = running.pop()
                preempted = True
                victim.preemptions += 1
                if self.swap is not None:
                    victim.swapped_blocks = victim.held
                    out += victim.held
                    cache.release(victim)
                    swapped.append(victim)
                else:
                    cache.release(victim)
                    victim.computed, victim.target = 0, victim.req.prompt + victim.generated
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
        while swapped and not preempted and budget > 0 and len(running) < self.max_seqs:
            s = swapped[0]
            n = 1 if s.computed >= s.target else min(s.target - s.computed, budget)
            need = cache.blocks_for(s.computed + n)
            if need > cache.free:
                break
            swapped.popleft()
            cache.allocate(s, need)
            inn += s.swapped_blocks
            s.swapped_blocks = 0
            _admit(s, n, running, decodes, chunks)
            budget -= n
        while not swapped and waiting and budget > 0 and len(running) < self.max_seqs:
            s = waiting[0]
            hit = cache.reuse(s) if s.req.prefix_tokens and s.computed == 0 else 0
            n = min(s.target - s.computed, budget) or 1  # 0: prefilled elsewhere, it decodes
            need = cache.blocks_for(s.computed + n) - s.held
            if need > cache.free:
                if hit or s.shared:
                    cache.unreuse(s)
                break
            waiting.popleft()
            cache.allocate(s, need)
            _admit(s, n, running, decodes, chunks)
            budget -= n
        return decodes, chunks, (out, inn)

    def _advance(self, k: int, t: float, arrival: float) -> float:
        """Up to ``k`` repeated decode iterations at once, stopping at ``arrival``: the same sums as one by one."""
        cache, running, B = self.cache, self.running, self.cache.block_tokens
        kv = sum(s.computed + 1 for s in running)
        shape = IterationShape(len(running), kv, 0)
        dt = self.timer.seconds(shape)
        start, m = t, 0
        while m < k and not arrival <= t:  # an arrival at t joins the next iteration
            t += dt
            m += 1
        if self.log is not None:
            self.log.append((self.index, start, dt, shape, m))
        acc = self.area.setdefault(dt, [0, 0, 0])
        acc[1] += m * (cache.remote - cache.free_remote)
        acc[2] += m * (cache.host - cache.free_host)
        used = cache.hbm - cache.free_hbm
        for s in running:
            acc[0] += _block_sum(s.computed, s.hbm_blocks, m, B) - m * s.hbm_blocks
            cache.allocate(s, max(0, -(-(s.computed + m) // B) - s.hbm_blocks))
            s.computed += m
            s.generated += m
        acc[0] += m * used
        self.peak[0] = max(self.peak[0], cache.hbm - cache.free_hbm)
        self.iterations += m
        _finish(running, cache, t)
        return t


def _finish(running: list[State], cache: KVCache, t: float) -> int:
    """Requests that generated their last token end at ``t``: blocks freed; how many."""
    finished = [s for s in running if s.generated == s.req.output]
    for s in finished:
        s.finish = t
        cache.release(s)
        running.remove(s)
    return len(finished)


def _steady(running: list[State], waiting: deque[State], cache: KVCache, bucket: int, max_tokens: int) -> int:
    """How many next iterations are the same decode iteration (same memo key), 0 if the next is not one.

    Steady: nobody waits, every running request decodes with all its KV in HBM, and all fit
    the token budget. It lasts while no request finishes (its last token ends a run), the
    HBM KV total stays in its bucket, and the blocks the requests grow into fit the free HBM
    (so none is preempted, no cached block is evicted and none goes to another tier).
    """
    n = len(running)
    if not n or waiting or n > max_tokens:
        return 0
    for s in running:
        if s.computed < s.target or s.remote_blocks or s.host_blocks:
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


def _split(tokens: int, s: State, B: int) -> tuple[int, int, int]:
    """``tokens`` of a request's KV by tier: its HBM blocks hold the first, then its second tier's."""
    h = min(tokens, s.hbm_blocks * B)
    r = min(tokens - h, s.remote_blocks * B) if s.host_blocks else tokens - h
    return h, r, tokens - h - r


def _shape(decodes: list[State], chunks: list[tuple[State, int]], B: int, three: bool = False) -> IterationShape:
    """The iteration's shape: decode KV split by tier; chunks (tokens, prior KV per tier), a third tier's 4th."""
    kv = [0, 0, 0]
    for s in decodes:
        for j, v in enumerate(_split(s.computed + 1, s, B)):
            kv[j] += v
    parts = []
    for s, n in chunks:
        h, r, x = _split(s.computed, s, B)
        parts.append((n, h, r, x) if three else (n, h, r))
    if three:
        return IterationShape(len(decodes), kv[0], kv[1], tuple(sorted(parts)), kv[2])
    return IterationShape(len(decodes), kv[0], kv[1], tuple(sorted(parts)))


def _admit(s: Any, n: int, running: list, decodes: list, chunks: list) -> None:
    """An admitted request runs this iteration: a decode token if its prompt is done, else a chunk of n."""
    running.append(s)
    if s.computed >= s.target:
        decodes.append(s)
    else:
        chunks.append((s, n))
