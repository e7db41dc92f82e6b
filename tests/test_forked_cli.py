"""The forked command of tests/forked_cli.py (what clitools.run and the bad-input suite use) against a fresh one.

A command that works, writes a file and prints JSON gives the same status, output and
file bytes both ways; a child past its timeout is killed and the server goes on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from forked_cli import ForkedCli


@pytest.fixture(scope="module")
def both():
    forked, fresh = ForkedCli(), ForkedCli()
    forked.fresh, fresh.fresh = False, True
    yield forked, fresh
    forked.close()


def test_a_working_command_ends_the_same_both_ways(both, tmp_path: Path):
    answers = []
    for runner, where in zip(both, (tmp_path / "forked", tmp_path / "fresh"), strict=True):
        where.mkdir()
        steps = [
            ["platform", "build", "ring", "--xpus", "4", "-o", "p.xml"],
            ["run", "--platform", "p.xml", "--workload", "allreduce", "--bytes", "1MiB", "--iterations", "2", "--json"],
        ]
        out = [runner.run(argv, cwd=str(where), timeout=300) for argv in steps]
        answers.append(([(r.returncode, r.stdout, r.stderr) for r in out], (where / "p.xml").read_bytes()))
    assert answers[0] == answers[1]
    assert all(code == 0 for code, _, _ in answers[0][0]) and '"makespan' in answers[0][0][1][1]


def test_a_child_past_its_timeout_is_killed_and_the_server_goes_on(both, tmp_path: Path):
    forked, _ = both
    late = forked.run(["run", "--system", "cxl", "--xpus", "8", "--workload", "llama2-13b", "--iterations", "50"],
                      cwd=str(tmp_path), timeout=0.01)  # fmt: skip
    assert late.timed_out and late.returncode == -9
    again = forked.run(["run", "--system", "cxl", "--xpus", "3"], cwd=str(tmp_path), timeout=120)
    assert not again.timed_out and again.returncode == 2 and again.stderr.startswith("hcsim: error: ")
