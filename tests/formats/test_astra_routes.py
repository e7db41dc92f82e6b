"""Multi-dimensional ASTRA-sim imports routed by rule (hcsim.formats.astra_routes) against the explicit import."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

from hcsim.fast import simulate
from hcsim.formats.astra_network import astra_network_topology, compact_routing, compile_astra_network
from hcsim.formats.astra_routes import grid_spec
from hcsim.platform import compile_platform
from hcsim.simgrid_runtime import run_isolated
from hcsim.workload.builders import allreduce_benchmark

CLI = [sys.executable, "-c", "import sys; from hcsim.cli import main; sys.exit(main())"]


def _net(blocks: list[str], counts: list[int], bws: list[float], lats: list[float]) -> dict:
    return {"topology": blocks, "npus_count": counts, "bandwidth": bws, "latency": lats}


# every kind of tie the rule must break as hcsim's router does: equal latencies (then bandwidth, then the
# dimension), the NPU dimension first or last, an even ring's opposite NPUs, zero latency, three dimensions
GRIDS = [
    _net(["Switch", "Switch"], [4, 3], [50, 25], [500, 500]),
    _net(["Switch", "Switch"], [4, 4], [50, 50], [500, 500]),
    _net(["Switch", "Switch", "Switch"], [2, 3, 2], [50, 50, 50], [500, 100, 900]),
    _net(["Ring", "Switch"], [4, 3], [50, 50], [100, 500]),
    _net(["Ring", "Switch"], [6, 2], [50, 50], [900, 500]),
    _net(["Switch", "Ring"], [3, 5], [50, 50], [500, 500]),
    _net(["FullyConnected", "Switch"], [4, 3], [50, 50], [0, 500]),
    _net(["Switch", "FullyConnected", "Switch"], [2, 3, 2], [25, 50, 25], [500, 100, 100]),
    _net(["Ring", "Ring"], [6, 4], [50, 50], [500, 500]),  # a torus
    _net(["Ring", "FullyConnected", "Switch"], [4, 3, 2], [50, 25, 50], [100, 100, 300]),
]
IDS = ["-".join(f"{b[0]}{n}@{lat:g}/{bw:g}" for b, n, bw, lat in zip(*g.values(), strict=True)) for g in GRIDS]


def _routes(path: str) -> dict[tuple[str, str], tuple[list[str], float]]:
    """Every NPU pair's route as SimGrid resolves it: link names in order, and latency."""
    from hcsim.simgrid_runtime import load_platform

    engine = load_platform(path)
    engine.netzone_root.seal()
    hosts = {h.name: h for h in engine.all_hosts}
    out = {}
    for a in sorted(hosts):
        for b in sorted(hosts):
            if a != b:
                links, latency = hosts[a].route_to(hosts[b])
                out[a, b] = ([link.name for link in links], latency)
    return out


def _both(tmp_path: Path, topo) -> tuple[str, str]:
    explicit, compact = str(tmp_path / "explicit.xml"), str(tmp_path / "compact.xml")
    compile_platform(topo, explicit)
    compile_astra_network(topo, compact)
    return explicit, compact


def _ring_tie(spec: dict, a: str, b: str) -> bool:
    """Whether NPUs ``a`` and ``b`` sit half-way round an even ring of 6 or more (two paths, both shortest)."""
    i, j = int(a[3:]), int(b[3:])
    for block, n in zip(spec["topology"], spec["npus_count"], strict=True):
        if block == "Ring" and n >= 6 and n % 2 == 0 and (i % n - j % n) % n == n // 2:
            return True
        i, j = i // n, j // n
    return False


@pytest.mark.parametrize("spec", GRIDS, ids=IDS)
def test_grid_routes_are_the_explicit_routes(tmp_path: Path, spec: dict) -> None:
    """Every ordered pair of NPUs (same dimension, across dimensions): the explicit route link by link, at
    its latency to 1e-14 (summed in another order: SimGrid's Dijkstra composes a route from its end).

    Both files follow hcsim's router, which on an imported grid breaks ties as SimGrid's Dijkstra zone
    does (the node it numbers first): half-way round an even ring too.
    """
    topo = astra_network_topology(spec)
    assert compact_routing(topo) == "DijkstraCache" and grid_spec(topo) == spec
    explicit, compact = _both(tmp_path, topo)
    want, got = run_isolated(_routes, explicit), run_isolated(_routes, compact)
    assert want.keys() == got.keys() and len(want) == len(topo.xpus()) * (len(topo.xpus()) - 1)
    kinds = _link_kinds(topo)
    dim = {f"{name}_{way}": data["link_kind"] for name, data in kinds.items() for way in ("UP", "DOWN")}
    classes: Counter = Counter()
    for (a, b), (links, latency) in want.items():
        classes["across" if len({dim[x] for x in links}) > 1 else "same"] += 1
        classes["tie"] += _ring_tie(spec, a, b)
        assert got[a, b][0] == links, (a, b)
        assert got[a, b][1] == pytest.approx(latency, rel=1e-14, abs=1e-21)
    assert classes["same"] and classes["across"]  # both route classes are there
    text = Path(compact).read_text()
    assert text.count("<route ") == topo.number_of_edges() + text.count('symmetrical="NO"')


def _link_kinds(topo) -> dict[str, dict]:
    from hcsim.platform.compiler import link_id

    return {link_id(a, b): d for a, b, d in topo.edges(data=True)}


@pytest.mark.parametrize("spec", GRIDS, ids=IDS)
@pytest.mark.parametrize("alg", ["ring", "direct"])
def test_grid_allreduce_takes_the_explicit_time(tmp_path: Path, spec: dict, alg: str) -> None:
    """Ring (neighbours, across dimensions at line ends) and direct (every pair at once): the explicit time to 1e-9."""
    topo = astra_network_topology(spec)
    explicit, compact = _both(tmp_path, topo)
    work = allreduce_benchmark(topo.xpus(), 2**20, alg)
    want = simulate(explicit, work, 1).makespan
    assert simulate(compact, work, 1).makespan == pytest.approx(want, rel=1e-9, abs=0)


def test_shapes_other_than_the_imported_grid_keep_explicit_routes() -> None:
    grid = astra_network_topology(GRIDS[3])
    u, v = next(iter(grid.edges))
    grid.edges[u, v]["latency"] *= 2  # one link off its dimension's values
    assert compact_routing(grid) is None
    grid = astra_network_topology(GRIDS[3])
    grid.add_memory("mem", 1e9, "host_dram")
    grid.add_link("mem", "dim1.switch0", 1e9, 1e-6)
    assert compact_routing(grid) is None
    grid = astra_network_topology(GRIDS[3])
    part = grid.subgraph([n for n in grid.nodes if n not in ("npu00", "npu01")]).copy()
    assert compact_routing(part) is None  # a fold: another shape
    renamed = nx.relabel_nodes(astra_network_topology(GRIDS[0]), {"npu00": "npu05", "npu05": "npu00"})
    assert compact_routing(renamed) is None
    grid = astra_network_topology(GRIDS[3])
    grid.nodes["npu00"]["route_rank"] = 10**6  # ranks that are not SimGrid's numbers
    assert compact_routing(grid) is None


@pytest.mark.parametrize(
    "yaml, links",
    [
        (
            "topology: [ Ring, Switch ]\nnpus_count: [ 8, 128 ]\nbandwidth: [ 200, 50 ]\nlatency: [ 500, 1000 ]",
            2048,
        ),
        (
            "topology: [ Switch, Switch, Switch ]\nnpus_count: [ 8, 8, 16 ]\nbandwidth: [ 400.0, 200.0, 50.0 ]\n"
            "latency: [ 936.25, 1000.0, 2000.0 ]",
            3072,
        ),
    ],
)
def test_a_1024_npu_grid_imports_and_loads_compactly(tmp_path: Path, yaml: str, links: int) -> None:
    net = tmp_path / "net.yml"
    net.write_text(yaml + "\n")
    out = tmp_path / "p.xml"
    proc = subprocess.run([*CLI, "platform", "import", str(net), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "1024 hosts" in proc.stdout and f"{links} links" in proc.stdout
    text = out.read_text()
    assert text.count("<route ") < 2 * links and out.stat().st_size < 3_000_000  # explicit: 523,776 routes
    proc = subprocess.run([*CLI, "platform", "check", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0 and "1024 hosts" in proc.stdout, proc.stderr


def test_run_fast_folds_an_imported_grid(tmp_path: Path) -> None:
    """``run --platform grid.yml --fast``: the exact run's time, and the ring closed form.

    Ring dimension first (500 ns < 1000 ns): a ring step inside a line takes one ring link; from the
    last NPU of a line to the first of the next, the ring's wrap-around link and two switch links, on
    links no other flow of the step uses: 2(N-1) steps of (2500 ns + S / (N x 50 GiB/s)).
    """
    import json

    net = tmp_path / "net.yml"
    net.write_text("topology: [ Ring, Switch ]\nnpus_count: [ 4, 8 ]\nbandwidth: [ 200, 50 ]\nlatency: [ 500, 1000 ]\n")
    args = ["run", "--platform", str(net), "--workload", "allreduce", "--bytes", "1MiB", "--iterations", "1", "--json"]
    fast = subprocess.run([*CLI, *args, "--fast"], capture_output=True, text=True)
    exact = subprocess.run([*CLI, *args], capture_output=True, text=True)
    assert fast.returncode == 0 and exact.returncode == 0, fast.stderr + exact.stderr
    f, e = json.loads(fast.stdout), json.loads(exact.stdout)
    assert f["folded_from"] == 32 and f["simulated_xpus"] < 32 and e["simulated_xpus"] == 32
    n = 32
    closed = 2 * (n - 1) * (2500e-9 + 2**20 / (n * 50 * 2**30))
    assert e["makespan_s"] == pytest.approx(closed, rel=1e-9)
    assert f["makespan_s"] == pytest.approx(e["makespan_s"], rel=1e-12)
