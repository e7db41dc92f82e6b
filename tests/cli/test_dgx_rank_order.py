"""On the DGX systems ``hcsim run`` places an expert-parallel layout's ranks in Megatron-Core's order
(``tp-cp-ep-dp-pp``: pipeline stages outermost), so an EP group of 8 is one node on NVLink; dense layouts keep
``tp,pp,dp``; ``--mapping`` still chooses either."""

from __future__ import annotations

import json

from clitools import run_here

MOE = {  # a two-layer Mixtral-shaped model: small enough for a test, every block MoE
    "model_type": "mixtral", "hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1024, "num_local_experts": 8,
    "num_experts_per_tok": 2, "max_position_embeddings": 1024,
}  # fmt: skip


def _run(tmp_path, *mapping, layout="tp=1,pp=2,ep=8"):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(MOE))
    status, out, err = run_here(
        "run", "--system", "dgx-h100", "--xpus", "16", "--model", config, "--parallel", layout,
        "--micro-batch", "1", "--microbatches", "2", "--sequence", "1024", "--json", *mapping,
    )  # fmt: skip
    assert status == 0, err
    return json.loads(out)


def test_dgx_runs_default_to_megatron_cores_order(tmp_path):
    default = _run(tmp_path)
    megatron = _run(tmp_path, "--mapping", "tp,dp,pp")
    paper = _run(tmp_path, "--mapping", "tp,pp,dp")
    assert default["steady_iteration_s"] == megatron["steady_iteration_s"]
    # the EP all-to-alls stay on NVLink (450 GB/s) instead of crossing nodes on 50 GB/s rails
    assert default["exposed_ep_s"] < paper["exposed_ep_s"] / 2


def test_dense_layouts_keep_the_paper_order(tmp_path):
    layout = "tp=1,pp=2"
    default = _run(tmp_path, layout=layout)
    assert default["steady_iteration_s"] == _run(tmp_path, "--mapping", "tp,pp,dp", layout=layout)["steady_iteration_s"]
    assert default["steady_iteration_s"] != _run(tmp_path, "--mapping", "tp,dp,pp", layout=layout)["steady_iteration_s"]
