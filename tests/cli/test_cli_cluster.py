"""hcsim cluster and hcsim queues as a user runs them."""

import json
import os

from clitools import assert_one_line_error, run

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
HELIOS = os.path.join(DATA, "helios_cluster_log.csv")


def test_cluster_on_a_helios_trace_writes_every_output(tmp_path):
    out = tmp_path / "out"
    r = run("cluster", "--trace", HELIOS, "--policy", "mlfq", "--placement", "free-gpu", "--migration",
            "--xpus", 32, "--snapshot", 100, "--out", out)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "completed" in r.stdout and "JCT mean" in r.stdout
    for name in ("jobs.csv", "summary.json", "series.csv", "series.png", "trace.json", "gpus_100.png"):
        assert (out / name).exists(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"] == "mlfq" and summary["completed"] + summary["rejected"] == summary["jobs"]


def test_cluster_bad_input_is_one_line(tmp_path):
    assert_one_line_error(run("cluster", "--trace", HELIOS, "--policy", "lottery"), "policy 'lottery' is unknown")
    assert_one_line_error(run("cluster", "--trace", HELIOS, "--placement", "worst"), "placement 'worst' is unknown")
    assert_one_line_error(run("cluster", "--trace", tmp_path / "none.swf"), "does not exist")
    bad = tmp_path / "bad.swf"
    row = "{} {} -1 {} 4 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n"
    bad.write_text(row.format(1, 0, 10) + row.format(2, 5, "ten"))
    assert_one_line_error(run("cluster", "--trace", bad), "line 2")
    assert_one_line_error(run("cluster", "--trace", HELIOS, "--xpus", 12), "--xpus 12 is invalid")
    assert not (tmp_path / "out").exists()


def test_queues_command_and_its_errors():
    r = run("queues", "--method", "mql", "--set", "1d", "--replications", 2)
    assert r.returncode == 0, r.stderr
    assert "mql" in r.stdout
    assert_one_line_error(run("queues", "--set", "4a"), "set '4a' is unknown")
    assert_one_line_error(run("queues", "--method", "fastest"), "fastest")


def test_cluster_removes_its_new_out_directory_when_writing_fails(tmp_path, monkeypatch, capsys):
    """A failure while writing the outputs leaves neither files written before it nor the directory it created."""
    from hcsim.cli import cluster as outputs  # the command's own binding of write_outputs (imported at its top)
    from hcsim.cli import main
    from hcsim.errors import HcsimError

    def write_then_fail(result, jobs, directory, snapshots=None, **_):
        os.makedirs(directory, exist_ok=True)
        (tmp_path / "new" / "jobs.csv").write_text("partial")
        raise HcsimError("the plot cannot be drawn")

    monkeypatch.setattr(outputs, "write_outputs", write_then_fail)
    assert main(["cluster", "--trace", HELIOS, "--xpus", "32", "--out", str(tmp_path / "new")]) == 2
    assert "the plot cannot be drawn" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "mine.txt").write_text("a file the user had")

    def write_then_crash(result, jobs, directory, snapshots=None, **_):
        (kept / "jobs.csv").write_text("x")
        raise ZeroDivisionError

    monkeypatch.setattr(outputs, "write_outputs", write_then_crash)
    try:
        main(["cluster", "--trace", HELIOS, "--xpus", "32", "--out", str(kept)])
    except ZeroDivisionError:
        pass
    assert sorted(p.name for p in kept.iterdir()) == ["mine.txt"]
