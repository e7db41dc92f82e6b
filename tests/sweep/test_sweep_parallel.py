"""The sweep layer's ``parallel_training`` point, exact and fast (folded to whole replicas).

The fast path keeps whole data-parallel replicas (EP groups with experts) and reads the
breakdown from the kept ones; here it is checked against the exact path on a 64-XPU
paper system: throughput within 1%, the breakdown of the first rank of each stage within
1% of the iteration, and the remote operators (counted over all XPUs, a folded run's
weighted by the replicas it stands for) equal, with fewer XPUs simulated. A fold that
cannot be proven is said in the result.
"""

from __future__ import annotations

import json

import pytest

from hcsim.sweep.experiments import parallel_training

SMALL = {"num_hidden_layers": 4, "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 8,
         "intermediate_size": 4096, "vocab_size": 32000, "max_position_embeddings": 512,
         "torch_dtype": "bfloat16"}  # fmt: skip
MOE = {**SMALL, "num_hidden_layers": 2, "intermediate_size": 2048, "num_local_experts": 4, "num_experts_per_tok": 2}
# 16 layers of hidden 8192: 8 layers a stage are ~8 B parameters, 128 GB of training state, more than an H100's 80 GB
LARGE = {**SMALL, "num_hidden_layers": 16, "hidden_size": 8192, "num_attention_heads": 64, "intermediate_size": 28672}

# name -> (system, config, layout, global batch)
CASES = {
    "cxl dense tp8 pp2": ("cxl", SMALL, "tp=8,pp=2", 16),
    "cxl moe tp2 ep4": ("cxl", MOE, "tp=2,ep=4", 32),
    "noncoherent large pp2, remote memory": ("noncoherent", LARGE, "pp=2", 32),
}
PARTS = ("compute_s", "exposed_tp_s", "exposed_pp_s", "exposed_ep_s", "exposed_dp_s", "idle_s", "memory_stall_s")


def _config(tmp_path, config: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize("case", list(CASES))
def test_fast_parallel_training_folds_and_equals_the_exact_point(tmp_path, case):
    system, config, layout, batch = CASES[case]
    model = _config(tmp_path, config)
    exact = parallel_training(system, 64, model, layout, global_batch=batch)
    fast = parallel_training(system, 64, model, layout, global_batch=batch, fast=True)
    assert (exact["folded"], exact["simulated_xpus"], exact["fold_refused"]) == (False, 64, None)
    assert fast["folded"] and fast["fold_refused"] is None
    assert fast["simulated_xpus"] < 64 and 64 % fast["simulated_xpus"] == 0
    assert fast["layout"] == exact["layout"] and fast["microbatches"] == exact["microbatches"]
    assert fast["activities"] < exact["activities"]
    for key in ("iteration_s", "tokens_per_s"):
        assert fast[key] == pytest.approx(exact[key], rel=0.01), key
    # the parts of the iteration, to 1% of the iteration (a part of a few us may move by a memoized step's rounding)
    for key in PARTS:
        assert fast[key] == pytest.approx(exact[key], abs=0.01 * exact["iteration_s"]), key
    assert fast["exposed_dp_s"] > 0  # the gradient rings standing for the full group are in the breakdown
    assert fast["remote_operators"] == exact["remote_operators"]
    if "remote memory" in case:
        assert exact["remote_operators"] > 0 and exact["memory_stall_s"] > 0


def test_a_refused_fold_is_reported_and_runs_every_xpu(tmp_path):
    model = _config(tmp_path, SMALL)
    fast = parallel_training("cxl", 64, model, "tp=8,pp=4", global_batch=8, fast=True)  # dp=2: 2 replicas
    assert not fast["folded"] and fast["simulated_xpus"] == 64
    assert "cannot be folded" in fast["fold_refused"] and "\n" not in fast["fold_refused"]
    exact = parallel_training("cxl", 64, model, "tp=8,pp=4", global_batch=8)
    assert fast["tokens_per_s"] == pytest.approx(exact["tokens_per_s"], rel=0.01)


def test_micro_batch_splits_the_same_global_batch_into_fewer_microbatches(tmp_path):
    model = _config(tmp_path, SMALL)
    one = parallel_training("cxl", 64, model, "tp=8,pp=2", global_batch=16, sequence=256)  # dp=4: 4 per replica
    two = parallel_training("cxl", 64, model, "tp=8,pp=2", global_batch=16, sequence=256, micro_batch=2)
    assert (one["microbatches"], one["micro_batch"]) == (4, 1) and (two["microbatches"], two["micro_batch"]) == (2, 2)
    for r in (one, two):  # the same tokens per iteration: 16 sequences of 256
        assert r["tokens_per_s"] * r["iteration_s"] == pytest.approx(16 * 256)
    with pytest.raises(ValueError, match="not a multiple of dp x micro_batch = 12"):
        parallel_training("cxl", 64, model, "tp=8,pp=2", global_batch=16, micro_batch=3)
