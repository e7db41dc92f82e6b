"""Twin flows: flows of a ring layout that run as one representative in SimGrid.

Flows f and g of a group's layout (:mod:`.groups`) are *twins* if their routes have one
signature (latency and the multiset of their links' attributes). A class of twins is
*in force* once (1) no flow from outside the group is in flight on its links, (2) none
can start there any more (every vertex that may put one there has made its last start,
read from the plans through :meth:`~hcsim.fast.ledger.LinkLedger.users`), and (3) in
every ring of the group each twin stands where its representative does. Then only the
representative runs in SimGrid; the twins end with it. A flow that crosses a twin's
links anyway *breaks* the class: the twins become flows of their own again.

Invariant: a twin is in SimGrid only while its class is dormant, and every twin left
out is counted in ``memoized_flows``. Classes that other flows may cross form *late*
(``late_twins``), in single-iteration runs only. Rests on SimGrid's raw model without
cross-traffic: the wing leaves this part out otherwise. The proof is in
``docs/fast-paths.md`` ("Twins").
"""

from __future__ import annotations

from typing import Any

from hcsim.fast.groups import RingGroup
from hcsim.fast.ledger import LinkUsers, Route

__all__ = ["TwinClass", "Twins"]


class TwinClass:
    """Flows of a ring layout with equal route signatures: ``rep`` and its ``twins`` (see the module docstring).

    ``links``: the links of all of them; ``watch``: the vertices of the execution whose
    flows may cross those links, as (vertex, whether it must also have finished: a
    communication vertex starts flows while it runs, a compute vertex only when it
    starts); ``settled``: how many of them, from the first, can never start a flow there
    again (that never changes back, so the scan resumes where it stopped).
    """

    __slots__ = ("rep", "twins", "members", "links", "watch", "settled")

    def __init__(self, rep: int, twins: tuple[int, ...], links: frozenset[str], watch: list[tuple[int, bool]]) -> None:
        self.rep, self.twins, self.members = rep, twins, (rep, *twins)
        self.links, self.watch, self.settled = links, watch, 0


class Twins:
    """The twin classes of one execution's ring layouts, formed and broken (see the module docstring).

    ``rings``: the :class:`~hcsim.fast.ring_steps.MemoizedRings` it serves; ``late``:
    classes whose links other flows may cross form once that traffic is over for good
    (False: only classes that no other flow can ever cross, when their group starts).
    """

    def __init__(self, rings: Any, *, late: bool = True) -> None:
        self.rings, self.late = rings, late
        self.execution, self.ledger = rings.execution, rings.ledger
        self.classes: dict[tuple, list[TwinClass]] = {}  # layout -> its classes of two flows or more
        # the rings' methods this part extends (join)
        self._new_group_base, self._group_step_base = rings._new_group, rings.group_step
        self._group_crossed_base = rings.group_crossed

    def join(self) -> None:
        """Compose this part into its rings: new groups get their classes, steps form them, crossings break them."""
        rings = self.rings
        rings._new_group, rings.group_step, rings.group_crossed = self._new_group, self._group_step, self._group_crossed

    def _new_group(self, layout: tuple, r: Any, routes: list[Route]) -> RingGroup:
        """A group for ``r``'s layout with the layout's twin classes, those no other flow can cross in force now."""
        group = self._new_group_base(layout, r, routes)
        group.dormant = list(self.classes_of(layout, r, routes))
        if group.dormant:
            self.form(group, None)
        return group

    def _group_step(self, group: RingGroup, r: Any, now: float) -> set[int]:
        """A ring of ``group`` starts a step: dormant classes form where they can, before it reads the group."""
        if group.dormant:
            self.form(group, now)
        return self._group_step_base(group, r, now)

    def _group_crossed(self, group: RingGroup, now: float, links: frozenset[str], change: int) -> None:
        """A flow from outside ``group`` on ``links``: if it crosses a class's links, the classes break first."""
        class_links = group.class_links
        if class_links and not links.isdisjoint(class_links):
            self.break_(group, now)
        self._group_crossed_base(group, now, links, change)

    def users(self) -> LinkUsers | None:
        """What the plans may put on each link (the ledger's, read once); None: too much to read, no twins."""
        x, rings = self.execution, self.rings
        return self.ledger.users(lambda v: x.strategy_of[v] is rings and x.flow_plans[v].steps)

    def classes_of(self, layout: tuple, r: Any, routes: list[Route]) -> list[TwinClass]:
        """The twin classes of ``r``'s layout (decided once per layout)."""
        classes = self.classes.get(layout)
        if classes is None:
            classes = self.classes[layout] = self._classes(layout, r, self.plan(routes))
        return classes

    def plan(self, routes: list[Route]) -> list[int]:
        """rep[f] for the flows of a (disjoint) ring layout: the first flow of f's signature, or f.

        Flows of equal route signatures are candidates; a class is in force only once no
        other flow can cross its links (:meth:`form`). None at all if the execution has too
        many other flows to tell which links they cross.
        """
        rep = list(range(len(routes)))
        if self.users() is None:
            return rep
        first: dict[tuple, int] = {}
        for f, route in enumerate(routes):
            rep[f] = first.setdefault(route.signature, f)
        return rep

    def _classes(self, layout: tuple, r: Any, rep: list[int]) -> list[TwinClass]:
        """The twin classes of ``rep`` (two flows or more), with the vertices that may start flows on their links.

        Flows of one signature whose links no other flow can cross are one class (it forms
        with the group); those that other flows may cross are a second class with the same
        representative (it forms late), or a class of their own if none is uncrossed.
        """
        known = self.users()
        if known is None:
            return []
        users, layouts = known.vertices, known.layouts
        members: dict[int, list[int]] = {}
        for f, g in enumerate(rep):
            members.setdefault(g, []).append(f)
        classes = []
        for flows in members.values():
            if len(flows) < 2:
                continue
            watch: dict[int, set[tuple[int, bool]]] = {}
            for f in flows:
                seen = watch[f] = set()
                for link in r.flow_links[f]:
                    seen.update(users.get(link, ()))
                    for key in layouts.get(link, ()):
                        if key != layout:
                            seen.update((v, True) for v in known.layout_vertices[key])
            free = [f for f in flows if not watch[f]]
            crossed = [f for f in flows if watch[f]]
            for members_of in (free, [free[0], *crossed] if free and crossed else crossed):
                if len(members_of) < 2:
                    continue
                links = frozenset().union(*(r.flow_links[f] for f in members_of))
                seen = set().union(*(watch[f] for f in members_of))
                classes.append(TwinClass(members_of[0], tuple(members_of[1:]), links, sorted(seen)))
        return classes

    def settled(self, c: TwinClass) -> bool:
        """No vertex of the execution can start a flow on the class's links any more (none is left to start or run)."""
        x = self.execution
        started, running, limit, watch = x.started, x.running, x.limit, c.watch
        i = c.settled
        while i < len(watch):
            v, runs = watch[i]
            if started[v] < limit or (runs and running[v]):
                break
            i += 1
        c.settled = i
        return i == len(watch)

    def state(self, r: Any, f: int, now: float) -> tuple:
        """Where flow f of ``r``'s current step stands: in SimGrid (start, size, bytes left), virtual, or over."""
        if r.skip is not None:
            return ("skipping",)
        if f in r.real:
            act = r.acts[f]
            return ("over",) if act is None else (r.flow_start[f], r.flow_size[f], act.remaining)
        if not r.virtual_count or r.solo[f] is None:  # no step under way (or nothing virtual about f)
            return ("over",) if r.virtual_count == 0 else ("unknown", f)
        arrival = r.virtual_start + self.rings.virtual_duration(r, f, r.virtual_size)
        return ("over",) if arrival <= now else ("virtual", arrival)

    def form(self, group: RingGroup, now: float | None) -> None:
        """Put dormant twin classes in force where it is exact (the module docstring).

        A class forms when (1) no flow from outside the group is in flight on its links,
        (2) no vertex of the execution can start one there any more (:meth:`settled`), and
        (3) in every ring of the group each twin stands where its representative does
        (:meth:`state`). Its twins then leave SimGrid: those in flight are cancelled
        (their representative carries the same bytes on an isomorphic set of links).
        ``now`` None: the group has no ring yet (only (1) and (2) apply).
        """
        rings = group.rings
        ready = []
        late = self.late and self.execution.iterations == 1  # docs/fast-paths.md ("Twins"), condition (2)
        for c in group.dormant:
            if not late and (c.watch or now is not None):
                continue
            if not self.settled(c):
                continue
            if rings:
                if any(rings[0].foreign[h] for h in c.members):  # the same count in every ring of the group
                    continue
                if any(self.state(r, g, now) != self.state(r, c.rep, now)  # type: ignore[arg-type]
                       for r in rings for g in c.twins):  # fmt: skip
                    continue
            elif any(not links.isdisjoint(c.links) for links, _ in self.ledger.inflight.values()):
                continue
            ready.append(c)
        if not ready:
            return
        n = len(group.rep)
        rep = list(group.rep)
        for c in ready:
            for g in c.twins:
                rep[g] = c.rep
        group.dormant = [c for c in group.dormant if c not in ready]
        group.rep, group.reps = rep, [f for f in range(n) if rep[f] == f]
        group.class_links = group.class_links.union(*(c.links for c in ready))
        cancels = []
        for r in rings:
            r.rep, r.reps = group.rep, group.reps
            r.slowest_first, r.vends_step = None, -1
            if r.skip is not None:
                continue
            for c in ready:
                for g in c.twins:
                    if g not in r.real:
                        if r.virtual_count:  # a virtual flow of the step: its representative arrives with it
                            r.virtual_count -= 1
                    elif r.acts[g] is not None:
                        cancels.append((r, g))
            self.rings.mark_fragile(r)
        result, driver = self.execution.result, self.execution.driver
        for r, g in cancels:
            r.real.discard(g)
            r.real_left -= 1
            result.activities -= 1  # counted as memoized from now on, as a twin at its step's start would be
            result.memoized_flows += 1
            driver.cancel(r.acts[g], now)

    def break_(self, group: RingGroup, now: float) -> None:
        """A flow from outside the group crosses a twin's links: every twin becomes a flow of its own.

        A twin whose representative is in SimGrid is launched with the bytes its
        representative has left (paying its latency again, like a materialized flow), or
        has ended with it; a twin of a virtual representative stays virtual with the
        representative's solo time.
        Its class goes back to dormant (it may form again, :meth:`form`).
        """
        n = len(group.rep)
        rep = group.rep
        group.dormant = list(self.classes.get(group.layout, ()))
        group.rep, group.reps, group.class_links = list(range(n)), list(range(n)), frozenset()
        launches = []
        for r in group.rings:
            r.rep, r.reps = group.rep, group.reps
            r.slowest_first, r.vends_step = None, -1
            if r.skip is not None:
                continue
            for g in range(n):
                f = rep[g]
                if f == g:
                    continue
                if r.solo[g] is None and r.solo[f] is not None:
                    r.solo[g] = r.solo[f]
                    r.unmeasured.discard(g)
                if f in r.real:
                    act = r.acts[f]
                    if act is not None:  # still in flight: g has what f has left
                        launches.append((r, g, max(1, int(round(act.remaining)))))
                    else:  # over: g ended with f (left out, it would pass for virtual and be materialized)
                        r.real.add(g)
                elif r.virtual_count:
                    r.virtual_count += 1  # a twin of a virtual flow is virtual on its own
        result = self.execution.result
        for r, g, size in launches:
            r.real.add(g)
            r.real_left += 1
            r.flow_start[g], r.flow_size[g], r.disturbed[g] = now, size, True
            result.memoized_flows -= 1
            result.activities += 1
            self.rings.launch_flow(r, g, size, now)
