"""ASTRA-sim network YAML and InfraGraph files to hcsim topologies, timed against closed forms."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hcsim.errors import HcsimError
from hcsim.fast import simulate
from hcsim.formats.astra_network import (
    GB,
    astra_network_topology,
    compact_routing,
    compile_astra_network,
    read_astra_network,
)
from hcsim.formats.topology_files import detect_format, import_topology
from hcsim.platform import Router, compile_platform, path_bandwidth, path_latency
from hcsim.platform.probe import simulate_transfers
from hcsim.simgrid_runtime import run_isolated
from hcsim.workload.builders import allreduce_benchmark

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


def test_switches_in_two_dimensions_relay_through_npus(tmp_path: Path) -> None:
    """Two Switch dimensions: NPUs of different lines meet through an NPU (it was 'no path' before)."""
    spec = {"topology": ["Switch", "Switch"], "npus_count": [4, 4], "bandwidth": [400.0, 100.0], "latency": [100, 1000]}
    topo = astra_network_topology(spec)
    assert topo.graph["host_transit"] and compact_routing(topo) == "DijkstraCache"  # tests/formats/test_astra_routes.py
    p = Router(topo).path("npu00", "npu05")  # (0, 0) -> (1, 1): one switch of each dimension, 4 links
    assert len(p) == 5 and path_latency(topo, p) == pytest.approx(2 * 100e-9 + 2 * 1000e-9)
    (t,) = lone(tmp_path, topo, [("npu00", "npu05")])
    assert t == pytest.approx(2 * 100e-9 + 2 * 1000e-9 + SIZE / (100 * GB), rel=1e-9)
    one_line = astra_network_topology({**spec, "npus_count": [4, 1]})  # the second dimension is one NPU wide
    assert not one_line.graph["host_transit"] and compact_routing(one_line) == "Cluster"


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


def test_infragraph_blueprint_without_bandwidths_names_the_link_and_the_flag_in_run(tmp_path: Path) -> None:
    """`run --platform clos.json`: one line naming the link and --link-bandwidth, which run then takes (item 5)."""
    pytest.importorskip("infragraph")
    from infragraph.blueprints.fabrics.closfabric import ClosFabric

    f = write(tmp_path, ClosFabric().serialize(), "clos.json")
    base = [*CLI, "run", "--platform", str(f), "--workload", "allreduce", "--bytes", "1MiB", "--iterations", "1"]
    proc = subprocess.run(base, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "clos.json': link '" in line and "has no bandwidth" in line and "--link-bandwidth" in line, line
    proc = subprocess.run([*base, "--link-bandwidth", "100Gbps"], capture_output=True, text=True)
    assert proc.returncode == 2 and "has no latency" in proc.stderr and "--link-latency" in proc.stderr, proc.stderr
    proc = subprocess.run([*base, "--link-bandwidth", "100Gbps", "--link-latency", "1us", "--json"],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["xpus"] == 8


def test_network_readers_refuse_a_key_given_twice(tmp_path: Path) -> None:
    """Both readers, called directly, load through hcsim.files.load_yaml (item 10)."""
    net = write(tmp_path, "topology: [Ring]\nnpus_count: [8]\nbandwidth: [50]\nlatency: [500]\nlatency: [5]\n")
    with pytest.raises(HcsimError, match=r"ASTRA-sim network file '.*net.yml': duplicate key 'latency' at line 5"):
        read_astra_network(net)
    pytest.importorskip("infragraph")
    from hcsim.formats.infragraph import is_infragraph, read_infragraph

    text = (DATA / "infragraph_two_servers.yaml").read_text()
    twice = write(tmp_path, text.replace("name: two-servers\n", "name: two-servers\nname: again\n"), "ig.yaml")
    with pytest.raises(HcsimError, match=r"InfraGraph file '.*ig.yaml': duplicate key 'name' at line 4 \(first at"):
        read_infragraph(twice)
    assert not is_infragraph(twice) and is_infragraph(DATA / "infragraph_two_servers.yaml")
    nested = write(tmp_path, text.replace("count: 2}", "count: 2, count: 3}"), "ig2.yaml")
    with pytest.raises(HcsimError, match="duplicate key 'count'"):
        import_topology(nested)


def test_yaml_alias_bombs_and_huge_texts_are_refused_before_use(tmp_path: Path) -> None:
    """A "billion laughs" network file and an oversized one: one line each, no memory blow-up."""
    from hcsim.files import MAX_YAML_CHARS, MAX_YAML_VALUES, load_yaml

    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    bomb = write(tmp_path, "\n".join(lines) + "\ntopology: [Ring]\nnpus_count: [8]\nbandwidth: [50]\nlatency: [5]\n")
    with pytest.raises(HcsimError, match=f"net.yml': it holds more than {MAX_YAML_VALUES:,} values once its YAML"):
        read_astra_network(bomb)
    with pytest.raises(HcsimError, match="refers to a value that contains it"):
        load_yaml("a: &x [1, *x]\n", "spec")
    assert load_yaml("d: &d {k: 1}\nuse: [*d, *d]\n", "spec") == {"d": {"k": 1}, "use": [{"k": 1}, {"k": 1}]}
    with pytest.raises(HcsimError, match=f"x is {MAX_YAML_CHARS + 1:,} characters long"):
        load_yaml("#" * (MAX_YAML_CHARS + 1), "x")


def test_platform_import_command_writes_a_platform(tmp_path: Path) -> None:
    pytest.importorskip("infragraph")
    out = tmp_path / "p.xml"
    proc = subprocess.run([*CLI, "platform", "import", str(DATA / "infragraph_two_servers.yaml"), "-o", str(out)],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and "8 hosts" in proc.stdout and out.is_file()
    net = write(tmp_path, "topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 400.0 ]\nlatency: [ 936.25 ]\n")
    proc = subprocess.run([*CLI, "platform", "import", str(net), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0 and "8 hosts, 0 routers, 8 links, 8 routes in 1 zones" in proc.stdout  # one star


# ---------------------------------------------------------------------- compact zones (issue 25, item 8)
def _routes(path: str) -> dict[tuple[str, str], tuple[list[str], float]]:
    """Every host pair's route as SimGrid resolves it: link directions in order, and latency."""
    from hcsim.simgrid_runtime import load_platform

    engine = load_platform(path)
    engine.netzone_root.seal()  # a DijkstraCache zone numbers its graph when sealed (run() seals too)
    hosts = {h.name: h for h in engine.all_hosts}
    out = {}
    for a in sorted(hosts):
        for b in sorted(hosts):
            if a != b:
                links, latency = hosts[a].route_to(hosts[b])
                out[a, b] = ([link.name for link in links], latency)
    return out


def _net(kind: str, n: int, bw: float = 400.0, lat: float = 936.25) -> dict:
    return {"topology": [kind], "npus_count": [n], "bandwidth": [bw], "latency": [lat]}


def _explicit_and_compact(tmp_path: Path, topo) -> tuple[str, str]:
    explicit, compact = str(tmp_path / "explicit.xml"), str(tmp_path / "compact.xml")
    compile_platform(topo, explicit)
    compile_astra_network(topo, compact)
    return explicit, compact


@pytest.mark.parametrize(
    "kind, n", [("Switch", 8), ("Ring", 8), ("Switch", 64), ("Ring", 64)] + [("Ring", n) for n in (3, 4, 5, 6, 9, 10)]
)
def test_compact_zones_take_every_route_of_the_explicit_import(tmp_path: Path, kind: str, n: int) -> None:
    """Every pair of NPUs: the same link directions in the same order, latency to the last bit."""
    topo = astra_network_topology(_net(kind, n))
    assert compact_routing(topo) == {"Switch": "Cluster", "Ring": "DijkstraCache"}[kind]
    explicit, compact = _explicit_and_compact(tmp_path, topo)
    want = run_isolated(_routes, explicit)
    assert len(want) == n * (n - 1)
    assert run_isolated(_routes, compact) == want  # opposite NPUs of an even ring too (two equal paths)
    text = Path(compact).read_text()
    assert text.count("<route ") + text.count("<host_link ") == n  # one per NPU (switch) or per ring link
    if n >= 64:  # N routes instead of N(N-1)/2
        assert Path(compact).stat().st_size * 4 < Path(explicit).stat().st_size


@pytest.mark.parametrize(
    "kind, n, alg",
    [
        (k, n, a)
        for k in ("Switch", "Ring")
        for n in (8, 64)
        for a in ("ring", "direct")
        if (k, n, a) != ("Ring", 64, "direct")
    ]
    + [pytest.param("Ring", 64, "direct", marks=pytest.mark.slow)],  # 4032 flows through up to 32 hops: a minute
)
def test_allreduce_time_is_the_explicit_import_time(tmp_path: Path, kind: str, n: int, alg: str) -> None:
    """Only the encoding changes: the same allreduce time to 1e-9 (ring: neighbours; direct: every pair at once)."""
    topo = astra_network_topology(_net(kind, n, 50.0, 500.0))
    explicit, compact = _explicit_and_compact(tmp_path, topo)
    work = allreduce_benchmark(topo.xpus(), 2**20, alg)
    t_explicit = simulate(explicit, work, 1).makespan
    assert simulate(compact, work, 1).makespan == pytest.approx(t_explicit, rel=1e-9, abs=0)
    if alg == "ring":  # closed form: 2(N-1) steps of (hops x L + S/(N B)); a ring's neighbours are 1 hop
        hops = 2 if kind == "Switch" else 1
        step = hops * 500e-9 + 2**20 / (n * 50 * GB)
        assert t_explicit == pytest.approx(2 * (n - 1) * step, rel=1e-9)


@settings(max_examples=12, deadline=None)
@given(
    kind=st.sampled_from(["Switch", "Ring"]),
    n=st.integers(3, 12),
    pairs=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), min_size=1, max_size=6),
    lat=st.sampled_from([0.0, 1.0, 936.25]),
)
def test_concurrent_transfers_take_the_explicit_time(kind: str, n: int, pairs, lat: float) -> None:
    """Random simultaneous transfers (sharing links): the compact file gives the explicit file's times."""
    import tempfile

    topo = astra_network_topology(_net(kind, n, 25.0, lat))
    xs = topo.xpus()
    transfers = [(xs[a % n], xs[b % n], SIZE) for a, b in pairs if a % n != b % n]
    if not transfers:
        return
    with tempfile.TemporaryDirectory() as tmp:
        explicit, compact = _explicit_and_compact(Path(tmp), topo)
        want = simulate_transfers(explicit, transfers)
        assert simulate_transfers(compact, transfers) == pytest.approx(want, rel=1e-9, abs=0)


@pytest.mark.parametrize(
    "spec, routing",
    [
        (_net("Switch", 2), "Cluster"),
        (_net("Ring", 3), "DijkstraCache"),
        (_net("Ring", 2), None),  # one link: nothing to route by rule
        (_net("FullyConnected", 8), None),  # N(N-1)/2 links: one route per pair is what it has
        (
            {"topology": ["Switch", "Switch"], "npus_count": [4, 4], "bandwidth": [1, 1], "latency": [1, 1]},
            "DijkstraCache",  # a grid: hcsim.formats.astra_routes
        ),
        (
            {"topology": ["Ring", "Switch"], "npus_count": [4, 1], "bandwidth": [1, 1], "latency": [1, 1]},
            "DijkstraCache",
        ),
    ],
)
def test_compact_routing_is_read_from_the_shape(spec: dict, routing: str | None) -> None:
    assert compact_routing(astra_network_topology(spec)) == routing


def test_shapes_that_only_look_compact_keep_explicit_routes() -> None:
    from hcsim.platform import builders

    ring = astra_network_topology(_net("Ring", 6))
    u, v = next(iter(ring.edges))
    ring.edges[u, v]["latency"] *= 3  # unequal links: fewest hops is not the shortest path
    assert compact_routing(ring) is None
    import networkx as nx

    shuffled = nx.relabel_nodes(astra_network_topology(_net("Ring", 6)), {"npu1": "npu4", "npu4": "npu1"})
    assert compact_routing(shuffled) is None  # names not in ring order: the tie rule would not hold
    assert compact_routing(builders.leaf_spine(2, 1, 4)) is None  # zones
    star = astra_network_topology(_net("Switch", 6))
    star.add_memory("mem", 1e9, "host_dram")
    star.add_link("mem", "dim0.switch0", 1e9, 1e-6)
    assert compact_routing(star) is None  # a memory node on the switch


def test_a_1024_npu_switch_imports_and_loads_in_seconds(tmp_path: Path) -> None:
    net = write(tmp_path, "topology: [ Switch ]\nnpus_count: [ 1024 ]\nbandwidth: [ 400.0 ]\nlatency: [ 936.25 ]\n")
    out = tmp_path / "p.xml"
    proc = subprocess.run([*CLI, "platform", "import", str(net), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "1024 hosts, 0 routers, 1024 links, 1024 routes in 1 zones" in proc.stdout
    assert out.stat().st_size < 2_000_000  # explicit: 523,776 routes, about 150 MB
    proc = subprocess.run([*CLI, "platform", "check", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0 and "1024 hosts" in proc.stdout, proc.stderr


def test_run_fast_folds_an_imported_network(tmp_path: Path) -> None:
    """``run --platform net.yml --fast``: the import's topology folded; the ring closed form on 256 NPUs."""
    net = write(tmp_path, "topology: [ Switch ]\nnpus_count: [ 256 ]\nbandwidth: [ 400.0 ]\nlatency: [ 936.25 ]\n")
    args = ["run", "--platform", str(net), "--workload", "allreduce", "--bytes", "1MiB", "--iterations", "1"]
    proc = subprocess.run([*CLI, *args, "--fast", "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    n, step = 256, 2 * 936.25e-9 + 2**20 / (256 * 400 * GB)
    assert json.loads(proc.stdout)["makespan_s"] == pytest.approx(2 * (n - 1) * step, rel=1e-9)
    xml = tmp_path / "p.xml"
    subprocess.run([*CLI, "platform", "import", str(net), "-o", str(xml)], check=True, capture_output=True)
    proc = subprocess.run([*CLI, "run", "--platform", str(xml), *args[3:], "--fast"], capture_output=True, text=True)
    assert proc.returncode == 2 and "network file itself" in proc.stderr and proc.stderr.count("\n") == 1
    proc = subprocess.run([*CLI, *args, "--xpus", "8"], capture_output=True, text=True)
    assert proc.returncode == 2 and "--xpus does not apply to an imported network" in proc.stderr


@pytest.mark.parametrize(
    "counts, kinds, match",
    [
        ([70000], ["Ring"], r"npus_count 70000 \(dimension 0\) is more than"),
        ([10**15, 2], ["Switch", "Switch"], r"npus_count 1000000000000000 \(dimension 0\)"),
        ([1024, 1024], ["Switch", "Ring"], r"npus_count 1024 x 1024 = 1048576 NPUs"),
        ([2048], ["FullyConnected"], r"needs 2096128 links \(FullyConnected dimension 0 of 2048 NPUs"),
        ([4, 1024], ["Ring", "FullyConnected"], r"FullyConnected dimension 1 of 1024 NPUs: 523776 per block"),
    ],
)
def test_network_sizes_are_bounded_before_allocation(counts: list, kinds: list, match: str) -> None:
    spec = {"topology": kinds, "npus_count": counts, "bandwidth": [1] * len(kinds), "latency": [1] * len(kinds)}
    with pytest.raises(HcsimError, match=match) as e:
        astra_network_topology(spec, where="ASTRA-sim network file 'x.yml'")
    assert "\n" not in str(e.value) and "'x.yml'" in str(e.value)


def test_infragraph_instance_counts_are_bounded_before_expansion(tmp_path: Path) -> None:
    pytest.importorskip("infragraph")
    text = (DATA / "infragraph_two_servers.yaml").read_text()
    big = text.replace("{name: node, device: server, count: 2}", "{name: node, device: server, count: 400000}")
    assert big != text
    with pytest.raises(HcsimError, match=r"instance 'node' \(count 400000\) of device 'server' \(6 components each\)"):
        import_topology(write(tmp_path, big, "big.yaml"))
    many = text.replace("{name: xpu, choice: xpu, count: 4}", "{name: xpu, choice: xpu, count: 3000}")
    with pytest.raises(HcsimError, match=r"edges may expand to \d+ links \(valid: at most 4000000"):
        import_topology(write(tmp_path, many, "many.yaml"))


def test_run_takes_an_infragraph_file_as_its_platform() -> None:
    """``run --platform infra.yaml``: imported on the fly; folded with --fast to the exact time."""
    pytest.importorskip("infragraph")
    args = ["run", "--platform", str(DATA / "infragraph_two_servers.yaml"), "--workload", "allreduce"]
    args += ["--bytes", "1MiB", "--iterations", "1", "--json"]
    exact = subprocess.run([*CLI, *args], capture_output=True, text=True)
    fast = subprocess.run([*CLI, *args, "--fast"], capture_output=True, text=True)
    assert exact.returncode == fast.returncode == 0, exact.stderr + fast.stderr
    assert "(imported)" in exact.stderr
    t = json.loads(exact.stdout)["makespan_s"]
    assert json.loads(fast.stdout)["makespan_s"] == pytest.approx(t, rel=1e-9)
    # 8 XPUs in a ring over two servers: 14 steps of 1 MiB / 8, each as long as the two flows that cross between
    # the servers (nvlink, pcie, eth, tor-internal each way; 400 Gbps Ethernet the narrowest), which share no link
    hops = 2 * 500e-9 + 2 * 250e-9 + 2 * 1e-6 + 2 * 100e-9
    assert t == pytest.approx(14 * (hops + 2**20 / 8 / 50e9), rel=1e-9)
