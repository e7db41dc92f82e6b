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

import ctypes
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from hcsim.errors import HcsimError
from hcsim.files import check_output_path
from hcsim.flags import DeprecatedAlias
from hcsim.outputs import json_line
from hcsim.progress import progress_bar
from hcsim.sweep.point import MARKER
from hcsim.sweep.spec import Point, SweepSpec

__all__ = ["run_point", "run_sweep", "read_results", "SweepReport"]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def run_point(function: str, point_id: str, params: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    """Run one point in a fresh Python process; always return a row (never raise)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.getcwd(), env.get("PYTHONPATH", "")] if p)
    request = json.dumps({"function": function, "params": params})
    row: dict[str, Any] = {"id": point_id, "params": params, "worker": f"{socket.gethostname()}:{os.getpid()}"}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "hcsim.sweep.point"],
            input=request,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            preexec_fn=_die_with_parent,
        )
    except subprocess.TimeoutExpired:
        row.update(status="timeout", error=f"point exceeded its timeout of {timeout} s", result=None)
        row["seconds"] = time.perf_counter() - t0
        return row
    except OSError as exc:  # could not even start the point (no memory, too many files...)
        row.update(status="error", error=f"could not start the point: {exc}", result=None)
        row["seconds"] = time.perf_counter() - t0
        return row
    row["seconds"] = time.perf_counter() - t0
    answer: Any = {}
    for line in reversed(proc.stdout.splitlines()):
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
            tail = proc.stderr.strip().splitlines()
            reason = f"point process exited with code {proc.returncode}" + (f": {tail[-1]}" if tail else "")
        row.update(status="error", result=None, error=reason)
    return row


# ---------------------------------------------------------------------- results file
def read_results(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a results file; a line cut short by a crash is skipped, not an error."""
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


class _ResultsFile:
    """Append-only JSON lines; checked up front, opened at the first row (a failed start leaves nothing)."""

    def __init__(self, path: str) -> None:
        check_output_path(path)
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise HcsimError(f"results file '{path}' is not writable (valid: a writable path)")
        self.path = path
        self._f: Any = None

    def append(self, row: dict[str, Any]) -> None:
        if self._f is None:
            self._f = open(self.path, "a")  # noqa: SIM115 - closed by close()
            if self._f.tell() > 0:
                with open(self.path, "rb") as r:
                    r.seek(-1, os.SEEK_END)
                    if r.read(1) != b"\n":  # a previous run died mid-line: start on a fresh one
                        self._f.write("\n")
        self._f.write(json_line(row))
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()


# ---------------------------------------------------------------------- executors
def _local(spec: SweepSpec, points: list[Point], jobs: int) -> Iterator[dict[str, Any]]:
    pool = ThreadPoolExecutor(max_workers=jobs)
    finished = False
    try:
        futures = [pool.submit(run_point, spec.function, p.id, p.params, spec.timeout) for p in points]
        for fut in as_completed(futures):
            yield fut.result()
        finished = True
    finally:  # on Ctrl-C or an error, do not start the points still queued
        pool.shutdown(wait=finished, cancel_futures=not finished)


def _dask(spec: SweepSpec, points: list[Point], jobs: int, scheduler: str | None) -> Iterator[dict[str, Any]]:
    import dask
    from distributed import Client, LocalCluster
    from distributed import as_completed as dask_completed

    cluster = None
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
        with dask.config.set({"distributed.worker.daemon": False}):
            cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        futures = {
            client.submit(
                run_point, spec.function, p.id, p.params, spec.timeout, key=f"hcsim-point-{p.id}", pure=False
            ): p
            for p in points
        }
        for fut in dask_completed(futures):
            p = futures[fut]
            try:
                yield fut.result()
            except Exception as exc:  # noqa: BLE001 - e.g. KilledWorker after repeated worker deaths
                yield {
                    "id": p.id,
                    "params": p.params,
                    "status": "error",
                    "result": None,
                    "error": f"{type(exc).__name__}: {exc}".splitlines()[0],
                    "seconds": None,
                    "worker": None,
                }
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


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


def add_sweep_arguments(parser: Any) -> None:
    """The flags every experiment script shares, so any of them scales out unchanged."""
    parser.add_argument("--executor", choices=("local", "dask"), default="local", help="where points run")
    parser.add_argument("--scheduler", help="Dask scheduler address (default: a local cluster)")
    parser.add_argument(
        "-j", "--workers", type=int, help="parallel processes: points at once, or local Dask workers (default: CPUs)"
    )
    parser.add_argument("--jobs", dest="workers", type=int, action=DeprecatedAlias, new="-j/--workers")


def sweep_from_arguments(spec: SweepSpec, args: Any, out: str) -> list[dict[str, Any]]:
    """Run ``spec`` with the shared flags; return the latest ok row of every point of the spec."""
    run_sweep(spec, out=out, executor=args.executor, jobs=args.workers, scheduler=args.scheduler)
    wanted = {p.id for p in spec.expand()}
    latest = {r["id"]: r for r in read_results(out) if r.get("status") == "ok" and r["id"] in wanted}
    return [latest[p.id] for p in spec.expand() if p.id in latest]
