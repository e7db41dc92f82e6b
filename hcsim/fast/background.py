"""Frozen components: ring steps skipped while remote-memory flows share the ring's links.

A full step that ran while no other flow started or ended anywhere, the ring was the
only ring in progress, every flow in flight was the ring's or a remote-memory flow, and
every memory flow of the ring's *component* (the flows linked to its links through
shared links) was past its latency phase, repeats: the next steps take the same time d
and every memory flow moves the same bytes. So the component is *frozen*: its memory
flows are suspended in SimGrid and the ring sleeps for the whole steps during which
each keeps bytes to move. Any flow starting or ending, or a ring starting, *thaws* it
(through the ledger's ``thaw`` hook): each memory flow is relaunched with its bytes left,
less what it would move during the latency it pays again (exact to first order).

Invariant: at most one component is frozen, and while it is, the ledger's ``thaw`` is
set. Rests on SimGrid's raw model without cross-traffic: the wing leaves this part out
otherwise. The argument and the measured bounds: ``docs/fast-paths.md`` ("Background flows").
"""

from __future__ import annotations

import math
from typing import Any

from hcsim.engine.records import COMM, COPY, REMOTE_ACCESS

__all__ = ["Background"]


class Background:
    """Memory flows in flight, and the ring step skips beside them (see the module docstring).

    :meth:`join` composes it into its rings: a listener of the ledger (before the rings: it
    records memory flows first), and the rings' ``launch``, ``start_step``, ``next_step``
    and ``finish_ring`` extended on their instance.
    """

    def __init__(self, rings: Any) -> None:
        self.rings, self.execution, self.ledger = rings, rings.execution, rings.ledger
        # the memory flows of this execution in flight (-> key, src, dst, links, start, route latency), the ring
        # whose component is frozen, and the last component found (valid while no flow but the ring's own
        # started or ended)
        self.memory_flows: dict[Any, tuple] = {}
        self.frozen_ring: Any = None
        self._component: tuple[Any, int, list[Any], float] = (None, -1, [], 0.0)
        # the rings' methods this part extends (join)
        self._launch_base, self._start_step_base = rings.launch, rings.start_step
        self._next_step_base, self._finish_ring_base = rings.next_step, rings.finish_ring

    def join(self) -> None:
        """Compose this part into its rings (call before the rings listen to the ledger)."""
        rings = self.rings
        self.ledger.listen(self)
        rings.launch, rings.start_step = self._launch, self._start_step
        rings.next_step, rings.finish_ring = self._next_step, self._finish_ring

    # ------------------------------------------------------------------ the rings' methods, extended
    def _launch(self, v: int, k: int, now: float) -> None:
        if self.frozen_ring is not None:  # a frozen component thaws before the new ring's flows start
            self.thaw(self.frozen_ring, now)
        self._launch_base(v, k, now)

    def _start_step(self, r: Any, now: float, size: int) -> None:
        """A step starts: a full one takes a snapshot of the memory flows it can meet (:meth:`snapshot`)."""
        self._start_step_base(r, now, size)
        full = size == self.execution.flow_plans[r.v].size[0]
        r.bg_snap = self.snapshot(r, now) if full and self.memory_flows else None

    def _next_step(self, r: Any, now: float, d: float) -> None:
        """A step that does not let ``r`` skip has ended: freeze its component if it repeats, else the next step."""
        if r.bg_snap is not None and self.freeze(r, now, d):
            return
        self._next_step_base(r, now, d)

    def _finish_ring(self, r: Any, now: float) -> None:
        self.forget(r)
        self._finish_ring_base(r, now)

    def timer(self, key: tuple, now: float) -> None:
        """A background skip ends (unless a flow thawed the component since: then its generation is stale)."""
        _, r, generation = key
        if r.frozen is not None and generation == r.skip_generation:
            self.thaw(r, now)

    # ------------------------------------------------------------------ listening
    def flow_started(self, act: Any, key: Any, src: Any, dst: Any, links: frozenset[str], now: float) -> None:
        tag = key[1]
        if (tag == REMOTE_ACCESS or tag == COPY) and key[0] is self.execution:
            self.memory_flows[act] = (key, src, dst, links, now, self.ledger.route(src, dst).latency)

    def flow_ended(self, act: Any, key: Any, links: frozenset[str], now: float) -> None:
        if self.memory_flows and key[1] != COMM:
            self.memory_flows.pop(act, None)

    def forget(self, r: Any) -> None:
        """Ring ``r`` is over."""
        r.bg_snap = None
        if self._component[0] is r:
            self._component = (None, -1, [], 0.0)

    def _thaw_frozen(self, now: float) -> None:
        self.thaw(self.frozen_ring, now)

    def snapshot(self, r: Any, now: float) -> tuple[int, list[tuple[Any, float]]] | None:
        """At a full step's start: the memory flows ``r``'s step can meet, with their bytes left (None: no skip).

        Only when ``r`` is the only ring in progress, every flow in flight is ``r``'s or a
        memory flow, and every memory flow of the component (the flows linked to the ring's
        links through shared links, transitively) is past its latency phase: then the
        component's state at the next step's start will be this one, less the bytes moved.
        """
        if len(self.rings.rings) != 1 or len(self.ledger.inflight) != r.real_left + len(self.memory_flows):
            return None
        mark = self.ledger.events - r.own_events  # other flows' starts and ends so far
        ring, at, component, ready = self._component
        if ring is not r or at != mark:
            links = set(r.links)
            component, rest, grew = [], list(self.memory_flows.items()), True
            ready = 0.0
            while grew:
                grew, keep = False, []
                for act, info in rest:
                    if links.isdisjoint(info[3]):
                        keep.append((act, info))
                    else:
                        component.append(act)
                        links.update(info[3])
                        ready = max(ready, info[4] + info[5])
                        grew = True
                rest = keep
            self._component = (r, mark, component, ready)
        if not component or ready > now:
            return None
        return mark, [(act, act.remaining) for act in component]

    def freeze(self, r: Any, now: float, d: float) -> bool:
        """A quiet full step with memory flows in the background has ended: skip the steps it will repeat.

        Every flow of the component is suspended in SimGrid (so nothing else sees a
        difference: no flow outside the component shares a link with it) and the ring
        sleeps for the whole steps during which every memory flow keeps going, each moving
        the bytes it moved in the step just measured.
        """
        mark, flows = r.bg_snap  # type: ignore[misc]
        r.bg_snap = None
        if len(self.rings.rings) != 1 or self.ledger.events - r.own_events != mark or d <= 0.0:
            return False  # another flow started or ended during the step: it does not repeat
        m = r.steps - r.steps_done
        frozen = []
        for act, before in flows:
            key, src, dst, links, _, latency = self.memory_flows[act]
            left = act.remaining
            moved = before - left
            if moved > 0.0:  # keep it in flight through the skipped steps (and its relaunch's latency)
                m = min(m, math.ceil((left - latency * moved / d) / moved) - 1)
            frozen.append((act, key, src, dst, links, latency, left, moved))
        if m < 1:
            return False
        for act, *_ in frozen:
            act.suspend()
        r.frozen = (now, d, m, frozen)
        self.frozen_ring = r
        self.ledger.thaw = self._thaw_frozen
        r.skip_generation += 1
        self.execution.driver.add_timer(now + m * d, (self, r, r.skip_generation))
        return True

    def thaw(self, r: Any, now: float) -> None:
        """End a background skip (its last step, or a flow starting or ending anywhere): relaunch the memory flows.

        The whole steps elapsed are kept; within a step the flows are taken to move their
        bytes at a constant rate (as an interrupted skip does). Each suspended flow is
        replaced by one with the bytes it has left, less what it would have moved during
        the latency the replacement pays again.
        """
        since, d, m, frozen = r.frozen  # type: ignore[misc]
        r.frozen = None
        self.frozen_ring = None
        self.ledger.thaw = None
        r.skip_generation += 1
        elapsed = (now - since) / d
        whole = min(m, int(elapsed + 1e-9))
        part = 0.0 if whole == m else max(0.0, elapsed - whole)
        x = self.execution
        for act, key, src, dst, links, latency, left, moved in frozen:
            rest = left - (whole + part) * moved - latency * moved / d
            x.driver.cancel(act, now)  # the same flow goes on: counted once, as a materialized one is
            x.flow(src, dst, max(1, int(round(rest))), key, now, links)
        fp = x.flow_plans[r.v]
        r.steps_done += whole
        x.result.memoized_flows += whole * len(fp)
        rings = self.rings
        if r.steps_done >= r.steps:
            rings.finish_ring(r, now)
            return
        chunk = fp.size[0]
        if part > 0.0:
            rings.start_step(r, now, max(1, int(round(chunk * (1.0 - part)))))
            r.quiet = False  # a partial step measures nothing
        else:
            rings.start_step(r, now, chunk)
