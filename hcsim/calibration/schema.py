"""Load and validate a machine calibration file into frozen dataclasses.

A calibration file is YAML whose every leaf is an *entry* ``{value, unit, source, note}``:
the value in the stated unit, and the public source it was copied from (repository at a
commit and path, a paper and its table or figure, or a URL). The schema below is closed:
an unknown key, an entry without a source, a wrong unit, a negative number or a duplicate
YAML key is a one-line :class:`~hcsim.errors.HcsimError`. Numbers are converted to SI
(flop/s, bytes, bytes/s, seconds) once here, so the models never see units.

``load_calibration("ideal")`` returns ``None``: no calibration, today's ideal model.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, replace
from importlib import resources
from types import MappingProxyType
from typing import Any

from hcsim.errors import HcsimError
from hcsim.files import load_yaml

__all__ = [
    "CALIBRATIONS",
    "CROSS_ENTROPY",
    "FP8_RECIPES",
    "Calibration",
    "Entry",
    "load_calibration",
]

#: names of the shipped calibrations (``ideal`` means none)
CALIBRATIONS = ("dgx-h100", "dgx-a100", "ideal")

PRECISIONS = ("fp32", "bf16", "fp16", "fp8")
#: the loss's kernels (Megatron-Core): unfused (its default), "native" (cross_entropy_loss_fusion, jit-fused), "te"
#: (cross_entropy_fusion_impl "te": Transformer Engine's Triton kernels); docs/calibration.md, "Compute model"
CROSS_ENTROPY = ("unfused", "native", "te")
#: Transformer Engine's FP8 scaling recipes: delayed (DelayedScaling, amax history) and current (Float8CurrentScaling)
FP8_RECIPES = ("delayed", "current")
PEAK_KEYS = ("fp8", "bf16", "fp16", "tf32", "fp32")
PROTOCOLS = ("LL", "LL128", "Simple")
NCCL_ALGOS = ("tree", "ring", "nvls", "nvls_tree", "pat")
HEAD_DIMS = (64, 128, 256)
SERVING_PHASES = ("schedule", "sampler", "prepare_inputs", "process_outputs")  # vLLM's per-iteration host work
SERVING_TPS = (1, 2, 4)  # TP degrees a serving_host table is measured at

# unit spelling -> factor to SI, per family
_UNITS: dict[str, dict[str, float]] = {
    "flops": {"TFLOP/s": 1e12, "GFLOP/s": 1e9, "FLOP/s": 1.0},
    "bandwidth": {"TB/s": 1e12, "GB/s": 1e9, "MB/s": 1e6, "B/s": 1.0, "Gb/s": 1e9 / 8},
    "bytes": {"B": 1.0, "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "GB": 1e9, "MB": 1e6},
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9},
    "count": {"count": 1.0},
    "fraction": {"fraction": 1.0},
    "tokens": {"tokens": 1.0},
    "elements": {"elements": 1.0},
    "bool": {"bool": 1.0},
    "text": {"text": 1.0},
}


@dataclass(frozen=True)
class _Leaf:
    family: str
    shape: str = "scalar"  # "scalar" | "list" (any length) | "triple" (3 numbers) | "tiles" | "table" (may hold null)
    required: bool = True


def _q(family: str, shape: str = "scalar", required: bool = True) -> _Leaf:
    return _Leaf(family, shape, required)


_TABLE_KEYS = {f"d{d}_{m}": _q("flops", "table", required=False) for d in HEAD_DIMS for m in ("causal", "noncausal")}
_LAT = {a: _q("time", "triple") for a in NCCL_ALGOS}

SCHEMA: dict[str, Any] = {
    "device": {
        "name": _q("text"),
        "peak": {k: _q("flops", required=k != "fp8") for k in PEAK_KEYS},
        "hbm_capacity": _q("bytes"),
        "hbm_bandwidth": _q("bandwidth"),
        "sms": _q("count"),
    },
    "gemm": {
        "max_fraction": {p: _q("fraction", required=p != "fp8") for p in PRECISIONS},
        "tiles": _q("elements", "tiles"),
        "wave_quantization": _q("bool"),
        "fp8_quantize_bytes": _q("bytes", required=False),
    },
    "attention": {
        "kernel": _q("text"),
        "seqlens": _q("tokens", "list"),
        "fwd": dict(_TABLE_KEYS),
        "bwd": dict(_TABLE_KEYS),
    },
    # another attention kernel of the same machine, chosen per run (``--attention-backend flash``): the tables
    # as above, plus the HBM passes over the kernel's operands its layout copies add (TE's flash-attn path)
    "attention_flash": {
        "kernel": _q("text"),
        "seqlens": _q("tokens", "list"),
        "fwd": dict(_TABLE_KEYS),
        "bwd": dict(_TABLE_KEYS),
        "layout_copies": _q("count"),
    },
    "memory": {"hbm_achieved": _q("bandwidth")},
    "launch": {"kernel": _q("time")},
    "network": {
        "gpus_per_node": _q("count"),
        "nvlink_links": _q("count"),
        "nvlink_per_direction": _q("bandwidth"),
        "nics_per_node": _q("count"),
        "nic_line_rate": _q("bandwidth"),
    },
    "nccl": {
        "version": _q("text"),
        "per_nvlink_bw": _q("bandwidth"),
        "channels": _q("count"),
        "nvls_available": _q("bool"),
        "nvls_efficiency": _q("fraction"),
        "nvls_channels": _q("count"),
        "ll128_enabled": _q("bool"),
        "collnet_available": _q("bool"),
        "same_channels": _q("bool"),
        "net_overhead": _q("time"),
        "base_latency": dict(_LAT),
        "hw_latency": {"nvlink": dict(_LAT), "net": dict(_LAT)},
        "ll_max_bw": _q("bandwidth", "triple"),
        "per_channel_ring_ll128_bw": _q("bandwidth", "triple"),
        "per_channel_tree_ll128_bw": _q("bandwidth", "triple"),
        "per_channel_tree_bw": _q("bandwidth", "triple"),
        "per_channel_nvls_tree_bw": _q("bandwidth", "triple"),
        "buffer_sizes": _q("bytes", "triple"),
        "p2p_chunk_sizes": _q("bytes", "triple"),
    },
    # Transformer Engine's userbuffers TP overlap (optional; docs/training-features.md, "TP communication overlap")
    "tp_overlap": {
        "proj_fprop_sms": _q("count", required=False),
        "fc2_fprop_sms": _q("count", required=False),
        "rs_splits": _q("count", required=False),
    },
    # a serving framework's host time per continuous-batching iteration (optional; docs/serving.md, "Host time")
    "serving_host": {
        "framework": _q("text"),
        "batches": _q("count", "list"),
        **{phase: {f"tp{t}": _q("time", "list") for t in SERVING_TPS} for phase in SERVING_PHASES},
        "overlap_outputs": _q("bool"),
    },
}
_OPTIONAL_SECTIONS = ("attention_flash", "serving_host")  # absent: one attention kernel; no host time
_TOP_TEXT = ("name", "description")  # plain strings
_TOP_FREE = "sources"  # name -> string, for YAML anchors; not used by the models


@dataclass(frozen=True)
class Entry:
    """One calibrated number as written (``value``, ``unit``) with its SI value and its source."""

    path: str
    value: Any
    unit: str
    source: str
    note: str
    si: Any  # float, bool, str, or a tuple of floats (None for a missing table reading)


@dataclass(frozen=True)
class Calibration:
    """A loaded machine calibration, in SI units. ``entries`` keeps every number with its source.

    ``peak`` and ``gemm_fraction`` map precision -> flop/s and fraction (fp8 absent on A100);
    ``attention_fwd``/``attention_bwd`` map (head_dim, causal) -> FA TFLOP/s readings in flop/s
    at ``attention_seqlens`` (None where the reading is missing); NCCL latency tables map
    algorithm -> (LL, LL128, Simple) seconds; the ``*_bw`` triples are (1 node, 2 nodes, 4+ nodes).
    """

    name: str
    description: str
    path: str
    # device
    device_name: str
    peak: MappingProxyType
    hbm_capacity: float
    hbm_bandwidth: float
    sms: int
    # gemm
    gemm_fraction: MappingProxyType
    tiles: tuple[tuple[int, int], ...]
    wave_quantization: bool
    fp8_quantize_bytes: float  # HBM bytes per element an FP8 GEMM operand's quantization moves (0: not timed)
    # attention
    attention_kernel: str
    attention_seqlens: tuple[float, ...]
    attention_fwd: MappingProxyType
    attention_bwd: MappingProxyType
    # memory, launch
    hbm_achieved: float
    launch: float
    # network
    gpus_per_node: int
    nvlink_links: int
    nvlink_per_direction: float
    nics_per_node: int
    nic_line_rate: float
    # nccl
    nccl_version: str
    per_nvlink_bw: float
    channels: int
    nvls_available: bool
    nvls_efficiency: float
    nvls_channels: int
    ll128_enabled: bool
    collnet_available: bool
    same_channels: bool
    net_overhead: float
    base_latency: MappingProxyType
    hw_latency_nvlink: MappingProxyType
    hw_latency_net: MappingProxyType
    ll_max_bw: tuple[float, float, float]
    per_channel_ring_ll128_bw: tuple[float, float, float]
    per_channel_tree_ll128_bw: tuple[float, float, float]
    per_channel_tree_bw: tuple[float, float, float]
    per_channel_nvls_tree_bw: tuple[float, float, float]
    buffer_sizes: tuple[float, float, float]
    p2p_chunk_sizes: tuple[float, float, float]
    entries: MappingProxyType  # dotted path -> Entry
    # TP overlap (userbuffers): SMs the reduce-scatter pipeline beside the attention output (proj) and the
    # MLP down (fc2) projection's forward GEMM reserves (0: none), and the chunks it splits the GEMM into
    ub_proj_fprop_sms: int = 0
    ub_fc2_fprop_sms: int = 0
    ub_rs_splits: int = 4
    # the machine's flash-attn kernel, if calibrated: (kernel, seqlens, fwd, bwd, layout copies), and the HBM
    # passes over its operands the chosen kernel's layout copies add per pass (0: reads the layout in place)
    attention_flash: tuple | None = None
    attention_copies: float = 0.0
    # a serving framework's host seconds per iteration, if calibrated: (batches, {tp: blocking seconds per
    # batch}, {tp: output-processing seconds per batch}, whether output processing overlaps the next step)
    serving_host: tuple | None = None
    # the software stack's kernels around the operators (run flags, not machine numbers: docs/calibration.md)
    cross_entropy: str = "unfused"  # the loss's kernels: Megatron-Core's unfused, its jit-fused ("native") or TE's
    fp8_recipe: str = "delayed"  # Transformer Engine's FP8 scaling: delayed (amax history) or current (per tensor)
    dropout: bool = False  # the run drops hidden activations: its residual adds write and read a mask

    def with_stack(
        self, cross_entropy: str | None = None, fp8_recipe: str | None = None, dropout: bool | None = None
    ) -> Calibration:
        """This calibration with the training stack's kernel choices (None: keep): ``cross_entropy`` one of
        :data:`CROSS_ENTROPY` (Megatron-Core's ``cross_entropy_loss_fusion`` / ``cross_entropy_fusion_impl``),
        ``fp8_recipe`` one of :data:`FP8_RECIPES` (Transformer Engine's DelayedScaling / Float8CurrentScaling),
        ``dropout``: hidden dropout on (Megatron's fused bias-dropout-add writes a mask the backward reads).

        >>> from hcsim.calibration import load_calibration
        >>> load_calibration("dgx-h100").with_stack(cross_entropy="te", fp8_recipe="current").fp8_recipe
        'current'
        """
        for what, value, valid in (("cross entropy", cross_entropy, CROSS_ENTROPY),
                                   ("fp8 recipe", fp8_recipe, FP8_RECIPES)):  # fmt: skip
            if value is not None and value not in valid:
                raise HcsimError(f"{what} {value!r} is unknown (valid: {', '.join(valid)})")
        if dropout is not None and not isinstance(dropout, bool):
            raise HcsimError(f"dropout {dropout!r} is invalid (valid: True, False)")
        return replace(
            self, cross_entropy=cross_entropy or self.cross_entropy, fp8_recipe=fp8_recipe or self.fp8_recipe,
            dropout=self.dropout if dropout is None else dropout,
        )  # fmt: skip

    def with_attention(self, backend: str) -> Calibration:
        """This calibration with ``backend``'s attention kernel: "auto" (the ``attention`` tables, the
        framework's own choice) or "flash" (the ``attention_flash`` tables, e.g. FlashAttention-2 when a
        stack turns cuDNN's fused attention off).

        >>> from hcsim.calibration import load_calibration
        >>> load_calibration("dgx-h100").with_attention("flash").attention_kernel[:19]
        'FlashAttention-2 (f'
        """
        if backend == "auto":
            return self
        if backend != "flash":
            raise HcsimError(f"attention backend {backend!r} is unknown (valid: auto, flash)")
        if self.attention_flash is None:
            raise HcsimError(
                f"attention backend 'flash': calibration {self.name} has no attention_flash tables "
                "(valid: auto, or a calibration with an attention_flash section: docs/calibration.md)"
            )
        kernel, seqlens, fwd, bwd, copies = self.attention_flash
        return replace(
            self, attention_kernel=kernel, attention_seqlens=seqlens, attention_fwd=fwd, attention_bwd=bwd,
            attention_copies=copies, attention_flash=None,
        )  # fmt: skip


def _number(x: Any, path: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise HcsimError(f"calibration {path}: value {x!r} is not a finite number")
    if x < 0:
        raise HcsimError(f"calibration {path}: value {x!r} is negative (valid: >= 0)")
    return float(x)


def _entry(raw: Any, spec: _Leaf, path: str) -> Entry:
    if not isinstance(raw, dict):
        raise HcsimError(f"calibration {path}: {raw!r} is not an entry (valid: {{value, unit, source, note}})")
    unknown = sorted(set(raw) - {"value", "unit", "source", "note"})
    if unknown:
        raise HcsimError(f"calibration {path}: unknown key {unknown[0]!r} (valid: value, unit, source, note)")
    for key in ("value", "unit"):
        if key not in raw:
            raise HcsimError(f"calibration {path}: missing {key!r} (valid: {{value, unit, source, note}})")
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise HcsimError(
            f"calibration {path}: entry has no source (valid: a non-empty string naming the public source)"
        )
    note = raw.get("note", "")
    if not isinstance(note, str):
        raise HcsimError(f"calibration {path}: note {note!r} is not a string")
    unit = raw["unit"]
    units = _UNITS[spec.family]
    if unit not in units:
        raise HcsimError(f"calibration {path}: unit {unit!r} is invalid (valid: {', '.join(units)})")
    factor = units[unit]
    value = raw["value"]
    if spec.family == "bool":
        if not isinstance(value, bool):
            raise HcsimError(f"calibration {path}: value {value!r} is not a boolean (valid: true, false)")
        si: Any = value
    elif spec.family == "text":
        if not isinstance(value, str) or not value.strip():
            raise HcsimError(f"calibration {path}: value {value!r} is not a non-empty string")
        si = value
    elif spec.shape == "scalar":
        si = _number(value, path) * factor
        if spec.family == "count":
            if si != int(si):
                raise HcsimError(f"calibration {path}: value {value!r} is not an integer count")
            si = int(si)
    elif spec.shape == "tiles":
        ok = isinstance(value, list) and value and all(isinstance(t, list) and len(t) == 2 for t in value)
        if not ok:
            raise HcsimError(f"calibration {path}: value {value!r} is not a list of [m, n] tiles")
        tiles = []
        for t in value:
            for x in t:
                if isinstance(x, bool) or not isinstance(x, int) or x < 1:
                    raise HcsimError(f"calibration {path}: tile {t!r} is invalid (valid: [m, n], integers >= 1)")
            tiles.append((t[0], t[1]))
        si = tuple(tiles)
    else:
        if not isinstance(value, list) or not value:
            raise HcsimError(f"calibration {path}: value {value!r} is not a non-empty list of numbers")
        if spec.shape == "triple" and len(value) != 3:
            raise HcsimError(f"calibration {path}: value {value!r} must have 3 numbers")
        items = []
        for x in value:
            if x is None and spec.shape == "table":
                items.append(None)
            else:
                items.append(_number(x, path) * factor)
        si = tuple(items)
    if isinstance(value, list):  # keep the entry immutable like the rest of the result
        value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
    return Entry(path, value, unit, source, note, si)


def _walk(raw: Any, schema: dict[str, Any], path: str, out: dict[str, Entry]) -> None:
    if not isinstance(raw, dict):
        raise HcsimError(f"calibration {path}: {raw!r} is not a mapping (valid keys: {', '.join(schema)})")
    for key in raw:
        if key not in schema:
            where = f"{path}.{key}" if path else str(key)
            raise HcsimError(f"calibration: unknown key {where!r} (valid keys here: {', '.join(schema)})")
    for key, spec in schema.items():
        where = f"{path}.{key}" if path else key
        if key not in raw:
            if not path and key in _OPTIONAL_SECTIONS:
                continue
            if isinstance(spec, _Leaf) and not spec.required:
                continue
            if isinstance(spec, dict) and all(isinstance(s, _Leaf) and not s.required for s in spec.values()):
                continue
            raise HcsimError(f"calibration: missing key {where!r} (valid keys here: {', '.join(schema)})")
        if isinstance(spec, _Leaf):
            out[where] = _entry(raw[key], spec, where)
        else:
            _walk(raw[key], spec, where, out)


def _table(entries: dict[str, Entry], section: str, nseq: int, kernel: str = "attention") -> MappingProxyType:
    table = {}
    for d in HEAD_DIMS:
        for mask in ("causal", "noncausal"):
            entry = entries.get(f"{kernel}.{section}.d{d}_{mask}")
            if entry is None:
                continue
            if len(entry.si) != nseq:
                raise HcsimError(
                    f"calibration {entry.path}: {len(entry.si)} values for {nseq} seqlens (valid: one per seqlen)"
                )
            if all(v is None for v in entry.si):
                raise HcsimError(f"calibration {entry.path}: every value is null (valid: at least one number)")
            table[(d, mask == "causal")] = entry.si
    if not table:
        raise HcsimError(f"calibration {kernel}.{section}: no table (valid keys: {', '.join(k for k in _TABLE_KEYS)})")
    return MappingProxyType(table)


def _build(data: Any, path: str) -> Calibration:
    if not isinstance(data, dict):
        raise HcsimError(f"calibration {path}: the file is not a YAML mapping")
    valid = (*_TOP_TEXT, _TOP_FREE, *SCHEMA)
    for key in data:
        if key not in valid:
            raise HcsimError(f"calibration: unknown key {key!r} (valid keys: {', '.join(valid)})")
    for key in _TOP_TEXT:
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise HcsimError(f"calibration {path}: {key!r} must be a non-empty string")
    free = data.get(_TOP_FREE, {})
    if not isinstance(free, dict) or not all(isinstance(v, str) and v.strip() for v in free.values()):
        raise HcsimError(f"calibration {path}: 'sources' must map names to non-empty strings")
    entries: dict[str, Entry] = {}
    _walk({k: v for k, v in data.items() if k in SCHEMA}, SCHEMA, "", entries)
    e = {k: v.si for k, v in entries.items()}
    for key in ("device.sms", "network.gpus_per_node", "network.nvlink_links", "network.nics_per_node"):
        if e[key] < 1:
            raise HcsimError(f"calibration {key}: {e[key]} must be >= 1")
    for key in [k for k in e if k.startswith("gemm.max_fraction.")] + ["nccl.nvls_efficiency"]:
        if e[key] > 1:
            raise HcsimError(f"calibration {key}: {e[key]} is a fraction (valid: 0..1)")
    peak = {k[len("device.peak.") :]: v for k, v in e.items() if k.startswith("device.peak.")}
    frac = {k[len("gemm.max_fraction.") :]: v for k, v in e.items() if k.startswith("gemm.max_fraction.")}
    if ("fp8" in peak) != ("fp8" in frac):
        raise HcsimError("calibration: device.peak.fp8 and gemm.max_fraction.fp8 go together (valid: both or neither)")
    for key in ("tp_overlap.proj_fprop_sms", "tp_overlap.fc2_fprop_sms"):
        if key in e and e[key] >= e["device.sms"]:
            raise HcsimError(f"calibration {key}: {e[key]} SMs (valid: fewer than device.sms = {e['device.sms']})")
    if e.get("tp_overlap.rs_splits", 1) < 1:
        raise HcsimError(f"calibration tp_overlap.rs_splits: {e['tp_overlap.rs_splits']} must be >= 1")
    for kernel in ("attention", "attention_flash"):
        lengths = e.get(f"{kernel}.seqlens")
        if lengths is not None and (list(lengths) != sorted(set(lengths)) or lengths[0] <= 0):
            raise HcsimError(f"calibration {kernel}.seqlens: {lengths} (valid: increasing positive lengths)")
    seqlens = e["attention.seqlens"]
    flash = None
    if "attention_flash.kernel" in e:
        fseq = e["attention_flash.seqlens"]
        flash = (
            e["attention_flash.kernel"],
            fseq,
            _table(entries, "fwd", len(fseq), "attention_flash"),
            _table(entries, "bwd", len(fseq), "attention_flash"),
            e["attention_flash.layout_copies"],
        )

    host = _serving_host(e) if "serving_host.framework" in e else None

    def lat(prefix: str) -> MappingProxyType:
        return MappingProxyType({a: e[f"{prefix}.{a}"] for a in NCCL_ALGOS})

    return Calibration(
        name=data["name"],
        description=data["description"],
        path=path,
        device_name=e["device.name"],
        peak=MappingProxyType(peak),
        hbm_capacity=e["device.hbm_capacity"],
        hbm_bandwidth=e["device.hbm_bandwidth"],
        sms=e["device.sms"],
        gemm_fraction=MappingProxyType(frac),
        tiles=e["gemm.tiles"],
        wave_quantization=e["gemm.wave_quantization"],
        fp8_quantize_bytes=e.get("gemm.fp8_quantize_bytes", 0.0),
        attention_kernel=e["attention.kernel"],
        attention_seqlens=seqlens,
        attention_fwd=_table(entries, "fwd", len(seqlens)),
        attention_bwd=_table(entries, "bwd", len(seqlens)),
        attention_flash=flash,
        hbm_achieved=e["memory.hbm_achieved"],
        launch=e["launch.kernel"],
        gpus_per_node=e["network.gpus_per_node"],
        nvlink_links=e["network.nvlink_links"],
        nvlink_per_direction=e["network.nvlink_per_direction"],
        nics_per_node=e["network.nics_per_node"],
        nic_line_rate=e["network.nic_line_rate"],
        nccl_version=e["nccl.version"],
        per_nvlink_bw=e["nccl.per_nvlink_bw"],
        channels=e["nccl.channels"],
        nvls_available=e["nccl.nvls_available"],
        nvls_efficiency=e["nccl.nvls_efficiency"],
        nvls_channels=e["nccl.nvls_channels"],
        ll128_enabled=e["nccl.ll128_enabled"],
        collnet_available=e["nccl.collnet_available"],
        same_channels=e["nccl.same_channels"],
        net_overhead=e["nccl.net_overhead"],
        base_latency=lat("nccl.base_latency"),
        hw_latency_nvlink=lat("nccl.hw_latency.nvlink"),
        hw_latency_net=lat("nccl.hw_latency.net"),
        ll_max_bw=e["nccl.ll_max_bw"],
        per_channel_ring_ll128_bw=e["nccl.per_channel_ring_ll128_bw"],
        per_channel_tree_ll128_bw=e["nccl.per_channel_tree_ll128_bw"],
        per_channel_tree_bw=e["nccl.per_channel_tree_bw"],
        per_channel_nvls_tree_bw=e["nccl.per_channel_nvls_tree_bw"],
        buffer_sizes=e["nccl.buffer_sizes"],
        p2p_chunk_sizes=e["nccl.p2p_chunk_sizes"],
        entries=MappingProxyType(entries),
        ub_proj_fprop_sms=e.get("tp_overlap.proj_fprop_sms", 0),
        ub_fc2_fprop_sms=e.get("tp_overlap.fc2_fprop_sms", 0),
        ub_rs_splits=e.get("tp_overlap.rs_splits", 4),
        serving_host=host,
    )


def _serving_host(e: dict[str, Any]) -> tuple:
    """The ``serving_host`` section as (batches, blocking, outputs, overlap); one line if a table is off."""
    batches = e["serving_host.batches"]
    if list(batches) != sorted(set(batches)) or batches[0] < 1:
        raise HcsimError(f"calibration serving_host.batches: {batches} (valid: increasing batch sizes >= 1)")
    for phase in SERVING_PHASES:
        for t in SERVING_TPS:
            if len(e[f"serving_host.{phase}.tp{t}"]) != len(batches):
                raise HcsimError(
                    f"calibration serving_host.{phase}.tp{t}: {len(e[f'serving_host.{phase}.tp{t}'])} values for "
                    f"{len(batches)} batches (valid: one per batch)"
                )
    blocking = {t: tuple(map(sum, zip(*(e[f"serving_host.{p}.tp{t}"] for p in SERVING_PHASES[:3]), strict=True)))
                for t in SERVING_TPS}  # fmt: skip
    outputs = {t: e[f"serving_host.process_outputs.tp{t}"] for t in SERVING_TPS}
    return batches, MappingProxyType(blocking), MappingProxyType(outputs), e["serving_host.overlap_outputs"]


def parse_calibration(text: str, path: str = "<string>") -> Calibration:
    """A :class:`Calibration` from YAML text (``path`` only names it in messages)."""
    import yaml

    try:
        data = load_yaml(text, "calibration")  # a key given twice: one line naming it
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HcsimError(f"calibration {path}: not valid YAML ({first})") from None
    return _build(data, path)


@functools.cache
def _shipped(name: str) -> Calibration:
    """A shipped calibration, parsed once (the result is frozen, so sharing it is safe)."""
    ref = resources.files("hcsim.calibration") / "data" / f"{name}.yaml"
    return parse_calibration(ref.read_text(encoding="utf-8"), name)


def load_calibration(name_or_path: str | os.PathLike) -> Calibration | None:
    """The calibration ``name_or_path``: a shipped name (``dgx-h100``, ``dgx-a100``), ``ideal``
    (returns ``None``: no calibration, the ideal model), or a path to a ``.yaml`` file.

    >>> calib = load_calibration("dgx-h100")
    >>> calib.peak["bf16"] / 1e12, calib.sms
    (989.4, 132)
    >>> load_calibration("ideal") is None
    True
    """
    name = os.fspath(name_or_path)
    if name == "ideal":
        return None
    if name in CALIBRATIONS:
        return _shipped(name)
    if name.endswith((".yaml", ".yml")):
        try:
            with open(name, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise HcsimError(f"calibration {name!r}: cannot read ({exc.strerror})") from None
        except UnicodeDecodeError:
            raise HcsimError(f"calibration {name!r}: not UTF-8 text") from None
        return parse_calibration(text, name)
    raise HcsimError(f"calibration {name!r} is unknown (valid: {', '.join(CALIBRATIONS)}, or a path to a .yaml file)")
