"""Accelerator presets and custom devices.

A preset is what a datasheet says, dense (no structured-sparsity doubling):

* **H100 SXM5 80GB** - NVIDIA H100 Tensor Core GPU datasheet (2023): FP32 67 TFLOPS,
  FP16 Tensor Core 989.4 TFLOPS dense (1,979 with sparsity), 80 GB HBM3 at 3.35 TB/s.
* **A100 SXM4 80GB** - NVIDIA A100 Tensor Core GPU datasheet (2021): FP32 19.5 TFLOPS,
  FP16 Tensor Core 312 TFLOPS dense (624 with sparsity), 80 GB HBM2e at 2,039 GB/s.
* **V100 SXM2 32GB** - NVIDIA Tesla V100 datasheet (2020): FP32 15.7 TFLOPS,
  Tensor (FP16) 125 TFLOPS, 32 GB HBM2 at 900 GB/s.

``H100-SXM`` and ``A100-SXM`` (the DGX presets) add optional ``bf16``/``tf32``/``fp8`` peaks,
sourced in :data:`PEAK_SOURCES`; :func:`device_rate` refuses a precision a device lacks.

NVIDIA's "80 GB" is 80 GiB of addressable HBM; capacities below say so explicitly.
Bandwidths are decimal (GB/s = 1e9 B/s), as the datasheets print them.

Anything else (an FPGA, an ASIC, a future GPU) is a :class:`Device` built from its
attributes, e.g. ``Device("my-asic", fp16="400TFLOPS", fp32="100TFLOPS",
memory="64GiB", memory_bandwidth="2TBps")``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hcsim.errors import HcsimError
from hcsim.registry import Registry
from hcsim.units import parse_bandwidth, parse_bytes, parse_flops

__all__ = ["Device", "PRESETS", "PEAK_SOURCES", "PRECISIONS", "device", "device_rate"]


@dataclass(frozen=True)
class Device:
    """An XPU type: compute rates per precision and its local (HBM) memory."""

    name: str
    fp16_flops: float
    fp32_flops: float
    memory: float
    memory_bandwidth: float
    source: str = "custom"
    # optional peaks (None: the device has no such rate); kept out of repr so existing presets print as before
    bf16_flops: float | None = field(default=None, repr=False)
    tf32_flops: float | None = field(default=None, repr=False)
    fp8_flops: float | None = field(default=None, repr=False)

    def __init__(
        self,
        name: str,
        fp16: object,
        fp32: object,
        memory: object,
        memory_bandwidth: object,
        source: str = "custom",
        *,
        bf16: object = None,
        tf32: object = None,
        fp8: object = None,
    ) -> None:
        values = {
            "fp16_flops": parse_flops(fp16, f"device '{name}' fp16"),
            "fp32_flops": parse_flops(fp32, f"device '{name}' fp32"),
            "memory": parse_bytes(memory, f"device '{name}' memory"),
            "memory_bandwidth": parse_bandwidth(memory_bandwidth, f"device '{name}' memory_bandwidth"),
        }
        for key, rate in (("bf16", bf16), ("tf32", tf32), ("fp8", fp8)):
            if rate is not None:
                values[f"{key}_flops"] = parse_flops(rate, f"device '{name}' {key}")
        for key, value in values.items():
            if not value > 0:
                raise HcsimError(f"device '{name}': {key} must be > 0, got {value!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "source", source)
        for key in OPTIONAL_RATES:
            object.__setattr__(self, key, None)
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def precisions(self) -> tuple[str, ...]:
        """The precisions this device has a peak rate for, in :data:`PRECISIONS` order."""
        return tuple(p for p in PRECISIONS if getattr(self, f"{p}_flops", None) is not None)

    def flops(self, precision: str) -> float:
        """Peak rate at ``precision`` ("fp16" or "fp32")."""
        if precision == "fp16":
            return self.fp16_flops
        if precision == "fp32":
            return self.fp32_flops
        if precision in ("bf16", "tf32", "fp8"):
            return device_rate(self, precision)
        raise HcsimError(f"precision {precision!r} is unknown (valid: fp16, fp32)")


PRECISIONS = ("fp8", "bf16", "fp16", "tf32", "fp32")
"""Every precision a device may have a peak for (dense tensor-core rates; FP32 is the non-tensor rate)."""
OPTIONAL_RATES = ("bf16_flops", "tf32_flops", "fp8_flops")
"""Device attributes that are None on devices without that precision (written to platforms only when set)."""


def device_rate(xpu: Device, precision: str) -> float:
    """Peak rate of ``xpu`` at ``precision`` (flop/s): why a separate call: FP8 on an A100 must fail, not fall back.

    >>> device_rate(PRESETS["H100-SXM"], "fp8") / 1e12
    1979.0
    """
    rate = getattr(xpu, f"{precision}_flops", None) if precision in PRECISIONS else None
    if rate is None:
        raise HcsimError(f"device '{xpu.name}' has no {precision!r} rate (valid: {', '.join(xpu.precisions())})")
    return float(rate)


# Dense (no structured sparsity) peaks. Source keys as in docs/dgx.md "Sources":
# ML = github stas00/ml-engineering @744d01e compute/accelerator/README.md (peak table; it cites the NVIDIA
# datasheets and halves their with-sparsity FP8/BF16/TF32 figures); DS = the NVIDIA datasheet named.
PEAK_SOURCES: dict[str, dict[str, str]] = {
    "H100-SXM": {
        "fp8": "1979 TFLOP/s dense: ML accelerator table; NVIDIA H100 datasheet (SXM5) 3,958 with sparsity / 2",
        "bf16": "989.4 TFLOP/s dense: ML (1830 MHz x 512 FMA x 2 x 528 tensor cores); datasheet 1,979 sparse / 2",
        "fp16": "989.4 TFLOP/s dense: as bf16 (same tensor-core rate; ML; NVIDIA H100 datasheet)",
        "tf32": "494.5 TFLOP/s dense: ML; NVIDIA H100 datasheet (SXM5) 989 with sparsity / 2",
        "fp32": "67 TFLOP/s (non-tensor): ML; NVIDIA H100 datasheet (SXM5)",
        "memory": "80 GB HBM3 (80 GiB addressable): ML memory table; NVIDIA H100 datasheet (SXM5)",
        "memory_bandwidth": "3.35 TB/s: ML memory table; NVIDIA H100 datasheet (SXM5)",
    },
    "A100-SXM": {
        "bf16": "312 TFLOP/s dense: ML (1410 MHz x 256 FMA x 2 x 432 tensor cores); "
        "NVIDIA A100 datasheet 624 sparse / 2",
        "fp16": "312 TFLOP/s dense: as bf16 (ML; NVIDIA A100 datasheet)",
        "tf32": "156 TFLOP/s dense: ML; NVIDIA A100 datasheet 312 with sparsity / 2",
        "fp32": "19.5 TFLOP/s (non-tensor): ML; NVIDIA A100 datasheet",
        "fp8": "none: the A100 (Ampere) has no FP8 tensor cores (ML: 'no FP8 on A100')",
        "memory": "80 GB HBM2e (80 GiB addressable): ML; NVIDIA A100 datasheet, SXM4 80GB",
        "memory_bandwidth": "2,039 GB/s: NVIDIA A100 datasheet (SXM4 80GB); MLCommons DGX-A100 system description",
    },
}


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
    # the DGX presets: every number's source in PEAK_SOURCES
    "H100-SXM": Device(
        "H100-SXM", "989.4TFLOPS", "67TFLOPS", "80GiB", "3.35TBps",
        "NVIDIA H100 datasheet (SXM5), dense peaks as in ml-engineering (see PEAK_SOURCES)",
        bf16="989.4TFLOPS", tf32="494.5TFLOPS", fp8="1979TFLOPS",
    ),
    "A100-SXM": Device(
        "A100-SXM", "312TFLOPS", "19.5TFLOPS", "80GiB", "2039GBps",
        "NVIDIA A100 datasheet (SXM4 80GB), dense peaks as in ml-engineering (see PEAK_SOURCES)",
        bf16="312TFLOPS", tf32="156TFLOPS",
    ),
    },
    valid="{}; or build a Device",
)  # fmt: skip
_ALIASES = {"H100-SXM5": "H100-SXM", "A100-SXM4": "A100-SXM", "A100-80GB": "A100", "V100-SXM2": "V100"}


def device(name: str | Device) -> Device:
    """The preset called ``name`` (case-insensitive), or ``name`` itself if it is a Device."""
    if isinstance(name, Device):
        return name
    key = _ALIASES.get(str(name).upper(), str(name).upper())
    if key not in PRESETS:
        raise PRESETS.unknown(name)
    return PRESETS[key]
