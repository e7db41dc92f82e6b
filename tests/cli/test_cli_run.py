"""hcsim run as a user runs it."""

import json

import pytest
from clitools import assert_one_line_error, run

from hcsim.workload import fig3_example


def test_run_on_a_built_system_writes_traces(tmp_path):
    trace, table = tmp_path / "t.json", tmp_path / "t.csv"
    r = run(
        "run",
        "--system",
        "cxl",
        "--xpus",
        16,
        "--workload",
        "fig3",
        "--iterations",
        2,
        "--chrome-trace",
        trace,
        "--csv",
        table,
    )
    assert r.returncode == 0, r.stderr
    assert "batch/s" in r.stdout and "exposed comm." in r.stdout
    doc = json.loads(trace.read_text())
    tracks = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    assert {"r00s00.xpu0", "r00s00.xpu1"} <= tracks
    assert table.read_text().startswith("vertex,iteration,host,kind,start_s,end_s,bytes,flops\n")


def test_run_json_on_a_platform_file(tmp_path):
    xml = tmp_path / "p.xml"
    assert run("platform", "build", "noncoherent", "--xpus", 16, "-o", xml).returncode == 0
    links = tmp_path / "links.csv"
    r = run(
        "run",
        "--platform",
        xml,
        "--workload",
        "allreduce",
        "--bytes",
        "16MiB",
        "--iterations",
        3,
        "--json",
        "--links",
        links,
    )
    assert r.returncode == 0, r.stderr
    rows = links.read_text().splitlines()
    assert rows[0] == "link,bytes,bandwidth_Bps,mean_utilization,peak_utilization" and len(rows) > 10
    summary = json.loads(r.stdout)
    assert summary["iterations"] == 3 and summary["coherent"] is False
    assert summary["top_links"][0]["link"].startswith(("r00s00", "r00s01", "r00."))


def workload_file(tmp_path, mutate):
    w = fig3_example(["r00s00.xpu0", "r00s00.xpu1"])
    path = tmp_path / "w.json"
    w.to_json(path)
    doc = json.loads(path.read_text())
    mutate(doc)
    path.write_text(json.dumps(doc))
    return path


def _node(doc, name):
    return next(n for n in doc["nodes"] if n["id"] == name)


@pytest.mark.parametrize(
    "mutate, needles",
    [
        (
            lambda d: _node(d, "r00s00.xpu0/FP0:L1").update(location="r00s00.dram0"),
            ["is placed on 'r00s00.dram0'", "not an XPU"],
        ),
        (lambda d: _node(d, "r00s00.xpu0/FP0:L1").update(location="gpu9"), ["'gpu9'", "unknown host"]),
        (lambda d: _node(d, "r00s00.xpu0/FP0:L1").update(flops=-1), ["flops must be a finite number >= 0"]),
        (lambda d: _node(d, "AR0:L1").update(bytes=-1), ["bytes must be a finite number >= 0"]),
        (lambda d: _node(d, "AR0:L1").update(scope=["r00s00.xpu0", "r00s00.xpu0"]), ["rank 'r00s00.xpu0' is repeated"]),
        (lambda d: _node(d, "AR0:L1").update(scope=["r00s00.xpu0", "ghost"]), ["'ghost'", "unknown host"]),
        (lambda d: _node(d, "AR0:L1").update(kind="gossip"), ["kind 'gossip' is unknown"]),
        (lambda d: _node(d, "AR0:L1").update(algorithm="tree"), ["algorithm 'tree' is unknown"]),
    ],
)
def test_bad_workloads(tmp_path, mutate, needles):
    path = workload_file(tmp_path, mutate)
    r = run(
        "run",
        "--system",
        "cxl",
        "--xpus",
        8,
        "--workload",
        path,
        "--iterations",
        1,
        "--chrome-trace",
        tmp_path / "o.json",
    )
    assert_one_line_error(r, *needles)
    assert not (tmp_path / "o.json").exists()


def test_bad_iterations_and_malformed_json(tmp_path):
    assert_one_line_error(
        run("run", "--system", "cxl", "--xpus", 8, "--workload", "fig3", "--iterations", 0), "--iterations 0"
    )
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert_one_line_error(
        run("run", "--system", "cxl", "--xpus", 8, "--workload", bad, "--iterations", 1), "not valid JSON"
    )
    assert_one_line_error(
        run("run", "--system", "cxl", "--xpus", 8, "--workload", "bert", "--iterations", 1),
        "workload 'bert' is unknown",
    )


def test_deadlocking_workload_stops_with_a_named_error(tmp_path):
    def cycle(doc):
        for e in doc["edges"]:
            e["skip_first_iteration"] = False  # the training cycle now has no way in
        for n in doc["nodes"]:
            n["is_start"] = False
        _node(doc, "r00s00.xpu0/FP0:L1")["is_start"] = True
        doc["edges"] = [e for e in doc["edges"] if e["target"] != "r00s00.xpu0/FP0:L1"]

    r = run("run", "--system", "cxl", "--xpus", 8, "--workload", workload_file(tmp_path, cycle), "--iterations", 2)
    assert_one_line_error(r, "deadlock", "waits for")


def test_run_fast_folds_and_memoizes_and_matches_exact():
    args = ("run", "--system", "cxl", "--xpus", 256, "--workload", "allreduce", "--bytes", "256MiB")
    exact = run(*args, "--iterations", 2, "--json")
    fast = run(*args, "--iterations", 2, "--json", "--fast")
    assert exact.returncode == 0 and fast.returncode == 0, fast.stderr
    e, f = json.loads(exact.stdout), json.loads(fast.stdout)
    # alone on the network the fast path is the closed form 2(N-1) x slowest hop; the exact 256-rank ring ends
    # 1.6e-7 earlier because SimGrid's solver counts flows within its precision as done (the 64-rank case in
    # test_fast.py agrees to 1e-9)
    assert f["makespan_s"] == pytest.approx(e["makespan_s"], rel=1e-6)
    assert f["activities"] < e["activities"] / 100


def test_run_fast_runs_exact_what_it_cannot_fold_and_says_so(tmp_path):
    common = ("--xpus", 8, "--workload", "allreduce", "--bytes", "1MiB", "--iterations", 1, "--json")
    exact, fast = run("run", "--system", "server", *common), run("run", "--system", "server", *common, "--fast")
    assert exact.returncode == 0 and fast.returncode == 0, fast.stderr
    # one server: its XPUs share the PCIe links to host memory, so no subset of them can stand for all 8
    system, note = fast.stderr.strip().splitlines()  # the semantics in force, then the refused fold
    assert system.startswith("hcsim: system server: network model raw")
    assert note.startswith("hcsim: note: topology 'server' cannot be folded: ") and note.endswith("; ran every XPU")
    assert json.loads(fast.stdout)["makespan_s"] == json.loads(exact.stdout)["makespan_s"]
    ring = run("run", "--system", "ring", *common, "--fast")
    assert ring.returncode == 0 and "cannot be folded" not in ring.stderr
    folded = json.loads(ring.stdout)  # folded by symmetry: 2 XPUs simulated stand for the system's 8
    assert (folded["xpus"], folded["simulated_xpus"], folded["folded_from"]) == (8, 2, 8)
    assert folded["fold"].startswith("symmetry fold: 2 representative XPUs stand for 8")
    r = run("run", "--system", "cxl", "--xpus", 16, "--workload", "fig3", "--iterations", 1, "--fast")
    assert_one_line_error(r, "--fast applies to data-parallel workloads")
