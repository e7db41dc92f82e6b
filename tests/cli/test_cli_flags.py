"""One flag scheme across commands: rates with units, -j/--workers, counts named for what they count.

Old spellings still work, with a one-line note on stderr; progress bars go to stderr
only on a terminal or with --progress.
"""

from __future__ import annotations

import argparse

import pytest
from clitools import run

from hcsim.cli import make_parser
from hcsim.errors import HcsimError
from hcsim.units import parse_rate


def test_parse_rate_units_and_bare_numbers():
    assert parse_rate("6000/s") == 6000.0
    assert parse_rate("360000/min") == pytest.approx(6000.0, rel=1e-15)
    assert parse_rate("6/h", per="min") == pytest.approx(0.1, rel=1e-15)
    assert parse_rate("0.1", per="min") == 0.1  # a bare number is per the command's clock unit
    assert parse_rate(2.5) == 2.5
    for bad in ("6000/day", "fast", "0/s", "-1", "inf", "nan/s"):
        with pytest.raises(HcsimError, match="--rate"):
            parse_rate(bad, "--rate")


def _serve(*extra):
    return run("serve", "--gpu", "v100", "--max-batch", 64, "--seed", 1, *extra)


def test_serve_rate_with_a_unit_is_the_same_run():
    per_s = _serve("--rate", 1500, "--requests", 20000)
    per_min = _serve("--rate", "90000/min", "--requests", 20000)
    assert per_s.returncode == 0 and per_min.returncode == 0, per_s.stderr + per_min.stderr
    assert per_s.stdout == per_min.stdout and "20000 requests" in per_s.stdout


def test_old_spellings_still_work_with_a_note():
    new = _serve("--rho", 0.5, "--requests", 20000)
    old = _serve("--rho", 0.5, "--jobs", 20000)
    assert old.returncode == 0, old.stderr
    assert old.stdout == new.stdout and new.stderr == ""
    assert old.stderr.strip().splitlines() == ["hcsim: note: --jobs is deprecated, use --requests"]


def test_sweep_and_queue_selection_take_j_workers(capsys):
    parser = make_parser()
    assert parser.parse_args(["sweep", "s.yaml", "-j", "3"]).workers == 3
    assert parser.parse_args(["sweep", "s.yaml", "--workers", "3"]).workers == 3
    assert parser.parse_args(["sweep", "s.yaml"]).workers is None
    assert capsys.readouterr().err == ""
    assert parser.parse_args(["sweep", "s.yaml", "--jobs", "4"]).workers == 4
    assert "--jobs is deprecated, use -j/--workers" in capsys.readouterr().err
    assert parser.parse_args(["queues", "-j", "2"]).workers == 2
    assert parser.parse_args(["queues", "--rate", "6/h"]).rate == pytest.approx(0.1, rel=1e-15)
    assert parser.parse_args(["queues", "--rate", "0.1"]).rate == 0.1


def test_every_serve_and_cluster_flag_with_a_quantity_names_its_unit():
    """The help of each numeric flag says its unit or that it is a count (checked on the parser itself)."""
    parser = make_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    units = ("s", "second", "minute", "joule", "count", "request", "node", "GPU", "dimensionless", "seed")
    for name in ("serve", "cluster"):
        for action in sub.choices[name]._actions:
            if action.help == argparse.SUPPRESS:
                continue
            if action.help and action.type in (int, float) or action.dest in ("rate",):
                assert any(u in action.help for u in units), (name, action.option_strings, action.help)


def test_serve_progress_only_when_asked_or_on_a_terminal():
    quiet = _serve("--rho", 0.5, "--requests", 5000)
    shown = _serve("--rho", 0.5, "--requests", 5000, "--progress")
    assert quiet.stderr == ""  # captured: not a terminal
    assert "serving" in shown.stderr and "5000/5000" in shown.stderr
    assert shown.stdout == quiet.stdout
