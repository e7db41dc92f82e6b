"""The fast paths: folding, memoized collectives and iteration repeat around the exact engine."""

from hcsim.fast.folding import Fold, fold_data_parallel
from hcsim.fast.system import FastPaths, RunOptions, is_coherent, simulate, simulate_system

__all__ = ["FastPaths", "Fold", "RunOptions", "fold_data_parallel", "is_coherent", "simulate", "simulate_system"]
