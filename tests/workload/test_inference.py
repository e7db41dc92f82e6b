"""Inference steps (hcsim.workload.models.inference) on SimGrid, held to closed forms.

* a step on one XPU lasts the sum over operators of max(F / R, M / W), the engine's
  roofline (hcsim/engine/execution.py), and decode's bytes are the weights plus the KV cache;
* tensor parallelism adds, per block, two allreduces of b x s x h x bytes (prefill) whose
  time on a ring is 2(N-1)(L + S/(N B));
* the serving table tau[b] is prefill + output_tokens x decode at the mean KV length, and
  ``hcsim run --model`` / ``hcsim serve --model`` print what the Python API computes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.frontends.serving.batch_times import batch_times
from hcsim.platform import compile_platform
from hcsim.platform.builders import ring, star
from hcsim.platform.devices import device
from hcsim.workload.graph import Workload
from hcsim.workload.models import load_model
from hcsim.workload.models.inference import inference_step, tp_allreduce_bytes
from hcsim.workload.models.spec import TransformerSpec

ROOT = Path(__file__).resolve().parents[2]
H100 = device("H100")
SMALL = TransformerSpec("small", 4, 1024, 16, 4, 2816, 32000, 2048)  # GQA, SwiGLU, fp16


@pytest.fixture(scope="module")
def one_xpu(tmp_path_factory):
    path = tmp_path_factory.mktemp("one") / "p.xml"
    compile_platform(star(1, "H100"), str(path))
    return str(path), "xpu0"


@pytest.fixture(scope="module")
def ring4(tmp_path_factory):
    path = tmp_path_factory.mktemp("ring4") / "p.xml"
    topo = ring(4, "H100", bandwidth=100e9, latency=1e-6)
    compile_platform(topo, str(path))
    return str(path), topo.xpus()


def _roofline(w: Workload) -> float:
    """Sum over compute vertices of max(flops / rate, bytes / bandwidth): a one-rank chain's length."""
    return sum(
        max(d["flops"] / H100.flops(d["precision"]), d["mem_bytes"] / H100.memory_bandwidth)
        for _, d in w.nodes(data=True)
        if d["type"] == "compute"
    )


def test_a_decode_step_on_one_xpu_is_its_roofline_sum_and_memory_bound(one_xpu):
    platform, x = one_xpu
    spec = load_model("llama2-7b")
    w = inference_step(spec, [x], batch=4, context=2048, phase="decode")
    t = simulate(platform, w, 1, record_flows=False, progress=False).makespan
    assert t == pytest.approx(_roofline(w), rel=1e-9)
    nbytes = sum(d["mem_bytes"] for _, d in w.nodes(data=True) if d["type"] == "compute")
    # every weight but the embedding table (a step looks up b of its rows), and the KV cache
    weights = (spec.parameters() - spec.embedding_parameters()) * spec.bytes_per_value
    assert nbytes == pytest.approx(weights + spec.kv_cache_bytes(4, 2048), rel=0.01)  # + activations: < 1%
    assert nbytes > weights + spec.kv_cache_bytes(4, 2048)
    assert t == pytest.approx(nbytes / H100.memory_bandwidth, rel=1e-3)  # every operator is memory-bound


def test_a_prefill_step_on_one_xpu_is_compute_bound(one_xpu):
    platform, x = one_xpu
    spec = load_model("llama2-7b")
    w = inference_step(spec, [x], batch=1, context=2048, phase="prefill")
    t = simulate(platform, w, 1, record_flows=False, progress=False).makespan
    assert t == pytest.approx(_roofline(w), rel=1e-9)
    gemms = [d for n, d in w.nodes(data=True) if re.search(r"\.(attn\.(qkv|core|out)|mlp\.(up|down))$", n)]
    assert len(gemms) == 5 * spec.layers
    assert all(d["flops"] / H100.fp16_flops > d["mem_bytes"] / H100.memory_bandwidth for d in gemms)
    flops = sum(d["flops"] for _, d in w.nodes(data=True) if d["type"] == "compute")
    assert 0.85 < flops / H100.fp16_flops / t < 1  # the memory-bound norms, adds and activations: ~9%


def test_prefill_tp_allreduce_bytes_per_block_are_2bsh_bytes():
    spec = load_model("llama2-13b")
    b, s, tp = 2, 512, 8
    w = inference_step(spec, [f"x{i}" for i in range(tp)], batch=b, context=s, phase="prefill")
    per_block = {}
    for n, d in w.nodes(data=True):
        if d["type"] == "comm" and d["kind"] == "allreduce" and n.startswith("l"):
            per_block[n.split(".")[0]] = per_block.get(n.split(".")[0], 0) + d["bytes"]
            assert d["scope"] == [f"x{i}" for i in range(tp)]
    assert len(per_block) == spec.layers
    assert set(per_block.values()) == {2 * b * s * spec.hidden * spec.bytes_per_value}
    assert tp_allreduce_bytes(spec, b * s) == b * s * spec.hidden * 2


def _alone(platform: str, ranks: list[str], nbytes: float, kind: str) -> float:
    w = Workload()
    w.add_comm("c", nbytes, kind, ranks, is_start=True)
    return simulate(platform, w, 1, record_flows=False, progress=False).makespan


def test_a_tp4_decode_step_on_a_ring_is_compute_plus_ring_allreduces(ring4):
    """Every rank runs the same chain; each allreduce of S bytes takes 2(N-1)(L + S/(N B)) on the ring."""
    platform, xpus = ring4
    spec = SMALL
    w = inference_step(spec, xpus, batch=8, context=1024, phase="decode", tp=4)
    t = simulate(platform, w, 1, record_flows=False, progress=False).makespan
    rank0 = w.subgraph([n for n, d in w.nodes(data=True) if d.get("location") == xpus[0]])
    s = tp_allreduce_bytes(spec, 8)
    n, lat, bw = 4, 1e-6, 100e9
    allreduces = (2 * spec.layers + 1) * 2 * (n - 1) * (lat + s / (n * bw))
    logits = w.nodes["logits.allgather"]["bytes"]
    assert logits == 8 * spec.vocab // 4 * 2
    expected = _roofline(rank0) + allreduces + _alone(platform, xpus, logits, "allgather")
    assert t == pytest.approx(expected, rel=1e-9)


def test_a_mixtral_decode_step_reads_the_experts_its_tokens_touch():
    spec = load_model("mixtral-8x7b")
    ranks = [f"x{i}" for i in range(8)]
    w = inference_step(spec, ranks, batch=1, context=512, phase="decode", tp=8).validate(set(ranks))
    experts = w.nodes["x0.l0.moe.experts"]
    per_rank_expert = spec.expert_parameters() // 8 * spec.bytes_per_value
    assert experts["mem_bytes"] == pytest.approx(2 * per_rank_expert, rel=0.01)  # top-2 of 8: two experts' weights
    assert "x0.l0.moe.router" in w and "x0.l0.mlp.up" not in w


def test_tied_embeddings_are_resident_once():
    spec = load_model("gpt3-175b")
    w = inference_step(spec, ["a", "b"], batch=1, context=16, tp=2)
    assert w.nodes["a.head.lm"]["footprint"] == 0
    assert w.nodes["a.embedding"]["footprint"] == (25129 * 12288 + 2048 * 12288) * 2


def test_tp_splits_xpus_into_replicas():
    spec = SMALL
    w = inference_step(spec, ["a", "b", "c", "d"], batch=3, context=64, tp=2)
    comms = [d for _, d in w.nodes(data=True) if d["type"] == "comm"]
    assert {tuple(d["scope"]) for d in comms} == {("a", "b"), ("c", "d")}
    assert w.graph["samples_per_iteration"] == 6


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tp": 3}, "--tp 3 does not divide the 4 XPUs"),
        ({"tp": 4, "spec": load_model("llama2-13b"), "ranks": 16}, "tp 16 does not divide the 40 attention heads"),
        ({"batch": 0}, "--batch 0 is invalid"),
        ({"context": -1}, "--context -1 is invalid"),
        ({"phase": "train"}, "inference phase 'train' is unknown"),
    ],
)
def test_impossible_inference_layouts_are_one_line_errors(kwargs, match):
    spec = kwargs.pop("spec", SMALL)
    n = kwargs.pop("ranks", 4)
    if n == 16:
        kwargs["tp"] = 16
    args = {"batch": 1, "context": 16, **kwargs}
    with pytest.raises(HcsimError, match=match):
        inference_step(spec, [f"x{i}" for i in range(n)], **args)


def test_serving_batch_times_are_prefill_plus_decodes_at_the_mean_kv_length(one_xpu):
    platform, x = one_xpu
    spec = SMALL
    table = batch_times(spec, platform, [x], max_batch=3, context=256, output_tokens=16)
    for b, tau in table.items():
        prefill = _roofline(inference_step(spec, [x], batch=b, context=256, phase="prefill"))
        decode = _roofline(inference_step(spec, [x], batch=b, context=256 + 8, phase="decode"))
        assert tau == pytest.approx(prefill + 16 * decode, rel=1e-9)
    assert table[1] < table[2] < table[3] < 3 * table[1]  # batching amortizes the weight reads


# ------------------------------------------------------------------ the command line
def _hcsim(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-c", "import sys; from hcsim.cli import main; sys.exit(main())", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def _small_config(tmp_path: Path) -> str:
    config = {
        "hidden_size": SMALL.hidden,
        "num_hidden_layers": SMALL.layers,
        "num_attention_heads": SMALL.heads,
        "num_key_value_heads": SMALL.kv_heads,
        "intermediate_size": SMALL.intermediate,
        "vocab_size": SMALL.vocab,
        "max_position_embeddings": SMALL.sequence,
        "hidden_act": "silu",
        "torch_dtype": "bfloat16",
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_run_model_inference_prints_the_engines_step_time(tmp_path, ring4):
    platform, xpus = ring4
    config = _small_config(tmp_path)
    out = _hcsim(
        "run", "--model", config, "--inference", "--batch", "8", "--context", "1024", "--platform", platform,
        "--json", cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    w = inference_step(load_model(config), xpus, batch=8, context=1024, phase="decode", tp=4)
    expected = simulate(platform, w, 1, record_flows=False, progress=False).makespan
    assert json.loads(out.stdout)["makespan_s"] == pytest.approx(expected, rel=1e-12)


def test_serve_model_serves_requests_with_the_engines_table(tmp_path):
    config = _small_config(tmp_path)
    out = _hcsim(
        "serve", "--model", config, "--system", "ring", "--xpus", "2", "--tp", "2", "--context", "128",
        "--max-batch", "2", "--output-tokens", "4", "--rho", "0.5", "--jobs", "2000", cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    printed = {int(b): float(ms) / 1e3 for b, ms in re.findall(r"^tau\[(\d+)\]\s+(\S+) ms", out.stdout, re.M)}
    path = tmp_path / "ring2.xml"
    topo = ring(2, "H100")
    compile_platform(topo, str(path))
    table = batch_times(load_model(config), str(path), topo.xpus(), max_batch=2, context=128, output_tokens=4)
    assert printed.keys() == {1, 2}
    for b in (1, 2):
        assert printed[b] == pytest.approx(table[b], rel=1e-5)  # printed with 6 significant digits
    assert re.search(r"^simulated E\[W\]\s+[\d.]+ ms", out.stdout, re.M)
    assert "exact E[W]" not in out.stdout  # no closed form for an engine-computed table
