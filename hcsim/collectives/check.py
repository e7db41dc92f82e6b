"""The data-movement check: does a schedule deliver what its kind promises?

The collective's data is cut into ``schedule.shards`` pieces. Each rank starts with what
the kind gives it (an allreduce: every shard of its own; an allgather: its own shard; a
broadcast: the root everything; an all-to-all: shard i*N+j at rank i), and a flow
carrying shard s from a to b adds to b's shard s everything a held of it *when the flow
started*: what a had from the start plus what reached a through flows in its ``after``
closure, which is all a schedule guarantees. Contents are sets of contributing ranks
(bitmasks).

Invariant: :func:`check_schedule` passes only if every rank ends with what the kind
promises (an allreduce: every shard from all ranks at every rank; a coherent allreduce:
every shard fully reduced somewhere), and a failure names the rank and the shard.

The table of every kind: docs/collectives.md, "The data-movement check".
"""

from __future__ import annotations

from hcsim.collectives.schedule import Schedule
from hcsim.errors import HcsimError

__all__ = ["check_schedule", "expected_shards"]


def expected_shards(kind: str, n: int) -> int:
    """How many shards the check of ``kind`` over ``n`` ranks uses by default."""
    return n * n if kind == "alltoall" else n


def _initial(kind: str, n: int, shards: int) -> list[list[int]]:
    full = (1 << n) - 1
    state = [[0] * shards for _ in range(n)]
    for r in range(n):
        for s in range(shards):
            if kind in ("allreduce", "reduce_scatter", "reduce"):
                state[r][s] = 1 << r
            elif kind == "allgather":
                state[r][s] = 1 << r if s * n // shards == r else 0
            elif kind == "broadcast":
                state[r][s] = full if r == 0 else 0
            elif kind == "alltoall":
                state[r][s] = 1 << r if s // n == r else 0
            else:
                raise HcsimError(f"no data-movement check for kind {kind!r}")
    return state


def check_schedule(schedule: Schedule) -> None:
    """Raise a one-line error naming the first rank and shard a schedule fails to deliver."""
    sch = schedule
    n, shards = len(sch.ranks), sch.shards
    if shards <= 0:
        return
    places = list(sch.ranks) + [p for p in sch.pools if p not in sch.ranks]  # memory pools start empty
    index = {r: i for i, r in enumerate(places)}
    state = _initial(sch.kind, n, shards) + [[0] * shards for _ in places[n:]]
    initial = [row[:] for row in state]
    flows = sch.flows
    into: list[list[int]] = [[] for _ in places]  # flows into each rank or pool
    for i, f in enumerate(flows):
        if not f.join:  # a join moves no data: it only passes on its ancestors
            into[index[f.dst]].append(i)
    ancestors = [0] * len(flows)  # bitmask of flows that complete before flow i starts
    carried: list[dict[int, int]] = [{} for _ in flows]
    for i in sch.order():
        f = flows[i]
        anc = 0
        for d in f.after:
            anc |= ancestors[d] | (1 << d)
        ancestors[i] = anc
        if f.join:
            continue
        src = index[f.src]
        have = {s: initial[src][s] for s in f.shards}
        for g in into[src]:
            if anc >> g & 1:
                for s, bits in carried[g].items():
                    if s in have:
                        have[s] |= bits
        carried[i] = have
        dst = index[f.dst]
        for s, bits in have.items():
            state[dst][s] |= bits
    full = (1 << n) - 1
    what = f"algorithm '{sch.name or '?'}' ({sch.kind}) does not complete"

    def fail(rank: int, shard: int, has: int, wants: str) -> None:
        got = bin(has).count("1")
        raise HcsimError(f"{what}: rank '{sch.ranks[rank]}' ends with {got} of {n} contributions to shard {shard} "
                         f"({wants})")  # fmt: skip

    kind = sch.kind
    for s in range(shards):
        if kind == "allreduce" and sch.coherent:
            if not any(state[r][s] == full for r in range(len(places))):
                best = max(range(n), key=lambda r: bin(state[r][s]).count("1"))
                fail(best, s, state[best][s], "a coherent allreduce needs every shard fully reduced somewhere")
            continue
        for r in range(n):
            have = state[r][s]
            if kind == "allreduce" and have != full:
                fail(r, s, have, "every rank needs every contribution")
            if kind == "reduce_scatter" and s * n // shards == r and have != full:
                fail(r, s, have, "rank i needs shard i fully reduced")
            if kind in ("allgather", "broadcast") and not have:
                raise HcsimError(f"{what}: rank '{sch.ranks[r]}' never receives shard {s}")
            if kind == "reduce" and r == 0 and have != full:
                fail(r, s, have, "the root needs every contribution")
            if kind == "alltoall" and s % n == r and not have:
                raise HcsimError(f"{what}: rank '{sch.ranks[r]}' never receives shard {s} from '{sch.ranks[s // n]}'")
