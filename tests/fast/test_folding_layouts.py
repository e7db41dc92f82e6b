"""The layout fold: whole data-parallel replicas (or EP groups) kept, gradient rings standing for the full group.

Checked against things computed without the fold:

* the graph of the kept replicas (``training_graph(..., group=N)``) has, rank for rank,
  the full graph's compute vertices (same FLOPs, bytes, footprints: ZeRO shards are the
  full layout's), and its gradient collectives stand for the full group;
* the whole run: one training iteration folded, and fast (fold + memoize + repeat),
  against the exact engine on the full system within 1%, on the paper systems (both
  memory semantics, mixed XPU types, the sweeps' extremes 16 GB/s and 100 us), a fat
  tree, a leaf-spine and a user's heterogeneous servers, with TP, PP, EP, ZeRO-1/3 and
  sequence parallelism;
* the refusals: a data-parallel algorithm that is not a ring, and a topology where no
  unit repeats, are refused in one line and the run simulates every XPU.
"""

from __future__ import annotations

import warnings

import pytest
from test_folding_general import hetero_servers

from hcsim.engine.memory import all_local
from hcsim.errors import HcsimError
from hcsim.fast import simulate_system
from hcsim.fast.symmetry import fold_units
from hcsim.fast.system import FoldRefused
from hcsim.fast.units import layout_units, units_of
from hcsim.platform import cxl_system, noncoherent_system
from hcsim.platform.builders import fat_tree, leaf_spine
from hcsim.workload.models import TransformerSpec
from hcsim.workload.parallel import Layout, training_graph
from hcsim.workload.parallel.factory import TrainingWorkload

DENSE = TransformerSpec("tiny", layers=4, hidden=1024, heads=8, kv_heads=8, intermediate=4096, vocab=32000,
                        sequence=512)  # fmt: skip
MOE = TransformerSpec("tiny-moe", layers=2, hidden=1024, heads=8, kv_heads=8, intermediate=4096, vocab=32000,
                      sequence=512, experts=4, top_k=2, expert_intermediate=2048)  # fmt: skip

# name -> (topology builder, spec, layout, training options, engine options)
CASES = {
    "cxl tp8 pp2": (lambda: cxl_system(128, servers_per_rack=2), DENSE, "tp=8,pp=2", {"microbatches": 4}, {}),
    "noncoherent tp4 pp2 zero1": (
        lambda: noncoherent_system(128, servers_per_rack=2),
        DENSE,
        "tp=4,pp=2",
        {"microbatches": 4, "zero": 1},
        {},
    ),
    "cxl 16GB/s tp8": (lambda: cxl_system(64, servers_per_rack=2, cxl_bandwidth="16GBps"), DENSE, "tp=8", {}, {}),
    "cxl 100us tp2 pp2": (
        lambda: cxl_system(64, servers_per_rack=2, cxl_latency="100us"),
        DENSE,
        "tp=2,pp=2",
        {"microbatches": 4},
        {},
    ),
    "noncoherent 16GB/s zero3": (
        lambda: noncoherent_system(64, servers_per_rack=2, cxl_bandwidth="16GBps"),
        DENSE,
        "tp=2,pp=2",
        {"zero": 3, "microbatches": 2},
        {},
    ),
    "cxl H100+A100 tp8 pp2": (
        lambda: cxl_system(128, servers_per_rack=2, mix="H100+A100"),
        DENSE,
        "tp=8,pp=2",
        {"microbatches": 4},
        {},
    ),
    "cxl moe ep4 tp2 sp": (
        lambda: cxl_system(64, servers_per_rack=2),
        MOE,
        "tp=2,ep=4",
        {"sequence_parallel": True},
        {},
    ),
    "noncoherent moe ep8": (lambda: noncoherent_system(64, servers_per_rack=2), MOE, "ep=4", {}, {}),
    "fat tree tp2 pp2": (lambda: fat_tree(4), DENSE, "tp=2,pp=2", {"microbatches": 4}, {"placement": all_local}),
    "leaf-spine tp2": (lambda: leaf_spine(4, 2, 4), DENSE, "tp=2", {}, {"placement": all_local}),
    "heterogeneous servers tp2": (lambda: hetero_servers(3), DENSE, "tp=2", {}, {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_folded_and_fast_layouts_agree_with_the_exact_engine(case):
    build, spec, layout, options, engine = CASES[case]
    work = TrainingWorkload(spec, layout, **options)
    exact = simulate_system(build(), work, record_flows=False, **engine)
    for mode in ("fold", "fast"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", FoldRefused)  # every case here must fold
            run = simulate_system(build(), work, fast=mode == "fast", fold=True, record_flows=False, **engine)
        assert run.fold is not None and len(run.fold.ranks) < len(build().xpus()), (case, mode)
        assert sum(run.fold.weights.values()) == len(build().xpus())
        error = run.makespan / exact.makespan - 1
        # measured: the fold 0 in every case, fold + memoize + repeat 3.5e-4 at most (noncoherent 16GB/s zero3)
        assert abs(error) < (1e-12 if mode == "fold" else 1e-3), (case, mode, error)


def test_the_kept_replicas_graph_is_the_full_graph_rank_for_rank():
    topo = cxl_system(128, servers_per_rack=2)
    xpus = topo.xpus()
    full = training_graph(DENSE, "tp=4,pp=2", xpus, zero=1, microbatches=4)
    kept = xpus[:8] + xpus[-8:]  # replicas 0 and 15 of dp=16
    folded = training_graph(DENSE, "tp=4,pp=2", kept, zero=1, microbatches=4, group=128)
    assert folded.graph["layout"] == full.graph["layout"] == "dp=16,tp=4,pp=2"
    assert folded.graph["samples_per_iteration"] == full.graph["samples_per_iteration"]
    computes = [n for n, d in folded.nodes(data=True) if d["type"] == "compute"]
    assert computes and all(n.split("/")[0] in kept for n in computes)
    for n in computes:
        a, b = folded.nodes[n], full.nodes[n]
        assert (a["flops"], a["mem_bytes"], a["footprint"]) == (b["flops"], b["mem_bytes"], b["footprint"])
    dp = [d for _, d in folded.nodes(data=True) if d.get("phase") == "dp"]
    assert dp and all(d["group"] == 16 and len(d["scope"]) == 2 for d in dp)
    assert not any("group" in d for _, d in full.nodes(data=True))


def test_moe_units_are_whole_expert_groups_and_expert_gradients_ring_over_them():
    ring = layout_units(Layout.parse("tp=2,ep=4", 64), cxl_system(64, servers_per_rack=2), experts=True)
    assert len(ring.units) == 8 and len(ring.units[0]) == 8  # dp=32: 8 EP groups of 4 replicas x 2 TP slices
    labels = {label for label, _, _ in ring.cross}
    assert labels == {"dp", "edp"}
    assert {label for label, _, _ in ring.inner} == {"tp", "ep", "dp"}
    # the expert rings go from a replica to the one holding the same experts in the next group
    assert all(i == j for label, i, j in ring.cross if label == "edp")


def test_a_non_ring_data_parallel_algorithm_is_refused_and_runs_every_xpu():
    build = lambda: cxl_system(64, servers_per_rack=2)  # noqa: E731
    work = TrainingWorkload(DENSE, "tp=8", dp_algorithm="halving_doubling")
    with pytest.raises(HcsimError, match="not a ring") as e:
        units_of(work, build())
    assert "\n" not in str(e.value)
    with pytest.warns(FoldRefused, match="cannot be folded: .*not a ring.*; running every XPU"):
        run = simulate_system(build(), work, fold=True, record_flows=False)
    assert run.fold is None and "not a ring" in run.fold_refused
    exact = simulate_system(build(), work, record_flows=False)
    assert run.makespan == exact.makespan


def test_a_topology_where_no_unit_repeats_is_refused_in_one_line():
    topo = cxl_system(64, servers_per_rack=2)
    for i, (u, v) in enumerate(e for e in topo.edges if "xpu" in e[0] or "xpu" in e[1]):
        topo.edges[u, v]["bandwidth"] = float(100e9 + i * 1e9)  # every XPU link different
    ring = units_of(TrainingWorkload(DENSE, "tp=8"), topo)
    with pytest.raises(HcsimError, match="cannot be folded: no unit class repeats") as e:
        fold_units(topo, ring, True)
    assert "\n" not in str(e.value)


def test_a_folded_run_of_part_of_a_unit_is_refused():
    with pytest.raises(HcsimError, match="whole units of tp x pp x ep = 8 XPUs"):
        training_graph(DENSE, "tp=4,pp=2", [f"x{i}" for i in range(12)], group=64)


@pytest.mark.slow
def test_cxl_256_tp8_keeps_four_servers_and_equals_the_exact_engine():
    work = TrainingWorkload(DENSE, "tp=8")
    exact = simulate_system(cxl_system(256), work, record_flows=False)
    run = simulate_system(cxl_system(256), work, fold=True, record_flows=False)
    assert len(run.fold.ranks) == 32  # first and last server of each of the two racks
    assert abs(run.makespan / exact.makespan - 1) < 1e-12  # measured 0 (docs/fast-paths.md, the contract)


@pytest.mark.slow
def test_run_model_fast_folds_and_agrees_with_the_exact_run(tmp_path):
    import json

    from clitools import run as cli

    config = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8, "intermediate_size": 4096,
              "vocab_size": 32000, "max_position_embeddings": 512}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    common = ("run", "--system", "cxl", "--xpus", 256, "--model", path, "--parallel", "tp=8", "--json")
    exact, fast = cli(*common), cli(*common, "--fast")
    assert exact.returncode == 0 and fast.returncode == 0, fast.stderr
    assert "cannot be folded" not in fast.stderr
    a, b = json.loads(exact.stdout)["makespan_s"], json.loads(fast.stdout)["makespan_s"]
    assert abs(b / a - 1) < 0.01
