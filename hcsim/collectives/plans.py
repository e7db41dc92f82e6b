"""Flow plans: collectives as flows between hosts, with the dependencies of their algorithm.

A :class:`FlowPlan` lists point-to-point flows (src, dst, bytes) and, for each flow, how
many earlier flows it waits for and which flows wait for it. The engine starts the flows
whose count is zero, and each completion may release others; the flows of one step
really run at once and contend with all other traffic on the platform. The plan
builders here are the library's fast forms (ring, coherent ring, chain, direct); any
other schedule becomes a plan through :func:`hcsim.collectives.build_plan`.

Invariants: chunk sizes are whole bytes, and a flow that would carry 0 bytes carries 1
(SimGrid 4.1 never completes a zero-byte communication); a plan for ``group`` >
len(scope) (a folded run) keeps the full collective's step count and step size.

Guide: docs/collectives.md, "Schedules, flows and shards" (Flow plans).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RING_KINDS", "FlowPlan", "plan", "ring_steps"]


@dataclass
class FlowPlan:
    """Flows of one communication vertex: endpoints, sizes and dependency counts."""

    src: list[str]
    dst: list[str]
    size: list[int]
    waits: list[int]  # number of flows each flow waits for
    releases: list[list[int]]  # flows each flow's completion counts down
    steps: int
    joins: int = 0  # entries of size 0 are joins, not flows: done as soon as their count reaches zero
    delay: float = 0.0  # seconds the vertex takes after its last flow: a fixed latency (Schedule.delay)

    def __len__(self) -> int:
        return len(self.src)

    @property
    def flows(self) -> int:
        """Real flows (entries that are not joins)."""
        return len(self.src) - self.joins


def _ring(ranks: list[str], chunk: int, steps: int) -> FlowPlan:
    n = len(ranks)
    src, dst, size, waits, releases = [], [], [], [], []
    for j in range(steps):
        for i in range(n):
            src.append(ranks[i])
            dst.append(ranks[(i + 1) % n])
            size.append(chunk)
            waits.append(0 if j == 0 else 2)
            rel = []
            if j + 1 < steps:
                rel.append((j + 1) * n + i)  # my next send waits for this send
                rel.append((j + 1) * n + (i + 1) % n)  # the receiver's next send waits for this chunk
            releases.append(rel)
    return FlowPlan(src, dst, size, waits, releases, steps)


def _chain(order: list[str], nbytes: int) -> FlowPlan:
    k = len(order) - 1
    return FlowPlan(
        src=order[:-1],
        dst=order[1:],
        size=[nbytes] * k,
        waits=[0] + [1] * (k - 1),
        releases=[[i + 1] for i in range(k - 1)] + [[]],
        steps=k,
    )


RING_KINDS = ("allreduce", "reduce_scatter", "allgather")


def ring_steps(kind: str, algorithm: str, n: int) -> int:
    """Steps of a ring collective over ``n`` ranks."""
    if kind == "allreduce" and algorithm != "coherent_ring":
        return 2 * (n - 1)
    return n - 1


def plan(
    kind: str, algorithm: str, scope: list[str], nbytes: float, group: int | None = None, compact: bool = False
) -> FlowPlan:
    """The flows of a communication vertex (kinds and algorithms as in the workload graph).

    ``group``: the number of ranks the collective stands for (default ``len(scope)``);
    ``compact``: for ring collectives, list one step's flows only (``steps`` says how
    many), for engines that run the steps themselves.
    """
    n = len(scope)
    g = n if group is None else group
    whole = max(1, int(round(nbytes)))
    chunk = max(1, int(round(nbytes / g)))
    if kind in RING_KINDS:
        steps = ring_steps(kind, algorithm, g)
        fp = _ring(scope, chunk, min(1, steps) if compact else steps)
        fp.steps = steps
        return fp
    if kind == "p2p":
        return FlowPlan([scope[0]], [scope[1]], [whole], [0], [[]], 1)
    if kind == "broadcast":
        return _chain(scope, whole)
    if kind == "reduce":
        return _chain(scope[::-1], whole)
    if kind == "alltoall":
        pairs = [(a, b) for a in scope for b in scope if a != b]
        m = len(pairs)
        return FlowPlan([a for a, _ in pairs], [b for _, b in pairs], [chunk] * m, [0] * m, [[] for _ in pairs], 1)
    raise ValueError(f"unknown communication kind {kind!r}")
