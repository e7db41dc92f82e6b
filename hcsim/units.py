"""Human units ("128GBps", "200ns", "67TFLOPS", "80GiB") to SI floats.

The convention is SimGrid's own, so a value means the same thing in a topology and in
the platform XML it compiles to:

* decimal prefixes are powers of ten: k=1e3, M=1e6, G=1e9, T=1e12, P=1e15, E=1e18;
* binary prefixes are powers of two: Ki=2**10, Mi=2**20, Gi=2**30, Ti=2**40, Pi=2**50;
* ``B`` is a byte and ``b`` a bit, so "100Gbps" is 12.5e9 bytes/s and "128GBps" (or
  "128GB/s") is 128e9 bytes/s, while "128GiBps" is 128 * 2**30 bytes/s.

Datasheets mix conventions (NVIDIA's "80GB" of HBM is really 80 GiB); write what you
mean. Plain numbers are taken as already in the base unit (bytes, seconds, flop/s,
bytes/s; minutes for :func:`parse_minutes`). Every parser returns a float and raises :class:`~hcsim.errors.HcsimError`
with a one-line message naming ``what`` on bad input.
"""

from __future__ import annotations

import re

from hcsim.errors import HcsimError

__all__ = [
    "parse_bandwidth",
    "parse_bytes",
    "parse_flops",
    "parse_minutes",
    "parse_rate",
    "parse_time",
]

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}
# sub-second units are divisors (exact powers of ten), so "200ns" is exactly 200 / 1e9
_TIME_DIVISOR = {"s": 1.0, "ms": 1e3, "us": 1e6, "\u00b5s": 1e6, "ns": 1e9, "ps": 1e12}
_TIME_MULTIPLIER = {"min": 60.0, "h": 3600.0}
_PER_SECONDS = {"s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf(?:inity)?)\s*(.*?)\s*$")


def _split(value: object, what: str, example: str) -> tuple[float, str]:
    if isinstance(value, bool):
        raise HcsimError(f"{what}: {value!r} is not a quantity (valid: a number or a string like {example})")
    if isinstance(value, (int, float)):
        return float(value), ""
    if not isinstance(value, str):
        raise HcsimError(f"{what}: {value!r} is not a quantity (valid: a number or a string like {example})")
    match = _NUMBER.match(value)
    if not match:
        raise HcsimError(f"{what}: cannot parse {value!r} (valid: a number with a unit, e.g. {example})")
    return float(match.group(1)), match.group(2)


def _prefixed(value: object, what: str, example: str, bases: dict[str, float]) -> float:
    """Parse ``<number><prefix><base>`` where ``bases`` maps base-unit spellings to factors."""
    number, unit = _split(value, what, example)
    if unit == "":
        return number
    for base, base_factor in sorted(bases.items(), key=lambda kv: -len(kv[0])):
        if unit.endswith(base):
            prefix = unit[: len(unit) - len(base)]
            factor = _DECIMAL.get(prefix, _BINARY.get(prefix))
            if factor is not None:
                return number * factor * base_factor
    raise HcsimError(f"{what}: unknown unit in {value!r} (valid: a number with a unit, e.g. {example})")


def parse_bandwidth(value: object, what: str = "bandwidth") -> float:
    """Bytes per second from e.g. "128GBps", "12.5GB/s", "100Gbps", "64GiBps"."""
    if type(value) is float:  # already in SI units (the builders' case: 20k links at 4096 XPUs)
        return value
    return _prefixed(
        value, what, "'128GBps', '12.5GB/s' or '100Gbps'", {"Bps": 1.0, "B/s": 1.0, "bps": 0.125, "b/s": 0.125}
    )


def parse_bytes(value: object, what: str = "size") -> float:
    """Bytes from e.g. "80GiB", "32GB", "1MB", "512B", or "inf"."""
    if type(value) is float:  # already in SI units (the builders' case: 20k links at 4096 XPUs)
        return value
    return _prefixed(value, what, "'80GiB', '32GB' or 'inf'", {"B": 1.0, "bytes": 1.0, "b": 0.125})


def parse_flops(value: object, what: str = "FLOPS") -> float:
    """Floating-point operations per second from e.g. "67TFLOPS", "989.4Tf", "19.5 TFLOP/s"."""
    if type(value) is float:  # already in SI units (the builders' case: 20k links at 4096 XPUs)
        return value
    return _prefixed(
        value,
        what,
        "'67TFLOPS' or '989.4Tf'",
        {"FLOPS": 1.0, "FLOP/s": 1.0, "flops": 1.0, "Flops": 1.0, "flop/s": 1.0, "f": 1.0},
    )


def parse_time(value: object, what: str = "latency") -> float:
    """Seconds from e.g. "200ns", "5us", "1.5ms", "2s"."""
    if type(value) is float:  # already in SI units (the builders' case: 20k links at 4096 XPUs)
        return value
    number, unit = _split(value, what, "'200ns', '5us' or '1ms'")
    if unit == "":
        return number
    if unit in _TIME_DIVISOR:
        return number / _TIME_DIVISOR[unit]
    if unit in _TIME_MULTIPLIER:
        return number * _TIME_MULTIPLIER[unit]
    valid = ", ".join([*_TIME_DIVISOR, *_TIME_MULTIPLIER])
    raise HcsimError(f"{what}: unknown time unit in {value!r} (valid units: {valid})")


def parse_minutes(value: object, what: str = "duration") -> float:
    """Minutes from e.g. "150" (a bare number is minutes), "2.5h", "90s", "10min".

    For the front ends whose clock is in minutes (queue selection); the units are
    those of :func:`parse_time`.
    """
    number, unit = _split(value, what, "'150' (minutes), '2.5h' or '90s'")
    if unit == "":
        return number
    if unit in _TIME_DIVISOR:
        return number / _TIME_DIVISOR[unit] / 60.0
    if unit in _TIME_MULTIPLIER:
        return number * _TIME_MULTIPLIER[unit] / 60.0
    valid = ", ".join([*_TIME_DIVISOR, *_TIME_MULTIPLIER])
    raise HcsimError(f"{what}: unknown time unit in {value!r} (valid units: {valid}; a bare number is minutes)")


def parse_rate(value: object, what: str = "rate", per: str = "s", *, positive: bool = True) -> float:
    """Events per ``per`` (``"s"`` or ``"min"``) from e.g. ``"6000/s"``, ``"0.1/min"``, ``"6/h"`` or a bare number.

    A bare number is already per ``per``. With ``positive`` the result must be a finite
    number > 0; without, the range is left to the caller (the commands check it with
    their own message).
    """
    example = "'6000/s', '0.1/min' or '6/h'"
    number, unit = _split(value, what, example)
    unit = unit.replace(" ", "")
    if unit:
        seconds = _PER_SECONDS.get(unit[1:]) if unit.startswith("/") else None
        if seconds is None:
            raise HcsimError(f"{what}: unknown rate unit in {value!r} (valid: /s, /min or /h, e.g. {example})")
        number = number / seconds * _PER_SECONDS[per]
    if positive and not (number > 0 and number < float("inf")):
        raise HcsimError(f"{what} {value!r} is invalid (valid: a rate > 0, e.g. {example})")
    return number
