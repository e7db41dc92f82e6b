"""The bad-input suite: every case in ``tests/cli/bad_inputs/cases_*.py`` through the real command.

Each case must end with exit status 2 and exactly one stderr line ``hcsim: error: ...``
matching its expectation, no traceback anywhere, no file left in its directory beyond
its inputs, within its time bound (a hang fails the case). Each runs in a process of its
own forked from an interpreter that has imported the command (:mod:`forked_cli`: the
imports were most of a case's cost); one case per subcommand also runs in a fresh
interpreter and must give the same status and output, and ``HCSIM_TEST_FRESH_CLI=1``
runs them all that way.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import shlex
from pathlib import Path

import bad_inputs
import pytest
from bad_inputs import Case
from forked_cli import ForkedCli


def _all_cases() -> list[Case]:
    cases: list[Case] = []
    for info in sorted(pkgutil.iter_modules(bad_inputs.__path__), key=lambda m: m.name):
        if info.name.startswith("cases_"):
            cases.extend(importlib.import_module(f"bad_inputs.{info.name}").CASES)
    ids = [c.id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, f"duplicate case ids: {duplicates}"
    return cases


CASES = _all_cases()


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture(scope="module")
def cli():
    forked = ForkedCli()
    yield forked
    forked.close()


def _write_inputs(bad: Case, tmp_path: Path) -> None:
    for name, content in bad.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.mark.parametrize("bad", [pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.slow else []) for c in CASES])
def test_bad_input(bad: Case, tmp_path: Path, cli: ForkedCli) -> None:
    _write_inputs(bad, tmp_path)
    before = _files(tmp_path)
    argv = shlex.split(bad.argv.format(tmp=tmp_path))
    proc = cli.run(argv, cwd=str(tmp_path), timeout=bad.timeout, stdin=bad.stdin)
    if proc.timed_out:
        pytest.fail(f"hung: no answer within {bad.timeout} s")
    lines = proc.stderr.splitlines()
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("hcsim: error: "), proc.stderr
    assert re.search(bad.match, lines[0], re.IGNORECASE), lines[0]
    assert _files(tmp_path) == before, sorted(_files(tmp_path) - before)


def _first_word(c: Case) -> str:
    return (shlex.split(c.argv) or [""])[0]


# the first case of each subcommand (queue-selection's may be spelled queues)
SAMPLE = [c for i, c in enumerate(CASES) if _first_word(c) not in {_first_word(d) for d in CASES[:i]}]


@pytest.mark.parametrize("bad", [pytest.param(c, id=c.id) for c in SAMPLE])
def test_a_forked_case_ends_as_in_a_fresh_interpreter(bad: Case, tmp_path: Path, cli: ForkedCli) -> None:
    """The shortcut is exact: same exit status, stdout and stderr (paths aside) as ``python -c``."""
    fresh = ForkedCli()
    fresh.fresh = True
    answers = []
    for way, runner in (("forked", cli), ("fresh", fresh)):
        where = tmp_path / way
        where.mkdir()
        _write_inputs(bad, where)
        proc = runner.run(shlex.split(bad.argv.format(tmp=where)), cwd=str(where), timeout=bad.timeout, stdin=bad.stdin)
        answers.append(
            (proc.returncode, proc.timed_out, *(t.replace(str(where), "{tmp}") for t in (proc.stdout, proc.stderr)))
        )
    assert answers[0] == answers[1]
    assert answers[0][0] == 2


def test_the_sample_holds_every_command() -> None:
    assert {_first_word(c) for c in SAMPLE} >= {"platform", "run", "collective", "sweep", "serve", "cluster", "demo"}


def test_the_suite_covers_every_entry_point() -> None:
    """Issue 13: at least 80 cases, across every command and file format."""
    assert len(CASES) >= 80, len(CASES)
    commands = {word for c in CASES for word in shlex.split(c.argv)[:1]}
    for command in ("platform", "run", "collective", "sweep", "serve", "cluster", "queue-selection", "demo"):
        assert command in commands or (command == "queue-selection" and "queues" in commands), command
