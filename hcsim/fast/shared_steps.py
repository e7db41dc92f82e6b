"""Shared ring steps: a step of a ring plan measured alone stands for later rings of that plan.

A collective algorithm with ``shared_steps`` (NCCL's rings: ``Algorithm.shared_steps``)
runs the same plan (the same flows between the same hosts, the same chunk) at every
vertex of one collective. A full step of such a plan that ran alone on its links (no
flow from outside crossed them, nothing else in flight there) took d; a later ring of
the same plan that starts on quiet links (nothing in flight, no other ring in progress,
no skipped round's claim on any of them) skips all its steps from the first with one
timer of steps x d, exactly as a ring skips the steps after one it measured itself. A
flow starting on its links interrupts the skip as usual (the current step resumes in
SimGrid with the bytes it has left). Loose rings (two of their flows share a link) have
always done so; the :class:`~hcsim.fast.system.RunOptions` switches
``shared_group_steps`` (rings of a layout group, :mod:`.groups`) and ``shared_ring_steps``
(every ring algorithm, on in calibrated CLI runs) extend it.

Invariant: only durations of full steps measured quiet and not busy are kept, the first
one per plan; a skip from the first step starts only where the measured step's own
conditions hold. The argument and the measured bounds: ``docs/fast-paths.md`` ("Shared
steps").
"""

from __future__ import annotations

from typing import Any

from hcsim.collectives import FlowPlan, algorithm

__all__ = ["SharedSteps"]


class SharedSteps:
    """The steps measured per plan of shared-steps algorithms, and the skips they allow (module docstring).

    ``rings``: the :class:`~hcsim.fast.ring_steps.MemoizedRings` it serves; ``groups``:
    grouped rings skip from their first step too (``RunOptions.shared_group_steps``);
    ``every_ring``: every ring algorithm's plans are keyed (``RunOptions.shared_ring_steps``).
    """

    def __init__(self, rings: Any, *, groups: bool = False, every_ring: bool = False) -> None:
        self.rings, self.groups, self.every_ring = rings, groups, every_ring
        self.keys: dict[int, tuple] = {}  # plan id -> its key (hosts in order, chunk)
        self.step_times: dict[tuple, float] = {}  # key -> the duration of a full step measured alone on quiet links

    @property
    def last_steps(self) -> bool:
        """Whether a ring's last step is measured too (a ring of one step, e.g. CP's allgather over 2 ranks)."""
        return self.groups or self.every_ring

    def register(self, data: dict[str, Any], fp: FlowPlan) -> None:
        """A plan made for a vertex: keyed if its algorithm shares steps across vertices."""
        if self.every_ring or algorithm(data["kind"], data["algorithm"]).shared_steps:
            self.keys[id(fp)] = (tuple(fp.src), tuple(fp.dst), fp.size[0] if len(fp) else 0)

    def measured(self, r: Any, d: float) -> None:
        """Ring ``r`` ran a full step of ``d`` alone on quiet links (its own group's rings included)."""
        if r.group is not None and not self.groups:
            return
        key = self.keys.get(id(self.rings.execution.flow_plans[r.v]))
        if key is not None:
            self.step_times.setdefault(key, d)

    def known(self, r: Any, fp: FlowPlan) -> float | None:
        """The step of ``r``'s plan measured before, if ``r`` (just launched) may skip every step on it; else None.

        Only when nothing is in flight on its links, no other ring in progress shares one,
        and (a grouped ring) no skipped round holds one (a claim: a ring's flows would
        have interrupted it, a skip from the first step starts none): the conditions under
        which its own measured step would let it skip.
        """
        if r.group is not None and not self.groups:
            return None
        key = self.keys.get(id(fp))
        d = self.step_times.get(key) if key is not None else None
        rings = self.rings
        if d is None or r.busy or any(o is not r and not r.links.isdisjoint(o.links) for o in rings.rings):
            return None
        if r.group is not None:
            claims = rings.ledger.claims
            if claims and any(claims.get(link) for link in r.links):
                return None
        return d
