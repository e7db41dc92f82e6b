"""Platform layer: topologies of XPUs, memory and switches, compiled to SimGrid.

A :class:`Topology` (a NetworkX graph) is built by hand or by the builders (the paper's
systems, ring topologies, stars, leaf-spines, fat trees), routed by :class:`Router` and
compiled by :func:`compile_platform` to SimGrid XML whose lone transfers take exactly
sum(latencies) + size / bottleneck bandwidth. This layer imports only the core modules.

Guide: docs/platform.md.
"""

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
