"""The symmetry fold (hcsim/fast/symmetry.py) on topologies without the paper's zones.

Three things are checked, each against something computed independently of the fold:

* the selection: which XPUs a fat tree, a leaf-spine and a user's heterogeneous servers
  fold to, and that every folded ring hop crosses links of the same attributes carrying
  the same number of ring flows (per direction) as a full-ring hop does, counted here
  from the routes;
* the proof's claim, in SimGrid: one ring step (all flows at once) on the folded
  platform, flow by flow, takes what the full ring's flows of the same class take;
* the whole run: one LLaMA2-13B iteration folded (and fast) against the exact engine on
  the full system within 1%, at the extremes the studies sweep (16 GB/s, 100 us, mixed
  XPU types); the measured errors are in docs/fast-paths.md.

And the refusals: asymmetric topologies of our own (ranks interleaved across leaves, so
uplinks carry several ring flows; every link a different bandwidth) are refused in one
line, and ``simulate_system`` then runs every XPU and says so.
"""

from __future__ import annotations

import warnings
from collections import Counter
from itertools import pairwise

import pytest

from hcsim.engine.memory import all_local
from hcsim.errors import HcsimError
from hcsim.fast import simulate_system
from hcsim.fast.folding import Fold, fold_data_parallel
from hcsim.fast.symmetry import fold_by_symmetry, fold_system
from hcsim.fast.system import FoldRefused
from hcsim.platform import Router, Topology, compile_platform, cxl_system, noncoherent_system
from hcsim.platform.builders import fat_tree, leaf_spine
from hcsim.platform.probe import simulate_transfers
from hcsim.workload.builders import allreduce_benchmark
from hcsim.workload.llama2 import llama2_13b


def hetero_servers(
    pairs: int = 3,
    link: tuple[str, str] = ("50GBps", "2us"),
    xpu_link: tuple[str, str] = ("300GBps", "1us"),
    dram: bool = True,
) -> Topology:
    """A user topology: servers alternate 4 H100 at ``xpu_link`` and 2 A100 at half of it, each with a host DRAM.

    Each server is a zone behind its own switch (its gateway) with a DRAM all its XPUs
    share; server switches hang off one top switch by ``link``.
    """
    topo = Topology(name=f"hetero-{pairs}", system="user")
    topo.add_switch("top", "core")
    use_dram = dram
    rank = 0
    xbw, xlat = xpu_link
    for s in range(2 * pairs):
        kind, count, bw = ("H100", 4, xbw) if s % 2 == 0 else ("A100", 2, f"{float(xbw[:-4]) / 2}GBps")
        zone = f"srv{s}"
        sw, dram = f"{zone}.sw", f"{zone}.dram"
        topo.add_switch(sw, "xpu", zone=zone)
        topo.set_gateway(zone, sw)
        if use_dram:
            topo.add_memory(dram, "inf", "host_dram", zone=zone)
            topo.add_link(dram, sw, "128GBps", "100ns", link_kind="memory")
        topo.add_link(sw, "top", link[0], link[1], link_kind="ethernet")
        for i in range(count):
            x = f"{zone}.xpu{i}"
            topo.add_xpu(x, kind, zone=zone, rank=rank, **({"host_memory": dram} if use_dram else {}))
            topo.add_link(x, sw, bw, xlat, link_kind="xpu")
            rank += 1
    return topo.validate()


def interleaved_leaf_spine(leaves: int = 2, hosts: int = 4) -> Topology:
    """A leaf-spine whose ranks alternate leaves: every ring hop crosses the fabric, ``hosts`` flows per uplink."""
    topo = leaf_spine(leaves, 1, hosts)
    for x in topo.xpus():
        leaf, host = int(x[4 : x.index(".")]), int(x.rsplit("xpu", 1)[1])
        topo.nodes[x]["rank"] = host * leaves + leaf
    topo.graph["name"] = "interleaved"
    return topo.validate()


def uneven_ring_of_switches(n: int = 6) -> Topology:
    """Every XPU on its own switch, the switches in a ring whose links all differ in bandwidth: nothing repeats."""
    topo = Topology(name="uneven", system="user")
    for i in range(n):
        topo.add_switch(f"sw{i}", "generic")
        topo.add_xpu(f"x{i}", "H100", rank=i)
        topo.add_link(f"x{i}", f"sw{i}", "100GBps", "1us")
    for i in range(n):
        topo.add_link(f"sw{i}", f"sw{(i + 1) % n}", f"{10 + i}GBps", "1us")
    return topo.validate()


def ring_link_loads(topo: Topology, ranks: list[str]) -> list[tuple]:
    """Per ring hop: the (latency, bandwidth, lanes, kind, ring flows on it this direction) of each link it crosses."""
    router = Router(topo)
    hops = [router.path(a, b) for a, b in zip(ranks, ranks[1:] + ranks[:1], strict=True)]
    load = Counter((u, v) for p in hops for u, v in pairwise(p))
    out = []
    for p in hops:
        links = []
        for u, v in pairwise(p):
            e = topo.edges[u, v]
            links.append((e["latency"], e["bandwidth"], e.get("lanes", 1), e.get("link_kind"), load[u, v]))
        types = (topo.nodes[p[0]]["device"], topo.nodes[p[-1]]["device"])
        out.append((types, tuple(links)))
    return out


def check_loads(full: Topology, fold: Fold) -> None:
    """Every folded hop is some full hop (links and per-link ring flow counts), and every full hop class is kept."""
    assert fold.method == "symmetry" and fold.group == len(full.xpus()) == sum(fold.weights.values())
    assert set(fold.weights) == set(fold.ranks) and min(fold.weights.values()) >= 1
    assert set(ring_link_loads(fold.topology, fold.ranks)) == set(ring_link_loads(full, full.xpus()))


@pytest.mark.parametrize(
    "build, kept",
    [
        (lambda: fat_tree(4), ["p0e0.xpu0", "p0e0.xpu1", "p0e1.xpu0", "p0e1.xpu1", "p3e0.xpu0", "p3e0.xpu1"]),
        (lambda: fat_tree(8), ["p0e0.xpu0", "p0e0.xpu3", "p0e3.xpu0", "p0e3.xpu3", "p7e0.xpu0", "p7e0.xpu3"]),
        (lambda: leaf_spine(4, 2, 4), ["leaf0.xpu0", "leaf0.xpu3", "leaf3.xpu0", "leaf3.xpu3"]),
        (lambda: leaf_spine(6, 3, 3, fabric_link=("16GBps", "100us")), ["leaf0.xpu0", "leaf0.xpu2", "leaf5.xpu0"]),
    ],
)
def test_generic_builders_fold_to_the_first_and_last_of_each_level(build, kept):
    full = build()
    fold = fold_system(full)
    assert fold.ranks[: len(kept)] == kept
    check_loads(full, fold)


def test_fat_tree_1024_folds_to_eight_xpus():
    fold = fold_by_symmetry(fat_tree(16))
    assert len(fold.ranks) == 8 and fold.group == 1024
    assert {x.split(".")[0] for x in fold.ranks} == {"p00e0", "p00e7", "p15e0", "p15e7"}


def test_heterogeneous_servers_keep_whole_servers_because_their_xpus_share_the_dram_link():
    """Coherence off: each XPU's remote data crosses its server's DRAM link, so a server is kept whole."""
    full = hetero_servers(3)
    fold = fold_by_symmetry(full, coherent=False)
    assert [x.split(".")[0] for x in fold.ranks] == ["srv0"] * 4 + ["srv1"] * 2 + ["srv4"] * 4 + ["srv5"] * 2
    check_loads(full, fold)
    # without memory traffic the XPUs inside a server fold too (first and last of each)
    bare = fold_by_symmetry(hetero_servers(3, dram=False))
    assert [x.split(".")[0] for x in bare.ranks] == ["srv0"] * 2 + ["srv1"] * 2 + ["srv4"] * 2 + ["srv5"] * 2
    # a coherent run would put remote data in a CXL memory these XPUs do not name: refused, not guessed
    with pytest.raises(HcsimError, match="names no cxl_memory"):
        fold_by_symmetry(full, coherent=True)


def _step_times(topo: Topology, ranks: list[str], size: float, tmp_path, tag: str) -> list[float]:
    path = str(tmp_path / f"{tag}.xml")
    compile_platform(topo, path)
    return simulate_transfers(path, [(a, b, size) for a, b in zip(ranks, ranks[1:] + ranks[:1], strict=True)])


@pytest.mark.parametrize(
    "build",
    [lambda: fat_tree(4, fabric_link=("16GBps", "100us")), lambda: leaf_spine(3, 2, 3), lambda: hetero_servers(3)],
)
def test_one_ring_step_takes_the_same_time_flow_for_flow(build, tmp_path):
    full = build()
    fold = fold_by_symmetry(full, coherent=False)
    size = 3e7
    whole = _step_times(full, full.xpus(), size, tmp_path, "full")
    part = _step_times(fold.topology, fold.ranks, size, tmp_path, "fold")
    assert max(part) == pytest.approx(max(whole), rel=1e-9)
    for t in part:  # each representative flow takes what some flow it stands for takes
        assert min(abs(t / w - 1) for w in whole) < 1e-9


def llama(ranks, group):
    return llama2_13b(ranks, group=group)


# LLaMA2-13B needs more than an H100's memory; the generic builders have no host memory, so their runs keep all
# data local (placement all_local). The heterogeneous servers have a DRAM each: their runs use the default placement.
SLOW_LINK, FAR_LINK = ("16GBps", "5us"), ("12.5GBps", "100us")
CASES = {
    "fat-tree k4": (lambda: fat_tree(4), all_local),
    "fat-tree k4 16GBps": (lambda: fat_tree(4, host_link=SLOW_LINK, fabric_link=SLOW_LINK), all_local),
    "fat-tree k4 100us": (lambda: fat_tree(4, host_link=FAR_LINK, fabric_link=FAR_LINK), all_local),
    "leaf-spine 4x4": (lambda: leaf_spine(4, 2, 4), all_local),
    "leaf-spine 16GBps": (lambda: leaf_spine(4, 2, 4, fabric_link=SLOW_LINK), all_local),
    "hetero H100+A100": (lambda: hetero_servers(3), None),
    "hetero H100+A100 100us": (lambda: hetero_servers(3, link=("50GBps", "100us")), None),
    "hetero H100+A100 16GBps": (lambda: hetero_servers(3, link=("16GBps", "2us")), None),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_folded_and_fast_runs_agree_with_the_exact_engine(case):
    build, placement = CASES[case]
    kwargs = {"placement": placement} if placement else {}
    exact = simulate_system(build(), llama, record_flows=False, **kwargs)
    folded = simulate_system(build(), llama, fold=True, record_flows=False, **kwargs)
    fast = simulate_system(build(), llama, fast=True, record_flows=False, **kwargs)
    assert folded.fold is not None and folded.fold.method == "symmetry"
    assert len(folded.fold.ranks) < len(build().xpus())
    assert folded.makespan == pytest.approx(exact.makespan, rel=6e-11)
    assert fast.makespan == pytest.approx(exact.makespan, rel=8e-5)


@pytest.mark.parametrize(
    "build, reason",
    [
        (interleaved_leaf_spine, "meets links or flow counts no full-ring hop meets"),
        (uneven_ring_of_switches, "no hop class repeats"),
    ],
)
def test_asymmetric_topologies_are_refused_in_one_line(build, reason):
    topo = build()
    with pytest.raises(HcsimError) as err:
        fold_by_symmetry(topo)
    msg = str(err.value)
    assert msg.startswith(f"topology '{topo.graph['name']}' cannot be folded:") and reason in msg and "\n" not in msg


def test_xpus_without_distinct_ranks_are_refused_with_the_symmetry_fold_s_reason():
    topo = leaf_spine(2, 1, 2)
    topo.nodes["leaf1.xpu1"]["rank"] = 0
    with pytest.raises(HcsimError, match=r"two XPUs share a rank \(valid: a topology whose data-parallel ring"):
        fold_system(topo)


def test_a_refused_fold_runs_every_xpu_and_says_so():
    topo = interleaved_leaf_spine()

    def allreduce(ranks, group):
        return allreduce_benchmark(ranks, 2**24, "ring", group)

    exact = simulate_system(topo, allreduce)
    with pytest.warns(FoldRefused, match="cannot be folded: .*; running every XPU"):
        refused = simulate_system(topo, allreduce, fold=True)
    assert refused.fold is None and "per-link flow counts" in refused.fold_refused
    assert refused.makespan == exact.makespan and refused.activities == exact.activities
    with warnings.catch_warnings():
        warnings.simplefilter("error", FoldRefused)  # a fold that holds says nothing
        assert simulate_system(leaf_spine(2, 1, 4), allreduce, fold=True).fold_refused is None


@pytest.mark.parametrize("build", [lambda: cxl_system(256), lambda: noncoherent_system(128, mix="H100+A100")])
def test_paper_systems_keep_the_zone_fold(build):
    """Bit-identical results on the paper systems: the engine still folds them by their zones."""
    fold, zones = fold_system(build()), fold_data_parallel(build())
    assert (fold.method, fold.ranks, fold.weights) == ("zones", zones.ranks, zones.weights)
