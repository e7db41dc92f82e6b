"""Queue selection on SimGrid: one controller actor per replication, blocks of replications per process.

1 simulated second is 1 minute. Every queue of every simulated system is a SimGrid host
of speed 1 (flop per minute); every job is an ``Exec`` of Y flops on its queue's host,
so it lasts Y minutes. One controller actor per replication drives the systems of all
requested methods side by side on common random numbers; its loop is a
:class:`~hcsim.engine.driver.Driver` watching every running execution and a timer
execution ending at the next arrival instant. Replications run in blocks of
:data:`BLOCK` per SimGrid process (:func:`hcsim.simgrid_runtime.run_isolated`).

Guide: docs/queue-selection.md, "How it runs on SimGrid".
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hcsim.engine.driver import Driver
from hcsim.errors import HcsimError
from hcsim.frontends.queue_selection.model import (
    WEEK,
    Inputs,
    MethodJobs,
    QueueRun,
    QueueState,
    _check_model,
    _check_offset_options,
    draw_inputs,
    service_times,
)
from hcsim.frontends.queue_selection.rules import Method, parse_method, select_queue
from hcsim.simgrid_runtime import import_simgrid, new_engine, run_isolated

__all__ = ["BLOCK", "run_traces", "simulate"]

BLOCK = 10  # replications per SimGrid process
MAX_REPLICATIONS = 100_000
"""Most replications one run simulates (the default is 20)."""
MAX_JOBS = 10_000_000
"""Most jobs one run may expect (replications x period / mean gap): every replication's inputs are drawn up front."""
MAX_WORKERS = 256
"""Most parallel SimGrid processes (each is a Python process of its own)."""
LOMAX_MEAN = 24.2
"""Mean of the truncated Lomax gap (minutes), to size the draws and to bound a run's expected jobs."""


def _check_size(replications: int, period: float, arrival: str, rate: float | None) -> None:
    """Refuse, before drawing anything, a run expected to hold more than :data:`MAX_JOBS` jobs."""
    if arrival == "poisson" and rate is not None and rate > 0 and math.isfinite(rate):
        per_period = period * rate
    elif arrival == "poisson":
        return  # draw_inputs names the missing or invalid --rate
    else:
        per_period = period / LOMAX_MEAN
    if per_period > MAX_JOBS:
        what = f"--period {period:g} min"
        if arrival == "poisson":
            what = f"--rate {rate:g} per min x {what}"
        raise HcsimError(
            f"{what} is invalid: about {per_period:.3g} jobs per replication "
            f"(valid: at most {MAX_JOBS:,} expected jobs, i.e. --period <= {MAX_JOBS * period / per_period:.6g} min)"
        )
    if per_period * replications > MAX_JOBS:
        raise HcsimError(
            f"--replications {replications} x --period {period:g} min is about {per_period * replications:.3g} jobs "
            f"(valid: at most {MAX_JOBS:,} expected jobs in one run, i.e. --replications <= "
            f"{max(1, int(MAX_JOBS // per_period))} at this period)"
        )


def _run_block(  # noqa: C901 - one event loop, kept in one place for speed
    service: tuple[float, ...],
    methods: list[Method],
    block: list[tuple[int, Inputs]],
    model: str,
    servers: int,
    offset_ties: str,
    offset_rule: str,
) -> list[list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]]:
    """Run ``block``'s replications in one SimGrid engine; per replication and method: arrival, queue, start, finish."""
    sg = import_simgrid()
    engine = new_engine()
    zone = engine.netzone_root.add_netzone_full("queues")
    n_q = len(service)
    hosts: dict[int, list[list]] = {}
    clocks = {}
    for r, inp in block:
        clocks[r] = zone.add_host(f"r{r}.manager", 1.0)
        hosts[r] = []
        for m in range(len(methods)):
            row = []
            for k in range(n_q):
                h = zone.add_host(f"r{r}.m{m}.q{k}", 1.0)
                h.core_count = servers if model == "fifo" else max(1, inp.arrivals.size + 1)
                row.append(h)
            hosts[r].append(row)
    zone.seal()
    out: dict[int, list] = {}

    def controller(r: int, inp: Inputs) -> None:
        arr, work, uni = inp.arrivals.tolist(), inp.work.tolist(), inp.uniforms.tolist()
        n = len(arr)
        n_m = len(methods)
        states = [QueueState.empty(n_q) for _ in range(n_m)]
        came = [0.0] * n
        queue = [[0] * n for _ in range(n_m)]
        start = [[0.0] * n for _ in range(n_m)]
        finish = [[0.0] * n for _ in range(n_m)]
        busy = [[0] * n_q for _ in range(n_m)]
        waiting = [[deque() for _ in range(n_q)] for _ in range(n_m)]
        keep_done = [meth.kind == "offset" for meth in methods]
        my_hosts = hosts[r]
        fifo = model == "fifo"
        driver = Driver(sg)
        watch = driver.watch
        exec_init = sg.this_actor.exec_init
        exec_async = sg.this_actor.exec_async
        next_arrival = 0

        def launch(m: int, k: int, j: int, now: float) -> None:
            act = exec_init(service[k] * work[j])
            act.host = my_hosts[m][k]
            act.start()
            watch(act, (m, k, j))
            start[m][j] = now

        def completed(act: object, job: tuple[int, int, int] | None, now: float) -> None:
            nonlocal next_arrival
            if job is not None:  # a completion
                m, k, j = job
                finish[m][j] = now
                st = states[m]
                st.change(k, now, -1)
                if keep_done[m]:
                    st.done[k].append(now)
                if fifo:
                    busy[m][k] -= 1
                    if waiting[m][k]:
                        busy[m][k] += 1
                        launch(m, k, waiting[m][k].popleft(), now)
                return
            # the arrival timer: job i arrives (and any other arriving at this very instant)
            i = next_arrival
            while True:
                u = uni[i]
                came[i] = now
                for m in range(n_m):
                    st = states[m]
                    k = select_queue(methods[m], st, now, u, offset_ties, offset_rule)
                    queue[m][i] = k
                    st.change(k, now, +1)
                    if not fifo or busy[m][k] < servers:
                        busy[m][k] += 1
                        launch(m, k, i, now)
                    else:
                        waiting[m][k].append(i)
                i += 1
                if i >= n or arr[i] > now:
                    break
            next_arrival = i
            if i < n:  # the timer is an exec on the manager's host of speed 1: its end is SimGrid's date
                watch(exec_async(arr[i] - now), None)

        if n:
            watch(exec_async(arr[0]), None)
        driver.run(completed)
        arrived = np.array(came)
        out[r] = [
            (arrived, np.array(queue[m], dtype=np.int16), np.array(start[m]), np.array(finish[m])) for m in range(n_m)
        ]

    for r, inp in block:
        clocks[r].add_actor(f"manager{r}", controller, r, inp)
    engine.run()
    return [out[r] for r, _ in block]


def run_traces(
    service: Sequence[float],
    methods: Sequence[str | Method],
    inputs: Sequence[Inputs],
    model: str = "paper",
    servers: int = 1,
    offset_ties: str = "lowest",
    offset_rule: str = "fewest",
) -> list[dict[str, dict[str, np.ndarray]]]:
    """Run given inputs (one per replication, all in one SimGrid process).

    Returns per replication and method label: ``queue`` (0-based), ``arrival``
    (SimGrid's clock when the job arrived), ``start`` and ``finish``.
    """
    p = service_times(service)
    meths = [parse_method(m) for m in methods]
    model, servers = _check_model(model, servers)
    _check_offset_options(offset_ties, offset_rule)
    raw = run_isolated(_run_block, p, meths, list(enumerate(inputs)), model, servers, offset_ties, offset_rule)
    keys = ("arrival", "queue", "start", "finish")
    return [
        {m.label: dict(zip(keys, arrays, strict=True)) for m, arrays in zip(meths, rep, strict=True)} for rep in raw
    ]


def simulate(
    queues: str | Sequence[float],
    methods: Sequence[str | Method] = ("random", "mql", "maql", "offset"),
    *,
    model: str = "paper",
    servers: int = 1,
    replications: int = 10,
    seed: int = 0,
    period: float = WEEK,
    arrival: str = "lomax",
    rate: float | None = None,
    offset_ties: str = "lowest",
    offset_rule: str = "fewest",
    workers: int = 1,
) -> QueueRun:
    """Monte Carlo over ``replications`` periods of the system ``queues`` (a set name or p_i list).

    Every method runs on the same inputs per replication. ``workers`` SimGrid processes
    run blocks of :data:`BLOCK` replications in parallel (results do not depend on it).
    """
    p = service_times(queues)
    meths = [parse_method(m) for m in methods]
    if not meths:
        raise HcsimError("no method given (valid: one or more of random, mql, maql, offset)")
    labels = [m.label for m in meths]
    if len(set(labels)) != len(labels):
        raise HcsimError(f"methods {labels} repeat one (valid: each method once)")
    model, servers = _check_model(model, servers)
    _check_offset_options(offset_ties, offset_rule)
    if isinstance(replications, bool) or not isinstance(replications, int | np.integer) or replications < 1:
        raise HcsimError(f"--replications {replications} is invalid (valid: an integer >= 1)")
    if replications > MAX_REPLICATIONS:
        raise HcsimError(f"--replications {replications} is invalid (valid: an integer from 1 to {MAX_REPLICATIONS:,})")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < 2**63:
        raise HcsimError(f"--seed {seed} is invalid (valid: an integer from 0 to 2**63 - 1)")
    if not (period > 0 and math.isfinite(period)):
        raise HcsimError(f"--period {period} is invalid (valid: minutes > 0, e.g. 10080 for a week)")
    if isinstance(workers, bool) or not isinstance(workers, int | np.integer) or not 1 <= workers <= MAX_WORKERS:
        raise HcsimError(f"--workers {workers} is invalid (valid: an integer >= 1, at most {MAX_WORKERS})")
    if arrival != "poisson" and rate is not None:
        raise HcsimError(f"--rate {rate} applies to poisson arrivals only (valid: omit it, or --arrival poisson)")
    _check_size(int(replications), float(period), arrival, rate)
    t0 = time.perf_counter()
    inputs = [draw_inputs(int(seed), r, float(period), arrival, rate) for r in range(int(replications))]
    blocks = [list(range(b, min(b + BLOCK, replications))) for b in range(0, replications, BLOCK)]

    def run_block(rs: list[int]) -> list:
        return run_isolated(
            _run_block, p, meths, [(r, inputs[r]) for r in rs], model, servers, offset_ties, offset_rule
        )

    if workers > 1 and len(blocks) > 1:
        with ThreadPoolExecutor(max_workers=min(int(workers), len(blocks))) as pool:
            raws = list(pool.map(run_block, blocks))
    else:
        raws = [run_block(b) for b in blocks]
    per_rep = [rep for raw in raws for rep in raw]
    result = QueueRun(
        set_name=queues.strip().lower() if isinstance(queues, str) else None,
        service=p,
        model=model,
        servers=servers,
        replications=int(replications),
        seed=int(seed),
        period=float(period),
        arrival=arrival,
        rate=rate,
        offset_ties=offset_ties,
        offset_rule=offset_rule,
        methods=labels,
    )
    for mi, label in enumerate(labels):
        reps, arrs, qs, starts, comps = [], [], [], [], []
        for r, raw_r in enumerate(per_rep):
            a, queue, start, finish = raw_r[mi]
            reps.append(np.full(a.size, r, dtype=int))
            arrs.append(a)
            qs.append(queue.astype(int))
            starts.append(start)
            comps.append(finish - a)
        result.jobs[label] = MethodJobs(*(np.concatenate(x) for x in (reps, arrs, qs, starts, comps)))
    result.seconds = time.perf_counter() - t0
    return result
