"""Compiled platforms, timed by real SimGrid, against closed forms (relative error <= 1e-9)."""

import random
from itertools import pairwise

import pytest

from hcsim.platform import (
    Router,
    Topology,
    cxl_system,
    leaf_spine,
    noncoherent_system,
    path_bandwidth,
    path_latency,
    ring,
    single_server,
    star,
)
from hcsim.platform.compiler import link_id
from hcsim.platform.probe import check_platform, simulate_compute, simulate_transfers
from hcsim.simgrid_runtime import import_simgrid, load_platform, run_isolated

REL = 1e-9
SIZE = 3 * 10**9 + 17  # bytes; odd on purpose


def lone_time(topo, router, a, b, size=SIZE):
    p = router.path(a, b)
    return path_latency(topo, p) + size / path_bandwidth(topo, p)


def sample_pairs(topo, k, seed):
    rng = random.Random(seed)
    xpus, mems = topo.xpus(), [n for n in topo.hosts() if n not in set(topo.xpus())]
    pairs = [tuple(rng.sample(xpus, 2)) for _ in range(k)]
    pairs += [(rng.choice(xpus), rng.choice(mems)) for _ in range(k // 2)]
    return pairs


@pytest.mark.parametrize("system, xpus", [("cxl", 64), ("noncoherent", 64), ("cxl", 384), ("noncoherent", 384)])
def test_lone_transfers_match_latency_plus_size_over_bandwidth(paper_system, system, xpus):
    topo, path = paper_system(system, xpus, mix="H100+A100")
    router = Router(topo)
    pairs = sample_pairs(topo, 12, seed=xpus)
    for a, b in pairs:  # one simulation per pair: each transfer really is alone
        (t,) = simulate_transfers(path, [(a, b, SIZE)])
        assert t == pytest.approx(lone_time(topo, router, a, b), rel=REL), (a, b)


def _routes_in_simgrid(path: str, pairs: list[tuple[str, str]]) -> list[tuple[list[str], float]]:
    """SimGrid's own route (link names, latency) for each pair, the platform loaded once."""

    def resolve(path, pairs):
        simgrid = import_simgrid()
        engine = load_platform(path)
        out = []
        for a, b in pairs:
            links, latency = simgrid.Host.by_name(a).route_to(simgrid.Host.by_name(b))
            out.append(([link.name for link in links], latency))
        del engine
        return out

    return run_isolated(resolve, path, pairs)


def route_classes(topo, router) -> dict[tuple, tuple[str, str]]:
    """One (source, destination) pair per route class: the kinds of the nodes along the route and its links.

    Sources are every host of the first server (a paper system's servers are alike), in
    both directions to every host of the system: every XPU, host memory and CXL memory,
    in the same server, another server of the rack, and another rack.
    """
    hosts = sorted(topo.hosts())
    first = [h for h in hosts if h.startswith("r00s00.")]
    classes: dict[tuple, tuple[str, str]] = {}
    for a in first:
        for b in hosts:
            for u, v in ((a, b), (b, a)):
                if u == v:
                    continue
                p = router.path(u, v)
                nodes = tuple((topo.nodes[n].get("kind"), topo.nodes[n].get("switch_kind", "")) for n in p)
                links = tuple((e["latency"], e["bandwidth"], e.get("link_kind", "")) for e in
                              (topo.edges[x, y] for x, y in pairwise(p)))  # fmt: skip
                classes.setdefault((nodes, links), (u, v))
    return classes


@pytest.mark.parametrize("system", ["cxl", "noncoherent"])
def test_simgrid_resolves_every_route_class_as_we_route_it(paper_system, system):
    topo, path = paper_system(system, 384)  # 3 racks of 16 servers
    router = Router(topo)
    classes = route_classes(topo, router)
    assert len(classes) >= 20, len(classes)
    pairs = sorted(classes.values())
    for (a, b), (links, latency) in zip(pairs, _routes_in_simgrid(path, pairs), strict=True):
        p = router.path(a, b)
        # a full-duplex link is two SimGrid links, NAME_UP (a -> b for a < b) and NAME_DOWN
        assert links == [link_id(u, v) + ("_UP" if u < v else "_DOWN") for u, v in pairwise(p)], (a, b)
        assert latency == pytest.approx(path_latency(topo, p), rel=REL), (a, b)


def test_two_flows_sharing_a_link_each_get_half(compiled):
    # both servers' XPU 0 and XPU 1 send to the next server: they share the CXL uplink
    topo = cxl_system(16)
    path = compiled(topo)
    router = Router(topo)
    flows = [("r00s00.xpu0", "r00s01.xpu0"), ("r00s00.xpu1", "r00s01.xpu1")]
    shared = topo.edges["r00s00.cxl", "r00.cxl"]["bandwidth"]
    times = simulate_transfers(path, [(a, b, SIZE) for a, b in flows])
    for (a, b), t in zip(flows, times, strict=True):
        expected = path_latency(topo, router.path(a, b)) + SIZE / (shared / 2)
        assert t == pytest.approx(expected, rel=REL)


def test_unequal_latency_flows_share_in_inverse_proportion_to_latency(compiled):
    # XPU 4 reaches the NIC over UPI: its path latency l1 exceeds XPU 0's l0. SimGrid's LMM
    # weighs each flow by 1 / path latency (the paper's CM02 sharing), so on the shared NIC
    # uplink of bandwidth B the rates are B * l1 / (l0 + l1) and B * l0 / (l0 + l1).
    topo = noncoherent_system(16)
    path = compiled(topo)
    router = Router(topo)
    flows = [("r00s00.xpu0", "r00s01.xpu0"), ("r00s00.xpu4", "r00s01.xpu4")]
    l0, l1 = (path_latency(topo, router.path(a, b)) for a, b in flows)
    assert l0 < l1
    nic = topo.edges["r00s00.nic", "r00.tor"]["bandwidth"]
    times = simulate_transfers(path, [(a, b, SIZE) for a, b in flows])
    # flow 0 sends alone at B from l0 to l1 (flow 1 is still paying its latency), then both
    # share by weight until flow 0 is done; flow 1 then has the link to itself
    r0, r1 = nic * l1 / (l0 + l1), nic * l0 / (l0 + l1)
    t0 = l1 + (SIZE - (l1 - l0) * nic) / r0
    assert times[0] == pytest.approx(t0, rel=REL)
    assert times[1] == pytest.approx(t0 + (SIZE - (t0 - l1) * r1) / nic, rel=REL)


def test_opposite_directions_do_not_share_full_duplex_links(compiled):
    topo = cxl_system(16)
    path = compiled(topo)
    router = Router(topo)
    a, b = "r00s00.xpu0", "r00s01.xpu0"
    t_ab, t_ba = simulate_transfers(path, [(a, b, SIZE), (b, a, SIZE)])
    assert t_ab == pytest.approx(lone_time(topo, router, a, b), rel=REL)
    assert t_ba == pytest.approx(lone_time(topo, router, b, a), rel=REL)


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_computation_takes_flops_over_rate(compiled, precision):
    topo = noncoherent_system(256, mix="H100+V100")
    path = compiled(topo, precision=precision)
    for xpu in ("r00s03.xpu2", "r01s07.xpu5"):  # an H100 and a V100
        flops = 7.5e15
        rate = topo.nodes[xpu][f"{precision}_flops"]
        assert simulate_compute(path, xpu, flops) == pytest.approx(flops / rate, rel=REL)


@pytest.mark.parametrize(
    "topo",
    [ring(8, latency="2us"), star(6), leaf_spine(4, 2, 3), single_server("V100")],
    ids=["ring", "star", "leafspine", "server"],
)
def test_generic_topologies_are_exact(compiled, topo):
    path = compiled(topo)
    router = Router(topo)
    hosts = topo.hosts()
    for a, b in [(hosts[0], hosts[-1]), (hosts[1], hosts[len(hosts) // 2])]:
        (t,) = simulate_transfers(path, [(a, b, SIZE)])
        assert t == pytest.approx(lone_time(topo, router, a, b), rel=REL)


def test_custom_topology_with_lanes(compiled):
    t = Topology()
    t.add_xpu("fpga", fp16="40TFLOPS", fp32="10TFLOPS", memory="16GiB", memory_bandwidth="460GBps", device="fpga")
    t.add_memory("pool", "1TiB", "cxl_type3")
    t.add_switch("sw", "cxl")
    t.add_link("fpga", "sw", "64GBps", "300ns")
    t.add_link("sw", "pool", "16GBps", "1us", lanes=2)  # two lanes: 32 GB/s
    path = compiled(t)
    (time_,) = simulate_transfers(path, [("fpga", "pool", SIZE)])
    assert time_ == pytest.approx(1.3e-6 + SIZE / 32e9, rel=REL)


def test_check_counts_what_was_compiled(compiled):
    topo = cxl_system(64)
    s = check_platform(compiled(topo))
    assert (s.xpus, s.memories, s.hosts) == (64, 64 + 16, 144)
    assert s.links == topo.number_of_edges()
    routers = sum(1 for n in topo if not topo.is_host(n))
    assert s.routers == routers
