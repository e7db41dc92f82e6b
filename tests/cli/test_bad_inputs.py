"""The bad-input suite: every case in ``tests/cli/bad_inputs/cases_*.py`` through the real command.

Each case must end with exit status 2 and exactly one stderr line ``hcsim: error: ...``
matching its expectation, no traceback anywhere, no file left in its directory beyond
its inputs, within its time bound (a hang fails the case).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import shlex
import subprocess
import sys
from pathlib import Path

import bad_inputs
import pytest
from bad_inputs import Case

CLI = [sys.executable, "-c", "import sys; from hcsim.cli import main; sys.exit(main())"]


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


@pytest.mark.parametrize("bad", [pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.slow else []) for c in CASES])
def test_bad_input(bad: Case, tmp_path: Path) -> None:
    for name, content in bad.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    before = _files(tmp_path)
    argv = shlex.split(bad.argv.format(tmp=tmp_path))
    try:
        proc = subprocess.run(
            [*CLI, *argv], capture_output=True, text=True, cwd=tmp_path, timeout=bad.timeout, input=bad.stdin
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung: no answer within {bad.timeout} s")
    lines = proc.stderr.splitlines()
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("hcsim: error: "), proc.stderr
    assert re.search(bad.match, lines[0], re.IGNORECASE), lines[0]
    assert _files(tmp_path) == before, sorted(_files(tmp_path) - before)


def test_the_suite_covers_every_entry_point() -> None:
    """Issue 13: at least 80 cases, across every command and file format."""
    assert len(CASES) >= 80, len(CASES)
    commands = {word for c in CASES for word in shlex.split(c.argv)[:1]}
    for command in ("platform", "run", "collective", "sweep", "serve", "cluster", "queue-selection", "demo"):
        assert command in commands or (command == "queue-selection" and "queues" in commands), command
