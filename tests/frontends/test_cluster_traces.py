"""Trace readers (Helios, Philly, SWF), SWF writer and synthetic generators of the cluster front end."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hcsim.errors import HcsimError
from hcsim.frontends.cluster.traces import (
    DEFAULT_GPU_MIX,
    guess_format,
    read_helios,
    read_philly,
    read_swf,
    read_trace,
    scale_load,
    synthetic_trace,
    write_swf,
)

DATA = Path(__file__).parents[1] / "data"
# 10,000 Lublin-Feitelson model jobs (Parallel Workloads Archive; copied by DIR-LAB/deep-batch-scheduler, which
# states no license, so not shipped): read where the project's data sits beside a clone (shared/data), or
# HCSIM_SHARED_DATA; tests/data and examples/traces hold the SWF files a clone tests with
LUBLIN = Path(os.environ.get("HCSIM_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
LUBLIN = LUBLIN / "lublin_256.swf"
HELIOS = DATA / "helios_cluster_log.csv"
PHILLY = DATA / "philly_cluster_job_log.json"
HELIOS_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
SWF_OK = "1 0 -1 10 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1"


def _fields(job):
    return (job.job_id, job.submit, job.gpus, job.duration, job.nodes, job.gpus_per_node, job.user, job.partition)


def _raises(path, match, reader=read_trace, **kwargs):
    """The reader fails with one HcsimError line matching ``match``."""
    with pytest.raises(HcsimError, match=match) as info:
        reader(path, **kwargs)
    assert "\n" not in str(info.value)
    return str(info.value)


# --------------------------------------------------------------------------- SWF


@pytest.mark.skipif(not LUBLIN.exists(), reason=f"lublin_256.swf (not shipped: no license) is not at {LUBLIN}")
def test_lublin_sample_reads_every_job_in_order():
    trace = read_swf(LUBLIN)
    assert trace.format == "swf" and trace.skipped == []
    assert len(trace.jobs) == 10_000  # the file has 10,000 jobs, none with unknown run time or processors
    first, last = trace.jobs[0], trace.jobs[-1]
    # line 8: "1    5094 -1   12072  16 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1"
    assert (first.job_id, first.submit, first.duration, first.gpus, first.line) == ("1", 0.0, 12072.0, 16, 8)
    assert (first.nodes, first.gpus_per_node) == (2, 8)  # 16 GPUs = two whole 8-GPU nodes
    assert first.state == "COMPLETED" and first.trace_start is None and first.partition == "" and first.user == ""
    assert trace.submit_epoch == 5094.0
    # last line: "10000 7711701 -1   13929   3 ..."
    assert (last.job_id, last.submit, last.duration, last.gpus) == ("10000", 7711701.0 - 5094.0, 13929.0, 3)
    assert (last.nodes, last.gpus_per_node) == (None, None)  # 3 GPUs: any placement
    submits = [job.submit for job in trace.jobs]
    assert submits == sorted(submits)
    # job 29 asks for 166 processors: not a multiple of 8, so no rigid shape
    assert trace.jobs[28].gpus == 166 and trace.jobs[28].nodes is None


def test_swf_fields_map_to_jobs(tmp_path):
    path = tmp_path / "small.swf"
    path.write_text(
        "; Version: 2.2\n; UnixStartTime: 1000000000\n"
        "1 100 5 60 -1 -1 -1 4 120 -1 0 7 -1 -1 2 3 -1 -1\n"  # allocated unknown: requested 4 GPUs
        "2 100 -1 -1 8 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n"  # unknown run time: skipped
        "3 130 -1 0 0 -1 -1 -1 -1 -1 5 -1 -1 -1 0 -1 -1 -1\n"  # 0 processors: skipped
        "\n"
        "4 150.5 10 30.25 24 -1 -1 24 -1 -1 5 8 -1 -1 1 -1 -1 -1\n"  # partition from the queue
        "4 160 -1 1 2 -1 -1 -1 -1 -1 3 -1 -1 -1 0 -1 -1 -1\n"  # a repeated job number (partial execution)
    )
    trace = read_swf(path)
    assert [job.job_id for job in trace.jobs] == ["1", "4", "4#1"]
    a, b, c = trace.jobs
    assert _fields(a) == ("1", 0.0, 4, 60.0, None, None, "7", "3")
    assert (a.state, a.trace_start, a.extra, a.line) == ("FAILED", 5.0, {"requested_time": 120.0}, 3)
    assert _fields(b) == ("4", 50.5, 24, 30.25, 3, 8, "8", "1")
    assert (b.state, b.trace_start) == ("CANCELLED", 60.5)
    assert c.state == "3" and c.partition == "" and c.gpus == 2
    assert trace.submit_epoch == 1000000100.0
    assert [line for line, _ in trace.skipped] == [4, 5]
    assert "run time unknown" in trace.skipped[0][1] and "0 processors" in trace.skipped[1][1]


def test_swf_gpus_per_node_sets_whole_node_shapes(tmp_path):
    path = tmp_path / "shape.swf"
    path.write_text(SWF_OK.replace(" 1 -1 -1 -1 -1 -1 1", " 16 -1 -1 -1 -1 -1 1", 1) + "\n")
    assert read_swf(path).jobs[0].gpus == 16
    job = read_swf(path, gpus_per_node=4).jobs[0]
    assert (job.nodes, job.gpus_per_node) == (4, 4)
    assert read_swf(path, gpus_per_node=16).jobs[0].nodes is None  # fits one node: any placement
    _raises(path, r"gpus_per_node 0 is invalid \(valid: an integer >= 1\)", reader=read_swf, gpus_per_node=0)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("1 0 -1 10 1\n", r"bad\.swf line 2: 5 fields \(valid: 18 whitespace-separated"),
        (SWF_OK.replace(" 10 ", " abc ") + "\n", r"bad\.swf line 2: field 4 \(run time\) 'abc' is not a number"),
        (SWF_OK.replace(" 10 ", " nan ") + "\n", r"line 2: field 4 \(run time\) 'nan' is not a number"),
        ("1 -1 -1 10 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n", r"line 2: field 2 \(submit time\) '-1' is unknown"),
        ("1 -7 -1 10 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n", r"line 2: field 2 \(submit time\) '-7' is negative"),
        (SWF_OK.replace(" 10 ", " -5 ") + "\n", r"line 2: field 4 \(run time\) '-5' is negative"),
        (SWF_OK.replace(" -1 10 ", " -3 10 ") + "\n", r"line 2: field 3 \(wait time\) '-3' is negative"),
        (SWF_OK.replace(" 10 1 ", " 10 1.5 ") + "\n", r"line 2: field 5 \(allocated processors\) '1.5' is not an int"),
        (SWF_OK.replace(" 10 1 ", " 10 -3 ") + "\n", r"line 2: field 5 \(allocated processors\) '-3' is negative"),
        (
            SWF_OK.replace(" 0 ", " 50 ", 1) + "\n" + SWF_OK.replace("1 ", "2 ", 1).replace(" 0 ", " 20 ", 1) + "\n",
            r"line 3: field 2 \(submit time\) '20' is before 50 on line 2 \(valid: lines sorted by submit time",
        ),
        ("; only a header\n", r"bad\.swf: no jobs \(valid: at least one GPU job\)"),
        (
            SWF_OK.replace(" 10 ", " -1 ") + "\n",
            r"bad\.swf: no jobs \(valid: at least one GPU job; 1 skipped, e.g\. line 2: run time unknown",
        ),
        ("; UnixStartTime: soon\n" + SWF_OK + "\n", r"line 2: UnixStartTime 'soon' is not a number"),
        ('; hcsim-users: ["a"]\n' + SWF_OK + "\n", r"line 2: hcsim-users .* is invalid"),
    ],
)
def test_swf_bad_input_names_the_line(tmp_path, body, match):
    path = tmp_path / "bad.swf"
    path.write_text("; Version: 2\n" + body)
    _raises(path, match)


def test_swf_unsorted_can_be_sorted_on_request(tmp_path):
    path = tmp_path / "unsorted.swf"
    path.write_text(SWF_OK.replace(" 0 ", " 50 ", 1) + "\n" + SWF_OK.replace("1 ", "2 ", 1) + "\n")
    trace = read_trace(path, sort=True)
    assert [(job.job_id, job.submit) for job in trace.jobs] == [("2", 0.0), ("1", 50.0)]


def test_missing_empty_and_binary_files(tmp_path):
    _raises(tmp_path / "nope.swf", r"trace file '.*nope\.swf' does not exist \(valid: a path to")
    _raises(tmp_path, r"is a directory")
    (tmp_path / "empty.swf").write_text("  \n\n")
    _raises(tmp_path / "empty.swf", r"empty\.swf: the file is empty")
    (tmp_path / "bin.swf").write_bytes(b"; ok\n\xff\xfe\x00junk\n")
    _raises(tmp_path / "bin.swf", r"bin\.swf line 2: not UTF-8 text")


def test_read_with_progress_bar_enabled(capsys):
    trace = read_trace(HELIOS, progress=True)
    assert len(trace.jobs) == 5
    assert "reading trace" in capsys.readouterr().err


# --------------------------------------------------------------------------- Helios


def test_helios_sample_maps_every_field():
    trace = read_helios(HELIOS)
    assert trace.format == "helios"
    assert trace.submit_epoch == 1591728061.0  # 2020-06-09 18:41:01, read as UTC
    assert trace.skipped == [(5, "CPU job (gpu_num 0): it uses no GPU")]
    a, b, c, d, e = trace.jobs
    assert _fields(a) == ("1425511", 0.0, 1, 36848.0, 1, 1, "uXBbc", "vcJkd")
    assert (a.state, a.trace_start, a.line, a.extra) == ("COMPLETED", 0.0, 2, {"cpu_num": 1})
    assert _fields(b) == ("1425512", 26.0, 4, 249.0, 1, 4, "uVMrF", "vchbv") and b.state == "FAILED"
    assert _fields(c) == ("1425513", 27.0, 1, 675233.0, 1, 1, "uzqls", "vcpDC") and c.state == "CANCELLED"
    # 16 GPUs on 2 nodes: rigid 2 x 8; started 15 min after submission (queue 900)
    assert _fields(d) == ("1425515", 239.0, 16, 7200.0, 2, 8, "uXBbc", "vcJkd")
    assert (d.trace_start, d.trace_wait, d.line) == (1139.0, 900.0, 6)
    # 6 GPUs on 4 nodes does not divide: no rigid shape, node count kept
    assert _fields(e) == ("1425516", 239.0, 6, 3600.0, None, None, "uVMrF", "vchbv")
    assert (e.state, e.trace_wait, e.extra["node_num"]) == ("TIMEOUT", 18900.0, 4)


def test_helios_minimal_header_and_duration_from_times(tmp_path):
    path = tmp_path / "derived.csv"
    path.write_text(
        "job_id,vc,jobname,gpu_num,submit_time,start_time,end_time\n"
        "7,vcA,resnet,2,2020-04-01 00:00:00,2020-04-01 00:01:00,2020-04-01 01:01:00\n"
        "8,vcA,bert,1,2020-04-01T00:00:10,,\n"
    )
    trace = read_helios(path, gpus_per_node=4)
    assert len(trace.jobs) == 1
    job = trace.jobs[0]
    assert (job.duration, job.trace_start, job.name, job.state, job.user, job.nodes) == (
        3600.0,
        60.0,
        "resnet",
        "COMPLETED",
        "",
        None,
    )
    assert trace.skipped == [(3, "no duration and no start_time/end_time: the job never ran")]


def test_helios_node_wider_than_the_cluster_node_has_no_shape(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text(HELIOS_HEADER + "\n1,u,vc,16,0,1,COMPLETED,2020-04-01 00:00:00,,,10,0\n")
    job = read_helios(path).jobs[0]  # 16 GPUs on one node, but nodes have 8
    assert (job.nodes, job.gpus_per_node, job.extra["node_num"]) == (None, None, 1)


_ROW = "1,u,vc,{gpu},4,{nodes},COMPLETED,{submit},{start},{end},{dur},0"


def _helios_row(gpu="1", nodes="1", submit="2020-04-01 00:00:00", start="", end="", dur="10"):
    return _ROW.format(gpu=gpu, nodes=nodes, submit=submit, start=start, end=end, dur=dur)


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        (["1,u,vc,1"], r"bad\.csv line 2: 4 fields, the header has 12"),
        ([_helios_row(gpu="two")], r"line 2: gpu_num 'two' is not a number \(valid: an integer >= 0\)"),
        ([_helios_row(gpu="1.5")], r"line 2: gpu_num '1\.5' is not an integer"),
        ([_helios_row(gpu="-2")], r"line 2: gpu_num '-2' is negative"),
        ([_helios_row(nodes="x")], r"line 2: node_num 'x' is not a number"),
        ([_helios_row(submit="")], r"line 2: submit_time is missing"),
        ([_helios_row(submit="2020-13-01 00:00:00")], r"line 2: submit_time '2020-13-01 00:00:00' is not a time"),
        ([_helios_row(submit="yesterday")], r"line 2: submit_time 'yesterday' is not a time"),
        ([_helios_row(dur="-4")], r"line 2: duration '-4' is invalid \(valid: seconds >= 0\)"),
        ([_helios_row(dur="long")], r"line 2: duration 'long' is not a number"),
        (
            [_helios_row(start="2020-04-01 00:10:00", end="2020-04-01 00:05:00")],
            r"line 2: end_time '2020-04-01 00:05:00' is before start_time '2020-04-01 00:10:00'",
        ),
        (
            [_helios_row(submit="2020-04-01 00:05:00"), _helios_row(), _helios_row(submit="2020-04-01 00:05:01")],
            r"line 3: submit_time '2020-04-01 00:00:00' is before '2020-04-01 00:05:00' on line 2",
        ),
        ([], r"bad\.csv: no jobs"),
        ([_helios_row(gpu="0")], r"no jobs \(valid: at least one GPU job; 1 skipped, e\.g\. line 2: CPU job"),
        (['1,u,vc,1,4,1,COMPLETED,"2020-04-01 00:00:00'], r"bad\.csv line \d: .*"),
    ],
)
def test_helios_bad_input_names_the_line(tmp_path, rows, match):
    path = tmp_path / "bad.csv"
    path.write_text("\n".join([HELIOS_HEADER, *rows]) + "\n")
    _raises(path, match)


def test_helios_missing_column_lists_the_required_ones(tmp_path):
    path = tmp_path / "cols.csv"
    path.write_text(HELIOS_HEADER.replace("gpu_num", "gpus") + "\n")
    message = _raises(path, r"cols\.csv line 1: the header has no column 'gpu_num'", reader=read_helios)
    assert "job_id, vc, gpu_num, submit_time" in message
    path.write_text("job_id,vc,gpu_num,submit_time,start_time\n")
    _raises(path, r"line 1: the header has neither 'duration' nor 'start_time' and 'end_time'", reader=read_helios)


def test_helios_unsorted_rows_sorted_on_request(tmp_path):
    path = tmp_path / "unsorted.csv"
    rows = [_helios_row(submit="2020-04-01 00:05:00").replace("1,", "9,", 1), _helios_row()]
    path.write_text("\n".join([HELIOS_HEADER, *rows]) + "\n")
    trace = read_helios(path, sort=True)
    assert [(job.job_id, job.submit) for job in trace.jobs] == [("1", 0.0), ("9", 300.0)]


def test_helios_reads_many_rows_quickly(tmp_path):
    """20,000 rows well inside a second's budget share (100,000 should take a few seconds)."""
    import time

    path = tmp_path / "big.csv"
    lines = [HELIOS_HEADER]
    for i in range(20_000):
        t = f"2020-04-{1 + i // 8000:02d} {(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}"
        lines.append(f"{i},u{i % 7},vc{i % 3},{1 + i % 8},4,1,COMPLETED,{t},{t},{t},{i % 500},0")
    path.write_text("\n".join(lines) + "\n")
    start = time.perf_counter()
    trace = read_helios(path, sort=True)
    assert len(trace.jobs) == 20_000
    assert time.perf_counter() - start < 3.0


# --------------------------------------------------------------------------- Philly


def test_philly_sample_maps_every_field():
    trace = read_philly(PHILLY)
    assert trace.format == "philly"
    assert trace.submit_epoch == 1507021200.0  # 2017-10-03 09:00:00 (job #2), read as UTC
    b, e, a = trace.jobs  # sorted by submit time
    # job #2: two attempts (30 min on 2 x 4 GPUs, then 30 min on 2 x 8): GPUs of the last one, time of both
    assert _fields(b) == ("application_1506638472019_1002", 0.0, 16, 3600.0, 2, 8, "u2", "vc22")
    assert (b.state, b.trace_start, b.line, b.extra) == ("CANCELLED", 600.0, 2, {"status": "Killed", "attempts": 2})
    # job #5: 2 + 1 GPUs on two machines: not uniform, no rigid shape
    assert _fields(e) == ("application_1506638472019_1005", 3000.0, 3, 30.0, None, None, "u3", "vc11")
    assert (e.state, e.trace_start, e.line) == ("FAILED", 3030.0, 5)
    assert _fields(a) == ("application_1506638472019_1001", 3600.0, 1, 3600.0, 1, 1, "u1", "vc11")
    assert (a.state, a.trace_wait, a.line) == ("COMPLETED", 300.0, 1)
    assert [k for k, _ in trace.skipped] == [3, 4]
    assert "never ran" in trace.skipped[0][1] and "still running" in trace.skipped[1][1]


def _philly_job(jobid="j2", submitted="2017-10-01 00:00:00", start="2017-10-01 00:01:00", end="2017-10-01 00:02:00"):
    detail = [{"ip": "m1", "gpus": ["gpu0"]}]
    return {"status": "Pass", "vc": "v", "jobid": jobid, "user": "u", "submitted_time": submitted,
            "attempts": [{"start_time": start, "end_time": end, "detail": detail}]}  # fmt: skip


@pytest.mark.parametrize(
    ("second", "match"),
    [
        ({**_philly_job(), "jobid": None}, r"bad\.json job #2: 'jobid' is None \(valid: a non-empty string\)"),
        (_philly_job(submitted="None"), r"bad\.json job #2 \(jobid j2\): 'submitted_time' is missing"),
        (_philly_job(submitted="tomorrow"), r"job #2 \(jobid j2\): 'submitted_time' 'tomorrow' is not a time"),
        (_philly_job(submitted=1234), r"job #2 \(jobid j2\): 'submitted_time' is 1234"),
        (
            _philly_job(start="2017-10-01 00:05:00"),
            r"job #2 \(jobid j2\) attempt 1: end_time '2017-10-01 00:02:00' is before start_time",
        ),
        ({**_philly_job(), "attempts": "none"}, r"job #2 \(jobid j2\): 'attempts' is 'none' \(valid: a list"),
        ({**_philly_job(), "attempts": [7]}, r"job #2 \(jobid j2\) attempt 1: 7 is not an object"),
        (
            {**_philly_job(), "attempts": [{"start_time": None, "end_time": None, "detail": [{"ip": "m"}]}]},
            r"job #2 \(jobid j2\) attempt 1: detail entry .* has no 'gpus' list",
        ),
        ("oops", r"bad\.json job #2: a JSON str, not an object"),
    ],
)
def test_philly_bad_input_names_the_job(tmp_path, second, match):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([_philly_job(jobid="j1"), second], indent=1))
    _raises(path, match)


def test_philly_bad_files(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('[\n  {"jobid": "j1",\n  "status": }\n]\n')
    _raises(path, r"bad\.json line 3 column 13: not valid JSON")
    path.write_text('{"jobs": []}')
    _raises(path, r"bad\.json: the top level is a JSON dict \(valid: a Philly cluster_job_log")
    path.write_text("[]")
    _raises(path, r"bad\.json: no jobs")
    path.write_text(json.dumps([{**_philly_job(), "attempts": []}]))
    _raises(path, r"no jobs \(valid: at least one GPU job; 1 skipped, e\.g\. job #1: no attempt")


# --------------------------------------------------------------------------- format dispatch


def test_format_guessing(tmp_path):
    assert guess_format(LUBLIN) == "swf"
    assert guess_format(HELIOS) == "helios"
    assert guess_format(PHILLY) == "philly"
    (tmp_path / "cluster_job_log").write_text(PHILLY.read_text())
    (tmp_path / "model").write_text("; Version: 2\n" + SWF_OK + "\n")
    (tmp_path / "bare_model").write_text(SWF_OK + "\n")
    (tmp_path / "log").write_text(HELIOS.read_text())
    (tmp_path / "notes.txt").write_text("hello world\n")
    assert guess_format(tmp_path / "cluster_job_log") == "philly"
    assert guess_format(tmp_path / "model") == "swf"
    assert guess_format(tmp_path / "bare_model") == "swf"
    assert guess_format(tmp_path / "log") == "helios"
    assert len(read_trace(tmp_path / "cluster_job_log").jobs) == 3
    assert len(read_trace(tmp_path / "log").jobs) == 5
    _raises(tmp_path / "notes.txt", r"notes\.txt: cannot tell the trace format \(valid: helios, philly, swf")


def test_explicit_and_unknown_format_names():
    assert read_trace(HELIOS, "HELIOS").format == "helios"
    _raises(HELIOS, r"trace format 'slurm' is unknown \(valid: helios, philly, swf\)", format="slurm")
    _raises(HELIOS, r"helios_cluster_log\.csv line 1: 1 fields \(valid: 18", format="swf")


# --------------------------------------------------------------------------- synthetic traces

N = 20_000


def test_synthetic_same_seed_same_jobs_and_different_seed_differs():
    a, b = synthetic_trace(500, seed=7), synthetic_trace(500, seed=7)
    assert a.jobs == b.jobs
    c = synthetic_trace(500, seed=8)
    assert [_fields(j) for j in a.jobs] != [_fields(j) for j in c.jobs]
    assert a.jobs[0].submit == 0.0 and all(x.submit <= y.submit for x, y in zip(a.jobs, a.jobs[1:], strict=False))
    assert len({job.job_id for job in a.jobs}) == 500


def test_synthetic_poisson_mean_interarrival_and_gpu_mix():
    trace = synthetic_trace(N, seed=1, mean_interarrival=60.0)
    gaps = np.diff([job.submit for job in trace.jobs])
    # exponential gaps: sd = mean, so the sample mean has standard error 60 / sqrt(N - 1); allow 4 of them
    assert abs(gaps.mean() - 60.0) < 4 * 60.0 / math.sqrt(N - 1)
    counts = Counter(job.gpus for job in trace.jobs)
    assert set(counts) <= set(DEFAULT_GPU_MIX)
    for gpus, p in DEFAULT_GPU_MIX.items():
        # binomial frequency: standard error sqrt(p (1 - p) / N); allow 4 of them
        assert abs(counts[gpus] / N - p) < 4 * math.sqrt(p * (1 - p) / N), gpus


def test_synthetic_pareto_arrivals_have_the_requested_mean():
    shape, mean = 3.0, 60.0  # shape > 2: finite variance mean^2 shape / (shape - 2), so a standard error exists
    trace = synthetic_trace(N, seed=2, arrival="pareto", pareto_shape=shape, mean_interarrival=mean)
    gaps = np.diff([job.submit for job in trace.jobs])
    assert abs(gaps.mean() - mean) < 4 * mean * math.sqrt(shape / (shape - 2)) / math.sqrt(N - 1)
    # burstier than Poisson: Lomax median scale (2^(1/shape) - 1) = 0.52 mean, vs 0.69 mean for exponential gaps
    assert abs(np.median(gaps) - 2 * mean * (2 ** (1 / shape) - 1)) < 0.05 * mean
    # the default shape 1.5 has infinite variance: only check the order of magnitude of the mean
    heavy = np.diff([job.submit for job in synthetic_trace(N, seed=2, arrival="pareto").jobs])
    assert 30.0 < heavy.mean() < 120.0


def test_synthetic_lognormal_durations_have_the_requested_mean_and_spread():
    trace = synthetic_trace(N, seed=3, mean_duration=3600.0, duration_sigma=2.0)
    logs = np.log([job.duration for job in trace.jobs])
    # log-durations are normal(mu, 2), mu = ln(3600) - 2^2 / 2, standard error 2 / sqrt(N)
    assert abs(logs.mean() - (math.log(3600.0) - 2.0)) < 4 * 2.0 / math.sqrt(N)
    assert abs(logs.std() - 2.0) < 4 * 2.0 / math.sqrt(2 * N)
    # with sigma 1 the sample mean is usable: sd = mean sqrt(e - 1)
    light = np.array([job.duration for job in synthetic_trace(N, seed=3, duration_sigma=1.0).jobs])
    assert abs(light.mean() - 3600.0) < 4 * 3600.0 * math.sqrt(math.e - 1) / math.sqrt(N)


def test_synthetic_pareto_durations_have_the_requested_mean():
    shape = 3.0
    runs = np.array([j.duration for j in synthetic_trace(N, seed=4, duration="pareto", duration_shape=shape).jobs])
    sd = 3600.0 / math.sqrt(shape * (shape - 2))  # Pareto variance x_m^2 shape / ((shape - 1)^2 (shape - 2))
    assert abs(runs.mean() - 3600.0) < 4 * sd / math.sqrt(N)
    assert runs.min() >= 3600.0 * (shape - 1) / shape


def test_synthetic_shapes_users_and_partitions():
    trace = synthetic_trace(
        N, seed=5, gpu_mix={1: 1, 12: 1, 16: 2}, partitions={"a": 3.0, "b": 1.0}, users=10, gpus_per_node=8
    )
    for job in trace.jobs:
        if job.gpus == 16:
            assert (job.nodes, job.gpus_per_node) == (2, 8)
        else:  # 1 GPU fits a node, 12 is not a multiple of 8: any placement
            assert (job.nodes, job.gpus_per_node) == (None, None)
    share = sum(job.partition == "a" for job in trace.jobs) / N
    assert abs(share - 0.75) < 4 * math.sqrt(0.75 * 0.25 / N)
    users = Counter(job.user for job in trace.jobs)
    assert set(users) == {str(k) for k in range(1, 11)}
    p1 = 1.0 / sum(1.0 / k for k in range(1, 11))  # Zipf weight of the most active user
    assert abs(users["1"] / N - p1) < 4 * math.sqrt(p1 * (1 - p1) / N)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_jobs": 0}, r"n_jobs 0 is invalid \(valid: an integer >= 1\)"),
        ({"arrival": "uniform"}, r"arrival 'uniform' is unknown \(valid: poisson, pareto\)"),
        ({"duration": "fixed"}, r"duration 'fixed' is unknown \(valid: lognormal, pareto\)"),
        ({"mean_interarrival": -1}, r"mean_interarrival -1 is invalid"),
        ({"arrival": "pareto", "pareto_shape": 1.0}, r"pareto_shape 1\.0 is invalid \(valid: a number > 1"),
        ({"gpu_mix": {0: 1.0}}, r"gpu_mix key 0 is invalid \(valid: GPU counts >= 1\)"),
        ({"gpu_mix": {1: -1.0}}, r"gpu_mix\[1\] weight -1\.0 is invalid"),
        ({"gpu_mix": {1: 0}}, r"gpu_mix weights sum to 0"),
        ({"partitions": {}}, r"partitions \{\} is invalid"),
        ({"users": 0}, r"users 0 is invalid"),
        ({"seed": "x"}, r"seed 'x' is invalid"),
    ],
)
def test_synthetic_bad_arguments(kwargs, match):
    args = {"n_jobs": 10, "seed": 0, **kwargs}
    with pytest.raises(HcsimError, match=match):
        synthetic_trace(**args)


def test_scale_load_divides_submit_times_only():
    trace = read_helios(HELIOS)
    faster = scale_load(trace, 2.0)
    assert [j.submit for j in faster.jobs] == [j.submit / 2 for j in trace.jobs]
    assert [j.duration for j in faster.jobs] == [j.duration for j in trace.jobs]
    assert all(j.trace_start is None for j in faster.jobs)
    assert trace.jobs[3].submit == 239.0 and trace.jobs[3].trace_start == 1139.0  # original untouched
    with pytest.raises(HcsimError, match=r"load factor 0 is invalid"):
        scale_load(trace, 0)


# --------------------------------------------------------------------------- SWF writer


def test_write_swf_round_trips_a_helios_trace(tmp_path):
    trace = read_helios(HELIOS)
    path = tmp_path / "helios.swf"
    write_swf(trace, path)
    back = read_swf(path)
    assert [(j.job_id, j.submit, j.gpus, j.duration, j.user, j.partition, j.trace_start) for j in back.jobs] == [
        (j.job_id, j.submit, j.gpus, j.duration, j.user, j.partition, j.trace_start) for j in trace.jobs
    ]
    assert [j.state for j in back.jobs] == ["COMPLETED", "FAILED", "CANCELLED", "COMPLETED", "UNKNOWN"]
    assert back.submit_epoch == trace.submit_epoch


@settings(max_examples=25, deadline=None)
@given(
    n_jobs=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
    arrival=st.sampled_from(["poisson", "pareto"]),
    duration=st.sampled_from(["lognormal", "pareto"]),
    parts=st.sampled_from([None, {"gpu-a": 1.0, "gpu-b": 2.0}, {"3": 1.0, "1": 1.0}]),
    gpus_per_node=st.sampled_from([2, 4, 8]),
)
def test_write_swf_read_swf_round_trip(n_jobs, seed, arrival, duration, parts, gpus_per_node):
    trace = synthetic_trace(
        n_jobs, seed=seed, arrival=arrival, duration=duration, partitions=parts, gpus_per_node=gpus_per_node
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "synthetic.swf")
        write_swf(trace, path)
        back = read_swf(path, gpus_per_node=gpus_per_node)
    assert [(*_fields(j), j.state, j.trace_start) for j in back.jobs] == [
        (*_fields(j), j.state, j.trace_start) for j in trace.jobs
    ]
    assert back.skipped == []


def test_write_swf_creates_missing_parent_directories(tmp_path):
    """One --out rule for every output (docs/cli.md): missing parents are created."""
    out = tmp_path / "no" / "such.swf"
    write_swf(synthetic_trace(3, seed=0), out)
    assert out.read_text().count("\n") >= 3
