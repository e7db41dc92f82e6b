"""argparse helpers shared by the commands: rates with units, old spellings of renamed flags.

* A **rate** takes a unit, ``/s``, ``/min`` or ``/h`` (``--rate 6000/s``, ``--rate
  0.1/min``); a bare number is per the command's own clock unit (seconds for serving,
  minutes for queue selection), as a bare duration is (:func:`hcsim.units.parse_rate`).
* A renamed flag keeps its **old spelling** as a working alias that prints a one-line
  note on stderr (:class:`DeprecatedAlias`), so scripts keep running while users learn
  the new name. Parallel processes are ``-j/--workers`` everywhere; a count of jobs
  or requests to simulate is named after what is counted.

Only the standard library and :mod:`hcsim.units`: the parsers use it (see :mod:`hcsim.cli.main`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from hcsim.errors import HcsimError
from hcsim.units import parse_rate

__all__ = ["DeprecatedAlias", "int_or_text", "rate_list_type", "rate_type"]


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


def rate_list_type(what: str, per: str) -> Callable[[str], float | tuple[float, ...]]:
    """:func:`rate_type`, or a tuple of rates for a list (``5,10,20/s``: a unit on the last applies to all).

    A single rate is the float :func:`rate_type` gives; the command refuses a list where it
    takes one rate.
    """
    one = rate_type(what, per)

    def convert(text: str) -> float | tuple[float, ...]:
        parts = [p.strip() for p in str(text).split(",")]
        if len(parts) == 1:
            return one(parts[0])
        unit = parts[-1][parts[-1].find("/") :] if "/" in parts[-1] else ""
        return tuple(one(p if "/" in p or not unit else p + unit) for p in parts)

    convert.__name__ = "rate"
    return convert


def int_or_text(text: str) -> int | str:
    """An integer flag that may also take a text form (a distribution): the int when it is one."""
    try:
        return int(text)
    except ValueError:
        return text


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
