"""``hcsim platform import``: topologies described by other tools, recognised by their content.

* ASTRA-sim analytical network YAML (``topology``/``npus_count``/``bandwidth``/``latency``
  lists): :mod:`hcsim.formats.astra_network`;
* InfraGraph infrastructure, YAML or JSON (``devices``/``instances``/``edges``):
  :mod:`hcsim.formats.infragraph`.

Invariant: a file that is neither is a one-line error naming both formats' keys. See
docs/formats.md.
"""

from __future__ import annotations

import os

from hcsim.errors import HcsimError
from hcsim.files import check_input_file, load_yaml
from hcsim.formats.astra_network import read_astra_network
from hcsim.formats.infragraph import read_infragraph
from hcsim.platform.topology import Topology

__all__ = ["FORMATS", "detect_format", "import_topology"]

FORMATS = ("astra-sim", "infragraph")


def detect_format(path: str | os.PathLike[str]) -> str:
    """Which of :data:`FORMATS` a file is, from its top-level keys."""
    import yaml

    path = os.fspath(path)
    check_input_file(path, "topology file", "an ASTRA-sim network YAML or an InfraGraph YAML/JSON file")
    try:
        with open(path) as f:
            data = load_yaml(f.read(), f"topology file '{path}'")  # JSON is YAML too; a key given twice is refused
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise HcsimError(f"topology file '{path}' is not valid YAML or JSON: {first}") from None
    if isinstance(data, dict) and "npus_count" in data and "topology" in data:
        return "astra-sim"
    if isinstance(data, dict) and "instances" in data and "devices" in data:
        return "infragraph"
    raise HcsimError(
        f"topology file '{path}' is neither an ASTRA-sim network (topology, npus_count, bandwidth, latency) nor an "
        "InfraGraph infrastructure (devices, instances, edges)"
    )


def import_topology(
    path: str | os.PathLike[str],
    *,
    xpu: str = "H100",
    link_bandwidth: object = None,
    link_latency: object = None,
    fmt: str | None = None,
) -> Topology:
    """The topology of an ASTRA-sim network YAML or an InfraGraph file; ``fmt`` forces one of :data:`FORMATS`."""
    fmt = fmt or detect_format(path)
    if fmt == "astra-sim":
        if link_bandwidth is not None or link_latency is not None:
            raise HcsimError("--link-bandwidth/--link-latency apply to InfraGraph files (ASTRA-sim networks give both)")
        return read_astra_network(path, xpu)
    if fmt == "infragraph":
        return read_infragraph(path, xpu, link_bandwidth=link_bandwidth, link_latency=link_latency)
    raise HcsimError(f"format {fmt!r} is unknown (valid: {', '.join(FORMATS)})")
