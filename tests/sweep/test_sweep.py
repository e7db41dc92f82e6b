"""Sweeps: resumable, fault tolerant, on local processes and on Dask."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from clitools import CLI, assert_one_line_error, run

from hcsim.errors import HcsimError
from hcsim.sweep import SweepSpec, read_results, run_sweep

SYNTH = "hcsim.sweep.experiments:synthetic"


def write_spec(tmp_path, **spec):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_local_sweep_records_failures_and_resumes(tmp_path):
    out = str(tmp_path / "r.jsonl")
    spec = SweepSpec(SYNTH, grid={"value": [1, 2, 3, 4]}, points=[{"value": 9, "fail": True}], fixed={"seconds": 0})
    rep = run_sweep(spec, out=out, jobs=2)
    assert (rep.ok, rep.failed, rep.skipped) == (4, 1, 0)
    rows = read_results(out)
    failed = [r for r in rows if r["status"] == "error"]
    assert len(failed) == 1 and "synthetic failure (value 9)" in failed[0]["error"]
    assert sorted(r["result"]["value"] for r in rows if r["status"] == "ok") == [1, 2, 3, 4]
    before = [r for r in read_results(out) if r["status"] == "ok"]
    rep = run_sweep(spec, out=out, jobs=2)  # resume: only the failed point runs again
    assert (rep.skipped, rep.ok, rep.failed) == (4, 0, 1)
    assert [r for r in read_results(out) if r["status"] == "ok"] == before


def test_each_point_has_its_own_process_and_a_timeout(tmp_path):
    out = str(tmp_path / "r.jsonl")
    spec = SweepSpec(SYNTH, grid={"value": [1, 2]}, points=[{"value": 3, "seconds": 30}], timeout=2.0)
    rep = run_sweep(spec, out=out, jobs=3)
    rows = {r["params"]["value"]: r for r in read_results(out)}
    assert rows[3]["status"] == "timeout" and rep.failed == 1
    assert rows[1]["result"]["pid"] != rows[2]["result"]["pid"] != os.getpid()


def test_a_line_cut_short_by_a_crash_is_skipped_and_kept(tmp_path):
    out = tmp_path / "r.jsonl"
    spec = SweepSpec(SYNTH, grid={"value": [1, 2]})
    run_sweep(spec, out=str(out), jobs=1)
    first = out.read_text()
    out.write_text(first + '{"id": "trunc')  # the previous run died mid-write
    rep = run_sweep(spec, out=str(out), jobs=1)
    assert rep.skipped == 2 and out.read_text().startswith(first)


def test_dask_sweep_survives_a_killed_worker_and_resumes(tmp_path):
    from distributed import Client, LocalCluster

    spec = write_spec(tmp_path, function=SYNTH, fixed={"seconds": 1.0}, grid={"value": list(range(12))})
    out = tmp_path / "r.jsonl"
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        args = [
            *CLI,
            "sweep",
            str(spec),
            "--executor",
            "dask",
            "--scheduler",
            cluster.scheduler_address,
            "--out",
            str(out),
        ]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while (not out.exists() or out.read_text().count("\n") < 2) and time.time() < deadline:
            time.sleep(0.05)
        rows_at_kill = out.read_text().count("\n")
        victim = sorted(client.run(os.getpid).values())[0]
        os.kill(victim, signal.SIGKILL)  # a worker dies mid-sweep, with a point running on it
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert rows_at_kill < 12
        assert len(rows) == 12 and len({r["id"] for r in rows}) == 12
        assert all(r["status"] == "ok" for r in rows)
        again = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0 and "12 already done, 0 ok" in again.stdout
        assert out.read_text().count("\n") == 12  # nothing recomputed


def test_local_cluster_started_for_the_user(tmp_path):
    spec = SweepSpec(SYNTH, grid={"value": [1, 2, 3]})
    rep = run_sweep(spec, out=str(tmp_path / "r.jsonl"), executor="dask", jobs=2)
    assert rep.ok == 3


def test_real_simulation_points(tmp_path):
    spec = SweepSpec(
        "hcsim.sweep.experiments:allreduce",
        fixed={"system": "ring", "xpus": 4, "nbytes": 4_000_000},
        grid={"algorithm": ["ring", "coherent_ring"]},
    )
    run_sweep(spec, out=str(tmp_path / "r.jsonl"), jobs=2)
    t = {r["params"]["algorithm"]: r["result"]["iteration_s"] for r in read_results(tmp_path / "r.jsonl")}
    # default ring: 128 GB/s, 1 us; 2(N-1) vs N-1 steps of S/N
    step = 1e-6 + 1e6 / 128e9
    assert t["ring"] == pytest.approx(6 * step, rel=1e-9) and t["coherent_ring"] == pytest.approx(3 * step, rel=1e-9)


@pytest.mark.parametrize(
    "spec, needles",
    [
        ({"function": SYNTH, "grid": {"valu": [1]}}, ["parameter 'valu' is not accepted", "valid: seconds, value"]),
        ({"function": SYNTH, "grid": {"value": []}}, ["grid parameter 'value' has no values"]),
        ({"function": SYNTH}, ["the sweep has no points"]),
        ({"function": "nowhere:fn", "grid": {"a": [1]}}, ["cannot be imported"]),
        ({"function": SYNTH, "grid": {"value": [1]}, "colour": "red"}, ["unknown key 'colour'"]),
    ],
)
def test_bad_specs(tmp_path, spec, needles):
    assert_one_line_error(run("sweep", write_spec(tmp_path, **spec), "--out", tmp_path / "r.jsonl"), *needles)
    assert not (tmp_path / "r.jsonl").exists()


def test_unwritable_results_and_unreachable_scheduler_leave_results_untouched(tmp_path):
    spec = write_spec(tmp_path, function=SYNTH, grid={"value": [1]})
    (tmp_path / "no").write_text("a file")  # a missing parent would be created (docs/cli.md); a file cannot be
    assert_one_line_error(run("sweep", spec, "--out", tmp_path / "no" / "r.jsonl"), "is not a directory")
    existing = tmp_path / "r.jsonl"
    existing.write_text('{"id": "x", "status": "ok"}\n')
    r = run("sweep", spec, "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9", "--out", existing)
    assert_one_line_error(r, "scheduler 'tcp://127.0.0.1:9' is unreachable")
    assert existing.read_text() == '{"id": "x", "status": "ok"}\n'
    with pytest.raises(HcsimError, match="needs --executor dask"):
        run_sweep(SweepSpec(SYNTH, grid={"value": [1]}), out=str(existing), scheduler="tcp://x:1")


def test_sweep_cli_prints_a_summary(tmp_path):
    spec = write_spec(tmp_path, function=SYNTH, grid={"value": [1, 2]}, out=str(tmp_path / "spec-out.jsonl"))
    r = subprocess.run(
        [*CLI, "sweep", str(spec), "-j", "2"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert r.returncode == 0 and "2 points, 0 already done, 2 ok, 0 failed" in r.stdout
    assert r.stderr == ""  # no progress bar when stderr is not a terminal
    assert sys.executable


def test_the_shipped_example_spec_is_the_documented_one():
    """README and docs/sweeps.md run examples/sweeps/allreduce.yaml: it loads and has the documented points."""
    from pathlib import Path

    from hcsim.sweep.spec import load_spec

    root = Path(__file__).resolve().parents[2]
    spec = load_spec(root / "examples" / "sweeps" / "allreduce.yaml")
    assert len(spec.expand()) == 3 * 3 * 2 + 1
    assert (root / "examples" / "sweeps" / "allreduce.yaml").read_text().split("\n", 1)[1] in (
        root / "docs" / "sweeps.md"
    ).read_text()
