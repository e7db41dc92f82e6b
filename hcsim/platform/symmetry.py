"""Fold any topology's data-parallel ring by symmetry found in its routes, not in its names.

:func:`hcsim.platform.folding.fold_data_parallel` folds the paper's systems by their
``rXX/sYY`` zones. :func:`fold_by_symmetry` folds any validated topology (the fat-tree
and leaf-spine builders, a user's heterogeneous servers) from what decides a ring
step's timing: the ring flows' routes, the links' attributes and which flows share them.
:func:`fold_system` is what the engine calls: the zone fold where it applies (the paper
systems keep their results to the last bit), this one otherwise.

The flow-link graph and its colours
-----------------------------------
A data-parallel ring on N XPUs in rank order has N flows per step, rank i -> rank i+1
(mod N), each on the one route :class:`~hcsim.platform.routing.Router` gives it (no
ECMP). Each XPU that declares a ``host_memory`` or ``cxl_memory`` also gets a memory
flow each way on its route to that memory (the engine's remote data: ``cxl_memory`` in
a coherent run, ``host_memory`` otherwise). Resources are
*directed* links (the compiler makes every link ``SPLITDUPLEX``). Colour refinement
(1-dimensional Weisfeiler-Leman) on this bipartite graph starts from

* a flow: what it is (ring hop, or memory flow and which memory), the sender's and the
  receiver's device (type, flop rates, memory, memory bandwidth; a memory node's kind
  and capacity), and the (latency, bandwidth, lanes, link kind) of each link in order;
* a link: its (latency, bandwidth, lanes, link kind);

and repeats "a link's colour += the multiset of colours of the flows on it; a flow's
colour += the colours of its links in path order" until no class splits. The stable
colouring is an *equitable partition*: all links of one colour carry the same number
of flows of each colour, all flows of one colour cross the same sequence of link
colours. It is computed once on the disjoint union of the full ring's graph and the
folded ring's, so colours are comparable between the two.

Why equal colours mean equal step times (the proof)
---------------------------------------------------
SimGrid's raw model gives each flow its path latency plus a share of bandwidth from
weighted max-min fairness (weight 1 / path latency) over the links' capacities. The
max-min allocation is what progressive filling reaches: all unfrozen flows' rates rise
in proportion to their weights, a link freezes its flows when it saturates. By
induction over the filling, on an equitable partition flows of one colour rise and
freeze together (their weights are equal: latency is part of the colour) and links of
one colour saturate together (same capacity, same count of flows of each colour), so
the rate of a flow is a function of its colour and of the quotient (the counts per
colour pair) restricted to the colours connected to it. The folded ring's colours are
closed under adjacency and, being colours of the joint refinement, have the full
ring's counts; hence a flow of colour c gets the same rate, latency and so duration in
both rings. A step (every flow starting together, as the memoize mode runs it) lasts as
long as its slowest colour; so if the folded ring has exactly the full ring's set of
ring-flow colours (every hop class kept, no new one) and its memory flows only colours
of the full system's, each step lasts exactly as long in both. The chunk S/N and the
2(N-1) steps are the full group's (``group=N``), and every representative computes as
the XPUs of its type do. As with the zone fold, the exact engine's ring is pipelined
and ranks drift apart by how many hops of each class lie between slow ones, which the
fold changes: that part is measured (``tests/test_folding_general.py``), not proven.

The fold is checked, not trusted: whatever the selection below proposes, the folded
topology is built, its reduced ring is routed by its own Router, and the joint
refinement must show the colour sets above; otherwise the fold is refused with the
first hop class it would lose or change. Per-link flow counts are part of the colour,
so a folded ring where a representative flow shares an uplink with fewer (or more)
ring flows than the flows it stands for is refused (e.g. ranks interleaved across
leaves, where every uplink carries several ring flows).

Selection
---------
Write the full ring as the cyclic word of its hop colours, starting at rank 0. Then,
with the shortest period d first (1, 2, ...), replace every maximal repetition w^m
(m >= 2, |w| = d) of the word by one copy of w: its ranks are kept and the hop that
left the first copy now goes to the rank that followed the last (same colour, checked
later). A repetition that runs to the end of the word keeps its first and last copies,
so the wrap-around hop back to rank 0 keeps its class. Start again from d = 1 until
nothing repeats. On a fat tree (k = 16) the word is ``(A^7 B)^7 A^7 C`` per pod (A: under one
edge switch, B: edge to edge within a pod, C: pod to pod): the rule keeps the first
and the last XPU of the first and the last edge switch of two pods, 8 XPUs of any
k-ary tree with k >= 4. On the coherent paper system with both memories as flows it
picks exactly the zone fold's 32 XPUs at 256 (whole servers, since the XPUs of a CPU
share its PCIe link to host DRAM); with CXL memory only, 8.
If the check below refuses that choice, the selection runs again contracting only
repetitions longer than the shortest it used (e.g. whole servers rather than XPUs inside
one, when the XPUs of a server share the link to their memory), until one passes; if
nothing repeats (every XPU would be kept) the fold is refused with the last reason.

Weights (for reporting only): every dropped XPU is counted on the kept XPU at its
position in the kept copy of the repetition it was dropped from, so weights add to N.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from hcsim.errors import HcsimError
from hcsim.platform.folding import Fold, _edge_key, _ranked_xpus, _xpu_type, fold_data_parallel, induced_topology
from hcsim.platform.routing import Router
from hcsim.platform.topology import Topology

__all__ = ["fold_by_symmetry", "fold_system"]

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
    """Fold ``topology`` to the fewest representatives the selection rule keeps, checked by colour refinement.

    See the module docstring for the rule and the proof; raises :class:`HcsimError`
    (one line) where the check fails or nothing repeats. ``coherent`` says which remote
    memory the run uses (``cxl_memory`` if true, ``host_memory`` if false, both if None).
    """
    name = str(topology.graph.get("name", ""))
    xpus = _ranked_xpus(topology, name, _refuse)
    n = len(xpus)
    if n < 3:
        raise _refuse(name, f"a ring of {n} XPU(s) has nothing to fold")
    memories = _MEMORY_ATTRS if coherent is None else (("cxl_memory",) if coherent else ("host_memory",))
    _check_memory(topology, xpus, name, memories)
    router = Router(topology)
    full = _flows(topology, router, xpus, "full", memories)
    alone = _refine([full])[0]
    word = alone[:n]  # ring flows come first
    shortest, refusal = 1, _refuse(name, "no hop class repeats along the ring (every XPU would be kept)")
    while True:
        kept, members, used = _select(word, shortest)
        if len(kept) == n:
            raise refusal
        ranks = [xpus[i] for i in kept]
        folded = _build(topology, router, ranks, name, n, memories)
        reduced = _flows(folded, Router(folded), ranks, "folded", memories)
        colours_full, colours_folded = _refine([full, reduced])
        try:
            _check_colours(colours_full, colours_folded, n, ranks, name)
        except HcsimError as e:  # keep whole repetitions of the shortest period contracted, and check again
            refusal, shortest = e, used + 1
            continue
        weights = {xpus[i]: len(members[i]) for i in kept}
        return Fold(topology=folded, ranks=ranks, group=n, servers=[], racks=[], weights=weights, method="symmetry")


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
        return ("xpu", *_xpu_type(d))
    return (d.get("kind"), d.get("memory_kind"), d.get("capacity"))


def _flows(topology: Topology, router: Router, ranks: list[str], tag: str, memories: tuple[str, ...]) -> list[_Flow]:
    """Ring flows (rank i -> i+1, in order) then memory flows, on directed links tagged by graph."""
    pairs: list[tuple[str, str, str]] = [("ring", a, b) for a, b in zip(ranks, ranks[1:] + ranks[:1], strict=True)]
    for x in ranks:
        for attr in memories:
            m = topology.nodes[x].get(attr)
            if m:
                pairs += [(f"{attr}:to", x, m), (f"{attr}:from", m, x)]
    out = []
    for what, a, b in pairs:
        path = router.path(a, b)
        links = [(tag, u, v) for u, v in zip(path, path[1:], strict=False)]
        keys = tuple(_edge_key(topology.edges[u, v]) for u, v in zip(path, path[1:], strict=False))
        out.append(_Flow((what, _node_key(topology, a), _node_key(topology, b), keys), links))
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
    topology: Topology, router: Router, ranks: list[str], name: str, group: int, memories: tuple[str, ...]
) -> Topology:
    """The sub-topology induced by the representatives, their memories, the routes between them and the gateways.

    Both memory attributes are kept with their routes (the folded system may run coherent or not); only
    ``memories`` are flows of the check.
    """
    keep = set(ranks)
    for a, b in zip(ranks, ranks[1:] + ranks[:1], strict=True):
        keep.update(router.path(a, b))
    for x in ranks:
        for attr in _MEMORY_ATTRS:
            m = topology.nodes[x].get(attr)
            if m:
                keep.update(router.path(x, m))
    gateways = topology.gateways()
    for node in list(keep):
        zone = topology.nodes[node].get("zone", "")
        while zone:
            if zone in gateways:
                keep.add(gateways[zone])
            zone = zone.rpartition("/")[0]
    return induced_topology(topology, keep, name, group)


def _check_colours(full: list[int], folded: list[int], n: int, ranks: list[str], name: str) -> None:
    ring_full, ring_folded = set(full[:n]), folded[: len(ranks)]
    for i, c in enumerate(ring_folded):
        if c not in ring_full:
            a, b = ranks[i], ranks[(i + 1) % len(ranks)]
            raise _refuse(name, f"the folded hop '{a}'->'{b}' meets links or flow counts no full-ring hop meets")
    lost = ring_full - set(ring_folded)
    if lost:
        raise _refuse(name, f"the folded ring loses {len(lost)} of the full ring's {len(ring_full)} hop classes")
    if not set(folded[len(ranks) :]) <= set(full[n:]):
        raise _refuse(name, "a representative's memory flow meets links or flow counts the full system's do not")
