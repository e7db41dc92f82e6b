"""Tree algorithms: binary-tree broadcast and reduce, NCCL's double binary tree allreduce.

What is modelled: whole messages, store and forward (a node forwards once it has
received everything it needs; no chunk pipelining), so these are the latency-bound
trees of small messages. Over N ranks, S bytes per rank, on a non-blocking star
(alpha: rank-to-rank latency, B: port bandwidth; a node's flows to its two children
share its uplink, its children's flows to it share its downlink):

* ``binary_tree`` broadcast: the ranks in list order form a heap (rank i's children are
  2i+1 and 2i+2; the root is the first rank); a node sends S to its children at once
  once it has received S. Time: the slowest root-to-leaf path, where each node on it
  with c children adds alpha + c S/B: for N = 2^k - 1, (k-1)(alpha + 2 S/B);
* ``binary_tree`` reduce: the same tree, reversed: a node sends S to its parent once all
  its children's flows have arrived; two children that send at the same time share
  the parent's downlink (alpha + 2 S/B), otherwise a flow takes alpha + S/B;
* ``double_binary_tree`` allreduce (NCCL): two trees, each reducing then broadcasting one
  half of the data (S/2): NCCL's ``ncclGetBtree`` (rank 0 the root, leaves the odd
  ranks) and its complement (the mirror r -> N-1-r for N even, the shift r -> r+1 for
  N odd), so that most ranks are leaves in one tree and inner nodes in the other. A
  node sends S/2 up its tree once its children's halves have arrived; the root, then
  each node, sends the reduced half down once it has it. Both trees run at once and
  contend where their flows share a port. N = 2: 2 alpha + S/B; N = 3 (both trees are
  chains): 4 alpha + 2 S/B.
"""

from __future__ import annotations

from hcsim.collectives.registry import register
from hcsim.collectives.schedule import Schedule
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


def _up(s: Schedule, ranks: list[str], parent: list[int], nbytes: float, shards: list[int]) -> list[list[int]]:
    """Every node sends to its parent once its children's flows have arrived; returns the flows into each node."""
    into: list[list[int]] = [[] for _ in ranks]
    for i in reversed(_depth_order(parent)):
        if parent[i] >= 0:
            into[parent[i]].append(s.add(ranks[i], ranks[parent[i]], nbytes, into[i], shards=shards))
    return into


def _down(s: Schedule, ranks: list[str], parent: list[int], nbytes: float, shards: list[int], root_after) -> None:
    """Every node sends to its children once it has the data (the root: after ``root_after``)."""
    got: dict[int, list[int]] = {}
    for i in _depth_order(parent):
        if parent[i] >= 0:
            got[i] = [s.add(ranks[parent[i]], ranks[i], nbytes, got.get(parent[i], root_after), shards=shards)]


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


@register("allreduce", "double_binary_tree")
def double_binary_tree(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """NCCL's double binary tree allreduce: two complementary trees each reduce and broadcast half the data."""
    n = len(ranks)
    s = Schedule("allreduce", ranks, shards=2)
    if n < 2:
        return s
    depth = 0
    for t, parent in enumerate(dtree_parents(n)):
        into = _up(s, ranks, parent, nbytes / 2, [t])
        root = parent.index(-1)
        _down(s, ranks, parent, nbytes / 2, [t], into[root])
        depth = max(depth, max(len(_chain_up(parent, i)) for i in range(n)))
    s.steps = 2 * depth
    return s


def _chain_up(parent: list[int], i: int) -> list[int]:
    out = []
    while parent[i] >= 0:
        i = parent[i]
        out.append(i)
    return out
