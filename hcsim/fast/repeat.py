"""Iteration memoization: once an iteration repeats the one before, extrapolate the rest.

With ``repeat=True`` (:func:`hcsim.engine.simulate`, ``simulate_system(fast=True)``,
``hcsim run --repeat``) the engine watches the boundaries between iterations. When
iteration k ran exactly like iteration k-1, iterations k+1 .. K-1 are not simulated:
each is iteration k shifted by whole periods d = T_k - T_{k-1} (T_k: the date iteration
k ended). Their trace records, busy intervals and recorded flows are copies of iteration
k's, shifted; their activities are counted in ``memoized_activities``, not in
``activities`` (which counts what SimGrid really ran).

**When the boundary is idle.** The boundary T_k is *idle* when, at the moment the last
vertex execution of iteration k ends (before anything it releases starts), nothing of
the run is in flight: no SimGrid activity (flow or exec) is waited for, no timer or exec
end is pending in the driver, and every vertex has started and completed exactly k+1
executions (no vertex of iteration k+1 started early). Time 0 counts as an idle
boundary. An iteration whose starting and ending boundaries are both idle is called
*closed*.

**Why a closed iteration repeats (the exactness argument).** The future of the run
from an idle boundary is a function of what exists at that moment:

* SimGrid's state: with nothing in flight, no LMM variable, no action and no pending
  event remains (finished actions leave the solver; the lazy update only delays the
  *computation* of an action's progress, and there is no action left to update). The
  platform is the same at every date as long as it has no time-varying profile (hcsim's
  compiler writes none; a platform file with ``speed_file``, ``bandwidth_file``,
  ``latency_file``, ``state_file`` or a ``<profile>``/``<trace>`` is refused, see
  :func:`platform_is_stationary`);
* the controller's state: the counters ``started = completed = k+1`` for every vertex,
  nothing running. The Fig. 5 rules read these counters only through differences
  (v's execution k' needs ``completed[u] > k'`` or, across a ``skip_first_iteration``
  edge, ``completed[u] >= k'``), which are the same at every idle boundary, *except*
  for iteration 0, where loop-carried edges are ignored. At an idle boundary every
  loop-carried dependency of the next iteration is already met (all counters are k+1),
  so it constrains nothing either: the vertices that start are those without a
  same-iteration predecessor, as at time 0, and no loop-carried edge delays anyone
  during the iteration. So iteration 0 is no exception once the next boundary is idle;
* the strategies' state: the exact flows keep nothing between vertex executions; memoized
  rings keep only a cache of routes (static) and their in-flight flows (none at an
  idle boundary); compute plans and the memory placement are decided once, before the
  run, and never change.

So, in exact arithmetic, the run from T_k is the run from T_{k-1} shifted by d: if
iteration k is closed, iteration k+1 is iteration k shifted (and so on by induction,
up to the last iteration, where the only difference is that nothing follows).

**What floating point adds, hence the check.** SimGrid's clock is absolute: the same
durations added to a larger date round differently (measured: per-iteration times of
LLaMA2-13B differ by about 1e-13 relative from one iteration to the next), and its
precision thresholds (``precision/timing``, ``precision/work-amount``) are applied to
absolute quantities. So the engine does not extrapolate on the argument alone: it also
requires that iteration k's start and end of every vertex execution, relative to
T_{k-1}, equal iteration k-1's relative to T_{k-2}, and d equal iteration k-1's
period, within :data:`REPEAT_TOLERANCE` x d. The extrapolated iterations then differ
from a full simulation only by that rounding (held by ``tests/fast/test_repeat.py``).

**What breaks it, and what the engine does.**

* Iterations that overlap (a vertex of iteration k+1 starts before iteration k is
  over, e.g. a pipeline whose loop-carried edges let the next iteration start early),
  or activities in flight across the boundary: the boundary is not idle, nothing is
  extrapolated (the run is simulated in full; ``result.repeat`` says why). Identical
  in-flight sets would also be enough in principle, but comparing SimGrid's in-flight
  progress is not attempted.
* Timings that differ beyond the tolerance (a first iteration that runs differently,
  e.g. because of loop-carried edges that are not met at the boundary): no
  extrapolation until two consecutive closed iterations agree.
* Placement that changes between iterations, a platform with time-varying profiles,
  several executions sharing one simulation (the cluster front end): not supported; the
  first never happens in hcsim (placement is static), the second is refused, the third
  never turns repeat on.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["REPEAT_TOLERANCE", "IterationRepeat", "platform_is_stationary"]

REPEAT_TOLERANCE = 1e-9
"""Two iterations repeat when every relative date agrees within this fraction of the period."""

_PROFILES = re.compile(r"(speed_file|bandwidth_file|latency_file|state_file|<profile|<trace\b)")


def platform_is_stationary(xml: str) -> bool:
    """Whether a platform file's text has no time-varying profile (its resources are the same at every date)."""
    return _PROFILES.search(xml) is None


class IterationRepeat:
    """Watches iteration boundaries of one :class:`~hcsim.engine.execution.Execution`; extrapolates once k repeats."""

    def __init__(self, execution: Any) -> None:
        self.x = execution
        self.n = len(execution.names)
        self.times: dict[int, list[tuple[float, float]]] = {}  # iteration -> (start, end) per vertex, as they end
        self.boundary = 0.0  # T_{k-1}: the date the current iteration started from
        self.idle_start = True  # time 0 is an idle boundary
        self.previous: tuple[list[tuple[float, float]], float] | None = None  # last closed iteration: offsets, period
        self.marks = self._marks()  # lengths of the result's lists at the current iteration's start
        self.source: int | None = None  # the iteration that is replicated
        self.period = 0.0
        self.deviation = math.nan  # the largest relative difference found between the two last closed iterations
        self.template: tuple[tuple, tuple] | None = None  # marks at the source's start and end
        self.note = "not extrapolated: no two consecutive closed iterations agreed"

    def _marks(self) -> tuple:
        r = self.x.result
        return (
            len(r.trace),
            len(r.flows),
            {h: len(v) for h, v in r.compute.items()},
            {h: len(v) for h, v in r.comm.items()},
            {h: len(v) for h, v in r.stall.items()},
            r.activities,
            r.memoized_flows,
        )

    def vertex_done(self, v: int, k: int, start: float, now: float) -> None:
        """Vertex ``v`` finished its execution ``k`` (started at ``start``)."""
        times = self.times.get(k)
        if times is None:
            times = self.times[k] = [(math.nan, math.nan)] * self.n
        times[v] = (start, now)

    def _idle(self, k: int) -> bool:
        x = self.x
        driver, total = x.driver, self.n * (k + 1)
        return (
            not driver.owner
            and driver.next_due() == math.inf
            and sum(x.started) == total
            and sum(x.completed) == total
            and not any(x.running)
        )

    def iteration_done(self, k: int, now: float) -> bool:
        """Iteration ``k`` ended at ``now``; True: it repeats the one before, stop simulating after it."""
        times = self.times.pop(k, None)
        idle = self._idle(k)
        start, period = self.boundary, now - self.boundary
        offsets = None
        if idle and self.idle_start and times is not None:
            offsets = [(s - start, e - start) for s, e in times]
            if self.previous is not None and k + 1 < self.x.iterations:
                before, before_period = self.previous
                scale = max(period, before_period)
                worst = abs(period - before_period)
                for (s0, e0), (s1, e1) in zip(before, offsets, strict=True):
                    worst = max(worst, abs(s0 - s1), abs(e0 - e1))
                self.deviation = worst / scale if scale > 0 else (0.0 if worst == 0 else math.inf)
                if self.deviation <= REPEAT_TOLERANCE:
                    self.source, self.period = k, period
                    self.template = (self.marks, self._marks())
                    return True
                self.note = (
                    f"not extrapolated: iterations {k - 1} and {k} differ by {self.deviation:.1e} of the period "
                    f"(more than {REPEAT_TOLERANCE:g})"
                )
        elif not idle:
            self.note = f"not extrapolated: the boundary after iteration {k} is not idle (iterations overlap)"
        self.previous = (offsets, period) if offsets is not None else None
        self.idle_start, self.boundary, self.marks = idle, now, self._marks()
        return False

    def run_done(self) -> None:
        """The run is over: fill in the iterations it extrapolates, and say what was done (or why not)."""
        self.extrapolate()
        r = self.x.result
        r.repeat = r.repeat or self.note

    def extrapolate(self) -> None:
        """Fill iterations source+1 .. K-1 of the result with shifted copies of the source iteration."""
        if self.source is None or self.template is None:
            return
        x, r, k, d = self.x, self.x.result, self.source, self.period
        (t0, f0, c0, m0, s0, a0, mf0), (t1, f1, c1, m1, s1, a1, mf1) = self.template
        trace, flows = r.trace[t0:t1], r.flows[f0:f1]
        spans = [
            (r.compute, {h: v[c0.get(h, 0) : c1.get(h, 0)] for h, v in r.compute.items()}),
            (r.comm, {h: v[m0.get(h, 0) : m1.get(h, 0)] for h, v in r.comm.items()}),
            (r.stall, {h: v[s0.get(h, 0) : s1.get(h, 0)] for h, v in r.stall.items()}),
        ]
        end = r.iteration_end[k]
        copies = x.iterations - 1 - k
        for j in range(k + 1, x.iterations):
            shift = (j - k) * d
            r.iteration_end[j] = end + shift
            r.trace.extend(t._replace(iteration=j, start=t.start + shift, end=t.end + shift) for t in trace)
            r.flows.extend((a, b, n, s + shift, e + shift) for a, b, n, s, e in flows)
            for target, pieces in spans:
                for h, piece in pieces.items():
                    target[h].extend((s + shift, e + shift) for s, e in piece)
        r.memoized_iterations = copies
        r.memoized_activities = (a1 - a0) * copies
        r.memoized_flows += (mf1 - mf0) * copies
        x.completed = [x.iterations] * self.n
        x.started = [x.iterations] * self.n
        x.iterations_done = x.iterations
        r.repeat = (
            f"iterations {k + 1}..{x.iterations - 1} extrapolated from iteration {k} (period {d:.9g} s; "
            f"iterations {k - 1} and {k} agreed within {self.deviation:.1e} of the period)"
        )
