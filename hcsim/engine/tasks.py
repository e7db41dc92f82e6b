"""Wide communication vertices on SimGrid's Task plugin: dependencies resolved in C++.

The exact strategy hands every flow to the controller's ``ActivitySet``, so a vertex
starting thousands of flows at once costs flows x flows in flight. :class:`TaskFlows`
runs such a vertex's :class:`~hcsim.collectives.plans.FlowPlan` on SimGrid's Task
plugin instead: a ``CommTask`` per flow (an ``ExecTask`` of 0 flops per join), or one per
*lane* of a periodic plan (:func:`periodic_lanes`: a ring's N sends, fired once per step;
1024 tasks, not 2.1 million, for a 1024-NPU ring), and one 0-flop exec per vertex
execution that the controller waits for, started by the completion callback of the last flow.

Invariant: the exact strategy's flows and dates (``tests/engine/test_tasks.py``), given
the controller's vertices start first at one date: bit for bit on the paper systems and a
switch, within a few units in the last place on rings and grids (lanes or not). Only
vertices starting at least :data:`TASK_WAVE` flows at once take the route (``tasks=None``:
within the flows-at-once limit; ``True``: past it; ``False``: never), and none while an
observer watches the driver. Why, and the caveat: ``docs/fast-paths.md`` ("The kernel's
own speed-ups").
"""

from __future__ import annotations

from collections import deque
from typing import Any

from hcsim.collectives import FlowPlan, TopologyView, build_plan
from hcsim.engine.records import COMM, ActivityKey, VertexRun

__all__ = ["TASK_WAVE", "TaskFlows", "periodic_lanes"]

TASK_WAVE = 512
"""A vertex starting at least this many flows at once runs on the Task plugin (narrower ones are faster exact:
``experiments/bench_tasks.py``)."""

SENTINEL = -1  # the flow index of the key of a vertex execution's end (the 0-flop exec the controller waits for)


def periodic_lanes(fp: FlowPlan) -> tuple[list[list[int]], list[list[int]]] | None:
    """The plan as lanes fired step by step, if it is one: (lanes, the lanes each lane waits for), else None.

    A lane is the flows of one (source, destination, size), in plan order. The plan is
    periodic when every lane has the same number m > 1 of flows, no flow is a join, a
    lane's first flow waits for nothing, and its k-th flow (k >= 1) waits exactly for the
    lane's flow k-1 and for flow k-1 of each lane of a fixed set (the lanes it waits for).
    Then a task per lane, of parallelism 1 (its flow k after its flow k-1), fired once per
    token from each lane it waits for, starts every flow when the plan starts it.
    """
    n = len(fp)
    if fp.joins or n < 2:
        return None
    lane_of: dict[tuple[str, str, int], int] = {}
    lanes: list[list[int]] = []
    lane, pos = [0] * n, [0] * n
    for f, key in enumerate(zip(fp.src, fp.dst, fp.size, strict=True)):
        lane[f] = lane_of.setdefault(key, len(lanes))
        if lane[f] == len(lanes):
            lanes.append([])
        pos[f] = len(lanes[lane[f]])
        lanes[lane[f]].append(f)
    m = len(lanes[0])
    if m < 2 or any(len(flows) != m for flows in lanes):
        return None
    preds: list[list[int]] = [[] for _ in range(n)]
    for f, released in enumerate(fp.releases):
        for g in released:
            preds[g].append(f)
    waits_for: list[list[int]] = []
    for i, flows in enumerate(lanes):
        if preds[flows[0]] or fp.waits[flows[0]]:
            return None
        others: set[int] | None = None
        for k in range(1, m):
            g, own = flows[k], flows[k - 1]
            ps = preds[g]
            if fp.waits[g] != len(ps) or len(set(ps)) != len(ps) or own not in ps:
                return None
            mine = set()
            for p in ps:
                if p != own:
                    if pos[p] != k - 1 or lane[p] == i:
                        return None
                    mine.add(lane[p])
            if others is None:
                others = mine
            elif mine != others:
                return None
        waits_for.append(sorted(others or ()))
    return lanes, waits_for


class _Graph:
    """The tasks of one communication vertex, made once and fired once per vertex execution."""

    __slots__ = ("tasks", "sources", "sinks", "starts", "run", "sentinel", "left", "lanes", "firings")

    def __init__(self) -> None:
        self.tasks: list[Any] = []
        self.sources: list[Any] = []
        self.sinks = 0
        self.starts: list[float] = []
        self.run: VertexRun | None = None
        self.sentinel: Any = None
        self.left = 0  # sinks of the current execution still running
        self.lanes: tuple[list[list[int]], list[list[int]]] | None = None  # periodic_lanes, on the lane route
        self.firings: list[int] = []  # lane route: flows of each lane done in this execution


class TaskFlows:
    """Runs wide communication vertices on the Task plugin, the others with ``exact`` (see the module docstring)."""

    def __init__(self, execution: Any, exact: Any, *, limited: bool = True) -> None:
        self.execution, self.exact, self.limited = execution, exact, limited  # limited: keep the flows-at-once limit
        self.graphs: dict[int, _Graph] = {}  # vertex -> its tasks, for vertices on the Task route
        self._wide_plans: set[int] = set()  # id() of the plans of wide vertices

    def handles(self, data: dict[str, Any]) -> bool:
        return True

    def plan(self, data: dict[str, Any], view: TopologyView) -> FlowPlan:
        if self.execution.driver.observers:  # memoize watches every flow: only Driver.add_flow tells it
            return self.exact.plan(data, view)
        fp = build_plan(data["kind"], data["algorithm"], data["scope"], data["bytes"], view, group=data.get("group"))
        if fp.waits.count(0) < TASK_WAVE:
            self.exact.check_wave(data, fp)
            return fp
        if self.limited:
            self.exact.check_wave(data, fp)
        self._wide_plans.add(id(fp))
        return fp

    def runs(self, fp: FlowPlan) -> bool:
        """Whether this plan takes the Task route (the others are the exact strategy's)."""
        return id(fp) in self._wide_plans

    def launch(self, v: int, k: int, now: float) -> None:
        x = self.execution
        fp = x.flow_plans[v]  # a wide plan: Execution gives the others to the exact strategy (see runs)
        g = self.graphs.get(v) or self._make(v)
        x.result.activities += fp.flows
        run = VertexRun(v, k, now, 1)
        g.run, g.left = run, g.sinks
        sg = x.sg
        g.sentinel = sg.this_actor.exec_init(0)
        g.sentinel.host = sg.this_actor.get_host()
        x.driver.watch(g.sentinel, (x, COMM, run, SENTINEL))
        if g.lanes is not None:  # the lane route: the edges its last firings took away, then every lane's first
            lanes, waits_for = g.lanes
            g.firings = [0] * len(lanes)
            for i, before in enumerate(waits_for):
                for j in before:
                    g.tasks[j].add_successor(g.tasks[i])
            m = len(lanes[0])
            for t, before in zip(g.tasks, waits_for, strict=True):
                t.enqueue_firings(1 if before else m)  # a lane that waits for no other: its m flows one by one
            return
        for t in g.sources:
            t.enqueue_firings(1)

    def _make(self, v: int) -> _Graph:
        x = self.execution
        sg = x.sg
        fp = x.flow_plans[v]
        src, dst = x.flow_hosts[v]
        anywhere = next(h for h in (*src, *dst) if h is not None)
        g = self.graphs[v] = _Graph()
        g.lanes = periodic_lanes(fp)
        if g.lanes is not None:
            self._make_lanes(v, g, fp, src, dst)
            return g
        tasks = g.tasks
        for f, size in enumerate(fp.size):
            if size:
                tasks.append(sg.CommTask.init(f"{v}.{f}", float(size), src[f], dst[f]))
            else:  # a join: no flow, passed as soon as what it waits for is done
                tasks.append(sg.ExecTask.init(f"{v}.{f}", 0.0, anywhere))
        for f, released in enumerate(fp.releases):
            for h in released:
                tasks[f].add_successor(tasks[h])
        g.sources = [tasks[f] for f, w in enumerate(fp.waits) if w == 0]
        g.starts = [0.0] * len(tasks)
        Engine = sg.Engine
        record = x.record_flows
        for f, t in enumerate(tasks):
            last = not fp.releases[f]
            g.sinks += last
            if record and fp.size[f]:

                def started(_t: Any, f: int = f) -> None:
                    g.starts[f] = Engine.clock

                t.on_this_start_cb(started)
            if (record and fp.size[f]) or last:

                def ended(_t: Any, f: int = f, last: bool = last) -> None:
                    if record and fp.size[f]:
                        x.result.flows.append((fp.src[f], fp.dst[f], fp.size[f], g.starts[f], Engine.clock))
                    if last:
                        g.left -= 1
                        if not g.left:
                            g.sentinel.start()  # 0 flops: ends now, and wakes the controller

                t.on_this_completion_cb(ended)
        return g

    def _make_lanes(self, v: int, g: _Graph, fp: FlowPlan, src: list[Any], dst: list[Any]) -> None:
        """One task per lane of ``g.lanes``; its last firing takes its out-edges away (:meth:`launch` puts them back).

        A lane's k-th completion sends a token to each lane that waits for it, which fires
        that lane's flow k + 1; after the last (k = m - 1) no token must go, so the lane's
        out-edges go at the start of that completion's callback, before SimGrid sends them.
        """
        x, sg = self.execution, self.execution.sg
        lanes, _ = g.lanes  # type: ignore[misc]
        m = len(lanes[0])
        Engine = sg.Engine
        record = x.record_flows
        g.sinks = len(lanes)
        for i, flows in enumerate(lanes):
            f0 = flows[0]
            t = sg.CommTask.init(f"{v}.lane{i}", float(fp.size[f0]), src[f0], dst[f0])
            g.tasks.append(t)
            starts: deque[float] = deque()  # its next flow may start before the last one's completion callback

            if record:

                def started(_t: Any, starts: deque[float] = starts) -> None:
                    starts.append(Engine.clock)

                t.on_this_start_cb(started)

            def ended(t: Any, i: int = i, flows: list[int] = flows, starts: deque[float] = starts) -> None:
                k = g.firings[i]
                g.firings[i] = k + 1
                if record:
                    f = flows[k]
                    x.result.flows.append((fp.src[f], fp.dst[f], fp.size[f], starts.popleft(), Engine.clock))
                if k + 1 == m:
                    t.remove_all_successors()
                    g.left -= 1
                    if not g.left:
                        g.sentinel.start()  # 0 flops: ends now, and wakes the controller

            t.on_this_completion_cb(ended)

    def complete(self, act: Any, key: ActivityKey, now: float) -> None:
        x, _, run, _ = key  # only a vertex execution's end (SENTINEL) reaches the driver: flows end in C++
        self.graphs[run.v].sentinel = None
        x.finish(run, now)

    def timer(self, key: tuple, now: float) -> None:  # sets none
        raise AssertionError(f"the task strategy set no timer {key!r}")
