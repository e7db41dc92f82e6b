"""Fold a paper system to the few servers a data-parallel ring needs (the zone fold).

A data-parallel run on N XPUs is a ring allreduce over all of them in rank order
interleaved with the same compute on every XPU. :func:`fold_data_parallel` keeps the
first and last server of a few racks (by their ``rXX/sYY`` zones), chosen so that the
reduced ring has exactly the full ring's hop classes, and builds that sub-topology; the
collectives keep the full group's chunk S/N and 2(N-1) steps (``group=N``,
:mod:`hcsim.collectives`). :class:`Fold` is what every fold returns (its topology, ranks,
group and reporting weights); :func:`induced_topology`, :func:`hop_links`,
:func:`ranked_xpus`, :func:`xpu_type` and :func:`edge_key` are shared with
:mod:`.symmetry`.

Invariant: every ring step of the reduced ring takes exactly what the full ring's takes
(checked: a structural signature per rack type, and the reduced routes hop class by hop
class); otherwise the fold is refused in one line. The selection rule and the proof are
in ``docs/fast-paths.md`` ("Fold").
"""

from __future__ import annotations

import copy
import re
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from hcsim.errors import HcsimError
from hcsim.platform.routing import Router
from hcsim.platform.topology import Topology

__all__ = ["Fold", "edge_key", "fold_data_parallel", "hop_links", "induced_topology", "ranked_xpus", "xpu_type"]

_SERVER = re.compile(r"^r(\d+)/s(\d+)$")
_VALID = "valid: a paper system from cxl_system/noncoherent_system"


@dataclass(frozen=True)
class Fold:
    """A folded data-parallel system: the reduced topology and its reduced ring."""

    topology: Topology
    ranks: list[str]  # representative XPUs, in reduced-ring order (by original rank)
    group: int  # N, the number of XPUs of the full system
    servers: list[str]  # chosen server zones, in rank order
    racks: list[int]  # chosen rack numbers, in rank order
    weights: dict[str, int] = field(default_factory=dict)  # XPUs of the full system each rank stands for
    method: str = "zones"  # "zones": this module's rule; "symmetry": hcsim.fast.symmetry


@dataclass
class _Rack:
    zone: str
    number: int
    servers: list[str]  # server zones in rank order
    key: Hashable = None  # rack type: XPU type + server and rack structure


def hop_links(topology: Topology, path: tuple[str, ...] | list[str]) -> tuple[tuple[float, float, int, str], ...]:
    """The (latency, bandwidth, lanes, link_kind) of each link of ``path``: what a flow on it experiences."""
    out = []
    for u, v in pairwise(path):
        e = topology.edges[u, v]
        out.append((float(e["latency"]), float(e["bandwidth"]), int(e.get("lanes", 1)), str(e.get("link_kind", ""))))
    return tuple(out)


def fold_data_parallel(topology: Topology) -> Fold:
    """Fold a paper system to representative servers whose ring has every hop class of the full ring.

    See the module docstring for the selection rule and why each reduced ring step is exact.
    """
    name = str(topology.graph.get("name", ""))
    xpus = ranked_xpus(topology, name)
    racks, server_xpus = _layout(topology, xpus, name)
    _sign(topology, racks, server_xpus, name)
    chosen = _choose_racks(racks)
    servers = [s for i in chosen for s in _kept(racks[i])]
    ranks = [x for s in servers for x in server_xpus[s]]
    folded = _subtopology(topology, {racks[i].zone for i in chosen}, set(servers), name, len(xpus))
    _check_routes(topology, folded, ranks, name)
    return Fold(
        topology=folded,
        ranks=ranks,
        group=len(xpus),
        servers=servers,
        racks=[racks[i].number for i in chosen],
        weights=_weights(racks, chosen, server_xpus),
    )


def _refuse(name: str, reason: str) -> HcsimError:
    return HcsimError(f"topology '{name}' cannot be folded: {reason} ({_VALID})")


def ranked_xpus(topology: Topology, name: str, refuse: Callable[[str, str], HcsimError] | None = None) -> list[str]:
    """The topology's XPUs in rank order (``refuse(name, reason)``: the error if ranks are missing or repeat)."""
    refuse = refuse or _refuse
    xpus = topology.nodes_of("xpu")
    if not xpus:
        raise refuse(name, "it has no XPU")
    ranks = [topology.nodes[x].get("rank") for x in xpus]
    for x, r in zip(xpus, ranks, strict=True):
        if isinstance(r, bool) or not isinstance(r, int):
            raise refuse(name, f"XPU '{x}' has no integer rank")
    if len(set(ranks)) != len(ranks):
        raise refuse(name, "two XPUs share a rank")
    return [x for _, x in sorted(zip(ranks, xpus, strict=True))]  # Topology.xpus() order, without its O(N^2) tie-break


def _layout(topology: Topology, xpus: list[str], name: str) -> tuple[list[_Rack], dict[str, list[str]]]:
    """Servers and racks in rank order; refuse anything that is not racks of servers."""
    server_xpus: dict[str, list[str]] = {}
    racks: list[_Rack] = []
    last = ""
    for x in xpus:
        zone = topology.nodes[x].get("zone", "")
        m = _SERVER.match(zone)
        if m is None:
            reason = "it has no server zones 'rXX/sYY'" if not last else f"XPU '{x}' is in zone '{zone}', not 'rXX/sYY'"
            raise _refuse(name, reason)
        if zone != last:
            if zone in server_xpus:
                raise _refuse(name, f"the XPUs of server '{zone}' are not consecutive in rank order")
            server_xpus[zone] = []
            rack = zone.split("/")[0]
            if not racks or racks[-1].zone != rack:
                if any(r.zone == rack for r in racks):
                    raise _refuse(name, f"the servers of rack '{rack}' are not consecutive in rank order")
                racks.append(_Rack(rack, int(m.group(1)), []))
            racks[-1].servers.append(zone)
            last = zone
        server_xpus[zone].append(x)
    rack_zones = {r.zone for r in racks}
    zone_of = topology.zone_of()
    for n, zone in zone_of.items():
        if zone and zone not in server_xpus and zone not in rack_zones:
            raise _refuse(name, f"node '{n}' is in zone '{zone}', which is neither a rack nor a server with XPUs")
    gateways = topology.gateways()
    for zone in [*(r.zone for r in racks), *server_xpus]:
        if zone_of.get(gateways.get(zone)) != zone:
            raise _refuse(name, f"zone '{zone}' has no gateway among its own nodes")
    for rack in racks:
        counts = {len(server_xpus[s]) for s in rack.servers}
        if len(counts) > 1:
            raise _refuse(name, f"servers of rack '{rack.zone}' have different numbers of XPUs {sorted(counts)}")
    return racks, server_xpus


def xpu_type(data: dict[str, Any]) -> tuple[Any, ...]:
    """What tells XPUs apart for a fold: device and rates."""
    keys = ("device", "fp16_flops", "fp32_flops", "memory", "memory_bandwidth")
    return tuple(data.get(k) for k in keys)


def edge_key(e: dict[str, Any]) -> tuple[float, float, int, str]:
    """What tells links apart for a fold: (latency, bandwidth, lanes, kind)."""
    return (float(e["latency"]), float(e["bandwidth"]), int(e.get("lanes", 1)), str(e.get("link_kind", "")))


def _sign(topology: Topology, racks: list[_Rack], server_xpus: dict[str, list[str]], name: str) -> None:
    """Give each rack its type; refuse racks whose servers differ in XPU type or structure.

    A server's signature is, for each of its nodes (XPUs by position, the rest sorted),
    its kind and the links to its neighbours (attributes and the neighbour's kind and
    level: same server, own rack, root). A rack's adds its own switches' links, as a set
    (a partial rack has fewer servers, not other links). Links that join two servers or
    two racks directly are refused: zone routing would not see them.
    """
    zone_of = topology.zone_of()
    gateways = topology.gateways()
    # NetworkX's own dicts, not its views (2 us a lookup): every node of every server is signed (50k at 4096 XPUs)
    node_data, adjacency = topology._node, topology._adj

    descs: dict[str, str] = {}

    def desc(n: str) -> str:
        if n not in descs:
            d = node_data[n]
            sub = d.get("switch_kind") or d.get("memory_kind") or ""
            cap = d.get("capacity", "") if d.get("kind") == "memory" else ""
            descs[n] = f"{d.get('kind')}:{sub}:{cap}"
        return descs[n]

    def level(n: str, m: str, home: str) -> str:
        """Where neighbour ``m`` of ``n`` (a node of zone ``home``) sits, seen from ``home``."""
        z = zone_of[m]
        if z == home:
            return "own"
        if z == "":
            return "root"
        if "/" in home and z == home.split("/")[0]:
            return "rack"
        if "/" not in home and z.split("/")[0] == home:
            return "server"
        raise _refuse(name, f"link '{n}'--'{m}' joins zones '{home}' and '{z}' directly (not through rack or root)")

    def node_sig(n: str, home: str, as_set: bool = False) -> tuple[Any, ...]:
        links = [(edge_key(e), level(n, m, home), desc(m)) for m, e in adjacency[n].items()]
        return (desc(n), tuple(sorted(set(links) if as_set else links)))

    members: dict[str, list[str]] = {}
    for n, z in zone_of.items():
        members.setdefault(z, []).append(n)
    for rack in racks:
        kinds = {xpu_type(node_data[x]) for s in rack.servers for x in server_xpus[s]}
        if len(kinds) > 1:
            devices = sorted({str(k[0]) for k in kinds})
            raise _refuse(name, f"rack '{rack.zone}' mixes XPU types {devices}")
        first_sig: tuple[Any, ...] | None = None
        for s in rack.servers:
            xs = server_xpus[s]
            own_xpus = set(xs)
            others = sorted(node_sig(n, s) for n in members[s] if n not in own_xpus)
            sig = (tuple(node_sig(x, s) for x in xs), tuple(others), desc(gateways[s]))
            if first_sig is None:
                first_sig = sig
            elif sig != first_sig:
                raise _refuse(name, f"servers '{rack.servers[0]}' and '{s}' differ in structure or link attributes")
        own = tuple(sorted(node_sig(n, rack.zone, as_set=True) for n in members.get(rack.zone, [])))
        rack.key = (kinds.pop(), first_sig, own, desc(gateways[rack.zone]))


def _choose_racks(racks: list[_Rack]) -> list[int]:
    """Indices of the chosen racks (see the module docstring): BFS over (last rack, covered)."""
    n = len(racks)
    if n == 1:
        return [0]
    keys = [r.key for r in racks]
    multi = [len(r.servers) > 1 for r in racks]
    pairs = {(keys[i], keys[(i + 1) % n]) for i in range(n)}
    required = frozenset({("pair", a, b) for a, b in pairs} | {("multi", keys[i]) for i in range(n) if multi[i]})
    nxt: list[dict[Hashable, int]] = [{} for _ in range(n)]  # nxt[i][k]: first rack > i of type k
    ahead: dict[Hashable, int] = {}
    for i in range(n - 1, -1, -1):
        nxt[i] = dict(ahead)
        ahead[keys[i]] = i
    start = (0, frozenset({("multi", keys[0])} if multi[0] else ()))
    parent: dict[tuple[int, frozenset], tuple[int, frozenset] | None] = {start: None}
    queue = deque([(start, 1)])
    while queue:
        state, size = queue.popleft()
        last, covered = state
        wrap = ("pair", keys[last], keys[0])
        if size >= 2 and (keys[last], keys[0]) in pairs and covered | {wrap} == required:
            chosen = []
            s: tuple[int, frozenset] | None = state
            while s is not None:
                chosen.append(s[0])
                s = parent[s]
            return chosen[::-1]
        steps = sorted((i, k) for k, i in nxt[last].items() if (keys[last], k) in pairs)
        for i, k in steps:
            new = covered | {("pair", keys[last], k)} | ({("multi", k)} if multi[i] else set())
            child = (i, frozenset(new))
            if child not in parent:
                parent[child] = state
                queue.append((child, size + 1))
    raise AssertionError("unreachable: all racks always form a valid choice")


def _subtopology(topology: Topology, rack_zones: set[str], server_zones: set[str], name: str, group: int) -> Topology:
    """A new Topology induced by the kept servers, their racks' switches and the root."""
    keep_zones = {""} | rack_zones | server_zones
    return induced_topology(topology, {n for n, z in topology.zone_of().items() if z in keep_zones}, name, group)


def induced_topology(topology: Topology, kept: set[str], name: str, group: int) -> Topology:
    """A new Topology of the ``kept`` nodes (in the original order), their links, gateways and pinned routes."""
    keep_zones = {""} | {z for n, z in topology.zone_of().items() if n in kept}
    keep = [n for n in topology.nodes if n in kept]
    out = Topology()
    out.graph.update(copy.deepcopy({k: v for k, v in topology.graph.items() if k not in ("gateways", "routes")}))
    out.add_nodes_from((n, copy.deepcopy(dict(topology.nodes[n]))) for n in keep)
    edges = topology.edges(data=True)
    out.add_edges_from((u, v, copy.deepcopy(dict(d))) for u, v, d in edges if u in kept and v in kept)
    gateways = {z: g for z, g in topology.gateways().items() if z in keep_zones and g in kept}
    if gateways or "gateways" in topology.graph:
        out.graph["gateways"] = gateways
    routes = {k: list(p) for k, p in topology.routes().items() if all(n in kept for n in p)}
    if routes or "routes" in topology.graph:
        out.graph["routes"] = routes
    out.graph["folded_from"] = name
    out.graph["group"] = group
    return out.validate()


def _check_routes(full: Topology, folded: Topology, ranks: list[str], name: str) -> None:
    """Each reduced-ring hop must take, link for link, the route it takes in the full system."""
    if len(ranks) < 2:
        return
    big, small = Router(full), Router(folded)
    for a, b in zip(ranks, ranks[1:] + ranks[:1], strict=True):
        if hop_links(full, big.path(a, b)) != hop_links(folded, small.path(a, b)):
            raise _refuse(name, f"the route '{a}'->'{b}' changes when the system is folded")


def _weights(racks: list[_Rack], chosen: list[int], server_xpus: dict[str, list[str]]) -> dict[str, int]:
    """How many XPUs of the full system each representative stands for (module docstring)."""
    n, m = len(racks), len(chosen)
    keys = [r.key for r in racks]
    weights = {x: 0 for i in chosen for s in _kept(racks[i]) for x in server_xpus[s]}
    reduced_neighbours = {c: (keys[chosen[(j - 1) % m]], keys[chosen[(j + 1) % m]]) for j, c in enumerate(chosen)}
    dealt: dict[tuple[int, ...], int] = {}
    for r, rack in enumerate(racks):
        if r in reduced_neighbours:
            rep = r
        else:
            multi = len(rack.servers) > 1
            pool = [c for c in chosen if keys[c] == keys[r] and (len(racks[c].servers) > 1 or not multi)]
            neighbours = (keys[(r - 1) % n], keys[(r + 1) % n])
            pool = [c for c in pool if reduced_neighbours[c] == neighbours] or pool
            turn = dealt.get(tuple(pool), 0)
            dealt[tuple(pool)] = turn + 1
            rep = pool[turn % len(pool)]
        kept = _kept(racks[rep])
        for j, s in enumerate(rack.servers):
            target = server_xpus[kept[0] if j == 0 else kept[-1]]
            for p in range(len(server_xpus[s])):
                weights[target[p]] += 1
    return weights


def _kept(rack: _Rack) -> list[str]:
    return rack.servers if len(rack.servers) == 1 else [rack.servers[0], rack.servers[-1]]
