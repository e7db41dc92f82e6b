"""Recursive halving-doubling (Rabenseifner): allreduce, its coherent half, reduce-scatter, allgather.

Over N ranks, S bytes per rank, every rank-to-rank flow costing alpha + bytes/B alone
(a non-blocking star), N a power of two:

* ``halving_doubling`` allreduce: reduce-scatter by recursive halving (in the step of
  distance d rank i exchanges with rank i XOR d half of its current segment), then
  allgather by recursive doubling: 2 log2(N) alpha + 2 (N-1)/N S/B;
* ``coherent_halving_doubling`` allreduce (coherent fabric): the reduce-scatter half
  only, the reduced data existing once, anywhere: log2(N) alpha + (N-1)/N S/B;
* ``halving_doubling`` reduce-scatter and allgather: log2(N) alpha + (N-1)/N S/B.

Invariant: every step is a pairwise exchange (both flows of a pair start once both
partners finished their previous step), so on a star no two flows share a link. Other N
fold the first r = N - p odd ranks onto their even neighbours (p the largest power of two
below N) before the exchanges and back after.

Closed forms for any N: docs/collectives.md, "Closed forms" (Halving-doubling).
"""

from __future__ import annotations

from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import register
from hcsim.collectives.view import TopologyView


def fold(n: int) -> tuple[int, int, list[int], list[list[int]]]:
    """(p, r, active, stands_for): the p active ranks (indices) and the ranks each stands for."""
    p = 1 << (n.bit_length() - 1)
    r = n - p
    active = [2 * v if v < r else v + r for v in range(p)]
    stands = [[2 * v, 2 * v + 1] if v < r else [v + r] for v in range(p)]
    return p, r, active, stands


class _Exchanges:
    """Adds pairwise flows to a schedule; a flow waits for both ends' previous step."""

    def __init__(self, s: Schedule, ranks: list[str], unit: float) -> None:
        self.s, self.ranks, self.unit = s, ranks, unit
        self.last: list[list[int]] = [[] for _ in ranks]  # flows each rank took part in during its last step

    def step(self, pairs: list[tuple[int, int, list[int]]]) -> None:
        """One round: flows (a, b, shards) whose ends wait for their previous round."""
        new: dict[int, list[int]] = {}
        for a, b, shards in pairs:
            after = sorted(set(self.last[a]) | set(self.last[b]))
            f = self.s.add(self.ranks[a], self.ranks[b], len(shards) * self.unit, after, shards=shards)
            new.setdefault(a, []).append(f)
            new.setdefault(b, []).append(f)
        for i, flows in new.items():
            self.last[i] = flows
        self.s.steps += 1


def _halving(x: _Exchanges, active: list[int], pieces: list[list[int]]) -> None:
    """Reduce-scatter by recursive halving among ``active``; virtual rank v ends with piece v."""
    p = len(active)
    seg = [list(range(p)) for _ in range(p)]
    m = p >> 1
    while m:
        pairs = []
        for v in range(p):
            u = v ^ m
            give = [w for w in seg[v] if (w & m) == (u & m)]
            pairs.append((active[v], active[u], [sh for w in give for sh in pieces[w]]))
        x.step(pairs)
        seg = [[w for w in seg[v] if (w & m) == (v & m)] for v in range(p)]
        m >>= 1


def _doubling(x: _Exchanges, active: list[int], pieces: list[list[int]]) -> None:
    """Allgather by recursive doubling among ``active``; virtual rank v starts with piece v."""
    p = len(active)
    seg = [[v] for v in range(p)]
    m = 1
    while m < p:
        x.step([(active[v], active[v ^ m], [sh for w in seg[v] for sh in pieces[w]]) for v in range(p)])
        seg = [sorted(seg[v] + seg[v ^ m]) for v in range(p)]
        m <<= 1


def _allreduce(ranks: list[str], nbytes: float, reduce_scatter_only: bool) -> Schedule:
    n = len(ranks)
    p, r, active, _ = fold(n)
    s = Schedule("allreduce", ranks, shards=p, coherent=reduce_scatter_only)
    x = _Exchanges(s, ranks, nbytes / p)
    everything = list(range(p))
    if r:
        x.step([(2 * k + 1, 2 * k, everything) for k in range(r)])
    pieces = [[v] for v in range(p)]
    _halving(x, active, pieces)
    if reduce_scatter_only:
        return s
    _doubling(x, active, pieces)
    if r:
        x.step([(2 * k, 2 * k + 1, everything) for k in range(r)])
    return s


@register("allreduce", "halving_doubling")
def halving_doubling(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Rabenseifner allreduce: reduce-scatter by recursive halving, allgather by recursive doubling."""
    return _allreduce(ranks, nbytes, False)


@register("allreduce", "coherent_halving_doubling", coherent=True)
def coherent_halving_doubling(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Coherent halving-doubling allreduce: the recursive-halving reduce-scatter only (coherent fabric)."""
    return _allreduce(ranks, nbytes, True)


@register("reduce_scatter", "halving_doubling")
def halving_doubling_reduce_scatter(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Reduce-scatter by recursive halving: log2 N exchanges of S/2, S/4, ..., S/N; rank i ends with slice i."""
    n = len(ranks)
    p, r, active, stands = fold(n)
    s = Schedule("reduce_scatter", ranks, shards=n)
    x = _Exchanges(s, ranks, nbytes / n)
    if r:
        x.step([(2 * k + 1, 2 * k, list(range(n))) for k in range(r)])
    _halving(x, active, stands)
    if r:
        x.step([(2 * k, 2 * k + 1, [2 * k + 1]) for k in range(r)])
    return s


@register("allgather", "halving_doubling")
def halving_doubling_allgather(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """Allgather by recursive doubling: log2 N exchanges of S/N, 2S/N, ..., S/2."""
    n = len(ranks)
    p, r, active, stands = fold(n)
    s = Schedule("allgather", ranks, shards=n)
    x = _Exchanges(s, ranks, nbytes / n)
    if r:
        x.step([(2 * k + 1, 2 * k, [2 * k + 1]) for k in range(r)])
    _doubling(x, active, stands)
    if r:
        x.step([(2 * k, 2 * k + 1, [i for i in range(n) if i != 2 * k + 1]) for k in range(r)])
    return s
