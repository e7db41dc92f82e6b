"""Faults: a killed Dask worker, a killed or interrupted sweep client, a command killed while it writes.

What must hold after each: resuming gives exactly one ``ok`` row per point, no
duplicate, nothing that had a row computed again; no simulation process outlives
the process that started it (none keeps a ``/dev/shm`` CPU lock, see
:func:`hcsim.simgrid_runtime.pin_to_free_cpu`); an output file is either absent or complete.

How the tests see what happened: the sweep function (written into the directory the
sweep runs in, which also checks that such a function is found) records every
execution as a file ``<value>.<pid>.<parent pid>`` and its SimGrid child as ``<value>.<pid>.child``;
every process the test starts carries a tag in its environment, so leaked processes
are found by the tag, wherever they were reparented to, and are not confused with
other simulations on the machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
ROOT = os.path.dirname(HERE)
CLI = [sys.executable, "-m", "hcsim.cli"]
TAG = "HCSIM_FAULT_TEST_TAG"

POINT_MODULE = '''
"""A sweep point for the fault tests: log the run, hold a SimGrid engine in a forked child a while."""
import os
import time

from hcsim.simgrid_runtime import new_engine, run_isolated


def _in_child(value, seconds, log):
    open(os.path.join(log, f"{value}.{os.getppid()}.{os.getpid()}.child"), "w").close()
    new_engine()  # a real SimGrid engine, in the process that holds the CPU lock
    time.sleep(seconds)
    return {"double": 2 * value, "payload": "x" * 200_000}  # more than a pipe holds: the answer blocks if unread


def work(value, seconds, log):
    open(os.path.join(log, f"{value}.{os.getpid()}.{os.getppid()}"), "w").close()
    answer = run_isolated(_in_child, value, seconds, log)
    return {"double": answer["double"], "payload_bytes": len(answer["payload"])}
'''


# ---------------------------------------------------------------------- helpers
def _tagged(tag: str) -> list[int]:
    """Live (not zombie) processes carrying ``tag`` in their environment, this one excepted."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if f"{TAG}={tag}".encode() not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if b"multiprocessing.resource_tracker" in f.read():  # this test process's helper (Dask started it)
                    continue
        except OSError:
            continue
        found.append(int(name))
    return found


def _lock_holders() -> set[int]:
    """Pids holding a lock on one of the CPU lock files (``/proc/locks``)."""
    inodes = set()
    for name in os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else []:
        if name.startswith("hcsim-cpu"):
            inodes.add(os.stat(os.path.join("/dev/shm", name)).st_ino)
    holders = set()
    with open("/proc/locks") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 5 and parts[1] == "FLOCK" and int(parts[5].rsplit(":", 1)[1]) in inodes:
                holders.add(int(parts[4]))
    return holders


def assert_nothing_leaked(tag: str, within: float = 10.0) -> None:
    """No tagged process is alive (after ``within`` s for the kernel's parent-death signals), no CPU lock is ours."""
    deadline = time.monotonic() + within
    while _tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _tagged(tag)
    assert not alive, f"leaked processes: {[(p, Path(f'/proc/{p}/cmdline').read_bytes()[:120]) for p in alive]}"
    assert not (_lock_holders() & set(alive))


def _wait_for(condition, timeout: float, what: str, every: float = 0.02) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


class Sweep:
    """A sweep of ``points`` points of ``work`` in a directory of its own, run through the CLI."""

    def __init__(self, directory: Path, points: int, seconds: float, tag: str) -> None:
        self.dir, self.points, self.tag = directory, points, tag
        self.log = directory / "log"
        self.log.mkdir()
        (directory / "faultpoint.py").write_text(POINT_MODULE)
        spec = {
            "function": "faultpoint:work",
            "fixed": {"seconds": seconds, "log": str(self.log)},
            "grid": {"value": list(range(points))},
            "timeout": 120,
        }
        (directory / "spec.yaml").write_text(yaml.safe_dump(spec))
        self.out = directory / "results.jsonl"
        # no PYTHONPATH to the directory: the sweep must find faultpoint.py as the points do
        self.env = {**os.environ, TAG: tag, "PYTHONPATH": ROOT}

    def args(self, *extra: str) -> list[str]:
        return [*CLI, "sweep", "spec.yaml", "--out", str(self.out), *extra]

    def start(self, *extra: str) -> subprocess.Popen:
        return subprocess.Popen(
            self.args(*extra),
            cwd=self.dir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group, as a terminal gives a foreground job
        )

    def run(self, *extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.args(*extra), cwd=self.dir, env=self.env, capture_output=True, text=True, timeout=180
        )

    def rows(self) -> list[dict]:
        if not self.out.exists():
            return []
        return [json.loads(line) for line in self.out.read_text().splitlines()]  # every line whole JSON

    def executions(self) -> dict[int, int]:
        """How many times each value started (children not counted)."""
        counts: dict[int, int] = {}
        for p in self.log.iterdir():
            if not p.name.endswith(".child"):
                value = int(p.name.split(".")[0])
                counts[value] = counts.get(value, 0) + 1
        return counts

    def parents(self, value: int) -> list[int]:
        """The processes (sweep client or Dask worker) that started a run of ``value``."""
        names = [p.name.split(".") for p in self.log.iterdir() if not p.name.endswith(".child")]
        return [int(parent) for v, _, parent in names if int(v) == value]

    def children(self) -> list[tuple[int, int, int]]:
        """(value, point pid, child pid) of every SimGrid child started."""
        out = []
        for p in self.log.iterdir():
            if p.name.endswith(".child"):
                value, point, child, _ = p.name.split(".")
                out.append((int(value), int(point), int(child)))
        return out

    def assert_complete(self) -> None:
        rows = self.rows()
        assert len(rows) == self.points, rows
        assert len({r["id"] for r in rows}) == self.points  # no duplicates
        assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["status"] != "ok"]
        assert sorted(r["result"]["double"] for r in rows) == [2 * v for v in range(self.points)]
        assert all(r["result"]["payload_bytes"] == 200_000 for r in rows)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.fixture(autouse=True)
def _default_signal_dispositions():
    """Start every command with the signal dispositions an interactive shell gives.

    An ignored signal is inherited by child processes: a test run started in the
    background (``nohup ... &``, where the shell ignores SIGINT) would hand the commands
    an ignored Ctrl-C, and hcsim rightly leaves an ignored signal alone.
    """
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


@pytest.fixture
def tag():
    value = uuid.uuid4().hex
    yield value
    for pid in _tagged(value):  # a failed test must not leave its processes to the next ones
        os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------------- the sweep client dies
@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "executor"),
    [("SIGKILL", "local"), ("SIGTERM", "local"), ("one Ctrl-C", "local"), ("two Ctrl-C", "local"),
     ("SIGKILL", "dask"), ("two Ctrl-C", "dask")],
)  # fmt: skip
def test_sweep_client_killed_then_resumed(how, executor, tmp_path, tag):
    sweep = Sweep(tmp_path, points=6, seconds=1.5, tag=tag)
    args = ("-j", "2", "--executor", executor)  # dask: a local cluster the sweep starts and owns
    t0 = time.monotonic()
    proc = sweep.start(*args)
    try:
        _wait_for(lambda: len(sweep.rows()) >= 1 and len(sweep.children()) >= 3, 90, "a row and running points")
        if how == "SIGKILL":
            proc.kill()
        elif how == "SIGTERM":
            proc.terminate()
        else:  # a Ctrl-C at a terminal reaches the whole foreground process group
            for _ in range(1 if how == "one Ctrl-C" else 2):
                os.killpg(proc.pid, signal.SIGINT)
                time.sleep(0.1)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    if how == "SIGKILL":
        assert proc.returncode == -signal.SIGKILL
    elif how == "SIGTERM":
        assert (proc.returncode, stderr) == (143, "hcsim: terminated\n")
    else:
        assert (proc.returncode, stderr) == (130, "hcsim: interrupted\n")  # one line, however many Ctrl-C
    killed_at = time.monotonic() - t0
    assert_nothing_leaked(tag)
    assert all(not _alive(child) for _, _, child in sweep.children())
    done = {r["params"]["value"] for r in sweep.rows()}
    assert 1 <= len(done) < sweep.points
    before = sweep.executions()

    again = sweep.run(*args)
    assert again.returncode == 0, again.stderr
    assert f"{sweep.points} points, {len(done)} already done, {sweep.points - len(done)} ok, 0 failed" in again.stdout
    sweep.assert_complete()
    after = sweep.executions()
    assert all(after[v] == before[v] for v in done)  # nothing with a row ran again
    assert all(after[v] == before.get(v, 0) + 1 for v in range(sweep.points) if v not in done)
    assert_nothing_leaked(tag)
    total = time.monotonic() - t0
    print(f"{how} ({executor}): stopped after {killed_at:.1f} s, {len(done)} rows kept, all done at {total:.1f} s")


# ---------------------------------------------------------------------- a Dask worker dies
@pytest.mark.slow
def test_dask_worker_killed_mid_sweep_then_resumed(tmp_path, tag, monkeypatch):
    from distributed import Client, LocalCluster

    monkeypatch.setenv(TAG, tag)  # the workers, their points and the points' children carry it
    sweep = Sweep(tmp_path, points=8, seconds=1.5, tag=tag)
    t0 = time.monotonic()
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        workers = set(client.run(os.getpid).values())
        args = ("--executor", "dask", "--scheduler", cluster.scheduler_address)
        proc = sweep.start(*args)
        try:
            _wait_for(lambda: len(sweep.rows()) >= 2, 90, "two rows")
            running = []

            def a_point_runs() -> bool:
                running[:] = [c for c in sweep.children() if _alive(c[2]) and _alive(c[1])]
                return bool(running)

            _wait_for(a_point_runs, 60, "a running point")
            value, point, child = running[0]
            worker = int(Path(f"/proc/{point}/stat").read_text().rsplit(")", 1)[1].split()[1])  # the point's parent
            assert worker in workers
            os.kill(worker, signal.SIGKILL)  # the worker dies with a point (and its SimGrid child) running
            rows_at_kill = {r["params"]["value"] for r in sweep.rows()}
            _wait_for(lambda: not _alive(child) and not _alive(point), 10, "the orphaned point to die")
            _, stderr = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, stderr
        assert len(rows_at_kill) < sweep.points
        sweep.assert_complete()
        runs = sweep.executions()
        assert runs[value] == 2  # the point that was running when its worker died ran again, elsewhere
        assert all(runs[v] == 1 for v in rows_at_kill), (runs, rows_at_kill)  # a point with a row never ran again
        for v, n in runs.items():  # a point ran twice only if its first run was on the dead worker
            # (a result finished there but not yet fetched by the client is lost with it: Dask recomputes it)
            assert n == 1 or (n == 2 and worker in sweep.parents(v)), (v, n, sweep.parents(v), worker)
        again = sweep.run(*args)
        assert again.returncode == 0 and f"{sweep.points} already done, 0 ok" in again.stdout, again
        assert sweep.executions() == runs and len(sweep.rows()) == sweep.points  # nothing recomputed
    assert_nothing_leaked(tag)
    print(f"killed-worker sweep and resume: {time.monotonic() - t0:.1f} s")


# ---------------------------------------------------------------------- the SimGrid child dies
def test_a_killed_simulation_child_fails_its_point_and_the_sweep_goes_on(tmp_path, tag):
    sweep = Sweep(tmp_path, points=3, seconds=2.0, tag=tag)
    proc = sweep.start("-j", "1")
    try:
        _wait_for(lambda: sweep.children(), 60, "a SimGrid child")
        value, _, child = sweep.children()[0]
        os.kill(child, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=60)  # used to hang when the child held its own pipe
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1 and "2 ok, 1 failed" in stdout, (stdout, stderr)
    (failed,) = [r for r in sweep.rows() if r["status"] != "ok"]
    assert failed["params"]["value"] == value and "exit code -9" in failed["error"]
    again = sweep.run("-j", "1")  # resume runs the failed point only
    assert again.returncode == 0 and "3 points, 2 already done, 1 ok, 0 failed" in again.stdout, again
    assert sweep.executions()[value] == 2
    assert_nothing_leaked(tag)


def test_a_point_past_its_timeout_leaves_no_simulation_behind(tmp_path, tag):
    sweep = Sweep(tmp_path, points=1, seconds=60.0, tag=tag)
    spec = yaml.safe_load((tmp_path / "spec.yaml").read_text())
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({**spec, "timeout": 3}))
    t0 = time.monotonic()
    r = sweep.run("-j", "1")
    assert r.returncode == 1 and "0 ok, 1 failed" in r.stdout, r
    assert time.monotonic() - t0 < 30
    assert sweep.rows()[0]["status"] == "timeout"
    assert_nothing_leaked(tag, within=5)


# ---------------------------------------------------------------------- a command killed while it writes
RUN_ARGS = ["run", "--system", "noncoherent", "--xpus", "16", "--workload", "llama2-13b", "--iterations", "2",
            "--chrome-trace", "trace.json", "--csv", "trace.csv", "--links", "links.csv"]  # fmt: skip
RUN_OUTPUTS = ("trace.json", "trace.csv", "links.csv")


def _stop_while_writing(directory: Path, sig: int, tag: str) -> subprocess.CompletedProcess:
    """Start ``hcsim run``; send ``sig`` the moment a temporary output file appears (mid-write)."""
    env = {**os.environ, TAG: tag, "PYTHONPATH": ROOT}
    proc = subprocess.Popen(
        [*CLI, *RUN_ARGS], cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not any(n.startswith(".hcsim-") for n in os.listdir(directory)):
            assert proc.poll() is None, "the run ended before writing"
            assert time.monotonic() < deadline, "no output was written in time"
            time.sleep(0.001)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.slow
def test_run_killed_mid_write_leaves_no_partial_output(tmp_path, tag):
    reference = tmp_path / "reference"
    reference.mkdir()
    r = subprocess.run([*CLI, *RUN_ARGS], cwd=reference, capture_output=True, timeout=300, env={**os.environ, TAG: tag})
    assert r.returncode == 0, r.stderr
    complete = {n: (reference / n).read_bytes() for n in RUN_OUTPUTS}
    for sig, code in ((signal.SIGKILL, -signal.SIGKILL), (signal.SIGTERM, 143), (signal.SIGINT, 130)):
        here = tmp_path / signal.Signals(sig).name
        here.mkdir()
        stopped = _stop_while_writing(here, sig, tag)
        assert stopped.returncode == code, stopped.stderr
        if sig != signal.SIGKILL:  # stopped by a signal it handles: one line, its temporary file removed
            assert stopped.stderr.strip().splitlines() == ["hcsim: terminated" if sig == signal.SIGTERM else
                                                           "hcsim: interrupted"]  # fmt: skip
            assert not [n for n in os.listdir(here) if n.startswith(".hcsim-")]
        written = [n for n in RUN_OUTPUTS if (here / n).exists()]
        assert len(written) < len(RUN_OUTPUTS)  # it was stopped before the last file
        for name in written:  # a file that exists is whole
            assert (here / name).read_bytes() == complete[name], name
        assert set(os.listdir(here)) - set(RUN_OUTPUTS) <= {n for n in os.listdir(here) if n.startswith(".hcsim-")}
    assert_nothing_leaked(tag)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_run_killed_mid_simulation_leaves_no_simulation_and_no_output(tmp_path, tag, sig):
    env = {**os.environ, TAG: tag, "PYTHONPATH": ROOT}
    proc = subprocess.Popen(
        [*CLI, *RUN_ARGS[:8], "200", *RUN_ARGS[9:]],  # 200 iterations: seconds of simulation to interrupt
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        seen: set[int] = set()

        def simulating() -> bool:  # the long child: the one still there a second after it started
            assert proc.poll() is None, "the run ended too soon"
            now = set(map(int, children.read_text().split()))
            long = now & seen
            seen.update(now)
            return bool(long)

        _wait_for(simulating, 60, "the SimGrid child", every=1.0)
        proc.send_signal(sig)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    _wait_for(lambda: not any(_alive(c) for c in seen), 10, "the SimGrid child to die with its parent")
    assert os.listdir(tmp_path) == []  # nothing written, not even a temporary file
    assert_nothing_leaked(tag)


# ---------------------------------------------------------------------- where the sweep function comes from
def test_a_sweep_function_in_the_current_directory_is_found_by_the_hcsim_script(tmp_path, tag):
    """The ``hcsim`` script (unlike ``python -m``) has no current directory on sys.path; points always had it."""
    (tmp_path / "study").mkdir()
    sweep = Sweep(tmp_path / "study", points=2, seconds=0.0, tag=tag)
    script = tmp_path / "bin" / "hcsim"
    script.parent.mkdir()
    script.write_text("import sys\nfrom hcsim.cli import main\nsys.exit(main())\n")  # as pip's entry point does
    r = subprocess.run(
        [sys.executable, str(script), "sweep", "spec.yaml", "--out", str(sweep.out), "-j", "1"],
        cwd=sweep.dir, env=sweep.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0 and "2 points, 0 already done, 2 ok" in r.stdout, r
    sweep.assert_complete()
