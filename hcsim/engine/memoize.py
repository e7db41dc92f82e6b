"""Memoized ring steps: a fast path for ring collectives, behind the strategy seam.

With ``memoize=True`` an :class:`~hcsim.engine.execution.Execution` runs ring
collectives (allreduce, reduce-scatter, allgather) with :class:`MemoizedRings` instead
of flow by flow. A ring runs *step-synchronously*: all N flows of a step start
together, and the next step starts when the last one has ended. On top of that:

* **Skipping.** A step that ran while no other flow crossed any of the ring's links
  (none in flight, none starting or ending) is the ring alone on its links: every later
  step takes the same time d, and leaving the ring's flows out of SimGrid changes no
  other flow's rate. So the remaining r steps are skipped with one timer of r*d. A flow
  that shares a link with the ring starting meanwhile *interrupts* the skip: the whole
  steps elapsed are kept and the current step resumes with the bytes it had left, in
  SimGrid again. (Skipping while another flow shares the ring's links would be wrong
  both ways: the ring's absence would speed that flow up.)
* **Virtual flows.** Within a step, a flow whose links carry nothing else and whose
  solo duration has been measured (a full chunk, undisturbed) stays *virtual*: it takes
  that duration and touches no one. If another flow starts on its links it is
  *materialized*: launched with the bytes it has left, paying its latency again.

What it approximates (the contract; numbers in ``docs/fast-paths.md``, held by
``tests/test_fast.py`` within 1% at 8..128 XPUs and at the sweeps' extremes): the exact
ring is pipelined, ranks drift by amounts a step-synchronous ring does not have; and a
materialized flow pays its latency twice. Both are measured, not bounded in closed
form: 3e-6 on one rack, -0.36% at 64 XPUs in four racks, -0.55% at 256.

**Families.** Rings whose steps have the same flows (hosts, hence routes: the gradient
buckets of one data-parallel group) see the network alike, so what a flow start or end
does to them is kept once per :class:`RingFamily`: per flow of a step, the flows in
flight sharing a link with it and the starts and ends that did; each ring subtracts its
own. A start or end thus costs O(families) plus the rings that can act on it (skipping,
or with virtual flows still under way), not O(rings): on the non-coherent system 26
gradient rings overlap at 1024 XPUs, and updating each of them on every flow of every
other was a third of the run.

It needs to see every flow on the network, so it observes the driver
(:class:`~hcsim.engine.driver.FlowObserver`) rather than trusting its callers: every
flow started through the driver, of this execution or any other sharing it, counts.
"""

from __future__ import annotations

from typing import Any

from hcsim.collectives import FlowPlan, TopologyView, algorithm, build_plan
from hcsim.engine.records import COMM, ActivityKey, VertexRun

__all__ = ["MemoizedRings", "RingRun"]

# timer tags: a skip ends; the virtual flows of a step have all arrived
SKIP_END, VIRTUAL_END = 0, 1


class RingRun(VertexRun):
    """A ring collective run step by step, with its skipping state."""

    __slots__ = (
        "steps", "steps_done", "real_left", "step_start", "quiet", "skip", "skip_generation", "family",
        "flow_links", "flow_latency", "solo", "flow_start", "flow_size", "disturbed", "real", "virtual_count",
        "virtual_start", "virtual_size", "virtual_end", "step_generation", "unmeasured", "slowest_first", "step_id",
        "vends", "vpos", "vends_step", "virtual_longest", "order", "own_events", "own_touched", "seen", "quiet_since",
        "special", "chunk",
    )  # fmt: skip

    def __init__(self, v: int, k: int, start: float, steps: int) -> None:
        super().__init__(v, k, start, 0)
        self.steps, self.steps_done = steps, 0
        self.chunk = 0  # bytes of a flow of a full step
        self.real_left = 0  # flows of the current step still in SimGrid
        # quiet: no other flow crossed the ring's links this step, unless the family's count of starts and ends
        # on them (less the ring's own) moved from quiet_since
        self.step_start, self.quiet, self.quiet_since = start, True, 0
        self.skip: tuple[float, float, int] | None = None  # (since, step duration, steps skipped) while skipping
        self.skip_generation = 0  # a SKIP_END timer of an older generation was cancelled
        self.family: RingFamily | None = None  # the rings with the same flows; links the ring's flows cross
        self.order = 0  # launch order: rings act on a flow start or end in this order
        # per flow of a step: links, route latency, measured solo duration of a full chunk, start and size
        # when launched, whether another flow crossed its links meanwhile (disturbed when launched, or the
        # family's starts and ends on it, less the ring's own, moved from seen)
        self.flow_links: list[frozenset[str]] = []
        self.flow_latency: list[float] = []
        self.solo: list[float | None] = []
        self.flow_start: list[float] = []
        self.flow_size: list[int] = []
        self.disturbed: list[bool] = []
        self.seen: list[int] = []
        self.own_events: list[int] = []  # per flow of a step: starts and ends of the ring's own flows on its links
        self.own_touched = 0  # starts and ends of the ring's own flows
        self.special = False  # in its family's special: skipping, or virtual flows may still need materializing
        # flows of the step in SimGrid; the other virtual_count flows are virtual, started at virtual_start
        # with virtual_size bytes, the last of them arriving at virtual_end
        self.real: set[int] = set()
        self.virtual_count, self.virtual_start, self.virtual_size, self.virtual_end = 0, start, 0, start
        # an upper bound of the virtual flows' durations (exact when the step starts): once now - virtual_start
        # reaches it, every virtual flow of the step has arrived (see MemoizedRings._arrived)
        self.virtual_longest = 0.0
        self.step_generation = 0  # a VIRTUAL_END timer of an older generation is stale
        self.unmeasured: set[int] = set()  # flows whose solo duration is not measured yet
        self.slowest_first: list[int] | None = None  # flows with a known solo duration (None: stale)
        # the virtual flows' ends of step number step_id, latest first, sorted once per step (vends_step) when
        # the first of them is materialized; vpos: the first that is still virtual. Recomputing the maximum at
        # every materialization cost O(flows) each: quadratic in the ring's size when latency-bound steps
        # materialize flow after flow (256 H100 at 100 us: slower than the exact engine)
        self.step_id, self.vends_step, self.vpos = 0, -1, 0
        self.vends: list[tuple[float, int]] = []


def _launch_order(r: RingRun) -> int:
    return r.order


class RingFamily:
    """Rings in progress whose steps have the same flows, and what the network does on their links.

    Counted once for all of them, per flow f of a step: ``inflight[f]``, the flows in
    flight (any owner) sharing a link with f (``busy``: the f with one); ``events[f]``,
    the flow starts and ends that shared a link with f; ``touched``, those that shared a
    link with any flow. A ring's own flows count here too: each ring keeps its own
    starts and ends (``RingRun.own_events``, ``own_touched``) and subtracts them; its own
    flows in flight need no subtracting, because busy is read only when the ring has
    none (a step starts or ends). A family of one ring does not count that ring's flows
    at all (they would cancel): ``inflight`` is recounted whenever the family grows from
    one ring or shrinks to one (:meth:`MemoizedRings._recount`).
    """

    __slots__ = (
        "key", "links", "disjoint", "flows_on_link", "hits", "inflight", "busy", "events", "touched", "rings",
        "special",
    )  # fmt: skip

    def __init__(self, key: tuple[frozenset[str], ...], links: frozenset[str]) -> None:
        self.key, self.links = key, links  # the flows' links, and all of them
        self.disjoint = len(links) == sum(len(fl) for fl in key)  # no two flows of a step share a link
        self.flows_on_link: dict[str, list[int]] = {}  # link -> flows of a step that cross it
        for f, fl in enumerate(key):
            for link in fl:
                self.flows_on_link.setdefault(link, []).append(f)
        self.hits: dict[frozenset[str], tuple[int, ...]] = {}  # a route's links -> flows it shares one with
        self.inflight, self.events = [0] * len(key), [0] * len(key)
        self.busy: set[int] = set()
        self.touched = 0
        self.rings = 0  # members in progress
        # members that may act on a flow start or end (skipping, or with virtual flows not all arrived), in
        # launch order; the others only count, and the family counts for them. A tuple: replaced, never
        # changed, so safe to walk while acting
        self.special: tuple[RingRun, ...] = ()

    def hit(self, links: frozenset[str]) -> tuple[int, ...]:
        """Flows of a step that share a link with ``links`` (routes recur: cached)."""
        hit = self.hits.get(links)
        if hit is None:
            found: set[int] = set()
            for link in links:
                found.update(self.flows_on_link.get(link, ()))
            hit = self.hits[links] = tuple(sorted(found))
        return hit


class MemoizedRings:
    """Runs ring collectives step by step, skipping what repeats (see the module docstring)."""

    def __init__(self, execution: Any, exact: Any) -> None:
        self.execution = execution
        self.exact = exact  # for rings of a single rank (no step)
        self.rings: list[RingRun] = []  # in progress
        self.routes: dict[tuple[str, str], tuple[frozenset[str], float]] = {}
        self.inflight: dict[Any, tuple[frozenset[str], Any]] = {}  # every flow in flight -> its links, its owner
        self.families: dict[tuple[frozenset[str], ...], RingFamily] = {}  # of the rings in progress
        self.family_list: list[RingFamily] = []
        self.interned: dict[frozenset[str], frozenset[str]] = {}  # one object per link set: dict keys compare by id
        self.launched = 0
        execution.driver.observe(self)

    # ------------------------------------------------------------------ the strategy protocol
    def handles(self, data: dict[str, Any]) -> bool:
        return data["kind"] != "p2p" and algorithm(data["kind"], data["algorithm"]).ring

    def plan(self, data: dict[str, Any], view: TopologyView) -> FlowPlan:
        d = data
        return build_plan(d["kind"], d["algorithm"], d["scope"], d["bytes"], view, group=d.get("group"), compact=True)

    def launch(self, v: int, k: int, now: float) -> None:
        x = self.execution
        fp = x.flow_plans[v]
        if fp.steps == 0:
            self.exact.launch(v, k, now)
            return
        r = RingRun(v, k, now, fp.steps)
        src, dst = x.flow_hosts[v]
        routes = [self._route(a, b) for a, b in zip(src, dst, strict=True)]
        r.flow_links = [links for links, _ in routes]
        r.flow_latency = [lat for _, lat in routes]
        key = tuple(r.flow_links)
        fam = self.families.get(key)
        if fam is None:
            links = frozenset().union(*r.flow_links)
            fam = self.families[key] = RingFamily(key, self.interned.setdefault(links, links))
            self.family_list.append(fam)
        fam.rings += 1
        r.family = fam
        if fam.rings <= 2:  # a new family (it counts no flow of r), or its one ring's flows count from now on
            self._recount(fam, r)
        n = len(routes)
        r.unmeasured = set(range(n))
        r.solo, r.flow_start, r.flow_size, r.disturbed = [None] * n, [0.0] * n, [0] * n, [False] * n
        r.seen, r.own_events = [0] * n, [0] * n
        self.launched += 1
        r.order, r.chunk = self.launched, fp.size[0]
        self.rings.append(r)
        self._step(r, now, fp.size[0])

    def complete(self, act: Any, key: ActivityKey, now: float) -> None:
        """A flow of a step has ended: measure it if it ran alone; the step ends with its last flow."""
        _, _, r, f = key
        if r.__class__ is not RingRun:  # a ring of one rank, run by the exact strategy
            self.exact.complete(act, key, now)
            return
        if (
            not r.disturbed[f]
            and r.family.events[f] - r.own_events[f] == r.seen[f]  # type: ignore[union-attr]
            and r.flow_size[f] == r.chunk
        ):
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
                self._timer(r.virtual_end, VIRTUAL_END, r, r.step_generation)

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
        self._finish(r, now)

    # ------------------------------------------------------------------ observing the network
    def flow_started(self, act: Any, key: Any, src: Any, dst: Any, links: Any, now: float) -> None:
        if links is None:
            links = self._route(src, dst)[0]
        self.inflight[act] = (links, key[2])  # key: an ActivityKey layout (its run)
        if self.rings:
            self._network_changed(key[2], now, links, 1)

    def flow_ended(self, act: Any, key: Any, now: float) -> None:
        links, _ = self.inflight.pop(act)
        if self.rings:
            self._network_changed(key[2], now, links, -1)

    def _network_changed(self, owner: VertexRun, now: float, links: frozenset[str], change: int) -> None:
        """A flow started (+1) or ended (-1): skips on its links stop, virtual flows there launch; families count it.

        The rings that act come first, as when every ring counted for itself in launch order
        and acted before counting: a skip interrupted here restarts from the network as it
        was before this start or end.
        """
        own = owner.family if owner.__class__ is RingRun else None  # type: ignore[attr-defined]
        families = self.family_list
        if len(families) == 1:  # the common case (a data-parallel group's buckets): no list, no merge
            fam = families[0]
            if fam is own and fam.rings == 1:  # a ring's own flow, alone in its family: nothing to count or do
                return
            hit = fam.hits.get(links)
            if hit is None:
                hit = fam.hit(links)
            if hit:
                if fam.special:
                    special = self._specials(fam, now)
                    if special:
                        self._act(special, owner, now, links, change > 0)
                self._count(fam, hit, owner if fam is own else None, change)
            return
        hits: list[tuple[RingFamily, tuple[int, ...]]] = []
        acting: tuple[RingRun, ...] = ()
        for fam in families:
            if fam is own and fam.rings == 1:
                continue
            hit = fam.hits.get(links)
            if hit is None:
                hit = fam.hit(links)
            if hit:
                hits.append((fam, hit))
                if fam.special:
                    special = self._specials(fam, now)
                    if special:
                        acting = tuple(sorted((*acting, *special), key=_launch_order)) if acting else special
        if acting:
            self._act(acting, owner, now, links, change > 0)
        for fam, hit in hits:
            self._count(fam, hit, owner if fam is own else None, change)

    @staticmethod
    def _count(fam: RingFamily, hit: tuple[int, ...], owner: Any, change: int) -> None:
        """Count a flow start (+1) or end (-1) on flows ``hit`` of the family (``owner``: its ring, if a member)."""
        inflight, events = fam.inflight, fam.events
        for f in hit:
            c = inflight[f] = inflight[f] + change
            events[f] += 1
            if c == 0:
                fam.busy.discard(f)
            elif c == 1 and change > 0:
                fam.busy.add(f)
        fam.touched += 1
        if owner is not None:
            counts = owner.own_events
            for f in hit:
                counts[f] += 1
            owner.own_touched += 1

    def _recount(self, fam: RingFamily, alone: RingRun | None) -> None:
        """Count the flows in flight on the family's links anew, leaving out those of ``alone``, its one ring."""
        inflight = fam.inflight = [0] * len(fam.key)
        single = alone if fam.rings == 1 else None
        for links, owner in self.inflight.values():
            if owner is not single:
                for f in fam.hit(links):
                    inflight[f] += 1
        fam.busy = {f for f, c in enumerate(inflight) if c}

    def _act(self, acting: tuple[RingRun, ...], owner: Any, now: float, links: frozenset[str], started: bool) -> None:
        """The special rings that ``links`` hit, in launch order: a skip stops; a start launches virtual flows."""
        for r in acting:
            if r is owner:
                continue
            hit = r.family.hit(links)  # type: ignore[union-attr]
            if r.skip is not None:
                self._interrupt(r, now)
            if started:
                for f in hit:
                    if r.virtual_count and f not in r.real and not self._arrived(r, now):
                        self._materialize(r, f, now)

    def _acting(self, links: frozenset[str], now: float, alone: RingRun) -> tuple[RingRun, ...]:
        """The special rings that ``links`` hit but ``alone``, in launch order (a family's members share their hits)."""
        found: tuple[RingRun, ...] = ()
        for fam in self.family_list:
            if not fam.special or (fam.rings == 1 and fam.special[0] is alone):
                continue
            hit = fam.hits.get(links)
            if hit is None:
                hit = fam.hit(links)
            if hit:
                special = self._specials(fam, now)
                if special:
                    found = tuple(sorted((*found, *special), key=_launch_order)) if found else special
        return found

    def _specials(self, fam: RingFamily, now: float) -> tuple[RingRun, ...]:
        """The family's rings that may act on a flow start or end, in launch order; drops those that cannot any more.

        A ring stepping whose virtual flows have all arrived (:meth:`_arrived`) stays so until
        its step ends, and one without virtual flows gets none before its next step.
        """
        special, arrived = fam.special, self._arrived
        for r in special:
            if r.skip is None and (not r.virtual_count or arrived(r, now)):
                break
        else:
            return special
        keep = []
        for r in special:
            if r.skip is not None or (r.virtual_count and not arrived(r, now)):
                keep.append(r)
            else:
                r.special = False
        fam.special = tuple(keep)
        return fam.special

    @staticmethod
    def _make_special(r: RingRun) -> None:
        if not r.special:
            r.special = True
            fam = r.family
            special = fam.special  # type: ignore[union-attr]
            i = len(special)
            while i and special[i - 1].order > r.order:
                i -= 1
            fam.special = (*special[:i], r, *special[i:])  # type: ignore[union-attr]

    # ------------------------------------------------------------------ steps
    def _route(self, src: Any, dst: Any) -> tuple[frozenset[str], float]:
        """Links (names; each direction of a duplex link has its own) and latency of a route, cached."""
        key = (src.name, dst.name)
        hit = self.routes.get(key)
        if hit is None:
            links, latency = src.route_to(dst)
            hit = self.routes[key] = (frozenset(link.name for link in links), latency)
        return hit

    def _timer(self, at: float, tag: int, r: RingRun, generation: int) -> None:
        self.execution.driver.add_timer(at, (self, tag, r, generation))

    def _launch_flow(self, r: RingRun, f: int, size: int, now: float) -> None:
        src, dst = self.execution.flow_hosts[r.v]
        x = self.execution
        x.flow(src[f], dst[f], size, ActivityKey(x, COMM, r, f), now, r.flow_links[f])

    def _virtual_duration(self, r: RingRun, f: int, size: int) -> float:
        """How long flow f of a step takes for ``size`` bytes alone on its links (from its measured solo step)."""
        solo, lat = r.solo[f], r.flow_latency[f]
        chunk = self.execution.flow_plans[r.v].size[0]
        return solo if size == chunk else lat + max(0.0, solo - lat) * size / chunk  # type: ignore[operator]

    def _virtual_end(self, r: RingRun, size: int) -> float:
        """When the last flow of the step still virtual arrives (the step's start if none): amortized O(1)."""
        if r.vends_step != r.step_id:
            start, real = r.virtual_start, r.real
            ends = [(start + self._virtual_duration(r, g, size), g) for g in range(len(r.flow_links)) if g not in real]
            ends.sort(reverse=True)
            r.vends, r.vpos, r.vends_step = ends, 0, r.step_id
        ends, pos, real = r.vends, r.vpos, r.real
        while pos < len(ends) and ends[pos][1] in real:
            pos += 1
        r.vpos = pos
        return max(r.step_start, ends[pos][0]) if pos < len(ends) else r.step_start

    @staticmethod
    def _arrived(r: RingRun, now: float) -> bool:
        """Every virtual flow of the step has arrived, its end has passed, and flows of it are still in SimGrid.

        Materializing a flow then launches nothing, and it changes nothing observable: while
        flows of the step are in SimGrid (``real_left``) no timer of the step is pending (an
        older one is stale), every later materialization in the step is of an arrived flow
        too, and when the last of them ends the step is over whatever the virtual end
        (``now >= virtual_end`` already holds, and materializing only lowers it). So it is
        skipped: with many rings on the same links (the non-coherent system's gradient
        buckets pile up, 26 at once at 1024 XPUs) each step used to materialize, one by one,
        the arrived virtual flows of every other ring (2.3 million calls per iteration).
        """
        return r.real_left > 0 and now >= r.virtual_end and now - r.virtual_start >= r.virtual_longest

    def _materialize(self, r: RingRun, f: int, now: float) -> None:
        """Another flow starts on a virtual flow's links: run what it has left in SimGrid from now on."""
        r.real.add(f)
        r.virtual_count -= 1
        size = r.virtual_size
        dur = self._virtual_duration(r, f, size)
        elapsed = now - r.virtual_start
        r.step_generation += 1  # the step's virtual end changes
        r.virtual_end = self._virtual_end(r, size)
        if elapsed >= dur:  # it already arrived
            if not r.real_left:  # nothing of the step is in SimGrid: the new virtual end must still come
                self._timer(max(r.virtual_end, now), VIRTUAL_END, r, r.step_generation)
            return
        lat = r.flow_latency[f]
        moved = 0.0 if dur <= lat else max(0.0, elapsed - lat) / (dur - lat) * size
        rest = max(1, int(round(size - moved)))
        r.flow_start[f], r.flow_size[f], r.disturbed[f] = now, rest, True
        r.real_left += 1
        result = self.execution.result
        result.memoized_flows -= 1
        result.activities += 1
        self._launch_flow(r, f, rest, now)

    def _step(self, r: RingRun, now: float, size: int) -> None:
        """Start a step: flows whose links carry nothing else and whose solo time is known stay virtual."""
        fp = self.execution.flow_plans[r.v]
        n = len(r.flow_links)
        fam = r.family
        r.step_start = r.virtual_start = r.virtual_end = now
        r.virtual_size, r.quiet = size, True
        r.quiet_since = fam.touched - r.own_touched  # type: ignore[union-attr]
        r.step_generation += 1
        r.step_id += 1
        # another ring alone on links this step needs is not alone any more
        for o in self._acting(fam.links, now, r):  # type: ignore[union-attr]
            if o is not r:
                hit = o.family.hit(fam.links)  # type: ignore[union-attr]
                if o.skip is not None:
                    self._interrupt(o, now)  # its skip assumed it had those links to itself
                if o.virtual_count and not self._arrived(o, now):
                    for g in hit:
                        if o.virtual_count and g not in o.real:
                            self._materialize(o, g, now)
        busy = set(fam.busy)  # type: ignore[union-attr]  # the ring has no flow in flight: all are others'
        real = busy | r.unmeasured if fam.disjoint else set(range(n))  # type: ignore[union-attr]
        virtual_count = n - len(real)
        if virtual_count:
            if size == fp.size[0]:  # a full chunk: each virtual flow takes its solo time; the slowest ends the step
                if r.slowest_first is None:
                    r.slowest_first = sorted((f for f in range(n) if r.solo[f] is not None), key=lambda f: -r.solo[f])
                for f in r.slowest_first:
                    if f not in real:
                        r.virtual_longest = r.solo[f]  # type: ignore[assignment]
                        r.virtual_end = now + r.virtual_longest
                        break
            else:
                r.virtual_longest = max(self._virtual_duration(r, f, size) for f in range(n) if f not in real)
                r.virtual_end = max(now + self._virtual_duration(r, f, size) for f in range(n) if f not in real)
        r.real, r.virtual_count = real, virtual_count
        result = self.execution.result
        result.memoized_flows += virtual_count
        r.real_left = len(real)
        result.activities += len(real)
        if virtual_count:
            self._make_special(r)
        events, own = fam.events, r.own_events  # type: ignore[union-attr]
        x = self.execution
        src, dst = x.flow_hosts[r.v]
        sendto, add_flow, links = x._sendto, x._add_flow, r.flow_links
        for f in sorted(real):  # _launch_flow and Execution.flow, inline
            r.flow_start[f], r.flow_size[f], r.disturbed[f] = now, size, f in busy
            r.seen[f] = events[f] - own[f]
            a, b = src[f], dst[f]
            add_flow(sendto(a, b, size), ActivityKey(x, COMM, r, f), a, b, links[f], now)
        if not real:
            self._timer(r.virtual_end, VIRTUAL_END, r, r.step_generation)

    def _step_done(self, r: RingRun, now: float) -> None:
        r.real, r.virtual_count = set(), 0
        r.step_generation += 1
        r.steps_done += 1
        if r.steps_done >= r.steps:
            self._finish(r, now)
            return
        d = now - r.step_start
        fam = r.family
        quiet = r.quiet and fam.touched - r.own_touched == r.quiet_since  # type: ignore[union-attr]
        if quiet and not fam.busy:  # type: ignore[union-attr]  # alone on its links, nothing else in flight there
            left = r.steps - r.steps_done
            r.skip = (now, d, left)
            r.skip_generation += 1
            self._make_special(r)
            self._timer(now + left * d, SKIP_END, r, r.skip_generation)
            return
        self._step(r, now, r.chunk)

    def _finish(self, r: RingRun, now: float) -> None:
        """The ring's last step is over: it leaves (and its family, if it was the last of it)."""
        self.rings.remove(r)
        fam = r.family
        if r.special:
            r.special = False
            fam.special = tuple(o for o in fam.special if o is not r)  # type: ignore[union-attr]
        fam.rings -= 1  # type: ignore[union-attr]
        if not fam.rings:  # type: ignore[union-attr]
            del self.families[fam.key]  # type: ignore[union-attr]
            self.family_list.remove(fam)  # type: ignore[arg-type]
        elif fam.rings == 1:  # type: ignore[union-attr]  # its one ring's flows stop counting
            self._recount(fam, next(o for o in self.rings if o.family is fam))  # type: ignore[arg-type]
        self.execution.finish(r, now)

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
        fp = self.execution.flow_plans[r.v]
        self.execution.result.memoized_flows += whole * len(fp)
        part = max(0.0, elapsed - whole)
        chunk = fp.size[0]
        self._step(r, now, max(1, int(round(chunk * (1.0 - part)))))
        r.quiet = False  # a partial step measures nothing
