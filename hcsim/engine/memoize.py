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
        "steps", "steps_done", "real_left", "step_start", "quiet", "skip", "skip_generation", "links",
        "flow_links", "flow_latency", "solo", "flow_start", "flow_size", "disturbed", "real", "virtual_count",
        "virtual_start", "virtual_size", "virtual_end", "step_generation", "disjoint", "flows_on_link", "hits",
        "unmeasured", "slowest_first", "foreign", "busy", "step_id", "vends", "vpos", "vends_step",
    )  # fmt: skip

    def __init__(self, v: int, k: int, start: float, steps: int) -> None:
        super().__init__(v, k, start, 0)
        self.steps, self.steps_done = steps, 0
        self.real_left = 0  # flows of the current step still in SimGrid
        self.step_start, self.quiet = start, True  # quiet: no other flow crossed the ring's links this step
        self.skip: tuple[float, float, int] | None = None  # (since, step duration, steps skipped) while skipping
        self.skip_generation = 0  # a SKIP_END timer of an older generation was cancelled
        self.links: frozenset[str] = frozenset()  # links the ring's flows cross
        # per flow of a step: links, route latency, measured solo duration of a full chunk, start and size
        # when launched, whether another flow crossed its links meanwhile
        self.flow_links: list[frozenset[str]] = []
        self.flow_latency: list[float] = []
        self.solo: list[float | None] = []
        self.flow_start: list[float] = []
        self.flow_size: list[int] = []
        self.disturbed: list[bool] = []
        # flows of the step in SimGrid; the other virtual_count flows are virtual, started at virtual_start
        # with virtual_size bytes, the last of them arriving at virtual_end
        self.real: set[int] = set()
        self.virtual_count, self.virtual_start, self.virtual_size, self.virtual_end = 0, start, 0, start
        self.step_generation = 0  # a VIRTUAL_END timer of an older generation is stale
        self.disjoint = False  # no two flows of a step share a link
        self.flows_on_link: dict[str, list[int]] = {}  # link -> flows of a step that cross it
        self.hits: dict[frozenset[str], tuple[int, ...]] = {}  # a route's links -> flows of a step it shares one with
        self.unmeasured: set[int] = set()  # flows whose solo duration is not measured yet
        self.slowest_first: list[int] | None = None  # flows with a known solo duration (None: stale)
        self.foreign: list[int] = []  # per flow of a step: other flows in flight that share one of its links
        self.busy: set[int] = set()  # flows of a step with foreign > 0
        # the virtual flows' ends of step number step_id, latest first, sorted once per step (vends_step) when
        # the first of them is materialized; vpos: the first that is still virtual. Recomputing the maximum at
        # every materialization cost O(flows) each: quadratic in the ring's size when latency-bound steps
        # materialize flow after flow (256 H100 at 100 us: slower than the exact engine)
        self.step_id, self.vends_step, self.vpos = 0, -1, 0
        self.vends: list[tuple[float, int]] = []


class MemoizedRings:
    """Runs ring collectives step by step, skipping what repeats (see the module docstring)."""

    def __init__(self, execution: Any, exact: Any) -> None:
        self.execution = execution
        self.exact = exact  # for rings of a single rank (no step)
        self.rings: list[RingRun] = []  # in progress
        # link -> the rings in progress whose flows cross it (and their start order): a flow starting or ending
        # looks at these only, not at every ring (LLaMA-3-70B tp8 pp4 on 1024 XPUs: ~23 concurrent rings,
        # nearly all on other links; scanning them all was 40% of the run)
        self.rings_on_link: dict[str, dict[RingRun, int]] = {}
        self.started = 0  # rings launched so far: their start order
        self.sharing: dict[frozenset[str], list[RingRun]] = {}  # _sharing's answers while no ring starts or ends
        # per flow plan (vertices of one collective share it, hcsim.engine.execution): its flows' links and
        # latencies, their union, whether disjoint, flows per link and the hits cache, made once, not per launch
        self.shapes: dict[int, tuple] = {}
        self.routes: dict[tuple[str, str], tuple[frozenset[str], float]] = {}
        self.inflight: dict[Any, frozenset[str]] = {}  # every flow in flight -> its links
        self.inflight_routes: dict[frozenset[str], int] = {}  # links of flows in flight -> how many flows
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
        shape = self.shapes.get(id(fp))
        if shape is None:  # the plan's routes, read-only from here on (the hits cache only grows)
            src, dst = x.flow_hosts[v]
            routes = [self._route(a, b) for a, b in zip(src, dst, strict=True)]
            flow_links = [links for links, _ in routes]
            links = frozenset().union(*flow_links)
            flows_on_link: dict[str, list[int]] = {}
            for f, fl in enumerate(flow_links):
                for link in fl:
                    flows_on_link.setdefault(link, []).append(f)
            disjoint = len(links) == sum(len(fl) for fl in flow_links)
            shape = self.shapes[id(fp)] = (flow_links, [lat for _, lat in routes], links, disjoint, flows_on_link, {})
        r.flow_links, r.flow_latency, r.links, r.disjoint, r.flows_on_link, r.hits = shape
        n = len(r.flow_links)
        r.unmeasured = set(range(n))
        r.foreign = [0] * n
        for links, count in self.inflight_routes.items():  # by route: far fewer than flows
            for f in self._hits(r, links):
                r.foreign[f] += count
        r.busy = {f for f in range(n) if r.foreign[f]}
        r.solo, r.flow_start, r.flow_size, r.disturbed = [None] * n, [0.0] * n, [0] * n, [False] * n
        self.rings.append(r)
        self.started += 1
        for link in r.links:
            self.rings_on_link.setdefault(link, {})[r] = self.started
        self.sharing.clear()
        self._step(r, now, fp.size[0])

    def complete(self, act: Any, key: ActivityKey, now: float) -> None:
        """A flow of a step has ended: measure it if it ran alone; the step ends with its last flow."""
        _, _, r, f = key
        if r.__class__ is not RingRun:  # a ring of one rank, run by the exact strategy
            self.exact.complete(act, key, now)
            return
        if not r.disturbed[f] and r.flow_size[f] == self.execution.flow_plans[r.v].size[0]:
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
        self._ended(r)
        self.execution.finish(r, now)

    # ------------------------------------------------------------------ observing the network
    def flow_started(self, act: Any, key: Any, src: Any, dst: Any, links: Any, now: float) -> None:
        if links is None:
            links = self._route(src, dst)[0]
        self.inflight[act] = links
        routes = self.inflight_routes
        routes[links] = routes.get(links, 0) + 1
        if self.rings:
            self._network_changed(key[2], now, links, 1)  # key: an ActivityKey layout (its run)

    def flow_ended(self, act: Any, key: Any, now: float) -> None:
        links = self.inflight.pop(act)
        routes = self.inflight_routes
        left = routes[links] - 1
        if left:
            routes[links] = left
        else:
            del routes[links]
        if self.rings:
            self._network_changed(key[2], now, links, -1)

    def _sharing(self, links: frozenset[str]) -> list[RingRun]:
        """The rings in progress whose flows cross one of ``links``, in the order they started (cached)."""
        answer = self.sharing.get(links)
        if answer is None:
            on = self.rings_on_link
            found: dict[RingRun, int] = {}
            for link in links:
                rings = on.get(link)
                if rings:
                    found.update(rings)
            answer = self.sharing[links] = sorted(found, key=found.__getitem__) if len(found) > 1 else list(found)
        return answer

    def _ended(self, r: RingRun) -> None:
        """``r`` is no longer in progress."""
        self.rings.remove(r)
        self.sharing.clear()
        on = self.rings_on_link
        for link in r.links:
            rings = on[link]
            del rings[r]
            if not rings:
                del on[link]

    def _network_changed(self, owner: VertexRun, now: float, links: frozenset[str], change: int) -> None:
        """A flow started (+1) or ended (-1): rings it shares a link with are not quiet; skips stop here."""
        rings = self.rings
        if len(rings) == 1 and rings[0] is owner:  # a ring's own flow, no other ring: the common case
            return
        for r in self._sharing(links):
            if r is owner:
                continue
            hit = r.hits.get(links)  # self._hits, inlined: ~10 rings share each flow's links here
            if hit is None:
                hit = self._hits(r, links)
            if hit:
                r.quiet = False
                if r.skip is not None:
                    self._interrupt(r, now)
                disturbed, foreign, busy = r.disturbed, r.foreign, r.busy  # not replaced while the ring runs
                for f in hit:
                    disturbed[f] = True
                    count = foreign[f] = foreign[f] + change
                    if count:
                        busy.add(f)
                    else:
                        busy.discard(f)
                    if change > 0 and r.virtual_count and f not in r.real:
                        self._materialize(r, f, now)

    # ------------------------------------------------------------------ steps
    def _route(self, src: Any, dst: Any) -> tuple[frozenset[str], float]:
        """Links (names; each direction of a duplex link has its own) and latency of a route, cached."""
        key = (src.name, dst.name)
        hit = self.routes.get(key)
        if hit is None:
            links, latency = src.route_to(dst)
            hit = self.routes[key] = (frozenset(link.name for link in links), latency)
        return hit

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
        n = len(fp)
        r.step_start = r.virtual_start = r.virtual_end = now
        r.virtual_size, r.quiet = size, True
        r.step_generation += 1
        r.step_id += 1
        for o in self._sharing(r.links):  # another ring alone on links this step needs is not alone any more
            if o is r:
                continue
            hit = self._hits(o, r.links)
            if not hit:
                continue
            if o.skip is not None:
                self._interrupt(o, now)  # its skip assumed it had those links to itself
            for g in hit:
                if o.virtual_count and g not in o.real:
                    self._materialize(o, g, now)
        busy = r.busy
        real = busy | r.unmeasured if r.disjoint else set(range(n))
        virtual_count = n - len(real)
        if virtual_count:
            if size == fp.size[0]:  # a full chunk: each virtual flow takes its solo time; the slowest ends the step
                if r.slowest_first is None:
                    r.slowest_first = sorted((f for f in range(n) if r.solo[f] is not None), key=lambda f: -r.solo[f])
                for f in r.slowest_first:
                    if f not in real:
                        r.virtual_end = now + r.solo[f]  # type: ignore[operator]
                        break
            else:
                r.virtual_end = max(now + self._virtual_duration(r, f, size) for f in range(n) if f not in real)
        r.real, r.virtual_count = real, virtual_count
        result = self.execution.result
        result.memoized_flows += virtual_count
        r.real_left = len(real)
        result.activities += len(real)
        for f in sorted(real):
            r.flow_start[f], r.flow_size[f], r.disturbed[f] = now, size, f in busy
            self._launch_flow(r, f, size, now)
        if not real:
            self._timer(r.virtual_end, VIRTUAL_END, r, r.step_generation)

    def _step_done(self, r: RingRun, now: float) -> None:
        r.real, r.virtual_count = set(), 0
        r.step_generation += 1
        r.steps_done += 1
        if r.steps_done >= r.steps:
            self._ended(r)
            self.execution.finish(r, now)
            return
        d = now - r.step_start
        if r.quiet and not r.busy:  # alone on its links, and nothing else is in flight on them
            left = r.steps - r.steps_done
            r.skip = (now, d, left)
            r.skip_generation += 1
            self._timer(now + left * d, SKIP_END, r, r.skip_generation)
            return
        self._step(r, now, self.execution.flow_plans[r.v].size[0])

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
