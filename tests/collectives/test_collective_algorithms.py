"""The library of collective algorithms: data movement at N = 2..9, 16, and closed forms with real SimGrid."""

from __future__ import annotations

import math

import pytest

from hcsim.collectives import Schedule, TopologyView, build_plan, build_schedule, check_schedule, plan
from hcsim.collectives.algorithms.tree import dtree_parents, heap_parent, tree_chunks
from hcsim.errors import HcsimError
from hcsim.fast import simulate  # the exact engine, or memoize=True
from hcsim.platform import cxl_system, star
from hcsim.platform.builders import TABLE5
from hcsim.platform.routing import Router, path_latency
from hcsim.workload import Workload

ALGORITHMS = [
    ("allreduce", "double_binary_tree"),
    ("allreduce", "halving_doubling"),
    ("allreduce", "coherent_halving_doubling"),
    ("allreduce", "direct"),
    ("allreduce", "hierarchical"),
    ("allreduce", "ring_2d"),
    ("allreduce", "ring_topo"),
    ("allreduce", "cxl_shared_memory"),
    ("reduce_scatter", "halving_doubling"),
    ("reduce_scatter", "direct"),
    ("reduce_scatter", "ring_topo"),
    ("allgather", "halving_doubling"),
    ("allgather", "direct"),
    ("allgather", "ring_topo"),
    ("broadcast", "binary_tree"),
    ("reduce", "binary_tree"),
    ("alltoall", "pairwise"),
]
SIZES = [2, 3, 4, 5, 6, 7, 8, 9, 16]


def ranks(n: int) -> list[str]:
    return [f"x{i}" for i in range(n)]


def views(n: int) -> list[TopologyView]:
    """No topology; servers of 4 in two racks, listed shuffled; servers of 2 (and 3 when it divides n)."""
    rs = ranks(n)
    memories = {r: f"{r}.mem" for r in rs}
    out = [TopologyView(memories=memories)]
    for per in (4, 2, 3):
        if n % per == 0 and n > per:
            zones = {r: f"r{i // (2 * per)}/s{i // per}" for i, r in enumerate(rs)}
            out.append(TopologyView(zones, memories))
    return out


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind, name", ALGORITHMS)
def test_every_algorithm_delivers_what_its_kind_promises(kind, name, n):
    for view in views(n):
        order = ranks(n)[::2] + ranks(n)[1::2]  # a scope not in topology order
        for scope in (ranks(n), order):
            sch = build_schedule(kind, name, scope, 1e6 * n, view)  # validated and data-checked
            assert sch.shards > 0 and sch.flows


@pytest.mark.parametrize("kind, name", [("allreduce", "halving_doubling"), ("reduce_scatter", "halving_doubling")])
def test_halving_doubling_without_the_post_step_fails_the_check(kind, name):
    """Rank 2k+1 of a non-power of two never gets its result back if the folding's post-step is dropped."""
    sch = build_schedule(kind, name, ranks(6), 6e6)
    broken = Schedule(kind, sch.ranks, shards=sch.shards, name="no_post_step")
    for f in sch.flows[:-2]:  # the last two flows: the post-step, 0 -> 1 and 2 -> 3
        broken.add(f.src, f.dst, f.nbytes, f.after, f.shards)
    with pytest.raises(HcsimError, match=r"no_post_step.*rank 'x1' ends with"):
        check_schedule(broken)


def test_a_tree_that_broadcasts_before_it_has_reduced_fails_the_check():
    sch = build_schedule("allreduce", "double_binary_tree", ranks(7), 7e6)
    broken = Schedule("allreduce", sch.ranks, shards=sch.shards, name="eager_tree")
    for f in sch.flows:
        broken.add(f.src, f.dst, f.nbytes, f.after if f.src != "x0" else (), f.shards)  # the root does not wait
    with pytest.raises(HcsimError, match="eager_tree.*every rank needs every contribution"):
        check_schedule(broken)


def test_double_binary_tree_uses_complementary_trees():
    """NCCL's dtree: in each tree every rank but the root has a parent, and few ranks are inner nodes of both."""
    for n in SIZES + [64]:
        for parent in dtree_parents(n):
            assert parent.count(-1) == 1
            for r in range(n):  # every rank reaches the root
                seen = 0
                while parent[r] >= 0 and seen <= n:
                    r, seen = parent[r], seen + 1
                assert seen <= n
        first, second = dtree_parents(n)
        inner = [set(p for p in parents if p >= 0) for parents in (first, second)]
        assert len(inner[0] & inner[1]) <= 1


def test_cxl_shared_memory_needs_a_cxl_memory_for_every_rank():
    with pytest.raises(HcsimError, match="rank 'x0' has none") as e:
        build_schedule("allreduce", "cxl_shared_memory", ranks(4), 1e6)
    assert "\n" not in str(e.value)


def test_ring_topo_plan_is_the_ring_over_the_topology_order():
    topo = cxl_system(16, servers_per_rack=2)
    view = TopologyView.of_topology(topo)
    xs = topo.xpus()
    shuffled = xs[::2] + xs[1::2]
    order = view.topology_order(shuffled)
    assert order != shuffled
    for kind in ("allreduce", "reduce_scatter", "allgather"):
        for compact in (False, True):
            got = build_plan(kind, "ring_topo", shuffled, 16e6, view, compact=compact)
            want = plan(kind, "ring", order, 16e6, compact=compact)
            assert (got.src, got.dst, got.size, got.waits, got.releases, got.steps) == (
                want.src, want.dst, want.size, want.waits, want.releases, want.steps
            )  # fmt: skip
        sch = build_schedule(kind, "ring_topo", shuffled, 16e6, view).to_plan()
        full = plan(kind, "ring", order, 16e6)
        assert (sch.src, sch.dst, sch.size, sch.waits) == (full.src, full.dst, full.size, full.waits)
    folded = build_plan("allreduce", "ring_topo", shuffled[:4], 16e6, view, group=16)
    assert folded.steps == 30 and folded.size[0] == 10**6


# ------------------------------------------------------------------ closed forms, real SimGrid
# On star(n): one switch, every rank-to-rank route two links, so alpha = 2 lat; a rank's
# outgoing flows share its uplink, its incoming flows its downlink (links are full duplex).
S = 720720 * 64  # every slice size below is a whole number of bytes
B, LAT = 100e9, 1e-6
A = 2 * LAT
STAR_N = [2, 3, 4, 5, 7, 8, 16, 64]


def run(path: str, kind: str, name: str, scope: list[str], nbytes: float, **kw) -> float:
    w = Workload()
    w.add_comm("c", nbytes, kind, scope, algorithm=name, is_start=True)
    return simulate(path, w, **kw).makespan


def _fold(n: int) -> tuple[int, int]:
    p = 1 << (n.bit_length() - 1)
    return p, n - p


def hd_allreduce(n: int, coherent: bool = False) -> float:
    """2 log2(p) alpha + 2 (p-1)/p S/B (halved when coherent), plus the folding steps (alpha + S/B each)."""
    p, r = _fold(n)
    t = (math.log2(p) * A + (p - 1) / p * S / B) * (1 if coherent else 2)
    return t + (bool(r) * (1 if coherent else 2)) * (A + S / B)


def hd_halving(n: int) -> float:
    """The exchanges of the rank standing for ranks 0 and 1: at distance m it sends m + min(r, m) slices."""
    p, r = _fold(n)
    return sum(A + (m + min(r, m)) * S / (n * B) for m in (p >> k for k in range(1, p.bit_length())))


def hd_reduce_scatter(n: int) -> float:
    """Powers of two: log2(N) alpha + (N-1)/N S/B; else pre-step S, uneven halving, post-step S/N."""
    return hd_halving(n) + bool(_fold(n)[1]) * (A + S / B + A + S / (n * B))


def hd_allgather(n: int) -> float:
    """Powers of two: log2(N) alpha + (N-1)/N S/B; else pre-step S/N, uneven doubling, post-step (N-1)/N S."""
    return hd_halving(n) + bool(_fold(n)[1]) * (A + S / (n * B) + A + (n - 1) * S / (n * B))


def tree_broadcast(n: int) -> float:
    """The slowest root-to-leaf path; a node with c children adds alpha + c S/B."""
    children = [sum(1 for j in (2 * i + 1, 2 * i + 2) if j < n) for i in range(n)]
    worst = 0.0
    for leaf in range(n):
        t, i = 0.0, leaf
        while i:
            i = heap_parent(n, i)
            t += A + children[i] * S / B
        worst = max(worst, t)
    return worst


def siblings(ta: float, tb: float) -> tuple[float, float]:
    """Ends of two flows of S into one port starting at ta <= tb: alone at B, both at B/2 while they overlap."""
    sa, sb = ta + A, tb + A  # after their latency, when their bytes start to flow
    left = S - (sb - sa) * B  # what the first has left when the second joins
    if left <= 0:
        return sa + S / B, sb + S / B
    end_a = sb + 2 * left / B
    return end_a, end_a + (S - left) / B


def tree_reduce(n: int) -> float:
    """A node sends once its children's flows have ended; two siblings share their parent's downlink."""
    ready = [0.0] * n  # when each node has all its children's data (a leaf: at once)
    for i in reversed(range(n)):
        kids = sorted((ready[j], j) for j in (2 * i + 1, 2 * i + 2) if j < n)
        if len(kids) == 2:
            ready[i] = max(siblings(kids[0][0], kids[1][0]))
        elif kids:
            ready[i] = kids[0][0] + A + S / B
    return ready[0]


STAR_FORMS = {
    ("allreduce", "halving_doubling"): hd_allreduce,
    ("allreduce", "coherent_halving_doubling"): lambda n: hd_allreduce(n, coherent=True),
    ("reduce_scatter", "halving_doubling"): hd_reduce_scatter,
    ("allgather", "halving_doubling"): hd_allgather,
    ("allreduce", "direct"): lambda n: 2 * A + 2 * (n - 1) / n * S / B,
    ("reduce_scatter", "direct"): lambda n: A + (n - 1) / n * S / B,
    ("allgather", "direct"): lambda n: A + (n - 1) / n * S / B,
    ("alltoall", "pairwise"): lambda n: (n - 1) * (A + S / (n * B)),
    ("allreduce", "ring_topo"): lambda n: 2 * (n - 1) * (A + S / (n * B)),
    ("reduce_scatter", "ring_topo"): lambda n: (n - 1) * (A + S / (n * B)),
    ("allgather", "ring_topo"): lambda n: (n - 1) * (A + S / (n * B)),
    ("allreduce", "hierarchical"): lambda n: 2 * (n - 1) * (A + S / (n * B)),  # one rank per server: the ring
    ("allreduce", "ring_2d"): lambda n: 2 * (n - 1) * (A + S / (n * B)),
    ("broadcast", "binary_tree"): tree_broadcast,
    ("reduce", "binary_tree"): tree_reduce,
}


@pytest.fixture(scope="module")
def star_platform(compile_cached):
    def get(n: int) -> tuple[str, list[str]]:
        topo = star(n, bandwidth=B, latency=LAT)
        return compile_cached(topo), topo.xpus()

    return get


@pytest.mark.parametrize("n", STAR_N)
@pytest.mark.parametrize("kind, name", list(STAR_FORMS))
def test_closed_form_on_a_star(star_platform, kind, name, n):
    path, xs = star_platform(n)
    assert run(path, kind, name, xs, S) == pytest.approx(STAR_FORMS[kind, name](n), rel=1e-9)


def test_the_closed_forms_in_the_docstrings():
    """Spot values of the forms above against the docstrings' formulas."""
    assert hd_allreduce(8) == pytest.approx(2 * 3 * A + 2 * 7 / 8 * S / B)
    assert hd_reduce_scatter(16) == pytest.approx(4 * A + 15 / 16 * S / B)
    assert hd_allreduce(6) == pytest.approx((2 * 2 + 2) * A + (2 + 2 * 3 / 4) * S / B)
    assert tree_broadcast(7) == pytest.approx(2 * (A + 2 * S / B))


# ------------------------------------------------------------------ the paper's CXL system
# Inside a server: XPU -> XPU switch -> XPU (two "xpu" links); between servers: XPU -> server
# CXL switch -> rack CXL switch (-> top CXL switch -> rack CXL switch) -> server CXL switch ->
# XPU ("cxl" links). Latencies come from the routes; bandwidths from Table 5. The g rings of
# a server's local ranks all leave through its CXL switch's uplink: each flow gets B_cxl/g.
XB, CB, CL = TABLE5["xpu"].bandwidth, TABLE5["cxl"].bandwidth, TABLE5["cxl"].latency


def ring_phase(d: list[float], entry: list[float], steps: int) -> list[float]:
    """A pipelined ring of hops d[i] (member i -> i+1, each alone on its links) entered at ``entry``.

    Member i's step-j flow ends at F[j][i] = max(F[j-1][i], F[j-1][i-1]) + d[i]; a member
    leaves once its last send and last receive have ended.
    """
    n = len(d)
    f = [entry[i] + d[i] for i in range(n)]
    for _ in range(steps - 1):
        f = [max(f[i], f[i - 1]) + d[i] for i in range(n)]
    return [max(f[i], f[i - 1]) for i in range(n)]


@pytest.fixture(scope="module")
def cxl(paper_system):
    def get(xpus: int):
        topo, path = paper_system("cxl", xpus, servers_per_rack=2)
        router = Router(topo)
        return topo, path, TopologyView.of_topology(topo), lambda a, b: path_latency(topo, router.path(a, b))

    return get


@pytest.mark.parametrize("xpus", [16, 32])
def test_hierarchical_and_2d_ring_on_the_paper_system(cxl, xpus):
    """Phase by phase: intra-server rings on the XPU switch, then rings across servers over CXL."""
    topo, path, view, lat = cxl(xpus)
    xs = topo.xpus()
    servers = view.by_server(xs)
    m, g = len(servers), len(servers[0])
    intra = lat(xs[0], xs[1]) + S / g / XB  # one intra-server ring step of S/g
    rings = [[members[lo] for members in servers] for lo in range(g)]

    def across(chunk: float, entry: float) -> float:
        hops = [[lat(r[i], r[(i + 1) % m]) + chunk / (CB / g) for i in range(m)] for r in rings]
        return max(max(ring_phase(d, [entry] * m, 2 * (m - 1))) for d in hops)

    hierarchical = across(S / (g * m), (g - 1) * intra) + (g - 1) * intra
    ring_2d = across(S / m, 2 * (g - 1) * intra)
    assert run(path, "allreduce", "hierarchical", xs, S) == pytest.approx(hierarchical, rel=1e-9)
    assert run(path, "allreduce", "ring_2d", xs, S) == pytest.approx(ring_2d, rel=1e-9)
    if xpus == 16:  # two servers of one rack: every inter-server step costs the same, the closed forms
        xl, ax = 2 * TABLE5["xpu"].latency, 4 * CL
        assert hierarchical == pytest.approx(2 * (g - 1) * (xl + S / (g * XB)) + 2 * (m - 1) * (ax + S / (m * CB)))
        assert ring_2d == pytest.approx(2 * (g - 1) * (xl + S / (g * XB)) + 2 * (m - 1) * (ax + g * S / (m * CB)))


@pytest.mark.parametrize("xpus", [16, 32])
def test_ring_topo_orders_a_shuffled_scope_by_server(cxl, xpus):
    """A scope listed across servers: the topology-ordered ring crosses each server boundary once."""
    topo, path, view, lat = cxl(xpus)
    shuffled = topo.xpus()[::2] + topo.xpus()[1::2]
    order = view.topology_order(shuffled)
    n = len(order)
    d = []
    for i in range(n):
        a, b = order[i], order[(i + 1) % n]
        d.append(lat(a, b) + S / n / (XB if view.server(a) == view.server(b) else CB))
    for kind, steps in (("allreduce", 2 * (n - 1)), ("reduce_scatter", n - 1), ("allgather", n - 1)):
        want = max(ring_phase(d, [0.0] * n, steps))
        assert run(path, kind, "ring_topo", shuffled, S) == pytest.approx(want, rel=1e-9)
        assert run(path, kind, "ring_topo", shuffled, S, memoize=True) == pytest.approx(want, rel=1e-2)
        assert run(path, kind, "ring", shuffled, S) > 1.5 * want


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_cxl_shared_memory_on_one_server(paper_system, n):
    """Writes into the owners' CXL memories, then reads back: 2 (2 l + (N-1)/N S/B) on one CXL switch."""
    topo, path = paper_system("cxl", 8)
    xs = topo.xpus()[:n]
    want = 2 * (2 * CL + (n - 1) / n * S / CB)
    assert run(path, "allreduce", "cxl_shared_memory", xs, S) == pytest.approx(want, rel=1e-9)


def star_fluid(sch: Schedule, alpha: float, bandwidth: float) -> float:
    """A reference independent of SimGrid: the schedule's flows on a star, max-min shared (equal weights).

    A flow starts when the flows it waits for have ended, spends ``alpha`` in latency, then
    shares its sender's uplink and its receiver's downlink (each ``bandwidth``) with the
    flows in their bytes phase: rates by progressive filling, recomputed at every event.
    """
    n = len(sch.flows)
    waits = [len(set(f.after)) for f in sch.flows]
    released: list[list[int]] = [[] for _ in range(n)]
    for i, f in enumerate(sch.flows):
        for d in set(f.after):
            released[d].append(i)
    left = [max(1, round(f.nbytes)) for f in sch.flows]
    latent = {i: alpha for i in range(n) if not waits[i]}  # flow -> latency left
    active: set[int] = set()
    now = done = 0
    while done < n:
        rate, ports = {}, {}
        for i in active:
            ports.setdefault(("up", sch.flows[i].src), set()).add(i)
            ports.setdefault(("down", sch.flows[i].dst), set()).add(i)
        cap = dict.fromkeys(ports, bandwidth)
        while len(rate) < len(active):  # progressive filling
            share, port = min((cap[p] / len(fs - rate.keys()), p) for p, fs in ports.items() if fs - rate.keys())
            for i in ports[port] - rate.keys():
                rate[i] = share
                for p in (("up", sch.flows[i].src), ("down", sch.flows[i].dst)):
                    cap[p] -= share
        dt = min([left[i] / rate[i] for i in active] + list(latent.values()))
        now += dt
        ended = []
        for i, r in rate.items():
            left[i] -= r * dt
            if left[i] <= 1e-6:
                ended.append(i)
        for i in list(latent):
            latent[i] -= dt
            if latent[i] <= 1e-18:
                del latent[i]
                active.add(i)
        for i in ended:
            active.discard(i)
            done += 1
            for j in released[i]:
                waits[j] -= 1
                if not waits[j]:
                    latent[j] = alpha
    return now


@pytest.fixture(scope="module")
def star_full_lmm(compile_cached):
    """star(n) with SimGrid's full max-min solve at every event (``network/optim: Full``)."""

    def get(n: int) -> tuple[str, list[str]]:
        topo = star(n, bandwidth=B, latency=LAT)
        return compile_cached(topo, config={"network/optim": "Full"}), topo.xpus()

    return get


@pytest.mark.parametrize("n", STAR_N)
def test_double_binary_tree_on_a_star(star_platform, star_full_lmm, n):
    """The two trees contend for ports: against the max-min fluid reference; by hand at N = 2, 3, 4.

    1 MiB: each tree's half is one chunk; 4 MiB: four pipelined chunks of 512 KiB. The
    pipelined trees are timed with SimGrid's full max-min solve: its default lazy update
    leaves some rates stale after a completion (up to 1.2% here; see the report).
    """
    path, xs = star_platform(n)
    whole = 2**20
    assert tree_chunks(whole) == 1 and tree_chunks(4 * whole) == 4
    got = run(path, "allreduce", "double_binary_tree", xs, whole)
    one_chunk = build_schedule("allreduce", "double_binary_tree", xs, whole)
    assert got == pytest.approx(star_fluid(one_chunk, A, B), rel=1e-9)
    by_hand = {2: 2 * A + whole / B, 3: 4 * A + 2 * whole / B, 4: 4 * A + 3 * whole / B}
    if n in by_hand:
        assert got == pytest.approx(by_hand[n], rel=1e-9)
    full, xs = star_full_lmm(n)
    sch = build_schedule("allreduce", "double_binary_tree", xs, 4 * whole)
    assert run(full, "allreduce", "double_binary_tree", xs, 4 * whole) == pytest.approx(star_fluid(sch, A, B), rel=1e-9)
    if n == 2:  # each direction carries one tree's 4 chunks up and the other's down, two at a time: (c+1) A + 2c x
        assert star_fluid(sch, A, B) == pytest.approx(5 * A + 8 * (4 * whole / 8) / B, rel=1e-9)


@pytest.mark.parametrize(("kind", "name"), [("reduce", "binary_tree"), ("allreduce", "halving_doubling")])
def test_the_fluid_reference_agrees_with_the_closed_forms(kind, name):
    for n in (5, 8, 16):
        sch = build_schedule(kind, name, ranks(n), S)
        assert star_fluid(sch, A, B) == pytest.approx(STAR_FORMS[kind, name](n), rel=1e-9)


def test_servers_of_unequal_size_fall_back_to_the_topology_ordered_ring():
    rs = ranks(6)
    view = TopologyView({r: f"r0/s{i // 4}" for i, r in enumerate(rs)})  # servers of 4 and 2
    for name in ("hierarchical", "ring_2d"):
        sch = build_schedule("allreduce", name, rs[::-1], 6e6, view)
        assert len(sch.flows) == 2 * 5 * 6 and sch.steps == 10


@pytest.mark.xfail(strict=True, reason="SimGrid's lazy LMM update (network/optim: Lazy, the default) keeps stale rates")
def test_simgrid_default_solver_shares_a_port_max_min(star_platform, star_full_lmm):
    """Six 512 KiB flows on star(4); 0->1 and 3->1 share xpu1's downlink (B/2 each, 2x), yet end at 1.5x."""
    path, xs = star_platform(4)
    full, _ = star_full_lmm(4)
    assert star_fluid(six_flows(xs, 0, TopologyView()), A, B) == pytest.approx(A + 3 * 2**19 / B)
    w = Workload()
    w.add_comm("c", 1, "allreduce", xs, algorithm="test_collective_algorithms:six_flows", is_start=True)
    ends = {p: [] for p in (path, full)}
    for p in ends:
        r = simulate(p, w)
        ends[p] = sorted((f[0][-1], f[1][-1], round((f[4] - f[3] - A) * B / 2**19, 6)) for f in r.flows)
    assert ("0", "1", 2.0) in ends[full]
    assert ends[path] == ends[full]


def six_flows(ranks, nbytes, view):
    """The six flows of the test above, at once."""
    s = Schedule("allreduce", ranks)
    for a, b in [(2, 0), (0, 2), (3, 2), (1, 2), (3, 1), (0, 1)]:
        s.add(ranks[a], ranks[b], 2**19)
    return s


@pytest.mark.parametrize("kind, name", ALGORITHMS)
def test_every_algorithm_runs_under_the_fast_path(cxl, kind, name):
    """--fast (memoize): ring_topo runs as a memoized ring, the others flow by flow; within 1% of exact."""
    topo, path, _, _ = cxl(16)
    exact = run(path, kind, name, topo.xpus(), 64e6)
    assert run(path, kind, name, topo.xpus(), 64e6, memoize=True) == pytest.approx(exact, rel=1e-2)


def _gather_then_send(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
    """x1..x(n-1) each send S to x0 at once; once all have arrived (one join), x0 sends 2S to x1."""
    s = Schedule("allgather", ranks, steps=2)
    arrived = s.join([s.add(r, ranks[0], nbytes) for r in ranks[1:]])
    s.add(ranks[0], ranks[1], 2 * nbytes, [arrived])
    return s


def test_a_join_waits_for_the_last_of_its_flows(star_platform):
    """n-1 flows share x0's downlink and end together at 2L + (n-1) S/B; the flow after the join adds 2L + 2S/B."""
    from hcsim.collectives import register

    register("allgather", "test_join_gather")(_gather_then_send)
    for n in (2, 3, 5):
        path, xs = star_platform(n)
        expected = (A + (n - 1) * S / B) + (A + 2 * S / B)
        assert run(path, "allgather", "test_join_gather", xs, S) == pytest.approx(expected, rel=1e-9)


def test_joins_keep_the_direct_allreduce_plan_linear_in_its_flows():
    """2 N (N-1) dependencies through one join per rank, instead of N^2 (N-1) written out."""
    for n in (4, 16, 64):
        fp = build_plan("allreduce", "direct", ranks(n), 1e6)
        assert (fp.flows, fp.joins) == (2 * n * (n - 1), n)
        assert sum(map(len, fp.releases)) == 2 * n * (n - 1)
        assert sorted(set(fp.waits)) == [0, 1, n - 1]


def test_a_join_on_a_missing_flow_or_in_a_cycle_is_one_line():
    s = Schedule("allgather", ranks(3), name="bad")
    s.join([5])
    with pytest.raises(HcsimError, match=r"join 0 waits for flow 5, which does not exist"):
        s.validate()
    s = Schedule("allgather", ranks(3), name="bad")
    s.add("x0", "x1", 1, [1])
    s.join([0])
    with pytest.raises(HcsimError, match="dependency cycle"):
        s.validate()


def test_a_vertex_starting_too_many_flows_at_once_is_refused_in_one_line(star_platform):
    """The exact engine's cost grows as flows x flows in flight: past the limit, one line instead of hours."""
    from hcsim.engine.exact import max_flows_at_once

    path, xs = star_platform(16)
    with pytest.raises(HcsimError, match=r"allreduce 'direct' over 16 ranks starts 240 flows at once, more than"):
        run(path, "allreduce", "direct", xs, S, tasks=False, max_flows_at_once=16 * 15 - 1)
    at_most = run(path, "allreduce", "direct", xs, S, max_flows_at_once=16 * 15)
    assert at_most == pytest.approx(STAR_FORMS["allreduce", "direct"](16), rel=1e-9)
    assert max_flows_at_once("240") == 240  # the environment variable's text, as the options' default reads it
    with pytest.raises(HcsimError, match="HCSIM_MAX_FLOWS_AT_ONCE='many'"):
        max_flows_at_once("many")
