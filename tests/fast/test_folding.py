"""Folding a paper system for data-parallel runs (hcsim.fast.folding).

The claim to check: the reduced ring over the representative servers has the same hops
as the full ring, link for link. So for every hop of the reduced ring, the route in the
folded topology equals the route between the same XPUs in the full system, and equals
the full ring's hop from the same sender; the set of hop classes (sender type, receiver
type, links) is the same for both rings; SimGrid resolves the folded platform's routes
the same way; and one ring step takes the same time per flow in both.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hcsim.errors import HcsimError
from hcsim.fast.folding import Fold, fold_data_parallel, hop_links
from hcsim.formats.graphml import read_graphml, write_graphml
from hcsim.platform import Router, Topology, cxl_system, leaf_spine, noncoherent_system, ring, single_server, star
from hcsim.platform.compiler import link_id
from hcsim.platform.probe import check_platform, simulate_transfers
from hcsim.simgrid_runtime import import_simgrid, load_platform, run_isolated

SYSTEMS = {"cxl": cxl_system, "noncoherent": noncoherent_system}
VALID = "(valid: a paper system from cxl_system/noncoherent_system)"


def ring_hops(ranks: list[str]) -> list[tuple[str, str]]:
    return list(zip(ranks, ranks[1:] + ranks[:1], strict=True))


def classes(topo: Topology, router: Router, ranks: list[str]) -> set[tuple[Any, ...]]:
    """Hop classes of the ring over ``ranks``: (sender type, receiver type, links of the route)."""
    dev = topo.nodes
    return {(dev[a]["device"], dev[b]["device"], hop_links(topo, router.path(a, b))) for a, b in ring_hops(ranks)}


def check_fold(full: Topology, fold: Fold) -> None:
    """The reduced ring has the full ring's hops: same routes, same classes, same successor links."""
    full_ranks = full.xpus()
    big, small = Router(full), Router(fold.topology)
    successor = dict(ring_hops(full_ranks))
    for a, b in ring_hops(fold.ranks):
        reduced = hop_links(fold.topology, small.path(a, b))
        assert reduced == hop_links(full, big.path(a, b)), (a, b)
        assert reduced == hop_links(full, big.path(a, successor[a])), (a, b, successor[a])
    assert classes(fold.topology, small, fold.ranks) == classes(full, big, full_ranks)
    assert fold.group == len(full_ranks) == sum(fold.weights.values())
    assert set(fold.weights) == set(fold.ranks) and min(fold.weights.values()) >= 1
    rank = [full.nodes[x]["rank"] for x in fold.ranks]
    assert rank == sorted(rank) and fold.topology.xpus() == fold.ranks
    assert fold.topology.graph["group"] == len(full_ranks)
    assert fold.topology.graph["folded_from"] == full.graph["name"]
    fold.topology.validate()


def servers(racks: Iterable[int], last: int) -> list[str]:
    return [f"r{r:02d}/s{s:02d}" for r in racks for s in (0, last)]


LIST_MIX = ["H100", "A100", "V100", "H100", "A100", "A100", "V100"]
# (system, XPUs, mix, servers per rack) -> (racks, servers, representative XPUs)
EXAMPLES = [
    ("cxl", 1024, "H100", 16, [0, 1], servers([0, 1], 15), 32),
    ("noncoherent", 1024, "H100", 16, [0, 1], servers([0, 1], 15), 32),
    ("cxl", 128, "H100", 16, [0], servers([0], 15), 16),
    ("noncoherent", 16, "H100", 16, [0], servers([0], 1), 16),
    ("cxl", 8, "H100", 16, [0], ["r00/s00"], 8),
    ("cxl", 1024, "H100+A100", 16, [0, 1], servers([0, 1], 15), 32),
    ("noncoherent", 384, "H100+A100", 16, [0, 1, 2], servers([0, 1, 2], 15), 48),  # H, A, H
    ("cxl", 4096, "H100", 16, [0, 1], servers([0, 1], 15), 32),
    ("noncoherent", 4096, "H100+A100", 16, [0, 1], servers([0, 1], 15), 32),
    ("cxl", 64, "H100+A100", 2, [0, 1], servers([0, 1], 1), 32),
    ("noncoherent", 40, "H100+A100", 2, [0, 1, 2], servers([0, 1], 1) + ["r02/s00"], 40),  # last rack: 1 server
    ("cxl", 136, "H100+A100", 16, [0, 1], servers([0], 15) + ["r01/s00"], 24),  # last rack: 1 server
    ("cxl", 512, "H100+A100+V100", 16, [0, 1, 2, 3], servers([0, 1, 2, 3], 15), 64),  # H A V H: (H, H) wraps
    # H A V H A A V, the last V rack of one server: racks 0, 1, 4, 6 have all type pairs but
    # no V rack with a server-to-server hop, so every rack is kept
    ("noncoherent", 104, LIST_MIX, 2, list(range(7)), servers(range(6), 1) + ["r06/s00"], 104),
]


@pytest.mark.parametrize("system, xpus, mix, spr, racks, chosen, n", EXAMPLES)
def test_examples(system, xpus, mix, spr, racks, chosen, n):
    full = SYSTEMS[system](xpus, mix=mix, servers_per_rack=spr)
    fold = fold_data_parallel(full)
    assert (fold.racks, fold.servers, len(fold.ranks)) == (racks, chosen, n)
    check_fold(full, fold)


def test_weights_count_each_xpu_once():
    fold = fold_data_parallel(cxl_system(1024, mix="H100+A100"))
    # racks 2..7 are dealt round robin: H racks 2, 4, 6 and A racks 3, 5, 7 to racks 0 and 1
    assert {x: w for x, w in fold.weights.items() if x.endswith("xpu3")} == {
        "r00s00.xpu3": 4,
        "r00s15.xpu3": 60,
        "r01s00.xpu3": 4,
        "r01s15.xpu3": 60,
    }
    homogeneous = fold_data_parallel(noncoherent_system(1024))
    assert sorted(set(homogeneous.weights.values())) == [4, 60]
    single = fold_data_parallel(cxl_system(128))
    assert single.weights["r00s00.xpu0"] == 1 and single.weights["r00s15.xpu7"] == 15


def test_one_server_is_the_identity_and_a_copy():
    full = cxl_system(8)
    fold = fold_data_parallel(full)
    assert fold.ranks == full.xpus() and fold.topology is not full
    assert dict(fold.topology.nodes(data=True)) == dict(full.nodes(data=True))
    assert {frozenset(e) for e in fold.topology.edges} == {frozenset(e) for e in full.edges}
    assert fold.topology.gateways() == full.gateways()
    fold.topology.nodes["r00s00.xpu0"]["rank"] = 99
    fold.topology.edges["r00s00.xpu0", "r00s00.xsw"]["bandwidth"] = 1.0
    fold.topology.graph["gateways"]["r00"] = "x"
    assert full.nodes["r00s00.xpu0"]["rank"] == 0
    assert full.edges["r00s00.xpu0", "r00s00.xsw"]["bandwidth"] == 900e9
    assert full.gateways()["r00"] == "r00.cxl"


def test_folded_topology_keeps_only_kept_zones():
    full = cxl_system(1024, mix="H100+A100")
    topo = fold_data_parallel(full).topology
    zones = {z for _, z in topo.nodes(data="zone")}
    assert zones == {"", "r00", "r01", "r00/s00", "r00/s15", "r01/s00", "r01/s15"}
    assert set(topo.gateways()) == zones - {""}
    assert {n for n, z in topo.nodes(data="zone") if z == ""} == {"core", "cxl.top"}
    assert topo.nodes["r01s15.xpu7"] == full.nodes["r01s15.xpu7"]
    assert topo.edges["r01.cxl", "cxl.top"] == full.edges["r01.cxl", "cxl.top"]
    assert len(topo.xpus()) == 32 and topo.graph["system"] == "cxl" and topo.graph["mix"] == "H100+A100"


def _simgrid_routes(path: str, pairs: list[tuple[str, str]]) -> list[list[str]]:
    simgrid = import_simgrid()
    engine = load_platform(path)  # keep the engine alive while its hosts are used
    out = [[link.name for link in simgrid.Host.by_name(a).route_to(simgrid.Host.by_name(b))[0]] for a, b in pairs]
    del engine
    return out


@pytest.mark.parametrize("system", ["cxl", "noncoherent"])
def test_folded_platform_compiles_loads_and_simgrid_routes_the_ring(compiled, system):
    full = SYSTEMS[system](1024, mix="H100+A100")
    fold = fold_data_parallel(full)
    path = compiled(fold.topology)
    summary = check_platform(path)
    assert (summary.xpus, summary.hosts) == (32, len(fold.topology.hosts()))
    router = Router(fold.topology)
    hops = ring_hops(fold.ranks)
    for (a, b), links in zip(hops, run_isolated(_simgrid_routes, path, hops), strict=True):
        p = router.path(a, b)
        assert links == [link_id(u, v) + ("_UP" if u < v else "_DOWN") for u, v in pairwise(p)], (a, b)


@pytest.mark.parametrize("system", ["cxl", "noncoherent"])
def test_one_ring_step_takes_the_same_time_per_flow(compiled, system):
    # 8 racks of 2 servers, H100/A100 alternating: the full ring has 128 flows, the reduced 32
    full = SYSTEMS[system](128, mix="H100+A100", servers_per_rack=2)
    fold = fold_data_parallel(full)
    assert fold.racks == [0, 1] and len(fold.ranks) == 32
    size = 2**27
    full_times = simulate_transfers(compiled(full), [(a, b, size) for a, b in ring_hops(full.xpus())])
    by_sender = dict(zip(full.xpus(), full_times, strict=True))
    reduced = simulate_transfers(compiled(fold.topology), [(a, b, size) for a, b in ring_hops(fold.ranks)])
    for a, t in zip(fold.ranks, reduced, strict=True):
        assert t == pytest.approx(by_sender[a], rel=1e-9), a


def test_servers_per_rack():
    topo = cxl_system(64, mix="H100+A100", servers_per_rack=2)
    racks = sorted({z.split("/")[0] for _, z in topo.nodes(data="zone") if z})
    assert racks == ["r00", "r01", "r02", "r03"]
    assert [topo.nodes[f"r{r:02d}s01.xpu0"]["device"] for r in range(4)] == ["H100", "A100"] * 2
    assert topo.nodes["r03s01.xpu7"]["rank"] == 63 and topo.nodes["r01s00.xpu0"]["rank"] == 16
    default = noncoherent_system(256)
    assert default.nodes["r01s00.xpu0"]["rank"] == 128 and "r02.tor" not in default
    nc = noncoherent_system(24, servers_per_rack=1)
    assert {n for n, z in nc.nodes(data="zone") if z == ""} == {"core"} and "r02.tor" in nc


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2", None])
def test_bad_servers_per_rack_is_refused(bad):
    with pytest.raises(HcsimError) as err:
        cxl_system(64, servers_per_rack=bad)
    msg = str(err.value)
    assert "\n" not in msg and "servers_per_rack" in msg and repr(bad) in msg and "valid: an integer from 1" in msg


def _modified(edit: str) -> Topology:
    topo = cxl_system(64, servers_per_rack=2)
    if edit == "link":
        topo.edges["r01s01.xpu3", "r01s01.xsw"]["bandwidth"] = 450e9
    elif edit == "type":
        topo.nodes["r00s01.xpu2"].update(device="A100", fp16_flops=312e12, fp32_flops=19.5e12)
    elif edit == "size":
        topo.remove_nodes_from(["r02s01.xpu7", "r02s01.t3_7"])
    elif edit == "ranks":
        a, b = topo.nodes["r00s00.xpu7"], topo.nodes["r00s01.xpu0"]
        a["rank"], b["rank"] = b["rank"], a["rank"]
    elif edit == "rack":  # server r01/s00 moves to the end of the ring
        for i in range(8):
            topo.nodes[f"r01s00.xpu{i}"]["rank"] = 1000 + i
    elif edit == "gateway":
        del topo.graph["gateways"]["r03/s00"]
    elif edit == "direct":
        topo.add_link("r00s00.xsw", "r00s01.xsw", "900GBps", "100ns", link_kind="xpu")
    return topo


@pytest.mark.parametrize(
    "topo, reason",
    [
        (ring(8), "it has no server zones"),
        (star(4), "it has no server zones"),
        (leaf_spine(2, 1, 4), "it has no server zones"),
        (single_server(), "it has no server zones"),
        (_modified("link"), "servers 'r01/s00' and 'r01/s01' differ in structure or link attributes"),
        (_modified("type"), "rack 'r00' mixes XPU types ['A100', 'H100']"),
        (_modified("size"), "servers of rack 'r02' have different numbers of XPUs [7, 8]"),
        (_modified("ranks"), "the XPUs of server 'r00/s00' are not consecutive in rank order"),
        (_modified("rack"), "the servers of rack 'r01' are not consecutive in rank order"),
        (_modified("gateway"), "zone 'r03/s00' has no gateway among its own nodes"),
        (_modified("direct"), "link 'r00s00.xsw'--'r00s01.xsw' joins zones 'r00/s00' and 'r00/s01' directly"),
    ],
)
def test_non_paper_topologies_are_refused(topo, reason):
    with pytest.raises(HcsimError) as err:
        fold_data_parallel(topo)
    msg = str(err.value)
    assert msg.startswith(f"topology '{topo.graph['name']}' cannot be folded: {reason}"), msg
    assert msg.endswith(VALID) and "\n" not in msg


def test_graphml_round_trip_folds_alike(tmp_path):
    full = noncoherent_system(96, mix="H100+A100", servers_per_rack=3)
    write_graphml(full, tmp_path / "t.graphml")
    again = read_graphml(tmp_path / "t.graphml")
    a, b = fold_data_parallel(full), fold_data_parallel(again)
    assert (a.racks, a.servers, a.ranks, a.weights) == (b.racks, b.servers, b.ranks, b.weights)
    check_fold(again, b)


def brute_force_racks(types: list[str], multi: list[bool]) -> list[int]:
    """The selection rule by exhaustive search: fewest racks, then lowest numbers."""
    n = len(types)
    if n == 1:
        return [0]
    pairs = {(types[i], types[(i + 1) % n]) for i in range(n)}
    multi_types = {t for t, m in zip(types, multi, strict=True) if m}
    for size in range(2, n + 1):
        for rest in itertools.combinations(range(1, n), size - 1):
            c = (0, *rest)
            if {(types[c[i]], types[c[(i + 1) % size]]) for i in range(size)} == pairs and multi_types == {
                types[i] for i in c if multi[i]
            }:
                return list(c)
    raise AssertionError("all racks always qualify")


DEVICES = ["H100", "A100", "V100"]


@st.composite
def systems(draw: st.DrawFn) -> tuple[str, int, Any, int]:
    system = draw(st.sampled_from(sorted(SYSTEMS)))
    n_servers = draw(st.integers(1, 12))
    spr = draw(st.integers(1, 5))
    racks = math.ceil(n_servers / spr)
    mix = draw(
        st.one_of(
            st.sampled_from(["H100", "H100+A100", "H100+A100+V100"]),
            st.lists(st.sampled_from(DEVICES), min_size=racks, max_size=racks),
        )
    )
    return system, 8 * n_servers, mix, spr


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(systems())
def test_fold_property(case):
    system, xpus, mix, spr = case
    full = SYSTEMS[system](xpus, mix=mix, servers_per_rack=spr)
    fold = fold_data_parallel(full)
    check_fold(full, fold)
    n_servers = xpus // 8
    sizes = [min(spr, n_servers - r * spr) for r in range(math.ceil(n_servers / spr))]
    types = [full.nodes[f"r{r:02d}s00.xpu0"]["device"] for r in range(len(sizes))]
    assert fold.racks == brute_force_racks(types, [s > 1 for s in sizes])
    expected = [f"r{r:02d}/s{s:02d}" for r in fold.racks for s in sorted({0, sizes[r] - 1})]
    assert fold.servers == expected and len(fold.ranks) == 8 * len(expected)
