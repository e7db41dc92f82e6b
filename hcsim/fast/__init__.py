"""The fast paths: folding, memoized collectives and iteration repeat, a wing above the exact engine.

:func:`simulate_system` (from a topology) and :func:`simulate` (a platform file) take
:class:`RunOptions`; :class:`FastPaths` builds one run's strategies and observers from
them and hands them to the engine. How the pieces fit, what each approximates and the
words they use: ``docs/fast-paths.md``.
"""

from hcsim.fast.folding import Fold, fold_data_parallel
from hcsim.fast.system import FastPaths, RunOptions, is_coherent, simulate, simulate_system

__all__ = ["FastPaths", "Fold", "RunOptions", "fold_data_parallel", "is_coherent", "simulate", "simulate_system"]
