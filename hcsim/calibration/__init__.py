"""Calibrated machine models: per-operator compute time and NCCL-like collective cost.

The ideal model (datasheet peaks, link speed) stays hcsim's default; a calibration is one YAML
file per machine (``hcsim/calibration/data/<name>.yaml`` or a user's file) whose every number
cites a public microbenchmark, datasheet or NCCL's own source. The layer sits between
``platform`` and ``collectives``: it imports only core modules, and its functions are pure.

>>> from types import SimpleNamespace
>>> calib = load_calibration("dgx-h100")
>>> up = SimpleNamespace(kind="linear", fwd_flops=2 * 8192 * 14336 * 4096, bwd_flops=4 * 8192 * 14336 * 4096,
...                      fwd_bytes=2 * (8192 * 4096 + 4096 * 14336 + 8192 * 14336), bwd_bytes=0.0,
...                      gemm=(8192, 14336, 4096))
>>> round(op_seconds(up, "fwd", "bf16", calib) * 1e6)  # microseconds
1251
>>> nccl_select("allreduce", 1 << 30, 16, 2, calib)
('nvls_tree', 'Simple')

See docs/calibration.md for the schema, the formulas and the validation tables.
"""

from hcsim.calibration.compute import attention_seconds, gemm_seconds, op_seconds, wave_efficiency
from hcsim.calibration.nccl import bus_factor, nccl_select, nccl_time
from hcsim.calibration.schema import CALIBRATIONS, Calibration, Entry, load_calibration, parse_calibration

__all__ = [
    "CALIBRATIONS",
    "Calibration",
    "Entry",
    "attention_seconds",
    "bus_factor",
    "gemm_seconds",
    "load_calibration",
    "nccl_select",
    "nccl_time",
    "op_seconds",
    "parse_calibration",
    "wave_efficiency",
]
