"""Inoue's dynamic-batching analysis: fits, bounds and two independent exact methods."""

import bisect
import math
import random

import pytest

from hcsim.analysis.queueing import (
    P4_RESNET50,
    V100_RESNET50,
    capacity,
    energy_efficiency,
    energy_efficiency_bound,
    exact_finite,
    exact_infinite,
    fit_linear,
    mean_batch,
    phi,
    phi0,
    phi1,
)
from hcsim.errors import HcsimError

V100 = fit_linear(V100_RESNET50)
P4 = fit_linear(P4_RESNET50)


def test_fits_reproduce_the_paper():
    assert (round(V100.alpha * 1e3, 4), round(V100.tau0 * 1e3, 4), round(V100.r2, 5)) == (0.1438, 1.8874, 0.99975)
    assert (round(P4.alpha * 1e3, 4), round(P4.tau0 * 1e3, 4), round(P4.r2, 5)) == (0.5833, 1.4284, 0.99986)
    assert V100.beta > 0 and V100.c0 > 0  # energy per batch is linear too


@pytest.mark.parametrize("fit", [V100, P4], ids=["V100", "P4"])
@pytest.mark.parametrize("rho", [0.1, 0.3, 0.5, 0.7, 0.8, 0.95])
def test_two_exact_methods_agree_and_phi_bounds_them(fit, rho):
    lam = rho / fit.alpha
    chain = exact_infinite(lam, fit.alpha, fit.tau0)
    queue = exact_finite(lam, fit.alpha, fit.tau0, math.inf)
    assert chain.leak < 1e-13 and queue.leak < 1e-13
    assert chain.mean_latency == pytest.approx(queue.mean_latency, rel=1e-9)
    assert chain.mean_batch == pytest.approx(queue.mean_batch, rel=1e-9)
    assert chain.utilization == pytest.approx(queue.utilization, rel=1e-9)
    assert chain.mean_latency <= phi(lam, fit.alpha, fit.tau0) * (1 + 1e-12)
    # phi0 <= phi1 exactly when lambda <= 1 / (alpha + tau0)
    assert (phi0(lam, fit.alpha, fit.tau0) <= phi1(lam, fit.alpha, fit.tau0)) == (lam <= 1 / (fit.alpha + fit.tau0))
    assert chain.utilization <= min(1.0, lam * (fit.alpha + fit.tau0)) + 1e-12
    assert energy_efficiency(fit.beta, fit.c0, chain.mean_batch) >= energy_efficiency_bound(
        lam, fit.alpha, fit.tau0, fit.beta, fit.c0
    ) * (1 - 1e-12)


def test_lemma3_holds_on_the_chain():
    lam = 0.6 / V100.alpha
    r = exact_infinite(lam, V100.alpha, V100.tau0)
    p_a0 = r.mean_batch * (1 - lam * V100.alpha) - lam * V100.tau0
    eb, eb2 = mean_batch(lam, V100.alpha, V100.tau0, p_a0)
    pmf_b2 = sum(b * b * p for b, p in enumerate(r.batch_pmf))
    assert eb2 == pytest.approx(pmf_b2, rel=1e-9)  # E[B^2] of the stationary pmf, as Lemma 3 says


def test_max_batch_one_is_md1():
    lam = 0.8 * capacity(V100.alpha, V100.tau0, 1)
    d = V100.alpha + V100.tau0
    rho = lam * d
    assert exact_finite(lam, V100.alpha, V100.tau0, 1).mean_latency == pytest.approx(
        d + rho * d / (2 * (1 - rho)), rel=1e-9
    )


def simulate_batching(lam, alpha, tau0, max_batch, jobs, seed):
    """Sequential event simulation of the batching queue: mean latency of `jobs` jobs."""
    rng = random.Random(seed)
    t, arrivals = 0.0, []
    for _ in range(jobs):
        t += rng.expovariate(lam)
        arrivals.append(t)
    free, done, total = 0.0, 0, 0.0
    while done < jobs:
        start = max(free, arrivals[done])
        waiting = bisect.bisect_right(arrivals, start) - done
        b = min(waiting, max_batch)
        end = start + alpha * b + tau0
        total += b * end - sum(arrivals[done : done + b])
        done += b
        free = end
    return total / jobs


@pytest.mark.parametrize("max_batch, load", [(math.inf, 0.7), (4, 0.8), (16, 0.5)])
def test_exact_matches_an_independent_simulation(max_batch, load):
    lam = load * capacity(P4.alpha, P4.tau0, max_batch)
    exact = exact_finite(lam, P4.alpha, P4.tau0, max_batch).mean_latency
    sims = [simulate_batching(lam, P4.alpha, P4.tau0, max_batch, 40_000, seed) for seed in range(5)]
    mean = sum(sims) / len(sims)
    sd = math.sqrt(sum((s - mean) ** 2 for s in sims) / (len(sims) - 1))
    assert abs(mean - exact) <= 4 * sd / math.sqrt(len(sims)) + 0.005 * exact


def test_unstable_input_is_refused():
    with pytest.raises(HcsimError, match="unstable: rho"):
        phi(1.0 / V100.alpha, V100.alpha, V100.tau0)
    with pytest.raises(HcsimError, match="unstable: lambda"):
        exact_finite(capacity(V100.alpha, V100.tau0, 8), V100.alpha, V100.tau0, 8)
    with pytest.raises(HcsimError, match="max batch"):
        exact_finite(10.0, V100.alpha, V100.tau0, 0)
