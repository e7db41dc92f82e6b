"""Cluster outputs and inputs as other tools write and read them.

* ``jobs.csv`` as Batsim's tools read it: one row per run segment, so the GPUs in use
  never exceed the cluster, a preempted job's stretch counts its waits, Batsim's
  ``workload_name``/``profile``/``consumed_energy`` columns; checked with evalys itself
  when it is installed (it is a test extra), else against the invariants it relies on;
* the Chrome trace: a multi-GPU job on the lane of every GPU it holds;
* the Parallel Workloads Archive's ``.swf.gz``, and a Philly file holding one job object
  (the Philly README's example entry);
* the CLI: a run where every job is rejected is an error, some rejected a warning.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil

import pytest
from clitools import assert_one_line_error, run

from hcsim.errors import HcsimError
from hcsim.frontends.cluster import Job, simulate_cluster
from hcsim.frontends.cluster.outputs import JOB_FIELDS, TIME_GRID, chrome_trace, job_rows, write_outputs
from hcsim.frontends.cluster.traces import _common as trace_common
from hcsim.frontends.cluster.traces import read_trace
from hcsim.frontends.cluster.traces.synthetic import synthetic_trace
from hcsim.platform import noncoherent_system

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "examples", "traces", "sample.swf")

#: Batsim's jobs.csv columns as evalys documents them (evalys.jobset.JobSet.columns) plus the ones Batsim adds.
BATSIM_COLUMNS = [
    "job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources", "requested_time",
    "success", "final_state", "starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time",
    "stretch", "consumed_energy", "allocated_resources",
]  # fmt: skip


def _ids(text: str) -> list[int]:
    """GPU ids of a Batsim interval set ("0-3 8")."""
    out: list[int] = []
    for part in text.split():
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


@pytest.fixture(scope="module")
def preemptive_run(tmp_path_factory):
    """MLFQ on 64 GPUs with a trace that keeps it busy: many preemptions (the case evalys got wrong)."""
    trace = synthetic_trace(300, seed=3, mean_interarrival=30.0, mean_duration=600.0)
    result = simulate_cluster(noncoherent_system(64), trace, policy_name="mlfq", progress=False)
    out = tmp_path_factory.mktemp("mlfq")
    write_outputs(result, trace.jobs, out, snapshots=[], workload="synthetic")
    with open(out / "jobs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return result, out, rows


def test_jobs_csv_has_batsim_columns_and_a_row_per_segment(preemptive_run):
    result, _, rows = preemptive_run
    assert JOB_FIELDS[: len(BATSIM_COLUMNS)] == BATSIM_COLUMNS
    assert list(rows[0]) == JOB_FIELDS
    assert sum(r.preemptions for r in result.jobs) >= 20  # the run does exercise preemption
    assert len(rows) == sum(max(1, len(r.segments)) for r in result.jobs)
    assert {r["workload_name"] for r in rows} == {"synthetic"}
    assert {r["profile"] for r in rows} == {"delay"} and {r["consumed_energy"] for r in rows} == {"-1"}
    by_job: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_job.setdefault(row["job_id"], []).append(row)
    for rec in result.jobs:
        mine = by_job[rec.job_id]
        assert [int(r["segment"]) for r in mine] == list(range(len(rec.segments)))
        assert [r["success"] for r in mine] == ["0"] * (len(mine) - 1) + ["1"]
        assert [r["final_state"] for r in mine][-1] == "COMPLETED_SUCCESSFULLY"
        assert all(r["final_state"] == "COMPLETED_KILLED" for r in mine[:-1])
        for row, (s, e, gpus) in zip(mine, rec.segments, strict=True):
            assert sorted(_ids(row["allocated_resources"])) == sorted(gpus)
            assert float(row["starting_time"]) == pytest.approx(s, abs=TIME_GRID / 2)
            assert float(row["finish_time"]) == pytest.approx(e, abs=TIME_GRID / 2)
            # Batsim's identities hold exactly (evalys rebuilds start and finish from them)
            sub, wait, run_, fin = (float(row[k]) for k in ("submission_time", "waiting_time", "execution_time",
                                                              "finish_time"))  # fmt: skip
            assert sub + wait == float(row["starting_time"]) and sub + wait + run_ == fin
            assert float(row["turnaround_time"]) == fin - sub


def test_gpus_in_use_never_exceed_the_cluster(preemptive_run):
    """Summing the rows active at any instant (what evalys's utilisation does) counts at most 64 GPUs."""
    _, _, rows = preemptive_run
    events = []
    for row in rows:
        n = len(_ids(row["allocated_resources"]))
        if n:
            start = float(row["submission_time"]) + float(row["waiting_time"])
            events += [(start, n), (start + float(row["execution_time"]), -n)]
    events.sort()
    in_use = peak = 0
    for _, delta in events:
        in_use += delta
        peak = max(peak, in_use)
    assert peak == 64


def test_stretch_counts_the_time_a_preempted_job_waited(preemptive_run):
    result, _, rows = preemptive_run
    finals = {r["job_id"]: r for r in rows if r["success"] == "1"}
    served: dict[str, float] = {}
    for r in rows:
        served[r["job_id"]] = served.get(r["job_id"], 0.0) + float(r["execution_time"])
    most = max(result.jobs, key=lambda r: (r.preemptions, r.job_id))
    row = finals[most.job_id]
    assert most.preemptions >= 3
    assert float(row["stretch"]) == pytest.approx(float(row["turnaround_time"]) / served[most.job_id], rel=1e-12)
    waited = (most.finish - most.submit) - sum(e - s for s, e, _ in most.segments)
    assert waited > 1.0 and float(row["stretch"]) > 1.0


def test_evalys_reads_jobs_csv(preemptive_run):
    """evalys (PyPI) loads the file: at most 64 GPUs in use, all 64 reached, one colour per job."""
    jobset = pytest.importorskip("evalys.jobset")
    _, out, rows = preemptive_run
    js = jobset.JobSet.from_csv(str(out / "jobs.csv"))
    assert js.MaxProcs == 64
    assert int(js.utilisation["load"].max()) == 64
    assert set(jobset.JobSet.columns) <= set(js.df.columns) | {"job_id"}
    assert js.df["jobID"].nunique() == len({r["job_id"] for r in rows})


def test_round_robin_rows_and_the_final_stretch(tmp_path):
    """Two 8-GPU jobs share 8 GPUs under RR: per-segment rows, the final stretch = turnaround / time on GPUs."""
    jobs = [Job("a", 0.0, 8, 100.0), Job("b", 0.0, 8, 100.0)]
    result = simulate_cluster(
        noncoherent_system(8), jobs, policy_name="rr", policy_options={"slice": 30.0}, overhead=0.0, progress=False
    )
    rows = job_rows(result, jobs)
    a = [r for r in rows if r["job_id"] == "a"]
    assert len(a) == len(result.jobs[0].segments) >= 3
    served = sum(float(r["execution_time"]) for r in a)
    assert served == pytest.approx(100.0, abs=TIME_GRID)
    last = a[-1]
    assert float(last["stretch"]) == pytest.approx(float(last["finish_time"]) / served)
    assert float(last["stretch"]) > 1.5  # it shared the GPUs half the time


def test_rejected_job_is_one_row(tmp_path):
    jobs = [Job("ok", 0.0, 8, 10.0), Job("huge", 1.0, 64, 10.0)]
    result = simulate_cluster(noncoherent_system(8), jobs, progress=False)
    rows = job_rows(result, jobs)
    huge = [r for r in rows if r["job_id"] == "huge"]
    assert len(huge) == 1 and huge[0]["final_state"] == "REJECTED" and huge[0]["allocated_resources"] == ""


# ------------------------------------------------------------------ Chrome trace
def test_chrome_trace_shows_a_job_on_every_gpu_it_holds():
    jobs = [Job("wide", 0.0, 16, 50.0, nodes=2, gpus_per_node=8), Job("one", 60.0, 1, 5.0)]
    result = simulate_cluster(noncoherent_system(16), jobs, progress=False)
    doc = chrome_trace(result).document()
    events = doc["traceEvents"]
    assert all(isinstance(e["pid"], int) and isinstance(e["tid"], int) and e.get("cat") for e in events)
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    wide = [e for e in events if e["ph"] == "X" and e["name"] == "job wide"]
    assert len(wide) == 16
    assert sorted(lanes[(e["pid"], e["tid"])] for e in wide) == sorted(result.gpu_names)
    assert len({e["pid"] for e in wide}) == 2 and set(procs.values()) == set(result.node_names)
    assert all(e["dur"] == pytest.approx(50e6) for e in wide)
    assert json.loads(json.dumps(doc)) == doc


# ------------------------------------------------------------------ trace files other tools write
def test_gzipped_swf_reads_as_the_plain_file(tmp_path):
    gz = tmp_path / "sample.swf.gz"
    with open(SAMPLE, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    plain, packed = read_trace(SAMPLE), read_trace(gz)
    assert packed.format == "swf" and len(packed.jobs) == len(plain.jobs) == 400
    assert [(j.job_id, j.submit, j.gpus, j.duration, j.partition) for j in packed.jobs] == [
        (j.job_id, j.submit, j.gpus, j.duration, j.partition) for j in plain.jobs
    ]
    odd = tmp_path / "log.gz"  # no format in the name: sniffed from the decompressed start
    shutil.copy(gz, odd)
    assert read_trace(odd).format == "swf"


def test_broken_or_huge_gzip_is_one_line(tmp_path, monkeypatch):
    gz = tmp_path / "t.swf.gz"
    with open(SAMPLE, "rb") as src:
        data = gzip.compress(src.read())
    gz.write_bytes(data[: len(data) // 2])
    with pytest.raises(HcsimError, match=r"t.swf.gz: a broken gzip file"):
        read_trace(gz)
    gz.write_bytes(data)
    monkeypatch.setattr(trace_common, "MAX_GUNZIPPED_BYTES", 1000)
    with pytest.raises(HcsimError, match=r"decompresses to more than"):
        read_trace(gz)


PHILLY_README_ENTRY = {
    "status": "Pass",
    "vc": "ee9e8c",
    "jobid": "application_1506638472019_14199",
    "attempts": [
        {
            "start_time": "2017-10-07 01:12:09",
            "end_time": "2017-10-07 01:13:23",
            "detail": [{"ip": "m47", "gpus": [f"gpu{i}" for i in range(8)]}],
        },
        {
            "start_time": "2017-10-07 01:13:30",
            "end_time": "2017-10-09 06:53:12",
            "detail": [{"ip": "m412", "gpus": [f"gpu{i}" for i in range(8)]}],
        },
    ],
    "submitted_time": "2017-10-07 01:11:39",
    "user": "ce2f4c",
}


def test_philly_file_holding_one_job_object_reads(tmp_path):
    """The entry the Philly README shows, saved as a file on its own (no surrounding list)."""
    path = tmp_path / "entry.json"
    path.write_text(json.dumps(PHILLY_README_ENTRY, indent=4))
    trace = read_trace(path)
    (job,) = trace.jobs
    assert (job.job_id, job.gpus, job.nodes, job.gpus_per_node, job.partition) == (
        "application_1506638472019_14199", 8, 1, 8, "ee9e8c",
    )  # fmt: skip
    assert job.duration == 74 + (2 * 86400 + 5 * 3600 + 39 * 60 + 42)  # the two attempts' run times
    assert job.trace_wait == 30
    renamed = tmp_path / "entry"  # no extension: sniffed as Philly
    shutil.copy(path, renamed)
    assert read_trace(renamed).format == "philly"


def test_unknown_format_names_the_cli_flag(tmp_path):
    path = tmp_path / "mystery"
    path.write_text("hello world\n")
    r = run("cluster", "--trace", path)
    assert_one_line_error(r, "--format")


# ------------------------------------------------------------------ the CLI
def test_all_jobs_rejected_is_an_error_and_leaves_nothing(tmp_path):
    out = tmp_path / "out"
    r = run("cluster", "--trace", SAMPLE, "--partitions", "a=4,b=4", "--xpus", 64, "--out", out)
    assert_one_line_error(r, "all 400 jobs were rejected", "partition '")
    assert not out.exists()


def test_some_jobs_rejected_is_a_warning(tmp_path):
    r = run("cluster", "--trace", SAMPLE, "--partitions", "train=6,dev=2", "--xpus", 64)
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if line.startswith("hcsim: warning:")]
    assert len(warnings) == 1 and "jobs rejected" in warnings[0], r.stderr


def test_sample_trace_runs_as_documented(tmp_path):
    """The command of docs/cluster.md on the sample shipped in the repository."""
    out = tmp_path / "sample"
    r = run("cluster", "--trace", SAMPLE, "--policy", "easy", "--out", out)
    assert r.returncode == 0, r.stderr
    assert "completed 400, rejected 0" in r.stdout
    with open(out / "jobs.csv", newline="") as f:
        assert {row["workload_name"] for row in csv.DictReader(f)} == {"sample"}
