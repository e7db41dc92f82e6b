"""Command-line flag conventions shared by the commands: rates with units, deprecated spellings.

* A **rate** takes a unit, ``/s``, ``/min`` or ``/h`` (``--rate 6000/s``, ``--rate
  0.1/min``); a bare number is per the command's own clock unit (seconds for serving,
  minutes for queue selection), as a bare duration is.
* A renamed flag keeps its **old spelling** as a working alias that prints a one-line
  note on stderr (:class:`DeprecatedAlias`), so scripts keep running while users learn
  the new name. Parallel processes are ``-j/--workers`` everywhere; a count of jobs
  or requests to simulate is named after what is counted.

Only the standard library and :mod:`hcsim.units` at the top: the ``hcsim`` command loads
the commands modules that use this for ``--help``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from hcsim.errors import HcsimError
from hcsim.units import _split

__all__ = ["DeprecatedAlias", "parse_rate", "rate_type"]

_PER_SECONDS = {"s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}


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


def rate_type(what: str, per: str) -> Callable[[str], float]:
    """An argparse ``type`` parsing a rate per ``per``; a bad unit is argparse's one-line usage error.

    The value's range is checked by the command, as it was when the flag took a float.
    """

    def convert(text: str) -> float:
        try:
            return parse_rate(text, what, per, positive=False)
        except HcsimError as e:  # argparse names the flag already
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"{what}: ").removeprefix(f"{what} ")) from None

    convert.__name__ = "rate"
    return convert


class DeprecatedAlias(argparse.Action):
    """An old flag spelling that still works: it stores into the new flag's ``dest`` and notes the new name.

    ``parser.add_argument("--jobs", dest="requests", action=DeprecatedAlias, new="--requests", type=int)``
    """

    def __init__(self, option_strings: list[str], dest: str, new: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", f"deprecated spelling of {new}")
        kwargs["default"] = argparse.SUPPRESS  # the new flag's default stands
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None):
        print(f"hcsim: note: {option} is deprecated, use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)
