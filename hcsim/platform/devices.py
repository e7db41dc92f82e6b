"""Accelerator presets and custom devices.

A preset is what a datasheet says, dense (no structured-sparsity doubling):

* **H100 SXM5 80GB** - NVIDIA H100 Tensor Core GPU datasheet (2023): FP32 67 TFLOPS,
  FP16 Tensor Core 989.4 TFLOPS dense (1,979 with sparsity), 80 GB HBM3 at 3.35 TB/s.
* **A100 SXM4 80GB** - NVIDIA A100 Tensor Core GPU datasheet (2021): FP32 19.5 TFLOPS,
  FP16 Tensor Core 312 TFLOPS dense (624 with sparsity), 80 GB HBM2e at 2,039 GB/s.
* **V100 SXM2 32GB** - NVIDIA Tesla V100 datasheet (2020): FP32 15.7 TFLOPS,
  Tensor (FP16) 125 TFLOPS, 32 GB HBM2 at 900 GB/s.

NVIDIA's "80 GB" is 80 GiB of addressable HBM; capacities below say so explicitly.
Bandwidths are decimal (GB/s = 1e9 B/s), as the datasheets print them.

Anything else (an FPGA, an ASIC, a future GPU) is a :class:`Device` built from its
attributes, e.g. ``Device("my-asic", fp16="400TFLOPS", fp32="100TFLOPS",
memory="64GiB", memory_bandwidth="2TBps")``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hcsim.errors import HcsimError
from hcsim.registry import Registry
from hcsim.units import parse_bandwidth, parse_bytes, parse_flops

__all__ = ["Device", "PRESETS", "device"]


@dataclass(frozen=True)
class Device:
    """An XPU type: compute rates per precision and its local (HBM) memory."""

    name: str
    fp16_flops: float
    fp32_flops: float
    memory: float
    memory_bandwidth: float
    source: str = "custom"

    def __init__(
        self,
        name: str,
        fp16: object,
        fp32: object,
        memory: object,
        memory_bandwidth: object,
        source: str = "custom",
    ) -> None:
        values = {
            "fp16_flops": parse_flops(fp16, f"device '{name}' fp16"),
            "fp32_flops": parse_flops(fp32, f"device '{name}' fp32"),
            "memory": parse_bytes(memory, f"device '{name}' memory"),
            "memory_bandwidth": parse_bandwidth(memory_bandwidth, f"device '{name}' memory_bandwidth"),
        }
        for key, value in values.items():
            if not value > 0:
                raise HcsimError(f"device '{name}': {key} must be > 0, got {value!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "source", source)
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def flops(self, precision: str) -> float:
        """Peak rate at ``precision`` ("fp16" or "fp32")."""
        if precision == "fp16":
            return self.fp16_flops
        if precision == "fp32":
            return self.fp32_flops
        raise HcsimError(f"precision {precision!r} is unknown (valid: fp16, fp32)")


PRESETS: Registry[Device] = Registry(
    "XPU preset",
    {
        "H100": Device(
            "H100", "989.4TFLOPS", "67TFLOPS", "80GiB", "3.35TBps", "NVIDIA H100 Tensor Core GPU datasheet, SXM5"
        ),
        "A100": Device(
            "A100", "312TFLOPS", "19.5TFLOPS", "80GiB", "2039GBps", "NVIDIA A100 Tensor Core GPU datasheet, SXM4 80GB"
        ),
        "V100": Device("V100", "125TFLOPS", "15.7TFLOPS", "32GiB", "900GBps", "NVIDIA Tesla V100 datasheet, SXM2 32GB"),
    },
    valid="{}; or build a Device",
)
_ALIASES = {"H100-SXM": "H100", "H100-SXM5": "H100", "A100-SXM": "A100", "A100-80GB": "A100", "V100-SXM2": "V100"}


def device(name: str | Device) -> Device:
    """The preset called ``name`` (case-insensitive), or ``name`` itself if it is a Device."""
    if isinstance(name, Device):
        return name
    key = _ALIASES.get(str(name).upper(), str(name).upper())
    if key not in PRESETS:
        raise PRESETS.unknown(name)
    return PRESETS[key]
