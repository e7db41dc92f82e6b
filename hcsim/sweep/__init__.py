"""Parameter sweeps on a local process pool or a Dask cluster: resumable and fault tolerant.

A spec (:mod:`.spec`) names an importable function and a grid of parameter points;
:func:`run_sweep` (:mod:`.runner`) runs each point in a process of its own
(:mod:`.point`) on either executor through one code path and appends a row per point as
it completes. :mod:`.experiments` holds ready-made point functions, and
:mod:`.collective_bench` nccl-tests-style measurements of collectives.

Invariant: re-running a sweep skips every point with an ``ok`` row; the results file is
the same byte for byte for the same spec with one worker.

Guide: docs/sweeps.md.
"""

from hcsim.sweep.runner import (
    SweepReport,
    read_results,
    run_point,
    run_sweep,
)
from hcsim.sweep.spec import Point, SweepSpec, load_spec

__all__ = [
    "Point",
    "SweepReport",
    "SweepSpec",
    "load_spec",
    "read_results",
    "run_point",
    "run_sweep",
]
