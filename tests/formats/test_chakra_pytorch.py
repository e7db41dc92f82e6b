"""Artifacts users bring: PyTorch-converted Chakra traces run; ASTRA-sim's all-gather size; per-kind algorithms.

A trace from Chakra's PyTorch converter (schema 1.0.1) has host-side operators and ``c10d::``
collective launches (``is_cpu_op`` true, no ``comm_type``), GPU kernels and NCCL kernels
(``is_cpu_op`` false; ``comm_type``, ``comm_size``), ``rf_id``/``op_schema`` on host operators,
and ``ctrl_deps`` naming each operator's call-tree parent (the root left out of the file, and a
host operator may name the kernel it waits for, closing a cycle). :func:`pytorch_trace` writes
such a rank file with these features, built here (no third-party trace is shipped).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from clitools import CLI, assert_one_line_error

from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.formats.chakra import files as chakra_io
from hcsim.formats.chakra import read_chakra, write_chakra
from hcsim.formats.workload_files import algorithm_choice, load_workload
from hcsim.platform import compile_platform, ring, star
from hcsim.workload import Workload

ROOT = Path(__file__).parents[2]
RATE = 67e12  # fp32 FLOP/s: durations become FLOPs at this rate and take exactly their traced time
LAYERS = 6  # each: a host aten:: op launching one GPU kernel; every second one also an all-reduce


def _attr(node, name: str, value) -> None:  # noqa: ANN001
    a = node.attr.add(name=name)
    if isinstance(value, bool):
        a.bool_val = value
    elif isinstance(value, int):
        a.int64_val = value
    else:
        a.string_val = value


def pytorch_trace(path: Path) -> None:
    """One rank of a PyTorch step as Chakra's converter writes it (see the module docstring)."""
    from google.protobuf.internal.encoder import _VarintBytes

    pb = chakra_io.schema()
    nodes = []
    root = 1  # the call-tree root (e.g. ``ProfilerStep#``): named by ctrl_deps, absent from the file
    next_id = 2
    previous_kernel = None
    for layer in range(LAYERS):
        host = pb.Node(id=next_id, name=f"aten::linear_{layer}", type=pb.COMP_NODE)
        host.ctrl_deps.append(root)
        _attr(host, "is_cpu_op", True)
        _attr(host, "rf_id", next_id)
        _attr(host, "op_schema", "aten::linear(Tensor input, Tensor weight) -> Tensor")
        kernel = pb.Node(id=next_id + 1, name=f"sm90_gemm_{layer}", type=pb.COMP_NODE)
        kernel.ctrl_deps.append(host.id)  # its launching operator: the call tree, not an order
        if previous_kernel is not None:
            kernel.data_deps.append(previous_kernel)  # one CUDA stream
        kernel.duration_micros = 100 + 10 * layer
        _attr(kernel, "is_cpu_op", False)
        host.ctrl_deps.append(kernel.id)  # a host op waiting for its kernel: a ctrl_deps cycle
        nodes += [host, kernel]
        previous_kernel = kernel.id
        next_id += 2
        if layer % 2:
            launch = pb.Node(id=next_id, name="c10d::allreduce_", type=pb.COMM_COLL_NODE)
            launch.ctrl_deps.append(root)
            _attr(launch, "is_cpu_op", True)
            _attr(launch, "rf_id", next_id)
            nccl = pb.Node(id=next_id + 1, name="ncclDevKernel_AllReduce_Sum", type=pb.COMM_COLL_NODE)
            nccl.ctrl_deps.append(launch.id)
            nccl.data_deps.append(kernel.id)  # on NCCL's stream, after the kernel that made the data
            _attr(nccl, "is_cpu_op", False)
            _attr(nccl, "comm_type", 0)  # ALL_REDUCE
            _attr(nccl, "comm_size", 1 << 20)
            nodes += [launch, nccl]
            next_id += 2
    msgs = [pb.GlobalMetadata(version="1.0.1").SerializeToString()] + [n.SerializeToString() for n in nodes]
    path.write_bytes(b"".join(_VarintBytes(len(m)) + m for m in msgs))


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one-rank trace: ``DIR/chakra.0.et``."""
    out = tmp_path_factory.mktemp("chakra_pytorch")
    pytorch_trace(out / "chakra.0.et")
    return out


def _kernels(path: Path) -> tuple[float, list[tuple[int, int]]]:
    """Sum of the GPU compute kernels' durations (s), and the GPU collectives' (comm_type, comm_size)."""
    pb = chakra_io.schema()
    _, nodes = chakra_io.read_messages(str(path))
    gpu = [n for n in nodes if chakra_io.node_attrs(n).get("is_cpu_op") is False]
    busy = sum(n.duration_micros for n in gpu if n.type == pb.COMP_NODE) * 1e-6
    colls = [n for n in gpu if n.type == pb.COMM_COLL_NODE]
    return busy, [(chakra_io.node_attrs(n)["comm_type"], chakra_io.node_attrs(n)["comm_size"]) for n in colls]


def test_the_pytorch_trace_runs_one_rank(trace: Path, tmp_path: Path) -> None:
    """Host-side operators skipped (counted), ctrl_deps not followed, the kernels run back to back on one stream."""
    topo = star(2, "H100")
    path = str(tmp_path / "star.xml")
    compile_platform(topo, path)
    w = read_chakra(trace, topo.xpus(), xpu_flops=RATE)
    busy, colls = _kernels(trace / "chakra.0.et")
    assert len(colls) == LAYERS // 2 and {t for t, _ in colls} == {0}
    assert w.graph["chakra_skipped"] == {
        "COMP_NODE (is_cpu_op)": LAYERS,
        "COMM_COLL_NODE (is_cpu_op)": LAYERS // 2,
        "collective over one rank": LAYERS // 2,  # one rank file: nothing to communicate with
        # host op -> root and -> its kernel; kernel -> host op; launch -> root; NCCL kernel -> launch
        "ctrl_deps of a PyTorch trace (call-tree parents)": 3 * LAYERS + 2 * (LAYERS // 2),
    }
    assert w.number_of_nodes() == LAYERS
    result = simulate(path, w, 1)
    assert result.makespan == pytest.approx(busy, rel=1e-9)  # the kernels back to back, nothing idle


def test_the_pytorch_trace_replicated_runs_its_collectives(trace: Path, tmp_path: Path) -> None:
    """The same file as ranks 0..3 (a data-parallel job): its NCCL kernels become 4-rank collectives."""
    folder = tmp_path / "dp4"
    folder.mkdir()
    for r in range(4):
        os.link(trace / "chakra.0.et", folder / f"chakra.{r}.et")
    topo = star(4, "H100")
    path = str(tmp_path / "star.xml")
    compile_platform(topo, path)
    w = read_chakra(folder, topo.xpus(), xpu_flops=RATE)
    comms = sorted((d["kind"], d["bytes"]) for _, d in w.nodes(data=True) if d["type"] == "comm")
    _, colls = _kernels(trace / "chakra.0.et")
    kind = {0: "allreduce"}
    assert comms == sorted((kind[t], float(size)) for t, size in colls)
    assert all(d["scope"] == topo.xpus() for _, d in w.nodes(data=True) if d["type"] == "comm")
    result = simulate(path, w, 1)
    assert {r.vertex for r in result.trace} == set(w.nodes)
    busy, _ = _kernels(trace / "chakra.0.et")
    assert result.makespan >= busy * (1 - 1e-9)  # the kernels, then at most the last all-reduce's tail
    comm = [r for r in result.trace if r.host == "collective"]
    assert len(comm) == LAYERS // 2 and all(r.end > r.start for r in comm)


@pytest.mark.parametrize("flag", ["--chakra", "--workload"])
def test_cli_runs_the_trace_with_one_iteration_by_default(trace: Path, flag: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [*CLI, "run", "--system", "cxl", "--xpus", "8", flag, str(trace), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert '"iterations": 1' in r.stdout
    assert "Traceback" not in r.stderr


# ---------------------------------------------------------------------- ASTRA-sim's all-gather size
def _write_rank(path: Path, nodes: list) -> None:
    from google.protobuf.internal.encoder import _VarintBytes

    pb = chakra_io.schema()
    msgs = [pb.GlobalMetadata(version="0.0.4").SerializeToString()] + [n.SerializeToString() for n in nodes]
    path.write_bytes(b"".join(_VarintBytes(len(m)) + m for m in msgs))


def _coll(ctype: int, size: int) -> object:
    pb = chakra_io.schema()
    n = pb.Node(id=1, name="c", type=pb.COMM_COLL_NODE)
    n.attr.add(name="comm_type", int64_val=ctype)
    n.attr.add(name="comm_size", int64_val=size)
    return n


def test_an_all_gathers_comm_size_is_each_ranks_input(tmp_path: Path) -> None:
    """ASTRA-sim's Ring.cc: an all-gather of comm_size C moves C per ring step (output N C).

    On a star (link latency L, bandwidth B) hcsim's ring takes (N-1)(2L + C/B), S = N C.
    """
    n, c, lat, bw = 4, 3_000_000, 1e-6, 100e9
    for r in range(n):
        _write_rank(tmp_path / f"ag.{r}.et", [_coll(2, c)])  # ALL_GATHER
    topo = star(n, "H100", bandwidth=bw, latency=lat)
    path = str(tmp_path / "star.xml")
    compile_platform(topo, path)
    w = read_chakra(tmp_path / "ag", topo.xpus())
    assert w.nodes["c"]["bytes"] == n * c
    assert simulate(path, w, 1).makespan == pytest.approx((n - 1) * (2 * lat + c / bw), rel=1e-9)
    # reduce-scatter and all-reduce keep comm_size as it is (their input)
    for ctype in (0, 7):
        for r in range(n):
            _write_rank(tmp_path / f"k{ctype}.{r}.et", [_coll(ctype, c)])
        assert read_chakra(tmp_path / f"k{ctype}", topo.xpus()).nodes["c"]["bytes"] == c


@pytest.mark.parametrize("size", [12_000_000.0, 1_000_003.0])  # divisible by 4, and not
def test_written_all_gathers_read_back_the_same(tmp_path: Path, size: float) -> None:
    ranks = ["a", "b", "c", "d"]
    w = Workload(name="ag")
    w.add_comm("ag", size, "allgather", ranks, is_start=True)
    write_chakra(w, tmp_path, "ag")
    _, nodes = chakra_io.read_messages(str(tmp_path / "ag.0.et"))
    assert chakra_io.node_attrs(nodes[0])["comm_size"] == round(size / 4)  # what ASTRA-sim reads
    assert read_chakra(tmp_path / "ag", ranks).nodes["ag"]["bytes"] == size


# ---------------------------------------------------------------------- --algorithm per kind
def test_a_traces_all_to_all_can_run_astra_sims_ring(tmp_path: Path) -> None:
    """``--algorithm all_to_all=ring``: on a ring of N, sum over k of (L + (N-k) S/(N B))."""
    n, s, lat, bw = 4, 4_000_000, 1e-6, 100e9
    for r in range(n):
        _write_rank(tmp_path / f"a2a.{r}.et", [_coll(6, s)])  # ALL_TO_ALL
    topo = ring(n, bandwidth=bw, latency=lat)
    path = str(tmp_path / "ring.xml")
    compile_platform(topo, path)
    w = load_workload(str(tmp_path / "a2a"), topo.xpus(), algorithm="all_to_all=ring")
    assert w.nodes["c"]["algorithm"] == "ring"
    closed = sum(lat + (n - k) * s / (n * bw) for k in range(1, n))
    assert simulate(path, w, 1).makespan == pytest.approx(closed, rel=1e-9)
    assert load_workload(str(tmp_path / "a2a"), topo.xpus()).nodes["c"]["algorithm"] == "direct"  # the default


def test_algorithm_choice() -> None:
    assert algorithm_choice(None) == {}
    assert algorithm_choice("halving_doubling") == {"allreduce": "halving_doubling"}
    assert algorithm_choice("all_to_all=ring, all_reduce=halving_doubling") == {
        "alltoall": "ring",
        "allreduce": "halving_doubling",
    }
    assert algorithm_choice("alltoall=pairwise,reduce_scatter=ring") == {
        "alltoall": "pairwise",
        "reduce_scatter": "ring",
    }
    for spec, match in [
        ("all_to_all=nonesuch", r"algorithm 'nonesuch' is unknown for alltoall \(valid: direct, "),
        ("gather=ring", r"item 'gather=ring' is invalid \(valid: KIND=NAME"),
        ("all_to_all=ring,alltoall=direct", "names alltoall twice"),
        ("nonesuch", "algorithm 'nonesuch' is unknown for allreduce"),
        ("all_to_all=", "is invalid"),
    ]:
        with pytest.raises(HcsimError, match=match):
            algorithm_choice(spec)


def test_a_named_workload_takes_allreduce_only(tmp_path: Path) -> None:
    with pytest.raises(HcsimError, match="has allreduces only"):
        load_workload("allreduce", ["a", "b"], algorithm="all_to_all=ring")
    w = load_workload("allreduce", ["a", "b"], size="1MiB", algorithm="allreduce=halving_doubling")
    assert {d["algorithm"] for _, d in w.nodes(data=True) if d["type"] == "comm"} == {"halving_doubling"}


# ---------------------------------------------------------------------- formats hcsim does not read
@pytest.mark.parametrize(
    "name, content, match",
    [
        (
            "aicb_physical.csv",
            b"comm_type,comm_group,comm_group_size,msg_size,stage,dst,src,additional,_elapsed_time\n"
            b"epoch_num: 1\nall_reduce,dp,8,1024,init,,,,\n",
            "is an AICB physical-execution CSV, which hcsim does not read",
        ),
        ("notes.txt", b"hello\n", "is in no format hcsim reads"),
        ("blob.bin", bytes(range(256)), "is a binary file of no format hcsim reads"),
    ],
)
def test_unknown_formats_list_the_accepted_ones(tmp_path: Path, name: str, content: bytes, match: str) -> None:
    f = tmp_path / name
    f.write_bytes(content)
    with pytest.raises(HcsimError, match=match) as e:
        load_workload(str(f), ["a", "b"])
    text = str(e.value)
    assert "\n" not in text
    for accepted in ("a JSON file", "Chakra trace", "SimAI/AICB workload text file", "llama2-13b"):
        assert accepted in text


def test_cli_unknown_format_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "phys.csv"
    f.write_text("comm_type,comm_group,comm_group_size,msg_size\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [*CLI, "run", "--system", "cxl", "--xpus", "8", "--workload", str(f)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert_one_line_error(r, "AICB physical-execution CSV", "Chakra trace")


def test_cli_chakra_flag_says_what_is_not_a_trace(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [*CLI, "run", "--system", "cxl", "--xpus", "8", "--chakra", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert_one_line_error(r, "Chakra trace directory", "must hold one trace NAME.RANK.et")
