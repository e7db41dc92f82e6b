"""Chakra ET in and out: the ASTRA-sim samples run, collectives time like native ones, traces round-trip."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import pytest

from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.formats.chakra import chakra_files, read_chakra, write_chakra
from hcsim.formats.workload_files import load_workload
from hcsim.platform import compile_platform, star
from hcsim.workload import Workload

# ASTRA-sim's own Chakra ET samples, shipped in tests/data/astra-sim (MIT License: its LICENSE; see NOTICE)
DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLES = sorted({os.path.dirname(f) for f in glob.glob(str(DATA / "astra-sim" / "**" / "*.et"), recursive=True)})
assert len(SAMPLES) == 6, SAMPLES  # 5 microbenchmarks and the custom ring: a clone has them all


LAT, BW = 936.25e-9, 400 * 2**30  # ASTRA-sim's HGX-H100 switch: 936.25 ns per link, 400 GB/s (GB = 2^30 B)
H100_FP32 = 67e12


@pytest.fixture(scope="module")
def platforms(tmp_path_factory) -> dict[int, tuple[str, list[str]]]:
    """Star platforms of 4 and 8 H100 with the HGX-H100 link parameters."""
    out = {}
    for n in (4, 8):
        topo = star(n, "H100", bandwidth=BW, latency=LAT)
        path = str(tmp_path_factory.mktemp("plat") / f"star{n}.xml")
        compile_platform(topo, path)
        out[n] = (path, topo.xpus())
    return out


def pb():
    from hcsim.formats.chakra import et_def_pb2

    return et_def_pb2


def write_et(path: Path, nodes: list, meta_version: str = "0.0.4") -> None:
    """Write one rank file with protobuf's own varint framing."""
    from google.protobuf.internal.encoder import _VarintBytes

    msgs = [pb().GlobalMetadata(version=meta_version).SerializeToString()] + [n.SerializeToString() for n in nodes]
    path.write_bytes(b"".join(_VarintBytes(len(m)) + m for m in msgs))


def coll_node(i: int, ctype: int, size: int, name: str = "c", pg: str | None = None, deps=()):
    n = pb().Node(id=i, name=name, type=pb().COMM_COLL_NODE)
    n.attr.add(name="comm_type", int64_val=ctype)
    n.attr.add(name="comm_size", int64_val=size)
    if pg is not None:
        n.attr.add(name="pg_name", string_val=pg)
    n.data_deps.extend(deps)
    return n


# ---------------------------------------------------------------------- the samples
def sample_id(folder: str) -> str:
    return os.path.basename(os.path.dirname(folder)) + "/" + os.path.basename(folder)


@pytest.mark.parametrize("sample", SAMPLES, ids=sample_id)
def test_every_astra_sim_sample_runs(sample: str, platforms) -> None:
    n = len(chakra_files(sample))
    path, xpus = platforms[n]
    w = read_chakra(sample, xpus, xpu_flops=H100_FP32)
    w.validate(set(xpus))
    result = simulate(path, w, 1)
    assert result.makespan > 0
    assert {r.vertex for r in result.trace} == set(w.nodes)  # every vertex ran


@pytest.mark.parametrize(
    "folder, kind",
    [
        ("all_reduce/4npus_1MB", "allreduce"),
        ("all_reduce/8npus_1MB", "allreduce"),
        ("all_gather/8npus_1MB", "allgather"),
        ("reduce_scatter/8npus_1MB", "reduce_scatter"),
        ("all_to_all/8npus_1MB", "alltoall"),
    ],
)
def test_collective_from_et_times_exactly_like_the_native_one(folder: str, kind: str, platforms) -> None:
    prefix = DATA / "astra-sim" / "workload" / "microbenchmarks" / folder
    n = len(chakra_files(prefix))
    path, xpus = platforms[n]
    from_et = read_chakra(prefix, xpus)
    (vertex,) = from_et.nodes
    size = 2**20 * n if kind == "allgather" else 2**20  # an all-gather's comm_size is each rank's input (ASTRA-sim)
    assert from_et.nodes[vertex]["kind"] == kind and from_et.nodes[vertex]["bytes"] == size
    native = Workload(name="native")
    native.add_comm("native", size, kind, xpus, is_start=True)
    t_et, t_native = simulate(path, from_et, 1).makespan, simulate(path, native, 1).makespan
    assert t_et == t_native
    if kind == "allreduce":  # ring on a switch: 2(N-1) steps of (2L + S/(N B))
        closed = 2 * (n - 1) * (2 * LAT + 2**20 / (n * BW))
        assert t_et == pytest.approx(closed, rel=1e-9)


def test_custom_ring_trace_pairs_sends_and_receives(platforms) -> None:
    sample = (
        DATA / "astra-sim" / "system" / "custom_collectives" / "custom_ring_allreduce_8npus_1MB" / "custom_allreduce"
    )
    path, xpus = platforms[8]
    w = read_chakra(sample, xpus, xpu_flops=H100_FP32)
    kinds = [d["kind"] if d["type"] == "comm" else "compute" for _, d in w.nodes(data=True)]
    assert kinds.count("p2p") == 8 * 14  # 14 sends per rank, each met by its receive
    assert kinds.count("compute") == 8 * 7  # the reduce steps (7 us each)
    assert all(
        d["scope"][1] == xpus[(xpus.index(d["scope"][0]) + 1) % 8] for _, d in w.nodes(data=True) if d["type"] == "comm"
    )
    result = simulate(path, w, 1)
    for r in result.trace:
        if r.kind == "compute":
            assert r.end - r.start == pytest.approx(7e-6, rel=1e-12)  # duration_micros at the XPU's rate
        else:
            assert r.end - r.start >= 2 * LAT + 131072 / BW * (1 - 1e-12)  # a chunk over two links, at least


# ---------------------------------------------------------------------- round trip
def rich_workload() -> Workload:
    x = [f"x{i}" for i in range(4)]
    w = Workload(name="rich", ranks=x)
    for i, r in enumerate(x):
        w.add_compute(f"fwd{i}", 1e12 + i, r, precision="fp16", mem_bytes=2e9, footprint=3e9, is_start=True)
    w.add_comm("ar-all", 2**24, "allreduce", x)
    w.add_comm("ag-half", 2**20, "allgather", x[:2], algorithm="direct")
    w.add_comm("rs-other", 2**20, "reduce_scatter", [x[3], x[2]])
    w.add_comm("send01", 12345, "p2p", [x[0], x[1]])
    for i in range(len(x)):
        w.add_dependency(f"fwd{i}", "ar-all")
    w.add_dependency("ar-all", "ag-half")
    w.add_dependency("ar-all", "rs-other")
    w.add_dependency("ag-half", "send01")
    w.add_compute("bwd1", 5e11, x[1])
    w.add_dependency("send01", "bwd1")
    w.add_dependency("rs-other", "fwd3", skip_first_iteration=True)
    w.add_dependency("bwd1", "fwd1", skip_first_iteration=True)
    return w


def assert_same_graph(a: Workload, b: Workload) -> None:
    assert dict(a.nodes(data=True)) == dict(b.nodes(data=True))
    assert {(u, v, d["skip_first_iteration"]) for u, v, d in a.edges(data=True)} == {
        (u, v, d["skip_first_iteration"]) for u, v, d in b.edges(data=True)
    }


def test_write_chakra_round_trip(tmp_path: Path) -> None:
    w = rich_workload()
    paths = write_chakra(w, tmp_path, "rich")
    assert [os.path.basename(p) for p in paths] == [f"rich.{r}.et" for r in range(4)]
    back = read_chakra(tmp_path / "rich", w.graph["ranks"])
    assert_same_graph(w, back)
    assert back.graph["chakra_skipped"] == {"METADATA_NODE": 4}  # the process-group table, one per rank


@pytest.mark.parametrize("sample", SAMPLES, ids=sample_id)
def test_samples_round_trip(sample: str, tmp_path: Path) -> None:
    xpus = [f"g{i}" for i in range(8)]
    w = read_chakra(sample, xpus, xpu_flops=H100_FP32)
    write_chakra(w, tmp_path, "again")
    assert_same_graph(w, read_chakra(tmp_path / "again", xpus, xpu_flops=H100_FP32))


def test_round_trip_time_is_unchanged(tmp_path: Path, platforms) -> None:
    path, xpus = platforms[4]
    w = rich_workload()
    w = nx_relabel_ranks(w, xpus)
    write_chakra(w, tmp_path, "t")
    back = read_chakra(tmp_path / "t", xpus)
    assert simulate(path, back, 2).makespan == simulate(path, w, 2).makespan


def nx_relabel_ranks(w: Workload, xpus: list[str]) -> Workload:
    """The same graph on other XPU names."""
    table = dict(zip(w.graph["ranks"], xpus, strict=True))
    out = Workload(name=w.graph["name"], ranks=list(xpus))
    for n, d in w.nodes(data=True):
        d = dict(d)
        if d["type"] == "compute":
            d["location"] = table[d["location"]]
        else:
            d["scope"] = [table[r] for r in d["scope"]]
        out.add_node(n, **d)
    out.add_edges_from(w.edges(data=True))
    return out


def test_write_chakra_refuses_an_edge_no_rank_can_hold(tmp_path: Path) -> None:
    w = Workload(name="cross")
    w.add_compute("a", 1e9, "x0", is_start=True)
    w.add_compute("b", 1e9, "x1")
    w.add_dependency("a", "b")
    with pytest.raises(HcsimError, match="crosses ranks"):
        write_chakra(w, tmp_path)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- process groups, placement
def test_process_groups_from_a_file_and_rank_map(tmp_path: Path) -> None:
    for r in range(4):
        nodes = [coll_node(0, 0, 4096, "ar-all"), coll_node(1, 2, 8192, "ag-pair", pg="7" if r < 2 else "8", deps=[0])]
        write_et(tmp_path / f"t.{r}.et", nodes)
    groups = tmp_path / "groups.json"
    groups.write_text(json.dumps({"7": [0, 1], "8": [2, 3]}))
    ranks = tmp_path / "map.json"
    ranks.write_text(json.dumps({"0": "d", "1": "c", "2": "b", "3": "a"}))
    w = read_chakra(tmp_path / "t", ["a", "b", "c", "d"], groups=groups, rank_map=ranks)
    scopes = {n: d["scope"] for n, d in w.nodes(data=True)}
    assert scopes["ar-all"] == ["d", "c", "b", "a"]
    pairs = sorted(s for n, s in scopes.items() if n != "ar-all")
    assert pairs == [["b", "a"], ["d", "c"]]
    assert all(w.has_edge("ar-all", n) for n in scopes if n != "ar-all")


def test_process_group_from_pytorch_metadata(tmp_path: Path) -> None:
    """The table as Chakra's PyTorch converter writes it: str() of a list holding the JSON text."""
    table = [{"pg_name": "3", "ranks": [1, 3], "pg_desc": "odd's"}, {"pg_name": "4", "ranks": []}]
    for r in range(4):
        md = pb().Node(id=0, name="## process_group:init ##", type=pb().METADATA_NODE)
        md.inputs.values = str([json.dumps(table)])
        nodes = [md] + ([coll_node(1, 0, 4096, "odd", pg="3", deps=[0])] if r % 2 else [])
        nodes.append(coll_node(2, 2, 4096, "every", pg="4", deps=[0]))
        write_et(tmp_path / f"t.{r}.et", nodes)
    w = read_chakra(tmp_path / "t", ["a", "b", "c", "d"])
    assert dict(w.nodes(data="scope")) == {"odd": ["b", "d"], "every": ["a", "b", "c", "d"]}  # empty ranks: all
    assert w.nodes["odd"]["is_start"]  # its only dependency was the metadata node, passed through
    assert w.graph["chakra_skipped"] == {"METADATA_NODE": 4}


def test_run_detects_a_chakra_prefix(tmp_path: Path) -> None:
    for r in range(2):
        write_et(tmp_path / f"job.{r}.et", [coll_node(0, 0, 4096, "ar")])
    w = load_workload(str(tmp_path / "job"), ["a", "b", "c"])
    assert list(w.nodes) == ["ar"] and w.nodes["ar"]["scope"] == ["a", "b"]
    assert load_workload(str(tmp_path / "job.1.et"), ["a", "b"]).number_of_nodes() == 1  # a rank file names it too


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "make, match",
    [
        (lambda p: p.write_bytes(b"\x05ab"), "corrupt.*claims 5 bytes"),
        (lambda p: p.write_bytes(b""), "empty"),
        (lambda p: p.write_bytes(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"), "corrupt"),
    ],
)
def test_corrupt_files_are_one_line(tmp_path: Path, make, match: str) -> None:
    write_et(tmp_path / "t.0.et", [coll_node(0, 0, 64)])
    make(tmp_path / "t.1.et")
    with pytest.raises(HcsimError, match=match) as e:
        read_chakra(tmp_path / "t", ["a", "b"])
    assert "\n" not in str(e.value)


def test_unknown_node_type_is_an_error_and_known_skips_are_counted(tmp_path: Path) -> None:
    load = pb().Node(id=0, name="load", type=pb().MEM_LOAD_NODE)
    for r in range(2):
        write_et(tmp_path / f"t.{r}.et", [load])
    with pytest.raises(HcsimError, match="MEM_LOAD_NODE is not supported"):
        read_chakra(tmp_path / "t", ["a", "b"])
    odd = pb().Node(id=0, name="odd", type=42)
    write_et(tmp_path / "u.0.et", [odd])
    with pytest.raises(HcsimError, match="node type 42 is unknown"):
        read_chakra(tmp_path / "u", ["a"])


@pytest.mark.parametrize(
    "rank_nodes, match",
    [
        ([[coll_node(0, 0, 64)], []], "1 collectives on rank 0 but 0 on rank 1"),
        ([[coll_node(0, 0, 64)], [coll_node(0, 0, 128)]], "differs"),
        ([[coll_node(0, 9, 64)], [coll_node(0, 9, 64)]], "BARRIER is not supported"),
        ([[coll_node(0, 0, 64, pg="5")], [coll_node(0, 0, 64, pg="5")]], "process group '5' is not declared"),
        ([[coll_node(0, 0, 64, deps=[9])], [coll_node(0, 0, 64)]], "depends on node 9, which does not exist"),
    ],
)
def test_inconsistent_traces_are_one_line(tmp_path: Path, rank_nodes, match: str) -> None:
    for r, nodes in enumerate(rank_nodes):
        write_et(tmp_path / f"t.{r}.et", nodes)
    with pytest.raises(HcsimError, match=match):
        read_chakra(tmp_path / "t", ["a", "b"])


def test_unmatched_send_and_duration_without_rate(tmp_path: Path) -> None:
    send = pb().Node(id=0, name="s", type=pb().COMM_SEND_NODE)
    send.attr.add(name="comm_dst", int32_val=1)
    send.attr.add(name="comm_size", int64_val=64)
    write_et(tmp_path / "t.0.et", [send])
    write_et(tmp_path / "t.1.et", [])
    with pytest.raises(HcsimError, match="1 sends from rank 0 to 1 .* but 0 receives"):
        read_chakra(tmp_path / "t", ["a", "b"])
    comp = pb().Node(id=0, name="c", type=pb().COMP_NODE, duration_micros=5)
    write_et(tmp_path / "d.0.et", [comp])
    with pytest.raises(HcsimError, match="FLOP rate"):
        read_chakra(tmp_path / "d", ["a"])
    w = read_chakra(tmp_path / "d", ["a"], xpu_flops={"a": 2e12})
    assert w.nodes["c"]["flops"] == pytest.approx(5e-6 * 2e12)


def test_missing_rank_file_and_too_few_xpus(tmp_path: Path) -> None:
    write_et(tmp_path / "t.0.et", [coll_node(0, 0, 64)])
    write_et(tmp_path / "t.2.et", [coll_node(0, 0, 64)])
    with pytest.raises(HcsimError, match=r"t\.1\.et is missing"):
        read_chakra(tmp_path / "t", ["a", "b", "c"])
    write_et(tmp_path / "t.1.et", [coll_node(0, 0, 64)])
    with pytest.raises(HcsimError, match="3 ranks but the platform has 2 XPUs"):
        read_chakra(tmp_path / "t", ["a", "b"])


def test_crosscheck_card_is_the_scripts_output(tmp_path: Path) -> None:
    """docs/validation.md is what experiments/crosscheck_astrasim.py writes, byte for byte."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "validation.md"
    script = root / "experiments" / "crosscheck_astrasim.py"
    env = {**os.environ, "PYTHONPATH": str(root)}  # this checkout's hcsim, not an installed one
    proc = subprocess.run(
        [sys.executable, str(script), "--data", str(DATA), "--out", str(out)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == (root / "docs" / "validation.md").read_text()
    rows = [line for line in out.read_text().splitlines() if line.startswith("| `")]
    ring_rows = [line for line in rows if "| `ring` |" in line or "| `pairwise` |" in line or "send/recv" in line]
    assert len(ring_rows) == 7 and all(line.endswith("| 1.000000 |") for line in ring_rows)


def test_run_command_on_an_imported_network(tmp_path: Path) -> None:
    """``hcsim platform import`` then ``hcsim run --workload PATH/PREFIX``: the ring closed form, through the CLI."""
    import subprocess
    import sys

    cli = [sys.executable, "-c", "import sys; from hcsim.cli import main; sys.exit(main())"]
    net = tmp_path / "hgx.yml"
    net.write_text("topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 400.0 ]\nlatency: [ 936.25 ]\n")
    plat = tmp_path / "hgx.xml"
    assert subprocess.run([*cli, "platform", "import", str(net), "-o", str(plat)], capture_output=True).returncode == 0
    prefix = DATA / "astra-sim" / "workload" / "microbenchmarks" / "all_reduce" / "8npus_1MB" / "all_reduce"
    proc = subprocess.run(
        [*cli, "run", "--platform", str(plat), "--workload", str(prefix), "--iterations", "1", "--json"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["makespan_s"] == pytest.approx(2 * 7 * (2 * LAT + 2**20 / (8 * BW)), rel=1e-9)


def test_long_chains_of_skipped_nodes_pass_dependencies_through(tmp_path: Path) -> None:
    """5000 host-side (is_cpu_op) nodes between two collectives: skipped, counted, the edge kept, no recursion limit."""
    for r in range(2):
        nodes = [coll_node(0, 0, 64, "first")]
        for i in range(1, 5001):
            cpu = pb().Node(id=i, name=f"cpu{i}", type=pb().COMP_NODE, duration_micros=3, data_deps=[i - 1])
            cpu.attr.add(name="is_cpu_op", bool_val=True)
            nodes.append(cpu)
        nodes.append(coll_node(5001, 0, 64, "second", deps=[5000]))
        write_et(tmp_path / f"t.{r}.et", nodes)
    w = read_chakra(tmp_path / "t", ["a", "b"])
    assert sorted(w.nodes) == ["first", "second"] and list(w.edges) == [("first", "second")]
    assert w.graph["chakra_skipped"] == {"COMP_NODE (is_cpu_op)": 10000}


def test_a_send_must_sit_in_its_sources_file(tmp_path: Path) -> None:
    send = pb().Node(id=0, name="s", type=pb().COMM_SEND_NODE)
    send.attr.add(name="comm_src", int32_val=1)
    send.attr.add(name="comm_dst", int32_val=0)
    send.attr.add(name="comm_size", int64_val=64)
    write_et(tmp_path / "t.0.et", [send])
    write_et(tmp_path / "t.1.et", [])
    with pytest.raises(HcsimError, match="comm_src of a send is 1, but the node is in rank 0's file"):
        read_chakra(tmp_path / "t", ["a", "b"])


def test_data_parallel_training_round_trip_and_time(tmp_path: Path, platforms) -> None:
    """hcsim's own training graphs (per-layer allreduce, loop-carried edges, layer attributes) as Chakra."""
    from hcsim.workload.builders import fig3_example
    from hcsim.workload.llama2 import llama2_13b

    path, xpus = platforms[4]
    big = llama2_13b(xpus)
    write_chakra(big, tmp_path, "llama")
    back = read_chakra(tmp_path / "llama", xpus)
    assert_same_graph(big, back)
    assert {k: back.graph[k] for k in big.graph} == dict(big.graph)  # graph attributes too (batches per iteration...)
    small = fig3_example(xpus[:2])  # fits the star's HBM: run both
    write_chakra(small, tmp_path, "fig3")
    again = read_chakra(tmp_path / "fig3", xpus[:2])
    assert_same_graph(small, again)
    assert simulate(path, again, 3).makespan == simulate(path, small, 3).makespan


def test_attributes_chakra_cannot_hold_must_be_json(tmp_path: Path) -> None:
    w = Workload(name="odd")
    w.add_compute("a", 1e9, "x0", is_start=True, handle=object())
    with pytest.raises(HcsimError, match="vertex 'a': an attribute cannot be written to Chakra"):
        write_chakra(w, tmp_path)
    assert list(tmp_path.iterdir()) == []
