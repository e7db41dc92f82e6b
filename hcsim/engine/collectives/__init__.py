"""Collectives: what flows a communication vertex makes, and how they are run.

* :mod:`.plans`: a communication vertex as a :class:`~.plans.FlowPlan` (point-to-point
  flows with the dependencies of its algorithm) and the closed forms they follow;
* :mod:`.exact`: the exact strategy, every flow of the plan a SimGrid flow;
* :mod:`hcsim.engine.memoize`: the memoized strategy for ring collectives (a fast path).

A strategy is the object behind :class:`hcsim.engine.strategy.CommStrategy`.
"""

from hcsim.engine.collectives.plans import RING_KINDS, FlowPlan, plan, ring_steps

__all__ = ["RING_KINDS", "FlowPlan", "plan", "ring_steps"]
