"""Memory semantics (paper Fig. 3): where an operator's data lives, and what that costs.

A *placement policy* decides, for each compute vertex, whether its data is local or
remote, and if remote on which memory host; a policy is any callable ``(xpu_info,
vertices, coherent) -> {vertex: memory host or None}``. Data comes in blocks (``data``,
default the vertex's name), so a layer's passes share one placement. The default,
:func:`fill_local_first`, keeps blocks local in graph order while their footprints fit
the XPU's memory; the rest live in its CXL memory (coherent) or host DRAM (otherwise).

Costs, for F flops touching M bytes at rate R and local bandwidth W: local, the
roofline max(F / R, M / W); non-coherent remote, a copy of M bytes then the local
roofline; coherent remote, F / R on the XPU and M bytes moved at the same time, the
operator ending when both have. See ``docs/workloads-and-engine.md`` ("Memory").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hcsim.errors import HcsimError

__all__ = ["XpuInfo", "Placement", "fill_local_first", "all_local"]


@dataclass
class XpuInfo:
    """What the engine knows of an XPU, read from the platform's host properties."""

    name: str
    speed: float  # SimGrid host speed (flop/s at the platform's precision)
    fp16: float
    fp32: float
    capacity: float
    bandwidth: float
    host_memory: str | None
    cxl_memory: str | None

    def rate(self, precision: str) -> float:
        return self.fp16 if precision == "fp16" else self.fp32

    def remote(self, coherent: bool) -> str | None:
        return self.cxl_memory if coherent else self.host_memory


Placement = Callable[[XpuInfo, list[tuple[str, dict]], bool], dict[str, str | None]]


def fill_local_first(xpu: XpuInfo, vertices: list[tuple[str, dict]], coherent: bool) -> dict[str, str | None]:
    """Local while the footprints fit (graph order); the rest in the XPU's remote memory."""
    used = 0.0
    out: dict[str, str | None] = {}
    block_local: dict[str, bool] = {}
    remote = xpu.remote(coherent)  # one per XPU: looked up once (1.2k vertices per XPU at 1024 XPUs)
    for name, data in vertices:
        block = data.get("data", name)
        local = block_local.get(block)
        if local is None:
            used += data.get("footprint", data.get("mem_bytes", 0.0))
            local = block_local[block] = used <= xpu.capacity
        if local:
            out[name] = None
        elif remote is None:
            need = "cxl_memory (a coherent run needs a CXL memory)" if coherent else "host_memory"
            raise HcsimError(
                f"vertex '{name}' does not fit in the memory of XPU '{xpu.name}' ({xpu.capacity:.4g} B) "
                f"and the XPU has no {need} to hold it (valid: a platform whose XPUs name one)"
            )
        else:
            out[name] = remote
    return out


def all_local(xpu: XpuInfo, vertices: list[tuple[str, dict]], coherent: bool) -> dict[str, str | None]:
    """Everything in local memory, whatever the capacity (an idealized baseline)."""
    return {name: None for name, _ in vertices}
