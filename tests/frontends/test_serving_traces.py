"""LLM request traces: synthetic arrivals and lengths against their closed forms; the Azure and BurstGPT readers.

The gamma arrivals' gaps must have the asked mean and coefficient of variation, the Zipf
lengths the pmf k^-theta / H, the lognormal lengths their median; Poisson with fixed or
uniform lengths must be the generator continuous batching already had, draw for draw.
The readers are checked on the shipped samples (examples/traces/llm) against values read
off the files by hand, and every malformed trace must be one line naming its line and
column.
"""

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hcsim.errors import HcsimError
from hcsim.frontends.serving import continuous as fc
from hcsim.frontends.serving import traces as ft

LLM = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "traces", "llm")


def sample(name):
    return os.path.join(LLM, name)


# ------------------------------------------------------------------ lengths and arrivals
@pytest.mark.parametrize(
    ("text", "kind", "a", "b", "theta"),
    [
        ("512", "fixed", 512, 512, 0.0),
        ("64:64", "fixed", 64, 64, 0.0),
        ("8:40", "uniform", 8, 40, 0.0),
        ("zipf:0.9:16:2048", "zipf", 16, 2048, 0.9),
        ("lognormal:400:0.8", "lognormal", 400, ft.MAX_TOKENS, 0.8),
        ("lognormal:400:0.8:4096", "lognormal", 400, 4096, 0.8),
    ],
)
def test_length_flags_parse(text, kind, a, b, theta):
    d = ft.parse_lengths(text, "--prompt-tokens")
    assert (d.kind, d.a, d.b, d.theta) == (kind, a, b, theta)
    assert ft.parse_lengths(d.text(), "x") == d


@pytest.mark.parametrize(
    "text", ["0", "-1", "9:3", "zipf:0.9:16", "zipf:-1:1:9", "lognormal:0:1", "lognormal:500:1:100", "abc", "1:2:3"]
)
def test_bad_length_flags_are_one_line(text):
    with pytest.raises(HcsimError, match=r"--output-tokens .* is invalid \(valid: N \(fixed\)"):
        ft.parse_lengths(text, "--output-tokens")


def test_poisson_with_fixed_or_uniform_lengths_is_the_old_generator_draw_for_draw():
    for prompt, output in (("512", "128"), ("8:40", "1:12"), ("100", "3:9")):
        new = ft.synthetic_requests(300, 7.0, ft.parse_lengths(prompt, "p"), ft.parse_lengths(output, "o"), seed=4)
        p, o = ft.parse_lengths(prompt, "p").legacy(), ft.parse_lengths(output, "o").legacy()
        assert new == fc.synthetic_requests(300, 7.0, p, o, seed=4)


@pytest.mark.parametrize("cv", [0.5, 2.0, 4.0])
def test_gamma_arrivals_have_the_asked_rate_and_coefficient_of_variation(cv):
    n, rate = 200_000, 50.0
    reqs = ft.synthetic_requests(n, rate, ft.Lengths("fixed", 8, 8), ft.Lengths("fixed", 4, 4), seed=1, cv=cv)
    t = np.array([r.arrival for r in reqs])
    gaps = np.diff(np.concatenate([[0.0], t]))
    # standard errors of the sample mean and CV of n gamma gaps are ~cv/sqrt(n) relative: 5 sigma
    assert gaps.mean() == pytest.approx(1 / rate, rel=5 * cv / math.sqrt(n))
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.03)
    assert np.all(np.diff(t) >= 0)


def test_a_cv_too_small_for_a_gamma_is_refused():
    for cv in (1e-4, 5e-324, -1.0, math.nan, math.inf, 101.0):
        with pytest.raises(HcsimError, match="--arrival-cv .* is invalid"):
            ft.synthetic_requests(3, 1.0, ft.Lengths("fixed", 8, 8), ft.Lengths("fixed", 4, 4), cv=cv)


def test_zero_cv_is_evenly_spaced_and_the_stream_is_seeded():
    reqs = ft.synthetic_requests(10, 4.0, ft.Lengths("fixed", 8, 8), ft.Lengths("fixed", 4, 4), cv=0.0)
    assert [r.arrival for r in reqs] == pytest.approx([0.25 * (i + 1) for i in range(10)])
    z = ft.parse_lengths("zipf:1.2:1:50", "p")
    a = ft.synthetic_requests(50, 4.0, z, z, seed=9, cv=3.0)
    assert a == ft.synthetic_requests(50, 4.0, z, z, seed=9, cv=3.0)
    assert a != ft.synthetic_requests(50, 4.0, z, z, seed=10, cv=3.0)


@pytest.mark.parametrize("theta", [0.0, 0.6, 1.5])
def test_zipf_lengths_follow_the_pmf(theta):
    d = ft.Lengths("zipf", 10, 29, theta)
    n = 200_000
    got = np.bincount(np.array(d.draw(np.random.default_rng(0), n)) - 10, minlength=20) / n
    k = np.arange(1, 21, dtype=float)
    pmf = k**-theta / (k**-theta).sum()
    assert np.all(np.abs(got - pmf) <= 5 * np.sqrt(pmf * (1 - pmf) / n))


def test_lognormal_lengths_have_their_median_and_are_clipped():
    d = ft.parse_lengths("lognormal:300:1.0:2000", "p")
    v = np.array(d.draw(np.random.default_rng(2), 100_000))
    assert np.median(v) == pytest.approx(300, rel=0.02)
    assert v.min() >= 1 and v.max() == 2000  # P(X > 2000) = 2.9%: the clip is hit


@settings(max_examples=30, deadline=None)
@given(st.floats(0.05, 50.0), st.integers(3, 40), st.one_of(st.just(0.0), st.floats(0.001, 5.0)))
def test_rescale_hits_the_rate_and_keeps_order_and_lengths(rate, n, cv):
    reqs = ft.synthetic_requests(n, 3.0, ft.Lengths("uniform", 1, 9), ft.Lengths("fixed", 2, 2), seed=n, cv=cv)
    if reqs[-1].arrival - reqs[0].arrival <= 0:
        return
    out = ft.rescale(reqs, rate)
    assert (n - 1) / (out[-1].arrival - out[0].arrival) == pytest.approx(rate, rel=1e-9)
    assert [(r.prompt, r.output) for r in out] == [(r.prompt, r.output) for r in reqs]
    assert all(b.arrival >= a.arrival for a, b in zip(out, out[1:], strict=False))


# ------------------------------------------------------------------ readers
def test_the_azure_2023_sample_reads_as_written():
    tr = ft.read_requests(sample("azure_llm_2023_code_sample.csv"))
    assert tr.format == "azure" and len(tr.requests) == 200 and not tr.skipped
    first, second = tr.requests[:2]
    assert (first.arrival, first.prompt, first.output) == (0.0, 4808, 10)
    # 18:17:04.0319600 - 18:17:03.9799600, exact to the float's resolution
    assert second.arrival == pytest.approx(0.052, abs=1e-12) and (second.prompt, second.output) == (3180, 8)
    assert tr.start_epoch == pytest.approx(1700158623.97996, abs=1e-6)  # 2023-11-16 18:17:03.97996 UTC
    conv = ft.read_requests(sample("azure_llm_2023_conv_sample.csv"), "azure")
    assert len(conv.requests) == 200 and conv.requests[1].arrival == pytest.approx(4.314579, abs=1e-9)


def test_the_azure_2024_heads_read_with_their_time_zone():
    tr = ft.read_requests(sample("azure_llm_2024_code_head.csv"))
    assert [r.prompt for r in tr.requests] == [2162, 2399, 76, 2376, 7670]
    assert [r.output for r in tr.requests] == [5, 6, 15, 1, 8]
    assert tr.requests[-1].arrival == pytest.approx(0.083890 - 0.009930, abs=1e-12)
    conv = ft.read_requests(sample("azure_llm_2024_conv_head.csv"))
    assert conv.start_epoch == pytest.approx(1715472000.001163, abs=1e-6)  # 2024-05-12 00:00:00.001163+00:00


def test_the_burstgpt_example_skips_failures_and_filters():
    path = sample("burstgpt_format_example.csv")
    rows = [line.split(",") for line in open(path).read().splitlines()[1:]]
    tr = ft.read_requests(path)
    assert tr.format == "burstgpt"
    zeros = sum(r[3] == "0" for r in rows)
    assert zeros > 0 and len(tr.skipped) == zeros and len(tr.requests) == len(rows) - zeros
    assert tr.requests[0].arrival == 0.0 and tr.start_epoch == float(rows[0][0])
    gpt4 = ft.read_burstgpt(path, model="GPT-4", log_type="API log")
    want = sum(r[1] == "GPT-4" and r[5] == "API log" and r[3] != "0" for r in rows)
    assert len(gpt4.requests) == want > 0


def test_a_gzipped_trace_reads_the_same(tmp_path):
    import gzip

    data = open(sample("azure_llm_2023_code_sample.csv"), "rb").read()
    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(gzip.compress(data))
    assert ft.read_requests(gz).requests == ft.read_requests(sample("azure_llm_2023_code_sample.csv")).requests


AZ = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
BG = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (AZ + "2023-11-16 18:17:03.9,10,2\n2023-11-16 18:17:03.8,10,2\n", "line 3, column TIMESTAMP: earlier than"),
        (AZ + "2023-11-16 18:17:03.9,-4,2\n", "line 2, column ContextTokens: '-4' is invalid"),
        (AZ + "2023-11-16 18:17:03.9,ten,2\n", "line 2, column ContextTokens: 'ten' is invalid"),
        (AZ + "2023-11-16 18:17:03.9,10,\n", "line 2, column GeneratedTokens: missing"),
        (AZ + "yesterday,10,2\n", "line 2, column TIMESTAMP: 'yesterday' is invalid"),
        (AZ + "2023-11-16 18:17:03.9,10\n", "line 2: 2 columns, the header has 3"),
        ("TIMESTAMP,ContextTokens\n2023-11-16 18:17:03,10\n", "cannot tell the request trace format"),
        (BG + "5.0,ChatGPT,10,4,14,API log\n1.0,ChatGPT,10,4,14,API log\n", "line 3, column Timestamp: earlier"),
        (BG + "-1,ChatGPT,10,4,14,API log\n", "line 2, column Timestamp: '-1' is invalid"),
        (BG + "1,ChatGPT,10,-4,6,API log\n", "line 2, column Response tokens: '-4' is invalid"),
        (BG + "1,ChatGPT,10,4.5,14,API log\n", "line 2, column Response tokens: '4.5' is invalid"),
        (BG + "1,ChatGPT,10,0,10,API log\n", "no requests"),
        (AZ, "no requests"),
    ],
)
def test_bad_traces_are_one_line_naming_line_and_column(tmp_path, text, needle):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(HcsimError) as e:
        ft.read_requests(path)
    assert needle in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith("bad.csv")


def test_a_named_format_must_have_its_columns(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(BG + "1,ChatGPT,10,4,14,API log\n")
    with pytest.raises(HcsimError, match="line 1: no column 'TIMESTAMP'"):
        ft.read_requests(path, "azure")
    with pytest.raises(HcsimError, match="request trace format 'philly' is unknown"):
        ft.read_requests(path, "philly")
