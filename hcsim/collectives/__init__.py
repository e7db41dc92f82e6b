"""Collective algorithms: a library by kind and name, plug-ins, MSCCL-IR, and their checks.

* :mod:`.schedule`: what an algorithm produces: flows with dependencies (and the
  shards they carry);
* :mod:`.table`: the algorithms by kind and name, and :func:`register` for your own;
* :mod:`.registry`: looking them up (also ``module:function`` paths and MSCCL-IR
  files), and the engine's :func:`build_plan`;
* :mod:`.algorithms`: hcsim's library (ring, coherent ring, chain, direct, ...);
* :mod:`.check`: proves a schedule delivers what its kind promises;
* :mod:`.view`: what an algorithm may know of the topology (servers, racks);
* :mod:`.plans`: the engine's form of a schedule (:class:`~.plans.FlowPlan`).

This layer knows no SimGrid: the engine (:mod:`hcsim.engine.exact`) runs the plans.

Guide: docs/collectives.md.
"""

from hcsim.collectives.check import check_schedule
from hcsim.collectives.plans import RING_KINDS, FlowPlan, plan, ring_steps
from hcsim.collectives.registry import (
    KINDS,
    Algorithm,
    algorithm,
    build_plan,
    build_schedule,
    describe,
    names,
    register,
)
from hcsim.collectives.schedule import Flow, Schedule
from hcsim.collectives.view import TopologyView

__all__ = [
    "KINDS",
    "RING_KINDS",
    "Algorithm",
    "Flow",
    "FlowPlan",
    "Schedule",
    "TopologyView",
    "algorithm",
    "build_plan",
    "build_schedule",
    "check_schedule",
    "describe",
    "names",
    "plan",
    "register",
    "ring_steps",
]
