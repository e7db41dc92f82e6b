"""LLM request traces: synthetic arrivals and lengths, and the public production traces' readers.

:func:`synthetic_requests` draws ``count`` requests: arrivals Poisson at ``rate`` (``cv``
1) or gamma renewal with coefficient of variation ``cv`` of the gaps (burstiness; 0:
evenly spaced), lengths from a :class:`Lengths` (fixed, uniform, Zipf, lognormal).
:func:`read_requests` reads a request trace through :data:`REQUEST_FORMATS` (a
:class:`~hcsim.registry.Registry` of readers, sniffed from the header like the cluster's
job traces, sharing their file reading: gzip, UTF-8, one-line errors): the Azure LLM
inference traces (2023 and 2024: ``TIMESTAMP, ContextTokens, GeneratedTokens``) and
BurstGPT (``Timestamp, Model, Request tokens, Response tokens, Total tokens, Log Type``).
Invariants: the same arguments and seed give the same requests; Poisson with fixed or
uniform lengths is exactly :func:`~hcsim.frontends.serving.continuous.synthetic_requests`;
a trace's times start at 0 and never decrease (an unsorted file is refused, naming the
line); a malformed row (missing, negative or non-numeric) is one line naming its line and
column. Rows asking for no token at all (BurstGPT's failures) are skipped and counted.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hcsim.errors import HcsimError
from hcsim.frontends.cluster.traces._common import _label, _Progress, _read_text, _show
from hcsim.frontends.serving.continuous import Request
from hcsim.frontends.serving.continuous import synthetic_requests as _poisson_requests
from hcsim.registry import Registry

__all__ = [
    "MAX_TOKENS",
    "REQUEST_FORMATS",
    "Lengths",
    "RequestFormat",
    "RequestTrace",
    "guess_request_format",
    "parse_lengths",
    "read_azure_llm",
    "read_burstgpt",
    "read_requests",
    "rescale",
    "synthetic_requests",
]

MAX_TOKENS = 2**20
"""Most tokens of one prompt or output (1Mi, the longest context of published models)."""
_KINDS = "N (fixed), LOW:HIGH (uniform), zipf:THETA:LOW:HIGH, lognormal:MEDIAN:SIGMA[:MAX]"


@dataclass(frozen=True)
class Lengths:
    """A length distribution: ``fixed`` (a), ``uniform`` integers a..b, ``zipf`` or ``lognormal``.

    ``zipf``: P(a + k - 1) proportional to k^-theta for k = 1..b - a + 1 (short lengths
    likeliest; the distribution Vidur's Zipf length generator approximates, here drawn
    exactly by its CDF). ``lognormal``: round(exp(N(ln a, theta^2))), clipped to [1, b].
    """

    kind: str
    a: int
    b: int
    theta: float = 0.0

    def text(self) -> str:
        """The distribution as the flag spells it."""
        if self.kind == "fixed":
            return str(self.a)
        if self.kind == "uniform":
            return f"{self.a}:{self.b}"
        if self.kind == "zipf":
            return f"zipf:{self.theta:g}:{self.a}:{self.b}"
        return f"lognormal:{self.a}:{self.theta:g}:{self.b}"

    def legacy(self) -> int | tuple[int, int] | None:
        """The form :func:`continuous.synthetic_requests` takes (fixed or uniform), else None."""
        if self.kind == "fixed":
            return self.a
        return (self.a, self.b) if self.kind == "uniform" else None

    def draw(self, rng: np.random.Generator, count: int) -> list[int]:
        """``count`` lengths from ``rng``."""
        if self.kind == "fixed":
            return [self.a] * count
        if self.kind == "uniform":
            return [int(v) for v in rng.integers(self.a, self.b + 1, count)]
        if self.kind == "zipf":
            k = np.arange(1, self.b - self.a + 2, dtype=float)
            cdf = np.cumsum(k**-self.theta)
            cdf /= cdf[-1]
            idx = np.searchsorted(cdf, rng.random(count), side="right")
            return [self.a + int(i) for i in np.minimum(idx, len(k) - 1)]
        values = np.rint(rng.lognormal(math.log(self.a), self.theta, count))
        return [int(v) for v in np.clip(values, 1, self.b)]


def parse_lengths(value: object, flag: str) -> Lengths:
    """A length flag: ``N``, ``LOW:HIGH``, ``zipf:THETA:LOW:HIGH`` or ``lognormal:MEDIAN:SIGMA[:MAX]``."""
    text = str(value).strip()
    bad = HcsimError(f"{flag} {text!r} is invalid (valid: {_KINDS}; token counts from 1 to {MAX_TOKENS})")
    parts = text.split(":")
    try:
        if parts[0].lower() == "zipf" and len(parts) == 4:
            theta, low, high = float(parts[1]), int(parts[2]), int(parts[3])
            if not (math.isfinite(theta) and theta >= 0 and 1 <= low <= high <= MAX_TOKENS):
                raise ValueError
            return Lengths("zipf", low, high, theta)
        if parts[0].lower() == "lognormal" and len(parts) in (3, 4):
            median, sigma = int(parts[1]), float(parts[2])
            top = int(parts[3]) if len(parts) == 4 else MAX_TOKENS
            if not (1 <= median <= top <= MAX_TOKENS and math.isfinite(sigma) and sigma >= 0):
                raise ValueError
            return Lengths("lognormal", median, top, sigma)
        if len(parts) == 2:
            low, high = int(parts[0]), int(parts[1])
            if not 1 <= low <= high <= MAX_TOKENS:
                raise ValueError
            return Lengths("uniform", low, high) if low != high else Lengths("fixed", low, low)
        if len(parts) == 1:
            n = int(parts[0])
            if not 1 <= n <= MAX_TOKENS:
                raise ValueError
            return Lengths("fixed", n, n)
    except ValueError:
        raise bad from None
    raise bad


def synthetic_requests(
    count: int, rate: float, prompt: Lengths, output: Lengths, seed: int = 0, cv: float = 1.0
) -> list[Request]:
    """``count`` requests at mean ``rate``/s: gaps exponential (``cv`` 1), gamma(1/cv^2) or equal (``cv`` 0).

    Lengths come from their own stream (seeded ``[seed, 1]``), prompts then outputs, so
    the arrivals do not depend on them; ``cv`` 1 with fixed or uniform lengths is exactly
    :func:`hcsim.frontends.serving.continuous.synthetic_requests`.
    """
    from hcsim.frontends.serving.batching import arrival_times

    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise HcsimError(f"--requests {count!r} is invalid (valid: an integer >= 1)")
    if not (isinstance(cv, int | float) and (cv == 0 or 0.001 <= cv <= 100)):
        raise HcsimError(f"--arrival-cv {cv!r} is invalid (valid: 0, or a number from 0.001 to 100; 1 is Poisson)")
    if cv == 1 and prompt.legacy() is not None and output.legacy() is not None:
        return _poisson_requests(count, rate, prompt.legacy(), output.legacy(), seed)
    if cv == 1:
        arrivals = arrival_times("poisson", rate, count, seed)
    elif cv == 0:
        arrivals = arrival_times("deterministic", rate, count, seed)
    else:
        arrivals = arrival_times("gamma", rate, count, seed, shape=1.0 / (cv * cv))
    rng = np.random.default_rng([seed, 1])
    prompts, outputs = prompt.draw(rng, count), output.draw(rng, count)
    return [Request(float(a), p, o) for a, p, o in zip(arrivals.tolist(), prompts, outputs, strict=True)]


# ------------------------------------------------------------------ traces
@dataclass
class RequestTrace:
    """Requests read from a trace (times from its first request, sorted), and what was left out.

    ``start_epoch``: the first request's time in the format's own clock (seconds since
    1970 for Azure, since the trace's first day for BurstGPT); ``skipped``: (line, reason).
    """

    requests: list[Request]
    source: str
    format: str
    start_epoch: float
    skipped: list[tuple[int, str]] = field(default_factory=list)


@dataclass(frozen=True)
class RequestFormat:
    """A request-trace format: ``read(path, *, progress, **options)``; ``sniff(header)`` rates a header (0: not it)."""

    name: str
    read: Callable[..., RequestTrace]
    sniff: Callable[[list[str]], int]
    columns: tuple[str, ...]


REQUEST_FORMATS: Registry[RequestFormat] = Registry("request trace format", show=_show)

_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()


def _azure_time(text: str) -> tuple[int, float]:
    """``YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM]`` as (whole seconds since 1970, fraction); ValueError if not."""
    s = text.strip()
    offset = 0
    if len(s) > 19 and s[-6] in "+-" and s[-3] == ":":  # the 2024 trace's "+00:00"
        sign = 1 if s[-6] == "+" else -1
        offset = sign * (int(s[-5:-3]) * 3600 + int(s[-2:]) * 60)
        s = s[:-6]
    elif s.endswith("Z"):
        s = s[:-1]
    if len(s) < 19 or s[4] != "-" or s[7] != "-" or s[10] not in " T" or s[13] != ":" or s[16] != ":":
        raise ValueError(text)
    date = _dt.date(int(s[0:4]), int(s[5:7]), int(s[8:10]))
    h, m, sec = int(s[11:13]), int(s[14:16]), int(s[17:19])
    if not (0 <= h <= 23 and 0 <= m <= 59 and 0 <= sec <= 60):
        raise ValueError(text)
    frac = 0.0
    if len(s) > 19:
        digits = s[20:]
        if s[19] != "." or not digits.isdigit():
            raise ValueError(text)
        frac = float("0." + digits)
    return (date.toordinal() - _EPOCH_ORDINAL) * 86400 + h * 3600 + m * 60 + sec - offset, frac


def _count(text: str, label: str, line: int, column: str) -> int:
    """A token count: a non-negative integer (``12`` or ``12.0``); one line naming the cell if not."""
    value = text.strip()
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0 or number != int(number) or number > MAX_TOKENS:
        what = "missing" if not value else f"{_show(value)} is invalid"
        raise HcsimError(f"{label} line {line}, column {column}: {what} "
                         f"(valid: a whole number of tokens from 0 to {MAX_TOKENS})")  # fmt: skip
    return int(number)


def _rows(path: str | os.PathLike[str], what: str, required: tuple[str, ...]) -> tuple[str, list[str], csv.reader]:
    text = _read_text(path, what)
    label = _label(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip() for h in next(reader)]
    missing = [c for c in required if c not in header]
    if missing:
        raise HcsimError(f"{label} line 1: no column {missing[0]!r} (valid: a {what} with columns "
                         f"{', '.join(required)}; found {', '.join(header)[:80]})")  # fmt: skip
    return label, header, reader


def _assemble(
    rows: list[tuple[float, float, int, int]], skipped: list[tuple[int, str]], path: str, fmt: str, label: str
) -> RequestTrace:
    """Requests from (whole time, fraction, prompt, output) rows, time 0 at the first."""
    if not rows:
        hint = f"; {len(skipped)} skipped, e.g. line {skipped[0][0]}: {skipped[0][1]}" if skipped else ""
        raise HcsimError(f"{label}: no requests (valid: at least one row with prompt and output tokens{hint})")
    w0, f0 = rows[0][0], rows[0][1]
    requests = [Request((w - w0) + (f - f0), p, o) for w, f, p, o in rows]
    return RequestTrace(requests, os.fspath(path), fmt, w0 + f0, skipped)


def _check_order(label: str, line: int, key: tuple[float, float], last: tuple[float, float] | None, col: str) -> None:
    if last is not None and key < last:
        raise HcsimError(f"{label} line {line}, column {col}: earlier than the row before "
                         "(valid: rows sorted by time, as the published traces are)")  # fmt: skip


def _data_rows(reader: Any, header: list[str], label: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, row) of each non-blank row, every one checked to have the header's columns."""
    for n, row in enumerate(reader, start=2):
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) < len(header):
            raise HcsimError(f"{label} line {n}: {len(row)} columns, the header has {len(header)} "
                             "(valid: one value per column)")  # fmt: skip
        yield n, row


def read_azure_llm(path: str | os.PathLike[str], *, progress: bool | None = None) -> RequestTrace:
    """An Azure LLM inference trace (2023 code/conv, 2024 week): ``TIMESTAMP, ContextTokens, GeneratedTokens``."""
    cols = _AZURE
    label, header, reader = _rows(path, "Azure LLM inference trace", cols)
    at = [header.index(c) for c in cols]
    rows: list[tuple[float, float, int, int]] = []
    skipped: list[tuple[int, str]] = []
    last = None
    bar = _Progress(None, "rows", progress)
    for n, row in _data_rows(reader, header, label):
        stamp = row[at[0]].strip()
        try:
            key = _azure_time(stamp)
        except ValueError:
            what = "missing" if not stamp else f"{_show(stamp)} is invalid"
            raise HcsimError(f"{label} line {n}, column TIMESTAMP: {what} "
                             "(valid: YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM])") from None  # fmt: skip
        _check_order(label, n, key, last, "TIMESTAMP")
        last = key
        prompt = _count(row[at[1]], label, n, "ContextTokens")
        output = _count(row[at[2]], label, n, "GeneratedTokens")
        if prompt < 1 or output < 1:
            skipped.append((n, "no context tokens" if prompt < 1 else "no generated tokens"))
        else:
            rows.append((float(key[0]), key[1], prompt, output))
        bar.at(len(rows))
    bar.close(len(rows))
    return _assemble(rows, skipped, os.fspath(path), "azure", label)


def read_burstgpt(
    path: str | os.PathLike[str],
    *,
    progress: bool | None = None,
    model: str | None = None,
    log_type: str | None = None,
) -> RequestTrace:
    """A BurstGPT trace: ``Timestamp`` (s), ``Request tokens``, ``Response tokens`` (other columns optional).

    ``model`` (``ChatGPT``, ``GPT-4``) and ``log_type`` (``Conversation log``, ``API log``)
    keep only the rows of that value. Rows with 0 response tokens are the trace's failed
    requests: skipped.
    """
    cols = _BURSTGPT
    label, header, reader = _rows(path, "BurstGPT trace", cols)
    at = [header.index(c) for c in cols]
    for c, v in (("Model", model), ("Log Type", log_type)):
        if v is not None and c not in header:
            raise HcsimError(f"{label}: no column {c!r} to select {v!r} by (valid: a BurstGPT file with it)")
    filters = [(header.index(c), v) for c, v in (("Model", model), ("Log Type", log_type)) if v is not None]
    rows: list[tuple[float, float, int, int]] = []
    skipped: list[tuple[int, str]] = []
    last = None
    bar = _Progress(None, "rows", progress)
    for n, row in _data_rows(reader, header, label):
        text = row[at[0]].strip()
        try:
            t = float(text)
        except ValueError:
            t = math.nan
        if not (math.isfinite(t) and t >= 0):
            what = "missing" if not text else f"{_show(text)} is invalid"
            raise HcsimError(f"{label} line {n}, column Timestamp: {what} (valid: seconds >= 0 from the first day)")
        key = (math.floor(t), t - math.floor(t))
        _check_order(label, n, key, last, "Timestamp")
        last = key
        prompt = _count(row[at[1]], label, n, "Request tokens")
        output = _count(row[at[2]], label, n, "Response tokens")
        if any(row[i].strip() != v for i, v in filters):
            continue
        if prompt < 1 or output < 1:
            skipped.append((n, "no request tokens" if prompt < 1 else "no response tokens (a failed request)"))
        else:
            rows.append((float(key[0]), key[1], prompt, output))
        bar.at(len(rows))
    bar.close(len(rows))
    return _assemble(rows, skipped, os.fspath(path), "burstgpt", label)


def _sniff(columns: tuple[str, ...]) -> Callable[[list[str]], int]:
    return lambda header: 2 if all(c in header for c in columns) else 0


_AZURE = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_BURSTGPT = ("Timestamp", "Request tokens", "Response tokens")
REQUEST_FORMATS.register("azure", RequestFormat("azure", read_azure_llm, _sniff(_AZURE), _AZURE))
REQUEST_FORMATS.register("burstgpt", RequestFormat("burstgpt", read_burstgpt, _sniff(_BURSTGPT), _BURSTGPT))


def guess_request_format(path: str | os.PathLike[str]) -> str:
    """The request-trace format of a file, from its header line."""
    start = _read_text(path, "request trace", head=65536)
    header = [h.strip() for h in next(csv.reader(io.StringIO(start.split("\n", 1)[0])), [])]
    best, score = None, 0
    for name, fmt in REQUEST_FORMATS.items():
        s = fmt.sniff(header)
        if s > score:
            best, score = name, s
    if best is None:
        known = "; ".join(f"{n}: {', '.join(f.columns)}" for n, f in REQUEST_FORMATS.items())
        raise HcsimError(f"{_label(path)}: cannot tell the request trace format from its header (valid: {known})")
    return best


def read_requests(
    path: str | os.PathLike[str], format: str | None = None, *, progress: bool | None = None, **options: object
) -> RequestTrace:
    """Read a request trace in any registered format (guessed from the header when ``format`` is None)."""
    name = guess_request_format(path) if format is None else str(format).lower()
    return REQUEST_FORMATS.lookup(name).read(path, progress=progress, **options)


def rescale(requests: list[Request], rate: float) -> list[Request]:
    """The requests with times scaled so their mean rate, (n - 1) / span, is ``rate``/s (order and lengths kept)."""
    if not (math.isfinite(rate) and rate > 0):
        raise HcsimError(f"--rate {rate!r} is invalid (valid: a finite rate > 0)")
    span = requests[-1].arrival - requests[0].arrival
    if len(requests) < 2 or span <= 0:
        raise HcsimError("--rate cannot rescale a trace whose requests all arrive at once "
                         "(valid: drop --rate to replay it as it is)")  # fmt: skip
    f = (len(requests) - 1) / (rate * span)
    return [Request(r.arrival * f, r.prompt, r.output) for r in requests]
