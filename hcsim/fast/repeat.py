"""Iteration repeat: once an iteration repeats the one before, extrapolate the rest.

:class:`IterationRepeat` is an observer of an execution (``repeat=True``): it records
each vertex execution's dates; when iteration k ran between two *idle* boundaries
(nothing in flight, no vertex of k+1 started) and agrees with iteration k-1 date for
date within :data:`REPEAT_TOLERANCE` of the period, the execution stops launching, and
after the run iterations k+1.. are filled in as iteration k shifted by whole periods
(their activities in ``memoized_activities``; ``result.repeat`` says what was done or
why not). :func:`platform_is_stationary` refuses platforms with time-varying profiles.

Invariant: in exact arithmetic the run from an idle boundary is the run from the one
before, shifted; the date check covers SimGrid's rounding of an absolute clock.
Overlapping iterations are never extrapolated. The argument is in
``docs/fast-paths.md`` ("Repeat").
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
