"""Inference serving with dynamic batching, on XPUs of a compiled platform (Inoue 2021).

Jobs arrive (:func:`arrival_times`: Poisson, deterministic, Gamma, hyperexponential,
Pareto, or a replayed timestamp file) into an unbounded FIFO buffer per server. When a
server is idle and jobs wait, all of them up to ``max_batch`` form one batch, which runs
on the server's XPU as a SimGrid execution lasting ``batch_time(b)``:
:func:`linear_time` (tau[b] = alpha b + tau0, the paper's model), :func:`table_time`
(b / throughput[b] from a measured table, interpolated) or :func:`engine_time` (an
inference workload graph run by the engine, once per batch size). Options: ``max_delay``
(an idle server waits until the batch fills or its oldest job has waited that long) and
several servers behind a dispatcher (``random``, ``round_robin``, ``jsq``).

Invariant: with one server, random or round-robin dispatch each server's arrivals are
known in advance, so one actor per server does one execution per batch; join-the-
shortest-queue needs the queues at every arrival, so one controller also wakes at
arrivals and reproduces the per-server path bit for bit on one server.

Guide: docs/serving.md.
"""

from __future__ import annotations

import bisect
import math
import os
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hcsim.analysis.queueing import capacity
from hcsim.analysis.statistics import confidence_interval, percentile_interval
from hcsim.engine import simulate
from hcsim.engine.driver import Driver
from hcsim.errors import HcsimError
from hcsim.files import check_output_path
from hcsim.outputs import save_figure, write_csv, write_json
from hcsim.progress import progress_bar
from hcsim.simgrid_runtime import import_simgrid, load_platform, run_isolated

__all__ = [
    "arrival_times",
    "linear_time",
    "check_stable",
    "table_time",
    "engine_time",
    "ServeResult",
    "serve",
    "confidence_interval",
    "percentile_interval",
    "write_outputs",
]

DISPATCH = ("random", "round_robin", "jsq")
_PROGRESS_STEP = 1000  # requests served between progress-bar updates (one per batch would cost more than serving)


class _Served:
    """Requests served so far, shown as a progress bar on stderr (see :func:`hcsim.progress.progress_bar`)."""

    def __init__(self, total: int, show: bool) -> None:
        self.bar = progress_bar(total, "serving", "request", show=show) if show else None
        self.count = self.shown = 0

    def add(self, b: int) -> None:
        self.count += b
        if self.bar is not None and self.count - self.shown >= _PROGRESS_STEP:
            self.bar.update(self.count - self.shown)
            self.shown = self.count

    def close(self) -> None:
        if self.bar is not None:
            self.bar.update(self.count - self.shown)
            self.bar.close()


# ------------------------------------------------------------------ arrivals
def arrival_times(
    kind: str, rate: float, jobs: int, seed: int = 0, *, shape: float = 2.0, cv2: float = 4.0, path: str | None = None
) -> np.ndarray:
    """Sorted arrival times of ``jobs`` jobs at mean ``rate`` per second.

    ``poisson``; ``deterministic``; ``gamma`` (``shape`` k: cv^2 = 1/k);
    ``hyperexponential`` (two balanced phases with squared coefficient of variation
    ``cv2`` > 1); ``pareto`` (tail index ``shape`` > 1); ``replay`` (timestamps in
    seconds, one per line, from ``path``; ``rate`` and ``jobs`` are ignored).
    """
    if kind == "replay":
        if path is None:
            raise HcsimError("replay arrivals need a timestamp file (path=...)")
        try:
            times = np.loadtxt(path, dtype=float, ndmin=1)
        except (OSError, ValueError) as exc:
            raise HcsimError(f"timestamp file '{path}' cannot be read: {str(exc).splitlines()[0]}") from None
        if times.size == 0 or np.any(np.diff(times) < 0) or times[0] < 0:
            raise HcsimError(f"timestamp file '{path}' must hold non-negative, non-decreasing times")
        return times
    if not rate > 0 or math.isinf(rate):
        raise HcsimError(f"arrival rate {rate!r} is invalid (valid: a finite rate > 0)")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise HcsimError(f"jobs {jobs!r} is invalid (valid: an integer >= 1)")
    rng = np.random.default_rng(seed)
    mean = 1 / rate
    if kind == "poisson":
        gaps = rng.exponential(mean, jobs)
    elif kind == "deterministic":
        gaps = np.full(jobs, mean)
    elif kind == "gamma":
        gaps = rng.gamma(shape, mean / shape, jobs)
    elif kind == "hyperexponential":
        if not cv2 > 1:
            raise HcsimError(f"hyperexponential cv2 {cv2!r} is invalid (valid: > 1)")
        p = 0.5 * (1 + math.sqrt((cv2 - 1) / (cv2 + 1)))
        phase = rng.random(jobs) < p
        gaps = np.where(phase, rng.exponential(mean / (2 * p), jobs), rng.exponential(mean / (2 * (1 - p)), jobs))
    elif kind == "pareto":
        if not shape > 1:
            raise HcsimError(f"pareto shape {shape!r} is invalid (valid: > 1, for a finite mean)")
        gaps = (rng.pareto(shape, jobs) + 1) * mean * (shape - 1) / shape
    else:
        raise HcsimError(
            f"arrival process {kind!r} is unknown "
            "(valid: poisson, deterministic, gamma, hyperexponential, pareto, replay)"
        )
    return np.cumsum(gaps)


# ------------------------------------------------------------------ batch times
def linear_time(alpha: float, tau0: float) -> Callable[[int], float]:
    """tau[b] = alpha b + tau0."""
    if not alpha > 0 or not tau0 >= 0:
        raise HcsimError(f"need alpha > 0 and tau0 >= 0 (got {alpha}, {tau0})")
    return lambda b: alpha * b + tau0


def check_stable(rate: float, alpha: float, tau0: float, max_batch: float = math.inf) -> None:
    """Raise :class:`HcsimError` unless a server with tau[b] = alpha b + tau0 keeps up with ``rate`` jobs/s.

    A server batching at most ``max_batch`` (M) jobs serves at most M / (alpha M + tau0)
    jobs/s (1 / alpha for M infinite, :func:`hcsim.analysis.queueing.capacity`); below
    that, and with rho = rate alpha < 1, its queue is stable and latency has a mean.

    >>> check_stable(500.0, 1e-3, 5e-3)  # rho = 0.5
    >>> check_stable(2000.0, 1e-3, 5e-3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hcsim.errors.HcsimError: unstable: each server gets 2000 jobs/s but can serve at most 1000 (valid: ...)
    """
    if rate * alpha >= 1 or rate >= capacity(alpha, tau0, max_batch):
        raise HcsimError(
            f"unstable: each server gets {rate:.6g} jobs/s but can serve at most "
            f"{capacity(alpha, tau0, max_batch):.6g} (valid: rho = lambda alpha < 1 and lambda < M / (alpha M + tau0))"
        )


def table_time(table: dict[int, float] | dict[int, tuple[float, float]]) -> Callable[[int], float]:
    """tau[b] = b / throughput, linear between measured batch sizes (and beyond, along the end segments)."""
    if len(table) < 2:
        raise HcsimError("a throughput table needs at least 2 batch sizes to interpolate tau[b]")
    bs = np.array(sorted(table), dtype=float)
    thr = np.array([table[int(b)][0] if isinstance(table[int(b)], tuple) else table[int(b)] for b in bs], dtype=float)
    tau = bs / thr

    def f(b: int) -> float:
        if b <= bs[0]:
            i = 0
        elif b >= bs[-1]:
            i = len(bs) - 2
        else:
            i = int(np.searchsorted(bs, b)) - 1
        return float(tau[i] + (tau[i + 1] - tau[i]) * (b - bs[i]) / (bs[i + 1] - bs[i]))

    return f


def engine_time(platform: str, workload_for_batch: Callable[[int], object], largest: int) -> Callable[[int], float]:
    """tau[b] = iteration time of ``workload_for_batch(b)`` run by the engine, for b = 1..largest."""
    times = [0.0]
    for b in range(1, largest + 1):
        times.append(simulate(platform, workload_for_batch(b), 1, record_flows=False, progress=False).makespan)

    def f(b: int) -> float:
        if b > largest:
            raise HcsimError(f"batch of {b} exceeds the {largest} batch sizes computed by engine_time")
        return times[b]

    return f


# ------------------------------------------------------------------ serving
@dataclass
class ServeResult:
    """Jobs' latencies and the batches that served them."""

    arrivals: np.ndarray
    latency: np.ndarray  # per job, arrival order
    server_of_job: np.ndarray
    batch_server: np.ndarray
    batch_start: np.ndarray
    batch_size: np.ndarray
    batch_end: np.ndarray
    servers: list[str]

    @property
    def makespan(self) -> float:
        return float(self.batch_end.max())

    def utilization(self) -> float:
        """Busy time over (servers x makespan)."""
        return float((self.batch_end - self.batch_start).sum() / (len(self.servers) * self.makespan))

    def energy_per_job(self, beta: float, c0: float) -> float:
        """Joules per job with c[b] = beta b + c0 per batch."""
        return float((beta * self.batch_size + c0).sum() / self.batch_size.sum())

    def jobs_per_joule(self, beta: float, c0: float) -> float:
        """Energy efficiency eta (the paper's): jobs served per joule with c[b] = beta b + c0 per batch."""
        return float(self.batch_size.sum() / (beta * self.batch_size + c0).sum())


def write_outputs(result: ServeResult, directory: str, beta: float = math.nan, c0: float = math.nan) -> dict:
    """jobs.csv, batches.csv, batch_sizes.csv (histogram), batch_sizes.png and summary.json in ``directory``."""
    os.makedirs(directory, exist_ok=True)
    check_output_path(os.path.join(directory, "summary.json"))
    jobs = np.column_stack([np.arange(len(result.arrivals)), result.arrivals, result.server_of_job, result.latency])
    write_csv(
        os.path.join(directory, "jobs.csv"),
        [(int(j), a, int(k), w) for j, a, k, w in jobs.tolist()],
        ["job", "arrival_s", "server", "latency_s"],
        line_end="\n",
    )
    batches = zip(
        result.batch_server.tolist(),
        result.batch_start.tolist(),
        result.batch_size.tolist(),
        result.batch_end.tolist(),
        strict=True,
    )
    write_csv(
        os.path.join(directory, "batches.csv"),
        [(int(k), a, int(b), e) for k, a, b, e in batches],
        ["server", "start_s", "size", "end_s"],
        line_end="\n",
    )
    sizes, counts = np.unique(result.batch_size, return_counts=True)
    write_csv(
        os.path.join(directory, "batch_sizes.csv"),
        [(int(b), int(c), float(c / counts.sum())) for b, c in zip(sizes, counts, strict=True)],
        ["batch_size", "batches", "fraction"],
        line_end="\n",
    )
    mean, half = confidence_interval(result.latency)
    summary = {
        "jobs": len(result.arrivals),
        "mean_latency_s": mean,
        "mean_latency_ci95_s": half,
        "utilization": result.utilization(),
        "mean_batch": float(result.batch_size.mean()),
    }
    for p in (50, 90, 99):
        value, width = percentile_interval(result.latency, p)
        summary[f"p{p}_latency_s"], summary[f"p{p}_latency_ci95_s"] = value, width
    if not math.isnan(beta):
        summary["energy_per_job_j"] = result.energy_per_job(beta, c0)
    write_json(os.path.join(directory, "summary.json"), summary)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=110)
    ax.bar(sizes, counts / counts.sum(), width=0.9)
    ax.set(xlabel="batch size", ylabel="fraction of batches", title="Batch-size histogram")
    fig.tight_layout()
    save_figure(fig, os.path.join(directory, "batch_sizes.png"))
    return summary


def _serve_independent(platform, servers, streams, taus_for, max_batch, max_delay, show):  # noqa: ANN001, ANN202
    """Each server batches its own known arrival stream: one actor per server."""
    sg = import_simgrid()
    engine = load_platform(platform)
    out: dict[int, list[tuple[float, int, float]]] = {}
    inf = math.inf
    served = _Served(sum(len(a) for a in streams), show)

    def worker(k: int, arr: list[float], host) -> None:  # noqa: ANN001
        speed = host.speed
        batches = out.setdefault(k, [])
        i, n = 0, len(arr)
        execute, sleep_until, clock = sg.this_actor.execute, sg.this_actor.sleep_until, lambda: sg.Engine.clock
        while i < n:
            now = clock()
            if arr[i] > now:
                sleep_until(arr[i])
                now = arr[i]
            if max_delay is not None:
                full = arr[i + max_batch - 1] if max_batch != inf and i + max_batch - 1 < n else inf
                ready = min(full, arr[i] + max_delay)
                if ready > now and bisect.bisect_right(arr, now, i) - i < max_batch:
                    sleep_until(ready)
                    now = ready
            waiting = bisect.bisect_right(arr, now, i) - i
            b = waiting if max_batch == inf else min(waiting, max_batch)
            execute(taus_for(b) * speed)
            batches.append((now, b, clock()))
            served.add(b)
            i += b

    for k, name in enumerate(servers):
        host = sg.Host.by_name(name)
        sg.Actor.create(f"server{k}", host, worker, k, streams[k], host)
    engine.run()
    served.close()
    return out


def _serve_jsq(platform, servers, arr, taus_for, max_batch, max_delay, show):  # noqa: ANN001, ANN202, C901
    """Join the shortest queue: one controller wakes at completions, arrivals and queue deadlines."""
    sg = import_simgrid()
    engine = load_platform(platform)
    hosts = [sg.Host.by_name(h) for h in servers]
    k_n, n, inf = len(servers), len(arr), math.inf
    queues = [deque() for _ in range(k_n)]
    in_service = [0] * k_n
    assign = [0] * n
    rows: dict[int, list[tuple[float, int, float]]] = {k: [] for k in range(k_n)}
    driver = Driver(sg)
    t_next = inf  # the next arrival or queue deadline, as of the last wait
    next_arrival = 0
    progress = _Served(n, show)

    def ready(k: int, now: float) -> bool:
        q = queues[k]
        if in_service[k] or not q:
            return False
        return max_delay is None or len(q) >= max_batch or arr[q[0]] + max_delay <= now

    def start(k: int, now: float) -> None:
        q = queues[k]
        b = len(q) if max_batch == inf else min(len(q), max_batch)
        for _ in range(b):
            q.popleft()
        act = sg.this_actor.exec_init(taus_for(b) * hosts[k].speed)
        act.host = hosts[k]
        act.start()
        driver.watch(act, (k, now, b))
        in_service[k] = b

    def next_wake() -> float:  # queued jobs may still wait for their max_delay
        nonlocal t_next
        t_next = arr[next_arrival] if next_arrival < n else inf
        if max_delay is not None:
            for k in range(k_n):
                if not in_service[k] and queues[k]:
                    t_next = min(t_next, arr[queues[k][0]] + max_delay)
        return t_next

    def served(act: object, batch: tuple[int, float, int], now: float) -> None:
        k, began, b = batch
        rows[k].append((began, b, now))
        in_service[k] = 0
        progress.add(b)

    def after_wake(now: float, act: object) -> None:
        nonlocal next_arrival
        horizon = now if act is not None else max(now, t_next)
        i = next_arrival
        while i < n and arr[i] <= horizon:
            k = min(range(k_n), key=lambda s: (len(queues[s]) + in_service[s], s))
            queues[k].append(i)
            assign[i] = k
            i += 1
        next_arrival = i
        for k in range(k_n):
            if ready(k, horizon):
                start(k, now)

    def controller() -> None:
        driver.run(served, after_wake=after_wake, next_wake=next_wake)

    sg.Actor.create("dispatcher", hosts[0], controller)
    engine.run()
    progress.close()
    return rows, assign


def serve(
    platform: str | os.PathLike[str],
    servers: list[str],
    arrivals: np.ndarray,
    batch_time: Callable[[int], float],
    *,
    max_batch: float = math.inf,
    max_delay: float | None = None,
    dispatch: str = "round_robin",
    seed: int = 0,
    progress: bool | None = None,
) -> ServeResult:
    """Serve ``arrivals`` on the XPUs ``servers`` of a compiled platform with dynamic batching.

    ``progress``: a bar of requests served on stderr (default: when stderr is a terminal).
    """
    if dispatch not in DISPATCH:
        raise HcsimError(f"dispatch policy {dispatch!r} is unknown (valid: {', '.join(DISPATCH)})")
    if not servers:
        raise HcsimError("at least one server (an XPU name) is needed")
    if not (max_batch == math.inf or (max_batch >= 1 and max_batch == int(max_batch))):
        raise HcsimError(f"max batch {max_batch!r} is invalid (valid: an integer >= 1 or inf)")
    if max_delay is not None and not max_delay >= 0:
        raise HcsimError(f"max delay {max_delay!r} is invalid (valid: seconds >= 0)")
    max_batch = max_batch if max_batch == math.inf else int(max_batch)
    arr = np.asarray(arrivals, dtype=float)
    n = len(arr)
    cache: dict[int, float] = {}

    def taus_for(b: int) -> float:
        t = cache.get(b)
        if t is None:
            t = cache[b] = float(batch_time(b))
        return t

    show = sys.stderr.isatty() if progress is None else bool(progress)
    if dispatch == "jsq":
        out, assign_list = run_isolated(
            _serve_jsq, os.fspath(platform), list(servers), arr.tolist(), taus_for, max_batch, max_delay, show
        )
        return _result(arr, np.array(assign_list), out, servers)
    if dispatch == "random":
        assign = np.random.default_rng(seed).integers(0, len(servers), n)
    else:
        assign = np.arange(n) % len(servers)
    streams = [arr[assign == k].tolist() for k in range(len(servers))]
    out = run_isolated(
        _serve_independent, os.fspath(platform), list(servers), streams, taus_for, max_batch, max_delay, show
    )
    return _result(arr, assign, out, servers)


def _result(arr: np.ndarray, assign: np.ndarray, out: dict, servers: list[str]) -> ServeResult:
    """Per-job latencies from each server's batches (a server serves its jobs in FIFO order)."""
    n = len(arr)
    latency = np.empty(n)
    b_server, b_start, b_size, b_end = [], [], [], []
    for k in range(len(servers)):
        rows = out.get(k, [])
        jobs_k = np.flatnonzero(assign == k)
        sizes = np.array([r[1] for r in rows], dtype=int)
        ends = np.array([r[2] for r in rows], dtype=float)
        latency[jobs_k] = np.repeat(ends, sizes) - arr[jobs_k]
        b_server += [k] * len(rows)
        b_start += [r[0] for r in rows]
        b_size += sizes.tolist()
        b_end += ends.tolist()
    return ServeResult(
        arr, latency, assign, np.array(b_server), np.array(b_start), np.array(b_size), np.array(b_end), list(servers)
    )
