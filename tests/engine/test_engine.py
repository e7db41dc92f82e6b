"""The engine against closed forms, with real SimGrid runs."""

import json

import pytest

from hcsim.engine import all_local, simulate
from hcsim.engine.report import summarize, write_chrome_trace, write_csv
from hcsim.errors import HcsimError
from hcsim.platform import Topology, ring
from hcsim.workload import Workload, allreduce_benchmark, data_parallel, fig3_example
from hcsim.workload.builders import Layer

REL = 1e-9


def uniform_ring(compiled, n, bw=100e9, lat=1e-6):
    return compiled(ring(n, bandwidth=bw, latency=lat)), ring(n).xpus()


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 16, 32, 64])
def test_ring_allreduce_takes_2_n_minus_1_steps(compiled, n):
    path, xpus = uniform_ring(compiled, n)
    size = 1_000_000 * n  # divisible by n: chunks are whole bytes
    step = 1e-6 + size / n / 100e9
    for algorithm, steps in (("ring", 2 * (n - 1)), ("coherent_ring", n - 1)):
        r = simulate(path, allreduce_benchmark(xpus, size, algorithm), iterations=2, record_flows=False)
        assert r.iteration_end[0] == pytest.approx(steps * step, rel=REL)
        assert r.iteration_end[1] == pytest.approx(2 * steps * step, rel=REL)


def custom_pair(compiled):
    """Two XPUs (1 TFLOP/s, 2e11 B local memory at 1e12 B/s) on a switch, each with its own memory."""
    t = Topology()
    t.add_switch("sw", "generic")
    for i in range(2):
        t.add_xpu(
            f"x{i}",
            fp16=2e12,
            fp32=1e12,
            memory=2e11,
            memory_bandwidth=1e12,
            device="test",
            rank=i,
            host_memory=f"m{i}",
            cxl_memory=f"m{i}",
        )
        t.add_memory(f"m{i}", "inf", "cxl_type3")
        t.add_switch(f"ms{i}", "cxl")
        t.add_link(f"x{i}", "sw", 1e10, 1e-6)
        t.add_link(f"x{i}", f"ms{i}", 1e11, 1e-6)
        t.add_link(f"ms{i}", f"m{i}", 1e15, 0.0)  # the memory device itself: no extra cost that matters
        t.add_link(f"ms{i}", "sw", 1e9, 1e-3)  # keeps the memories reachable; far too slow to be chosen
    return compiled(t)


def test_compute_vertex_is_roofline_bound(compiled):
    path = custom_pair(compiled)
    w = Workload()
    w.add_compute("a", 3e12, "x0", precision="fp32", mem_bytes=1e9, is_start=True)  # compute bound: 3 s
    w.add_compute("b", 1e12, "x0", precision="fp16", mem_bytes=1e9)  # 0.5 s at fp16
    w.add_compute("c", 1e9, "x0", mem_bytes=2e12, footprint=0)  # memory bound: 2 s at 1e12 B/s
    w.add_dependency("a", "b")
    w.add_dependency("b", "c")
    r = simulate(path, w, iterations=1)
    ends = {row[0]: row[5] for row in r.trace}
    assert ends["a"] == pytest.approx(3.0, rel=REL)
    assert ends["b"] == pytest.approx(3.5, rel=REL)
    assert ends["c"] == pytest.approx(5.5, rel=REL)


def test_operators_sharing_an_xpu_share_its_speed(compiled):
    """The driver looks at an exec when it would end alone; SimGrid decides when it really ends."""
    path = custom_pair(compiled)
    w = Workload()
    w.add_compute("a", 2e12, "x0", is_start=True)  # 2 s alone at 1e12 flop/s (fp32)
    w.add_compute("b", 1e12, "x0", is_start=True)  # 1 s alone
    w.add_compute("c", 1e12, "x1", is_start=True)  # alone on x1
    r = simulate(path, w, iterations=2)
    ends = {(row[0], row[1]): row[5] for row in r.trace}
    # x0 shared half and half: b(0) ends at 2 s; then b(1) and the second half of a(0) share
    # until 4 s; a(1) runs alone from 4 to 6 s
    assert ends["b", 0] == pytest.approx(2.0, rel=REL)
    assert ends["a", 0] == pytest.approx(4.0, rel=REL)
    assert ends["b", 1] == pytest.approx(4.0, rel=REL)
    assert ends["a", 1] == pytest.approx(6.0, rel=REL)
    assert ends["c", 0] == pytest.approx(1.0, rel=REL) and ends["c", 1] == pytest.approx(2.0, rel=REL)


def test_lone_p2p(compiled):
    path = custom_pair(compiled)
    w = Workload()
    w.add_comm("send", 5e8, "p2p", ["x0", "x1"], is_start=True)
    r = simulate(path, w, iterations=3)
    one = 2e-6 + 5e8 / 1e10
    assert r.iteration_end == pytest.approx([one, 2 * one, 3 * one], rel=REL)


def test_two_collectives_sharing_a_link_slow_each_other(compiled):
    # a, b on switch s1; c, d on s2; s1 -- s2 is the bottleneck (10 GB/s), host links 100 GB/s
    t = Topology()
    for s in ("s1", "s2"):
        t.add_switch(s, "generic")
    t.add_link("s1", "s2", 10e9, 1e-6)
    for x, s in (("a", "s1"), ("b", "s1"), ("c", "s2"), ("d", "s2")):
        t.add_xpu(x, "H100")
        t.add_link(x, s, 100e9, 1e-6)
    path = compiled(t)
    size, lat = 2_000_000_000, 3e-6  # path latency a -> c: three links
    alone = simulate(path, allreduce_benchmark(["a", "c"], size), iterations=1)
    w = Workload(batches_per_iteration=1)
    w.add_comm("A", size, "allreduce", ["a", "c"], is_start=True)
    w.add_comm("B", size, "allreduce", ["b", "d"], is_start=True)
    both = simulate(path, w, iterations=1)
    # 2 steps of size/2; alone at 10 GB/s, together each at 5 GB/s (max-min, equal latencies)
    assert alone.makespan == pytest.approx(2 * (lat + size / 2 / 10e9), rel=REL)
    ends = {row[0]: row[5] for row in both.trace}
    assert ends["A"] == pytest.approx(2 * (lat + size / 2 / 5e9), rel=REL)
    assert ends["B"] == pytest.approx(ends["A"], rel=REL)


def test_fig3_local_coherent_noncoherent_by_hand(compiled):
    """Paper Fig. 3: 2 XPUs, 3 layers; L3 does not fit (capacity 2e11 B = two 1e11 B layers).

    R = 1e12 flop/s, W = 1e12 B/s; a layer: F = 1e12 forward, 2F backward, M = 1e11 B;
    memory link 1e11 B/s, 1 us; gradients 1e9 B over a 2-hop 1e10 B/s path (1 us per hop).
      FP (local) = max(1, 0.1) = 1;      BP (local) = max(2, 0.1) = 2
      remote copy = 1e-6 + 1e11 / 1e11 = 1.000001
      coherent:     FP3 = max(1, 1.000001) = 1.000001;   BP3 = max(2, 1.000001) = 2
      non-coherent: FP3 = 1.000001 + 1 = 2.000001;     BP3 = 1.000001 + 2 = 3.000001
      allreduce (2 ranks) = 2 x (2e-6 + 5e8 / 1e10) = 0.100004, exposed only after BP1
    """
    path = custom_pair(compiled)
    w = fig3_example(["x0", "x1"], layer_flops=1e12, layer_bytes=1e11, grad_bytes=1e9)
    ar = 2 * (2e-6 + 5e8 / 1e10)
    expected = {
        "local": 3 * 1 + 3 * 2 + ar,
        "coherent": 1 + 1 + 1.000001 + 2 + 2 + 2 + ar,
        "noncoherent": 1 + 1 + 2.000001 + 3.000001 + 2 + 2 + ar,
    }
    got = {
        "local": simulate(path, w, 2, placement=all_local),
        "coherent": simulate(path, w, 2, coherent=True),
        "noncoherent": simulate(path, w, 2, coherent=False),
    }
    for mode, r in got.items():
        assert r.iteration_end[0] == pytest.approx(expected[mode], rel=REL), mode
        assert r.iteration_end[1] == pytest.approx(2 * expected[mode], rel=REL), mode
    assert expected["local"] < expected["coherent"] <= expected["noncoherent"]
    stall = summarize(got["noncoherent"])["per_xpu_per_iteration_s"]["memory_stall"]
    assert stall == pytest.approx(2 * 1.000001, rel=1e-6)  # the copies of FP3 and BP3


def test_deadlock_is_named(compiled):
    path = custom_pair(compiled)
    w = Workload()
    w.add_compute("A", 1e9, "x0", is_start=True)
    w.add_compute("B", 1e9, "x0")
    w.add_compute("C", 1e9, "x1")
    w.add_dependency("A", "B")
    w.add_dependency("C", "B")
    w.add_dependency("B", "C")  # B and C wait for each other, and no edge skips the first iteration
    with pytest.raises(
        HcsimError, match=r"deadlock.*'B' \(iteration 1\) waits for 'C'.*'C' \(iteration 1\) waits for 'B'"
    ):
        simulate(path, w, iterations=2)


def test_traces_are_deterministic_and_valid(compiled, tmp_path):
    path, xpus = uniform_ring(compiled, 4)
    layers = [Layer(f"l{i}", 1e12, 2e12, 1e9, 1e9, 4e8) for i in range(2)]
    w = data_parallel(xpus, layers)
    outputs = []
    for run in range(2):
        r = simulate(path, w, iterations=2)
        write_csv(r, tmp_path / f"t{run}.csv")
        write_chrome_trace(r, tmp_path / f"t{run}.json")
        outputs.append(((tmp_path / f"t{run}.csv").read_bytes(), (tmp_path / f"t{run}.json").read_bytes()))
    assert outputs[0] == outputs[1]
    doc = json.loads(outputs[0][1])
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    assert set(xpus) <= names  # a track per XPU
    assert {n for n in names if n.startswith("allreduce")} == {"allreduce: AR0:l0", "allreduce: AR1:l1"}
    header = outputs[0][0].decode().splitlines()[0]
    assert header == "vertex,iteration,host,kind,start_s,end_s,bytes,flops"


def test_summary_reports_links_and_throughput(compiled):
    path, xpus = uniform_ring(compiled, 4)
    r = simulate(path, allreduce_benchmark(xpus, 4e9), iterations=2)
    s = summarize(r)
    assert s["batches_per_s"] == pytest.approx(1 / s["steady_iteration_s"])
    top = s["top_links"][0]
    # every ring link direction carries 2(N-1) chunks of S/N per iteration
    assert top["bytes"] == pytest.approx(2 * 2 * 3 * 1e9)
    # busy every step except its latency: utilization = (S/N/B) / (L + S/N/B), mean and peak alike
    busy = (1e9 / 100e9) / (1e-6 + 1e9 / 100e9)
    assert top["mean_utilization"] == pytest.approx(busy, rel=1e-9)
    assert top["peak_utilization"] == pytest.approx(busy, rel=1e-9)


def test_workload_json_round_trip(tmp_path):
    w = fig3_example(["x0", "x1"])
    w.to_json(tmp_path / "w.json")
    back = Workload.from_json(tmp_path / "w.json")
    assert dict(back.nodes(data=True)) == dict(w.nodes(data=True))
    assert {(u, v): d for u, v, d in back.edges(data=True)} == {(u, v): d for u, v, d in w.edges(data=True)}


def test_workload_json_written_by_hand_takes_the_add_defaults(tmp_path):
    """A vertex without mem_bytes, precision or algorithm means what add_compute/add_comm would make of it."""
    path = tmp_path / "w.json"
    nodes = [
        {"id": "c", "type": "compute", "flops": 2e9, "location": "x0", "is_start": True},
        {"id": "p", "type": "comm", "bytes": 1e6, "kind": "p2p", "scope": ["x0", "x1"]},
    ]
    path.write_text(json.dumps({"nodes": nodes, "edges": [{"source": "c", "target": "p"}]}))
    w = Workload()
    w.add_compute("c", 2e9, "x0", is_start=True)
    w.add_comm("p", 1e6, "p2p", ["x0", "x1"])
    w.add_dependency("c", "p")
    back = Workload.from_json(path)
    assert dict(back.nodes(data=True)) == dict(w.nodes(data=True))
    assert list(back.edges(data=True)) == list(w.edges(data=True))


def test_vertex_sizes_stop_at_one_pebibyte():
    """SimGrid takes a flow's size as a 64-bit integer: a vertex moves at most 2**50 bytes."""
    from hcsim.workload.graph import MAX_BYTES

    w = Workload()
    w.add_comm("ok", MAX_BYTES, "p2p", ["x0", "x1"])
    for size in (MAX_BYTES * 2, 2**64, 10**400):
        with pytest.raises(HcsimError, match="bytes must be a finite number >= 0 and at most"):
            Workload().add_comm("z", size, "p2p", ["x0", "x1"])
    with pytest.raises(HcsimError, match="mem_bytes must be a finite number >= 0 and at most"):
        Workload().add_compute("z", 1.0, "x0", mem_bytes=1e300)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda w: w.add_compute("z", -1.0, "x0"), "flops must be a finite number >= 0"),
        (lambda w: w.add_comm("z", -5, "p2p", ["x0", "x1"]), "bytes must be a finite number >= 0"),
        (lambda w: w.add_comm("z", 5, "allreduce", ["x0", "x0"]), "rank 'x0' is repeated"),
        (lambda w: w.add_comm("z", 5, "gossip", ["x0", "x1"]), "kind 'gossip' is unknown"),
        (lambda w: w.add_comm("z", 5, "allreduce", ["x0", "x1"], algorithm="tree"), "algorithm 'tree' is unknown"),
        (lambda w: w.add_compute("z", 1.0, "x0", precision="int8"), "precision 'int8' is unknown"),
    ],
)
def test_bad_vertices(build, message):
    with pytest.raises(HcsimError, match=message):
        build(Workload())


def test_vertex_on_a_non_xpu_host_is_refused(compiled):
    path = custom_pair(compiled)
    for where, message in (("m0", "not an XPU"), ("nowhere", "unknown host")):
        w = Workload()
        w.add_compute("a", 1e9, where, is_start=True)
        with pytest.raises(HcsimError, match=f"'a' is placed on '{where}', .*{message}"):
            simulate(path, w)
    with pytest.raises(HcsimError, match="iterations 0 is invalid"):
        simulate(path, w, iterations=0)


def test_zero_byte_operations_complete(compiled):
    # SimGrid 4.1 never completes a 0-byte Comm: a remote operator with no bytes runs as local,
    # a 0-byte collective costs its latency (plus one byte)
    path = custom_pair(compiled)
    w = Workload()
    w.add_compute("big", 1e12, "x0", mem_bytes=1e9, footprint=5e11, is_start=True)  # does not fit: remote
    w.add_compute("empty", 0.0, "x0", mem_bytes=0.0, footprint=0.0, data="big")  # same remote block, 0 bytes
    w.add_comm("barrier", 0, "allreduce", ["x0", "x1"])
    w.add_dependency("big", "empty")
    w.add_dependency("empty", "barrier")
    r = simulate(path, w, iterations=2, coherent=False)
    ends = {(row[0], row[1]): row[5] for row in r.trace}
    assert r.placement["empty"] == "m0"
    assert ends[("empty", 0)] == pytest.approx(ends[("big", 0)], rel=1e-12)
    barrier = ends[("barrier", 0)] - ends[("empty", 0)]
    assert barrier == pytest.approx(2 * (2e-6 + 1 / 1e10), rel=1e-9)


def test_a_vertex_with_only_first_iteration_skips_starts_at_time_zero(compiled):
    path = custom_pair(compiled)
    w = Workload()
    w.add_compute("A", 1e12, "x0", is_start=True)
    w.add_compute("B", 1e12, "x1")
    w.add_dependency("A", "B", skip_first_iteration=True)  # B's iteration k needs A's k-1: none for k = 0
    r = simulate(path, w, iterations=2)
    starts = {(row[0], row[1]): row[4] for row in r.trace}
    assert starts[("B", 0)] == 0.0 and starts[("B", 1)] == pytest.approx(1.0, rel=1e-12)


def test_raw_contexts_change_nothing_but_speed(compiled, tmp_path):
    """The engine's one actor runs on SimGrid's raw contexts; threads give byte-identical traces."""
    from hcsim.platform import cxl_system
    from hcsim.workload.llama2 import llama2_13b

    topo = cxl_system(8)  # LLaMA2-13B does not fit in 8 H100s: CXL memory flows share links with the ring
    path = compiled(topo)
    w = llama2_13b(topo.xpus())
    outputs = []
    for raw in (True, False):
        r = simulate(path, w, iterations=1, raw_contexts=raw)
        write_csv(r, tmp_path / "t.csv")
        outputs.append(((tmp_path / "t.csv").read_bytes(), r.flows, r.activities))
    assert outputs[0] == outputs[1]


def test_data_parallel_refuses_bad_layers():
    with pytest.raises(HcsimError, match=r"vertex 'a/FP0:L' is a duplicate .*is a rank listed twice"):
        data_parallel(["a", "b", "a"], [Layer("L", 1, 1)])
    with pytest.raises(HcsimError, match=r"compute vertex 'a/BP0:L': flops must be a finite number >= 0, got -1"):
        data_parallel(["a", "b"], [Layer("L", 1, -1)])
    with pytest.raises(HcsimError, match=r"communication vertex 'AR0:L': bytes must be a finite number >= 0"):
        data_parallel(["a", "b"], [Layer("L", 1, 1, grad_bytes=float("inf"))])
    w = data_parallel(["a", "b"], [Layer("L", 1, 2, 3, 4, 5)])
    assert w.nodes["b/BP0:L"] == {
        "type": "compute", "flops": 2, "location": "b", "precision": "fp32", "mem_bytes": 4, "footprint": 0.0,
        "is_start": False, "data": "b/L", "rank": 1, "layer": 0, "phase": "backward",
    }  # fmt: skip
    assert sorted(w.edges(data="skip_first_iteration")) == [
        ("AR0:L", "a/FP0:L", True), ("AR0:L", "b/FP0:L", True), ("a/BP0:L", "AR0:L", False),
        ("a/FP0:L", "a/BP0:L", False), ("b/BP0:L", "AR0:L", False), ("b/FP0:L", "b/BP0:L", False),
    ]  # fmt: skip


def test_data_parallel_graph_is_the_one_networkx_would_build():
    """data_parallel stores its dicts straight into the graph (Workload._add_built): the graph, its
    orders (which the engine's launch order follows) and a dict of its own per vertex and edge are
    what NetworkX's add_nodes_from / add_edges_from make of the same lists."""
    import networkx as nx

    layers = [Layer("L", 1, 2, 3, 4, 5), Layer("M", 1, 2, 3, 4), Layer("N", 1, 2, 3, 4, 6, block="L")]
    for ranks, group in ((["a", "b", "c"], None), (["a", "b"], 8), (["a"], None)):
        w = data_parallel(ranks, layers, group=group)
        same = nx.DiGraph()
        same.add_nodes_from((n, dict(d)) for n, d in w.nodes(data=True))
        same.add_edges_from((u, v, dict(d)) for u, v, d in w.edges(data=True))
        assert list(w.nodes(data=True)) == list(same.nodes(data=True))
        for mine, theirs in ((w.succ, same.succ), (w.pred, same.pred)):
            assert [(u, list(out.items())) for u, out in mine.items()] == [
                (u, list(out.items())) for u, out in theirs.items()
            ]
        dicts = [id(d) for _, d in w.nodes(data=True)] + [id(d) for *_, d in w.edges(data=True)]
        assert len(set(dicts)) == len(dicts)  # no vertex or edge shares its dict with another
        # per rank: 2L - 1 chain edges, then per layer BP -> FP, or BP -> AR -> FP where an allreduce is
        allreduces = 2 if len(ranks) > 1 else 0
        assert w.number_of_edges() == len(ranks) * (3 * len(layers) - 1 + allreduces)
        w.add_edge("a/FP0:L", "a/BP2:N")  # and NetworkX's caches see later changes as usual
        assert w.has_edge("a/FP0:L", "a/BP2:N") and "a/BP2:N" in w.succ["a/FP0:L"]


def test_validate_names_the_first_bad_vertex_among_identical_ones():
    """validate() checks a compute vertex once per distinct set of value objects: a vertex that differs
    only in one value (or in its location's type) is still checked, and named."""
    layers = [Layer("L", 1e9, 2e9, 3e9, 4e9, 5e9)]
    ranks = ["a", "b", "c", "d"]
    assert data_parallel(ranks, layers).validate() is not None
    for key, bad, message in (
        ("flops", -1.0, r"compute vertex 'c/BP0:L': flops must be a finite number >= 0, got -1.0"),
        ("mem_bytes", float("nan"), r"compute vertex 'c/BP0:L': mem_bytes must be a finite number >= 0"),
        ("is_start", 1, r"compute vertex 'c/BP0:L': is_start must be true or false, got 1"),
        ("precision", "int8", r"compute vertex 'c/BP0:L': precision 'int8' is unknown"),
        ("location", None, r"compute vertex 'c/BP0:L' has no location"),
    ):
        w = data_parallel(ranks, layers)
        w.nodes["c/BP0:L"][key] = bad
        w.nodes["d/BP0:L"][key] = bad
        with pytest.raises(HcsimError, match=message):
            w.validate()


def test_a_placement_naming_a_missing_memory_host_is_refused_naming_the_first_vertex(compiled):
    path = custom_pair(compiled)
    w = Workload()
    for i, name in enumerate("abcd"):
        w.add_compute(name, 1e9, "x0", mem_bytes=1e6, is_start=i == 0)
        if i:
            w.add_dependency("abcd"[i - 1], name)

    def policy(xpu, vertices, coherent):
        return {n: (None if n in "ab" else "m0" if n == "c" else "ghost") for n, _ in vertices}

    with pytest.raises(HcsimError, match=r"^vertex 'd' is placed in memory host 'ghost', which the platform does not"):
        simulate(path, w, placement=policy)
    ok = simulate(path, w, placement=lambda xpu, vs, c: {n: ("m0" if n == "c" else None) for n, _ in vs})
    assert ok.placement == {"a": None, "b": None, "c": "m0", "d": None}
