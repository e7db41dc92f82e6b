"""Tree algorithms: binary-tree broadcast and reduce, NCCL's double binary tree allreduce.

Over N ranks, S bytes per rank, on a non-blocking star (alpha: rank-to-rank latency, B:
port bandwidth):

* ``binary_tree`` broadcast: the ranks in list order form a heap (the first is the
  root); a node sends S to its two children at once once it has received S, store and
  forward. For N = 2^k - 1: (k-1)(alpha + 2 S/B);
* ``binary_tree`` reduce: the same tree reversed, whole messages;
* ``double_binary_tree`` allreduce (NCCL): two complementary trees (``ncclGetBtree`` and
  its mirror or shift), each reducing then broadcasting half the data, pipelined in
  chunks of at most 512 KiB (:func:`tree_chunks`). Whole halves: N = 2: 2 alpha + S/B;
  N = 4: 4 alpha + 3 S/B.

Invariant: a chunk moves along an edge only after the previous chunk did, and upward only
once the node holds it from all its children, as NCCL's pipeline does; both trees
contend by max-min where their flows share a port.

Every case and the tests' fluid reference: docs/collectives.md, "Closed forms" (Trees).
"""

from __future__ import annotations

import math

from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
from hcsim.collectives.view import TopologyView


def heap_parent(n: int, i: int) -> int:
    """Parent of node i in the heap-ordered binary tree over n nodes (-1 for the root)."""
    return (i - 1) // 2 if i else -1


def btree_parent(n: int, rank: int) -> int:
    """Parent of ``rank`` in NCCL's binary tree over n ranks (``ncclGetBtree``; -1 for rank 0, the root)."""
    if rank == 0:
        return -1
    bit = 1
    while bit < n and not bit & rank:
        bit <<= 1
    up = (rank ^ bit) | (bit << 1)
    return up if up < n else rank ^ bit


def dtree_parents(n: int) -> tuple[list[int], list[int]]:
    """Parents in NCCL's two complementary trees (``ncclGetDtree``): the btree, and its mirror or shift."""
    first = [btree_parent(n, r) for r in range(n)]
    if n % 2:
        second = [-1 if (u := btree_parent(n, (r - 1) % n)) < 0 else (u + 1) % n for r in range(n)]
    else:
        second = [-1 if (u := btree_parent(n, n - 1 - r)) < 0 else n - 1 - u for r in range(n)]
    return first, second


def _depth_order(parent: list[int]) -> list[int]:
    """Nodes ordered root first, each after its parent."""
    depth = {}

    def d(i: int) -> int:
        if i not in depth:
            depth[i] = 0 if parent[i] < 0 else d(parent[i]) + 1
        return depth[i]

    return sorted(range(len(parent)), key=d)


def _up(
    s: Schedule, ranks: list[str], parent: list[int], nbytes: float, shards: list[int], previous: dict | None = None
) -> list[list[int]]:
    """Every node sends to its parent once its children's flows have arrived; returns the flows into each node.

    ``previous``: node -> its flow up of the previous chunk, which this one follows on the edge (updated).
    """
    into: list[list[int]] = [[] for _ in ranks]
    for i in reversed(_depth_order(parent)):
        if parent[i] >= 0:
            after = into[i] + ([previous[i]] if previous and i in previous else [])
            f = s.add(ranks[i], ranks[parent[i]], nbytes, after, shards=shards)
            into[parent[i]].append(f)
            if previous is not None:
                previous[i] = f
    return into


def _down(
    s: Schedule,
    ranks: list[str],
    parent: list[int],
    nbytes: float,
    shards: list[int],
    root_after: list[int],
    previous: dict | None = None,
) -> None:
    """Every node sends to its children once it has the data (the root: after ``root_after``); ``previous``: as _up."""
    got: dict[int, list[int]] = {}
    for i in _depth_order(parent):
        if parent[i] >= 0:
            after = got.get(parent[i], root_after) + ([previous[i]] if previous and i in previous else [])
            got[i] = [s.add(ranks[parent[i]], ranks[i], nbytes, after, shards=shards)]
            if previous is not None:
                previous[i] = got[i][0]


@register("broadcast", "binary_tree")
def binary_tree_broadcast(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Binary-tree broadcast from the first rank: each node sends S to its two children once it has S."""
    n = len(ranks)
    s = Schedule("broadcast", ranks, shards=1, steps=max(0, (n).bit_length() - 1))
    _down(s, ranks, [heap_parent(n, i) for i in range(n)], nbytes, [0], [])
    return s


@register("reduce", "binary_tree")
def binary_tree_reduce(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Binary-tree reduce to the first rank: each node sends S to its parent once its children's have arrived."""
    n = len(ranks)
    s = Schedule("reduce", ranks, shards=1, steps=max(0, (n).bit_length() - 1))
    _up(s, ranks, [heap_parent(n, i) for i in range(n)], nbytes, [0])
    return s


#: NCCL's pipelining unit for trees (its 4 MiB buffer in 8 steps), and the most chunks a half is cut into
TREE_CHUNK = 512 * 1024
TREE_MAX_CHUNKS = 64


def tree_chunks(nbytes: float) -> int:
    """Chunks each tree's half (S/2) is pipelined in: S/2 in 512 KiB pieces, 1 to 64."""
    return min(TREE_MAX_CHUNKS, max(1, math.ceil(nbytes / 2 / TREE_CHUNK)))


@register("allreduce", "double_binary_tree")
def double_binary_tree(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """NCCL's double binary tree allreduce: two complementary trees each reduce and broadcast half the data."""
    n = len(ranks)
    c = tree_chunks(nbytes)
    s = Schedule("allreduce", ranks, shards=2 * c)  # shard t*c + k: chunk k of tree t's half
    if n < 2:
        return s
    depth = 0
    for t, parent in enumerate(dtree_parents(n)):
        root = parent.index(-1)
        up: dict[int, int] = {}
        down: dict[int, int] = {}
        for k in range(c):
            into = _up(s, ranks, parent, nbytes / (2 * c), [t * c + k], up)
            _down(s, ranks, parent, nbytes / (2 * c), [t * c + k], into[root], down)
        depth = max(depth, max(len(_chain_up(parent, i)) for i in range(n)))
    s.steps = 2 * (depth + c - 1)
    return s


def _chain_up(parent: list[int], i: int) -> list[int]:
    out = []
    while parent[i] >= 0:
        i = parent[i]
        out.append(i)
    return out
