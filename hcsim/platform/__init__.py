"""Platform layer: topologies of XPUs, memory and switches, compiled to SimGrid."""

from hcsim.platform.builders import (
    TABLE5,
    LinkSpec,
    cxl_system,
    leaf_spine,
    noncoherent_system,
    paper_system,
    ring,
    single_server,
    star,
)
from hcsim.platform.compiler import CompileStats, compile_platform
from hcsim.platform.devices import PRESETS, Device, device
from hcsim.platform.routing import Router, path_bandwidth, path_latency
from hcsim.platform.topology import Topology

__all__ = [
    "TABLE5",
    "PRESETS",
    "CompileStats",
    "Device",
    "LinkSpec",
    "Router",
    "Topology",
    "compile_platform",
    "cxl_system",
    "device",
    "leaf_spine",
    "noncoherent_system",
    "paper_system",
    "path_bandwidth",
    "path_latency",
    "ring",
    "single_server",
    "star",
]
