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

Overlapping rings
-----------------
Data-parallel training starts one gradient allreduce per bucket as the backward pass
reaches it; when a ring takes longer than the compute between buckets, rings pile up
on the same links (LLaMA2-13B on the 1024-XPU fat tree: up to 37 rings at once, each
of 2046 steps), none is ever alone, and nothing above applies. Three things keep that
case cheap, and none changes what SimGrid computes:

* **Group counters.** Rings of one *layout* (the same flows between the same hosts)
  whose flows cross pairwise disjoint links form a :class:`RingGroup`. Flow f of one
  ring then shares links with flow f of the others and with no other of their flows,
  so everything the group's rings do to each other is a count per flow index: flows in
  flight, starts and ends. A ring reads the others' part as the group's count minus
  its own (``busy``: others in flight on flow f; ``quiet``: no start or end of another
  since its step began; ``disturbed``: none during flow f's flight), where it used to
  be told of each of the others' flows one ring at a time (O(rings) per flow). Only
  rings skipping or holding virtual flows, which must act at once, are still told
  (``fragile``). The decisions are the same, so are the results: fat trees k = 4, 8
  and 16 give the previous code's iteration times and flow counts to the last digit.
* **Twins.** Flows f and g of a group's layout are *twins* if their routes have the same
  latency and the same links' attributes (bandwidth, latency, sharing policy, as a
  multiset); a class of twins is *in force* (:meth:`MemoizedRings._form_twins`) once
  (1) no flow from outside the group is in flight on its links, (2) none can start there
  any more: every vertex of the execution whose flows may cross them (remote-memory
  flows of compute vertices, flows of communication vertices run by another strategy or
  of another ring layout, all read from the plans before the first ring starts) has
  made its last start and, for a communication vertex, finished, and (3) in every ring
  of the group each twin stands where its representative does (both in SimGrid with the
  same start, size and bytes left, both virtual with the same arrival, or both over).
  From then on the links of f carry exactly the f-flows of the group's rings, and those
  of g the g-flows; the two sets are in the same state by (3), and start at the same
  instants (their rings' step starts) with the same sizes. Every link of f's route
  carries the same flows, so a flow's share is the same function of the number of flows
  in flight (and of the route's attributes, equal for f and g) on every one of them: the
  two subsystems are isomorphic and get the same inputs, so every g-flow ends when its
  ring's f-flow ends, whatever the network model (the platform must be stationary, as
  the skipping above already assumes). So only the first flow of each class (its
  *representative*) runs in SimGrid; the twins in flight when the class forms are
  cancelled, and all are counted in ``memoized_flows``; a step still ends with its last
  representative, which is when its last flow would have ended. Flows of one signature
  whose links no other flow can ever cross are a class that forms with its group; those
  that other flows may cross are a second class with the same representative (or one of
  their own if none is uncrossed), so a copy on one server does not keep the others'
  flows from being twins. On the folded fat tree a ring's 8 flows are 3 classes (under
  one edge switch, edge to edge, pod to pod): 3 flows per step instead of 8, the same
  iteration time to the last digit (``tests/fast/test_memoize_overlap.py`` checks 1e-12
  against twins off). A class that host-memory copies may cross forms
  *late*, when the last copy on its links has ended: on the non-coherent system the
  server-to-server and rack-to-rack ring flows share PCIe links with the copies of the
  backward pass, and LLaMA2-13B at 1024 XPUs (folded to 4 servers in 2 racks) forms
  flows 7 = 23 and 15 = 31 at 7.014 s of an 11.06 s iteration, once the backward pass is
  over: the 40k ring steps left run 3 flows instead of 5 (391k -> 310k activities, the
  same iteration time to the last digit). Whether (3) holds is checked, not assumed:
  there the whole folded system is symmetric under swapping its two racks, and SimGrid
  computes the mirror flows bit for bit alike (measured on all 81k steps); a copy on one
  side only leaves the twins apart for good (the lag of the slowed twin is handed from
  ring to ring), and the class stays dormant (forming it anyway, g adopting f's state,
  was -6.7e-4 on a toy of two rings: ``tests/fast/test_memoize_late_twins.py``). Late
  classes form in single-iteration runs only: with several iterations the next one's
  copies are still to come in all but the last, and forming there would make the last
  iteration count fewer SimGrid activities than the others, which iteration memoization
  (``repeat``) copies from a simulated one (the dates would agree, the counts not).
  ``late_twins = False`` keeps only the classes no flow can ever cross (the rule before).
  Should a flow cross a twin's links anyway (none of this execution can; a flow of
  another execution on the same driver could), the group's twins become flows of their
  own on the spot: a twin of a representative in flight is launched with the bytes its
  representative has left, paying its latency again like a materialized flow; the class
  may form again by (1)-(3).
* **Arrived virtual flows.** A ring holding virtual flows is *fragile*: it hears of every
  flow on its links at once, to materialize them. Once its last virtual flow has arrived
  it leaves that set until its next step: the intra-server flows of LLaMA2-13B's rings
  arrive within a microsecond of steps of tens, and 26 overlapping rings used to stay
  fragile, each told of every flow, for the rest of every step. Nothing else changes
  (materializing an arrived flow launches nothing).

Why not skip by the *joint* state of the rings (skip a stretch when the set of steps in
progress repeats)? It does not repeat: measured on the 1024-XPU fat tree, five
overlapping rings settle into constant step intervals that differ from ring to ring
(496.139 us against 495.294 us), so their relative phases drift; with thirty rings
every ring's interval moves by nanoseconds from one step to the next.

Background flows
----------------
A gradient ring is seldom alone: the backward pass streams weights from remote memory
while it runs, and those flows share the ring's links for hundreds of its steps
(LLaMA2-13B on 1024 CXL XPUs: 39.3k of the ring steps ran with a memory flow on the
ring's links and no flow starting or ending anywhere; 818 saw one start or end). Such
steps repeat as well, memory flows included. Suppose a full step ran while

* no flow other than the ring's own started or ended anywhere,
* the ring was the only ring in progress and every flow in flight was the ring's or a
  remote-memory flow of a compute vertex, and
* every memory flow of the ring's *component* (the flows linked to the ring's links
  through shared links, transitively) was past its latency phase when the step started.

Then the next step starts from the same state but for the memory flows' bytes left,
which max-min sharing does not look at: it takes the same time d, and every memory flow
moves the same bytes as in the step just measured (read from SimGrid at both ends).
So the component is *frozen*: its memory flows are suspended in SimGrid (no flow
outside the component shares a link with it, so no other rate changes) and the ring
sleeps for m whole steps, the most during which every memory flow keeps bytes to move.
The m-th step's end, or any flow starting or ending anywhere, *thaws* it: the whole
steps elapsed are kept (within a step, bytes are taken to move at a constant rate, as
an interrupted skip assumes), and each memory flow is relaunched with its bytes left,
less what it would have moved at its measured rate during the latency it pays again.
That compensation is exact to first order only: against memoize without background
skips (``MemoizedRings.background = False``) 1.4e-6 on a ring beside three loads at
the paper's settings, 3.5e-3 at 200 us, where a relaunch's latency is as long as a step;
+4.4e-6 on LLaMA2-13B at 1024 CXL XPUs (226,500 -> 75,118 activities; a relaunched memory
flow counts once, as a materialized flow does). Both background skips and twins rest on
SimGrid's raw model without cross-traffic (a flow's latency phase is its route's latency,
and it loads its route's links and no others): on any other model they are off.

What it approximates (the contract; numbers in ``docs/fast-paths.md``, held by
``tests/fast/test_fast.py`` within 1% at 8..128 XPUs and at the sweeps' extremes): the exact
ring is pipelined, ranks drift by amounts a step-synchronous ring does not have; and a
materialized flow pays its latency twice. Both are measured, not bounded in closed
form: 3e-6 on one rack, -0.36% at 64 XPUs in four racks, -0.55% at 256.

It needs to see every flow on the network, so it observes the driver
(:class:`~hcsim.engine.driver.FlowObserver`) rather than trusting its callers: every
flow started through the driver, of this execution or any other sharing it, counts.
"""

from __future__ import annotations

import math
from typing import Any

from hcsim.collectives import FlowPlan, TopologyView, algorithm, build_plan
from hcsim.engine.records import COMM, COPY, REMOTE_ACCESS, ActivityKey, VertexRun

__all__ = ["MemoizedRings", "RingGroup", "RingRun", "TwinClass"]

# timer tags: a skip ends; the virtual flows of a step have all arrived
SKIP_END, VIRTUAL_END = 0, 1
# at most this many flow entries of other vertices are read to find the links other traffic may cross (past it:
# no twins, which is always exact)
_OTHER_FLOWS_SCANNED = 200_000


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
        # the ring's group (rings of the same layout, see RingGroup) or None; rep[f]: the flow that stands for f
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
        # background skipping (see MemoizedRings): at a step's start, the mark of the other flows' events and
        # the remaining bytes of the memory flows of its component; while frozen, (since, step duration, steps
        # skipped, [(flow, key, src, dst, links, latency, bytes left, per step)])
        self.bg_snap: tuple[int, list[tuple[Any, float]]] | None = None
        self.frozen: tuple[float, float, int, list[tuple]] | None = None


class TwinClass:
    """Flows of a ring layout with equal route attributes: ``rep`` and its ``twins`` (see the module docstring).

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


class RingGroup:
    """The rings in progress with one layout (the same flows on the same routes), none sharing a link between flows.

    Their flows meet only flow by flow: flow f of one ring shares links with flow f of the
    others and with nothing else of theirs. So what the group's rings do to each other is
    counted once per flow index (in flight, starts and ends), and each ring reads the
    others' part as the group's count minus its own, instead of every ring being told of
    every flow of the others (which made each flow cost O(rings): 37 overlapping gradient
    rings in LLaMA2-13B on a fat tree). ``rep``/``reps``: the twin classes in force (see
    the module docstring), ``class_links`` the links of their flows; ``dormant``: the twin
    classes of the layout not in force yet (other traffic may still cross their links).
    """

    __slots__ = ("layout", "rings", "inflight", "events_at", "events", "links", "rep", "reps", "class_links", "dormant")

    def __init__(self, layout: tuple, links: frozenset[str], n: int) -> None:
        self.layout, self.links = layout, links
        self.rings: list[RingRun] = []
        self.inflight = [0] * n  # flows of the group's rings in flight, per flow index
        self.events_at = [0] * n  # their starts and ends, per flow index
        self.events = 0  # all of them
        self.rep, self.reps = list(range(n)), list(range(n))
        self.class_links: frozenset[str] = frozenset()
        self.dormant: list[TwinClass] = []


class MemoizedRings:
    """Runs ring collectives step by step, skipping what repeats (see the module docstring).

    ``raw``: the platform runs SimGrid's raw model without cross-traffic; ``twins``,
    ``late_twins``, ``background``: the features of that name (``RunOptions``).
    """

    def __init__(self, execution: Any, exact: Any, *, raw: bool = False, twins: bool = True, late_twins: bool = True,
                 background: bool = True) -> None:  # fmt: skip
        self.twins_on, self.late_twins, self.background = twins, late_twins, background
        self.execution = execution
        self.exact = exact  # for rings of a single rank (no step)
        self.rings: list[RingRun] = []  # in progress
        self.groups: dict[tuple, RingGroup] = {}  # layout -> its group, while it has rings in progress
        self.loose: list[RingRun] = []  # rings in progress in no group (two of their flows share a link)
        # a route's links -> the groups and loose rings in progress that share a link with it, in the order
        # _network_changed visits them; cleared whenever a group or a loose ring starts or ends
        self.sharing: dict[frozenset[str], tuple[tuple[RingGroup, ...], tuple[RingRun, ...]]] = {}
        self.fragile: set[RingRun] = set()  # rings skipping or with virtual flows: told of every flow at once
        self.routes: dict[tuple[str, str], tuple[frozenset[str], float, tuple]] = {}
        self.inflight: dict[Any, tuple[frozenset[str], RingGroup | None]] = {}  # every flow in flight -> links, group
        self.twin_plan: dict[tuple, list[int]] = {}  # layout -> rep of each flow (candidate twin classes), decided once
        self.twin_classes: dict[tuple, list[TwinClass]] = {}  # layout -> its classes of two flows or more
        # host pairs of the other flows the execution can start -> vertices starting them (None: too many to read);
        # layout -> its links and ring vertices (see _traffic)
        self.foreign_pairs: dict[tuple[Any, Any], list[tuple[int, bool]]] | None = None
        self.layout_links: dict[tuple, tuple[frozenset[str], list[int]]] | None = None
        self.link_users: tuple[dict[str, set[tuple[int, bool]]], dict[str, list[tuple]]] | None = None
        # background skipping: flow starts and ends seen (all flows), the memory flows of this execution in
        # flight (-> key, src, dst, links, start, route latency), the ring whose component is frozen, and the
        # last component found (valid while no flow but the ring's own started or ended)
        self.flow_events = 0
        self.memory_flows: dict[Any, tuple] = {}
        # twins and background skips rest on SimGrid's raw model without cross-traffic (a latency phase of exactly
        # the route's latency; a flow loads the links of its route and no other): off on any other model
        self.raw = raw
        self.frozen_ring: RingRun | None = None
        self._component: tuple[RingRun | None, int, list[Any], float] = (None, -1, [], 0.0)
        execution.driver.observe(self)

    # ------------------------------------------------------------------ the strategy protocol
    def handles(self, data: dict[str, Any]) -> bool:
        return data["kind"] != "p2p" and algorithm(data["kind"], data["algorithm"]).ring

    def plan(self, data: dict[str, Any], view: TopologyView) -> FlowPlan:
        d = data
        return build_plan(d["kind"], d["algorithm"], d["scope"], d["bytes"], view, group=d.get("group"), compact=True)

    def launch(self, v: int, k: int, now: float) -> None:
        if self.frozen_ring is not None:  # thawed before the new ring's flows start, not in the middle of them
            self._thaw(self.frozen_ring, now)
        x = self.execution
        fp = x.flow_plans[v]
        if fp.steps == 0:
            self.exact.launch(v, k, now)
            return
        r = RingRun(v, k, now, fp.steps)
        src, dst = x.flow_hosts[v]
        routes = [self._route(a, b) for a, b in zip(src, dst, strict=True)]
        r.flow_links = [route[0] for route in routes]
        r.flow_latency = [route[1] for route in routes]
        r.links = frozenset().union(*r.flow_links)
        r.disjoint = len(r.links) == sum(len(fl) for fl in r.flow_links)
        n = len(routes)
        for f, links in enumerate(r.flow_links):
            for link in links:
                r.flows_on_link.setdefault(link, []).append(f)
        r.unmeasured = set(range(n))
        r.own_inflight, r.own_events_at, r.disturb_mark, r.acts = [0] * n, [0] * n, [0] * n, [None] * n
        r.rep, r.reps = list(range(n)), list(range(n))
        if r.disjoint:
            layout = tuple((a.name, b.name) for a, b in zip(src, dst, strict=True))
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
        for links, group in self.inflight.values():
            if group is None or group is not r.group:
                for f in self._hits(r, links):
                    r.foreign[f] += 1
        r.busy = {f for f in range(n) if r.foreign[f]}
        r.solo, r.flow_start, r.flow_size, r.disturbed = [None] * n, [0.0] * n, [0] * n, [False] * n
        self.rings.append(r)
        self._step(r, now, fp.size[0])

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
                self._timer(r.virtual_end, VIRTUAL_END, r, r.step_generation)

    def timer(self, key: tuple, now: float) -> None:
        """A step's virtual flows have arrived, or a skip ends (unless superseded since)."""
        _, tag, r, generation = key
        if tag == VIRTUAL_END:
            if generation == r.step_generation and not r.real_left and r in self.rings:
                self._step_done(r, now)
            return
        if r.frozen is not None:  # a background skip ends (unless an interruption thawed it already)
            if generation == r.skip_generation:
                self._thaw(r, now)
            return
        if generation != r.skip_generation or r.skip is None:
            return  # cancelled by an interruption
        _, _, left = r.skip
        r.skip = None
        self.execution.result.memoized_flows += left * len(self.execution.flow_plans[r.v])
        r.steps_done = r.steps
        self._finish(r, now)

    # ------------------------------------------------------------------ groups and twins
    def _new_group(self, layout: tuple, r: RingRun, routes: list[tuple[frozenset[str], float, tuple]]) -> RingGroup:
        """A group for ``r``'s layout; its twin classes form now where other traffic is over on their links."""
        classes = self.twin_classes.get(layout)
        if classes is None:
            rep = self.twin_plan[layout] = self._twins(layout, routes)
            classes = self.twin_classes[layout] = self._classes(layout, r, rep)
        group = RingGroup(layout, r.links, len(routes))
        group.dormant = list(classes)
        if classes:
            self._form_twins(group, None)
        return group

    def _twins(self, layout: tuple, routes: list[tuple[frozenset[str], float, tuple]]) -> list[int]:
        """rep[f] for the flows of a (disjoint) ring layout: the first flow of f's twin class, or f.

        Flows of equal route signatures (latency, links' attributes) are candidates; a class
        is in force only once no other flow can cross its links (:meth:`_form_twins`). None
        at all if the execution has too many other flows to tell which links they cross.
        """
        rep = list(range(len(routes)))
        if not self.twins_on or not self.raw or self._foreign_pairs() is None:
            return rep
        first: dict[tuple, int] = {}
        for f, (_, _, signature) in enumerate(routes):
            rep[f] = first.setdefault(signature, f)
        return rep

    def _classes(self, layout: tuple, r: RingRun, rep: list[int]) -> list[TwinClass]:
        """The twin classes of ``rep`` (two flows or more), with the vertices that may start flows on their links.

        Flows of one signature whose links no other flow can cross are one class (it forms
        with the group); those that other flows may cross are a second class with the same
        representative (it forms late), or a class of their own if none is uncrossed.
        """
        if not self.raw or self._foreign_pairs() is None:
            return []
        users, layouts = self._link_users()
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
                            seen.update((v, True) for v in self.layout_links[key][1])  # type: ignore[index]
            free = [f for f in flows if not watch[f]]
            crossed = [f for f in flows if watch[f]]
            for members_of in (free, [free[0], *crossed] if free and crossed else crossed):
                if len(members_of) < 2:
                    continue
                links = frozenset().union(*(r.flow_links[f] for f in members_of))
                seen = set().union(*(watch[f] for f in members_of))
                classes.append(TwinClass(members_of[0], tuple(members_of[1:]), links, sorted(seen)))
        return classes

    def _link_users(self) -> tuple[dict[str, set[tuple[int, bool]]], dict[str, list[tuple]]]:
        """Link -> the vertices whose other flows may cross it; link -> the ring layouts crossing it (built once)."""
        if self.link_users is None:
            users: dict[str, set[tuple[int, bool]]] = {}
            for (a, b), vertices in (self.foreign_pairs or {}).items():
                for link in self._route(a, b)[0]:
                    users.setdefault(link, set()).update(vertices)
            layouts: dict[str, list[tuple]] = {}
            for key, (links, _) in (self.layout_links or {}).items():
                for link in links:
                    layouts.setdefault(link, []).append(key)
            self.link_users = (users, layouts)
        return self.link_users

    def _foreign_pairs(self) -> dict[tuple[Any, Any], list[tuple[int, bool]]] | None:
        """Host pairs of every flow other than ring layouts' the execution can start, with the vertices starting them.

        None if there are too many to read (then there are no twins, which is always exact).
        """
        if self.layout_links is None:
            self.layout_links, self.foreign_pairs = self._traffic()
        return self.foreign_pairs

    def _traffic(
        self,
    ) -> tuple[dict[tuple, tuple[frozenset[str], list[int]]], dict[tuple[Any, Any], list[tuple[int, bool]]] | None]:
        """The links and vertices of each ring layout, and the other flows the execution can start (read once).

        Other flows: remote-memory flows of compute vertices (started when the vertex
        starts), and the flows of every communication vertex not run by this strategy
        (started while it runs), as (source, destination) -> [(vertex, runs flows while
        running)]. None for those if there are more than ``_OTHER_FLOWS_SCANNED`` to read.
        """
        x = self.execution
        layouts: dict[tuple, tuple[frozenset[str], list[int]]] = {}
        pairs: dict[tuple[Any, Any], set[tuple[int, bool]]] = {}
        scanned = 0
        for v, fp in enumerate(x.flow_plans):
            if fp is None:
                cp = x.compute_plan[v]
                if cp is not None and cp.remote is not None:
                    pairs.setdefault((cp.remote, cp.host), set()).add((v, False))
                continue
            src, dst = x.flow_hosts[v]
            if x.strategy_of[v] is self and fp.steps:
                key = tuple((a.name, b.name) for a, b in zip(src, dst, strict=True))
                known = layouts.get(key)
                if known is None:
                    links = frozenset().union(*(self._route(a, b)[0] for a, b in zip(src, dst, strict=True)))
                    known = layouts[key] = (links, [])
                known[1].append(v)
                continue
            scanned += len(src)
            if scanned > _OTHER_FLOWS_SCANNED:
                return layouts, None
            for a, b in zip(src, dst, strict=True):
                if a is not None and b is not None:
                    pairs.setdefault((a, b), set()).add((v, True))
        return layouts, {pair: sorted(users) for pair, users in pairs.items()}

    def _settled(self, c: TwinClass) -> bool:
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

    def _twin_state(self, r: RingRun, f: int, now: float) -> tuple:
        """Where flow f of ``r``'s current step stands: in SimGrid (start, size, bytes left), virtual, or over."""
        if r.skip is not None:
            return ("skipping",)
        if f in r.real:
            act = r.acts[f]
            return ("over",) if act is None else (r.flow_start[f], r.flow_size[f], act.remaining)
        if not r.virtual_count or r.solo[f] is None:  # no step under way (or nothing virtual about f)
            return ("over",) if r.virtual_count == 0 else ("unknown", f)
        arrival = r.virtual_start + self._virtual_duration(r, f, r.virtual_size)
        return ("over",) if arrival <= now else ("virtual", arrival)

    def _form_twins(self, group: RingGroup, now: float | None) -> None:
        """Put dormant twin classes in force where it is exact (the module docstring: "Twins").

        A class forms when (1) no flow from outside the group is in flight on its links,
        (2) no vertex of the execution can start one there any more (:meth:`_settled`), and
        (3) in every ring of the group each twin stands where its representative does
        (:meth:`_twin_state`). Its twins then leave SimGrid: those in flight are cancelled
        (their representative carries the same bytes on an isomorphic set of links).
        ``now`` None: the group has no ring yet (only (1) and (2) apply).
        """
        rings = group.rings
        ready = []
        late = self.late_twins and self.execution.iterations == 1  # see the module docstring: "Twins", condition (2)
        for c in group.dormant:
            if not late and (c.watch or now is not None):
                continue
            if not self._settled(c):
                continue
            if rings:
                if any(rings[0].foreign[h] for h in c.members):  # the same count in every ring of the group
                    continue
                if any(self._twin_state(r, g, now) != self._twin_state(r, c.rep, now)  # type: ignore[arg-type]
                       for r in rings for g in c.twins):  # fmt: skip
                    continue
            elif any(not links.isdisjoint(c.links) for links, _ in self.inflight.values()):
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
            self._fragile(r)
        result, driver = self.execution.result, self.execution.driver
        for r, g in cancels:
            r.real.discard(g)
            r.real_left -= 1
            result.activities -= 1  # counted as memoized from now on, as a twin at its step's start would be
            result.memoized_flows += 1
            driver.cancel(r.acts[g], now)

    def _break_twins(self, group: RingGroup, now: float) -> None:
        """A flow from outside the group crosses a twin's links: every twin becomes a flow of its own.

        A twin whose representative is in SimGrid is launched with the bytes its
        representative has left (paying its latency again, like a materialized flow), or
        has ended with it; a twin of a virtual representative stays virtual with the
        representative's solo time.
        Its class goes back to dormant (it may form again, :meth:`_form_twins`).
        """
        n = len(group.rep)
        rep = group.rep
        group.dormant = list(self.twin_classes.get(group.layout, ()))
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
            self._launch_flow(r, g, size, now)

    def _finish(self, r: RingRun, now: float) -> None:
        self.rings.remove(r)
        self.fragile.discard(r)
        r.bg_snap = None
        if self._component[0] is r:
            self._component = (None, -1, [], 0.0)
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

    def _fragile(self, r: RingRun) -> None:
        if r.skip is not None or r.virtual_count:
            self.fragile.add(r)
        else:
            self.fragile.discard(r)

    def _fragile_now(self, now: float) -> set[RingRun]:
        """The fragile rings that must still be told of flows on their links; the others leave ``fragile``.

        A ring not skipping whose virtual flows have all arrived (``virtual_end``, the
        last arrival, is past) has nothing another flow could disturb until its next step:
        materializing an arrived flow launches nothing (LLaMA2-13B's intra-server flows
        arrive within a microsecond of a step of tens, and 26 overlapping rings used to
        stay fragile, each told of every flow, for the rest of every step). Its step still
        ends with its real flows or its pending VIRTUAL_END timer, as before.
        """
        fragile = self.fragile
        arrived = [r for r in fragile if r.skip is None and r.virtual_end <= now]
        if arrived:
            fragile.difference_update(arrived)
        return fragile

    # ------------------------------------------------------------------ observing the network
    def flow_started(self, act: Any, key: Any, src: Any, dst: Any, links: Any, now: float) -> None:
        if self.frozen_ring is not None:  # any flow ends a background skip (the frozen ring has none in flight)
            self._thaw(self.frozen_ring, now)
        route = None
        if links is None:
            route = self._route(src, dst)
            links = route[0]
        owner = key[2]  # key: an ActivityKey layout (its run)
        mine = owner.__class__ is RingRun and key[0] is self.execution
        group = owner.group if mine else None
        self.inflight[act] = (links, group)
        self.flow_events += 1
        if mine:
            owner.own_events += 1
        elif (key[1] == REMOTE_ACCESS or key[1] == COPY) and key[0] is self.execution:
            if route is None:
                route = self._route(src, dst)
            self.memory_flows[act] = (key, src, dst, links, now, route[1])
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

    def flow_ended(self, act: Any, key: Any, now: float) -> None:
        if self.frozen_ring is not None:
            self._thaw(self.frozen_ring, now)
        links, group = self.inflight.pop(act)
        owner = key[2]
        self.flow_events += 1
        if owner.__class__ is RingRun and key[0] is self.execution:
            owner.own_events += 1
        elif self.memory_flows:
            self.memory_flows.pop(act, None)
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
            if other is group:
                continue
            if other.class_links and not links.isdisjoint(other.class_links):
                self._break_twins(other, now)
            for r in list(other.rings):
                self._outside(r, now, links, change)
        for r in sharing[1]:
            if r is not owner:
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
    def _route(self, src: Any, dst: Any) -> tuple[frozenset[str], float, tuple]:
        """Links (names; each direction of a duplex link has its own), latency and link attributes of a route."""
        key = (src.name, dst.name)
        hit = self.routes.get(key)
        if hit is None:
            links, latency = src.route_to(dst)
            signature = (
                latency,
                tuple(sorted((link.bandwidth, link.latency, str(link.get_sharing_policy())) for link in links)),
            )
            hit = self.routes[key] = (frozenset(link.name for link in links), latency, signature)
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
        x.flow(src[f], dst[f], size, (x, COMM, r, f), now, r.flow_links[f])  # laid out as ActivityKey (records.py)

    def _virtual_duration(self, r: RingRun, f: int, size: int) -> float:
        """How long flow f of a step takes for ``size`` bytes alone on its links (from its measured solo step)."""
        solo, lat = r.solo[f], r.flow_latency[f]
        chunk = self.execution.flow_plans[r.v].size[0]
        return solo if size == chunk else lat + max(0.0, solo - lat) * size / chunk  # type: ignore[operator]

    def _virtual_end(self, r: RingRun, size: int) -> float:
        """When the last flow of the step still virtual arrives (the step's start if none): amortized O(1)."""
        if r.vends_step != r.step_id:
            start, real = r.virtual_start, r.real
            ends = [(start + self._virtual_duration(r, g, size), g) for g in r.reps if g not in real]
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
        self._fragile(r)
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
        if group is not None and group.dormant:
            self._form_twins(group, now)
        busy = r.busy
        if group is not None:
            inflight = group.inflight
            busy = busy | {f for f in r.reps if inflight[f]}
            r.quiet_mark = group.events - r.own_events
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
                r.virtual_end = max(now + self._virtual_duration(r, f, size) for f in reps if f not in real)
        r.real, r.virtual_count = real, virtual_count
        self._fragile(r)
        result = self.execution.result
        result.memoized_flows += n - len(real)  # virtual representatives and every twin
        r.real_left = len(real)
        result.activities += len(real)
        for f in sorted(real):
            r.flow_start[f], r.flow_size[f], r.disturbed[f] = now, size, f in busy
            if group is not None:
                r.disturb_mark[f] = group.events_at[f] - r.own_events_at[f]
            self._launch_flow(r, f, size, now)
        if not real:
            self._timer(r.virtual_end, VIRTUAL_END, r, r.step_generation)
        r.bg_snap = self._snapshot(r, now) if self.background and size == fp.size[0] and self.memory_flows else None

    def _step_done(self, r: RingRun, now: float) -> None:
        r.real, r.virtual_count = set(), 0
        r.step_generation += 1
        r.steps_done += 1
        if r.steps_done >= r.steps:
            self._finish(r, now)
            return
        d = now - r.step_start
        group = r.group
        quiet, busy = r.quiet, bool(r.busy)
        if group is not None:
            quiet = quiet and group.events - r.own_events == r.quiet_mark
            busy = busy or any(group.inflight[f] for f in r.reps)
        if quiet and not busy:  # alone on its links, and nothing else is in flight on them
            left = r.steps - r.steps_done
            r.skip = (now, d, left)
            r.skip_generation += 1
            self.fragile.add(r)
            self._timer(now + left * d, SKIP_END, r, r.skip_generation)
            return
        if r.bg_snap is not None and self._freeze(r, now, d):
            return
        self._fragile(r)
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
        self._fragile(r)
        fp = self.execution.flow_plans[r.v]
        self.execution.result.memoized_flows += whole * len(fp)
        part = max(0.0, elapsed - whole)
        chunk = fp.size[0]
        self._step(r, now, max(1, int(round(chunk * (1.0 - part)))))
        r.quiet = False  # a partial step measures nothing

    def occupies(self, links: frozenset[str]) -> bool:
        """Whether a ring in progress crosses one of ``links``: it may have traffic that SimGrid does not see.

        A ring skipping, frozen or holding virtual flows is on its links without a flow in
        SimGrid; :class:`~hcsim.fast.rounds.MemoizedRounds` asks before it skips a round,
        so that it launches real flows there instead, which the ring then hears of.
        """
        for r in self.rings:
            if not links.isdisjoint(r.links):
                return True
        return False

    # ------------------------------------------------------------------ background flows
    def _snapshot(self, r: RingRun, now: float) -> tuple[int, list[tuple[Any, float]]] | None:
        """At a full step's start: the memory flows ``r``'s step can meet, with their bytes left (None: no skip).

        Only when ``r`` is the only ring in progress, every flow in flight is ``r``'s or a
        memory flow, and every memory flow of the component (the flows linked to the ring's
        links through shared links, transitively) is past its latency phase: then the
        component's state at the next step's start will be this one, less the bytes moved.
        """
        if not self.raw or len(self.rings) != 1 or len(self.inflight) != r.real_left + len(self.memory_flows):
            return None
        mark = self.flow_events - r.own_events  # other flows' starts and ends so far
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

    def _freeze(self, r: RingRun, now: float, d: float) -> bool:
        """A quiet full step with memory flows in the background has ended: skip the steps it will repeat.

        Every flow of the component is suspended in SimGrid (so nothing else sees a
        difference: no flow outside the component shares a link with it) and the ring
        sleeps for the whole steps during which every memory flow keeps going, each moving
        the bytes it moved in the step just measured.
        """
        mark, flows = r.bg_snap  # type: ignore[misc]
        r.bg_snap = None
        if len(self.rings) != 1 or self.flow_events - r.own_events != mark or d <= 0.0:
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
        r.skip_generation += 1
        self._timer(now + m * d, SKIP_END, r, r.skip_generation)
        return True

    def _thaw(self, r: RingRun, now: float) -> None:
        """End a background skip (its last step, or a flow starting or ending anywhere): relaunch the memory flows.

        The whole steps elapsed are kept; within a step the flows are taken to move their
        bytes at a constant rate (as an interrupted skip does). Each suspended flow is
        replaced by one with the bytes it has left, less what it would have moved during
        the latency the replacement pays again.
        """
        since, d, m, frozen = r.frozen  # type: ignore[misc]
        r.frozen = None
        self.frozen_ring = None
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
        if r.steps_done >= r.steps:
            self._finish(r, now)
            return
        chunk = fp.size[0]
        if part > 0.0:
            self._step(r, now, max(1, int(round(chunk * (1.0 - part)))))
            r.quiet = False  # a partial step measures nothing
        else:
            self._step(r, now, chunk)
