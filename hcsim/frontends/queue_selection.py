"""Queue selection for batch-processing supercomputers (Kawanami, Yoshihisa, Kanazawa), on SimGrid.

A job manager (the gateway) receives jobs and puts each into one of N = 6 queues. The
selection methods, as in the paper's section 3:

* ``random`` - a uniformly random queue;
* ``mql`` (minimum queue length) - the queue holding the fewest jobs (running + waiting)
  at the arrival instant; ties broken at random;
* ``maql`` (minimum average queue length) - the queue whose time-averaged length over
  [0, now] is smallest; ties to the lowest queue id (at time 0 every average is 0);
* ``offset(M)`` - the queue that completed the fewest jobs during the last M minutes
  ("offset jobs"); jobs arriving before time M go to a random queue.

The model (section 4). Inter-arrival times X [min] follow the Lomax (Pareto II) law
fitted to two months of HPC2500 data, F(x) = 1 - (1 + x/b)^(-a), a = 1.1, b = 7.34927;
draws above 1000 min are discarded and redrawn. They are sampled by inverse transform,
x = b ((1 - u)^(-1/a) - 1), from a Mersenne Twister (numpy ``MT19937``). Mean service
times p_i [min] (:data:`SETS`):

* set 1: (a) all 30; (b) 15,15,15,45,45,45; (c) 15,15,30,30,45,45; (d) 5,15,25,35,45,55
* set 2: (a) all 60; (b) 30,30,30,90,90,90; (c) 30,30,60,60,90,90; (d) 35,45,...,85
* set 3: (a) all 90; (b) 45,45,45,135,135,135; (c) 45,45,90,90,135,135; (d) 65,75,...,115

Two models of a queue:

* ``paper`` - as in the paper: a job arriving at T_now into queue i gets the end time
  T_now + Y, Y ~ Exp(mean p_i); it never waits (so jobs need not finish in arrival order).
  A queue's length is the number of its jobs not yet finished.
* ``fifo`` - a realistic queue: ``servers`` (c) servers per queue, a FIFO line, service
  Y ~ Exp(mean p_i); the length counts running and waiting jobs.

The metric is the distribution of the job service time as the paper calls it, i.e. the
completion time, finish - arrival; :func:`summarize` gives its mean (with a 95% interval
across replications), median, p90 and p99 per method.

How it runs on SimGrid. 1 simulated second is 1 minute. Every queue of every simulated
system is a SimGrid host of speed 1 (flop per minute); every job is an ``Exec`` of Y
flops on its queue's host, so it lasts Y minutes. In the paper model the host has more
cores than the replication has jobs, so executions never share a core and each lasts
exactly Y; in the fifo model it has c cores and the controller starts a job only when one
of the queue's c executions ends, so SimGrid never shares a core either. One controller
actor per replication (on a host of its own) drives the systems of all requested methods
side by side: the systems share the replication's arrivals, service draws and uniforms
(common random numbers), so differences between methods are not masked by different
arrivals. The controller waits on one ``ActivitySet`` holding every running execution and
a timer execution that ends at the next arrival instant: it wakes once per completion and
once per arrival, and reads the queue lengths, the area under them and the completion
times from what SimGrid reported. Replications run in blocks of :data:`BLOCK` per SimGrid
process (:func:`hcsim.sg.run_isolated`), blocks in parallel with ``workers`` > 1; the block
layout does not depend on ``workers``, so neither do the results.

Choices made here where the paper is silent (they are this implementation's choices):

* a replication covers arrivals in [0, period) (period = one week, 10080 min); the first
  job arrives after one inter-arrival time (a renewal process from time 0); every job that
  arrived is run to completion (no censoring at the end of the week); queues start empty;
* seeds: replication r uses three MT19937 streams seeded by ``SeedSequence([seed, r, s])``:
  s = 0 inter-arrival times, s = 1 unit-mean exponentials E_j (job j's service time in
  queue i is p_i E_j), s = 2 one uniform u_j per job (the Random choice, the random
  tie-breaks of MQL and of offset if ``offset_ties="random"``, and offset before time M);
* MAQL compares the areas under the queue-length curves over [0, now] (the same order as
  the averages, which share the divisor now); queue length = jobs not yet finished;
* offset counts completions in the window (now - M, now]; ties go to the lowest queue id
  by default (``offset_ties="lowest"``, as MAQL, the other history-based method; ``random``
  is offered). The paper states the rule once as "fewest offset jobs" (section 3.4, the
  rule used here, ``offset_rule="fewest"``) but motivates it in the sentence before by
  picking the queue that completed the *most* jobs; ``offset_rule="most"`` runs that
  reading;
* events at the same instant (probability zero with continuous draws) are handled in the
  order SimGrid reports them; a job's arrival instant is SimGrid's clock when the timer
  ends, which differs from the drawn instant by float rounding only (about 1e-12 min).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from hcsim.errors import HcsimError
from hcsim.sg import import_simgrid, new_engine, run_isolated

__all__ = [
    "SETS",
    "METHODS",
    "MODELS",
    "OFFSETS",
    "WEEK",
    "LOMAX_A",
    "LOMAX_B",
    "LOMAX_CAP",
    "BLOCK",
    "Method",
    "parse_method",
    "paper_methods",
    "service_times",
    "lomax_cdf",
    "lomax_sample",
    "Inputs",
    "draw_inputs",
    "QueueState",
    "select_queue",
    "run_traces",
    "MethodJobs",
    "QueueRun",
    "simulate",
    "summarize",
    "ratio_interval",
    "cdf_points",
    "erlang_c_response",
    "write_outputs",
    "add_arguments",
    "run_from_arguments",
]

WEEK = 10080.0  # minutes
LOMAX_A, LOMAX_B, LOMAX_CAP = 1.1, 7.34927, 1000.0
OFFSETS = (150.0, 1500.0, 3000.0, 5000.0)
METHODS = ("random", "mql", "maql", "offset")
MODELS = ("paper", "fifo")
ARRIVALS = ("lomax", "poisson")
OFFSET_TIES = ("lowest", "random")
OFFSET_RULES = ("fewest", "most")
BLOCK = 10  # replications per SimGrid process

SETS: dict[str, tuple[float, ...]] = {}
for _s, _base in ((1, 15.0), (2, 30.0), (3, 45.0)):
    SETS[f"{_s}a"] = (2 * _base,) * 6
    SETS[f"{_s}b"] = (_base,) * 3 + (3 * _base,) * 3
    SETS[f"{_s}c"] = (_base, _base, 2 * _base, 2 * _base, 3 * _base, 3 * _base)
    SETS[f"{_s}d"] = tuple(float(5 + 30 * (_s - 1) + 10 * i) for i in range(6))


# ------------------------------------------------------------------ inputs
def service_times(queues: str | Sequence[float]) -> tuple[float, ...]:
    """The mean service times p_i [min] of a parameter set ('1a'..'3d') or of an explicit list."""
    if isinstance(queues, str):
        key = queues.strip().lower().replace("(", "").replace(")", "")
        if key not in SETS:
            raise HcsimError(f"set {queues!r} is unknown (valid: 1a..3d)")
        return SETS[key]
    p = tuple(float(x) for x in queues)
    if not p or not all(x > 0 and math.isfinite(x) for x in p):
        raise HcsimError(f"service times {list(queues)!r} are invalid (valid: one or more finite minutes > 0)")
    return p


@dataclass(frozen=True)
class Method:
    """A selection method: ``kind`` in :data:`METHODS`, and the window M [min] of ``offset``."""

    kind: str
    window: float | None = None

    @property
    def label(self) -> str:
        return f"offset({self.window:g})" if self.kind == "offset" else self.kind


def _check_window(window: float) -> float:
    try:
        w = float(window)
    except (TypeError, ValueError):
        w = math.nan
    if not (w > 0 and math.isfinite(w)):
        raise HcsimError(f"--offset {window} is invalid (valid: minutes > 0, e.g. 150, 1500, 3000, 5000)")
    return w


def parse_method(text: str | Method, offset: float = 150.0) -> Method:
    """``random``, ``mql``, ``maql``, ``offset`` (window ``offset``) or ``offset(M)``."""
    if isinstance(text, Method):
        return text
    t = str(text).strip().lower()
    if t.startswith("offset(") and t.endswith(")"):
        return Method("offset", _check_window(t[7:-1]))
    if t not in METHODS:
        raise HcsimError(f"method {text!r} is unknown (valid: {', '.join(METHODS)})")
    return Method(t, _check_window(offset) if t == "offset" else None)


def paper_methods() -> list[Method]:
    """Random, MQL, MAQL and offset with M = 150, 1500, 3000, 5000 (the paper's runs)."""
    return [Method("random"), Method("mql"), Method("maql")] + [Method("offset", m) for m in OFFSETS]


def lomax_cdf(
    x: np.ndarray | float, a: float = LOMAX_A, b: float = LOMAX_B, cap: float | None = LOMAX_CAP
) -> np.ndarray:
    """F(x) = 1 - (1 + x/b)^(-a), conditioned on x <= cap when ``cap`` is given."""
    x = np.clip(np.asarray(x, dtype=float), 0.0, math.inf if cap is None else cap)
    f = -np.expm1(-a * np.log1p(x / b))
    if cap is not None:
        f = f / -math.expm1(-a * math.log1p(cap / b))
    return f


def lomax_sample(
    rng: np.random.Generator, n: int, a: float = LOMAX_A, b: float = LOMAX_B, cap: float | None = LOMAX_CAP
) -> np.ndarray:
    """``n`` Lomax draws by inverse transform, x = b((1-u)^(-1/a) - 1); draws above ``cap`` are redrawn."""
    out = np.empty(0)
    while out.size < n:
        u = rng.random(n - out.size)
        x = b * np.expm1(-np.log1p(-u) / a)
        out = np.concatenate([out, x if cap is None else x[x <= cap]])
    return out


@dataclass(frozen=True)
class Inputs:
    """One replication's random inputs: arrival instants, unit-mean exponentials E_j, uniforms u_j."""

    arrivals: np.ndarray
    work: np.ndarray
    uniforms: np.ndarray


def _stream(seed: int, replication: int, stream: int) -> np.random.Generator:
    return np.random.Generator(np.random.MT19937(np.random.SeedSequence([seed, replication, stream])))


def draw_inputs(
    seed: int, replication: int, period: float = WEEK, arrival: str = "lomax", rate: float | None = None
) -> Inputs:
    """Arrivals in [0, period) (``lomax`` gaps, or ``poisson`` at ``rate`` per minute), E_j and u_j."""
    if arrival not in ARRIVALS:
        raise HcsimError(f"arrival process {arrival!r} is unknown (valid: {', '.join(ARRIVALS)})")
    rng = _stream(seed, replication, 0)
    if arrival == "poisson":
        if rate is None:
            raise HcsimError("poisson arrivals need --rate (valid: jobs per minute > 0, e.g. 0.1)")
        if not (rate > 0 and math.isfinite(rate)):
            raise HcsimError(f"--rate {rate} is invalid for poisson arrivals (valid: jobs per minute > 0, e.g. 0.1)")
        mean = 1.0 / rate
    else:
        mean = 24.2  # the truncated Lomax mean, only to size the draws
    gaps = np.empty(0)
    total = 0.0
    while total < period:
        chunk = int(period / mean * 1.1) + 16
        g = -np.log1p(-rng.random(chunk)) * mean if arrival == "poisson" else lomax_sample(rng, chunk)
        gaps = np.concatenate([gaps, g])
        total = float(gaps.sum())
    times = np.cumsum(gaps)
    times = times[times < period]
    n = times.size
    work = -np.log1p(-_stream(seed, replication, 1).random(n))
    uniforms = _stream(seed, replication, 2).random(n)
    return Inputs(times, work, uniforms)


# ------------------------------------------------------------------ selection rules
@dataclass
class QueueState:
    """What the job manager knows about one system's queues at an instant.

    ``lengths`` jobs in each queue (running + waiting); ``area`` the integral of the
    length over [0, ``since``]; ``since`` the instant of each queue's last length
    change; ``done`` each queue's completion instants (only those still within an
    offset window are kept).
    """

    lengths: list[int]
    area: list[float]
    since: list[float]
    done: list[deque]

    @classmethod
    def empty(cls, n: int) -> QueueState:
        return cls([0] * n, [0.0] * n, [0.0] * n, [deque() for _ in range(n)])

    def areas(self, now: float) -> list[float]:
        """The integral of each queue's length over [0, now]."""
        return [a + n * (now - s) for a, n, s in zip(self.area, self.lengths, self.since, strict=True)]

    def change(self, k: int, now: float, delta: int) -> None:
        self.area[k] += self.lengths[k] * (now - self.since[k])
        self.since[k] = now
        self.lengths[k] += delta


def select_queue(
    method: Method, state: QueueState, now: float, u: float, offset_ties: str = "lowest", offset_rule: str = "fewest"
) -> int:
    """The queue (0-based) ``method`` picks at ``now``, given ``state`` and a uniform ``u`` in [0, 1)."""
    n = len(state.lengths)
    kind = method.kind
    if kind == "random":
        return int(u * n)
    if kind == "mql":
        low = min(state.lengths)
        ties = [k for k, v in enumerate(state.lengths) if v == low]
        return ties[int(u * len(ties))]
    if kind == "maql":
        areas = state.areas(now)
        return areas.index(min(areas))  # the first minimum: the lowest id
    if kind == "offset":
        horizon = now - method.window
        for d in state.done:
            while d and d[0] <= horizon:
                d.popleft()
        if now < method.window:
            return int(u * n)
        counts = [len(d) for d in state.done]
        best = min(counts) if offset_rule == "fewest" else max(counts)
        if offset_ties == "lowest":
            return counts.index(best)
        ties = [k for k, v in enumerate(counts) if v == best]
        return ties[int(u * len(ties))]
    raise HcsimError(f"method {kind!r} is unknown (valid: {', '.join(METHODS)})")


# ------------------------------------------------------------------ SimGrid
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
        pending = sg.ActivitySet()
        running: dict = {}
        exec_init = sg.this_actor.exec_init
        exec_async = sg.this_actor.exec_async
        clock = sg.Engine

        def launch(m: int, k: int, j: int, now: float) -> None:
            act = exec_init(service[k] * work[j])
            act.host = my_hosts[m][k]
            act.start()
            pending.push(act)
            running[act] = (m, k, j)
            start[m][j] = now

        i = 0
        timer = None
        if n:
            timer = exec_async(arr[0])
            pending.push(timer)
        while not pending.empty():
            act = pending.wait_any()
            now = clock.clock
            job = running.pop(act, None)
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
                continue
            # the timer: job i arrives (and any other arriving at this very instant)
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
            if i < n:
                timer = exec_async(arr[i] - now)
                pending.push(timer)
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


def _check_model(model: str, servers: int) -> tuple[str, int]:
    if model not in MODELS:
        raise HcsimError(f"model {model!r} is unknown (valid: {', '.join(MODELS)})")
    if isinstance(servers, bool) or not isinstance(servers, int | np.integer) or servers < 1:
        raise HcsimError(f"--servers {servers} is invalid (valid: an integer >= 1)")
    return model, int(servers)


def _check_offset_options(offset_ties: str, offset_rule: str) -> None:
    if offset_ties not in OFFSET_TIES:
        raise HcsimError(f"--offset-ties {offset_ties!r} is unknown (valid: {', '.join(OFFSET_TIES)})")
    if offset_rule not in OFFSET_RULES:
        raise HcsimError(f"--offset-rule {offset_rule!r} is unknown (valid: {', '.join(OFFSET_RULES)})")


# ------------------------------------------------------------------ Monte Carlo
@dataclass
class MethodJobs:
    """All jobs of one method, replications concatenated (in replication, then arrival order)."""

    replication: np.ndarray
    arrival: np.ndarray
    queue: np.ndarray
    start: np.ndarray  # service start [min]; the arrival instant in the paper model
    completion: np.ndarray  # finish - arrival [min]

    def replication_sums(self, replications: int) -> tuple[np.ndarray, np.ndarray]:
        """Per replication: number of jobs, sum of completion times."""
        n = np.bincount(self.replication, minlength=replications).astype(float)
        s = np.bincount(self.replication, weights=self.completion, minlength=replications)
        return n, s


@dataclass
class QueueRun:
    """A Monte Carlo run: its parameters and every job of every method."""

    set_name: str | None
    service: tuple[float, ...]
    model: str
    servers: int
    replications: int
    seed: int
    period: float
    arrival: str
    rate: float | None
    offset_ties: str
    offset_rule: str
    methods: list[str]
    jobs: dict[str, MethodJobs] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total_jobs(self) -> int:
        return sum(j.completion.size for j in self.jobs.values())


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
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise HcsimError(f"--seed {seed} is invalid (valid: an integer >= 0)")
    if not (period > 0 and math.isfinite(period)):
        raise HcsimError(f"--period {period} is invalid (valid: minutes > 0, e.g. 10080 for a week)")
    if isinstance(workers, bool) or not isinstance(workers, int | np.integer) or workers < 1:
        raise HcsimError(f"--workers {workers} is invalid (valid: an integer >= 1)")
    if arrival != "poisson" and rate is not None:
        raise HcsimError(f"--rate {rate} applies to poisson arrivals only (valid: omit it, or --arrival poisson)")
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


# ------------------------------------------------------------------ statistics
def _t975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (Cornish-Fisher, exact to 1e-3 for df>=3)."""
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
    if df in table:
        return table[df]
    z = 1.959963984540054
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


def ratio_interval(counts: np.ndarray, sums: np.ndarray) -> tuple[float, float]:
    """Pooled mean sum(sums)/sum(counts) and its 95% half-width across replications (ratio estimator)."""
    r = counts.size
    total = counts.sum()
    mean = float(sums.sum() / total) if total else math.nan
    if r < 2 or not total:
        return mean, math.nan
    resid = sums - mean * counts
    se = math.sqrt(float((resid**2).sum()) / (r * (r - 1))) / (total / r)
    return mean, _t975(r - 1) * se


def summarize(run: QueueRun, reference: str | None = "random") -> list[dict]:
    """Per method: jobs, mean completion time and its 95% CI, median, p90, p99, share of jobs per queue.

    With ``reference`` among the methods, also the paired difference of the mean against
    it (same inputs per replication) and that difference's 95% CI.
    """
    rows = []
    ref = run.jobs.get(reference) if reference else None
    ref_n, ref_s = ref.replication_sums(run.replications) if ref is not None else (None, None)
    for label in run.methods:
        j = run.jobs[label]
        n, s = j.replication_sums(run.replications)
        mean, half = ratio_interval(n, s)
        c = j.completion
        shares = np.bincount(j.queue, minlength=len(run.service)) / max(1, c.size)
        row = {
            "set": run.set_name or "custom",
            "model": run.model,
            "servers": run.servers,
            "method": label,
            "replications": run.replications,
            "jobs": int(c.size),
            "mean_min": mean,
            "ci95_min": half,
            "median_min": float(np.percentile(c, 50)) if c.size else math.nan,
            "p90_min": float(np.percentile(c, 90)) if c.size else math.nan,
            "p99_min": float(np.percentile(c, 99)) if c.size else math.nan,
        }
        if ref is not None:
            d_mean, d_half = ratio_interval(n, s - ref_s)
            row["diff_vs_" + reference + "_min"] = d_mean
            row["diff_ci95_min"] = d_half
        for k, share in enumerate(shares):
            row[f"share_q{k + 1}"] = float(share)
        rows.append(row)
    return rows


def cdf_points(run: QueueRun, grid: np.ndarray | None = None) -> list[dict]:
    """The empirical CDF of the completion time per method at ``grid`` minutes (default 0, 5, ..., 1500)."""
    grid = np.arange(0.0, 1500.0 + 1e-9, 5.0) if grid is None else np.asarray(grid, dtype=float)
    rows = []
    for label in run.methods:
        c = np.sort(run.jobs[label].completion)
        f = np.searchsorted(c, grid, side="right") / max(1, c.size)
        rows += [
            {"set": run.set_name or "custom", "model": run.model, "method": label, "minutes": float(x), "cdf": float(v)}
            for x, v in zip(grid, f, strict=True)
        ]
    return rows


def erlang_c_response(rate: float, mean_service: float, servers: int) -> float:
    """Mean response time of an M/M/c queue (Erlang C): P_wait / (c mu - lambda) + 1/mu."""
    mu = 1.0 / mean_service
    a = rate / mu
    if a >= servers:
        return math.inf
    term, total = 1.0, 1.0
    for k in range(1, servers):
        term *= a / k
        total += term
    last = term * a / servers / (1 - a / servers)
    p_wait = last / (total + last)
    return p_wait / (servers * mu - rate) + 1.0 / mu


# ------------------------------------------------------------------ outputs
def _format(v: object) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return str(v)


def _csv(rows: list[dict]) -> str:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    lines = [",".join(keys)] + [",".join(_format(r.get(k, "")) for k in keys) for r in rows]
    return "\n".join(lines) + "\n"


def _plot_cdfs(runs: list[QueueRun], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4), dpi=110)
    for run in runs:
        for label in run.methods:
            c = np.sort(run.jobs[label].completion)
            name = label if len(runs) == 1 else f"{run.set_name} {label}"
            ax.plot(c, np.arange(1, c.size + 1) / c.size, label=name)
    ax.set(xlabel="completion time (min)", ylabel="P(T <= t)", title=title, xlim=(0, None))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_outputs(run: QueueRun, directory: str) -> list[str]:
    """summary.csv, cdf.csv and cdf.png (completion-time distributions) in ``directory``; returns the paths."""
    from hcsim.files import atomic_write_text, check_output_path

    os.makedirs(directory, exist_ok=True)
    paths = [os.path.join(directory, name) for name in ("summary.csv", "cdf.csv", "cdf.png")]
    check_output_path(paths[0])
    atomic_write_text(paths[0], _csv(summarize(run, "random" if "random" in run.methods else None)))
    atomic_write_text(paths[1], _csv(cdf_points(run)))
    _plot_cdfs([run], paths[2], f"set {run.set_name or 'custom'}, {run.model} model: completion time")
    return paths


# ------------------------------------------------------------------ command line
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``hcsim queues`` to ``parser``."""
    parser.add_argument(
        "--method",
        default="all",
        help="random, mql, maql, offset, a comma-separated list, or all (= all four; default all)",
    )
    parser.add_argument("--set", dest="set_name", metavar="SET", default="1d", help="parameter set 1a..3d (default 1d)")
    parser.add_argument(
        "--offset", default="150", help="offset window M in minutes; several comma-separated (default 150)"
    )
    parser.add_argument(
        "--model", default="paper", help="paper (no waiting, the paper's model) or fifo (default paper)"
    )
    parser.add_argument("--servers", type=int, default=None, help="fifo: servers per queue (default 1)")
    parser.add_argument("--replications", type=int, default=20, help="simulated periods (default 20)")
    parser.add_argument("--period", type=float, default=WEEK, help="minutes per replication (default 10080, a week)")
    parser.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    parser.add_argument("--arrival", default="lomax", help="lomax (the paper's) or poisson (with --rate)")
    parser.add_argument("--rate", type=float, default=None, help="poisson arrivals per minute")
    parser.add_argument("--offset-ties", default="lowest", help="offset ties: lowest id or random (default lowest)")
    parser.add_argument(
        "--offset-rule", default="fewest", help="offset picks the queue with the fewest (default) or most completions"
    )
    parser.add_argument("--workers", type=int, default=1, help="parallel SimGrid processes (default 1)")
    parser.add_argument("--out", default=None, help="directory for summary.csv, cdf.csv, cdf.png")


def _methods_from_arguments(method: str, offset: str) -> list[Method]:
    windows = [_check_window(w) for w in str(offset).split(",") if w.strip()] or [_check_window(offset)]
    out: list[Method] = []
    for name in str(method).split(","):
        t = name.strip().lower()
        if t == "all":
            out += [Method("random"), Method("mql"), Method("maql")] + [Method("offset", w) for w in windows]
        elif t == "offset":
            out += [Method("offset", w) for w in windows]
        elif t in METHODS or t.startswith("offset("):
            out.append(parse_method(t))
        else:
            raise HcsimError(f"method {name.strip()!r} is unknown (valid: {', '.join(METHODS)}, all)")
    unique: list[Method] = []
    for m in out:
        if m not in unique:
            unique.append(m)
    return unique


def run_from_arguments(args: argparse.Namespace) -> int:
    """Run ``hcsim queues``: simulate, print a summary, write outputs to ``--out`` if given; returns 0."""
    methods = _methods_from_arguments(args.method, args.offset)
    if args.model not in MODELS:
        raise HcsimError(f"model {args.model!r} is unknown (valid: {', '.join(MODELS)})")
    if args.servers is not None and args.model != "fifo":
        raise HcsimError(f"--servers {args.servers} applies to --model fifo only (valid: omit it, or --model fifo)")
    if args.out:
        parent = os.path.dirname(os.path.abspath(args.out))
        if os.path.exists(args.out) and not os.path.isdir(args.out):
            raise HcsimError(f"--out '{args.out}' is a file (valid: a directory to write into)")
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
            raise HcsimError(
                f"--out '{args.out}': directory '{parent}' is missing or not writable (valid: a writable path)"
            )
    run = simulate(
        args.set_name,
        methods,
        model=args.model,
        servers=1 if args.servers is None else args.servers,
        replications=args.replications,
        seed=args.seed,
        period=args.period,
        arrival=args.arrival,
        rate=args.rate,
        offset_ties=args.offset_ties,
        offset_rule=args.offset_rule,
        workers=args.workers,
    )
    rows = summarize(run, "random" if "random" in run.methods else None)
    p = ", ".join(f"{x:g}" for x in run.service)
    model = "paper model" if run.model == "paper" else f"fifo model ({run.servers} server(s) per queue)"
    print(f"set {run.set_name} (p = {p} min), {model}, {run.replications} x {run.period:g} min, seed {run.seed}")
    print(
        f"{'method':<14}{'jobs':>8}{'mean (min)':>20}{'median':>9}{'p90':>9}{'p99':>9}"
        f"  share of jobs q1..q{len(run.service)}"
    )
    for r in rows:
        shares = " ".join(f"{r[f'share_q{k + 1}']:.2f}" for k in range(len(run.service)))
        ci = "" if math.isnan(r["ci95_min"]) else f" +- {r['ci95_min']:.2f}"
        print(
            f"{r['method']:<14}{r['jobs']:>8}{r['mean_min']:>11.2f}{ci:<9}"
            f"{r['median_min']:>9.2f}{r['p90_min']:>9.2f}{r['p99_min']:>9.2f}  {shares}"
        )
    speed = run.total_jobs / max(run.seconds, 1e-9)
    print(f"simulated {run.total_jobs} jobs on SimGrid in {run.seconds:.1f} s ({speed:.0f} jobs/s)")
    if args.out:
        paths = write_outputs(run, args.out)
        print("wrote " + ", ".join(paths))
    return 0
