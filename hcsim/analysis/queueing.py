"""Dynamic batching queues (Inoue 2021): fits, closed-form bounds and exact latency.

Model: Poisson arrivals at rate ``lam``; whenever the server is idle and jobs wait, all
of them (at most ``M``) start as one batch; a batch of b jobs takes
tau[b] = alpha * b + tau0 (deterministic). W is a job's latency (waiting + processing).

* :func:`fit_linear` - least squares of tau[b] = b / throughput on b (and energy per
  batch), as the paper fits the V100 and P4 tables;
* :func:`phi0`, :func:`phi1`, :func:`phi` - Theorem 2's closed-form upper bounds on E[W]
  for M infinite;
* :func:`exact_infinite` - E[W] for M infinite from the batch-size Markov chain (Lemma 1);
* :func:`exact_finite` - E[W] for any M from the queue length at batch completions, an
  independent exact method (for M large the two agree).

Invariant: each exact function grows its truncation until the probability mass it
redirects is below ``tol`` (1e-13) and returns the resulting ``error_bound`` on E[W].

Guide: docs/serving.md, "Analysis" (the chains and the truncation bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hcsim.errors import HcsimError

__all__ = [
    "V100_RESNET50",
    "P4_RESNET50",
    "LinearFit",
    "fit_linear",
    "phi0",
    "phi1",
    "phi",
    "mean_batch",
    "utilization",
    "energy_efficiency",
    "energy_efficiency_bound",
    "ExactResult",
    "exact_infinite",
    "exact_finite",
    "capacity",
]

#: NVIDIA inference whitepaper, ResNet-50: batch size -> (images/s, board power W)
V100_RESNET50 = {1: (476, 120), 2: (880, 109), 4: (1631, 132), 8: (2685, 153), 64: (5877, 274), 128: (6275, 285)}
P4_RESNET50 = {1: (569, 44), 2: (736, 44), 4: (974, 49), 8: (1291, 57), 64: (1677, 63), 128: (1676, 62)}


@dataclass(frozen=True)
class LinearFit:
    """tau[b] = alpha b + tau0 (seconds) and c[b] = beta b + c0 (joules), with R^2."""

    alpha: float
    tau0: float
    r2: float
    beta: float = math.nan
    c0: float = math.nan


def _least_squares(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (slope * x + intercept)
    r2 = 1 - float(residual @ residual) / float(((y - y.mean()) ** 2).sum())
    return float(slope), float(intercept), r2


def fit_linear(table: dict[int, tuple[float, float]] | dict[int, float]) -> LinearFit:
    """Fit a throughput (and optional power) table {batch: throughput or (throughput, watts)}."""
    if len(table) < 2:
        raise HcsimError("a throughput table needs at least 2 batch sizes to fit alpha and tau0")
    b = np.array(sorted(table), dtype=float)
    rows = [table[int(k)] for k in b]
    thr = np.array([r[0] if isinstance(r, tuple) else r for r in rows], dtype=float)
    if np.any(thr <= 0) or np.any(b <= 0):
        raise HcsimError("batch sizes and throughputs must be > 0")
    tau = b / thr
    alpha, tau0, r2 = _least_squares(b, tau)
    if all(isinstance(r, tuple) for r in rows):
        power = np.array([r[1] for r in rows], dtype=float)
        beta, c0, _ = _least_squares(b, power * tau)
        return LinearFit(alpha, tau0, r2, beta, c0)
    return LinearFit(alpha, tau0, r2)


def _check_stable(lam: float, alpha: float, tau0: float) -> None:
    if not lam > 0 or not alpha > 0 or not tau0 >= 0:
        raise HcsimError(f"need lambda > 0, alpha > 0, tau0 >= 0 (got {lam}, {alpha}, {tau0})")
    if lam * alpha >= 1:
        raise HcsimError(
            f"unstable: rho = lambda * alpha = {lam * alpha:.4g} >= 1 (valid: lambda < 1/alpha = {1 / alpha:.6g}/s)"
        )


def capacity(alpha: float, tau0: float, max_batch: float = math.inf) -> float:
    """Largest stable arrival rate: mu[M] = M / (alpha M + tau0), or 1/alpha for M infinite."""
    return 1 / alpha if math.isinf(max_batch) else max_batch / (alpha * max_batch + tau0)


def phi0(lam: float, alpha: float, tau0: float) -> float:
    """Theorem 2's first bound on E[W] (M infinite); tight at light load."""
    _check_stable(lam, alpha, tau0)
    la = lam * alpha
    return (alpha + tau0) / (2 * (1 - la)) * (1 + 2 * lam * tau0 + (1 - lam * tau0) / (1 + la))


def phi1(lam: float, alpha: float, tau0: float) -> float:
    """Theorem 2's second bound on E[W] (M infinite); tight at heavy load."""
    _check_stable(lam, alpha, tau0)
    la = lam * alpha
    return 1.5 * tau0 / (1 - la) + (alpha / 2) * (la + 2) / (1 - la * la)


def phi(lam: float, alpha: float, tau0: float) -> float:
    """min(phi0, phi1): the closed-form upper bound on E[W]."""
    return min(phi0(lam, alpha, tau0), phi1(lam, alpha, tau0))


def mean_batch(lam: float, alpha: float, tau0: float, p_a0: float) -> tuple[float, float]:
    """Lemma 3: E[B] and E[B^2] from P(A = 0)."""
    la = lam * alpha
    eb = (lam * tau0 + p_a0) / (1 - la)
    eb2 = ((1 + 2 * lam * lam * alpha * tau0) * eb + (lam * tau0) ** 2) / (1 - la * la)
    return eb, eb2


def utilization(lam: float, alpha: float, tau0: float, eb: float) -> float:
    """Fraction of time the server is busy: lam alpha + lam tau0 / E[B]."""
    return lam * alpha + lam * tau0 / eb


def energy_efficiency(beta: float, c0: float, eb: float) -> float:
    """Jobs per joule: 1 / (beta + c0 / E[B])."""
    return 1 / (beta + c0 / eb)


def energy_efficiency_bound(lam: float, alpha: float, tau0: float, beta: float, c0: float) -> float:
    """Corollary 1's lower bound: 1 / (beta + c0 / max(1, lam tau0 / (1 - lam alpha)))."""
    _check_stable(lam, alpha, tau0)
    return 1 / (beta + c0 / max(1.0, lam * tau0 / (1 - lam * alpha)))


@dataclass(frozen=True)
class ExactResult:
    """Exact (truncated-chain) latency and batch statistics."""

    mean_latency: float
    mean_batch: float
    mean_batch_sq: float
    utilization: float
    states: int
    leak: float
    error_bound: float
    batch_pmf: np.ndarray  # P(B = b) for b = 0.. (index 0 unused)


#: largest truncation (a dense K x K solve: 8192 states take ~0.5 GB and seconds)
MAX_STATES = 8192


def _too_close(lam: float, leak: float, k: int) -> str:
    return (
        f"load too close to capacity for the exact chain: at lambda = {lam:.6g}/s, {k} states still leak "
        f"{leak:.1e} (valid: a lower load, or a larger tol)"
    )


def _poisson_matrix(means: np.ndarray, k: int) -> np.ndarray:
    """Row s: Poisson(means[s]) probabilities of 0..k-1 (computed in log space)."""
    j = np.arange(k)
    logfact = np.array([math.lgamma(i + 1) for i in range(k)])
    with np.errstate(divide="ignore"):
        logm = np.log(means)[:, None]
    out = np.exp(j[None, :] * logm - means[:, None] - logfact[None, :])
    out[means == 0] = 0.0
    out[means == 0, 0] = 1.0
    return out


def _stationary(p: np.ndarray) -> np.ndarray:
    n = p.shape[0]
    a = p.T - np.eye(n)
    a[-1, :] = 1.0
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    pi = np.linalg.solve(a, rhs)
    pi[pi < 0] = 0.0
    return pi / pi.sum()


def _truncated_stationary(build, k: int, lam: float, tol: float):  # noqa: ANN001, ANN202
    """Grow K (doubling) until the mass the truncated chain redirects from beyond K is below ``tol``.

    ``build(k)`` returns the k x k transition matrix with the rows' missing mass (jumps
    beyond K) not yet placed, plus anything the caller wants back; that mass is folded
    into state K. Returns (pi, k, leak, extra).
    """
    while True:
        p, extra = build(k)
        leak_rows = 1 - p.sum(axis=1)
        p[:, -1] += leak_rows
        pi = _stationary(p)
        leak = float(pi @ np.clip(leak_rows, 0, None))
        if leak < tol:
            return pi, k, leak, extra
        if k >= MAX_STATES:
            raise HcsimError(_too_close(lam, leak, k))
        k = min(2 * k, MAX_STATES)


def exact_infinite(lam: float, alpha: float, tau0: float, tol: float = 1e-13) -> ExactResult:
    """E[W] for M infinite from the batch-size chain (states b = 1..K)."""
    _check_stable(lam, alpha, tau0)

    def build(k: int):  # noqa: ANN202
        b = np.arange(1, k + 1, dtype=float)
        pa = _poisson_matrix(lam * (alpha * b + tau0), k + 1)  # A = 0..K
        p = np.zeros((k, k))
        p[:, 0] = pa[:, 0] + pa[:, 1]  # A = 0 -> batch of 1 (the next arrival), A = 1 -> 1
        p[:, 1:] = pa[:, 2 : k + 1]  # batches larger than K are folded into K
        return p, pa

    k0 = min(MAX_STATES, max(64, int(4 * (lam * tau0 + 1) / (1 - lam * alpha))))
    pi, k, leak, pa = _truncated_stationary(build, k0, lam, tol)
    p_a0 = float(pi @ pa[:, 0])
    eb, eb2 = mean_batch(lam, alpha, tau0, p_a0)
    ew = (eb2 - eb) / (2 * lam * eb) + alpha * eb2 / eb + tau0
    worst = (alpha * k + tau0) * 2 + k / lam
    pmf = np.concatenate([[0.0], pi])
    return ExactResult(ew, eb, eb2, utilization(lam, alpha, tau0, eb), k, leak, leak * worst, pmf)


def exact_finite(lam: float, alpha: float, tau0: float, max_batch: float, tol: float = 1e-13) -> ExactResult:
    """E[W] for any maximum batch M from the queue length Q at batch completions (states 0..K).

    From Q waiting jobs the next batch takes b = min(max(Q, 1), M) jobs (Q = 0: the server
    idles 1/lam on average until the first arrival, which starts alone); during tau[b]
    A ~ Poisson(lam tau[b]) arrive, so Q' = max(Q, 1) - b + A. Over one such cycle the
    expected area under the number in system is max(Q, 1) tau[b] + lam tau[b]^2 / 2 and
    the expected length is tau[b] + 1{Q = 0} / lam; E[W] = E[area] / E[length] / lam.
    """
    if not lam > 0 or not alpha > 0 or not tau0 >= 0:
        raise HcsimError(f"need lambda > 0, alpha > 0, tau0 >= 0 (got {lam}, {alpha}, {tau0})")
    if math.isinf(max_batch):
        _check_stable(lam, alpha, tau0)
    else:
        if max_batch < 1 or max_batch != int(max_batch):
            raise HcsimError(f"max batch {max_batch!r} is invalid (valid: an integer >= 1 or inf)")
        cap = capacity(alpha, tau0, max_batch)
        if lam >= cap:
            raise HcsimError(
                f"unstable: lambda = {lam:.6g}/s >= mu[M] = {cap:.6g}/s for M = {int(max_batch)} "
                f"(valid: lambda < M / (alpha M + tau0))"
            )
    m = math.inf if math.isinf(max_batch) else int(max_batch)

    def build(k: int):  # noqa: ANN202
        q = np.arange(k)
        start = np.maximum(q, 1)
        b = np.minimum(start, m) if not math.isinf(m) else start
        tau = alpha * b + tau0
        pa = _poisson_matrix(lam * tau, k + 1)  # A = 0..K
        base = (start - b).astype(int)  # jobs left waiting when the batch starts
        p = np.zeros((k, k))
        for s in range(k):
            p[s, base[s] :] = pa[s, : k - base[s]]
        return p, (q, start, b, tau)

    pi, k, leak, (q, start, b, tau) = _truncated_stationary(build, 256, lam, tol)
    area = start * tau + lam * tau * tau / 2
    length = tau + (q == 0) / lam
    ew = float(pi @ area) / float(pi @ length) / lam
    batch_pmf = np.bincount(b.astype(int), weights=pi)
    eb = float(pi @ b)
    eb2 = float(pi @ (b * b))
    busy = float(pi @ tau) / float(pi @ length)
    worst = float(area.max() / length.min() / lam)
    return ExactResult(ew, eb, eb2, busy, k, leak, leak * worst, batch_pmf)
