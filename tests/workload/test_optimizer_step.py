"""The optimizer step (hcsim.workload.parallel.optimizer, added by GradientSync under a calibration).

Closed forms: the HBM bytes per parameter of Megatron's step (grad norm + fused Adam +
master -> model copy), the multi-tensor launches, and each rank's vertex time over its
shard (1/(DP x CP) of its stage's parameters with the distributed optimizer; experts
over their expert-data-parallel group). Its place in the graph: after the rank's chain
and its gradient collectives, before its next iteration and every parameter all-gather it
takes part in. Without a calibration the graph has no such vertex and is otherwise the
calibrated graph's, vertex for vertex and edge for edge.
"""

from __future__ import annotations

import json
import math

import pytest

from hcsim.calibration import load_calibration
from hcsim.workload.models.precision import training_precision
from hcsim.workload.models.spec import load_model
from hcsim.workload.parallel.builder import training_graph
from hcsim.workload.parallel.optimizer import (
    CHUNK,
    CHUNKS_PER_LAUNCH,
    optimizer_bytes_per_param,
    optimizer_launches,
    optimizer_seconds,
)

H100 = load_calibration("dgx-h100")
SMALL = {"num_hidden_layers": 4, "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 8,
         "intermediate_size": 4096, "vocab_size": 32000, "max_position_embeddings": 512,
         "torch_dtype": "bfloat16"}  # fmt: skip
MOE = {**SMALL, "num_hidden_layers": 2, "intermediate_size": 2048, "num_local_experts": 4, "num_experts_per_tok": 2}


@pytest.fixture
def spec(tmp_path):
    def load(config: dict):
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
        return load_model(str(path))

    return load


def _steps(g) -> dict[str, dict]:
    return {n: d for n, d in g.nodes(data=True) if n.endswith("/optimizer")}


@pytest.mark.parametrize(
    "name, options, expected",
    [
        # norm G + Adam (G + S read, S written) + copy (4 read, P written)
        ("bf16", {}, 4 + (4 + 12) + 12 + (4 + 2)),
        ("fp8", {}, 4 + (4 + 12) + 12 + (4 + 2)),
        ("fp8", {"fp8_param_gather": True}, 4 + (4 + 12) + 12 + (4 + 1)),
        # 16-bit main grads: the distributed optimizer's state holds the fp32 grad shard too (16 B: 4 + 16/d)
        ("bf16", {"grad_reduce_in_fp32": False}, 2 + (2 + 16) + 16 + (4 + 2)),
        ("fp16", {}, 2 + (2 + 12) + 12 + (4 + 2)),
        ("fp32", {}, 4 + (4 + 8 + 4) + (8 + 4)),  # the weight is the master: updated in place
    ],
)
def test_bytes_per_parameter(name, options, expected):
    assert optimizer_bytes_per_param(training_precision(name, **options)) == expected


def test_launches_are_three_passes_of_320_chunks_each():
    per = CHUNK * CHUNKS_PER_LAUNCH
    assert (CHUNK, CHUNKS_PER_LAUNCH) == (65536, 320)
    assert [optimizer_launches(n) for n in (0, 1, per, per + 1, 5 * per)] == [0, 3, 3, 6, 15]
    n = 1e9
    want = n * 38 / H100.hbm_achieved + 3 * math.ceil(n / per) * H100.launch
    assert optimizer_seconds(n, training_precision("bf16"), H100) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("zero, cp", [(1, 1), (1, 2), (0, 1)])
def test_each_rank_steps_its_shard_of_its_stage(spec, zero, cp):
    s = spec(SMALL)
    dp, pp = 4, 2
    xpus = [f"x{i}" for i in range(dp * pp * cp)]
    g = training_graph(s, f"dp={dp},pp={pp},cp={cp}", xpus, calibration=H100, precision="bf16", zero=zero,
                       microbatches=4, sequence=512)  # fmt: skip
    steps = _steps(g)
    assert sorted(d["location"] for d in steps.values()) == sorted(xpus)  # one per rank
    half = s.layers // pp * s.block_parameters()
    stage = {0: s.embedding_parameters() + half, 1: half + s.head_parameters()}
    shards = dp * cp if zero else 1
    policy = training_precision("bf16")
    for name, d in steps.items():
        p = 0 if any(n.startswith(f"{d['location']}/F0.emb") for n in g.successors(name)) else 1
        params = stage[p] / shards
        assert d["mem_bytes"] == pytest.approx(params * 38, rel=1e-12)
        assert d["seconds"] == pytest.approx(optimizer_seconds(params, policy, H100), rel=1e-12)
        assert d["type"] == "compute" and d["footprint"] == 0.0


def test_experts_are_sharded_over_their_expert_data_parallel_group(spec):
    s = spec(MOE)
    xpus = [f"x{i}" for i in range(4)]
    g = training_graph(s, "dp=4,ep=2", xpus, calibration=H100, precision="bf16", zero=1, microbatches=2,
                       sequence=512)  # fmt: skip
    common = 2 * s.norm_parameters() + s.attention_parameters() + s.router_parameters()
    dense = s.embedding_parameters() + s.head_parameters() + s.layers * common
    experts_per_rank = s.layers * (s.experts // 2) * s.expert_parameters()
    params = dense / 4 + experts_per_rank / (4 // 2)
    for d in _steps(g).values():
        assert d["mem_bytes"] == pytest.approx(params * 38, rel=1e-12)


@pytest.mark.parametrize(
    "options",
    [
        {"zero": 0},
        {"zero": 1},
        {"zero": 1, "overlap_param_gather": True},
        {"zero": 3},
        {"zero": 3, "zero3_every_microbatch": True},
    ],
)
def test_the_step_sits_between_the_gradient_sync_and_the_next_iteration(spec, options):
    s = spec(SMALL)
    xpus = [f"x{i}" for i in range(8)]
    g = training_graph(s, "dp=4,pp=2", xpus, calibration=H100, precision="bf16", microbatches=4, **options)
    steps = _steps(g)
    assert len(steps) == 8
    gathers = {n for n, d in g.nodes(data=True) if d.get("phase") == "dp" and d.get("kind") == "allgather"}
    waited = set()
    for name, d in steps.items():
        x = d["location"]
        preds = {u: e["skip_first_iteration"] for u, e in g.pred[name].items()}
        succs = {v: e["skip_first_iteration"] for v, e in g.succ[name].items()}
        assert not any(preds.values()) and all(succs.values())  # this iteration's work, then the next one's
        grads = [u for u in preds if g.nodes[u]["type"] == "comm"]
        assert len(grads) == 1 and g.nodes[grads[0]]["phase"] == "dp" and x in g.nodes[grads[0]]["scope"]
        assert any(g.nodes[u]["type"] == "compute" and g.nodes[u]["location"] == x for u in preds)  # its chain's end
        assert any(g.nodes[v].get("location") == x for v in succs)  # its next iteration's first vertex
        waited |= {v for v in succs if v in gathers}
        assert all(x in g.nodes[v]["scope"] for v in succs if v in gathers)
    if options.get("zero3_every_microbatch"):  # each unit's first all-gather of an iteration (the rest follow it)
        first = {v for v in gathers if any(e["skip_first_iteration"] for e in g.pred[v].values())}
        assert waited == first and len(first) == 2 * 3  # 3 units a stage (emb or head, 2 blocks), 2 stages
    elif options["zero"] == 3 or options.get("overlap_param_gather"):  # every all-gather: it moves updated weights
        assert waited == gathers
    else:  # the all-gathers follow the reduce-scatters in the gradient stream, before the step
        assert not waited


@pytest.mark.parametrize("options", [{"zero": 1}, {"zero": 3, "zero3_every_microbatch": True}])
def test_without_a_calibration_the_graph_is_the_calibrated_one_without_the_steps(spec, options):
    s = spec(SMALL)
    xpus = [f"x{i}" for i in range(8)]
    ideal = training_graph(s, "dp=4,pp=2", xpus, precision="bf16", microbatches=4, **options)
    calibrated = training_graph(s, "dp=4,pp=2", xpus, precision="bf16", microbatches=4, calibration=H100, **options)
    assert not _steps(ideal)
    steps = set(_steps(calibrated))
    assert list(ideal.nodes) == [n for n in calibrated.nodes if n not in steps]
    kept = [(u, v, e) for u, v, e in calibrated.edges(data=True) if u not in steps and v not in steps]
    assert list(ideal.edges(data=True)) == kept
    for n, d in ideal.nodes(data=True):
        extra = {"ops", "seconds"}  # what a calibration adds to every compute vertex
        assert d == {k: v for k, v in calibrated.nodes[n].items() if k not in extra}, n
