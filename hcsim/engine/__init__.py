"""Execution layer: runs workload graphs on compiled platforms with SimGrid (paper Fig. 5)."""

from hcsim.engine.execution import EngineOptions
from hcsim.engine.memory import XpuInfo, all_local, fill_local_first
from hcsim.engine.simulator import RunResult, simulate

__all__ = ["EngineOptions", "RunResult", "XpuInfo", "all_local", "fill_local_first", "simulate"]
