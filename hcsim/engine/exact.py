"""The exact strategy: every flow of a communication vertex is a SimGrid flow.

The flows of the vertex's :class:`~hcsim.collectives.plans.FlowPlan` whose wait
count is zero start with the vertex execution; each completion counts down the flows it
releases, which start when their count reaches zero (in a ring: my next send waits for
my last send and for my neighbour's chunk, so the ring is pipelined). The execution is
over when every flow has completed. Nothing is approximated: every flow contends with
all other traffic for as long as SimGrid says.
"""

from __future__ import annotations

from typing import Any

from hcsim.collectives import FlowPlan, TopologyView, build_plan
from hcsim.engine.records import COMM, ActivityKey, VertexRun

__all__ = ["ExactFlows"]


class ExactFlows:
    """Runs communication vertices flow by flow (see the module docstring)."""

    def __init__(self, execution: Any) -> None:
        self.execution = execution
        self._sendto, self._add_flow = execution.sg.Comm.sendto_async, execution.driver.add_flow

    def handles(self, data: dict[str, Any]) -> bool:
        return True

    def plan(self, data: dict[str, Any], view: TopologyView) -> FlowPlan:
        return build_plan(data["kind"], data["algorithm"], data["scope"], data["bytes"], view, group=data.get("group"))

    def launch(self, v: int, k: int, now: float) -> None:
        x = self.execution
        fp = x.flow_plans[v]
        src, dst = x.flow_hosts[v]
        x.result.activities += len(fp)
        run = VertexRun(v, k, now, len(fp), list(fp.waits))
        for f, w in enumerate(run.waits):
            if w == 0:
                x.flow(src[f], dst[f], fp.size[f], (x, COMM, run, f), now)
        if len(fp) == 0:
            x.finish(run, now)

    def complete(self, act: Any, key: ActivityKey, now: float) -> None:
        x, _, run, f = key  # keys of this strategy are plain tuples laid out as ActivityKey (records.py says why)
        fp = x.flow_plans[run.v]
        if x.record_flows:
            x.result.flows.append((fp.src[f], fp.dst[f], fp.size[f], act.start_time, now))
        waits = run.waits
        src, dst = x.flow_hosts[run.v]
        for g in fp.releases[f]:
            waits[g] -= 1
            if not waits[g]:  # Execution.flow, inlined: this is the hot path
                a, b = src[g], dst[g]
                self._add_flow(self._sendto(a, b, fp.size[g]), (x, COMM, run, g), a, b, None, now)
        run.pending -= 1
        if not run.pending:
            x.finish(run, now)

    def timer(self, key: tuple, now: float) -> None:  # sets none
        raise AssertionError(f"the exact strategy set no timer {key!r}")
