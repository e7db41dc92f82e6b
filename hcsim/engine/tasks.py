"""Wide communication vertices on SimGrid's Task plugin: dependencies resolved in C++.

The exact strategy hands every flow to the controller's ``ActivitySet``, so a vertex
starting thousands of flows at once costs flows x flows in flight. :class:`TaskFlows`
runs such a vertex's :class:`~hcsim.collectives.plans.FlowPlan` on SimGrid's Task
plugin instead: a ``CommTask`` per flow (an ``ExecTask`` of 0 flops per join), an
``add_successor`` per release, and one 0-flop exec per vertex execution that the
controller waits for, started by the completion callback of the vertex's last flow.

Invariant: results are bit-identical to the exact strategy (checked by
``tests/engine/test_tasks.py``), given the controller's vertices start first at one
date. Only vertices starting at least :data:`TASK_WAVE` flows at once take the route
(``tasks=None``: within the flows-at-once limit; ``True``: past it; ``False``: never),
and none while an observer watches the driver. Why, and the caveat: ``docs/fast-paths.md``
("The kernel's own speed-ups").
"""

from __future__ import annotations

from typing import Any

from hcsim.collectives import FlowPlan, TopologyView, build_plan
from hcsim.engine.records import COMM, ActivityKey, VertexRun

__all__ = ["TASK_WAVE", "TaskFlows"]

TASK_WAVE = 512
"""A vertex starting at least this many flows at once runs on the Task plugin (narrower ones are faster exact:
``experiments/bench_tasks.py``)."""

SENTINEL = -1  # the flow index of the key of a vertex execution's end (the 0-flop exec the controller waits for)


class _Graph:
    """The tasks of one communication vertex, made once and fired once per vertex execution."""

    __slots__ = ("tasks", "sources", "sinks", "starts", "run", "sentinel", "left")

    def __init__(self) -> None:
        self.tasks: list[Any] = []
        self.sources: list[Any] = []
        self.sinks = 0
        self.starts: list[float] = []
        self.run: VertexRun | None = None
        self.sentinel: Any = None
        self.left = 0  # sinks of the current execution still running


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
        for t in g.sources:
            t.enqueue_firings(1)

    def _make(self, v: int) -> _Graph:
        x = self.execution
        sg = x.sg
        fp = x.flow_plans[v]
        src, dst = x.flow_hosts[v]
        anywhere = next(h for h in (*src, *dst) if h is not None)
        g = self.graphs[v] = _Graph()
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

    def complete(self, act: Any, key: ActivityKey, now: float) -> None:
        x, _, run, _ = key  # only a vertex execution's end (SENTINEL) reaches the driver: flows end in C++
        self.graphs[run.v].sentinel = None
        x.finish(run, now)

    def timer(self, key: tuple, now: float) -> None:  # sets none
        raise AssertionError(f"the task strategy set no timer {key!r}")
