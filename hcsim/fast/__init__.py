"""The fast paths: folding, memoized collectives and iteration repeat around the exact engine."""

from hcsim.fast.folding import Fold, fold_data_parallel
from hcsim.fast.system import is_coherent, simulate_system

__all__ = ["Fold", "fold_data_parallel", "is_coherent", "simulate_system"]
