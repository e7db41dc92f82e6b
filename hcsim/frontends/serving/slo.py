"""Service levels of LLM serving: TTFT/TPOT SLOs, SLO attainment and goodput, as DistServe defines them.

A request meets the SLO when its time to first token is at most ``ttft`` and its time per
output token (after the first; vLLM's TPOT) at most ``tpot``; a one-token request has no
TPOT and meets it by definition. For one run (:func:`slo_summary`): the attainment (the
fraction of requests that met both), the goodput in requests/s (those requests over the
run's span, first arrival to last finish: vLLM's ``request_goodput``) and in output
tokens/s (their tokens over the same span). Over a sweep of rates
(:func:`max_goodput_rate`): DistServe's goodput, the highest offered rate whose attainment
is at least the target (default 90%). Invariant: a bound given as 0 or inf is met by none
or by all requests, and attainment, goodput and the sweep's rate only fall as an SLO
tightens (tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from hcsim.errors import HcsimError
from hcsim.units import parse_time

__all__ = ["SLO", "max_goodput_rate", "parse_slo", "slo_met", "slo_summary"]


@dataclass(frozen=True)
class SLO:
    """Bounds in seconds: time to first token, time per output token; inf = no bound."""

    ttft: float = math.inf
    tpot: float = math.inf
    attainment: float = 0.9

    def text(self) -> str:
        return f"ttft={self.ttft:g}s,tpot={self.tpot:g}s"


def parse_slo(value: str, attainment: float = 0.9) -> SLO:
    """``ttft=0.5s,tpot=50ms`` (either or both; bare numbers are seconds) to an :class:`SLO`."""
    valid = "(valid: ttft=DURATION,tpot=DURATION, either or both, e.g. ttft=0.5s,tpot=50ms)"
    bounds: dict[str, float] = {}
    for part in str(value).split(","):
        key, sep, text = part.strip().partition("=")
        key = key.strip().lower()
        if not sep or key not in ("ttft", "tpot") or key in bounds:
            raise HcsimError(f"--slo {value!r} is invalid {valid}")
        try:
            bound = parse_time(text.strip(), f"--slo {key}")
        except HcsimError:
            raise HcsimError(f"--slo {key}={text.strip()!r} is invalid {valid}") from None
        if not bound > 0:
            raise HcsimError(f"--slo {key}={text.strip()!r} is invalid (valid: a duration > 0)")
        bounds[key] = bound
    if not (isinstance(attainment, int | float) and 0 < attainment <= 1):
        raise HcsimError(f"--slo-attainment {attainment!r} is invalid (valid: a fraction in (0, 1], e.g. 0.9)")
    return SLO(bounds.get("ttft", math.inf), bounds.get("tpot", math.inf), float(attainment))


def slo_met(
    first_token: np.ndarray, finish: np.ndarray, arrival: np.ndarray, output: np.ndarray, slo: SLO
) -> np.ndarray:
    """Per request: True if it met both bounds (one-token requests: TTFT only)."""
    ttft = first_token - arrival
    tokens = np.maximum(output - 1, 1)
    tpot = np.where(output > 1, (finish - first_token) / tokens, 0.0)
    return (ttft <= slo.ttft) & (tpot <= slo.tpot)


def slo_summary(result: Any, slo: SLO) -> dict[str, Any]:
    """The SLO's metrics of a :class:`~hcsim.frontends.serving.continuous.ContinuousResult`."""
    arrival = np.array([r.arrival for r in result.requests])
    output = np.array([r.output for r in result.requests])
    met = slo_met(result.first_token, result.finish, arrival, output, slo)
    span = float(result.finish.max()) - float(arrival.min())
    good = int(met.sum())
    return {
        "slo_ttft_s": slo.ttft,
        "slo_tpot_s": slo.tpot,
        "slo_met_requests": good,
        "slo_attainment": good / len(met),
        "goodput_requests_per_s": good / span if span > 0 else math.inf,
        "goodput_tokens_per_s": float(output[met].sum()) / span if span > 0 else math.inf,
    }


def max_goodput_rate(rates: list[float], attainments: list[float], target: float) -> float:
    """DistServe's goodput over a sweep: the highest rate up to which every swept rate's attainment is >= ``target``.

    0 if the lowest rate already misses it. A rate above a miss does not count even if it
    meets the target (noise in a short run), so the answer is conservative.
    """
    best = 0.0
    for rate, attained in sorted(zip(rates, attainments, strict=True)):
        if attained < target:
            break
        best = rate
    return best
