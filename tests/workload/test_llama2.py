"""LLaMA2-13B (paper Table 4): transcription checks and memory placement."""

import pytest

from hcsim.engine.memory import XpuInfo, fill_local_first
from hcsim.platform import device
from hcsim.workload.llama2 import DECODERS, SEQ, TABLE4, decoder_parameters, llama2_13b


def test_parameter_count_is_llama2_13b():
    assert decoder_parameters() == 317_204_480
    assert decoder_parameters() * DECODERS == pytest.approx(12.69e9, rel=1e-3)  # + embeddings = 13.0 G


def test_table_flops_match_six_parameters_tokens():
    table = sum(row[1] + row[4] for row in TABLE4) * 1e9 * DECODERS
    assert table == pytest.approx(6 * decoder_parameters() * DECODERS * SEQ, rel=0.03)


@pytest.mark.parametrize("gpu, local", [("H100", 9), ("A100", 9), ("V100", 3)])
def test_memory_footprint_decides_locality(gpu, local):
    w = llama2_13b(["x0", "x1"])
    d = device(gpu)
    xpu = XpuInfo("x0", d.fp32_flops, d.fp16_flops, d.fp32_flops, d.memory, d.memory_bandwidth, "dram", "t3")
    mine = [(n, a) for n, a in w.nodes(data=True) if a["type"] == "compute" and a["location"] == "x0"]
    placed = fill_local_first(xpu, mine, coherent=True)
    local_decoders = {a["data"] for n, a in mine if placed[n] is None}
    assert len(local_decoders) == local
    assert all(placed[n] == "t3" for n, a in mine if a["data"] not in local_decoders)


def test_graph_shape():
    w = llama2_13b(["x0", "x1", "x2"])
    compute = [n for n, a in w.nodes(data=True) if a["type"] == "compute"]
    comm = [n for n, a in w.nodes(data=True) if a["type"] == "comm"]
    assert len(compute) == 3 * DECODERS * len(TABLE4) * 2 and len(comm) == DECODERS
    assert {w.nodes[c]["bytes"] for c in comm} == {decoder_parameters() * 4}
    w.validate()
