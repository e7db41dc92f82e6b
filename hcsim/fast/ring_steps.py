"""Memoized ring steps: ring collectives run step by step, with skipped steps and virtual flows.

With ``memoize=True`` (:class:`~hcsim.fast.system.RunOptions`) an execution runs ring
collectives with :class:`MemoizedRings`: all flows of a step start together, and the
next step starts when the last has ended. A step run alone on its links is measured and
the steps left are *skipped* with one timer; within a step, a flow alone on its links
whose solo time is measured stays *virtual*. Anything that starts on a ring's links
interrupts the skip or *materializes* the virtual flow. Overlapping rings of one layout
are counted per flow index (:mod:`.groups`); twins (:mod:`.twins`) and frozen
components (:mod:`.background`) are parts handed in, or left out.

Invariant: every flow of the simulation is seen through the :class:`~hcsim.fast.ledger.LinkLedger`,
and a ring in progress holds its links there (it may have traffic SimGrid does not see).
What it approximates, the proofs and the measured bounds: ``docs/fast-paths.md``
("Memoize").
"""

from __future__ import annotations

from typing import Any

from hcsim.collectives import FlowPlan, TopologyView, algorithm, build_plan
from hcsim.engine.records import COMM, ActivityKey, VertexRun
from hcsim.fast.groups import RingGroup
from hcsim.fast.ledger import LinkLedger, Route
from hcsim.fast.shared_steps import SharedSteps

__all__ = ["SKIP_END", "VIRTUAL_END", "MemoizedRings", "RingRun"]

# timer tags: a skip ends; the virtual flows of a step have all arrived
SKIP_END, VIRTUAL_END = 0, 1


class RingRun(VertexRun):
    """A ring collective run step by step, with its skipping state."""

    __slots__ = (
        "steps", "steps_done", "real_left", "step_start", "quiet", "skip", "skip_generation", "links",
        "flow_links", "flow_latency", "solo", "flow_start", "flow_size", "disturbed", "real", "virtual_count",
        "virtual_start", "virtual_size", "virtual_end", "step_generation", "disjoint", "flows_on_link", "hits",
        "unmeasured", "slowest_first", "foreign", "busy", "step_id", "vends", "vpos", "vends_step",
        "group", "rep", "reps", "own_inflight", "own_events", "own_events_at", "quiet_mark", "disturb_mark", "acts",
        "bg_snap", "frozen",
    )  # fmt: skip

    def __init__(self, v: int, k: int, start: float, steps: int) -> None:
        super().__init__(v, k, start, 0)
        self.steps, self.steps_done = steps, 0
        self.real_left = 0  # flows of the current step still in SimGrid
        self.step_start, self.quiet = start, True  # quiet: no flow from outside the group crossed its links
        self.skip: tuple[float, float, int] | None = None  # (since, step duration, steps skipped) while skipping
        self.skip_generation = 0  # a SKIP_END timer of an older generation was cancelled
        self.links: frozenset[str] = frozenset()  # links the ring's flows cross
        # per flow of a step: links, route latency, measured solo duration of a full chunk, start and size
        # when launched, whether a flow from outside the group crossed its links meanwhile
        self.flow_links: list[frozenset[str]] = []
        self.flow_latency: list[float] = []
        self.solo: list[float | None] = []
        self.flow_start: list[float] = []
        self.flow_size: list[int] = []
        self.disturbed: list[bool] = []
        # flows of the step in SimGrid; the other virtual_count representatives are virtual, started at
        # virtual_start with virtual_size bytes, the last of them arriving at virtual_end
        self.real: set[int] = set()
        self.virtual_count, self.virtual_start, self.virtual_size, self.virtual_end = 0, start, 0, start
        self.step_generation = 0  # a VIRTUAL_END timer of an older generation is stale
        self.disjoint = False  # no two flows of a step share a link
        self.flows_on_link: dict[str, list[int]] = {}  # link -> flows of a step that cross it
        self.hits: dict[frozenset[str], tuple[int, ...]] = {}  # a route's links -> flows of a step it shares one with
        self.unmeasured: set[int] = set()  # flows whose solo duration is not measured yet
        self.slowest_first: list[int] | None = None  # representatives with a known solo duration (None: stale)
        # per flow of a step: flows in flight from outside the group that share one of its links; busy: those > 0
        self.foreign: list[int] = []
        self.busy: set[int] = set()
        # the virtual flows' ends of step number step_id, latest first, sorted once per step (vends_step) when
        # the first of them is materialized; vpos: the first that is still virtual. Recomputing the maximum at
        # every materialization cost O(flows) each: quadratic in the ring's size when latency-bound steps
        # materialize flow after flow (256 H100 at 100 us: slower than the exact engine)
        self.step_id, self.vends_step, self.vpos = 0, -1, 0
        self.vends: list[tuple[float, int]] = []
        # the ring's group (rings of the same layout, groups.py) or None; rep[f]: the flow that stands for f
        # (f itself unless f is a twin); reps: the flows that stand for themselves, in order
        self.group: RingGroup | None = None
        self.rep: list[int] = []
        self.reps: list[int] = []
        # the ring's own part of its group's counters (so that the others' part is the difference), the marks
        # of the group's counters when its step started (quiet_mark) and each flow was launched (disturb_mark),
        # and each flow's SimGrid activity while in flight
        self.own_inflight: list[int] = []
        self.own_events, self.own_events_at = 0, []  # all flow starts and ends of the ring (grouped or not); per index
        self.quiet_mark = 0
        self.disturb_mark: list[int] = []
        self.acts: list[Any] = []
        # background skipping (background.py): at a step's start, the mark of the other flows' events and
        # the remaining bytes of the memory flows of its component; while frozen, (since, step duration, steps
        # skipped, [(flow, key, src, dst, links, latency, bytes left, per step)])
        self.bg_snap: tuple[int, list[tuple[Any, float]]] | None = None
        self.frozen: tuple[float, float, int, list[tuple]] | None = None


class MemoizedRings:
    """Runs ring collectives step by step, skipping what repeats (see the module docstring).

    Twins (:class:`~hcsim.fast.twins.Twins`) and frozen components
    (:class:`~hcsim.fast.background.Background`) are parts the wing
    (:class:`~hcsim.fast.system.FastPaths`) composes in or leaves out: each one's ``join``
    wraps the methods it extends on this instance (``_new_group``, ``group_step`` and
    ``group_crossed``; ``launch``, ``start_step``, ``next_step`` and ``finish_ring``), so
    without them no method here checks for them.
    """

    def __init__(self, execution: Any, exact: Any, ledger: LinkLedger) -> None:
        self.execution = execution
        self.exact = exact  # for rings of a single rank (no step)
        self.ledger = ledger
        self.rings: list[RingRun] = []  # in progress
        self.groups: dict[tuple, RingGroup] = {}  # layout -> its group, while it has rings in progress
        self.loose: list[RingRun] = []  # rings in progress in no group (two of their flows share a link)
        # a route's links -> the groups and loose rings in progress that share a link with it, in the order
        # _network_changed visits them; cleared whenever a group or a loose ring starts or ends
        self.sharing: dict[frozenset[str], tuple[tuple[RingGroup, ...], tuple[RingRun, ...]]] = {}
        self.fragile: set[RingRun] = set()  # rings skipping or with virtual flows: told of every flow at once
        # steps measured per plan of algorithms that share them across vertices (Algorithm.shared_steps)
        self.shared_steps = SharedSteps(self)
        self.layouts: dict[int, tuple] = {}  # plan id -> what its rings cross (_layout)

    # ------------------------------------------------------------------ the strategy protocol
    def handles(self, data: dict[str, Any]) -> bool:
        return data["kind"] != "p2p" and algorithm(data["kind"], data["algorithm"]).ring

    def plan(self, data: dict[str, Any], view: TopologyView) -> FlowPlan:
        d = data
        fp = build_plan(d["kind"], d["algorithm"], d["scope"], d["bytes"], view, group=d.get("group"), compact=True)
        self.shared_steps.register(d, fp)
        return fp

    def launch(self, v: int, k: int, now: float) -> None:
        x = self.execution
        fp = x.flow_plans[v]
        if fp.steps == 0:
            self.exact.launch(v, k, now)
            return
        r = RingRun(v, k, now, fp.steps)
        layout_of = self.layouts.get(id(fp))
        if layout_of is None:  # what a ring of this plan crosses: the same at every vertex sharing the plan
            layout_of = self.layouts[id(fp)] = self._layout(x.flow_hosts[v])
        routes, layout = layout_of[0], layout_of[1]
        r.flow_links, r.flow_latency, r.links, r.disjoint, r.flows_on_link, r.hits = layout_of[2:]
        n = len(routes)
        r.unmeasured = set(range(n))
        r.own_inflight, r.own_events_at, r.disturb_mark, r.acts = [0] * n, [0] * n, [0] * n, [None] * n
        r.rep, r.reps = list(range(n)), list(range(n))
        if r.disjoint:
            group = self.groups.get(layout)
            if group is None:
                group = self.groups[layout] = self._new_group(layout, r, routes)
                self.sharing.clear()
            group.rings.append(r)
            r.group, r.rep, r.reps = group, group.rep, group.reps
        else:
            self.loose.append(r)
            self.sharing.clear()
        r.foreign = [0] * n
        for links, key in self.ledger.inflight.values():
            owner = key[2]
            group = owner.group if owner.__class__ is RingRun and key[0] is x else None
            if group is None or group is not r.group:
                for f in self._hits(r, links):
                    r.foreign[f] += 1
        r.busy = {f for f in range(n) if r.foreign[f]}
        r.solo, r.flow_start, r.flow_size, r.disturbed = [None] * n, [0.0] * n, [0] * n, [False] * n
        self.rings.append(r)
        self.ledger.occupy(r.links)
        d = self.shared_steps.known(r, fp)
        if d is not None:  # a step of its plan measured alone before: skip them all
            r.step_start = now
            self._skip(r, now, d, r.steps)
            return
        self.start_step(r, now, fp.size[0])

    def _layout(self, hosts: tuple[list[Any], list[Any]]) -> tuple:
        """A plan's routes, layout key, and per flow its links and latency; its links, disjointness, flows per link.

        Shared (read only) by every ring of the plan, with its cache of which flows a route hits (``RingRun.hits``).
        """
        src, dst = hosts
        routes = [self.ledger.route(a, b) for a, b in zip(src, dst, strict=True)]
        flow_links = [route.links for route in routes]
        links = frozenset().union(*flow_links)
        flows_on_link: dict[str, list[int]] = {}
        for f, on in enumerate(flow_links):
            for link in on:
                flows_on_link.setdefault(link, []).append(f)
        layout = tuple((a.name, b.name) for a, b in zip(src, dst, strict=True))
        disjoint = len(links) == sum(len(fl) for fl in flow_links)
        return routes, layout, flow_links, [route.latency for route in routes], links, disjoint, flows_on_link, {}

    def complete(self, act: Any, key: ActivityKey, now: float) -> None:
        """A flow of a step has ended: measure it if it ran alone; the step ends with its last flow."""
        _, _, r, f = key
        if r.__class__ is not RingRun:  # a ring of one rank, run by the exact strategy
            self.exact.complete(act, key, now)
            return
        g = r.group
        alone = not r.disturbed[f] and (g is None or g.events_at[f] - r.own_events_at[f] == r.disturb_mark[f])
        if alone and r.flow_size[f] == self.execution.flow_plans[r.v].size[0]:
            solo = now - r.flow_start[f]
            if solo != r.solo[f]:
                r.solo[f] = solo
                r.unmeasured.discard(f)
                r.slowest_first = None
        r.real_left -= 1
        if not r.real_left:
            if now >= r.virtual_end:
                self._step_done(r, now)
            else:
                self.set_timer(r.virtual_end, VIRTUAL_END, r, r.step_generation)

    def timer(self, key: tuple, now: float) -> None:
        """A step's virtual flows have arrived, or a skip ends (unless superseded since)."""
        _, tag, r, generation = key
        if tag == VIRTUAL_END:
            if generation == r.step_generation and not r.real_left and r in self.rings:
                self._step_done(r, now)
            return
        if generation != r.skip_generation or r.skip is None:
            return  # cancelled by an interruption
        _, _, left = r.skip
        r.skip = None
        self.execution.result.memoized_flows += left * len(self.execution.flow_plans[r.v])
        r.steps_done = r.steps
        self.finish_ring(r, now)

    # ------------------------------------------------------------------ groups
    def _new_group(self, layout: tuple, r: RingRun, routes: list[Route]) -> RingGroup:
        """A group for ``r``'s layout (the twins part, composed in, adds the layout's twin classes)."""
        return RingGroup(layout, r.links, len(routes))

    def finish_ring(self, r: RingRun, now: float) -> None:
        """Ring ``r`` is over: it leaves the rings in progress, its links and its group; its vertex execution ends."""
        self.rings.remove(r)
        self.ledger.vacate(r.links)
        self.fragile.discard(r)
        group = r.group
        if group is None:
            self.loose.remove(r)
            self.sharing.clear()
        else:
            group.rings.remove(r)
            if not group.rings:
                del self.groups[group.layout]
                self.sharing.clear()
        self.execution.finish(r, now)

    def mark_fragile(self, r: RingRun) -> None:
        """``r`` is fragile (told of every flow at once) while it skips or holds virtual flows."""
        if r.skip is not None or r.virtual_count:
            self.fragile.add(r)
        else:
            self.fragile.discard(r)

    def _fragile_now(self, now: float) -> set[RingRun]:
        """The fragile rings that must still be told of flows on their links; the others leave ``fragile``.

        A ring not skipping whose virtual flows have all arrived (``virtual_end``, the
        last arrival, is past) has nothing another flow could disturb until its next step:
        materializing an arrived flow launches nothing. Its step still ends with its real
        flows or its pending VIRTUAL_END timer.
        """
        fragile = self.fragile
        arrived = [r for r in fragile if r.skip is None and r.virtual_end <= now]
        if arrived:
            fragile.difference_update(arrived)
        return fragile

    # ------------------------------------------------------------------ observing the network
    def flow_started(self, act: Any, key: Any, src: Any, dst: Any, links: frozenset[str], now: float) -> None:
        """The ledger's listener: a flow started (the ledger has recorded it)."""
        owner = key[2]  # key: an ActivityKey layout (its run)
        mine = owner.__class__ is RingRun and key[0] is self.execution
        group = owner.group if mine else None
        if mine:
            owner.own_events += 1
        if group is not None:
            f = key[3]
            group.inflight[f] += 1
            group.events_at[f] += 1
            group.events += 1
            owner.own_inflight[f] += 1
            owner.own_events_at[f] += 1
            owner.acts[f] = act
        if self.rings:
            self._network_changed(owner, group, now, links, 1)

    def flow_ended(self, act: Any, key: Any, links: frozenset[str], now: float) -> None:
        """The ledger's listener: a flow ended or was cancelled."""
        owner = key[2]
        group = None
        if owner.__class__ is RingRun and key[0] is self.execution:
            owner.own_events += 1
            group = owner.group
        if group is not None:
            f = key[3]
            group.inflight[f] -= 1
            group.events_at[f] += 1
            group.events += 1
            owner.own_inflight[f] -= 1
            owner.own_events_at[f] += 1
            owner.acts[f] = None
        if self.rings:
            self._network_changed(owner, group, now, links, -1)

    def _network_changed(self, owner: VertexRun, group: RingGroup | None, now: float, links: frozenset[str],
                         change: int) -> None:  # fmt: skip
        """A flow started (+1) or ended (-1): rings it shares a link with are not quiet; skips stop here.

        A flow of ``group`` counts for the group's other rings through the group's counters;
        only those of them skipping or with virtual flows are told at once.
        """
        rings = self.rings
        if len(rings) == 1 and rings[0] is owner:  # a ring's own flow, no other ring: the common case
            return
        if group is not None and not self.fragile and not self.loose and len(self.groups) == 1:
            return  # overlapping rings of one group: the counters have it all
        if group is not None and self.fragile:
            for r in [r for r in self._fragile_now(now) if r.group is group and r is not owner]:
                hit = self._hits(r, links)
                if hit:
                    if r.skip is not None:
                        self._interrupt(r, now)
                    if change > 0 and r.virtual_count:
                        for f in hit:
                            if r.virtual_count and f not in r.real and r.rep[f] == f:
                                self._materialize(r, f, now)
        sharing = self.sharing.get(links)
        if sharing is None:  # the groups and loose rings a flow on these links meets (routes recur: cached)
            sharing = self.sharing[links] = (
                tuple(g for g in self.groups.values() if not links.isdisjoint(g.links)),
                tuple(r for r in self.loose if not links.isdisjoint(r.links)),
            )
        for other in sharing[0]:
            if other is not group:
                self.group_crossed(other, now, links, change)
        for r in sharing[1]:
            if r is not owner:
                self._outside(r, now, links, change)

    def group_crossed(self, group: RingGroup, now: float, links: frozenset[str], change: int) -> None:
        """A flow from outside ``group`` started (+1) or ended (-1) on ``links``, which its rings' links meet."""
        for r in list(group.rings):
            self._outside(r, now, links, change)

    def _outside(self, r: RingRun, now: float, links: frozenset[str], change: int) -> None:
        """A flow from outside ``r``'s group started (+1) or ended (-1)."""
        hit = self._hits(r, links)
        if hit:
            r.quiet = False
            if r.skip is not None:
                self._interrupt(r, now)
            for f in hit:
                r.disturbed[f] = True
                r.foreign[f] += change
                if r.foreign[f]:
                    r.busy.add(f)
                else:
                    r.busy.discard(f)
                if change > 0 and r.virtual_count and f not in r.real and r.rep[f] == f:
                    self._materialize(r, f, now)

    # ------------------------------------------------------------------ steps
    @staticmethod
    def _hits(r: RingRun, links: frozenset[str]) -> tuple[int, ...]:
        """Flows of a step of ``r`` that share a link with ``links`` (routes recur: cached)."""
        hit = r.hits.get(links)
        if hit is None:
            found: set[int] = set()
            for link in links:
                found.update(r.flows_on_link.get(link, ()))
            hit = r.hits[links] = tuple(sorted(found))
        return hit

    def set_timer(self, at: float, tag: int, r: RingRun, generation: int) -> None:
        """A driver timer at ``at`` for ``r`` (``tag``: SKIP_END or VIRTUAL_END; stale once its generation is)."""
        self.execution.driver.add_timer(at, (self, tag, r, generation))

    def launch_flow(self, r: RingRun, f: int, size: int, now: float) -> None:
        """Start flow ``f`` of ``r``'s step in SimGrid with ``size`` bytes."""
        src, dst = self.execution.flow_hosts[r.v]
        x = self.execution
        x.flow(src[f], dst[f], size, (x, COMM, r, f), now, r.flow_links[f])  # laid out as ActivityKey (records.py)

    def virtual_duration(self, r: RingRun, f: int, size: int) -> float:
        """How long flow f of a step takes for ``size`` bytes alone on its links (from its measured solo step)."""
        solo, lat = r.solo[f], r.flow_latency[f]
        chunk = self.execution.flow_plans[r.v].size[0]
        return solo if size == chunk else lat + max(0.0, solo - lat) * size / chunk  # type: ignore[operator]

    def _virtual_end(self, r: RingRun, size: int) -> float:
        """When the last flow of the step still virtual arrives (the step's start if none): amortized O(1)."""
        if r.vends_step != r.step_id:
            start, real = r.virtual_start, r.real
            ends = [(start + self.virtual_duration(r, g, size), g) for g in r.reps if g not in real]
            ends.sort(reverse=True)
            r.vends, r.vpos, r.vends_step = ends, 0, r.step_id
        ends, pos, real = r.vends, r.vpos, r.real
        while pos < len(ends) and ends[pos][1] in real:
            pos += 1
        r.vpos = pos
        return max(r.step_start, ends[pos][0]) if pos < len(ends) else r.step_start

    def _materialize(self, r: RingRun, f: int, now: float) -> None:
        """Another flow starts on a virtual flow's links: run what it has left in SimGrid from now on."""
        r.real.add(f)
        r.virtual_count -= 1
        self.mark_fragile(r)
        size = r.virtual_size
        dur = self.virtual_duration(r, f, size)
        elapsed = now - r.virtual_start
        r.step_generation += 1  # the step's virtual end changes
        r.virtual_end = self._virtual_end(r, size)
        if elapsed >= dur:  # it already arrived
            if not r.real_left:  # nothing of the step is in SimGrid: the new virtual end must still come
                self.set_timer(max(r.virtual_end, now), VIRTUAL_END, r, r.step_generation)
            return
        lat = r.flow_latency[f]
        moved = 0.0 if dur <= lat else max(0.0, elapsed - lat) / (dur - lat) * size
        rest = max(1, int(round(size - moved)))
        r.flow_start[f], r.flow_size[f], r.disturbed[f] = now, rest, True
        r.real_left += 1
        result = self.execution.result
        result.memoized_flows -= 1
        result.activities += 1
        self.launch_flow(r, f, rest, now)

    def start_step(self, r: RingRun, now: float, size: int) -> None:
        """Start a step: representatives whose links carry nothing else and whose solo time is known stay virtual."""
        fp = self.execution.flow_plans[r.v]
        n = len(fp)
        r.step_start = r.virtual_start = r.virtual_end = now
        r.virtual_size, r.quiet = size, True
        r.step_generation += 1
        r.step_id += 1
        if self.fragile:  # another ring alone on links this step needs is not alone any more
            for o in [o for o in self._fragile_now(now) if o is not r]:
                hit = self._hits(o, r.links)
                if not hit:
                    continue
                if o.skip is not None:
                    self._interrupt(o, now)  # its skip assumed it had those links to itself
                for g in hit:
                    if o.virtual_count and g not in o.real and o.rep[g] == g:
                        self._materialize(o, g, now)
        group = r.group
        busy = r.busy
        if group is not None:
            busy = busy | self.group_step(group, r, now)
        reps = r.reps
        if r.disjoint:
            real = {f for f in reps if f in busy or f in r.unmeasured}
        else:
            real = set(range(n))
        virtual_count = len(reps) - len(real)
        if virtual_count:
            if size == fp.size[0]:  # a full chunk: each virtual flow takes its solo time; the slowest ends the step
                if r.slowest_first is None:
                    r.slowest_first = sorted((f for f in reps if r.solo[f] is not None), key=lambda f: -r.solo[f])
                for f in r.slowest_first:
                    if f not in real:
                        r.virtual_end = now + r.solo[f]  # type: ignore[operator]
                        break
            else:
                r.virtual_end = max(now + self.virtual_duration(r, f, size) for f in reps if f not in real)
        r.real, r.virtual_count = real, virtual_count
        self.mark_fragile(r)
        result = self.execution.result
        result.memoized_flows += n - len(real)  # virtual representatives and every twin
        r.real_left = len(real)
        result.activities += len(real)
        for f in sorted(real):
            r.flow_start[f], r.flow_size[f], r.disturbed[f] = now, size, f in busy
            if group is not None:
                r.disturb_mark[f] = group.events_at[f] - r.own_events_at[f]
            self.launch_flow(r, f, size, now)
        if not real:
            self.set_timer(r.virtual_end, VIRTUAL_END, r, r.step_generation)

    def group_step(self, group: RingGroup, r: RingRun, now: float) -> set[int]:
        """``r`` of ``group`` starts a step: its quiet mark, and the flows another ring of the group has in flight."""
        r.quiet_mark = group.mark(r)
        return group.others_busy(r)

    def _step_done(self, r: RingRun, now: float) -> None:
        r.real, r.virtual_count = set(), 0
        r.step_generation += 1
        r.steps_done += 1
        last = r.steps_done >= r.steps
        if last and not self.shared_steps.last_steps:
            self.finish_ring(r, now)
            return
        d = now - r.step_start
        group = r.group
        quiet, busy = r.quiet, bool(r.busy)
        if group is not None:
            quiet = quiet and group.mark(r) == r.quiet_mark
            busy = busy or any(group.inflight[f] for f in r.reps)
        if quiet and not busy:  # alone on its links, and nothing else is in flight on them
            self.shared_steps.measured(r, d)  # a full step alone: other vertices of these flows may skip
            if not last:
                self._skip(r, now, d, r.steps - r.steps_done)
                return
        if last:
            self.finish_ring(r, now)
            return
        self.next_step(r, now, d)

    def next_step(self, r: RingRun, now: float, d: float) -> None:
        """A step of ``d`` that does not let ``r`` skip has ended: start the next one (the background part may skip)."""
        self.mark_fragile(r)
        self.start_step(r, now, self.execution.flow_plans[r.v].size[0])

    def _skip(self, r: RingRun, now: float, d: float, left: int) -> None:
        """Skip ``r``'s ``left`` steps of ``d`` each with one timer (a flow on its links interrupts it)."""
        r.skip = (now, d, left)
        r.skip_generation += 1
        self.fragile.add(r)
        self.set_timer(now + left * d, SKIP_END, r, r.skip_generation)

    def _interrupt(self, r: RingRun, now: float) -> None:
        """A flow starts on the links of a skipping ring: keep the whole steps elapsed, resume the current one."""
        since, d, left = r.skip  # type: ignore[misc]
        elapsed = (now - since) / d
        whole = int(elapsed + 1e-9)
        if whole >= left:  # the skip ends at this very instant: let its timer finish the ring
            return
        r.skip = None
        r.skip_generation += 1  # cancels the timer
        r.step_generation += 1
        r.steps_done += whole
        self.mark_fragile(r)
        fp = self.execution.flow_plans[r.v]
        self.execution.result.memoized_flows += whole * len(fp)
        part = max(0.0, elapsed - whole)
        chunk = fp.size[0]
        self.start_step(r, now, max(1, int(round(chunk * (1.0 - part)))))
        r.quiet = False  # a partial step measures nothing
