"""Queue selection (Kawanami et al.) on SimGrid: closed forms, choice rules, every set, determinism, errors.

Seeds were fixed before any run. Statistical checks use intervals computed from the
run itself (standard errors across independent replications, or the binomial and
Kolmogorov-Smirnov laws for i.i.d. samples) at 99.9% or wider, so a correct model fails
them rarely; none was widened after seeing a result.
"""

import argparse
import math
from collections import deque

import numpy as np
import pytest

from hcsim.cli.parsers import add_queue_selection_options
from hcsim.cli.queue_selection import main as queue_selection_command
from hcsim.errors import HcsimError
from hcsim.frontends import queue_selection as qs
from hcsim.frontends.queue_selection import (
    SETS,
    WEEK,
    Inputs,
    Method,
    QueueState,
    draw_inputs,
    erlang_c_response,
    lomax_cdf,
    lomax_sample,
    paper_methods,
    ratio_interval,
    run_traces,
    select_queue,
    simulate,
    summarize,
)

KS_999 = 1.95  # sqrt(n) * D exceeds this with probability 0.001 (Kolmogorov)


def ks_statistic(sample: np.ndarray, cdf) -> float:  # noqa: ANN001
    x = np.sort(sample)
    n = x.size
    f = cdf(x)
    return float(max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n)))


# ------------------------------------------------------------------ closed forms
def test_parameter_sets_are_the_papers():
    assert len(SETS) == 12
    assert SETS["1a"] == (30,) * 6 and SETS["2a"] == (60,) * 6 and SETS["3a"] == (90,) * 6
    assert SETS["1b"] == (15, 15, 15, 45, 45, 45) and SETS["3b"] == (45, 45, 45, 135, 135, 135)
    assert SETS["2c"] == (30, 30, 60, 60, 90, 90)
    assert SETS["1d"] == (5, 15, 25, 35, 45, 55) and SETS["2d"] == (35, 45, 55, 65, 75, 85)
    assert SETS["3d"] == tuple(65 + 10 * i for i in range(6))


def test_lomax_sampler_matches_its_truncated_cdf():
    rng = np.random.Generator(np.random.MT19937(20240601))
    n = 100_000
    x = lomax_sample(rng, n)
    assert x.size == n and x.min() >= 0 and x.max() <= 1000
    assert math.sqrt(n) * ks_statistic(x, lomax_cdf) < KS_999
    # 20 equiprobable bins of the truncated law: each count within 4.5 binomial standard errors
    edges = np.concatenate([[0.0], [_lomax_quantile(q) for q in np.arange(1, 20) / 20], [1000.0]])
    counts = np.histogram(x, edges)[0]
    se = math.sqrt(n * 0.05 * 0.95)
    assert np.all(np.abs(counts - n * 0.05) < 4.5 * se), counts
    # the untruncated law has 0.45% of its mass above 1000 min: those draws were discarded
    untrunc = lomax_cdf(1000.0, cap=None)
    assert 0.004 < 1 - untrunc < 0.005


def _lomax_quantile(q: float) -> float:
    lo, hi = 0.0, 1000.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if lomax_cdf(mid) < q else (lo, mid)
    return lo


def test_arrivals_cover_the_period_and_are_reproducible():
    a = draw_inputs(3, 5)
    b = draw_inputs(3, 5)
    assert np.array_equal(a.arrivals, b.arrivals) and np.array_equal(a.work, b.work)
    assert np.all(np.diff(a.arrivals) > 0) and 0 < a.arrivals[0] and a.arrivals[-1] < WEEK
    assert a.work.size == a.uniforms.size == a.arrivals.size
    assert not np.array_equal(draw_inputs(3, 6).arrivals[:10], a.arrivals[:10])


def test_exec_durations_equal_y_exactly_on_a_hand_computed_case():
    inp = Inputs(
        np.array([1.0, 2.0, 2.5, 3.0, 10.0]), np.array([1.0, 0.5, 2.0, 0.1, 0.3]), np.array([0, 0, 0.99, 0, 0.5])
    )
    paper, fifo = (run_traces((10.0, 20.0), ["random", "mql"], [inp], model=m)[0] for m in ("paper", "fifo"))
    # Random: u -> queues 0, 0, 1, 0, 1; paper model: finish = arrival + p_q E_j
    assert paper["random"]["queue"].tolist() == [0, 0, 1, 0, 1]
    assert np.allclose(paper["random"]["finish"], [11.0, 7.0, 42.5, 4.0, 16.0], rtol=0, atol=1e-9)
    # the same queues served FIFO by one server: jobs 1 and 3 wait behind job 0, job 4 behind job 2
    assert np.allclose(fifo["random"]["start"], [1.0, 11.0, 2.5, 16.0, 42.5], rtol=0, atol=1e-9)
    assert np.allclose(fifo["random"]["finish"], [11.0, 16.0, 42.5, 17.0, 48.5], rtol=0, atol=1e-9)
    # MQL, paper model: lengths (0,0) (1,0) (1,1)->u=.99 (1,2) (1,2) -> queues 0 1 1 0 0
    assert paper["mql"]["queue"].tolist() == [0, 1, 1, 0, 0]
    # MQL, fifo: at t=10 both queues hold 2 jobs; u = 0.5 picks the second of the tied
    assert fifo["mql"]["queue"].tolist() == [0, 1, 1, 0, 1]
    assert np.allclose(fifo["mql"]["finish"], [11.0, 12.0, 52.0, 12.0, 58.0], rtol=0, atol=1e-9)


def _exp_cdf(mean: float):  # noqa: ANN202
    return lambda x: -np.expm1(-x / mean)


def test_paper_model_completion_times_are_exactly_exponential_on_equal_queues():
    run = simulate("1a", ["mql"], model="paper", replications=10, seed=101)
    c = run.jobs["mql"].completion
    n = c.size
    assert n > 3500
    # each completion is its SimGrid execution: p E_j to 1e-9
    work = np.concatenate([draw_inputs(101, r).work for r in range(10)])
    assert np.max(np.abs(c - 30.0 * work)) < 1e-9
    assert abs(c.mean() - 30.0) < 4 * 30.0 / math.sqrt(n)
    assert math.sqrt(n) * ks_statistic(c, _exp_cdf(30.0)) < KS_999


def _steady_mean(run, label: str, warmup: float) -> tuple[float, float]:  # noqa: ANN001
    """Mean response of jobs arriving after ``warmup``, and its standard error across replications."""
    j = run.jobs[label]
    keep = j.arrival >= warmup
    n = np.bincount(j.replication[keep], minlength=run.replications).astype(float)
    s = np.bincount(j.replication[keep], weights=j.completion[keep], minlength=run.replications)
    mean, half = ratio_interval(n, s)
    return mean, half / qs._t975(run.replications - 1)


@pytest.mark.parametrize(
    ("p", "servers", "load"),
    [(30.0, 1, 0.5), (60.0, 2, 0.6)],
    ids=["M/M/1", "M/M/2"],
)
def test_fifo_random_routing_of_poisson_arrivals_is_m_m_c_per_queue(p, servers, load):
    n_q = 6 if servers == 1 else 3
    lam_q = load * servers / p
    run = simulate(
        (p,) * n_q,
        ["random"],
        model="fifo",
        servers=servers,
        replications=20,
        seed=7,
        period=20000.0,
        arrival="poisson",
        rate=lam_q * n_q,
    )
    exact = erlang_c_response(lam_q, p, servers)
    if servers == 1:
        assert exact == pytest.approx(1 / (1 / p - lam_q))
    # warm-up: 2000 min is over 5 relaxation times (1 / (mu (1 - sqrt(rho))^2) <= 350 min)
    mean, se = _steady_mean(run, "random", 2000.0)
    assert abs(mean - exact) < 4 * se, (mean, exact, se)
    assert se < 0.04 * exact  # the run is long enough for the check to mean something
    # SimGrid never shared a core: every job ran p E_j, at most c at once per queue, FIFO
    j = run.jobs["random"]
    work = np.concatenate([draw_inputs(7, r, 20000.0, "poisson", lam_q * n_q).work for r in range(20)])
    finish = j.arrival + j.completion
    assert np.max(np.abs(finish - j.start - p * work)) < 1e-9
    for r in range(3):
        for k in range(n_q):
            sel = (j.replication == r) & (j.queue == k)
            starts, ends = j.start[sel], finish[sel]
            assert np.all(np.diff(starts) >= 0)  # started in arrival order
            events = sorted([(t, 1) for t in starts] + [(t, -1) for t in ends], key=lambda e: (e[0], e[1]))
            assert max(np.cumsum([e[1] for e in events])) <= servers


# ------------------------------------------------------------------ choice rules
def state(lengths, areas=None, done=None) -> QueueState:  # noqa: ANN001
    n = len(lengths)
    return QueueState(
        list(lengths),
        list(areas or [0.0] * n),
        [0.0] * n,
        [deque(d) for d in (done or [[]] * n)],
    )


def test_random_is_uniform_over_queues():
    picks = [select_queue(Method("random"), state([9, 0, 0]), 5.0, u) for u in (0.0, 0.34, 0.67, 0.999)]
    assert picks == [0, 1, 2, 2]


def test_mql_picks_the_fewest_jobs_with_random_ties():
    st = state([3, 1, 2, 1, 5, 1])
    picks = {select_queue(Method("mql"), st, 10.0, u) for u in np.linspace(0, 0.999, 30)}
    assert picks == {1, 3, 5}  # every tied queue, and only those
    assert select_queue(Method("mql"), st, 10.0, 0.0) == 1
    assert select_queue(Method("mql"), st, 10.0, 0.5) == 3
    assert select_queue(Method("mql"), state([2, 0, 1]), 10.0, 0.9) == 1


def test_maql_picks_the_smallest_time_average_with_ties_to_the_lowest_id():
    assert select_queue(Method("maql"), state([0] * 6), 0.0, 0.9) == 0  # at time 0 all averages are 0
    # areas so far plus length x (now - since): queue 2 has the least area at now = 10
    st = QueueState([1, 0, 0], [5.0, 8.0, 3.0], [4.0, 2.0, 9.0], [deque(), deque(), deque()])
    assert st.areas(10.0) == [11.0, 8.0, 3.0]
    assert select_queue(Method("maql"), st, 10.0, 0.99) == 2
    tie = QueueState([0, 0, 0], [4.0, 2.0, 2.0], [0.0] * 3, [deque(), deque(), deque()])
    assert select_queue(Method("maql"), tie, 10.0, 0.99) == 1  # the lowest of the tied ids
    # the areas follow length changes
    st = QueueState.empty(2)
    st.change(0, 1.0, +1)
    st.change(0, 3.0, +1)
    st.change(0, 4.0, -1)
    assert st.areas(6.0) == [2.0 + 2.0 + 2.0, 0.0]


def test_offset_counts_completions_in_the_window_and_is_random_before_it():
    m = Method("offset", 150.0)
    done = [[10.0, 60.0, 170.0], [100.0], [55.0, 140.0]]
    # now = 200: the window (50, 200] holds 2, 1, 2 completions -> queue 1
    st = state([0, 0, 0], done=done)
    assert select_queue(m, st, 200.0, 0.9) == 1
    assert [list(d) for d in st.done] == [[60.0, 170.0], [100.0], [55.0, 140.0]]  # older ones dropped
    # now = 250: (100, 250] holds 1, 0, 1 -> queue 1; a completion exactly at now - M is out
    assert select_queue(m, st, 250.0, 0.9) == 1
    # ties: lowest id by default, or random among the tied
    st = state([0, 0, 0], done=[[300.0], [], []])
    assert select_queue(m, st, 310.0, 0.99) == 1
    assert select_queue(m, st, 310.0, 0.99, offset_ties="random") == 2
    assert select_queue(m, st, 310.0, 0.0, offset_ties="random") == 1
    # "most" reading of the rule
    assert select_queue(m, st, 310.0, 0.5, offset_rule="most") == 0
    # before time M: Random, whatever the counts
    st = state([0, 0, 0], done=[[1.0, 2.0], [], []])
    assert [select_queue(m, st, 149.0, u) for u in (0.1, 0.5, 0.9)] == [0, 1, 2]
    assert select_queue(m, st, 150.0, 0.1) == 1  # from M on: the rule


# ------------------------------------------------------------------ every set, both models
@pytest.mark.parametrize("model", ["paper", "fifo"])
def test_every_parameter_set_runs(model):
    for name, p in SETS.items():
        run = simulate(name, paper_methods(), model=model, replications=1, seed=5)
        rows = summarize(run)
        assert [r["method"] for r in rows] == [m.label for m in paper_methods()]
        for r in rows:
            assert r["jobs"] > 300 and math.isfinite(r["mean_min"]) and r["mean_min"] > 0
            assert sum(r[f"share_q{k + 1}"] for k in range(6)) == pytest.approx(1.0)
        for j in run.jobs.values():
            assert np.all(j.completion >= 0) and np.all(j.start >= j.arrival - 1e-9)
        if model == "paper" and len(set(p)) == 1:
            # equal queues, common random numbers: every method gives every job the same time
            ref = run.jobs["random"].completion
            assert all(np.allclose(j.completion, ref, rtol=0, atol=1e-9) for j in run.jobs.values())


# ------------------------------------------------------------------ determinism
def _args(**kw) -> argparse.Namespace:  # noqa: ANN003
    p = argparse.ArgumentParser()
    add_queue_selection_options(p)
    argv = []
    for k, v in kw.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    return p.parse_args(argv)


def test_seeded_runs_are_byte_identical(tmp_path, capsys):
    for d in ("a", "b"):
        args = _args(set="2b", method="all", offset="150,1500", replications=3, seed=9, out=tmp_path / d)
        assert queue_selection_command(args) == 0
    out = capsys.readouterr().out
    assert "offset(1500)" in out and "jobs/s" in out
    for name in ("summary.csv", "cdf.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "cdf.png").stat().st_size > 0
    other = _args(set="2b", method="all", offset="150,1500", replications=3, seed=10, out=tmp_path / "c")
    queue_selection_command(other)
    assert (tmp_path / "a" / "summary.csv").read_bytes() != (tmp_path / "c" / "summary.csv").read_bytes()


def test_results_do_not_depend_on_the_number_of_workers():
    kw = {"model": "fifo", "replications": 12, "seed": 4, "period": 2000.0}
    one = simulate("3c", ["mql", "offset"], workers=1, **kw)
    two = simulate("3c", ["mql", "offset"], workers=2, **kw)
    for label in one.methods:
        assert np.array_equal(one.jobs[label].completion, two.jobs[label].completion)


# ------------------------------------------------------------------ findings, as sanity
def test_equal_queues_give_indistinguishable_means_across_independent_runs():
    # different seeds per method, so common random numbers cannot make them equal
    means = {}
    for i, m in enumerate(["random", "mql", "maql", "offset"]):
        run = simulate("2a", [m], model="paper", replications=10, seed=200 + i)
        means[m] = summarize(run, None)[0]
    for m in ("mql", "maql", "offset"):
        a, b = means["random"], means[m]
        se = math.hypot(a["ci95_min"], b["ci95_min"]) / qs._t975(9)
        assert abs(a["mean_min"] - b["mean_min"]) < 4 * se


@pytest.mark.parametrize("name", ["1b", "1d"])
def test_mql_and_maql_beat_random_when_fast_and_slow_queues_coexist(name):
    rows = {r["method"]: r for r in summarize(simulate(name, ["random", "mql", "maql"], replications=10, seed=33))}
    for m in ("mql", "maql"):
        # paired difference (same arrivals): its 99.9% interval lies below zero
        d, half95 = rows[m]["diff_vs_random_min"], rows[m]["diff_ci95_min"]
        assert d + half95 * 4.78 / 2.262 < 0, (m, d, half95)  # t(9): 0.9995 quantile 4.78, 0.975 is 2.262


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"method": "foo"}, ["'foo'", "random, mql, maql, offset"]),
        ({"set": "4a"}, ["'4a'", "1a..3d"]),
        ({"offset": "0", "method": "offset"}, ["--offset 0", "minutes > 0"]),
        ({"offset": "abc", "method": "offset"}, ["--offset", "'abc'", "'2.5h'"]),
        ({"model": "lifo"}, ["'lifo'", "paper, fifo"]),
        ({"model": "fifo", "servers": 0}, ["--servers 0", ">= 1"]),
        ({"servers": 2}, ["--servers 2", "fifo"]),
        ({"replications": 0}, ["--replications 0", ">= 1"]),
        ({"period": -5}, ["--period -5", "> 0"]),
        ({"arrival": "poisson"}, ["--rate", "> 0"]),
        ({"arrival": "poisson", "rate": -1}, ["--rate -1", "> 0"]),
        ({"rate": 0.1}, ["--rate 0.1", "poisson"]),
        ({"arrival": "uniform"}, ["'uniform'", "lomax, poisson"]),
        ({"offset_ties": "highest"}, ["'highest'", "lowest, random"]),
        ({"offset_rule": "least"}, ["'least'", "fewest, most"]),
        ({"workers": 0}, ["--workers 0", ">= 1"]),
    ],
)
def test_bad_input_is_one_line_naming_the_item(kw, words):
    with pytest.raises(HcsimError) as err:
        queue_selection_command(_args(**{"replications": 1, **kw}))
    msg = str(err.value)
    assert "\n" not in msg and "valid" in msg
    for w in words:
        assert w in msg, msg


def test_library_rejects_bad_input():
    with pytest.raises(HcsimError, match="service times"):
        simulate([30.0, -1.0], ["random"])
    with pytest.raises(HcsimError, match="repeat"):
        simulate("1a", ["random", "random"])
    with pytest.raises(HcsimError, match="offset"):
        qs.parse_method("offset(-3)")
