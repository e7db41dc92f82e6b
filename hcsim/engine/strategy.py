"""The seam between the Fig. 5 rules and how a communication vertex is run.

An :class:`~hcsim.engine.execution.Execution` decides *when* a vertex execution starts
and what it releases when it ends; a :class:`CommStrategy` decides *how* a
communication vertex execution becomes SimGrid activities. Three strategies exist:

* :class:`hcsim.engine.exact.ExactFlows` (the exact path): every flow of the
  vertex's :class:`~hcsim.collectives.plans.FlowPlan` is a SimGrid flow, started
  when the flows it waits for have completed;
* :class:`hcsim.fast.memoize.MemoizedRings` (a fast path, ``memoize=True``): a ring
  collective runs step by step, and steps that would repeat on an unchanged network are
  skipped or kept out of SimGrid;
* :class:`hcsim.fast.rounds.MemoizedRounds` (the same switch): every other
  collective runs round by round (its plan's dependency levels), and a round measured
  alone on its links is skipped when it repeats on quiet links; plans where round
  barriers could hold a rank back are handed to the exact strategy.

The fast paths' contract (what they approximate, the measured bounds, the tests that
hold them) is in ``docs/fast-paths.md``.

A strategy starts flows with :meth:`Execution.flow` (keys tagged ``COMM``), is handed
each of them back when it completes, may set driver timers whose key starts with
itself (``(strategy, ...)``, handed back to :meth:`CommStrategy.timer`), and calls
:meth:`Execution.finish` when the vertex execution is over. A strategy that depends on
what else crosses the network registers a
:class:`~hcsim.engine.driver.FlowObserver` with the driver, which tells it of every
flow of the simulation's controller; nothing is left to callers to report.
"""

from __future__ import annotations

from typing import Any, Protocol

from hcsim.collectives import FlowPlan, TopologyView
from hcsim.engine.records import ActivityKey

__all__ = ["CommStrategy"]


class CommStrategy(Protocol):
    """How the executions of communication vertices are run."""

    def handles(self, data: dict[str, Any]) -> bool:
        """Whether this strategy runs the communication vertex with attributes ``data``."""
        ...

    def plan(self, data: dict[str, Any], view: TopologyView) -> FlowPlan:
        """The flows of the vertex (decided once, before the run; ``view``: servers and racks of the ranks)."""
        ...

    def launch(self, v: int, k: int, now: float) -> None:
        """Start execution ``k`` of communication vertex ``v``."""
        ...

    def complete(self, act: Any, key: ActivityKey, now: float) -> None:
        """A flow this strategy started has completed."""
        ...

    def timer(self, key: tuple, now: float) -> None:
        """A driver timer this strategy set is due."""
        ...
