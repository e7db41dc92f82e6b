"""ASTRA-sim network YAML and InfraGraph files to hcsim topologies, timed against closed forms."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hcsim.errors import HcsimError
from hcsim.formats.astra_network import GB, astra_network_topology, read_astra_network
from hcsim.formats.topology_files import detect_format, import_topology
from hcsim.platform import Router, compile_platform, path_bandwidth, path_latency
from hcsim.platform.probe import simulate_transfers

DATA = Path(__file__).parents[1] / "data"
SIZE = 10**8 + 7
CLI = [sys.executable, "-c", "import sys; from hcsim.cli import main; sys.exit(main())"]


def lone(tmp_path: Path, topo, pairs) -> list[float]:
    path = str(tmp_path / "p.xml")
    compile_platform(topo, path)
    return simulate_transfers(path, [(a, b, SIZE) for a, b in pairs])


def write(tmp_path: Path, text: str, name: str = "net.yml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# ---------------------------------------------------------------------- ASTRA-sim
def test_hgx_h100_switch_is_two_links_of_the_yaml_numbers(tmp_path: Path) -> None:
    f = write(tmp_path, "topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 400.0 ]  # GB/s\nlatency: [ 936.25 ]\n")
    topo = read_astra_network(f)
    assert len(topo.xpus()) == 8 and len(topo.nodes_of("switch")) == 1
    assert all(d["bandwidth"] == 400 * 2**30 and d["latency"] == 936.25e-9 for _, _, d in topo.edges(data=True))
    (t,) = lone(tmp_path, topo, [("npu0", "npu5")])
    assert t == pytest.approx(2 * 936.25e-9 + SIZE / (400 * GB), rel=1e-9)  # ASTRA-sim: 2 hops x latency + size/bw


def test_ring_routes_the_shorter_way_and_fully_connected_is_one_hop(tmp_path: Path) -> None:
    ring = astra_network_topology({"topology": ["Ring"], "npus_count": [8], "bandwidth": [50.0], "latency": [500.0]})
    assert ring.number_of_edges() == 8
    t_ring = lone(tmp_path, ring, [("npu0", "npu6")])[0]
    assert t_ring == pytest.approx(2 * 500e-9 + SIZE / (50 * GB), rel=1e-9)  # 0 -> 7 -> 6
    fc = astra_network_topology(
        {"topology": ["FullyConnected"], "npus_count": [5], "bandwidth": [25], "latency": [700]}
    )
    assert fc.number_of_edges() == 10
    assert lone(tmp_path, fc, [("npu1", "npu3")])[0] == pytest.approx(700e-9 + SIZE / (25 * GB), rel=1e-9)


def test_three_dimensions_build_every_block(tmp_path: Path) -> None:
    spec = {
        "topology": ["Ring", "FullyConnected", "Switch"],
        "npus_count": [2, 8, 4],
        "bandwidth": [200.0, 100.0, 50.0],
        "latency": [50.0, 500.0, 2000.0],
    }
    topo = astra_network_topology(spec)
    assert len(topo.xpus()) == 64
    assert len(topo.nodes_of("switch")) == 2 * 8  # one switch per line of dimension 2
    kinds = [d["link_kind"] for _, _, d in topo.edges(data=True)]
    assert (kinds.count("dim0"), kinds.count("dim1"), kinds.count("dim2")) == (32 * 1, 8 * 28, 16 * 4)
    # npu id = c0 + 2 c1 + 16 c2: npu0 and npu16 differ in dimension 2 only (through a switch)
    assert topo.has_edge("npu00", "dim2.switch0") and topo.has_edge("npu16", "dim2.switch0")
    assert topo.has_edge("npu00", "npu01") and topo.has_edge("npu00", "npu14")  # dim 0 ring, dim 1 full mesh
    r = Router(topo)
    p = r.path("npu00", "npu16")
    assert path_latency(topo, p) == pytest.approx(2 * 2000e-9) and path_bandwidth(topo, p) == 50 * GB


@pytest.mark.parametrize(
    "text, match",
    [
        ("topology: [ Torus ]\nnpus_count: [ 4 ]\nbandwidth: [ 1 ]\nlatency: [ 1 ]\n", "Torus.*unknown"),
        ("topology: [ Ring, Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 1, 1 ]\nlatency: [ 1, 1 ]\n", "npus_count has 1"),
        ("topology: [ Ring ]\nnpus_count: [ 0 ]\nbandwidth: [ 1 ]\nlatency: [ 1 ]\n", "npus_count 0"),
        ("topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ -1 ]\nlatency: [ 1 ]\n", "bandwidth -1"),
        ("topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 1 ]\n", "'latency' is missing"),
        ("topology: [ Ring\n", "not valid YAML"),
    ],
)
def test_bad_astra_networks_are_one_line(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(HcsimError, match=match) as e:
        import_topology(write(tmp_path, text), fmt="astra-sim" if "npus_count" not in text else None)
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------------- InfraGraph
def test_infragraph_file_maps_types_and_times_exactly(tmp_path: Path) -> None:
    pytest.importorskip("infragraph")
    f = DATA / "infragraph_two_servers.yaml"
    assert detect_format(f) == "infragraph"
    topo = import_topology(f)
    assert topo.xpus() == [f"node.{s}.xpu.{i}" for s in range(2) for i in range(4)]
    assert topo.nodes["node.0.nic.0"]["switch_kind"] == "nic"
    assert topo.graph["infragraph_dropped"] == {"unlinked components": 2}  # tor ports 2 and 3
    same, across = lone(tmp_path, topo, [("node.0.xpu.0", "node.0.xpu.1"), ("node.0.xpu.2", "node.1.xpu.3")])
    assert same == pytest.approx(2 * 500e-9 + SIZE / 400e9, rel=1e-9)
    hops = 2 * 500e-9 + 2 * 250e-9 + 2 * 1e-6 + 2 * 100e-9  # nvlink, pcie, eth, tor-internal, each way
    assert across == pytest.approx(hops + SIZE / 50e9, rel=1e-9)  # 400 Gbps = 50 GB/s, the narrowest


def test_infragraph_blueprint_needs_default_links(tmp_path: Path) -> None:
    """The package's own Clos blueprint declares links without physical numbers: defaults fill them, or an error."""
    pytest.importorskip("infragraph")
    from infragraph.blueprints.fabrics.closfabric import ClosFabric

    f = write(tmp_path, ClosFabric().serialize(), "clos.json")
    with pytest.raises(HcsimError, match="has no bandwidth .*--link-bandwidth"):
        import_topology(f)
    topo = import_topology(f, link_bandwidth="100Gbps", link_latency="1us")
    assert len(topo.xpus()) == 8 and topo.number_of_nodes() == 151  # every component of the blueprint is linked
    assert 100e9 / 8 in {d["bandwidth"] for _, _, d in topo.edges(data=True)}  # the default, where none is declared


def test_platform_import_command_writes_a_platform(tmp_path: Path) -> None:
    pytest.importorskip("infragraph")
    out = tmp_path / "p.xml"
    proc = subprocess.run([*CLI, "platform", "import", str(DATA / "infragraph_two_servers.yaml"), "-o", str(out)],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and "8 hosts" in proc.stdout and out.is_file()
    net = write(tmp_path, "topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 400.0 ]\nlatency: [ 936.25 ]\n")
    proc = subprocess.run([*CLI, "platform", "import", str(net), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0 and "8 hosts, 1 routers, 8 links" in proc.stdout
