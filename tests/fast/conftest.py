"""Fixtures of the fast paths' tests: a wing whose twin classes are watched (or forced)."""

from __future__ import annotations

import itertools

import pytest

from hcsim.fast.ledger import LinkUsers
from hcsim.fast.system import FastPaths
from hcsim.fast.twins import Twins


class TwinLog:
    """What a watched run's twin classes did, read back from the file its SimGrid process wrote."""

    def __init__(self, path) -> None:
        self.path = path

    def _rows(self, what: str) -> list[list[str]]:
        if not self.path.exists():
            return []
        rows = [line.split() for line in self.path.read_text().splitlines()]
        return [row[1:] for row in rows if row[0] == what]

    def formed(self) -> list[tuple[float | None, list[int]]]:
        """(date, representatives after) each time classes formed (date None: as their group started)."""
        return [(None if r[0] == "None" else float(r[0]), [int(f) for f in r[1:]]) for r in self._rows("formed")]

    def broken(self) -> list[tuple[float, int]]:
        """(date, representatives before) each time a flow from outside broke a group's classes."""
        return [(float(r[0]), int(r[1])) for r in self._rows("broken")]


@pytest.fixture
def watched(tmp_path):
    """watched(settled=False, blind=False) -> (FastPaths subclass, TwinLog): pass the class as ``paths=``.

    ``settled``: every vertex passes for settled (classes form wherever their twins stand
    together, not only once other traffic is over); ``blind``: the twins are told that no
    other flow can cross the rings' links (so a flow that does breaks the classes).
    """
    counter = itertools.count()

    def make(*, settled: bool = False, blind: bool = False) -> tuple[type[FastPaths], TwinLog]:
        log = TwinLog(tmp_path / f"twins{next(counter)}.txt")

        def write(*fields) -> None:
            with open(log.path, "a") as f:
                f.write(" ".join(map(str, fields)) + "\n")

        class Watched(Twins):
            def form(self, group, now):
                before = len(group.dormant)
                super().form(group, now)
                if len(group.dormant) != before:
                    write("formed", repr(now), *group.reps)

            def break_(self, group, now):
                write("broken", repr(now), len(group.reps))
                super().break_(group, now)

            def settled(self, c):
                return True if settled else super().settled(c)

            def users(self):
                return LinkUsers({}, {}, {}) if blind else super().users()

        class Paths(FastPaths):
            twins_class = Watched

        return Paths, log

    return make
