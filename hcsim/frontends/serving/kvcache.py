"""The paged KV cache of one replica: blocks over up to three tiers, and the prefix cache.

:class:`KVCache` holds ``block_tokens``-token blocks in HBM, then a second tier (CXL
Type-3 or host DRAM), then a third (host DRAM, with ``--kv-cache hbm,cxl,host``); a
request's blocks are taken in that order, so its first tokens are in the fastest tier.
Prefix caching (vLLM's automatic prefix caching, by hash of the block chain): a full
block of a request's shared prefix ``(prefix_id, j)`` is published once written; a later
request of the same prefix references it instead of computing it (at least one prompt
token is always computed); a block no request references stays cached, evictable, least
recently released first, and is reused or evicted before a tier's free blocks run out.
Invariant: per tier, free + referenced + evictable blocks == capacity; without shared
prefixes nothing is ever cached and the cache is the plain two-counter one it replaced.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["KVCache", "shared_prefix"]

TIERS = 3


class KVCache:
    """Blocks of ``block_tokens`` tokens: ``hbm`` blocks, then ``remote``, then ``host`` ones."""

    def __init__(self, block_tokens: int, hbm: int, remote: int = 0, host: int = 0) -> None:
        self.block_tokens, self.hbm, self.remote, self.host = block_tokens, hbm, remote, host
        self.free_hbm, self.free_remote, self.free_host = hbm, remote, host
        self.cached: dict[tuple[int, int], list[int]] = {}  # (prefix id, block) -> [tier, references]
        self.lru: list[OrderedDict[tuple[int, int], None]] = [OrderedDict() for _ in range(TIERS)]
        self.hit_blocks = 0

    @property
    def free(self) -> int:
        """Blocks a request can get: free ones and evictable cached ones."""
        return self.free_hbm + self.free_remote + self.free_host + sum(len(q) for q in self.lru)

    def used(self) -> list[int]:
        """Blocks in use per tier (cached ones included)."""
        return [self.hbm - self.free_hbm, self.remote - self.free_remote, self.host - self.free_host]

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_tokens)

    def allocate(self, state: Any, blocks: int) -> None:
        """Give ``state`` ``blocks`` more blocks, tier by tier: free ones, then evicted ones (``free`` was checked)."""
        got = [0, 0, 0]
        frees = [self.free_hbm, self.free_remote, self.free_host]
        for tier in range(TIERS):
            take = min(blocks, frees[tier])
            frees[tier] -= take
            blocks -= take
            lru = self.lru[tier]
            while blocks and lru:
                key, _ = lru.popitem(last=False)
                del self.cached[key]
                blocks -= 1
                take += 1
            got[tier] = take
        self.free_hbm, self.free_remote, self.free_host = frees
        state.hbm_blocks += got[0]
        state.remote_blocks += got[1]
        state.host_blocks += got[2]

    def release(self, state: Any) -> None:
        """Free ``state``'s own blocks; its shared prefix blocks lose a reference (evictable at none)."""
        self.free_hbm += state.hbm_blocks - state.shared_tiers[0]
        self.free_remote += state.remote_blocks - state.shared_tiers[1]
        self.free_host += state.host_blocks - state.shared_tiers[2]
        for key in state.shared:
            entry = self.cached[key]
            entry[1] -= 1
            if entry[1] == 0:
                self.lru[entry[0]][key] = None
        state.hbm_blocks = state.remote_blocks = state.host_blocks = 0
        state.shared, state.shared_tiers = [], [0, 0, 0]

    def reuse(self, state: Any) -> int:
        """A request about to prefill from token 0 references the cached blocks of its prefix; tokens it skips."""
        req = state.req
        limit = min(req.prefix_tokens, state.target - 1) // self.block_tokens
        j = 0
        while j < limit:
            key = (req.prefix_id, j)
            entry = self.cached.get(key)
            if entry is None:
                break
            if entry[1] == 0:
                del self.lru[entry[0]][key]
            entry[1] += 1
            self._hold(state, key, entry[0])
            j += 1
        self.hit_blocks += j
        state.computed = j * self.block_tokens
        return state.computed

    def unreuse(self, state: Any) -> None:
        """Undo :meth:`reuse` of a request that could not be admitted after all."""
        self.hit_blocks -= len(state.shared)
        self.release(state)
        state.computed = 0

    def publish(self, state: Any) -> None:
        """Cache the full prefix blocks ``state`` wrote (contiguously from block 0; an own block becomes shared)."""
        req = state.req
        full = min(req.prefix_tokens, state.computed) // self.block_tokens
        for j in range(len(state.shared), full):
            key = (req.prefix_id, j)
            if key in self.cached:  # written by another request meanwhile: keep the own copy
                return
            own = (state.hbm_blocks - state.shared_tiers[0], state.remote_blocks - state.shared_tiers[1])
            tier = 0 if own[0] else (1 if own[1] else 2)
            self.cached[key] = [tier, 1]
            state.shared.append(key)
            state.shared_tiers[tier] += 1

    @staticmethod
    def _hold(state: Any, key: tuple[int, int], tier: int) -> None:
        state.shared.append(key)
        state.shared_tiers[tier] += 1
        if tier == 0:
            state.hbm_blocks += 1
        elif tier == 1:
            state.remote_blocks += 1
        else:
            state.host_blocks += 1


def shared_prefix(requests: list[Any], tokens: int, groups: int = 1) -> list[Any]:
    """The requests with shared prefixes: request i starts with prefix i mod ``groups`` of ``tokens`` tokens
    (at most its prompt)."""
    from dataclasses import replace

    return [replace(r, prefix_id=i % groups, prefix_tokens=min(tokens, r.prompt)) for i, r in enumerate(requests)]
