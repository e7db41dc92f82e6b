"""DGX systems (hcsim.platform.dgx) and the per-precision device presets.

Closed forms are checked in SimGrid itself: a lone transfer takes the sum of its links'
latencies plus size / bottleneck bandwidth (raw model), with the latencies and bandwidths
taken from the spec, not from the router.
"""

from __future__ import annotations

import math
from dataclasses import replace
from itertools import pairwise

import networkx as nx
import pytest

from hcsim.errors import HcsimError
from hcsim.fast import simulate_system
from hcsim.platform import compile_platform, noncoherent_system
from hcsim.platform.devices import PEAK_SOURCES, PRESETS, Device, device, device_rate
from hcsim.platform.dgx import DGX_A100, DGX_H100, DGX_SYSTEMS, MAX_GPUS, dgx_spec, dgx_system
from hcsim.platform.probe import check_platform, simgrid_route, simulate_compute, simulate_transfers
from hcsim.platform.routing import Router, path_latency
from hcsim.workload.builders import allreduce_benchmark

H = DGX_H100


# ---------------------------------------------------------------- presets
def test_presets_carry_every_precision_with_a_source():
    h, a = device("H100-SXM"), device("a100-sxm")
    assert [device_rate(h, p) / 1e12 for p in ("fp8", "bf16", "fp16", "tf32", "fp32")] == [
        1979,
        989.4,
        989.4,
        494.5,
        67,
    ]
    assert [device_rate(a, p) / 1e12 for p in ("bf16", "fp16", "tf32", "fp32")] == [312, 312, 156, 19.5]
    assert (h.memory, h.memory_bandwidth, a.memory, a.memory_bandwidth) == (80 * 2**30, 3.35e12, 80 * 2**30, 2.039e12)
    for name in ("H100-SXM", "A100-SXM"):
        for precision in PRESETS[name].precisions():
            assert PEAK_SOURCES[name][precision]  # every rate has its source
        assert PEAK_SOURCES[name]["memory"] and PEAK_SOURCES[name]["memory_bandwidth"]
    assert device("H100-SXM5") is h and device("A100-SXM4") is a


def test_a_precision_the_device_lacks_is_one_line_naming_device_and_valid_ones():
    with pytest.raises(HcsimError, match=r"^device 'A100-SXM' has no 'fp8' rate \(valid: bf16, fp16, tf32, fp32\)$"):
        device_rate(device("A100-SXM"), "fp8")
    with pytest.raises(HcsimError, match=r"device 'H100' has no 'bf16' rate \(valid: fp16, fp32\)"):
        device_rate(PRESETS["H100"], "bf16")
    with pytest.raises(HcsimError, match="has no 'int4' rate"):
        device_rate(device("H100-SXM"), "int4")
    assert device("H100-SXM").flops("fp8") == 1979e12  # the method reaches the new rates too
    with pytest.raises(HcsimError, match="precision 'int4' is unknown"):
        device("H100-SXM").flops("int4")


def test_existing_presets_are_unchanged_and_compile_without_new_properties(tmp_path):
    h = PRESETS["H100"]
    assert (h.name, h.fp16_flops, h.fp32_flops, h.precisions()) == ("H100", 989.4e12, 67e12, ("fp16", "fp32"))
    assert "bf16" not in repr(h) and repr(h).startswith("Device(name='H100', fp16_flops=")
    assert h == Device(
        "H100", "989.4TFLOPS", "67TFLOPS", "80GiB", "3.35TBps", "NVIDIA H100 Tensor Core GPU datasheet, SXM5"
    )
    path = tmp_path / "nc.xml"
    compile_platform(noncoherent_system(8), path)
    text = path.read_text()
    assert "bf16_flops" not in text and "fp8_flops" not in text and "tf32_flops" not in text
    with pytest.raises(
        HcsimError, match=r"XPU 'r00s00.xpu\d' \(device 'H100'\) has no bf16 rate \(valid: fp16, fp32\)"
    ):
        compile_platform(noncoherent_system(8), tmp_path / "bf16.xml", precision="bf16")


def test_compiled_precision_sets_the_host_speed(tmp_path):
    path = tmp_path / "h.xml"
    compile_platform(dgx_system(2), path, precision="fp8")
    assert simulate_compute(path, "n0.gpu0", 1979e12) == pytest.approx(1.0, rel=1e-12)
    assert 'id="bf16_flops" value="989400000000000.0"' in path.read_text()
    with pytest.raises(
        HcsimError, match=r"^XPU 'n0.gpu0' \(device 'A100-SXM'\) has no fp8 rate \(valid: fp16, fp32, bf16, tf32\)$"
    ):
        compile_platform(dgx_system(2, "a100"), tmp_path / "a.xml", precision="fp8")


# ---------------------------------------------------------------- the machine
@pytest.mark.parametrize(
    "gpus,nodes,sus", [(1, 1, 1), (8, 1, 1), (64, 8, 1), (256, 32, 1), (264, 33, 2), (1024, 128, 4)]
)
def test_counts_of_hosts_links_and_zones(gpus, nodes, sus):
    t = dgx_system(gpus).validate()
    per = min(gpus, 8)
    assert len(t.xpus()) == gpus and len(t.nodes_of("memory")) == nodes
    # per node: cpu-mem, rails-leaf, and per GPU nvlink, 3 pcie links, its nic's leaf port; one uplink per SU if > 1
    assert t.number_of_edges() == nodes * (2 + 5 * per) + (sus if sus > 1 else 0)
    assert len([z for z in t.zone_tree() if z.count("/") == 1]) == nodes
    assert t.graph["scalable_units"] == sus and ("spine" in t) == (sus > 1)
    assert [t.nodes[x]["rank"] for x in t.xpus()] == [8 * (i // per) + i % per for i in range(gpus)]
    x = t.xpus()[-1]
    assert t.nodes[x]["host_memory"] == x.split(".")[0] + ".mem" and t.nodes[x]["device"] == "H100-SXM"


def test_graph_records_what_the_collective_model_needs():
    h, a = dgx_system(16), dgx_system(16, "a100")
    for t, spec in ((h, DGX_H100), (a, DGX_A100)):
        g = t.graph
        assert (g["gpus_per_node"], g["nvlink_bandwidth"], g["nic_bandwidth"]) == (
            8,
            spec.nvlink_bandwidth,
            spec.nic_bandwidth,
        )
        assert g["system"] == f"dgx-{spec.generation}" and g["coherent"] is False
    assert h.graph["nvls"] is True and a.graph["nvls"] is False
    assert (h.graph["nvlink_bandwidth"], h.graph["nic_bandwidth"]) == (450e9, 50e9)
    assert (a.graph["nvlink_bandwidth"], a.graph["nic_bandwidth"]) == (300e9, 25e9)
    assert {DGX_SYSTEMS[n] for n in ("dgx-h100", "dgx-a100")} == {"h100", "a100"}
    assert dgx_spec("dgx-a100") is DGX_A100
    for spec in (DGX_H100, DGX_A100):
        for key in ("nvlink_bandwidth", "nic_bandwidth", "pcie_bandwidth", "host_memory", "nvlink_latency", "nvls"):
            assert spec.sources[key]


def test_taper_scales_the_su_uplinks():
    full = dgx_system(64, nodes_per_leaf=4)
    half = dgx_system(64, nodes_per_leaf=4, taper=0.5)
    assert full.edges["su0.leaf", "spine"]["bandwidth"] == 4 * 8 * 50e9
    assert half.edges["su0.leaf", "spine"]["bandwidth"] == 2 * 8 * 50e9


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"gpus": 0}, "DGX GPU count 0 is invalid"),
        ({"gpus": 12}, r"DGX GPU count 12 is invalid \(valid: 1..8 for one node, or a multiple of 8 up to 16384\)"),
        ({"gpus": MAX_GPUS + 8}, "DGX GPU count 16392 is invalid"),
        ({"gpus": True}, "DGX GPU count True is invalid"),
        ({"gpus": "8"}, "DGX GPU count '8' is invalid"),
        ({"gpus": 8, "generation": "b200"}, r"DGX generation 'b200' is unknown \(valid: h100, a100\)"),
        ({"gpus": 64, "taper": 0}, "taper 0 is invalid"),
        ({"gpus": 64, "taper": 1.5}, "taper 1.5 is invalid"),
        ({"gpus": 64, "nodes_per_leaf": 0}, "nodes_per_leaf 0 is invalid"),
    ],
)
def test_bad_input_is_one_line(kwargs, match):
    with pytest.raises(HcsimError, match=match) as err:
        dgx_system(**kwargs)
    assert "\n" not in str(err.value)


def test_a_bad_spec_is_refused():
    with pytest.raises(HcsimError, match="DGX h100 nic link: bandwidth must be"):
        replace(DGX_H100, nic_bandwidth=0.0)


# ---------------------------------------------------------------- routes
def _kinds(t, path):
    return [t.edges[u, v]["link_kind"] for u, v in pairwise(path)]


def _shortest_latency(t, a, b):
    """Latency of the shortest path in the whole graph, hosts not transit (the router's rule)."""
    g = t.subgraph([n for n in t if not t.is_host(n) or n in (a, b)])
    return nx.dijkstra_path_length(g, a, b, weight="latency")


def test_routes_are_rail_aligned_and_latency_shortest():
    t = dgx_system(48, nodes_per_leaf=2)  # 6 nodes in 3 SUs
    r = Router(t)
    for a in ("n0", "n3"):
        for b in ("n1", "n2", "n5"):
            for rail in range(8):
                p = r.path(f"{a}.gpu{rail}", f"{b}.gpu{rail}")
                assert f"{a}.nic{rail}" in p and f"{b}.nic{rail}" in p and "nvlink" not in _kinds(t, p)
                assert [n for n in p if ".nic" in n] == [f"{a}.nic{rail}", f"{b}.nic{rail}"]
                assert ("spine" in p) == (int(a[1]) // 2 != int(b[1]) // 2)
    # cross-rail: leaves on the sender's rail, arrives on the receiver's, never over NVLink (no PXN)
    p = r.path("n0.gpu2", "n1.gpu6")
    assert [n for n in p if ".nic" in n] == ["n0.nic2", "n1.nic6"] and "nvlink" not in _kinds(t, p)
    assert _kinds(t, r.path("n4.gpu0", "n4.gpu7")) == ["nvlink", "nvlink"]
    assert _kinds(t, r.path("n4.gpu3", "n4.mem")) == ["pcie", "pcie", "memory"]
    for a, b in (("n0.gpu1", "n1.gpu1"), ("n0.gpu2", "n5.gpu6"), ("n2.gpu0", "n2.gpu5"), ("n3.mem", "n0.gpu4")):
        assert path_latency(t, r.path(a, b)) == pytest.approx(_shortest_latency(t, a, b), rel=1e-12)


def test_simgrid_resolves_the_routers_routes(compiled):
    t = dgx_system(48, nodes_per_leaf=2)
    path = compiled(t)
    r = Router(t)
    for a, b in (("n0.gpu3", "n1.gpu3"), ("n0.gpu3", "n5.gpu3"), ("n5.gpu1", "n2.gpu6"), ("n4.gpu0", "n4.mem")):
        links, latency = simgrid_route(path, a, b)
        p = r.path(a, b)
        assert [name.rsplit("_", 1)[0] for name in links] == [f"{min(u, v)}--{max(u, v)}" for u, v in pairwise(p)]
        assert latency == pytest.approx(path_latency(t, p), rel=1e-12)


@pytest.mark.parametrize("generation", ["h100", "a100"])
def test_lone_transfers_take_latency_plus_size_over_bottleneck(compiled, generation):
    spec = dgx_spec(generation)
    t = dgx_system(48, generation, nodes_per_leaf=2)  # SUs: n0 n1 | n2 n3 | n4 n5
    path = compiled(t)
    size = 3e9
    nv, pcie, nic, sw = spec.nvlink_latency, spec.pcie_latency, spec.nic_latency, spec.switch_latency
    rail_lat = 4 * pcie + 2 * nic + sw  # GPU-PCIe-NIC, leaf port, one leaf traversal, and back down
    cases = {  # disjoint flows (each the only one on its links but for never-saturated node uplinks)
        ("n0.gpu0", "n0.gpu1"): 2 * nv + size / spec.nvlink_bandwidth,
        ("n0.gpu3", "n1.gpu3"): rail_lat + size / spec.nic_bandwidth,
        ("n1.gpu2", "n1.mem"): 2 * pcie + spec.host_memory_latency + size / spec.pcie_bandwidth,
        ("n2.gpu4", "n4.gpu4"): rail_lat + 2 * sw + size / spec.nic_bandwidth,
    }
    ends = simulate_transfers(path, [(a, b, size) for a, b in cases])
    for (pair, expected), end in zip(cases.items(), ends, strict=True):
        assert end == pytest.approx(expected, rel=1e-9), pair
    assert check_platform(path).xpus == 48


def test_compile_is_deterministic(tmp_path):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    compile_platform(dgx_system(128, nodes_per_leaf=4), a)
    compile_platform(dgx_system(128, nodes_per_leaf=4), b)
    assert a.read_bytes() == b.read_bytes()


def test_the_fast_path_folds_it_and_agrees_with_the_exact_engine(compile_cached):
    def factory(ranks, group=None):
        return allreduce_benchmark(ranks, 64 * 2**20, "ring", group)

    fast = simulate_system(dgx_system(64), factory, fast=True, compile=compile_cached)
    exact = simulate_system(dgx_system(64), factory, compile=compile_cached)
    assert fast.fold is not None and len(fast.fold.ranks) < 64 and fast.fold_refused is None
    assert fast.makespan == pytest.approx(exact.makespan, rel=0.01)
    # the ring's slowest hop is a 50 GB/s rail (rank 8a+7 -> 8(a+1) crosses rails): 2(N-1) steps of S/N
    chunk = 64 * 2**20 / 64
    step = 4 * H.pcie_latency + 2 * H.nic_latency + H.switch_latency + chunk / H.nic_bandwidth
    assert exact.makespan == pytest.approx(126 * step, rel=0.01)
    assert math.isfinite(fast.makespan)


def test_graphml_round_trip_compiles_byte_identical(tmp_path):
    from hcsim.formats.graphml import read_graphml, write_graphml

    t = dgx_system(16)
    write_graphml(t, tmp_path / "d.graphml")
    back = read_graphml(tmp_path / "d.graphml")
    assert back.graph["nvls"] is True and back.nodes["n0.gpu0"]["fp8_flops"] == 1979e12
    compile_platform(t, tmp_path / "a.xml")
    compile_platform(back, tmp_path / "b.xml")
    assert (tmp_path / "a.xml").read_bytes() == (tmp_path / "b.xml").read_bytes()
