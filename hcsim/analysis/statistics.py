"""Statistics the front ends share: Student's t quantiles, confidence intervals, Erlang C.

* :func:`t975` - the 0.975 quantile of Student's t (two-sided 95% intervals), for any
  number of degrees of freedom;
* :func:`ratio_interval` - a pooled mean over replications (ratio estimator) and its
  95% half-width (queue selection);
* :func:`batch_means` - a statistic of one long run and its half-width by batch means
  (:func:`confidence_interval` for the mean, :func:`percentile_interval` for a
  percentile; dynamic batching);
* :func:`erlang_c_response` - the mean response time of an M/M/c queue (Erlang C),
  the closed form the queue-selection and cluster checks compare against.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from hcsim.errors import HcsimError

__all__ = [
    "BATCH_MEANS_T",
    "batch_means",
    "confidence_interval",
    "erlang_c_response",
    "percentile_interval",
    "ratio_interval",
    "t975",
]

#: Two-sided Student's t quantiles by confidence level and number of batches (df = batches - 1).
BATCH_MEANS_T = {
    0.95: {10: 2.262, 20: 2.093, 30: 2.045, 50: 2.010},
    0.99: {10: 3.250, 20: 2.861, 30: 2.756, 50: 2.680},
}

_T975_TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (Cornish-Fisher, exact to 1e-3 for df>=3)."""
    if df in _T975_TABLE:
        return _T975_TABLE[df]
    z = 1.959963984540054
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


def ratio_interval(counts: np.ndarray, sums: np.ndarray) -> tuple[float, float]:
    """Pooled mean sum(sums)/sum(counts) and its 95% half-width across replications (ratio estimator)."""
    r = counts.size
    total = counts.sum()
    mean = float(sums.sum() / total) if total else math.nan
    if r < 2 or not total:
        return mean, math.nan
    resid = sums - mean * counts
    se = math.sqrt(float((resid**2).sum()) / (r * (r - 1))) / (total / r)
    return mean, t975(r - 1) * se


def batch_means(
    values: np.ndarray, stat: Callable[[np.ndarray], float], batches: int, warmup: float, level: float
) -> tuple[float, float]:
    """``stat`` of ``values`` (first ``warmup`` fraction discarded) and its half-width at ``level`` by batch means."""
    v = np.asarray(values, dtype=float)[int(len(values) * warmup) :]
    if len(v) < 2 * batches:
        raise HcsimError(f"too few jobs ({len(v)}) for {batches} batch means")
    if level not in BATCH_MEANS_T or batches not in BATCH_MEANS_T[level]:
        raise HcsimError(f"confidence level {level} with {batches} batches is not tabulated (valid: 0.95/0.99, 10-50)")
    per_batch = np.array([stat(chunk) for chunk in np.array_split(v, batches)])
    return float(stat(v)), float(BATCH_MEANS_T[level][batches] * per_batch.std(ddof=1) / math.sqrt(batches))


def percentile_interval(
    values: np.ndarray, percentile: float, batches: int = 30, warmup: float = 0.01, level: float = 0.95
) -> tuple[float, float]:
    """A latency percentile and its half-width at ``level`` by batch means (percentile per batch)."""
    return batch_means(values, lambda x: float(np.percentile(x, percentile)), batches, warmup, level)


def confidence_interval(
    values: np.ndarray, batches: int = 30, warmup: float = 0.01, level: float = 0.95
) -> tuple[float, float]:
    """Mean and half-width at ``level`` (0.95 or 0.99) by batch means, first ``warmup`` fraction discarded."""
    return batch_means(values, lambda x: float(np.mean(x)), batches, warmup, level)


def erlang_c_response(rate: float, mean_service: float, servers: int) -> float:
    """Mean response time of an M/M/c queue (Erlang C): P_wait / (c mu - lambda) + 1/mu."""
    mu = 1.0 / mean_service
    a = rate / mu
    if a >= servers:
        return math.inf
    term, total = 1.0, 1.0
    for k in range(1, servers):
        term *= a / k
        total += term
    last = term * a / servers / (1 - a / servers)
    p_wait = last / (total + last)
    return p_wait / (servers * mu - rate) + 1.0 / mu
