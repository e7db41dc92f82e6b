"""The queue-selection model: the paper's parameters, random inputs, queue state, run records.

The paper's parameter sets (:data:`SETS`, mean service times p_i in minutes), the Lomax
inter-arrival law (:func:`lomax_cdf`, :func:`lomax_sample`), one replication's random
inputs (:class:`Inputs`, :func:`draw_inputs`: three MT19937 streams per replication),
what the job manager knows about its queues (:class:`QueueState`) and the jobs a
Monte Carlo run produced (:class:`MethodJobs`, :class:`QueueRun`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hcsim.errors import HcsimError

__all__ = [
    "ARRIVALS",
    "LOMAX_A",
    "LOMAX_B",
    "LOMAX_CAP",
    "MODELS",
    "OFFSETS",
    "OFFSET_RULES",
    "OFFSET_TIES",
    "SETS",
    "WEEK",
    "Inputs",
    "MethodJobs",
    "QueueRun",
    "QueueState",
    "draw_inputs",
    "lomax_cdf",
    "lomax_sample",
    "service_times",
]

WEEK = 10080.0  # minutes
LOMAX_A, LOMAX_B, LOMAX_CAP = 1.1, 7.34927, 1000.0
OFFSETS = (150.0, 1500.0, 3000.0, 5000.0)
MODELS = ("paper", "fifo")
ARRIVALS = ("lomax", "poisson")
OFFSET_TIES = ("lowest", "random")
OFFSET_RULES = ("fewest", "most")

SETS: dict[str, tuple[float, ...]] = {}
for _s, _base in ((1, 15.0), (2, 30.0), (3, 45.0)):
    SETS[f"{_s}a"] = (2 * _base,) * 6
    SETS[f"{_s}b"] = (_base,) * 3 + (3 * _base,) * 3
    SETS[f"{_s}c"] = (_base, _base, 2 * _base, 2 * _base, 3 * _base, 3 * _base)
    SETS[f"{_s}d"] = tuple(float(5 + 30 * (_s - 1) + 10 * i) for i in range(6))


def service_times(queues: str | Sequence[float]) -> tuple[float, ...]:
    """The mean service times p_i [min] of a parameter set ('1a'..'3d') or of an explicit list."""
    if isinstance(queues, str):
        key = queues.strip().lower().replace("(", "").replace(")", "")
        if key not in SETS:
            raise HcsimError(f"set {queues!r} is unknown (valid: 1a..3d)")
        return SETS[key]
    p = tuple(float(x) for x in queues)
    if not p or not all(x > 0 and math.isfinite(x) for x in p):
        raise HcsimError(f"service times {list(queues)!r} are invalid (valid: one or more finite minutes > 0)")
    return p


def lomax_cdf(
    x: np.ndarray | float, a: float = LOMAX_A, b: float = LOMAX_B, cap: float | None = LOMAX_CAP
) -> np.ndarray:
    """F(x) = 1 - (1 + x/b)^(-a), conditioned on x <= cap when ``cap`` is given."""
    x = np.clip(np.asarray(x, dtype=float), 0.0, math.inf if cap is None else cap)
    f = -np.expm1(-a * np.log1p(x / b))
    if cap is not None:
        f = f / -math.expm1(-a * math.log1p(cap / b))
    return f


def lomax_sample(
    rng: np.random.Generator, n: int, a: float = LOMAX_A, b: float = LOMAX_B, cap: float | None = LOMAX_CAP
) -> np.ndarray:
    """``n`` Lomax draws by inverse transform, x = b((1-u)^(-1/a) - 1); draws above ``cap`` are redrawn."""
    out = np.empty(0)
    while out.size < n:
        u = rng.random(n - out.size)
        x = b * np.expm1(-np.log1p(-u) / a)
        out = np.concatenate([out, x if cap is None else x[x <= cap]])
    return out


@dataclass(frozen=True)
class Inputs:
    """One replication's random inputs: arrival instants, unit-mean exponentials E_j, uniforms u_j."""

    arrivals: np.ndarray
    work: np.ndarray
    uniforms: np.ndarray


def _stream(seed: int, replication: int, stream: int) -> np.random.Generator:
    return np.random.Generator(np.random.MT19937(np.random.SeedSequence([seed, replication, stream])))


def draw_inputs(
    seed: int, replication: int, period: float = WEEK, arrival: str = "lomax", rate: float | None = None
) -> Inputs:
    """Arrivals in [0, period) (``lomax`` gaps, or ``poisson`` at ``rate`` per minute), E_j and u_j."""
    if arrival not in ARRIVALS:
        raise HcsimError(f"arrival process {arrival!r} is unknown (valid: {', '.join(ARRIVALS)})")
    rng = _stream(seed, replication, 0)
    if arrival == "poisson":
        if rate is None:
            raise HcsimError("poisson arrivals need --rate (valid: jobs per minute > 0, e.g. 0.1)")
        if not (rate > 0 and math.isfinite(rate)):
            raise HcsimError(f"--rate {rate} is invalid for poisson arrivals (valid: jobs per minute > 0, e.g. 0.1)")
        mean = 1.0 / rate
    else:
        mean = 24.2  # the truncated Lomax mean, only to size the draws (simulator.LOMAX_MEAN)
    gaps = np.empty(0)
    total = 0.0
    while total < period:
        chunk = int(period / mean * 1.1) + 16
        g = -np.log1p(-rng.random(chunk)) * mean if arrival == "poisson" else lomax_sample(rng, chunk)
        gaps = np.concatenate([gaps, g])
        total = float(gaps.sum())
    times = np.cumsum(gaps)
    times = times[times < period]
    n = times.size
    work = -np.log1p(-_stream(seed, replication, 1).random(n))
    uniforms = _stream(seed, replication, 2).random(n)
    return Inputs(times, work, uniforms)


@dataclass
class QueueState:
    """What the job manager knows about one system's queues at an instant.

    ``lengths`` jobs in each queue (running + waiting); ``area`` the integral of the
    length over [0, ``since``]; ``since`` the instant of each queue's last length
    change; ``done`` each queue's completion instants (only those still within an
    offset window are kept).
    """

    lengths: list[int]
    area: list[float]
    since: list[float]
    done: list[deque]

    @classmethod
    def empty(cls, n: int) -> QueueState:
        return cls([0] * n, [0.0] * n, [0.0] * n, [deque() for _ in range(n)])

    def areas(self, now: float) -> list[float]:
        """The integral of each queue's length over [0, now]."""
        return [a + n * (now - s) for a, n, s in zip(self.area, self.lengths, self.since, strict=True)]

    def change(self, k: int, now: float, delta: int) -> None:
        self.area[k] += self.lengths[k] * (now - self.since[k])
        self.since[k] = now
        self.lengths[k] += delta


def _check_model(model: str, servers: int) -> tuple[str, int]:
    if model not in MODELS:
        raise HcsimError(f"model {model!r} is unknown (valid: {', '.join(MODELS)})")
    if isinstance(servers, bool) or not isinstance(servers, int | np.integer) or servers < 1:
        raise HcsimError(f"--servers {servers} is invalid (valid: an integer >= 1)")
    return model, int(servers)


def _check_offset_options(offset_ties: str, offset_rule: str) -> None:
    if offset_ties not in OFFSET_TIES:
        raise HcsimError(f"--offset-ties {offset_ties!r} is unknown (valid: {', '.join(OFFSET_TIES)})")
    if offset_rule not in OFFSET_RULES:
        raise HcsimError(f"--offset-rule {offset_rule!r} is unknown (valid: {', '.join(OFFSET_RULES)})")


@dataclass
class MethodJobs:
    """All jobs of one method, replications concatenated (in replication, then arrival order)."""

    replication: np.ndarray
    arrival: np.ndarray
    queue: np.ndarray
    start: np.ndarray  # service start [min]; the arrival instant in the paper model
    completion: np.ndarray  # finish - arrival [min]

    def replication_sums(self, replications: int) -> tuple[np.ndarray, np.ndarray]:
        """Per replication: number of jobs, sum of completion times."""
        n = np.bincount(self.replication, minlength=replications).astype(float)
        s = np.bincount(self.replication, weights=self.completion, minlength=replications)
        return n, s


@dataclass
class QueueRun:
    """A Monte Carlo run: its parameters and every job of every method."""

    set_name: str | None
    service: tuple[float, ...]
    model: str
    servers: int
    replications: int
    seed: int
    period: float
    arrival: str
    rate: float | None
    offset_ties: str
    offset_rule: str
    methods: list[str]
    jobs: dict[str, MethodJobs] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total_jobs(self) -> int:
        return sum(j.completion.size for j in self.jobs.values())
