"""Fold any topology by the symmetry of its flows' routes, not of its names.

:func:`fold_system` is what the engine calls: the zone fold (:mod:`.folding`) where it
applies, else :func:`fold_by_symmetry`, which folds the data-parallel ring of any
validated topology. :func:`fold_units` is the general form: a :class:`UnitRing` of
*units* (a parallel layout's replicas, :mod:`.units`) with flows inside each unit and
to the next; the data-parallel ring is its case of one-XPU units. Colour refinement of
the flow-link graph (every flow, ring and memory, against the directed links it
crosses) gives an equitable partition; repetitions in the ring's word of hop colours are
contracted to one copy; the folded topology is built and refined jointly with the full
one.

Invariant: a fold stands only if the folded system has exactly the full system's
ring-flow colours and only full-system memory colours: then every flow gets the same
rate in both (weighted max-min by progressive filling), so each step lasts as long.
Otherwise it is refused in one line. With the DP quotient (a switch) links a cut always
covers are left out first: exact for rates, not for their latency. The proof and the
selection: ``docs/fast-paths.md`` ("Fold by symmetry", "DP quotient").
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from hcsim.errors import HcsimError
from hcsim.fast.folding import Fold, edge_key, fold_data_parallel, induced_topology, ranked_xpus, xpu_type
from hcsim.platform.routing import Router
from hcsim.platform.topology import Topology

__all__ = ["UnitRing", "fold_by_symmetry", "fold_system", "fold_units"]

_VALID = "valid: a topology whose data-parallel ring repeats its hop classes with the same per-link flow counts"
_MEMORY_ATTRS = ("host_memory", "cxl_memory")


def fold_system(topology: Topology, coherent: bool | None = None) -> Fold:
    """The paper systems' zone fold where it applies (bit-identical to before), else :func:`fold_by_symmetry`."""
    try:
        return fold_data_parallel(topology)
    except HcsimError:
        return fold_by_symmetry(topology, coherent)


@dataclass
class _Flow:
    start: Hashable  # what the flow is and what its ends are
    links: list[Hashable]  # directed links in path order (resource ids)


def fold_by_symmetry(topology: Topology, coherent: bool | None = None) -> Fold:
    """Fold ``topology``'s data-parallel ring to the fewest representatives the selection rule keeps.

    The ring of XPUs in rank order is the :class:`UnitRing` of one-XPU units with one
    cross flow (rank i -> rank i+1); see :func:`fold_units` and the module docstring for
    the rule and the proof. Raises :class:`HcsimError` (one line) where the check fails
    or nothing repeats. ``coherent`` says which remote memory the run uses
    (``cxl_memory`` if true, ``host_memory`` if false, both if None).
    """
    name = str(topology.graph.get("name", ""))
    xpus = ranked_xpus(topology, name, _refuse)
    if len(xpus) < 3:
        raise _refuse(name, f"a ring of {len(xpus)} XPU(s) has nothing to fold")
    return fold_units(topology, UnitRing([[x] for x in xpus], inner=[], cross=[("ring", 0, 0)]), coherent)


@dataclass(frozen=True)
class UnitRing:
    """A workload's communication as a ring of identical *units* (what a fold keeps or drops whole).

    ``units``: lists of XPU names of equal length, in ring order (a data-parallel
    replica of a ``dp x tp x pp`` layout, an expert-parallel group of replicas, or one
    XPU for a plain data-parallel ring); position ``i`` of every unit plays the same
    role. ``inner``: flows ``(label, i, j)`` from position ``i`` to position ``j`` of
    the same unit (tensor-parallel rings, pipeline p2p, all-to-alls: every pair a
    collective of the unit may use). ``cross``: flows ``(label, i, j)`` from position
    ``i`` of a unit to position ``j`` of the next unit, cyclically (the hops of ring
    collectives over the units, e.g. the data-parallel gradient rings). In a folded run
    the cross collectives keep the full group's chunk and step count (``group``); the
    inner ones run unchanged inside every kept unit.
    """

    units: list[list[str]]
    inner: list[tuple[str, int, int]]
    cross: list[tuple[str, int, int]]


def fold_units(topology: Topology, ring: UnitRing, coherent: bool | None = None, *, quotient: bool = False) -> Fold:
    """Keep the fewest whole units whose flows have every class of the full system's flows, and no other.

    Colour refinement runs on the flow-link graph of *every* flow of ``ring`` (inner and
    cross flows of all units, plus each XPU's memory flows), all taken as possibly
    concurrent. An equitable partition stays equitable on any subset of its flow
    colours, so whichever of these flows are in flight together at some instant (a
    tensor-parallel ring of one stage while another stage's p2p and a gradient ring
    run), a flow of colour c shares each link with the same number of flows of each
    active colour in both systems, and progressive filling gives it the same rate (the
    proof in the module docstring). Units are contracted along the ring of units as
    XPUs are along the data-parallel ring (Selection), with a unit's letter being the
    colours of its inner flows and of its cross flows to the next unit. The check then
    requires the folded system's unit flows to show exactly the full system's set of
    colours and its memory flows only full-system colours; otherwise the fold is
    refused in one line (the caller runs every XPU). What the proof does not cover is
    the same as for the ring: ranks that drift apart in the exact engine's pipelined
    collectives, measured by the equivalence tests.

    ``quotient`` (the DP quotient, a fast-path switch, off by default): the refinement leaves
    out every link that can never limit a rate (:func:`_unbinding`: its capacity covers a cut
    of the links that feed it, or that it feeds), e.g. a non-blocking fat tree's spine and
    node-to-leaf bundles, so units no longer differ by their distance to a scalable-unit
    boundary. Exact for rates; what it approximates is those links' latency (a flow's own,
    and its weight in max-min sharing), measured in ``docs/fast-paths.md`` ("DP quotient").
    """
    name = str(topology.graph.get("name", ""))
    units = [list(u) for u in ring.units]
    size = len(units[0]) if units else 0
    if len(units) < 3:
        raise _refuse(name, f"a ring of {len(units)} unit(s) has nothing to fold")
    if size == 0 or any(len(u) != size for u in units):
        raise _refuse(name, "its units are not all of the same size")
    for _, i, j in (*ring.inner, *ring.cross):
        if not (0 <= i < size and 0 <= j < size):
            raise _refuse(name, f"a flow names position {max(i, j)} of units of {size} XPUs")
    xpus = [x for u in units for x in u]
    if len(set(xpus)) != len(xpus):
        raise _refuse(name, "an XPU is in two units")
    all_xpus = set(topology.nodes_of("xpu"))
    if set(xpus) != all_xpus:
        missing = next(iter(sorted(all_xpus - set(xpus))), None)
        raise _refuse(name, f"XPU '{missing}' is in no unit (a fold stands for the whole system)")
    memories = _MEMORY_ATTRS if coherent is None else (("cxl_memory",) if coherent else ("host_memory",))
    _check_memory(topology, xpus, name, memories)
    router = Router(topology)
    per_unit = len(ring.inner) + len(ring.cross)
    full = _flows(topology, router, units, ring, "full", memories)
    if quotient:
        full = _unbinding(full, topology)
    alone = _refine([full])[0]
    word = [tuple(alone[u * per_unit : (u + 1) * per_unit]) for u in range(len(units))]
    what = "XPU" if size == 1 else "unit"
    shortest, refusal = 1, _refuse(name, f"no {'hop' if size == 1 else 'unit'} class repeats along the ring "
                                         f"(every {what} would be kept)")  # fmt: skip
    n_flows = len(units) * per_unit
    while True:
        kept, members, used = _select(word, shortest)
        if len(kept) == len(units) or len(kept) < 2:
            raise refusal
        kept_units = [units[u] for u in kept]
        ranks = [x for u in kept_units for x in u]
        folded = _build(topology, router, kept_units, ring, name, len(xpus), to_gateways=quotient)
        reduced = _flows(folded, Router(folded), kept_units, ring, "folded", memories)
        if quotient:
            reduced = _unbinding(reduced, folded)
        colours_full, colours_folded = _refine([full, reduced])
        try:
            _check_colours(colours_full, colours_folded, n_flows, len(kept) * per_unit, reduced, name, size == 1)
        except HcsimError as e:  # keep whole repetitions of the shortest period contracted, and check again
            refusal, shortest = e, used + 1
            continue
        weights = {units[u][i]: len(members[u]) for u in kept for i in range(size)}
        return Fold(topology=folded, ranks=ranks, group=len(xpus), servers=[], racks=[], weights=weights,
                    method="symmetry")  # fmt: skip


def _refuse(name: str, reason: str) -> HcsimError:
    return HcsimError(f"topology '{name}' cannot be folded: {reason} ({_VALID})")


def _check_memory(topology: Topology, xpus: list[str], name: str, memories: tuple[str, ...]) -> None:
    """Memory flows are known only where an XPU names its memory; the engine's nearest-memory fallback is not."""
    if not topology.nodes_of("memory"):
        return
    for x in xpus:
        if not any(topology.nodes[x].get(a) for a in memories):
            raise _refuse(name, f"XPU '{x}' names no {' or '.join(memories)} (its remote memory is unknown)")


def _node_key(topology: Topology, node: str) -> tuple[Any, ...]:
    d = topology.nodes[node]
    if d.get("kind") == "xpu":
        return ("xpu", *xpu_type(d))
    return (d.get("kind"), d.get("memory_kind"), d.get("capacity"))


def _unit_pairs(units: list[list[str]], ring: UnitRing) -> list[tuple[str, str, str]]:
    """(label, sender, receiver) of every unit flow: per unit its inner flows, then its cross flows."""
    pairs = []
    for u, unit in enumerate(units):
        after = units[(u + 1) % len(units)]
        pairs += [(label, unit[i], unit[j]) for label, i, j in ring.inner]
        pairs += [(label, unit[i], after[j]) for label, i, j in ring.cross]
    return pairs


def _flows(
    topology: Topology, router: Router, units: list[list[str]], ring: UnitRing, tag: str, memories: tuple[str, ...]
) -> list[_Flow]:
    """Unit flows (:func:`_unit_pairs`) then memory flows, on directed links tagged by graph."""
    pairs = [(f"unit:{label}", a, b) for label, a, b in _unit_pairs(units, ring)]
    for x in (x for u in units for x in u):
        for attr in memories:
            m = topology.nodes[x].get(attr)
            if m:
                pairs += [(f"{attr}:to", x, m), (f"{attr}:from", m, x)]
    out = []
    for what, a, b in pairs:
        path = router.path(a, b)
        links = [(tag, u, v) for u, v in zip(path, path[1:], strict=False)]
        keys = tuple(edge_key(topology.edges[u, v]) for u, v in zip(path, path[1:], strict=False))
        out.append(_Flow((what, _node_key(topology, a), _node_key(topology, b), keys), links))
    return out


def _unbinding(flows: list[_Flow], topology: Topology) -> list[_Flow]:
    """``flows`` without the links that can never limit a rate among them (the DP quotient's rule).

    A link ``L`` never limits: every flow on it also crosses, before ``L`` (or after it), a
    link of least bandwidth on that side, and the distinct such links' bandwidths add up to
    at most ``L``'s. Their sum bounds the load on ``L`` (a cut), so ``L`` saturates at the
    earliest with all of them and freezes no flow they would not (a tie, not a constraint).
    Only a cut of links that could not leave themselves counts, so every link left out is
    bounded by links that stay (the constraints kept imply the ones dropped). Flows keep
    their other links in path order (and their keys, one per link, with them).
    """
    bandwidth = {}
    through: dict[Hashable, list[tuple[int, int]]] = {}
    for i, f in enumerate(flows):
        for j, link in enumerate(f.links):
            through.setdefault(link, []).append((i, j))
            e = topology.edges[link[1], link[2]]
            bandwidth[link] = float(e["bandwidth"]) * int(e.get("lanes", 1))  # a directed link's capacity
    cuts: dict[Hashable, list[set[Hashable]]] = {}  # per link, its covering cuts (before it, after it)
    for link, uses in through.items():
        for before in (True, False):
            cut = set()
            for i, j in uses:
                links = flows[i].links[:j] if before else flows[i].links[j + 1 :]
                if not links:
                    break
                cut.add(min(links, key=lambda x: (bandwidth[x], x)))
            else:
                if sum(bandwidth[x] for x in cut) <= bandwidth[link]:
                    cuts.setdefault(link, []).append(cut)
    # a link leaves only on a cut of links that all stay: no two links justify each other
    dropped = {link for link, found in cuts.items() if any(not (cut & cuts.keys()) for cut in found)}
    out = []
    for f in flows:
        kept = [j for j, link in enumerate(f.links) if link not in dropped]
        start = (*f.start[:3], tuple(f.start[3][j] for j in kept))
        out.append(_Flow(start, [f.links[j] for j in kept]))
    return out


def _refine(graphs: list[list[_Flow]]) -> list[list[int]]:
    """Stable colours of the flows of the disjoint union of ``graphs`` (module docstring), per graph."""
    flows = [f for g in graphs for f in g]
    intern: dict[Hashable, int] = {}

    def cid(sig: Hashable) -> int:
        return intern.setdefault(sig, len(intern))

    through: dict[Hashable, list[int]] = {}
    link_start: dict[Hashable, Hashable] = {}
    for i, f in enumerate(flows):
        for j, link in enumerate(f.links):
            through.setdefault(link, []).append(i)
            link_start[link] = f.start[3][j]
    fcol = [cid(("flow", f.start)) for f in flows]
    lcol = {link: cid(("link", k)) for link, k in link_start.items()}
    classes = len(set(fcol)) + len(set(lcol.values()))
    while True:
        lcol = {link: cid((c, tuple(sorted(fcol[i] for i in through[link])))) for link, c in lcol.items()}
        fcol = [cid((fcol[i], tuple(lcol[link] for link in f.links))) for i, f in enumerate(flows)]
        now = len(set(fcol)) + len(set(lcol.values()))
        if now == classes:
            break
        classes = now
    out, at = [], 0
    for g in graphs:
        out.append(fcol[at : at + len(g)])
        at += len(g)
    return out


def _select(word: list[int], shortest: int) -> tuple[list[int], dict[int, list[int]], int]:
    """Kept rank indices, the ranks each stands for, and the shortest period contracted (docstring: Selection)."""
    seq = list(range(len(word)))
    members = {i: [i] for i in seq}
    used = len(word)
    while True:
        for d in range(shortest, len(word) // 2 + 1):
            step = _contract(seq, word, d, members)
            if step is not None:
                seq, word = step
                used = min(used, d)
                break
        else:
            return seq, members, used


def _contract(
    seq: list[int], word: list[int], d: int, members: dict[int, list[int]]
) -> tuple[list[int], list[int]] | None:
    """Contract every maximal repetition of period ``d`` in ``word`` (hop t: seq[t] -> seq[t+1], cyclic)."""
    n = len(word)
    new_seq: list[int] = []
    new_word: list[int] = []
    changed = False
    t = 0
    while t < n:
        run = 0  # how many i >= t have word[i] == word[i + d]
        while t + run + d < n and word[t + run] == word[t + run + d]:
            run += 1
        m = 1 + run // d
        keep_last = t + m * d == n  # the repetition reaches the wrap-around hop
        if m < 2 or (keep_last and m < 3):
            new_seq.append(seq[t])
            new_word.append(word[t])
            t += 1
            continue
        changed = True
        copies = [0, m - 1] if keep_last else [0]
        for c in copies:
            new_seq += seq[t + c * d : t + (c + 1) * d]
            new_word += word[t + c * d : t + (c + 1) * d]
        for c in range(1, m - 1 if keep_last else m):
            for j in range(d):
                members[seq[t + j]] += members.pop(seq[t + c * d + j])
        t += m * d
    return (new_seq, new_word) if changed else None


def _build(
    topology: Topology,
    router: Router,
    units: list[list[str]],
    ring: UnitRing,
    name: str,
    group: int,
    to_gateways: bool = False,
) -> Topology:
    """The sub-topology induced by the kept units, their memories, the routes of their flows and the gateways.

    Both memory attributes are kept with their routes (the folded system may run coherent or not); only the
    memories of the run are flows of the check. ``to_gateways`` (the DP quotient) also keeps each XPU's route
    to its zone's gateway: a fold inside one node has no flow there, but the compiled zone needs the route.
    """
    keep = {x for u in units for x in u}
    for _, a, b in _unit_pairs(units, ring):
        keep.update(router.path(a, b))
    for x in [x for u in units for x in u]:
        for attr in _MEMORY_ATTRS:
            m = topology.nodes[x].get(attr)
            if m:
                keep.update(router.path(x, m))
    gateways = topology.gateways()
    if to_gateways:
        for x in [x for u in units for x in u]:
            gateway = gateways.get(topology.nodes[x].get("zone", ""))
            if gateway:
                keep.update(router.path(x, gateway))
    for node in list(keep):
        zone = topology.nodes[node].get("zone", "")
        while zone:
            if zone in gateways:
                keep.add(gateways[zone])
            zone = zone.rpartition("/")[0]
    return induced_topology(topology, keep, name, group)


def _check_colours(
    full: list[int], folded: list[int], n: int, k: int, reduced: list[_Flow], name: str, ring: bool
) -> None:
    """The folded unit flows (the first ``k`` of ``folded``) show exactly the full ones' colours (the first ``n``)."""
    unit_full, unit_folded = set(full[:n]), folded[:k]
    for i, c in enumerate(unit_folded):
        if c not in unit_full:
            a, b = reduced[i].links[0][1], reduced[i].links[-1][2]
            if ring:
                raise _refuse(name, f"the folded hop '{a}'->'{b}' meets links or flow counts no full-ring hop meets")
            what = str(reduced[i].start[0]).removeprefix("unit:")
            raise _refuse(name, f"the folded {what} flow '{a}'->'{b}' meets links or flow counts no full-system "
                                "flow of its kind meets")  # fmt: skip
    lost = unit_full - set(unit_folded)
    if lost:
        if ring:
            raise _refuse(name, f"the folded ring loses {len(lost)} of the full ring's {len(unit_full)} hop classes")
        raise _refuse(name, f"the folded system loses {len(lost)} of the full system's {len(unit_full)} flow classes")
    if not set(folded[k:]) <= set(full[n:]):
        raise _refuse(name, "a representative's memory flow meets links or flow counts the full system's do not")
