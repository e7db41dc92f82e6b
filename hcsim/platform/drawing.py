"""Layered pictures of a topology, to check it by eye (paper Fig. 4 workflow).

Layers top to bottom: core and top-level CXL switches, ToRs and rack CXL switches,
server switches (NIC, CPU, PCIe, XPU switch, server CXL switch), XPUs, memory. Within a
layer nodes are ordered by zone then name, so a server's parts stand together.

Labels stay legible at every size because they name *classes*, not nodes: each link
class (kind, bandwidth x lanes, latency) has its own colour and a legend entry with
its bandwidth, latency and count; each layer is labelled on the right with what it
holds ("16 XPU: H100"). Only small topologies (up to :data:`NODE_LABELS_UP_TO` nodes)
also get every node's name, and every link its bandwidth.
"""

from __future__ import annotations

import os
from typing import Any

import networkx as nx  # a Topology is typed as its base: topology.py imports this module

from hcsim.outputs import save_figure

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
_LINK_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
NODE_LABELS_UP_TO = 40
"""Topologies with at most this many nodes get every node's name and every link's bandwidth."""


def _si(value: float, unit: str) -> str:
    """``1.28e11, "B/s"`` -> ``"128 GB/s"``: three significant digits and a decimal prefix."""
    if value == 0 or value != value or value in (float("inf"), float("-inf")):
        return f"{value:g} {unit}"
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "u")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value * 1e9:.3g} n{unit}"


def link_classes(topology: nx.Graph) -> dict[tuple[str, float, float], list[tuple[str, str]]]:
    """Links grouped by (kind, bandwidth x lanes, latency), in a stable order (most links first)."""
    groups: dict[tuple[str, float, float], list[tuple[str, str]]] = {}
    for u, v, d in topology.edges(data=True):
        key = (str(d.get("link_kind", "generic")), float(d["bandwidth"]) * d.get("lanes", 1), float(d["latency"]))
        groups.setdefault(key, []).append((u, v))
    return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def _node_class(data: dict) -> str:
    if data.get("kind") == "xpu":
        return f"XPU: {data.get('device', 'custom')}"
    if data.get("kind") == "memory":
        return f"memory: {data.get('memory_kind', '?')}"
    return f"{data.get('switch_kind', 'generic')} switch"


def _layer(data: dict) -> float:
    kind = data.get("kind")
    if kind == "switch":
        sk = data.get("switch_kind")
        if sk == "cxl":
            depth = data.get("zone", "").count("/") + (1 if data.get("zone") else 0)
            return {0: 0.5, 1: 1.5}.get(depth, 4.5)
        return _LAYER.get(("switch", sk), 2)
    return _LAYER.get((kind, None), 3)


def layered_positions(topology: nx.Graph) -> dict[str, tuple[float, float]]:
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
    topology: nx.Graph, path: str | os.PathLike[str] | None = None, ax: Any = None, title: str | None = None
) -> Any:
    """Draw ``topology``; save a PNG to ``path`` when given. Returns the matplotlib Axes."""
    import matplotlib

    if ax is None and path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    classes = link_classes(topology)
    class_color = {key: _LINK_COLORS[i % len(_LINK_COLORS)] for i, key in enumerate(classes)}
    small = n_nodes <= NODE_LABELS_UP_TO
    for key, edges in classes.items():
        nx.draw_networkx_edges(
            topology, pos, edgelist=edges, ax=ax, width=0.8 if small else 0.4, alpha=0.7, edge_color=class_color[key]
        )
    nx.draw_networkx_nodes(topology, pos, ax=ax, node_size=size, node_color=colors, linewidths=0)
    if small:
        nx.draw_networkx_labels(topology, pos, ax=ax, font_size=6)
        labels = {(u, v): _si(bw, "B/s") for (_, bw, _), edges in classes.items() for u, v in edges}
        nx.draw_networkx_edge_labels(topology, pos, edge_labels=labels, ax=ax, font_size=5, rotate=False)
    # every layer labelled with the classes of node it holds, at the right edge
    by_layer: dict[float, dict[str, int]] = {}
    for _, data in topology.nodes(data=True):
        counts = by_layer.setdefault(-_layer(data), {})
        counts[_node_class(data)] = counts.get(_node_class(data), 0) + 1
    for y, counts in by_layer.items():
        text = ", ".join(f"{n} {what}" for what, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        ax.annotate(
            text,
            (1.0, y),
            xycoords=("axes fraction", "data"),
            xytext=(4, 0),
            textcoords="offset points",
            fontsize=8,
            va="center",
            ha="left",
        )
    names = ["core", "ToR / rack CXL", "NIC", "CPU", "PCIe / XPU sw", "XPU", "memory"]
    held = [i for i in range(len(names)) if -i in by_layer]  # layers without a node are not labelled
    ax.set_yticks([-i for i in held])
    ax.set_yticklabels([names[i] for i in held], fontsize=9)
    ax.tick_params(left=True, labelleft=True, bottom=False)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", ls="", color=c, label=d) for d, c in dev_color.items()]
    handles += [
        Line2D([], [], marker="o", ls="", color=_COLOR["memory"], label="host memory"),
        Line2D([], [], marker="o", ls="", color=_COLOR["cxl_type3"], label="CXL Type 3"),
        Line2D([], [], marker="o", ls="", color=_COLOR["switch"], label="switch"),
        Line2D([], [], marker="o", ls="", color=_COLOR["cxl_switch"], label="CXL switch"),
    ]
    handles += [
        Line2D([], [], color=class_color[key], label=f"{kind} {_si(bw, 'B/s')}, {_si(lat, 's')} (x{len(edges)})")
        for key, edges in classes.items()
        for kind, bw, lat in [key]
    ]
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.02),
        ncol=3,
        fontsize=8,
        title="nodes; links: kind bandwidth, latency (count)",
        title_fontsize=9,
        frameon=False,
    )
    ax.set_title(title or topology.graph.get("name", "topology"))
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    if path is not None:
        ax.figure.tight_layout()
        save_figure(ax.figure, path, close=created)
    return ax
