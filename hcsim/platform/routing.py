"""Routes: latency-weighted shortest paths, composed through the zone hierarchy.

:class:`Router` computes the route of every host pair with NetworkX, by one rule that
the compiler, the tests and the engine share: weight = latency; ties go to fewer links,
then to the smaller sum of 1/bandwidth, then to the first path in a graph built in
sorted node order. Hosts are never transit unless ``graph["host_transit"]`` is set (ring
topologies, tori); a pinned route (:meth:`Topology.set_route`) replaces the computed
one. A route is computed from the smaller name and taken both ways, unless
``graph["routes_from_source"]`` is set (imported multi-dimensional networks): then each
direction is computed from its own source, as SimGrid's Dijkstra zones do, and where the
nodes have a ``route_rank``, of equally short paths the one whose every hop comes from the
lowest-ranked node it could come from (SimGrid's tie rule: hcsim.formats.astra_routes).
With zones, a route is composed as SimGrid resolves it (inside a zone, then between the
gateways of sibling zones): the global shortest path when traffic must pass the gateways.

Invariant: the route SimGrid takes is the route :meth:`Router.path` returns, link by
link (tested on both paper systems).

Why hcsim routes instead of SimGrid, and the tie rules: docs/platform.md, "Routing".
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from functools import lru_cache
from itertools import pairwise

import networkx as nx

from hcsim.errors import HcsimError
from hcsim.platform.topology import Topology

__all__ = ["Router", "path_latency", "path_bandwidth"]

# A link's integer weight orders paths by latency, then by number of links, then by the
# sum of 1/bandwidth (serialization time per byte): among equal-latency paths the one with
# faster links wins. Each part is scaled above the largest sum the parts below can reach.
_PER_BYTE_UNIT = 1e9  # 1 / (1 GB/s) counts 2**20
_HOP = 1 << 44
_LATENCY = 1 << 60  # per picosecond


_MAX_PICOSECONDS = 1e300  # latencies beyond 1e288 s compare equal; routes stay finite


def _weight(latency: float, bandwidth: float) -> int:
    # min() before round(): a bandwidth near 1e-300 B/s or a latency near 1e297 s (valid, if absurd)
    # would overflow to inf, which round() cannot take (found by fuzzing, tests/platform/test_fuzz.py)
    per_byte = min((1 << 20) * _PER_BYTE_UNIT / bandwidth, _HOP // 4096)
    return round(min(latency * 1e12, _MAX_PICOSECONDS)) * _LATENCY + _HOP + round(per_byte)


class Router:
    """Computes the route between any two hosts of a validated topology."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.tree = topology.zone_tree()
        self.gateways = topology.gateways()
        self.pinned = topology.routes()
        self.transit = bool(topology.graph.get("host_transit", False))
        self.from_source = bool(topology.graph.get("routes_from_source", False))
        # SimGrid's Dijkstra rule for ties, where a topology numbers its nodes (route_rank): module doc
        self.ranks: dict[str, int] = {}
        if self.from_source:
            self.ranks = {n: r for n, r in topology.nodes(data="route_rank") if r is not None}
        self._distances: dict[tuple[int, str], _Dijkstra] = {}  # one search per (graph, source), resumed
        # hosts looked up once: the Dijkstra weight below asks for every edge it relaxes
        self._hosts = frozenset(n for n in topology.nodes if topology.is_host(n))
        self._zone_of = topology.zone_of()
        self.members: dict[str, list[str]] = {z: [] for z in self.tree}
        for n, z in self._zone_of.items():
            self.members[z].append(n)
        for (src, dst), _ in self.pinned.items():
            if self._zone_of.get(src) != self._zone_of.get(dst):
                raise HcsimError(
                    f"pinned route '{src}'->'{dst}' joins two zones (valid: a route between hosts of one zone)"
                )
        self.path = lru_cache(maxsize=None)(self._path)  # type: ignore[method-assign]
        self.zone_graph = lru_cache(maxsize=None)(self._zone_graph)  # type: ignore[method-assign]

    # ------------------------------------------------------------------ graphs
    def _graph(self, nodes: Iterable[str]) -> nx.Graph:
        """The sub-graph over ``nodes``, built in sorted order with integer weights."""
        keep = sorted(set(nodes))
        g = nx.Graph()
        g.add_nodes_from(keep)
        keep_set = set(keep)
        for u in keep:
            for v in sorted(self.topology.adj[u]):
                if v in keep_set and u < v:
                    e = self.topology.edges[u, v]
                    g.add_edge(u, v, w=_weight(e["latency"], e["bandwidth"] * e.get("lanes", 1)))
        return g

    def shortest_paths(self, graph: nx.Graph, source: str, targets: Iterable[str]) -> dict[str, list[str]]:
        """Latency-weighted shortest paths from ``source`` to each target; hosts not transit."""
        hosts = self._hosts
        transit = self.transit

        def weight(u: str, _v: str, d: dict) -> int | None:
            if u != source and not transit and u in hosts:
                return None
            return d["w"]

        if self.ranks:
            paths = self._ranked_paths(graph, source, targets, weight)
        else:
            _, paths = nx.single_source_dijkstra(graph, source, weight=weight)
        out = {}
        for t in targets:
            if t == source:
                continue
            if t not in paths:
                raise HcsimError(
                    f"no path between '{source}' and '{t}' (connect them with links, or check zones and gateways)"
                )
            out[t] = paths[t]
        return out

    def _ranked_paths(self, graph: nx.Graph, source: str, targets: Iterable[str], weight) -> dict[str, list[str]]:  # noqa: ANN001
        """Shortest paths whose every hop comes from the lowest-ranked of the nodes it could come from (module doc)."""
        key = (id(graph), source)
        search = self._distances.get(key)
        if search is None:
            search = self._distances[key] = _Dijkstra(graph, source, weight)
        dist = search.settle(targets)
        ranks = self.ranks
        out = {}
        for t in targets:
            if t not in dist:
                continue
            path = [t]
            while path[-1] != source:
                v = path[-1]
                path.append(
                    min(
                        (u for u in graph.adj[v] if u in dist and dist[u] + graph.edges[u, v]["w"] == dist[v]),
                        key=lambda u: (ranks.get(u, len(ranks)), u),
                    )
                )
            out[t] = path[::-1]
        return out

    def _zone_graph(self, zone: str) -> nx.Graph:
        """Graph over which routes inside ``zone`` are computed (see module docstring)."""
        own = self.members[zone]
        children = self.tree[zone]
        return self._graph(own + [self.gateways[c] for c in children])

    # ------------------------------------------------------------------ routes
    def local_routes(self, zone: str, endpoints: list[str]) -> dict[tuple[str, str], list[str]]:
        """All routes between ``endpoints`` (sorted pairs a < b) inside one zone's graph."""
        graph = self.zone_graph(zone)
        out: dict[tuple[str, str], list[str]] = {}
        ordered = sorted(endpoints)
        for i, src in enumerate(ordered[:-1]):
            rest = ordered[i + 1 :]
            paths = self.shortest_paths(graph, src, rest)
            for dst in rest:
                out[(src, dst)] = self.pinned_or(src, dst, paths[dst])
        return out

    def pinned_or(self, src: str, dst: str, computed: list[str]) -> list[str]:
        if (src, dst) in self.pinned:
            return list(self.pinned[(src, dst)])
        if (dst, src) in self.pinned:
            return list(reversed(self.pinned[(dst, src)]))
        return computed

    def _zone_path_to(self, node: str, ancestor: str) -> str:
        """The child of ``ancestor`` that contains ``node`` (or ancestor itself for its own nodes)."""
        zone = self._zone_of[node]
        if zone == ancestor:
            return ancestor
        prefix = ancestor + "/" if ancestor else ""
        head = zone[len(prefix) :].split("/")[0]
        return prefix + head

    def _path(self, src: str, dst: str) -> tuple[str, ...]:
        """The route from ``src`` to ``dst`` as a node tuple (both hosts or gateways)."""
        if src == dst:
            return (src,)
        za, zb = self._zone_of[src], self._zone_of[dst]
        if za == zb:
            if self.tree[za]:
                raise HcsimError(f"'{src}' and '{dst}' are routers of zone '{za}'; routes join hosts")
            lo, hi = (src, dst) if src < dst else (dst, src)
            if self.from_source and not self.pinned:
                return tuple(self.gateway_path(za, src, dst))
            p = self.pinned_or(lo, hi, self.gateway_path(za, lo, hi))
            return tuple(p if lo == src else reversed(p))
        common = common_zone(za, zb)
        ca, cb = self._zone_path_to(src, common), self._zone_path_to(dst, common)
        ga = self.gateways[ca] if ca != common else src
        gb = self.gateways[cb] if cb != common else dst
        mid = self.gateway_path(common, ga, gb)
        head = self.path(src, ga)
        tail = self.path(gb, dst)
        return tuple(head[:-1]) + tuple(mid) + tuple(tail[1:])

    def gateway_path(self, zone: str, a: str, b: str) -> list[str]:
        """Route between two nodes over ``zone``'s own graph, from the smaller name (or from ``a``: module doc)."""
        if a == b:
            return [a]
        if self.from_source and not self.pinned:
            return self.shortest_paths(self.zone_graph(zone), a, [b])[b]
        lo, hi = (a, b) if a < b else (b, a)
        p = self.shortest_paths(self.zone_graph(zone), lo, [hi])[hi]
        return p if lo == a else p[::-1]


class _Dijkstra:
    """Dijkstra from ``source``, settled only as far as the targets asked so far (resumed for later ones).

    The same settled distances as NetworkX's ``single_source_dijkstra_path_length`` (weights
    are integers, so the order of the sums does not matter): a node is settled when popped,
    and every node nearer than a settled one is settled, so a shortest path's hops to a
    settled target are all settled. Routes to a neighbour no longer search a 1,000-node
    grid whole: one search per flow source was most of an imported grid's ``--fast`` fold.
    """

    __slots__ = ("adj", "weight", "dist", "seen", "heap", "count")

    def __init__(self, graph: nx.Graph, source: str, weight) -> None:  # noqa: ANN001
        self.adj, self.weight = graph.adj, weight
        self.dist: dict[str, int] = {}
        self.seen: dict[str, int] = {source: 0}
        self.count = 0
        self.heap: list[tuple[int, int, str]] = [(0, 0, source)]

    def settle(self, targets: Iterable[str]) -> dict[str, int]:
        """The settled distances, once every target is settled or the graph is exhausted."""
        dist, seen, heap, adj, weight = self.dist, self.seen, self.heap, self.adj, self.weight
        wanted = {t for t in targets if t not in dist}
        while wanted and heap:
            d, _, u = heapq.heappop(heap)
            if u in dist:
                continue
            dist[u] = d
            wanted.discard(u)
            for v, e in adj[u].items():
                cost = weight(u, v, e)
                if cost is None or v in dist:
                    continue
                dv = d + cost
                if v not in seen or dv < seen[v]:
                    seen[v] = dv
                    self.count += 1
                    heapq.heappush(heap, (dv, self.count, v))
        return dist


def common_zone(a: str, b: str) -> str:
    """The deepest zone containing both zones ``a`` and ``b``."""
    pa, pb = a.split("/") if a else [], b.split("/") if b else []
    common = []
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            break
        common.append(x)
    return "/".join(common)


def path_latency(topology: Topology, path: Iterable[str]) -> float:
    """Sum of link latencies along ``path``."""
    p = list(path)
    return sum(topology.edges[u, v]["latency"] for u, v in pairwise(p))


def path_bandwidth(topology: Topology, path: Iterable[str]) -> float:
    """Bottleneck bandwidth along ``path`` (a bundle of lanes counts lanes x bandwidth)."""
    p = list(path)
    return min(topology.edges[u, v]["bandwidth"] * topology.edges[u, v].get("lanes", 1) for u, v in pairwise(p))
