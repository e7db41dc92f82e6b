"""The exact strategy: every flow of a communication vertex is a SimGrid flow.

The flows of the vertex's :class:`~hcsim.collectives.plans.FlowPlan` whose wait count
is zero start with the vertex execution; each completion counts down the flows it
releases, which start when their count reaches zero (in a ring my next send waits for
my last send and for my neighbour's chunk, so the ring is pipelined). An entry of size
0 is a join: no flow, passed the moment its count reaches zero.

Invariant: nothing is approximated (every flow contends with all other traffic for as
long as SimGrid says), and no vertex starts more flows at once than the run's
``max_flows_at_once`` (:func:`max_flows_at_once`; ``docs/fast-paths.md``, "The kernel's
own speed-ups").
"""

from __future__ import annotations

from typing import Any

from hcsim.collectives import FlowPlan, TopologyView, build_plan
from hcsim.engine.records import COMM, ActivityKey, VertexRun
from hcsim.errors import HcsimError
from hcsim.simgrid_runtime import settings

__all__ = ["ExactFlows", "max_flows_at_once"]

MAX_FLOWS_AT_ONCE = 20_000
"""How many flows one communication vertex may start at once on the exact path (the options' default).

Every completion costs SimGrid's ``wait_any`` time in proportion to the flows in flight,
so a vertex of F flows, W of them at once, costs about F x W x 0.5 us: past the limit
the run is refused up front with one line instead of running for hours
(``EngineOptions.max_flows_at_once``; ``HCSIM_MAX_FLOWS_AT_ONCE`` changes the default).
"""


def max_flows_at_once(raw: str | None = None) -> int:
    """The default limit: ``HCSIM_MAX_FLOWS_AT_ONCE`` if set (a positive integer), else :data:`MAX_FLOWS_AT_ONCE`.

    ``raw``: that variable's text (default: as :func:`hcsim.simgrid_runtime.settings` read
    it). A run reads its limit from its options (``EngineOptions.max_flows_at_once``),
    whose default this is.
    """
    if raw is None:
        raw = settings().max_flows_at_once
        if raw is None:
            return MAX_FLOWS_AT_ONCE
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise HcsimError(f"HCSIM_MAX_FLOWS_AT_ONCE={raw!r} (valid: a positive integer)")
    return value


class ExactFlows:
    """Runs communication vertices flow by flow (see the module docstring)."""

    def __init__(self, execution: Any) -> None:
        self.execution = execution
        self._sendto, self._add_flow = execution.sg.Comm.sendto_async, execution.driver.add_flow

    def handles(self, data: dict[str, Any]) -> bool:
        return True

    def plan(self, data: dict[str, Any], view: TopologyView) -> FlowPlan:
        fp = build_plan(data["kind"], data["algorithm"], data["scope"], data["bytes"], view, group=data.get("group"))
        self.check_wave(data, fp)
        return fp

    def check_wave(self, data: dict[str, Any], fp: FlowPlan) -> None:
        """Refuse a plan that starts more flows at once than the run's ``max_flows_at_once``."""
        limit = self.execution.options.max_flows_at_once
        wave = fp.waits.count(0)
        if wave > limit:
            raise HcsimError(
                f"{data['kind']} '{data['algorithm']}' over {len(data['scope'])} ranks starts {wave} flows at once, "
                f"more than the exact engine's {limit}: its cost grows as flows x flows in flight (about 5 min "
                "at 16k at once, 70 min at 65k) (valid: fewer ranks, another algorithm, or a higher "
                "HCSIM_MAX_FLOWS_AT_ONCE)"
            )

    def launch(self, v: int, k: int, now: float) -> VertexRun:
        x = self.execution
        fp = x.flow_plans[v]
        src, dst = x.flow_hosts[v]
        x.result.activities += fp.flows
        run = VertexRun(v, k, now, len(fp), list(fp.waits))
        for f, w in enumerate(run.waits):
            if w == 0:
                if fp.size[f]:
                    x.flow(src[f], dst[f], fp.size[f], (x, COMM, run, f), now)
                else:
                    self._join(run, f, now)
        if not run.pending:
            x.finish(run, now)
        return run  # for a strategy that delegates to this one and watches the run (rounds.py)

    def _join(self, run: VertexRun, f: int, now: float) -> None:
        """Join ``f`` is reached: count it done and release what waits for it (joins in turn, without recursion)."""
        x = self.execution
        fp = x.flow_plans[run.v]
        src, dst = x.flow_hosts[run.v]
        waits, stack = run.waits, [f]
        while stack:
            j = stack.pop()
            run.pending -= 1
            for g in fp.releases[j]:
                waits[g] -= 1
                if not waits[g]:
                    if fp.size[g]:
                        x.flow(src[g], dst[g], fp.size[g], (x, COMM, run, g), now)
                    else:
                        stack.append(g)

    def complete(self, act: Any, key: ActivityKey, now: float) -> None:
        x, _, run, f = key  # keys of this strategy are plain tuples laid out as ActivityKey (records.py says why)
        fp = x.flow_plans[run.v]
        size = fp.size
        if x.record_flows:
            x.result.flows.append((fp.src[f], fp.dst[f], size[f], act.start_time, now))
        waits = run.waits
        src, dst = x.flow_hosts[run.v]
        for g in fp.releases[f]:
            waits[g] -= 1
            if not waits[g]:  # Execution.flow, inlined: this is the hot path
                if size[g]:
                    a, b = src[g], dst[g]
                    self._add_flow(self._sendto(a, b, size[g]), (x, COMM, run, g), a, b, None, now)
                else:  # a join (Schedule.join): no flow, release its waiters now
                    self._join(run, g, now)
        run.pending -= 1
        if not run.pending:
            x.finish(run, now)

    def timer(self, key: tuple, now: float) -> None:  # sets none
        raise AssertionError(f"the exact strategy set no timer {key!r}")
