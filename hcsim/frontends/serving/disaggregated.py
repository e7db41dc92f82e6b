"""Disaggregated prefill and decode: requests prefilled on one set of replicas, decoded on another.

:func:`serve_disaggregated` routes each request to a prefill replica (its own XPU group,
possibly of another XPU type), where it is prefilled by continuous batching as a request
of one output token (its first token at the end of the iteration completing its
prefill); its prompt's KV then moves to a decode replica chosen at that moment, as one
SimGrid run of point-to-point flows rank to rank
(:class:`~hcsim.frontends.serving.transfers.KVTransferTimer`), the transfers leaving one
prefill replica one after another (first prefilled, first sent); it joins the decode
replica when the transfer ends, already prefilled, and decodes its remaining tokens
there. Not modelled: the prefill replica keeping the blocks until the transfer ends (they
are freed with the first token), transfers from different prefill replicas slowing each
other down (their overlaps are counted: ``kv_transfers_overlapping``, exact when 0).
Invariant: same inputs, byte-identical results.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hcsim.frontends.serving.continuous import (
    ContinuousResult,
    Request,
    check_serving,
    engine_extra,
    kv_stats,
    make_replicas,
)
from hcsim.frontends.serving.iteration import IterationTimer
from hcsim.frontends.serving.replica import State
from hcsim.frontends.serving.router import Router
from hcsim.frontends.serving.transfers import KVTransferTimer

__all__ = ["serve_disaggregated"]


def serve_disaggregated(
    prefill: list[IterationTimer],
    decode: list[IterationTimer],
    transfer: KVTransferTimer,
    requests: list[Request],
    prefill_blocks: tuple[int, ...],
    decode_blocks: tuple[int, ...],
    *,
    block_tokens: int = 16,
    max_tokens: int = 2048,
    max_seqs: int = 256,
    bucket_bound_s: float = 0.0,
    tiers: tuple[str, ...] = ("hbm",),
    fast: bool = True,
    log: list[Any] | None = None,
    router: str = "round_robin",
    swaps: tuple[list[Any], list[Any]] | None = None,
) -> ContinuousResult:
    """Serve ``requests``: prefill on the ``prefill`` timers' groups, decode on the ``decode`` ones'.

    Arguments as :func:`~hcsim.frontends.serving.continuous.serve_continuous`, the KV
    cache per side (``prefill_blocks``, ``decode_blocks``); ``swaps``: (prefill, decode)
    swap timers for preemption by swap. ``log`` replicas: prefill 0.., then decode.
    """
    firsts = [Request(r.arrival, r.prompt, 1, r.prefix_id, r.prefix_tokens) for r in requests]
    prefill_blocks = check_serving(firsts, prefill_blocks, block_tokens, max_tokens, max_seqs, tiers)
    unbounded = tuple(b < 0 for b in decode_blocks)
    decode_blocks = check_serving(requests, decode_blocks, block_tokens, max_tokens, max_seqs, tiers)
    pre = make_replicas(prefill, prefill_blocks, block_tokens, max_tokens, max_seqs, fast, log,
                        None if swaps is None else swaps[0], tiers)  # fmt: skip
    dec = make_replicas(decode, decode_blocks, block_tokens, max_tokens, max_seqs, fast, log,
                        None if swaps is None else swaps[1], tiers, first=len(pre))  # fmt: skip
    n = len(requests)
    first = [State(i, r, target=r.prompt, ready=r.arrival) for i, r in enumerate(firsts)]
    route = Router(pre, router)
    prefill_of = np.zeros(n, dtype=np.int64)
    for i in sorted(range(n), key=lambda i: (requests[i].arrival, i)):
        prefill_of[i] = route.assign(first[i], requests[i].arrival)
    route.finish()
    later = Router(dec, router)
    free_at = [0.0] * len(pre)  # when each prefill replica's link is free again
    second: list[State | None] = [None] * n
    spans: list[tuple[float, float, int]] = []
    waited = 0
    for i in sorted(range(n), key=lambda i: (first[i].finish, i)):
        r, done, p = requests[i], first[i].finish, int(prefill_of[i])
        if r.output == 1:
            continue
        k = later.pick(done)
        start = max(done, free_at[p])
        waited += start > done
        end = start + transfer.seconds(prefill[p].group, decode[k].group, r.prompt)
        free_at[p] = end
        spans.append((start, end, p))
        s = second[i] = State(i, r, computed=r.prompt, target=r.prompt, generated=1, ready=end)
        dec[k].add(s)
    later.finish()
    finish = [first[i].finish if s is None else s.finish for i, s in enumerate(second)]
    blocks, mean, peak = kv_stats(dec, decode_blocks, tiers, unbounded)
    result = ContinuousResult(
        requests,
        prefill_of,
        np.array([s.first_token for s in first]),
        np.array(finish),
        np.array([f.preemptions + (0 if s is None else s.preemptions) for f, s in zip(first, second, strict=True)]),
        sum(r.iterations for r in pre + dec),
        sum(t.simulations for t in prefill + decode)
        + transfer.simulations
        + sum(s.simulations for side in swaps or () for s in side),
        blocks,
        mean,
        peak,
        bucket_bound_s + max(t.remote_gap for t in prefill + decode),
    )
    durations = [b - a for a, b, _ in spans]
    result.extra.update(engine_extra(pre + dec, router, None if swaps is None else swaps[0] + swaps[1]))
    pre_blocks, _, pre_peak = kv_stats(pre, prefill_blocks, tiers)
    result.extra.update(
        prefill_replicas=len(pre),
        decode_replicas=len(dec),
        prefill_kv_hbm_blocks=pre_blocks["hbm"],
        prefill_kv_hbm_peak_blocks=pre_peak["hbm"],
        kv_transfers=len(spans),
        kv_transfer_mean_s=float(np.mean(durations)) if durations else 0.0,
        kv_transfer_max_s=max(durations, default=0.0),
        kv_transfers_waited=int(waited),
        kv_transfers_overlapping=_overlapping(spans),
    )
    return result


def _overlapping(spans: list[tuple[float, float, int]]) -> int:
    """Transfers that start while one from another prefill replica is in flight."""
    latest: dict[int, float] = {}
    count = 0
    for start, end, p in sorted(spans):
        count += any(q != p and e > start for q, e in latest.items())
        latest[p] = max(latest.get(p, end), end)
    return count
