"""Execution layer: runs workload graphs on compiled platforms with SimGrid (paper Fig. 5).

The kernel below the fast paths: :func:`simulate` (the exact engine), its
:class:`EngineOptions`, and the memory placement policies. It imports nothing of
:mod:`hcsim.fast`, which hands it strategies and observers through
:class:`~hcsim.engine.strategy.Wing` (``docs/fast-paths.md``).
"""

from hcsim.engine.execution import EngineOptions
from hcsim.engine.memory import XpuInfo, all_local, fill_local_first
from hcsim.engine.simulator import RunResult, simulate

__all__ = ["EngineOptions", "RunResult", "XpuInfo", "all_local", "fill_local_first", "simulate"]
