"""The command layout: one module per command, imported only when it runs; new names beside the old; units."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from clitools import assert_one_line_error, run

from hcsim.cli import make_parser
from hcsim.errors import HcsimError

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
HELIOS = os.path.join(DATA, "helios_cluster_log.csv")


def test_help_lists_every_command_without_loading_the_simulator():
    code = (
        "import sys\n"
        "from hcsim.cli import COMMANDS, make_parser\n"
        "text = make_parser().format_help()\n"
        "heavy = sorted(m for m in ('numpy', 'networkx', 'simgrid', 'matplotlib') if m in sys.modules)\n"
        "print(heavy, text)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("[]"), r.stdout  # nothing heavy imported to answer --help
    for name in ("platform", "run", "sweep", "serve (queue)", "cluster", "queue-selection (queues)", "demo"):
        assert name in r.stdout, name


@pytest.mark.parametrize(
    "command", ["run", "sweep", "serve", "queue", "cluster", "queue-selection", "queues", "demo", "platform"]
)
def test_help_of_every_command(command):
    r = run(command, "--help")
    assert r.returncode == 0 and "usage: hcsim" in r.stdout, r.stderr


def test_every_command_names_a_handler_that_loads_normally():
    from hcsim.cli import COMMANDS
    from hcsim.cli.main import load_handler

    parser = make_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert [c.name for c in COMMANDS] == [n for n in sub.choices if n not in ("queue", "queues")]
    for command in COMMANDS:
        assert callable(load_handler(command.handler)), command
        assert sub.choices[command.name].get_default("handler") == command.handler


def test_the_parsers_copies_of_the_librarys_lists_agree():
    """The parsers keep copies of a few lists so that --help loads no library module: each is checked here."""
    from hcsim.calibration.schema import CROSS_ENTROPY, FP8_RECIPES
    from hcsim.cli import parsers
    from hcsim.platform.simgrid_files import NETWORK_MODELS, XPUS_FROM
    from hcsim.sweep.collective_bench import BENCH_KINDS
    from hcsim.workload.catalog import WORKLOADS

    assert parsers.WORKLOADS == WORKLOADS
    assert parsers.XPUS_FROM == XPUS_FROM
    assert parsers.NETWORK_MODELS == NETWORK_MODELS
    assert parsers.KINDS == BENCH_KINDS
    assert parsers.CROSS_ENTROPY == CROSS_ENTROPY
    assert parsers.FP8_RECIPES == FP8_RECIPES


def test_a_usage_error_loads_nothing_heavy():
    code = (
        "import sys\n"
        "from hcsim.cli import main\n"
        "try:\n"
        "    main(['run', '--no-such-flag'])\n"
        "except SystemExit as exc:\n"
        "    print(exc.code, sorted(m for m in ('numpy', 'networkx', 'simgrid', 'hcsim.engine') if m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "2 []", r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [
        "hcsim: error: unrecognized arguments: --no-such-flag (see 'hcsim --help')"
    ], r.stderr


def test_a_command_loads_its_module_only_when_it_runs():
    code = (
        "import sys\n"
        "from hcsim.cli import main\n"
        "status = main(['sweep', 'missing.yaml'])\n"
        "print(status, sorted(m for m in sys.modules if m.startswith('hcsim.cli.')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "2" and "hcsim: error:" in r.stderr
    assert "'hcsim.cli.sweep'" in r.stdout and "'hcsim.cli.run'" not in r.stdout, r.stdout


# ------------------------------------------------------------------ serve (was: queue)
def test_serve_with_units_equals_queue_with_seconds():
    base = ["--rho", "0.5", "--jobs", "20000", "--seed", "1", "--beta", "0.5", "--c0", "2"]
    new = run("serve", "--alpha", "2ms", "--tau0", "5ms", *base)
    old = run("queue", "--alpha", "0.002", "--tau0", "0.005", *base)
    assert new.returncode == 0 and old.returncode == 0, new.stderr + old.stderr
    assert new.stdout == old.stdout
    assert "exact E[W]" in new.stdout and "eta" in new.stdout


def test_serve_max_delay():
    r = run("serve", "--alpha", "2ms", "--tau0", "5ms", "--rho", "0.5", "--jobs", "20000", "--max-delay", "1ms")
    assert r.returncode == 0, r.stderr
    assert "simulated E[W]" in r.stdout and "exact E[W]" not in r.stdout  # the chain has no max delay


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--alpha", "2xs", "--tau0", "5ms"], ["--alpha", "'2xs'", "valid units"]),
        (["--alpha", "0", "--tau0", "5ms"], ["--alpha '0' is invalid", "> 0"]),
        (["--alpha", "2ms", "--tau0", "5ms", "--max-delay=-1ms"], ["--max-delay '-1ms'", ">= 0"]),
    ],
)
def test_serve_bad_durations_are_one_line(args, needles):
    assert_one_line_error(run("serve", *args, "--rho", "0.5"), *needles)


def test_stability_and_efficiency_are_library_functions():
    from hcsim.frontends.serving.batching import ServeResult, check_stable

    check_stable(500.0, 1e-3, 5e-3)
    with pytest.raises(HcsimError, match="M / \\(alpha M \\+ tau0\\)"):
        check_stable(200.0, 1e-3, 5e-3, max_batch=1)  # one job per batch: at most 1 / 6 ms
    sizes = np.array([1, 3])
    r = ServeResult(*(np.zeros(2) for _ in range(5)), sizes, np.ones(2), ["x"])
    assert r.jobs_per_joule(0.5, 2.0) == pytest.approx(4 / 6)
    assert r.jobs_per_joule(0.5, 2.0) == pytest.approx(1 / r.energy_per_job(0.5, 2.0))


# ------------------------------------------------------------------ queue-selection (was: queues)
def test_queue_selection_with_units_equals_queues_in_minutes():
    base = ["--method", "mql,offset", "--set", "1d", "--replications", "2"]
    new = run("queue-selection", *base, "--period", "168h", "--offset", "2.5h")
    old = run("queues", *base, "--period", "10080", "--offset", "150")
    assert new.returncode == 0 and old.returncode == 0, new.stderr + old.stderr
    assert new.stdout.splitlines()[:-1] == old.stdout.splitlines()[:-1]  # the last line is the wall time
    assert "offset(150)" in new.stdout


def test_queue_selection_bad_durations_are_one_line():
    assert_one_line_error(run("queue-selection", "--period", "3x"), "--period", "a bare number is minutes")
    assert_one_line_error(run("queue-selection", "--method", "offset", "--offset", "0"), "--offset 0", "minutes > 0")


def test_parse_minutes():
    from hcsim.units import parse_minutes

    assert [parse_minutes(v) for v in ("150", 150, "2.5h", "90s", "10min")] == [150.0, 150.0, 150.0, 1.5, 10.0]
    with pytest.raises(HcsimError, match="--period.*minutes"):
        parse_minutes("3 weeks", "--period")


# ------------------------------------------------------------------ cluster
def test_cluster_durations_take_units(tmp_path):
    base = ["--trace", HELIOS, "--policy", "mlfq", "--xpus", 32]
    secs = run("cluster", *base, "--quanta", "3600,7200,18000", "--overhead", 8, "--snapshot", 120, "--out", tmp_path)
    units = run("cluster", *base, "--quanta", "1h,2h,5h", "--overhead", "8s", "--snapshot", "2min")
    assert secs.returncode == 0 and units.returncode == 0, secs.stderr + units.stderr
    assert units.stdout.splitlines()[:-1] == secs.stdout.splitlines()[:-2]  # wall time; 'wrote ...'
    assert (tmp_path / "gpus_120.png").exists()
    assert json.loads((tmp_path / "summary.json").read_text())["policy"] == "mlfq"


def test_cluster_bad_options_name_the_flag():
    assert_one_line_error(run("cluster", "--trace", HELIOS, "--quanta", "1h,x"), "--quanta '1h,x' is invalid")
    assert_one_line_error(run("cluster", "--trace", HELIOS, "--slice", "fast"), "--slice", "'fast'")
    assert_one_line_error(run("cluster", "--trace", HELIOS, "--partitions", "a=x"), "--partitions item 'a=x'")


def test_cluster_option_parsers_are_library_functions():
    from hcsim.frontends.cluster import default_cluster_size, parse_partitions, parse_quanta

    assert parse_partitions("train=96, dev=32") == {"train": 96, "dev": 32}
    assert parse_quanta("3250,2h") == (3250.0, 7200.0)
    assert [default_cluster_size(g) for g in ([1], [8], [9, 2], [64])] == [8, 8, 16, 64]
    with pytest.raises(HcsimError, match="partitions item 'dev'"):
        parse_partitions("train=96,dev")
    with pytest.raises(HcsimError, match="quanta 'a,b'"):
        parse_quanta("a,b")


# ------------------------------------------------------------------ run
def test_workload_by_name():
    from hcsim.workload.catalog import workload_by_name

    ranks = ["a", "b", "c", "d"]
    w = workload_by_name("coherent-allreduce", ranks, 16, size="16MiB")
    node = w.nodes["allreduce"]
    assert node["bytes"] == 16 * 2**20 and node["algorithm"] == "coherent_ring" and node["group"] == 16
    assert set(workload_by_name("fig3", ranks).graph["ranks"]) <= set(ranks[:2])
    with pytest.raises(HcsimError, match="--bytes '-1B' is invalid"):
        workload_by_name("allreduce", ranks, size="-1B", what="--bytes")
    with pytest.raises(HcsimError, match="workload 'bert' is unknown"):
        workload_by_name("bert", ranks)


def test_main_in_process(capsys, tmp_path):
    from hcsim.cli import main

    assert main(["cluster", "--trace", str(tmp_path / "none.swf")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hcsim: error: --trace") and err.count("\n") == 1
