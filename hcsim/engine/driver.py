"""The event loop of a controller actor, written once: activities, timers and the wait.

Every controller in hcsim (the engine's, the cluster scheduler's, JSQ batching's, each
queue-selection manager's) is one SimGrid actor driven by a :class:`Driver`: the
``ActivitySet`` it waits for and the key each activity's owner gave; *timers* in one
or more *lanes*; *exec ends* (an exec looked at when it would end alone on its XPU,
instead of waiting in the ``ActivitySet``); and *observers* told of every flow started
through :meth:`Driver.add_flow` and of its end or cancellation, before its owner is.

Invariant: at a wake-up the completed activity is handed back first, then every due
timer, lane 0 first, each lane in (date, order, insertion) order; an exec is completed
only if SimGrid says it is done. The loop ends when nothing is in flight and no timer
is left. ``docs/fast-paths.md`` ("The kernel's own speed-ups") says why.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Hashable
from typing import Any, Protocol

__all__ = ["Driver", "FlowObserver", "relative_horizon"]


def relative_horizon(now: float) -> float:
    """Timers due up to here are due now: 1e-12 relative (rounding in SimGrid's clock)."""
    return now + 1e-12 * (1.0 + now)


class FlowObserver(Protocol):
    """Told of every flow a driver starts and of its end (completion or cancellation)."""

    def flow_started(self, act: Any, key: Any, src: Any, dst: Any, links: Any, now: float) -> None: ...

    def flow_ended(self, act: Any, key: Any, now: float) -> None: ...


Complete = Callable[[Any, Any, float], None]  # (activity, its key, now)
Timer = Callable[[Any, float], None]  # (timer key, now)


class Driver:
    """One actor's ActivitySet, owner map, timer lanes, exec ends and wait loop.

    ``horizon(now)`` is the latest date a timer may have to be handled at ``now``
    (default :func:`relative_horizon`); ``lanes`` is the number of timer heaps.

    Example: a timer and an exec::

        >>> from hcsim.engine.driver import Driver
        >>> from hcsim.simgrid_runtime import import_simgrid, new_engine, run_isolated
        >>> def demo():
        ...     sg = import_simgrid()
        ...     engine = new_engine()
        ...     host = engine.netzone_root.add_netzone_full("z").add_host("h", 1e9)
        ...     seen = []
        ...     def controller():
        ...         d = Driver(sg)
        ...         d.add_timer(0.5, "half a second")
        ...         d.watch(sg.this_actor.exec_async(2e9), "two seconds of work")
        ...         d.run(lambda act, key, now: seen.append((now, key)), lambda key, now: seen.append((now, key)))
        ...     host.add_actor("controller", controller)
        ...     engine.netzone_root.seal()
        ...     engine.run()
        ...     return seen
        >>> run_isolated(demo)
        [(0.5, 'half a second'), (2.0, 'two seconds of work')]
    """

    def __init__(self, sg: Any, *, lanes: int = 1, horizon: Callable[[float], float] = relative_horizon) -> None:
        self.sg = sg
        self.set = sg.ActivitySet()
        self.owner: dict[Any, Any] = {}
        self.lanes: list[list[tuple]] = [[] for _ in range(lanes)]
        self.horizon = horizon
        self.observers: list[FlowObserver] = []
        self._flows: set[Any] = set()  # flows started through add_flow, while someone observes
        self._seq = 0
        self._cancelled: set[int] = set()
        self._push = self.set.push

    # ------------------------------------------------------------------ registering
    def watch(self, act: Any, key: Any) -> None:
        """Wait for ``act`` (started); hand it back with ``key`` when it completes."""
        self.owner[act] = key
        self._push(act)

    def add_flow(self, act: Any, key: Any, src: Any, dst: Any, links: Any = None, now: float = 0.0) -> None:
        """Wait for the flow ``act`` from ``src`` to ``dst`` and tell the observers (``links``: its route if known)."""
        self.owner[act] = key
        self._push(act)
        if self.observers:
            self._flows.add(act)
            for o in self.observers:
                o.flow_started(act, key, src, dst, links, now)

    def add_timer(self, at: float, key: Any, *, lane: int = 0, order: Hashable | None = None) -> int:
        """Call back ``timer(key, now)`` at ``at``; returns a handle for :meth:`cancel_timer`.

        Among timers of one lane due at the same date, ``order`` (default: insertion) decides.
        """
        self._seq += 1
        seq = self._seq
        heapq.heappush(self.lanes[lane], (at, seq if order is None else order, seq, key, None))
        return seq

    def add_exec(self, act: Any, key: Any, end: float) -> None:
        """Look at the started exec ``act`` at ``end`` (when it ends if alone on its host), not before."""
        self._seq += 1
        heapq.heappush(self.lanes[0], (end, self._seq, self._seq, key, act))

    def cancel_timer(self, handle: int) -> None:
        """The timer will neither be called back nor wake the loop."""
        self._cancelled.add(handle)

    def cancel(self, act: Any, now: float) -> Any:
        """Cancel the watched activity ``act``; returns its key (observers hear of a flow's end)."""
        act.cancel()
        self.set.erase(act)
        key = self.owner.pop(act)
        if act in self._flows:
            self._flows.discard(act)
            for o in self.observers:
                o.flow_ended(act, key, now)
        return key

    def observe(self, observer: FlowObserver) -> None:
        """Tell ``observer`` of every flow from now on (flows already in flight are not replayed)."""
        self.observers.append(observer)

    # ------------------------------------------------------------------ the loop
    def next_due(self) -> float:
        """The earliest date of a live timer or exec end (inf if none)."""
        best = math.inf
        cancelled = self._cancelled
        for lane in self.lanes:
            while lane and lane[0][2] in cancelled:
                cancelled.discard(heapq.heappop(lane)[2])
            if lane and lane[0][0] < best:
                best = lane[0][0]
        return best

    def _handed_back(self, act: Any, now: float, complete: Complete) -> None:
        key = self.owner.pop(act)
        if self._flows and act in self._flows:
            self._flows.discard(act)
            for o in self.observers:
                o.flow_ended(act, key, now)
        complete(act, key, now)

    def drain(self, now: float, complete: Complete) -> int:
        """Hand back every watched activity that has completed by now; returns how many."""
        s, n = self.set, 0
        while not s.empty() and (act := s.test_any()) is not None:
            self._handed_back(act, now, complete)
            n += 1
        return n

    def run(
        self,
        complete: Complete,
        timer: Timer | None = None,
        *,
        after_wake: Callable[[float, Any], None] | None = None,
        next_wake: Callable[[], float] | None = None,
    ) -> None:
        """Wait, hand back, repeat, until nothing is in flight and no timer is left.

        ``complete(act, key, now)`` gets each completed activity (and each exec whose end
        has come); ``timer(key, now)`` each due timer; ``after_wake(now, act)`` is called
        once per wake-up after both (``act``: the completed activity, or None);
        ``next_wake()`` adds a date the owner computes itself (e.g. a deadline that
        moves), counted like a timer that is never handed back.
        """
        sg = self.sg
        Engine, this_actor, Timeout = sg.Engine, sg.this_actor, sg.TimeoutException
        s = self.set
        wait_any, wait_for, empty = s.wait_any, s.wait_any_for, s.empty
        lanes, horizon, cancelled = self.lanes, self.horizon, self._cancelled
        handed_back, heappop = self._handed_back, heapq.heappop
        if len(lanes) == 1 and next_wake is None and after_wake is None and horizon is relative_horizon:
            self._run_one_lane(complete, timer)  # the engine's case, written for speed
            return
        while True:
            at = self.next_due()
            if next_wake is not None:
                at = min(at, next_wake())
            act = None
            if at == math.inf:
                if empty():
                    break
                act = wait_any()
            elif empty():
                this_actor.sleep_until(at)
            else:
                try:
                    act = wait_for(max(0.0, at - Engine.clock))
                except Timeout:
                    pass
            now = Engine.clock
            if act is not None:
                handed_back(act, now, complete)
            limit = horizon(now)
            for lane in lanes:
                while lane and lane[0][0] <= limit:
                    _, _, seq, key, exe = heappop(lane)
                    if seq in cancelled:
                        cancelled.discard(seq)
                    elif exe is None:
                        timer(key, now)  # type: ignore[misc]
                    elif exe.test() or exe.remaining <= 0.0:
                        # an exec due now that SimGrid finished: all its work is done (when it ends at
                        # the very date the wait times out, test() may not say so yet)
                        complete(exe, key, now)
                    else:  # not done (its host is shared, or rounding): wait for it
                        self.watch(exe, key)
            if after_wake is not None:
                after_wake(now, act)

    def _run_one_lane(self, complete: Complete, timer: Timer | None) -> None:
        """:meth:`run` with one timer lane, the default horizon and no ``after_wake``/``next_wake``: the engine's case.

        The same steps as the general loop, in the same order, with :meth:`next_due`,
        :meth:`_handed_back` and the horizon written inline, the clock read once per
        wake-up, and the set's emptiness read from the owner map (activities enter the set
        only through :meth:`watch` and :meth:`add_flow`, and leave it with their key): each
        call into SimGrid's bindings costs, and this loop runs once per completed activity.
        """
        sg = self.sg
        Engine, this_actor, Timeout = sg.Engine, sg.this_actor, sg.TimeoutException
        s = self.set
        wait_any, wait_for = s.wait_any, s.wait_any_for
        cancelled, heappop = self._cancelled, heapq.heappop
        lane, owner, flows, observers = self.lanes[0], self.owner, self._flows, self.observers
        owner_pop, inf = owner.pop, math.inf
        while True:
            while lane and lane[0][2] in cancelled:
                cancelled.discard(heappop(lane)[2])
            if not lane:  # only activities in flight (or nothing: the end)
                if not owner:
                    break
                act = wait_any()
                key = owner_pop(act)
                now = Engine.clock
                if flows and act in flows:
                    flows.discard(act)
                    for o in observers:
                        o.flow_ended(act, key, now)
                complete(act, key, now)
                continue
            at = lane[0][0]
            act = None
            if at == inf:
                if not owner:
                    break
                act = wait_any()
            elif not owner:
                this_actor.sleep_until(at)
            else:
                try:
                    act = wait_for(max(0.0, at - Engine.clock))
                except Timeout:
                    pass
            now = Engine.clock
            if act is not None:
                key = owner_pop(act)
                if flows and act in flows:
                    flows.discard(act)
                    for o in observers:
                        o.flow_ended(act, key, now)
                complete(act, key, now)
            limit = now + 1e-12 * (1.0 + now)  # relative_horizon(now)
            while lane and lane[0][0] <= limit:
                _, _, seq, key, exe = heappop(lane)
                if seq in cancelled:
                    cancelled.discard(seq)
                elif exe is None:
                    timer(key, now)  # type: ignore[misc]
                elif exe.test() or exe.remaining <= 0.0:
                    complete(exe, key, now)  # an exec due now that SimGrid finished (see run)
                else:
                    self.watch(exe, key)
