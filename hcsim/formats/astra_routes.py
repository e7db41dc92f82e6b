"""Routes by rule for imported ASTRA-sim networks: the order that makes SimGrid route as hcsim.

A SimGrid ``DijkstraCache`` zone holds one route per link and takes, between two hosts, the
path of fewest links; of several, the one whose last hop leaves the lowest-numbered node,
nodes being numbered in the order routes first name them. hcsim's router takes the
latency-weighted shortest path; of several, the one whose last link weighs most (latency,
then 1/bandwidth: :func:`~hcsim.platform.routing.Router`). :func:`ring_route_order` (one
ring) and :func:`grid_route_order` (several dimensions, at most one of them a Ring or
FullyConnected, the others Switches) list the routes so that the two rules pick the same
path from every NPU to every NPU of a higher id. On such a grid every dimension's links are
equal and a shortest path changes each coordinate by the fewest hops of its dimension, so
fewest links and least latency are the same paths. The other direction takes the same
dimension order, where hcsim's explicit routes take it reversed: same links in kind, and
the same collective times (tests/formats/test_astra_routes.py; docs/results/astra-sim-import.md).

:func:`grid_spec` recognises such a grid from the topology itself (a folded topology is
another shape and keeps explicit routes).
"""

from __future__ import annotations

import math
from itertools import product
from typing import Any

from hcsim.platform.routing import _weight
from hcsim.platform.topology import Topology

__all__ = ["grid_lines", "grid_spec", "grid_route_order", "route_ranks", "ring_route_order", "npu_names"]

GB = 2.0**30  # ASTRA-sim's GB in GB/s


def npu_names(counts: list[int]) -> list[str]:
    """The NPUs' names, ``npuNN`` by id (zero-padded to the width of the last id)."""
    total = math.prod(counts)
    width = len(str(total - 1))
    return [f"npu{i:0{width}d}" for i in range(total)]


def grid_lines(counts: list[int], d: int) -> list[tuple[int, list[int]]]:
    """Every line of NPUs along dimension ``d``: (id of its first NPU, the ids along it), dimension 0 fastest."""
    dims = len(counts)
    strides = [math.prod(counts[:k]) for k in range(dims)]
    out = []
    for coords in product(*[range(counts[k]) for k in range(dims) if k != d]):
        it = iter(coords)
        base = sum(next(it) * strides[k] for k in range(dims) if k != d)
        out.append((base, [base + i * strides[d] for i in range(counts[d])]))
    return out


def ring_route_order(ring: list[str]) -> list[tuple[str, str]]:
    """The ring's links in the order that makes SimGrid's Dijkstra break ties as hcsim's router does.

    Between opposite NPUs of an even ring (the only ties), hcsim's router (ties to the first
    path in sorted node order) arrives from the neighbour nearer to NPU 0 round the ring, or the
    lower-numbered of two equally near. So the nodes are named in the order (distance from
    NPU 0, index): each link below brings in one new node, the last closes the ring.
    """
    n = len(ring)
    order = sorted(range(n), key=lambda i: (min(i, n - i), i))
    seen, links = {order[0]}, []
    for i in order[1:]:
        j = next(k for k in ((i - 1) % n, (i + 1) % n) if k in seen)
        links.append((min(i, j), max(i, j)))
        seen.add(i)
    every = {(min(i, (i + 1) % n), max(i, (i + 1) % n)) for i in range(n)}
    links += sorted(every - set(links))
    return [(ring[a], ring[b]) for a, b in links]


def _line_links(block: str, names: list[str]) -> list[tuple[str, str]]:
    """The links of one Ring or FullyConnected line, in the order that names its NPUs as the router ranks them."""
    n = len(names)
    if block == "FullyConnected" or n == 2:
        return [(names[i], names[j]) for i in range(n) for j in range(i + 1, n)]
    return ring_route_order(names)


def grid_spec(topology: Topology) -> dict[str, list[Any]] | None:
    """The network description a multi-dimensional grid was imported from, if ``topology`` is exactly that grid.

    Only grids of two or more dimensions wider than one NPU, at most one of them a Ring or
    FullyConnected: the node ids of :func:`grid_route_order` cannot rank two NPU dimensions.
    The topology must hold the description's NPUs, switches and links and nothing else
    (no memory, zones, gateways or pinned routes), every link at its dimension's values.
    """
    spec = topology.graph.get("astra_network")
    if not isinstance(spec, dict) or topology.routes() or topology.gateways():
        return None
    blocks, counts = spec["topology"], spec["npus_count"]
    wide = [d for d in range(len(counts)) if counts[d] > 1]
    if len(wide) < 2:
        return None
    if not topology.graph.get("host_transit") or any(z for _, z in topology.nodes(data="zone", default="")):
        return None
    names = npu_names(counts)
    switches = {f"dim{d}.switch{base}" for d in wide if blocks[d] == "Switch" for base, _ in grid_lines(counts, d)}
    if set(topology.nodes_of("xpu")) != set(names) or set(topology.nodes) != set(names) | switches:
        return None
    want: dict[tuple[str, str], int] = {}
    for d in wide:
        for base, line in grid_lines(counts, d):
            if blocks[d] == "Switch":
                pairs = [(names[i], f"dim{d}.switch{base}") for i in line]
            else:
                pairs = _line_links(blocks[d], [names[i] for i in line])
            want.update(((a, b) if a < b else (b, a), d) for a, b in pairs)
    if topology.number_of_edges() != len(want) or dict(topology.nodes(data="route_rank")) != route_ranks(spec):
        return None
    for a, b, data in topology.edges(data=True):
        d = want.get((a, b) if a < b else (b, a))
        if d is None or data.get("lanes", 1) != 1 or data.get("link_kind") != f"dim{d}":
            return None
        if data["bandwidth"] != spec["bandwidth"][d] * GB or data["latency"] != spec["latency"][d] * 1e-9:
            return None
    return spec


def grid_route_order(spec: dict[str, list[Any]]) -> list[tuple[str, str]]:
    """The routes of a grid (:func:`grid_spec`) in SimGrid's declaration order; ``(a, a)`` names ``a`` only.

    hcsim's router ends a path with the heaviest link (latency, then 1/bandwidth); of dimensions
    that weigh the same, with the NPU dimension, then the higher dimension (found on random
    grids, checked link by link in the tests). SimGrid ends it at the lowest-numbered node: so
    the nodes are numbered by dimension in that order. The switches of dimensions ranked
    above the NPU dimension are named first by a route from the switch to itself (over one
    of its links; a router never sends, so SimGrid never uses it), then the NPU dimension's
    links name the NPUs (ring lines in :func:`ring_route_order`), then every switch's links.
    """
    blocks, counts = spec["topology"], spec["npus_count"]
    names = npu_names(counts)
    wide = [d for d in range(len(counts)) if counts[d] > 1]
    weight = {d: _weight(spec["latency"][d] * 1e-9, spec["bandwidth"][d] * GB) for d in wide}
    ranked = sorted(wide, key=lambda d: (-weight[d], blocks[d] == "Switch", -d))
    npu_dims = [d for d in ranked if blocks[d] != "Switch"]
    routes: list[tuple[str, str]] = []
    if npu_dims:
        for d in ranked[: ranked.index(npu_dims[0])]:
            routes += [(f"dim{d}.switch{base}", f"dim{d}.switch{base}") for base, _ in grid_lines(counts, d)]
        for d in npu_dims:
            for _, line in grid_lines(counts, d):
                routes += _line_links(blocks[d], [names[i] for i in line])
    for d in ranked:
        if blocks[d] == "Switch":
            routes += [(f"dim{d}.switch{base}", names[i]) for base, line in grid_lines(counts, d) for i in line]
    return routes


def route_ranks(spec: dict[str, list[Any]]) -> dict[str, int]:
    """SimGrid's number for each node of the grid's Dijkstra zone: the order :func:`grid_route_order` first names it."""
    ranks: dict[str, int] = {}
    for a, b in grid_route_order(spec):
        ranks.setdefault(a, len(ranks))
        ranks.setdefault(b, len(ranks))
    return ranks
