"""experiments/llm_serving_study.py writes its page from the run's rows, and re-renders it from its CSV.

The simulation is not run here (minutes); the rows are made up, so the test checks that
every number on the page comes from them (the disaggregated part's too) and that the CSV
round trip changes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys

import pytest

EXPERIMENTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "experiments")


@pytest.fixture
def study(monkeypatch):
    monkeypatch.syspath_prepend(EXPERIMENTS)
    sys.modules.pop("llm_serving_study", None)
    import llm_serving_study

    return llm_serving_study


def _rows(study):
    rows = []
    for cfg in study.configs(quick=False):
        for k, rate in enumerate(study.RATES[cfg["prompt"]]):
            remote = cfg["tiers"] != "hbm"
            rows.append({
                "prompt_tokens": cfg["prompt"], "kv_cache": cfg["tiers"],
                "cxl_bandwidth": cfg["cxl"][0] if cfg["tiers"] == "hbm,cxl" else "",
                "cxl_latency": cfg["cxl"][1] if cfg["tiers"] == "hbm,cxl" else "",
                "rate_per_s": rate, "slo_attainment": 0.5 + 0.1 * k, "goodput_requests_per_s": 1.25 + k + remote,
                "goodput_tokens_per_s": 100.0, "throughput_tokens_per_s": 200.0, "ttft_p50_s": 0.125,
                "ttft_p99_s": 0.5, "tpot_p50_s": 0.0075 * (1 + remote), "tpot_p99_s": 0.02, "preemptions": 3 - k,
                "kv_remote_peak_blocks": 77 if remote else 0, "kv_hbm_occupancy_mean": 0.5, "iterations": 10,
                "simulations": 5, "bucket_bound_s": 1e-6, "seconds": 1.0,
            })  # fmt: skip
    return rows


def _drows(study):
    rows = []
    for j, cfg in enumerate(study.DISAGG):
        for k, rate in enumerate(study.DISAGG_RATES):
            rows.append({
                "config": cfg["name"], "xpus": "H100+A100", "requests": 300, "disaggregated": int(cfg["split"]),
                "kv_cache": cfg["tiers"], "decode_kv_hbm": cfg.get("kv_hbm", ""), "rate_per_s": rate,
                "slo_attainment": 0.25 * k, "goodput_requests_per_s": 10.0 * j + k, "throughput_tokens_per_s": 1.0,
                "ttft_p50_s": 0.001 * (j + 1), "ttft_p99_s": 0.002 * (j + 1), "tpot_p50_s": 0.0005 * (k + 1),
                "tpot_p99_s": 0.0007 * (k + 1), "kv_transfer_mean_s": 0.0021 * cfg["split"], "preemptions": 0,
                "kv_remote_peak_blocks": 5 * j, "iterations": 10, "simulations": 3, "bucket_bound_s": 8e-6,
                "seconds": 1.0,
            })  # fmt: skip
    return rows


def test_the_page_holds_the_rows_numbers_and_survives_the_csv(study, tmp_path):
    from hcsim.outputs import write_csv

    rows = _rows(study)
    page = tmp_path / "page.md"
    args = argparse.Namespace(quick=False, output_tokens=128, kv_hbm="2GiB", kv_bucket=4096, jobs=2, load=3.0,
                              page=str(page))  # fmt: skip
    drows = _drows(study)
    study.page(rows, args, None, 80, 123.0, drows)
    text = page.read_text()
    assert "| HBM only | 1.25 | 2.25 |" in text  # goodput at prompt 1024, 8/s and 16/s
    assert "| HBM+CXL 32GBps 200ns | 2.25 | 3.25 |" in text
    assert "| HBM only | 0.50 | 0.60 |" in text  # attainment
    assert "* HBM only: 0/s" in text  # attainment never reaches 90%
    assert f"{len(rows) + len(drows)} points, 123 s wall" in text
    assert "most goodput with HBM+CXL 128GBps 200ns (3.25/s)" in text
    part = text[text.index("## Disaggregated prefill/decode") :]
    assert "TODO" not in text and "300 Poisson requests" in part
    assert "| H100 prefill -> A100 decode | 30 | 31 | 32 |" in part  # goodput, config 3 at the three rates
    assert "| colocated 2x H100 | 1 | 1 | 1 |" in part  # TTFT p50 in ms
    assert "| H100 -> A100, 512MiB HBM + host | 7 | 14 | 21 |" not in part  # p50 TTFT is 7 ms, at every rate
    assert "| H100 -> A100, 512MiB HBM + host | 7 | 7 | 7 |" in part
    assert "| H100 -> A100, 512MiB HBM + CXL | 25 | 25 | 25 |" in part  # peak blocks in the second tier
    assert "* 200/s: most goodput with H100 -> A100, 512MiB HBM + host (62/s)" in part
    for mine in (rows, drows):
        csv_path = tmp_path / "rows.csv"
        write_csv(str(csv_path), mine, list(mine[0]))
        assert study.read_rows(str(csv_path)) == mine
