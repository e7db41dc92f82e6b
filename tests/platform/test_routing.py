"""Routes: zoned composition equals the global latency-weighted shortest path."""

import random
from itertools import pairwise

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hcsim.errors import HcsimError
from hcsim.platform import Router, Topology, cxl_system, leaf_spine, noncoherent_system, path_latency, ring


def flat_copy(topo):
    """The same graph without zones: the paper's global all-pairs Dijkstra."""
    flat = topo.copy()
    for n in flat.nodes:
        flat.nodes[n]["zone"] = ""
    flat.graph["gateways"] = {}
    return flat


@pytest.mark.parametrize("build", [cxl_system, noncoherent_system])
def test_zoned_routes_equal_global_shortest_paths(build):
    topo = build(256)
    zoned, flat = Router(topo), Router(flat_copy(topo))
    hosts = sorted(topo.hosts())
    rng = random.Random(7)
    for _ in range(300):
        a, b = rng.sample(hosts, 2)
        assert zoned.path(a, b) == flat.path(a, b), (a, b)


def test_paper_routes_use_the_expected_fabric():
    cxl, nc = Router(cxl_system(256)), Router(noncoherent_system(256))
    a, b = "r00s00.xpu0", "r01s03.xpu5"
    assert [n for n in cxl.path(a, b) if n.endswith("cxl") or n == "cxl.top"] == [
        "r00s00.cxl",
        "r00.cxl",
        "cxl.top",
        "r01.cxl",
        "r01s03.cxl",
    ]
    assert "core" in nc.path(a, b) and "r00s00.nic" in nc.path(a, b)
    assert cxl.path(a, "r00s00.xpu3") == ("r00s00.xpu0", "r00s00.xsw", "r00s00.xpu3")  # 200 ns beats CXL's 400 ns
    assert cxl.path(a, "r00s00.t3_0") == ("r00s00.xpu0", "r00s00.cxl", "r00s00.t3_0")


def test_equal_latency_paths_prefer_faster_links():
    # at 100 ns per CXL link, XPU -> CXL switch -> XPU ties XPU -> XPU switch -> XPU (2 x 100 ns)
    topo = cxl_system(16, cxl_latency="100ns")
    assert Router(topo).path("r00s00.xpu0", "r00s00.xpu5") == ("r00s00.xpu0", "r00s00.xsw", "r00s00.xpu5")


def test_routes_are_symmetric_and_never_transit_a_host():
    topo = noncoherent_system(32)
    r = Router(topo)
    hosts = sorted(topo.hosts())
    for a in hosts[:6]:
        for b in hosts[-6:]:
            p = r.path(a, b)
            assert r.path(b, a) == tuple(reversed(p))
            assert not any(topo.is_host(n) for n in p[1:-1])


def test_ring_routes_go_the_short_way_round():
    topo = ring(8, latency="1us")
    r = Router(topo)
    assert r.path("xpu0", "xpu2") == ("xpu0", "xpu1", "xpu2")
    assert r.path("xpu0", "xpu6") == ("xpu0", "xpu7", "xpu6")


def test_leaf_spine_uses_one_spine_deterministically():
    r = Router(leaf_spine(4, 3, 2))
    assert r.path("leaf0.xpu0", "leaf3.xpu1") == ("leaf0.xpu0", "leaf0.switch", "spine0", "leaf3.switch", "leaf3.xpu1")


def test_pinned_route_wins():
    topo = ring(6)
    topo.set_route("xpu0", "xpu1", ["xpu0", "xpu5", "xpu4", "xpu3", "xpu2", "xpu1"])
    assert Router(topo).path("xpu1", "xpu0") == ("xpu1", "xpu2", "xpu3", "xpu4", "xpu5", "xpu0")
    with pytest.raises(HcsimError, match="no link"):
        topo.set_route("xpu0", "xpu2", ["xpu0", "xpu2"])


def test_pinned_route_across_zones_is_refused():
    topo = leaf_spine(2, 1, 1)
    topo.set_route("leaf0.xpu0", "leaf1.xpu0", ["leaf0.xpu0", "leaf0.switch", "spine0", "leaf1.switch", "leaf1.xpu0"])
    with pytest.raises(HcsimError, match="joins two zones"):
        Router(topo)


def test_disconnected_pair_is_named():
    t = Topology()
    for n in "ab":
        t.add_xpu(n, "H100")
        t.add_switch(f"s{n}", "generic")
        t.add_link(n, f"s{n}", "1GBps", "1us")
    with pytest.raises(HcsimError, match="no path between 'a' and 'b'"):
        Router(t.validate()).path("a", "b")


@st.composite
def random_topologies(draw):
    """Connected random switch graphs with XPUs hanging off switches."""
    n_sw = draw(st.integers(2, 9))
    seed = draw(st.integers(0, 10**6))
    rng = random.Random(seed)
    t = Topology()
    for i in range(n_sw):
        t.add_switch(f"s{i}", "generic")
        if i:
            t.add_link(f"s{i}", f"s{rng.randrange(i)}", f"{rng.choice([1, 10, 100])}GBps", f"{rng.randint(0, 9)}00ns")
    for _ in range(draw(st.integers(0, n_sw))):
        a, b = rng.sample(range(n_sw), 2)
        if not t.has_edge(f"s{a}", f"s{b}"):
            t.add_link(f"s{a}", f"s{b}", "10GBps", f"{rng.randint(0, 9)}00ns")
    for j in range(draw(st.integers(2, 6))):
        t.add_xpu(f"x{j}", "H100")
        t.add_link(f"x{j}", f"s{rng.randrange(n_sw)}", "50GBps", f"{rng.randint(1, 5)}00ns")
    return t


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_topologies())
def test_routes_are_latency_shortest_on_generated_topologies(topo):
    r = Router(topo)
    switches_only = topo.subgraph([n for n in topo if not topo.is_host(n)])
    for a in topo.xpus():
        for b in topo.xpus():
            if a == b:
                continue
            p = r.path(a, b)
            assert all(topo.has_edge(u, v) for u, v in pairwise(p))
            # the best path enters the switch fabric at a's switch and leaves at b's
            sa, sb = p[1], p[-2]
            best = topo.edges[a, sa]["latency"] + topo.edges[sb, b]["latency"]
            best += nx.shortest_path_length(switches_only, sa, sb, weight="latency") if sa != sb else 0
            assert path_latency(topo, p) == pytest.approx(best, rel=1e-12, abs=1e-18)


def test_a_dijkstra_settled_as_far_as_its_targets_gives_networkx_distances():
    """Router._ranked_paths' search (routing._Dijkstra): stopped once its targets are settled, then resumed."""
    import random

    import networkx as nx

    from hcsim.platform.routing import _Dijkstra

    for seed in range(5):
        rng = random.Random(seed)
        g = nx.gnm_random_graph(60, 150, seed=seed)
        for u, v in g.edges:
            g.edges[u, v]["w"] = rng.choice([3, 5, 8]) << 40  # integer weights with ties, as _weight's
        hidden = {rng.randrange(60) for _ in range(5)} - {0}  # hosts that are not transit

        def weight(u, _v, d, hidden=hidden):
            return None if u in hidden else d["w"]

        full = nx.single_source_dijkstra_path_length(g, 0, weight=weight)
        search = _Dijkstra(g, 0, weight)
        for targets in ([rng.randrange(60)], [rng.randrange(60) for _ in range(3)], list(g.nodes)):
            dist = search.settle(targets)
            assert all(dist[t] == full[t] for t in targets if t in full)
            assert all(full[n] == d for n, d in dist.items())  # whatever is settled is final
            assert all(t not in dist for t in targets if t not in full)  # unreachable stays out
        assert dist == full  # every node asked for: the whole search
