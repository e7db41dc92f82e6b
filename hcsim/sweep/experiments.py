"""Experiment functions ready for sweeps: keyword parameters in, a JSON-able dict out.

Any importable function works (``module:function`` in the spec); these cover the
platform and engine layers, and :func:`synthetic` exercises executors without SimGrid.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from hcsim.units import parse_bytes

__all__ = ["allreduce", "llama2_13b", "transfer", "synthetic"]


def _system(system: str, xpus: int, mix: str, cxl_bandwidth: str, cxl_latency: str):  # noqa: ANN202
    from hcsim.platform import builders

    if system == "cxl":
        return builders.cxl_system(xpus, mix=mix, cxl_bandwidth=cxl_bandwidth, cxl_latency=cxl_latency)
    if system == "noncoherent":
        return builders.noncoherent_system(xpus, mix=mix)
    if system == "ring":
        return builders.ring(xpus, mix)
    raise ValueError(f"system {system!r} is unknown (valid: cxl, noncoherent, ring)")


def allreduce(
    system: str = "cxl",
    xpus: int = 16,
    nbytes: str | float = "64MiB",
    algorithm: str = "ring",
    iterations: int = 2,
    mix: str = "H100",
    cxl_bandwidth: str = "128GBps",
    cxl_latency: str = "200ns",
) -> dict[str, Any]:
    """An allreduce over all XPUs of a paper system: iteration time and busiest link."""
    from hcsim.engine import simulate
    from hcsim.engine.report import summarize
    from hcsim.platform import compile_platform
    from hcsim.workload import allreduce_benchmark

    topo = _system(system, xpus, mix, cxl_bandwidth, cxl_latency)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.xml")
        compile_platform(topo, path)
        r = simulate(path, allreduce_benchmark(topo.xpus(), parse_bytes(nbytes), algorithm), iterations)
    s = summarize(r, top=1)
    top = s["top_links"][0] if s["top_links"] else {}
    return {
        "iteration_s": s["steady_iteration_s"],
        "activities": s["activities"],
        "busiest_link": top.get("link"),
        "busiest_utilization": top.get("mean_utilization"),
        "wall_s": r.wall_seconds,
    }


def llama2_13b(
    system: str = "cxl",
    xpus: int = 8,
    mix: str = "H100",
    coherent: bool | None = None,
    algorithm: str = "ring",
    iterations: int = 2,
    batch: int = 1,
    cxl_bandwidth: str = "128GBps",
    cxl_latency: str = "200ns",
) -> dict[str, Any]:
    """LLaMA2-13B data-parallel training on a paper system: batch/s and where the time goes."""
    from hcsim.engine import simulate
    from hcsim.engine.report import summarize
    from hcsim.platform import compile_platform
    from hcsim.workload.llama2 import llama2_13b as build

    topo = _system(system, xpus, mix, cxl_bandwidth, cxl_latency)
    coherent = system == "cxl" if coherent is None else coherent
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.xml")
        compile_platform(topo, path)
        r = simulate(path, build(topo.xpus(), batch, algorithm), iterations, coherent=coherent, record_flows=False)
    s = summarize(r)
    per = s["per_xpu_per_iteration_s"]
    return {
        "iteration_s": s["steady_iteration_s"],
        "batches_per_s": s["batches_per_s"],
        "compute_s": per["compute"],
        "communication_s": per["communication"],
        "exposed_communication_s": per["exposed_communication"],
        "memory_stall_s": per["memory_stall"],
        "remote_operators": s["remote_vertices"],
        "activities": s["activities"],
        "wall_s": r.wall_seconds,
    }


def transfer(
    system: str = "cxl",
    xpus: int = 16,
    src: int = 0,
    dst: int = 8,
    nbytes: str | float = "1GiB",
    mix: str = "H100",
    cxl_bandwidth: str = "128GBps",
    cxl_latency: str = "200ns",
) -> dict[str, Any]:
    """One transfer between two XPU ranks, timed by SimGrid."""
    from hcsim.platform import compile_platform
    from hcsim.platform.probe import simulate_transfers

    topo = _system(system, xpus, mix, cxl_bandwidth, cxl_latency)
    names = topo.xpus()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.xml")
        compile_platform(topo, path)
        (t,) = simulate_transfers(path, [(names[src], names[dst], parse_bytes(nbytes))])
    return {"seconds": t}


def synthetic(seconds: float = 0.0, value: float = 0.0, fail: bool = False, spin: bool = False) -> dict[str, Any]:
    """Wait (or burn CPU with ``spin``) for ``seconds``, then return ``value``, or raise if ``fail``."""
    end = time.perf_counter() + seconds
    if spin:
        x = 0
        while time.perf_counter() < end:
            x += 1
    else:
        time.sleep(seconds)
    if fail:
        raise RuntimeError(f"synthetic failure (value {value})")
    return {"value": value, "pid": os.getpid()}
