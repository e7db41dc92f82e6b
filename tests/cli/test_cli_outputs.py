"""Issue 25, items 1 and 10: outputs are never destructive, and follow one rule in every command (docs/cli.md).

An output that is a device, FIFO, socket or directory is refused and left as it was; two
outputs of one command on one file, or an output on an input (also through symbolic and
hard links), are refused; an empty path is refused by name; missing parents are created
at the end; no temporary file exists before the work is done, nor after a kill.
Errors found before any work are checked in this interpreter (:func:`clitools.run_here`).
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clitools import CLI, assert_refused, run, run_here

from hcsim.errors import HcsimError
from hcsim.files import atomic_path, check_distinct, check_output_dir, check_output_path, load_yaml

RUN = ["run", "--system", "cxl", "--xpus", "8", "--workload", "allreduce", "--bytes", "1MiB", "--iterations", "1"]
SPEC = "function: hcsim.sweep.experiments:allreduce\nfixed: {system: cxl, iterations: 1, nbytes: 1MiB, xpus: 8}\n"

# every command's file outputs, as (argv with {p} for the output under test)
FILE_OUTPUTS = {
    "build-o": ["platform", "build", "cxl", "--xpus", "8", "-o", "{p}"],
    "build-graphml": ["platform", "build", "cxl", "--xpus", "8", "-o", "{tmp}/ok.xml", "--save-graphml", "{p}"],
    "draw-o": ["platform", "draw", "cxl", "--xpus", "8", "-o", "{p}"],
    "run-csv": [*RUN, "--csv", "{p}"],
    "run-links": [*RUN, "--links", "{p}"],
    "run-chrome-trace": [*RUN, "--chrome-trace", "{p}"],
    "sweep-out": ["sweep", "{tmp}/spec.yaml", "--out", "{p}"],
}
# every command's --out directory
DIR_OUTPUTS = {
    "collective": ["collective", "--system", "cxl", "--xpus", "8", "--sizes", "1KiB", "--out", "{p}"],
    "serve": ["serve", "--gpu", "v100", "--rho", "0.5", "--requests", "1000", "--out", "{p}"],
    "cluster": ["cluster", "--trace", "examples/traces/sample.swf", "--out", "{p}"],
    "queue-selection": ["queue-selection", "--replications", "1", "--out", "{p}"],
    "demo": ["demo", "--xpus", "16", "--out", "{p}"],
}
ROOT = Path(__file__).resolve().parents[2]


def _argv(template: list[str], tmp: Path, p: str) -> list[str]:
    os.chdir(ROOT)  # cluster's sample trace is a path from the repository root
    (tmp / "spec.yaml").write_text(SPEC)
    return [a.replace("{p}", p).replace("{tmp}", str(tmp)) for a in template]


def _special(kind: str, where: Path) -> Path:
    """A FIFO, a socket or a directory at ``where``; its description as refused."""
    if kind == "fifo":
        os.mkfifo(where)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(where))
        s.close()
    else:
        where.mkdir()
    return where


def _same_kind(path: Path, kind: str) -> bool:
    mode = os.lstat(path).st_mode
    return {"fifo": stat.S_ISFIFO, "socket": stat.S_ISSOCK, "directory": stat.S_ISDIR}[kind](mode)


@pytest.fixture
def no_replace_of_devices(monkeypatch):
    """A safety net: a regression must fail the test, never replace /dev/null on the machine running it."""
    real = os.replace

    def guarded(src, dst, *a, **k):
        if not stat.S_ISREG(os.stat(dst).st_mode if os.path.exists(dst) else stat.S_IFREG):
            raise AssertionError(f"hcsim tried to replace the non-regular file {dst}")
        return real(src, dst, *a, **k)

    monkeypatch.setattr(os, "replace", guarded)


@pytest.mark.parametrize("command", sorted(FILE_OUTPUTS))
@pytest.mark.parametrize("kind", ["fifo", "socket", "directory"])
def test_a_special_file_as_output_is_refused_and_left(command, kind, tmp_path, no_replace_of_devices):
    target = _special(kind, tmp_path / f"target-{kind}")
    words = {"fifo": "FIFO", "socket": "socket", "directory": "directory"}
    assert_refused(run_here(*_argv(FILE_OUTPUTS[command], tmp_path, str(target))), str(target), words[kind])
    assert _same_kind(target, kind)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, "spec.yaml"])


@pytest.mark.parametrize("command", sorted(FILE_OUTPUTS))
def test_a_device_as_output_is_refused_and_left(command, tmp_path, no_replace_of_devices):
    before = os.stat("/dev/null")
    assert_refused(run_here(*_argv(FILE_OUTPUTS[command], tmp_path, "/dev/null")), "/dev/null", "device")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


@pytest.mark.parametrize("command", sorted(FILE_OUTPUTS))
def test_a_symbolic_link_to_a_device_or_fifo_is_refused(command, tmp_path, no_replace_of_devices):
    os.mkfifo(tmp_path / "fifo")
    for target in ("/dev/null", str(tmp_path / "fifo")):
        link = tmp_path / "link"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        assert_refused(run_here(*_argv(FILE_OUTPUTS[command], tmp_path, str(link))), str(link))
        assert os.readlink(link) == target
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode)


@pytest.mark.parametrize("command", sorted(DIR_OUTPUTS))
@pytest.mark.parametrize("kind", ["fifo", "socket", "file", "device"])
def test_out_directory_that_is_not_a_directory_is_refused(command, kind, tmp_path, no_replace_of_devices):
    if kind == "device":
        target = Path("/dev/null")
    elif kind == "file":
        target = tmp_path / "a-file"
        target.write_text("mine")
    else:
        target = _special(kind, tmp_path / f"target-{kind}")
    words = {"fifo": "FIFO", "socket": "socket", "file": "is a file", "device": "device"}
    line = assert_refused(run_here(*_argv(DIR_OUTPUTS[command], tmp_path, str(target))), "--out", words[kind])
    assert "not a directory" in line
    if kind == "file":
        assert target.read_text() == "mine"


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["platform", "build", "cxl", "--xpus", "8", "-o", ""], "-o/--output is empty"),
        (["platform", "build", "cxl", "--xpus", "8", "-o", "x.xml", "--save-graphml", ""], "--save-graphml is empty"),
        (["platform", "draw", "cxl", "--xpus", "8", "-o", ""], "-o/--output is empty"),
        ([*RUN, "--csv", ""], "--csv is empty"),
        ([*RUN, "--links", ""], "--links is empty"),
        ([*RUN, "--chrome-trace", ""], "--chrome-trace is empty"),
        (["sweep", "examples/sweeps/allreduce.yaml", "--out", ""], "--out is empty"),
        *[(DIR_OUTPUTS[c][:-1] + [""], "--out is empty") for c in sorted(DIR_OUTPUTS)],
    ],
)
def test_an_empty_output_path_is_refused_by_name(argv, flag, tmp_path):
    os.chdir(ROOT)
    assert_refused(run_here(*argv), flag)


def test_two_outputs_on_one_file_are_refused(tmp_path):
    a = tmp_path / "a.csv"
    assert_refused(run_here(*RUN, "--csv", a, "--links", a), "--links", "same file as the output --csv")
    (tmp_path / "sym.csv").symlink_to(a)
    assert_refused(run_here(*RUN, "--csv", a, "--chrome-trace", tmp_path / "sym.csv"), "--chrome-trace", "--csv")
    a.write_text("x")
    os.link(a, tmp_path / "hard.csv")
    assert_refused(run_here(*RUN, "--links", a, "--csv", tmp_path / "hard.csv"), "same file")
    x = tmp_path / "p.xml"
    assert_refused(
        run_here("platform", "build", "cxl", "--xpus", "8", "-o", x, "--save-graphml", tmp_path / "." / "p.xml"),
        "--save-graphml",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "hard.csv", "sym.csv"]
    assert a.read_text() == "x"


def test_an_output_on_an_input_is_refused(tmp_path):
    assert run_here("platform", "build", "cxl", "--xpus", "8", "-o", tmp_path / "p.xml",
                    "--save-graphml", tmp_path / "t.graphml")[0] == 0  # fmt: skip
    platform, graphml = (tmp_path / "p.xml").read_bytes(), (tmp_path / "t.graphml").read_bytes()
    os.link(tmp_path / "t.graphml", tmp_path / "hard.graphml")
    (tmp_path / "sym.xml").symlink_to(tmp_path / "p.xml")
    cases = [
        (["run", "--platform", tmp_path / "p.xml", "--workload", "allreduce", "--iterations", "1",
          "--csv", tmp_path / "sym.xml"], "the input --platform"),
        (["platform", "compile", tmp_path / "t.graphml", "-o", tmp_path / "hard.graphml"], "the input topology"),
        (["platform", "draw", "--graphml", tmp_path / "t.graphml", "-o", tmp_path / "t.graphml"], "--graphml"),
        (["sweep", tmp_path / "spec.yaml", "--out", tmp_path / "spec.yaml"], "the input spec"),
    ]  # fmt: skip
    (tmp_path / "spec.yaml").write_text(SPEC)
    for argv, needle in cases:
        assert_refused(run_here(*argv), needle)
    assert (tmp_path / "p.xml").read_bytes() == platform and (tmp_path / "t.graphml").read_bytes() == graphml
    os.chdir(ROOT)
    trace = tmp_path / "out" / "jobs.csv"
    trace.parent.mkdir()
    trace.write_bytes(Path("examples/traces/sample.swf").read_bytes())
    assert_refused(run_here("cluster", "--trace", trace, "--format", "swf", "--out", trace.parent), "--trace")


def test_an_output_on_an_msccl_algorithm_file_is_refused(tmp_path):
    xml = tmp_path / "ring.xml"
    xml.write_bytes((ROOT / "examples" / "collectives" / "allreduce_ring_2ch_4gpus.xml").read_bytes())
    assert_refused(run_here(*RUN, "--algorithm", xml, "--links", xml), "--links", "the input --algorithm")
    out = tmp_path / "o"
    out.mkdir()
    (out / "collective_allreduce.csv").write_bytes(xml.read_bytes())
    argv = ["collective", "--system", "cxl", "--xpus", "8", "--algorithm", f"ring,{out / 'collective_allreduce.csv'}"]
    assert_refused(run_here(*argv, "--out", out), "--out (CSV)", "--algorithm (item 2)")


def test_a_spec_out_on_its_own_spec_is_refused(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC + f"out: {spec}\n")
    assert_refused(run_here("sweep", spec), "the spec's 'out:'", "same file as the input spec")
    assert spec.read_text() == SPEC + f"out: {spec}\n"


def test_missing_parents_are_created_for_files_and_directories(tmp_path):
    out = tmp_path / "a" / "b" / "p.xml"
    status, _, err = run_here("platform", "build", "cxl", "--xpus", "8", "-o", out, "--save-graphml",
                              tmp_path / "g" / "t.graphml")  # fmt: skip
    assert status == 0, err
    assert out.stat().st_size > 0 and (tmp_path / "g" / "t.graphml").stat().st_size > 0
    status, _, err = run_here(*RUN, "--csv", tmp_path / "c" / "d" / "x.csv", "--json")
    assert status == 0, err
    assert (tmp_path / "c" / "d" / "x.csv").read_text().startswith("vertex")
    status, _, err = run_here("collective", "--system", "cxl", "--xpus", "8", "--sizes", "1KiB",
                              "--algorithm", "ring", "--out", tmp_path / "e" / "f")  # fmt: skip
    assert status == 0, err
    assert sorted(p.name for p in (tmp_path / "e" / "f").iterdir()) == ["collective_allreduce.csv",
                                                                         "collective_allreduce.png"]  # fmt: skip


@pytest.mark.parametrize(
    "argv,written",
    [
        (["sweep", "{tmp}/s.yaml", "--out", "{tmp}/g/h/r.jsonl", "-j", "1"], "g/h/r.jsonl"),
        (["serve", "--gpu", "v100", "--rho", "0.5", "--requests", "2000", "--out", "{tmp}/i/j"], "i/j/summary.json"),
        (["queue-selection", "--set", "1a", "--method", "mql", "--replications", "1", "--period", "600",
          "--out", "{tmp}/k/l"], "k/l/summary.csv"),
    ],
)  # fmt: skip
def test_every_command_creates_missing_parents(argv, written, tmp_path):
    (tmp_path / "s.yaml").write_text("function: hcsim.sweep.experiments:synthetic\ngrid: {value: [1]}\n")
    status, _, err = run_here(*[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert status == 0, err
    assert (tmp_path / written).stat().st_size > 0


def test_a_path_under_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    assert_refused(run_here(*RUN, "--csv", tmp_path / "f" / "x.csv"), "is not a directory")
    assert_refused(run_here("queue-selection", "--out", tmp_path / "f" / "d"), "is not a directory")


def test_a_symbolic_link_to_a_file_keeps_pointing_at_the_new_file(tmp_path):
    target = tmp_path / "real.xml"
    target.write_text("old")
    (tmp_path / "link.xml").symlink_to(target)
    assert run_here("platform", "build", "cxl", "--xpus", "8", "-o", tmp_path / "link.xml")[0] == 0
    assert os.path.islink(tmp_path / "link.xml") and target.read_text().startswith("<?xml")


def test_no_file_exists_while_the_work_runs(tmp_path, monkeypatch):
    """The outputs (and their temporary files, and missing parents) appear only once the simulation has ended."""
    import hcsim.cli.platform as platform_cli
    import hcsim.cli.run as run_cli

    seen = []

    def watching(real):
        def wrapper(*a, **k):
            seen.append(sorted(p.name for p in tmp_path.rglob("*")))
            return real(*a, **k)

        return wrapper

    monkeypatch.setattr(platform_cli, "build_topology", watching(platform_cli.build_topology))
    monkeypatch.setattr(run_cli, "simulate_system", watching(run_cli.simulate_system))
    status, _, err = run_here("platform", "build", "cxl", "--xpus", "8", "-o", tmp_path / "d" / "p.xml",
                              "--save-graphml", tmp_path / "t.graphml")  # fmt: skip
    assert status == 0, err
    status, _, err = run_here(*RUN, "--csv", tmp_path / "e" / "x.csv", "--links", tmp_path / "l.csv", "--json")
    assert status == 0, err
    assert seen == [[], ["d", "p.xml", "t.graphml"]]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["d", "e", "l.csv", "p.xml", "t.graphml", "x.csv"]


def test_a_failed_write_leaves_nothing_not_even_new_parents(tmp_path):
    target = tmp_path / "new" / "deeper" / "x.txt"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        Path(tmp).write_text("half")
        raise RuntimeError("stopped")
    assert list(tmp_path.iterdir()) == []


def test_the_library_checks_name_what_is_wrong(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(HcsimError, match="'--csv' is empty|--csv is empty"):
        check_output_path("", "--csv")
    with pytest.raises(HcsimError, match="FIFO"):
        check_output_path(tmp_path / "fifo")
    with pytest.raises(HcsimError, match="FIFO .*not a directory"):
        check_output_dir(tmp_path / "fifo")
    (tmp_path / "ro.txt").write_text("x")
    os.chmod(tmp_path / "ro.txt", 0o444)
    if os.geteuid() != 0:  # root may write anything: the check is os.access
        with pytest.raises(HcsimError, match="read-only"):
            check_output_path(tmp_path / "ro.txt")
    check_distinct({"--a": tmp_path / "x", "--b": tmp_path / "y"}, {"in": tmp_path / "z"})
    with pytest.raises(HcsimError, match="--b .* same file as the input in"):
        check_distinct({"--a": tmp_path / "x", "--b": tmp_path / "sub" / ".." / "z"}, {"in": tmp_path / "z"})


def _start(argv: list[str], cwd: Path, tmpdir: Path | None = None) -> subprocess.Popen:
    """``hcsim argv`` with its progress bar; returns once the simulation is running (its platform loaded).

    ``tmpdir``: the process's TMPDIR (a private one, to see what it leaves there).
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    p = subprocess.Popen([*CLI, *argv, "--progress"], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen, t0 = b"", time.monotonic()
    while b"simulating" not in seen:
        chunk = os.read(p.stderr.fileno(), 4096)
        assert chunk and time.monotonic() - t0 < 300, seen
        seen += chunk
    time.sleep(1.0)
    return p


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:  # the process ended meanwhile
        return []


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


LONG_RUN = ["run", "--system", "cxl", "--xpus", "64", "--workload", "llama2-13b", "--iterations", "10000"]


@pytest.mark.slow
def test_ctrl_c_stops_a_long_run_within_a_second(tmp_path):
    p = _start([*LONG_RUN, "--csv", str(tmp_path / "out" / "x.csv")], tmp_path)
    t = time.perf_counter()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    elapsed = time.perf_counter() - t
    assert p.returncode == 130, err
    assert err.decode().strip().splitlines()[-1] == "hcsim: interrupted"
    assert elapsed <= 1.0, elapsed
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_run_leaves_no_file(sig, tmp_path):
    """Nothing is created before the work is done, so even SIGKILL leaves the output directory as it was.

    The compiled platform SimGrid is running is no file either (an anonymous in-memory one): the
    process's private temporary directory stays empty.
    """
    (tmp_path / "keep.csv").write_text("old")
    (tmp_path / "tmp").mkdir()
    p = _start([*LONG_RUN, "--csv", "keep.csv", "--links", "new/l.csv"], tmp_path, tmpdir=tmp_path / "tmp")
    p.send_signal(sig)
    p.communicate(timeout=60)
    assert p.returncode == (143 if sig == signal.SIGTERM else -signal.SIGKILL)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["keep.csv", "tmp"]
    assert (tmp_path / "keep.csv").read_text() == "old"
    assert list((tmp_path / "tmp").iterdir()) == []


IMPORTED_RUN = (
    f"run --platform {ROOT}/examples/astra-sim/HGX-H100.yml --workload allreduce --bytes 1GiB --iterations 100000"
)
COLLECTIVE_RUN = "collective --system cxl --xpus 16 --algorithm ring --sizes 1GiB --iterations 10000"


@pytest.mark.parametrize(
    "argv", [IMPORTED_RUN.split(), COLLECTIVE_RUN.split()], ids=["run-imported-network", "collective"]
)
def test_sigkill_leaves_no_compiled_platform_in_the_temporary_directory(argv, tmp_path):
    """SIGKILL once SimGrid has loaded the platform hcsim compiled: nothing is left in TMPDIR (item 1)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "TMPDIR": str(tmp_path)}  # fmt: skip
    p = subprocess.Popen([*CLI, *argv], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0, held = time.monotonic(), []
    while not any(h.startswith("/memfd:platform.xml") for h in held):  # the simulation process runs it
        assert p.poll() is None and time.monotonic() - t0 < 120, held
        time.sleep(0.1)
        kids = Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()
        held = [_link(f"/proc/{kid}/fd/{fd}") for kid in kids for fd in _listdir(f"/proc/{kid}/fd")]
    time.sleep(0.5)  # SimGrid has parsed it
    p.kill()
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ YAML: a key given twice
def test_load_yaml_refuses_a_key_given_twice():
    assert load_yaml("a: 1\nb: {c: 2}\n", "x") == {"a": 1, "b": {"c": 2}}
    with pytest.raises(HcsimError, match=r"spec: duplicate key 'grid' at line 3 \(first at line 1"):
        load_yaml("grid: {a: [1]}\nfixed: {}\ngrid: {b: [2]}\n", "spec")
    with pytest.raises(HcsimError, match=r"duplicate key 'x' at line 3 \(first at line 2"):
        load_yaml("top:\n  x: 1\n  x: 2\n", "spec")


def test_every_yaml_input_refuses_a_key_given_twice(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC + "fixed: {system: noncoherent}\n")
    assert_refused(run_here("sweep", spec), "duplicate key 'fixed'", "spec.yaml")
    net = tmp_path / "net.yml"
    net.write_text("topology: [Switch]\nnpus_count: [8]\nnpus_count: [16]\nbandwidth: [50]\nlatency: [500]\n")
    assert_refused(run_here("platform", "import", net, "-o", tmp_path / "p.xml"), "duplicate key 'npus_count'")
    from hcsim.calibration.schema import parse_calibration

    with pytest.raises(HcsimError, match="calibration: duplicate key 'version'"):
        parse_calibration("version: 1\nversion: 2\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.yml", "spec.yaml"]


# ------------------------------------------------------------------ a directory given as a file
@pytest.mark.parametrize(
    "argv",
    [
        ["platform", "check", "{d}"],
        ["platform", "compile", "{d}", "-o", "{tmp}/x.xml"],
        ["platform", "import", "{d}", "-o", "{tmp}/x.xml"],
        ["platform", "draw", "--graphml", "{d}", "-o", "{tmp}/x.png"],
        ["run", "--platform", "{d}", "--workload", "allreduce", "--iterations", "1"],
        ["run", "--system", "cxl", "--xpus", "8", "--model", "{d}"],
        ["run", "--system", "dgx-h100", "--xpus", "8", "--model", "llama2-7b", "--calibration", "{d}"],
        ["collective", "--platform", "{d}"],
        ["cluster", "--trace", "{d}"],
        ["sweep", "{d}"],
    ],
)
def test_a_directory_given_as_a_file_says_so(argv, tmp_path):
    (tmp_path / "d").mkdir()
    args = [a.replace("{d}", str(tmp_path / "d")).replace("{tmp}", str(tmp_path)) for a in argv]
    assert_refused(run_here(*args), str(tmp_path / "d"), "is a directory")
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


# ------------------------------------------------------------------ collective --json: the model's numbers only
def test_collective_json_rows_hold_no_host_time():
    import json

    argv = ["collective", "--system", "cxl", "--xpus", "8", "--sizes", "1KiB,1MiB", "--algorithm", "ring", "--json"]
    status, out, err = run_here(*argv)
    assert status == 0, err
    doc = json.loads(out)
    assert doc["rows"] and all("wall_s" not in r for r in doc["rows"]) and "host_times" not in doc
    assert run_here(*argv)[1] == out  # the same bytes on a rerun
    status, out, err = run_here(*argv, "--host-times")
    assert status == 0, err
    host = json.loads(out)["host_times"]
    assert [(h["algorithm"], h["size_bytes"]) for h in host] == [("ring", 1024), ("ring", 2**20)]
    assert all(h["wall_s"] > 0 for h in host)
    assert_refused(run_here(*argv[:-1], "--host-times"), "--host-times applies with --json")


# ------------------------------------------------------------------ run's progress bar
def test_run_shows_progress_when_asked_and_not_otherwise():
    shown = run(*RUN, "--iterations", "3", "--progress")
    assert shown.returncode == 0, shown.stderr
    assert "simulating" in shown.stderr and "iteration" in shown.stderr
    quiet = run(*RUN, "--no-progress")
    assert quiet.returncode == 0 and "simulating" not in quiet.stderr
    piped = run(*RUN, "--iterations", "3")  # stderr is a pipe here: no bar by default
    assert piped.returncode == 0 and "simulating" not in piped.stderr
    assert shown.stdout == piped.stdout  # the bar leaves the summary as it was


def test_batch_per_second_is_defined_where_it_is_printed():
    status, out, err = run_here(*RUN)
    assert status == 0, err
    line = next(x for x in out.splitlines() if "batch/s" in x)
    assert "global batches" in line and "steady iteration" in line


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
