"""Parameter sweeps on a local process pool or a Dask cluster: resumable and fault tolerant."""

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
