"""Steady micro-batches: a pipeline iteration of M micro-batches from two short runs of it.

A training iteration whose micro-batches all cost the same settles, within its first
pipeline period (P micro-batches on P stages), into a state that repeats every P
micro-batches: each further period adds the same seconds, bytes and busy time to
every rank. So with m1 = P + r (r = M mod P; at least 2 micro-batches when P = 1) and
m2 = m1 + P, each additive figure f of the report is f(M) = f(m1) + n (f(m2) - f(m1)),
n = (M - m1) / P (:func:`extrapolate`); counts of what ran are summed, rates are
recomputed from the extrapolated counts. :func:`steady_plan` says when it pays (m1 + m2
<= M / 2: a longer run memoizes more of its repeated collectives). On in ``hcsim run
--calibration M --fast`` for one iteration whose data stays in HBM (as the TP quotient),
so never in the paper's studies; ``--exact-microbatches`` turns it off.

Invariant: the two runs are the full engine's (folded and memoized as asked); only the
periods between them are not simulated. ``tests/fast/test_microbatches.py`` holds time,
bytes, rates and compute to 1e-9 of the full run, the other breakdown buckets to 2e-2 of
the iteration (how waiting splits between exposed p2p and idle alternates by period), at
P = 1..8, interleaved or not, with CP, EP, ZeRO, TP overlap and recomputation; the
argument is in ``docs/fast-paths.md`` ("Steady micro-batches").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SteadyPlan", "extrapolate", "steady_plan"]

#: report fields that grow by the same amount every period (seconds, bytes, operators)
LINEAR = frozenset(
    (
        "makespan_s", "mean_iteration_s", "steady_iteration_s", "iteration_times_s", "per_xpu_per_iteration_s",
        "compute_s", "memory_stall_s", "exposed_tp_s", "exposed_pp_s", "exposed_dp_s", "exposed_cp_s",
        "exposed_ep_s", "idle_s", "bytes_on_links", "simulated_bytes_on_links", "remote_vertices",
        "simulated_remote_vertices",
    )
)  # fmt: skip
#: counts of what the two runs did (the report says what was simulated, not what was stood for)
SUMMED = frozenset(("activities", "memoized_flows", "memoized_activities", "memoized_iterations"))
#: per-second rates of a count per iteration: the count is extrapolated, then divided by the period
RATES = frozenset(("batches_per_s", "samples_per_s"))
#: every link's row (``hcsim.engine.report.link_stats``): bytes extrapolated link by link, utilization
#: recomputed over the extrapolated makespan (the top links of a short run are not the full iteration's)
LINK_LISTS = frozenset(("links",))


@dataclass(frozen=True)
class SteadyPlan:
    """``total`` micro-batches as ``first`` and ``second`` simulated, ``periods`` more of ``second - first``."""

    total: int
    first: int
    second: int
    periods: int

    def describe(self) -> str:
        return (
            f"micro-batches {self.total} extrapolated from runs of {self.first} and {self.second} "
            f"({self.periods} steady pipeline periods of {self.second - self.first}; docs/fast-paths.md)"
        )


def steady_plan(microbatches: int, pp: int) -> SteadyPlan | None:
    """How to run ``microbatches`` on ``pp`` stages as two short runs, or None where that does not pay.

    >>> steady_plan(64, 8)
    SteadyPlan(total=64, first=8, second=16, periods=7)
    >>> steady_plan(32, 8) is None  # 8 + 16 micro-batches: more than half of 32
    True
    """
    period = max(int(pp), 1)
    first = period + microbatches % period
    if period == 1:
        first = 2
    second = first + period
    if 2 * (first + second) > microbatches:  # a full run memoizes more: the short ones must be far shorter
        return None
    return SteadyPlan(microbatches, first, second, (microbatches - first) // period)


def extrapolate(one: dict[str, Any], two: dict[str, Any], plan: SteadyPlan) -> dict[str, Any]:
    """The report of ``plan.total`` micro-batches from those of ``plan.first`` (``one``) and ``plan.second`` (``two``).

    A field that differs between the two runs and is in none of :data:`LINEAR`,
    :data:`SUMMED`, :data:`RATES`, :data:`LINK_LISTS` is an error: it is not known to
    grow with the micro-batches, so nothing is guessed. ``links`` (every link's row, as
    :func:`hcsim.engine.report.link_stats` gives them) comes back busiest first.
    """
    n = plan.periods
    out: dict[str, Any] = {}
    for key, b in two.items():
        a = one.get(key)
        if a == b and key not in SUMMED:
            out[key] = b
        elif key in LINEAR:
            out[key] = _linear(a, b, n, key)
        elif key in SUMMED:
            out[key] = a + b
        elif key in RATES or key in LINK_LISTS:
            continue  # below: they need the extrapolated period
        else:
            raise RuntimeError(f"report field {key!r} differs between {plan.first} and {plan.second} micro-batches "
                               "and is not known to grow with them")  # fmt: skip
    steady, span = out["steady_iteration_s"], out["makespan_s"]
    for key in RATES & two.keys() - out.keys():
        count = _linear(one[key] * one["steady_iteration_s"], two[key] * two["steady_iteration_s"], n, key)
        out[key] = count / steady if steady > 0 else float("inf")
    for key in LINK_LISTS & two.keys() - out.keys():
        out[key] = _links(one[key], two[key], n, span)
    return out


def _linear(a: Any, b: Any, n: int, key: str) -> Any:
    if isinstance(b, dict):
        return {k: _linear(a[k], v, n, key) for k, v in b.items()}
    if isinstance(b, list):
        return [_linear(x, y, n, key) for x, y in zip(a, b, strict=True)]
    if a is None or b is None:
        if a is None and b is None:
            return None
        raise RuntimeError(f"report field {key!r} is known in one run only")
    return a + n * (b - a)


def _links(one: list, two: list, n: int, span: float) -> list:
    """Every link's row with its bytes extrapolated (0 in a run that did not use it), busiest first.

    The peak utilization is the longer run's: the full iteration repeats its periods.
    """
    first = {row["link"]: row for row in one}
    second = {row["link"]: row for row in two}
    rows = []
    for name in sorted(first.keys() | second.keys()):
        a, b = first.get(name), second.get(name)
        row = dict(b if b is not None else a)
        nbytes = (a["bytes"] if a else 0.0) + n * ((b["bytes"] if b else 0.0) - (a["bytes"] if a else 0.0))
        row.update(bytes=nbytes, mean_utilization=nbytes / (row["bandwidth_Bps"] * span),
                   peak_utilization=b["peak_utilization"] if b else 0.0)  # fmt: skip
        rows.append(row)
    rows.sort(key=lambda s: (-s["mean_utilization"], s["link"]))
    return rows
