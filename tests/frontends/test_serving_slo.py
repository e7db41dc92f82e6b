"""SLOs, goodput, the KV/traffic series and the Chrome trace of continuous batching.

Goodput is checked on requests whose TTFT and TPOT are written by hand, and for
monotonicity (a tighter SLO never admits more); the series against the run's own totals
(the bins add up to the tokens, KV bytes and busy time of every iteration, the KV bytes
from the iteration shapes as docs/serving.md states them) and the Chrome trace against
the log. The CLI runs a tiny model: a sweep's points equal standalone runs, and bad SLO,
trace and rate flags are one line, exit 2, nothing written.
"""

import json
import math

import numpy as np
import pytest
from clitools import assert_refused, run_here
from hypothesis import given, settings
from hypothesis import strategies as st

from hcsim.errors import HcsimError
from hcsim.frontends.serving import continuous as fc
from hcsim.frontends.serving.iteration import IterationTimer, kv_bytes_per_token
from hcsim.frontends.serving.slo import SLO, max_goodput_rate, parse_slo, slo_met, slo_summary
from hcsim.frontends.serving.timeline import chrome_trace, iteration_arrays, series
from hcsim.platform import compile_platform, star
from hcsim.workload.models.spec import TransformerSpec

TINY = TransformerSpec("tiny", 2, 256, 4, 2, 512, 1000, 1024)


def _result(arrival, first, finish, output):
    reqs = [fc.Request(a, 8, o) for a, o in zip(arrival, output, strict=True)]
    n = len(reqs)
    return fc.ContinuousResult(reqs, np.zeros(n, int), np.array(first, float), np.array(finish, float),
                               np.zeros(n, int), 0, 0, {"hbm": 1}, {"hbm": 0.0}, {"hbm": 0}, 0.0)  # fmt: skip


def test_slo_flags_parse_and_refuse():
    assert parse_slo("ttft=0.5s,tpot=50ms") == SLO(0.5, 0.05, 0.9)
    assert parse_slo("tpot=20ms", 0.99) == SLO(math.inf, 0.02, 0.99)
    assert parse_slo("TTFT=2") == SLO(2.0, math.inf)
    for bad in ("ttft", "ttft=0s", "ttft=-1s", "latency=1s", "ttft=1s,ttft=2s", "ttft=fast", ""):
        with pytest.raises(HcsimError, match="--slo"):
            parse_slo(bad)
    with pytest.raises(HcsimError, match="--slo-attainment 1.5 is invalid"):
        parse_slo("ttft=1s", 1.5)


def test_goodput_counts_the_requests_meeting_both_bounds_by_hand():
    # TTFT: 0.1, 0.3, 0.2, 0.05; TPOT: (1.1-0.1)/10 = 0.1, (0.5-0.3)/4 = 0.05, one token, (2.05-0.05)/4 = 0.5
    r = _result([0.0, 0.0, 0.5, 1.0], [0.1, 0.3, 0.7, 1.05], [1.1, 0.5, 0.7, 3.05], [11, 5, 1, 5])
    s = slo_summary(r, SLO(0.25, 0.1))
    assert s["slo_met_requests"] == 2  # request 0 (0.1, 0.1) and 2 (0.2, no TPOT); 1 misses TTFT, 3 TPOT
    assert s["slo_attainment"] == 0.5
    assert s["goodput_requests_per_s"] == pytest.approx(2 / 3.05)
    assert s["goodput_tokens_per_s"] == pytest.approx((11 + 1) / 3.05)
    assert slo_summary(r, SLO())["slo_attainment"] == 1.0
    assert slo_summary(r, SLO(1e-9, 1e-9))["slo_met_requests"] == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 5), st.floats(0, 5), st.floats(0, 5), st.integers(1, 50)), min_size=1,
                max_size=30), st.floats(0.01, 3), st.floats(0.01, 3), st.floats(0.1, 1.0))  # fmt: skip
def test_a_tighter_slo_never_meets_more(rows, ttft, tpot, shrink):
    arrival = np.array([a for a, *_ in rows])
    first = arrival + np.array([t for _, t, *_ in rows])
    finish = first + np.array([d for *_, d, _ in rows])
    out = np.array([o for *_, o in rows])
    loose = slo_met(first, finish, arrival, out, SLO(ttft, tpot))
    tight = slo_met(first, finish, arrival, out, SLO(ttft * shrink, tpot * shrink))
    assert np.all(loose | ~tight)


def test_the_sweeps_goodput_is_the_highest_rate_below_the_first_miss():
    assert max_goodput_rate([5, 10, 20, 40], [1.0, 0.95, 0.8, 0.96], 0.9) == 10
    assert max_goodput_rate([20, 5, 10], [0.5, 0.99, 0.9], 0.9) == 10
    assert max_goodput_rate([5, 10], [0.5, 0.99], 0.9) == 0.0


# ------------------------------------------------------------------ series and Chrome trace
@pytest.fixture(scope="module")
def one_h100(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("p") / "star1.xml")
    topo = star(1, "H100")
    compile_platform(topo, path)
    return path, topo.xpus()


def test_the_series_adds_up_to_the_runs_totals(one_h100):
    path, xpus = one_h100
    reqs = fc.synthetic_requests(40, 2e4, (8, 64), (1, 60), seed=5)
    log = []
    timer = IterationTimer(TINY, path, xpus, coherent=False, kv_bucket=64)
    result = fc.serve_continuous([timer], reqs, (30, 0), block_tokens=8, log=log)
    assert any(m > 1 for *_, m in log) and any(shape.chunks for _, _, _, shape, _ in log)
    per_token = kv_bytes_per_token(TINY, 1)
    end = max(s + dt * m for _, s, dt, _, m in log)
    rows = series(log, 1, per_token, 1, end / 7.3)
    assert len(rows) == 8
    assert sum(r["iterations"] for r in rows) == result.iterations
    tokens = sum(shape.tokens * m for *_, shape, m in log)
    assert sum(r["tokens"] for r in rows) == pytest.approx(tokens, rel=1e-12)
    busy = sum(dt * m for _, _, dt, _, m in log)
    assert sum(r["busy_fraction"] * (r["t_end_s"] - r["t_start_s"]) for r in rows) == pytest.approx(busy, rel=1e-12)
    # KV read: every iteration's HBM decode KV plus its chunks' prior KV; a run of m repeated decode
    # iterations reads kv, kv + n, ..., kv + (m - 1) n tokens
    read = 0
    for *_, shape, m in log:
        read += m * (shape.kv_hbm + sum(c[1] for c in shape.chunks)) + shape.decodes * m * (m - 1) // 2
    assert sum(r["kv_hbm_read_bytes"] for r in rows) == pytest.approx(read * per_token, rel=1e-12)
    assert all(r["kv_remote_read_bytes"] == 0 for r in rows)
    assert all(0 <= r["busy_fraction"] <= 1 + 1e-12 for r in rows)
    a = iteration_arrays(log, 0)
    assert len(a["start"]) == result.iterations and np.all(np.diff(a["start"]) > 0)


def test_remote_reads_appear_in_the_series(one_h100, tmp_path):
    from hcsim.platform import builders

    p = str(tmp_path / "cxl.xml")
    topo = builders.paper_system(8, coherent=True, mix="H100")
    compile_platform(topo, p)
    reqs = [fc.Request(0.0, 64, 20) for _ in range(4)]
    log = []
    fc.serve_continuous([IterationTimer(TINY, p, topo.xpus()[:1], coherent=True)], reqs, (12, 40),
                        tiers=("hbm", "cxl"), log=log)  # fmt: skip
    rows = series(log, 1, kv_bytes_per_token(TINY, 1), 1, 1.0)
    want = sum(m * (shape.kv_remote + sum(c[2] for c in shape.chunks)) for *_, shape, m in log)
    assert want > 0
    assert sum(r["kv_remote_read_bytes"] for r in rows) == pytest.approx(want * kv_bytes_per_token(TINY, 1))


def test_the_chrome_trace_has_a_slice_per_run_of_iterations(one_h100):
    path, xpus = one_h100
    reqs = fc.synthetic_requests(12, 1e3, (8, 64), (1, 30), seed=2)
    log = []
    timer = IterationTimer(TINY, path, xpus, coherent=False, kv_bucket=64)
    fc.serve_continuous([timer, timer], reqs, (64, 0), log=log)
    doc = chrome_trace(log).document()
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == len(log)
    assert {e["pid"] for e in slices} == {1, 2}
    assert sum(e["args"]["repeats"] for e in slices) == sum(m for *_, m in log)
    for e in slices:
        assert e["dur"] == pytest.approx(e["args"]["iteration_s"] * e["args"]["repeats"] * 1e6)


def test_series_refuses_a_bad_interval():
    with pytest.raises(HcsimError, match="--series-interval"):
        series([], 1, 1.0, 1, 0.0)


# ------------------------------------------------------------------ CLI
TINY_CONFIG = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000,
               "max_position_embeddings": 4096, "torch_dtype": "float16"}  # fmt: skip


@pytest.fixture()
def tiny(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY_CONFIG))
    return ["serve", "--model", str(path), "--system", "star", "--xpus", "2", "--tp", "1", "--scheduler",
            "continuous", "--requests", "16", "--prompt-tokens", "64", "--output-tokens", "1:40"]  # fmt: skip


def test_a_rate_sweep_equals_standalone_runs_and_writes_its_files(tiny, tmp_path):
    out = tmp_path / "out"
    status, stdout, err = run_here(*tiny, "--rate", "200,800/s", "--slo", "ttft=2ms,tpot=0.2ms", "--json", "--out",
                                   out, "--timeline", "--plots", "--arrival-cv", "3")  # fmt: skip
    assert status == 0, err
    sweep = json.loads(stdout)
    assert [p["rate_per_s"] for p in sweep["points"]] == [200.0, 800.0]
    for point in sweep["points"]:
        alone = run_here(*tiny, "--rate", f"{point['rate_per_s']:g}", "--slo", "ttft=2ms,tpot=0.2ms", "--json",
                         "--arrival-cv", "3")  # fmt: skip
        single = json.loads(alone[1])
        for key in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "e2e_p90_s", "slo_attainment", "goodput_tokens_per_s"):
            assert single[key] == point[key], key
    attained = [p["slo_attainment"] for p in sweep["points"]]
    assert sweep["max_goodput_rate_per_s"] == max_goodput_rate([200.0, 800.0], attained, 0.9)
    names = {p.name for p in out.iterdir()}
    assert names == {"rate_200", "rate_800", "sweep.csv", "summary.json", "goodput_vs_rate.png"}
    files = {p.name for p in (out / "rate_200").iterdir()}
    assert files == {"requests.csv", "summary.json", "series.csv", "iterations.json", "latency_cdf.png"}
    assert json.loads((out / "rate_800" / "summary.json").read_text()) == sweep["points"][1]
    trace = json.loads((out / "rate_200" / "iterations.json").read_text())
    assert any(e["ph"] == "X" for e in trace["traceEvents"])
    header = (out / "rate_200" / "series.csv").read_text().splitlines()[0]
    assert header.startswith("replica,t_start_s,t_end_s,busy_fraction")


def test_a_trace_replays_and_rescales(tiny, tmp_path):
    import os

    here = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "traces", "llm")
    trace = os.path.join(here, "azure_llm_2024_code_head.csv")
    base = [a for a in tiny if a not in ("--prompt-tokens", "64", "--output-tokens", "1:40")]
    status, stdout, err = run_here(*base, "--trace", trace, "--json")
    assert status == 0, err
    s = json.loads(stdout)
    assert s["requests"] == 5 and s["output_tokens"] == 5 + 6 + 15 + 1 + 8 and s["trace_format"] == "azure"
    assert s["rate_per_s"] is None
    fast = json.loads(run_here(*base, "--trace", trace, "--rate", "1000/s", "--json")[1])
    assert fast["rate_per_s"] == 1000.0 and fast["output_tokens"] == s["output_tokens"]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--rate", "5/s", "--slo", "ttft=0s"], "--slo ttft='0s' is invalid"),
        (["--rate", "5/s", "--slo", "p99=1s"], "--slo 'p99=1s' is invalid"),
        (["--rate", "5/s", "--slo-attainment", "0.9"], "--slo-attainment applies with --slo"),
        (["--rate", "5,5/s"], "--rate lists a rate twice"),
        (["--rate", "5,0/s"], "--rate 0.0 is invalid"),
        (["--rate", "5/s", "--arrival-cv", "-1"], "--arrival-cv -1.0 is invalid"),
        (["--rate", "5/s", "--output-tokens", "zipf:1:0:9"], "--output-tokens 'zipf:1:0:9' is invalid"),
        (["--rate", "5/s", "--timeline"], "--timeline writes files into --out"),
        (["--rate", "5/s", "--trace-format", "azure"], "--trace-format applies with --trace"),
        (["--trace", "missing.csv"], "trace file 'missing.csv' does not exist"),
    ],
)
def test_bad_flags_are_one_line_and_write_nothing(tiny, tmp_path, extra, needle):
    out = tmp_path / "out"
    if "--trace" in extra:  # a trace gives the lengths
        tiny = [a for a in tiny if a not in ("--prompt-tokens", "64", "--output-tokens", "1:40")]
    args = [*tiny, *extra]
    if "--timeline" not in extra:
        args += ["--out", str(out)]
    assert_refused(run_here(*args), needle)
    assert not out.exists()


def test_a_bad_trace_is_one_line_and_writes_nothing(tiny, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9,10,2\n2023-11-16 18:17:03,x,2\n")
    base = [a for a in tiny if a not in ("--prompt-tokens", "64", "--output-tokens", "1:40")]
    out = tmp_path / "out"
    assert_refused(run_here(*base, "--trace", bad, "--out", out), "bad.csv line 3, column TIMESTAMP: earlier than")
    assert not out.exists()
    assert_refused(run_here(*tiny, "--trace", bad, "--out", out), "--prompt-tokens applies to synthetic requests")


def test_dynamic_batching_refuses_the_continuous_flags():
    base = ["serve", "--alpha", "2ms", "--tau0", "5ms", "--requests", "100"]
    assert_refused(run_here(*base, "--rate", "5,10/s"), "--rate with a list of rates applies to --scheduler")
    assert_refused(run_here(*base, "--rate", "5/s", "--slo", "ttft=1s"), "--slo applies to --scheduler continuous")
    assert_refused(run_here(*base, "--rate", "5/s", "--output-tokens", "1:5"), "--output-tokens '1:5' is invalid")
    assert_refused(run_here(*base), "one of the arguments --rho --rate is required")


def test_the_progress_bar_shows_when_asked_and_changes_nothing(tiny):
    quiet = run_here(*tiny, "--rate", "500/s", "--json")
    shown = run_here(*tiny, "--rate", "500/s", "--json", "--progress")
    assert quiet[0] == shown[0] == 0
    assert quiet[2] == "" and "serving at 500/s" in shown[2] and "simulated s" in shown[2]
    assert shown[1] == quiet[1]
