"""Layered pictures of a topology, to check it by eye (paper Fig. 4 workflow).

Layers top to bottom: core and top-level CXL switches, ToRs and rack CXL switches,
server switches (NIC, CPU, PCIe, XPU switch, server CXL switch), XPUs, memory. Within a
layer nodes are ordered by zone then name, so a server's parts stand together.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hcsim.platform.topology import Topology

_LAYER = {
    ("switch", "core"): 0,
    ("switch", "tor"): 1,
    ("switch", "nic"): 2,
    ("switch", "cpu"): 3,
    ("switch", "pcie"): 4,
    ("switch", "xpu"): 4,
    ("switch", "generic"): 1,
    ("xpu", None): 5,
    ("memory", None): 6,
}
_COLOR = {"switch": "#8c8c8c", "cxl_switch": "#17becf", "xpu": "#d62728", "memory": "#1f77b4", "cxl_type3": "#9edae5"}
_DEVICE_COLORS = ["#d62728", "#ff7f0e", "#9467bd", "#2ca02c", "#8c564b", "#e377c2"]


def _layer(data: dict) -> float:
    kind = data.get("kind")
    if kind == "switch":
        sk = data.get("switch_kind")
        if sk == "cxl":
            depth = data.get("zone", "").count("/") + (1 if data.get("zone") else 0)
            return {0: 0.5, 1: 1.5}.get(depth, 4.5)
        return _LAYER.get(("switch", sk), 2)
    return _LAYER.get((kind, None), 3)


def layered_positions(topology: Topology) -> dict[str, tuple[float, float]]:
    """x in [0, 1] within each layer, y = -layer."""
    layers: dict[float, list[str]] = {}
    for n, data in topology.nodes(data=True):
        layers.setdefault(_layer(data), []).append(n)
    pos = {}
    for layer, nodes in layers.items():
        nodes.sort(key=lambda n: (topology.nodes[n].get("zone", ""), n))
        count = len(nodes)
        for i, n in enumerate(nodes):
            pos[n] = ((i + 0.5) / count, -layer)
    return pos


def draw_topology(
    topology: Topology, path: str | os.PathLike[str] | None = None, ax: Any = None, title: str | None = None
) -> Any:
    """Draw ``topology``; save a PNG to ``path`` when given. Returns the matplotlib Axes."""
    import matplotlib

    if ax is None and path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    created = ax is None
    if created:
        fig, ax = plt.subplots(figsize=(14, 7), dpi=110)
    pos = layered_positions(topology)
    n_nodes = topology.number_of_nodes()
    size = max(2.0, min(60.0, 6000.0 / max(n_nodes, 1)))
    devices = sorted({d for _, d in topology.nodes(data="device") if d})
    dev_color = {d: _DEVICE_COLORS[i % len(_DEVICE_COLORS)] for i, d in enumerate(devices)}

    def color(data: dict) -> str:
        if data.get("kind") == "xpu":
            return dev_color.get(data.get("device"), _COLOR["xpu"])
        if data.get("switch_kind") == "cxl":
            return _COLOR["cxl_switch"]
        if data.get("memory_kind") == "cxl_type3":
            return _COLOR["cxl_type3"]
        return _COLOR[data.get("kind", "switch")]

    colors = [color(data) for _, data in topology.nodes(data=True)]
    edge_colors = ["#1f77b4" if k == "cxl" else "#bbbbbb" for _, _, k in topology.edges(data="link_kind")]
    nx.draw_networkx_edges(topology, pos, ax=ax, width=0.3, alpha=0.5, edge_color=edge_colors)
    nx.draw_networkx_nodes(topology, pos, ax=ax, node_size=size, node_color=colors, linewidths=0)
    if n_nodes <= 60:
        nx.draw_networkx_labels(topology, pos, ax=ax, font_size=6)
    ax.set_yticks([0, -1, -2, -3, -4, -5, -6])
    ax.set_yticklabels(["core", "ToR / rack CXL", "NIC", "CPU", "PCIe / XPU sw", "XPU", "memory"])
    ax.tick_params(left=True, labelleft=True, bottom=False)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", ls="", color=c, label=d) for d, c in dev_color.items()]
    handles += [
        Line2D([], [], marker="o", ls="", color=_COLOR["memory"], label="host memory"),
        Line2D([], [], marker="o", ls="", color=_COLOR["cxl_type3"], label="CXL Type 3"),
        Line2D([], [], marker="o", ls="", color=_COLOR["switch"], label="switch"),
        Line2D([], [], marker="o", ls="", color=_COLOR["cxl_switch"], label="CXL switch"),
        Line2D([], [], color="#1f77b4", label="CXL link"),
    ]
    ax.legend(handles=handles, loc="upper right", fontsize=7)
    ax.set_title(title or topology.graph.get("name", "topology"))
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    if path is not None:
        from hcsim.outputs import save_figure

        ax.figure.tight_layout()
        save_figure(ax.figure, path, close=created)
    return ax
