"""experiments/llm_serving_study.py writes its page from the run's rows, and re-renders it from its CSV.

The simulation is not run here (minutes); the rows are made up, so the test checks that
every number on the page comes from them, that the CSV round trip changes nothing, and
that the disaggregated section is a TODO without numbers.
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


def test_the_page_holds_the_rows_numbers_and_survives_the_csv(study, tmp_path):
    from hcsim.outputs import write_csv

    rows = _rows(study)
    page = tmp_path / "page.md"
    args = argparse.Namespace(quick=False, output_tokens=128, kv_hbm="2GiB", kv_bucket=4096, jobs=2, load=3.0,
                              page=str(page))  # fmt: skip
    study.page(rows, args, None, 80, 123.0)
    text = page.read_text()
    assert "| HBM only | 1.25 | 2.25 |" in text  # goodput at prompt 1024, 8/s and 16/s
    assert "| HBM+CXL 32GBps 200ns | 2.25 | 3.25 |" in text
    assert "| HBM only | 0.50 | 0.60 |" in text  # attainment
    assert "* HBM only: 0/s" in text  # attainment never reaches 90%
    assert "23 points" not in text and f"{len(rows)} points, 123 s wall" in text
    assert "most goodput with HBM+CXL 128GBps 200ns (3.25/s)" in text
    todo = text[text.index("## TODO: disaggregated") :]
    assert "No numbers are given here" in todo and "|" not in todo and "/s" not in todo
    csv_path = tmp_path / "rows.csv"
    write_csv(str(csv_path), rows, list(rows[0]))
    assert study.read_rows(str(csv_path)) == rows
