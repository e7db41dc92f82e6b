"""ASTRA-sim analytical network YAML as an hcsim :class:`~hcsim.platform.topology.Topology`.

The format (astra-sim/astra-network-analytical, ``NetworkParser``): four lists of equal
length, one entry per dimension: ``topology`` (``Ring``, ``FullyConnected`` or ``Switch``),
``npus_count``, ``bandwidth`` (GB/s per link and direction, GB = 2**30 bytes as ASTRA-sim
reads it) and ``latency`` (ns per link). NPU ids run dimension 0 fastest; every line of
NPUs along a dimension forms one building block.

:func:`read_astra_network` parses a file; :func:`astra_network_topology` validates the
parsed mapping and assembles the topology (NPUs as XPUs ``npuNN`` ranked by id).

Invariant: links and latencies are ASTRA-sim's; routes are hcsim's (latency-weighted
shortest paths), identical to ASTRA-sim's for one dimension. See docs/formats.md.
"""

from __future__ import annotations

import math
import os
from itertools import combinations, product
from typing import Any

from hcsim.errors import HcsimError
from hcsim.platform.devices import Device
from hcsim.platform.topology import Topology

__all__ = ["read_astra_network", "astra_network_topology", "BLOCKS", "GB"]

BLOCKS = ("Ring", "FullyConnected", "Switch")
GB = 2.0**30  # ASTRA-sim's GB in GB/s


def read_astra_network(path: str | os.PathLike[str], xpu: str | Device = "H100") -> Topology:
    """The topology of an ASTRA-sim network YAML file, with ``xpu`` as every NPU."""
    import yaml

    path = os.fspath(path)
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        raise HcsimError(f"ASTRA-sim network file '{path}' does not exist") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HcsimError(f"ASTRA-sim network file '{path}' is not valid YAML: {first}") from None
    return astra_network_topology(data, xpu, where=f"ASTRA-sim network file '{path}'")


def _list(data: dict[str, Any], key: str, where: str) -> list[Any]:
    if key not in data:
        raise HcsimError(f"{where}: '{key}' is missing (valid: topology, npus_count, bandwidth, latency lists)")
    value = data[key]
    return value if isinstance(value, list) else [value]


def astra_network_topology(data: object, xpu: str | Device = "H100", where: str = "ASTRA-sim network") -> Topology:
    """The topology of a parsed ASTRA-sim network description (the YAML's mapping)."""
    if not isinstance(data, dict):
        raise HcsimError(f"{where} must be a mapping with topology, npus_count, bandwidth and latency")
    blocks = _list(data, "topology", where)
    counts = _list(data, "npus_count", where)
    bws = _list(data, "bandwidth", where)
    lats = _list(data, "latency", where)
    dims = len(blocks)
    if dims == 0:
        raise HcsimError(f"{where}: topology is empty (valid: a list such as [ Ring ] or [ Switch, Switch ])")
    for key, values in (("npus_count", counts), ("bandwidth", bws), ("latency", lats)):
        if len(values) != dims:
            raise HcsimError(f"{where}: {key} has {len(values)} entries but topology has {dims} (one per dimension)")
    for d in range(dims):
        if blocks[d] not in BLOCKS:
            raise HcsimError(f"{where}: topology {blocks[d]!r} (dimension {d}) is unknown (valid: {', '.join(BLOCKS)})")
        n = counts[d]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise HcsimError(f"{where}: npus_count {n!r} (dimension {d}) is invalid (valid: an integer >= 1)")
        bw, lat = bws[d], lats[d]
        if isinstance(bw, bool) or not isinstance(bw, (int, float)) or not bw > 0 or math.isinf(bw):
            raise HcsimError(f"{where}: bandwidth {bw!r} (dimension {d}) is invalid (valid: GB/s > 0)")
        if isinstance(lat, bool) or not isinstance(lat, (int, float)) or not lat >= 0 or math.isinf(lat):
            raise HcsimError(f"{where}: latency {lat!r} (dimension {d}) is invalid (valid: ns >= 0)")
    total = math.prod(counts)
    if total < 2:
        raise HcsimError(f"{where}: the network has {total} NPU (valid: at least 2)")
    if total > 65536:
        raise HcsimError(f"{where}: {total} NPUs is more than hcsim builds from a network file (valid: <= 65536)")
    shape = "x".join(str(c) for c in counts)
    direct = any(b != "Switch" for b in blocks)  # Ring and FullyConnected route through NPUs
    topo = Topology(name=f"astra-{'-'.join(blocks)}-{shape}", system="astra-sim", host_transit=direct)
    width = len(str(total - 1))
    names = [f"npu{i:0{width}d}" for i in range(total)]
    for i, name in enumerate(names):
        topo.add_xpu(name, xpu, rank=i)
    strides = [math.prod(counts[:d]) for d in range(dims)]
    for d in range(dims):
        n, bw, lat = counts[d], bws[d] * GB, lats[d] * 1e-9
        others = [range(counts[k]) for k in range(dims) if k != d]
        for coords in product(*others):
            base = 0
            it = iter(coords)
            for k in range(dims):
                if k != d:
                    base += next(it) * strides[k]
            line = [names[base + i * strides[d]] for i in range(n)]
            if n < 2:
                continue
            kind = blocks[d]
            if kind == "Ring":
                pairs = [(line[i], line[(i + 1) % n]) for i in range(n if n > 2 else 1)]
            elif kind == "FullyConnected":
                pairs = list(combinations(line, 2))
            else:
                sw = f"dim{d}.switch{base}"
                topo.add_switch(sw, "generic")
                pairs = [(x, sw) for x in line]
            for a, b in pairs:
                topo.add_link(a, b, bw, lat, link_kind=f"dim{d}")
    return topo.validate()
