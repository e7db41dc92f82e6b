"""Ring groups: overlapping rings of one layout, whose effects on each other are counts per flow index.

Rings of one *layout* (the same flows between the same hosts) whose flows cross pairwise
disjoint links form a :class:`RingGroup`: flow f of one ring shares links with flow f of
the others and with nothing else of theirs. So a ring reads what the others do as the
group's count minus its own (``busy``: others in flight on flow f; ``quiet``: no start
or end of another since its step began; ``disturbed``: none during flow f's flight),
instead of being told of each of their flows (O(rings) per flow).

Invariant: ``inflight[f]``, ``events_at[f]`` and ``events`` are the sums over the
group's rings of their own counts (``RingRun.own_inflight``, ``own_events_at``,
``own_events`` of grouped flows), kept by :class:`~hcsim.fast.ring_steps.MemoizedRings`;
the decisions are those of rings told flow by flow. See ``docs/fast-paths.md``
("Overlapping rings").
"""

from __future__ import annotations

from typing import Any

__all__ = ["RingGroup"]


class RingGroup:
    """The rings in progress with one layout, none sharing a link between flows (see the module docstring).

    ``rep``/``reps``: the twin classes in force (:mod:`.twins`: ``rep[f]`` is the flow
    that stands for f, ``reps`` those that stand for themselves), ``class_links`` the
    links of their flows; ``dormant``: the layout's twin classes not in force yet (other
    traffic may still cross their links).
    """

    __slots__ = ("layout", "rings", "inflight", "events_at", "events", "links", "rep", "reps", "class_links", "dormant")

    def __init__(self, layout: tuple, links: frozenset[str], n: int) -> None:
        self.layout, self.links = layout, links
        self.rings: list[Any] = []  # RingRun
        self.inflight = [0] * n  # flows of the group's rings in flight, per flow index
        self.events_at = [0] * n  # their starts and ends, per flow index
        self.events = 0  # all of them
        self.rep, self.reps = list(range(n)), list(range(n))
        self.class_links: frozenset[str] = frozenset()
        self.dormant: list[Any] = []  # TwinClass

    def others_busy(self, r: Any) -> set[int]:
        """The representatives of ``r`` where another ring of the group has a flow in flight (between steps)."""
        inflight = self.inflight
        return {f for f in r.reps if inflight[f]}

    def mark(self, r: Any) -> int:
        """The other rings' flow starts and ends so far (``r``'s quiet mark when its step starts)."""
        return self.events - r.own_events
