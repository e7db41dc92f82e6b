"""The seam between the Fig. 5 rules and how a communication vertex is run.

An :class:`~hcsim.engine.execution.Execution` decides *when* a vertex execution starts
and what it releases; a :class:`CommStrategy` decides *how* a communication vertex
becomes SimGrid activities: :class:`~hcsim.engine.exact.ExactFlows` (every flow of its
plan), :class:`~hcsim.engine.tasks.TaskFlows` (the same on SimGrid's Task plugin), or a
strategy a :class:`Wing` hands in (the fast paths, :mod:`hcsim.fast`).
:class:`RunObserver` is what else a caller may attach: told of vertex, iteration and run
ends.

Invariant: a strategy starts flows with :meth:`Execution.flow` (keys tagged ``COMM``),
is handed each back when it completes, may set driver timers whose key starts with
itself (handed back to :meth:`CommStrategy.timer`), and calls
:meth:`Execution.finish` when the vertex execution is over. Anything that must see
every flow observes the driver (:class:`~hcsim.engine.driver.FlowObserver`). See
``docs/fast-paths.md`` ("How the fast paths are built").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from hcsim.collectives import FlowPlan, TopologyView
from hcsim.engine.records import ActivityKey

__all__ = ["CommStrategy", "RunObserver", "Wing"]


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


class RunObserver(Protocol):
    """Told of an execution's progress; each method is optional (an observer defines those it needs).

    ``vertex_done(v, k, start, now)``: vertex ``v`` finished its execution ``k``;
    ``iteration_done(k, now)``: every vertex finished iteration ``k`` (a true answer stops
    launching executions of later iterations); ``run_done()``: the driver's loop is over
    (called by the driver's owner through :meth:`Execution.run_done`).
    """

    def iteration_done(self, k: int, now: float) -> bool | None: ...


class Wing(Protocol):
    """What a caller adds to an execution: strategies tried before the exact one, and observers.

    ``prepare(platform, config)`` is called once before the run, in the caller's process
    (the platform file's path and the ``--cfg`` items); ``strategies(execution, exact)``
    while the execution is set up, before any plan is made (the first strategy whose
    ``handles`` accepts a communication vertex runs it); ``observers(execution)`` once the
    execution is set up, before its run starts (they are told before the caller's).
    """

    def prepare(self, platform: str, config: tuple[str, ...]) -> None: ...

    def strategies(self, execution: Any, exact: Any) -> Sequence[CommStrategy]: ...

    def observers(self, execution: Any) -> Sequence[Any]: ...
