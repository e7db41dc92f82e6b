"""Run a sweep on a local process pool or a Dask cluster, resumably.

One code path: both executors map the same :func:`run_point` over the points that are
not done yet and hand back rows as they complete; only this process appends rows to
the results file (JSON lines, flushed and fsync'ed one by one). Hence:

* **resume**: a re-run reads the file and skips every point with an ``ok`` row; points
  that failed are tried again (their error rows stay, as history);
* **no loss, no duplicates**: a point whose Dask worker dies is rescheduled by Dask on
  another worker; its row is written once, when its future completes;
* **failures are data**: a point that raises, crashes or passes its timeout is recorded
  with ``status`` ``error`` or ``timeout`` and the sweep goes on.

Each point runs as ``python -m hcsim.sweep.point`` in a process of its own (a SimGrid
engine is one per process; daemonic Dask workers may still start a subprocess), which
is killed at its timeout and dies with its parent (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from hcsim.errors import HcsimError
from hcsim.files import check_output_path
from hcsim.outputs import json_line
from hcsim.progress import progress_bar
from hcsim.simgrid_runtime import die_with_parent
from hcsim.sweep.point import MARKER
from hcsim.sweep.spec import Point, SweepSpec

__all__ = ["run_point", "run_sweep", "read_results", "SweepReport"]


_LIVE: set[subprocess.Popen] = set()  # point processes this process runs now
_LIVE_LOCK = threading.Lock()


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the point and its SimGrid child (the point leads a process group of its own)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_running_points() -> None:
    """Kill every point process this process runs now (a sweep interrupted by Ctrl-C)."""
    with _LIVE_LOCK:
        for proc in _LIVE:
            if proc.returncode is None:  # not reaped yet: its pid is still its own
                _kill_group(proc)


def run_point(
    function: str, point_id: str, params: dict[str, Any], timeout: float | None, path: str | None = None
) -> dict[str, Any]:
    """Run one point in a fresh Python process; always return a row (never raise).

    The point process sees the current directory and ``path`` (the sweep client's
    directory, if it exists here) on its ``PYTHONPATH``. It leads a process group of its
    own, so a Ctrl-C at the terminal reaches only the sweep client, which kills it
    (:func:`kill_running_points`); it dies with its parent (``PR_SET_PDEATHSIG``).
    """
    env = dict(os.environ)
    extra = [os.getcwd()] + ([path] if path and os.path.isdir(path) else [])
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in [*extra, env.get("PYTHONPATH", "")] if p))
    request = json.dumps({"function": function, "params": params})
    row: dict[str, Any] = {"id": point_id, "params": params, "worker": f"{socket.gethostname()}:{os.getpid()}"}
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "hcsim.sweep.point"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
    except OSError as exc:  # could not even start the point (no memory, too many files...)
        row.update(status="error", error=f"could not start the point: {exc}", result=None)
        row["seconds"] = time.perf_counter() - t0
        return row
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        stdout, stderr = proc.communicate(request, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        row.update(status="timeout", error=f"point exceeded its timeout of {timeout} s", result=None)
        row["seconds"] = time.perf_counter() - t0
        return row
    finally:
        if proc.returncode is None:  # interrupted while waiting (this thread got the exception)
            _kill_group(proc)
            proc.wait()
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    row["seconds"] = time.perf_counter() - t0
    answer: Any = {}
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                answer = json.loads(line[len(MARKER) :])
            except json.JSONDecodeError:
                answer = {}
            break
    if not isinstance(answer, dict):
        answer = {}
    if "result" in answer:
        row.update(status="ok", result=answer["result"], error=None)
    else:
        reason = answer.get("error")
        if reason is None:
            tail = stderr.strip().splitlines()
            reason = f"point process exited with code {proc.returncode}" + (f": {tail[-1]}" if tail else "")
        row.update(status="error", result=None, error=reason)
    return row


# ---------------------------------------------------------------------- results file
#: Host facts of a row (how long, where), kept out of the results file: they differ between reruns.
HOST_FIELDS = ("seconds", "worker")
#: Host facts some experiment functions put in their result (host time of SimGrid's loop).
RESULT_HOST_FIELDS = ("wall_s",)


def timings_path(path: str | os.PathLike[str]) -> str:
    """The host-timings file beside a results file: ``r.jsonl`` -> ``r.timings.jsonl``."""
    base, ext = os.path.splitext(os.fspath(path))
    return f"{base}.timings{ext or '.jsonl'}"


def split_row(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A row as (its reproducible part, for the results file; its host timings, for the timings file)."""
    record = {k: v for k, v in row.items() if k not in HOST_FIELDS}
    timing: dict[str, Any] = {"id": row["id"], **{k: row.get(k) for k in HOST_FIELDS}}
    result = row.get("result")
    if isinstance(result, dict) and any(k in result for k in RESULT_HOST_FIELDS):
        record["result"] = {k: v for k, v in result.items() if k not in RESULT_HOST_FIELDS}
        timing["result"] = {k: result[k] for k in RESULT_HOST_FIELDS if k in result}
    return record, timing


def _json_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    rows = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and "id" in row:
                    rows.append(row)
    except FileNotFoundError:
        pass
    return rows


def read_results(path: str | os.PathLike[str], *, timings: bool = True) -> list[dict[str, Any]]:
    """Rows of a results file; a line cut short by a crash is skipped, not an error.

    With ``timings`` each row gets its host facts back from the timings file (``seconds``,
    ``worker`` and e.g. ``result["wall_s"]``), matched by point id in order of writing.
    """
    rows = _json_rows(path)
    if not timings:
        return rows
    pending: dict[str, list[dict[str, Any]]] = {}
    for t in _json_rows(timings_path(path)):
        pending.setdefault(t["id"], []).append(t)
    for row in rows:
        queue = pending.get(row["id"])
        if not queue:
            continue
        t = queue.pop(0)
        row.update({k: t.get(k) for k in HOST_FIELDS})
        if isinstance(row.get("result"), dict) and isinstance(t.get("result"), dict):
            row["result"] = {**row["result"], **t["result"]}
    return rows


class _LinesFile:
    """Append-only JSON lines, one ``write`` and ``fsync`` per row; opened at the first row."""

    def __init__(self, path: str) -> None:
        check_output_path(path)
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise HcsimError(f"results file '{path}' is not writable (valid: a writable path)")
        self.path = path
        self._fd: int | None = None

    def append(self, row: dict[str, Any]) -> None:
        line = json_line(row).encode()
        if self._fd is None:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)  # one rule: parents created
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            size = os.fstat(self._fd).st_size
            if size > 0:
                with open(self.path, "rb") as r:
                    r.seek(size - 1)
                    if r.read(1) != b"\n":  # a previous run died mid-line: start on a fresh one
                        line = b"\n" + line
        os.write(self._fd, line)  # one system call: a signal cannot cut the row in two
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _ResultsFile:
    """The results file and its timings file; checked up front (a failed start leaves nothing)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._results = _LinesFile(path)
        self._timings = _LinesFile(timings_path(path))

    def append(self, row: dict[str, Any]) -> None:
        record, timing = split_row(row)
        self._results.append(record)
        self._timings.append(timing)

    def close(self) -> None:
        self._results.close()
        self._timings.close()


# ---------------------------------------------------------------------- executors
def _local(spec: SweepSpec, points: list[Point], jobs: int) -> Iterator[dict[str, Any]]:
    pool = ThreadPoolExecutor(max_workers=jobs)
    finished = False
    here = os.getcwd()
    try:
        futures = [pool.submit(run_point, spec.function, p.id, p.params, spec.timeout, here) for p in points]
        for fut in as_completed(futures):
            yield fut.result()
        finished = True
    finally:  # on Ctrl-C or an error: start no queued point, kill the running ones, and wait for their threads
        pool.shutdown(wait=False, cancel_futures=not finished)
        if not finished:
            kill_running_points()
        pool.shutdown(wait=True)


@contextlib.contextmanager
def _workers_ignore_ctrl_c() -> Iterator[None]:
    """Start local Dask workers with SIGINT ignored (inherited through exec): Ctrl-C is the client's.

    Otherwise a Ctrl-C at the terminal reaches every worker of the foreground process
    group, and each prints its tracebacks; the client closes the cluster instead.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _dask(spec: SweepSpec, points: list[Point], jobs: int, scheduler: str | None) -> Iterator[dict[str, Any]]:
    import dask
    from distributed import Client, LocalCluster
    from distributed import as_completed as dask_completed

    cluster = None
    finished = False
    here = os.getcwd()
    if scheduler:
        quiet = logging.getLogger("distributed")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)  # connection retries would print; the one-line error says it all
        try:
            client = Client(scheduler, timeout="5s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise HcsimError(f"Dask scheduler '{scheduler}' is unreachable: {str(exc).splitlines()[0]}") from None
        finally:
            quiet.setLevel(level)
    else:
        with dask.config.set({"distributed.worker.daemon": False}), _workers_ignore_ctrl_c():
            cluster = LocalCluster(
                n_workers=jobs,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,  # a closing worker warns of every task it cancels
            )
        client = Client(cluster)
    try:
        futures = {
            client.submit(
                run_point, spec.function, p.id, p.params, spec.timeout, here, key=f"hcsim-point-{p.id}", pure=False
            ): p
            for p in points
        }
        for fut in dask_completed(list(futures)):
            p = futures.pop(fut)
            try:
                row = fut.result()
            except Exception as exc:  # noqa: BLE001 - e.g. KilledWorker after repeated worker deaths
                row = {
                    "id": p.id,
                    "params": p.params,
                    "status": "error",
                    "result": None,
                    "error": f"{type(exc).__name__}: {exc}".splitlines()[0],
                    "seconds": None,
                    "worker": None,
                }
            # Let the cluster forget a point once its row is here: a result Dask still holds on a
            # worker that then dies would be computed again, to be handed to nobody.
            fut.release()
            del fut
            yield row
        finished = True
    finally:
        quiet = logging.getLogger("distributed")
        level = quiet.level
        if not finished and cluster is not None:  # our own workers: stop their points, then close them
            # Closing under a Ctrl-C, a worker may lose its scheduler mid-heartbeat and log a
            # traceback; the interrupted sweep already said its one line.
            quiet.setLevel(logging.CRITICAL)
            with contextlib.suppress(Exception):
                client.run(_stop_quietly)
        try:
            client.close()
            if cluster is not None:
                cluster.close()
        finally:
            quiet.setLevel(level)


def _stop_quietly() -> None:
    """In a worker of an interrupted sweep: silence Dask's closing chatter, kill the points."""
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    kill_running_points()


def _current_directory_importable() -> None:
    """Let the spec's function come from the current directory, as it does in the point processes.

    ``python -m hcsim.cli`` has the current directory on ``sys.path`` but the ``hcsim``
    script does not; points always get it on their ``PYTHONPATH`` (:func:`run_point`).
    """
    here = os.getcwd()
    if not any(os.path.abspath(p or ".") == here for p in sys.path):
        sys.path.append(here)


@dataclass
class SweepReport:
    """What a sweep did."""

    out: str
    total: int
    skipped: int
    ok: int
    failed: int
    seconds: float


def run_sweep(
    spec: SweepSpec,
    *,
    out: str | None = None,
    executor: str = "local",
    jobs: int | None = None,
    scheduler: str | None = None,
    progress: bool | None = None,
) -> SweepReport:
    """Run the points of ``spec`` not yet done in the results file; append a row per point."""
    if executor not in ("local", "dask"):
        raise HcsimError(f"executor {executor!r} is unknown (valid: local, dask)")
    if scheduler and executor != "dask":
        raise HcsimError("--scheduler needs --executor dask")
    jobs = jobs or os.cpu_count() or 1
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise HcsimError(f"-j {jobs!r} is invalid (valid: an integer >= 1)")
    path = out or spec.out
    if not path:
        raise HcsimError("no results file (valid: --out FILE.jsonl or 'out:' in the spec)")
    _current_directory_importable()
    spec.check_parameters()
    points = spec.expand()
    results = _ResultsFile(path)  # refuses an unwritable file before anything runs
    done = {r["id"] for r in read_results(path) if r.get("status") == "ok"}
    todo = [p for p in points if p.id not in done]
    bar = progress_bar(len(todo), "sweep", "point", show=progress)
    ok = failed = 0
    t0 = time.perf_counter()
    try:
        rows = _local(spec, todo, jobs) if executor == "local" else _dask(spec, todo, jobs, scheduler)
        for row in rows:
            results.append(row)
            if row["status"] == "ok":
                ok += 1
            else:
                failed += 1
            bar.update(1)
            bar.set_postfix(ok=ok, failed=failed)
    finally:
        bar.close()
        results.close()
    return SweepReport(path, len(points), len(points) - len(todo), ok, failed, time.perf_counter() - t0)
