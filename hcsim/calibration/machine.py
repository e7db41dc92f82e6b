"""A calibration applied to a machine: a compute vertex's time, and a DGX whose links carry NCCL's rates.

:func:`vertex_seconds` times the operators a training vertex carries (``ops``: pairs of an
operator and its pass) with :func:`~hcsim.calibration.compute.op_seconds`; a recomputed
forward costs a forward. :func:`calibrated_dgx_spec` gives the DGX's NVLinks the bandwidth NCCL's
own cost model assumes for its traffic (per-NVLink bandwidth x links), so that collectives run in
SimGrid at NCCL's rate with contention; NICs keep their line rate, as NCCL reads it from the device,
and wire latencies stay physical (NCCL's per-step software latency is not a wire's: putting it on
the links would also make latency-shortest routes leave NVLink). Invariant: nothing here changes
the ideal model (``--calibration ideal`` never calls it). docs/calibration.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from hcsim.calibration.compute import op_seconds
from hcsim.calibration.schema import Calibration
from hcsim.errors import HcsimError
from hcsim.platform.dgx import DGXSpec, dgx_spec

__all__ = ["calibrated_dgx_spec", "vertex_seconds"]

_PASS = {"fwd": "fwd", "bwd": "bwd", "recompute": "fwd"}


def vertex_seconds(ops: Iterable[tuple[Any, str]], precision: str, calib: Calibration) -> float:
    """Seconds of a compute vertex's operators, one after another on one GPU (a GPU stream).

    ``precision`` is the vertex's compute precision, used for operators that carry none.

    >>> from types import SimpleNamespace
    >>> from hcsim.calibration import load_calibration
    >>> calib = load_calibration("dgx-h100")
    >>> norm = SimpleNamespace(kind="norm", fwd_flops=0.0, bwd_flops=0.0, fwd_bytes=2668e6, bwd_bytes=0.0)
    >>> round(vertex_seconds([(norm, "fwd"), (norm, "recompute")], "bf16", calib) * 1e3, 4)  # 2 x (1 ms + launch)
    2.005
    """
    total = 0.0
    for op, pass_ in ops:
        p = _PASS.get(pass_)
        if p is None:
            raise HcsimError(f"pass {pass_!r} of operator {getattr(op, 'name', '?')!r} is unknown "
                             f"(valid: {', '.join(_PASS)})")  # fmt: skip
        total += op_seconds(op, p, getattr(op, "precision", None) or precision, calib)
    return total


def calibrated_dgx_spec(generation: str, calib: Calibration) -> DGXSpec:
    """``generation``'s DGX with NVLinks at the rate NCCL models for its traffic (calibration ``calib``).

    NVLink: ``per_nvlink_bw x nvlink_links`` per direction (NCCL's SM90 20.6 GB/s x 18 = 370.8 GB/s on
    H100, SM80 20 x 12 = 240 GB/s on A100); NIC: the calibration's line rate; latencies unchanged.

    >>> from hcsim.calibration import load_calibration
    >>> from hcsim.platform.dgx import dgx_spec
    >>> spec = calibrated_dgx_spec("h100", load_calibration("dgx-h100"))
    >>> round(spec.nvlink_bandwidth / 1e9, 1), spec.nvlink_latency == dgx_spec("h100").nvlink_latency
    (370.8, True)
    """
    base = dgx_spec(generation)
    if calib.gpus_per_node != 8:
        raise HcsimError(f"calibration {calib.name!r} has {calib.gpus_per_node} GPUs per node; a DGX has 8")
    sources = dict(base.sources)
    sources["nvlink_bandwidth"] = f"NCCL {calib.nccl_version} per-NVLink bandwidth x links ({calib.name})"
    sources["nic_bandwidth"] = f"NIC line rate ({calib.name})"
    return replace(
        base,
        nvlink_bandwidth=calib.per_nvlink_bw * calib.nvlink_links,
        nic_bandwidth=calib.nic_line_rate,
        sources=sources,
    )
