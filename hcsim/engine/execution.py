"""One run of a workload graph inside a SimGrid simulation (paper Fig. 5), steppable.

An :class:`Execution` owns the state of one workload run: which vertex executions are
in the container, which wait, and what each completed SimGrid activity releases. A
:class:`~hcsim.engine.driver.Driver` owns the loop and hands each completed activity
back (the engine's controller in :mod:`.simulator`, or the cluster front end running
many jobs on one platform). Compute vertices become execs (and flows from remote memory,
:mod:`.memory`); communication vertices are run by a strategy (:mod:`.strategy`): the
exact one (:mod:`.exact`, :mod:`.tasks`), or one a caller's *wing* hands in.
:class:`EngineOptions` says how it runs.

Invariant (Fig. 5): a vertex runs executions 0..K-1, one at a time; execution k needs
execution k of each predecessor, or k-1 across a ``skip_first_iteration`` edge (ignored
for k = 0); the run is over when every vertex ran K times. This module imports no fast
path (``docs/fast-paths.md``, "How the fast paths are built").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hcsim.collectives import FlowPlan, TopologyView
from hcsim.engine.driver import Driver
from hcsim.engine.exact import ExactFlows, max_flows_at_once
from hcsim.engine.memory import Placement, XpuInfo
from hcsim.engine.records import (
    COMM,
    COPY,
    EXEC,
    REMOTE_ACCESS,
    REMOTE_COMPUTE,
    ActivityKey,
    ComputePlan,
    RunResult,
    TraceRecord,
    VertexRun,
)
from hcsim.engine.strategy import CommStrategy, Wing
from hcsim.engine.tasks import TaskFlows
from hcsim.errors import HcsimError
from hcsim.simgrid_runtime import settings
from hcsim.workload.graph import Workload

__all__ = ["EngineOptions", "Execution", "RunResult", "xpu_info"]


def _raw_contexts() -> bool:
    return settings().contexts != "thread"


@dataclass(frozen=True)
class EngineOptions:
    """How the engine runs a workload (none of these changes a simulated date).

    ``record_flows``: keep every flow (source, destination, bytes, start, end) for link
    statistics; ``record_trace``: keep a trace record and busy intervals per vertex
    execution; ``timed_execs``: hand execs to the driver's exec-end heap
    (:meth:`~hcsim.engine.driver.Driver.add_exec`) instead of its ``ActivitySet`` (a
    driver that cancels activities, the cluster's, turns it off); ``tasks``: wide
    communication vertices on SimGrid's Task plugin (:mod:`.tasks`: ``None`` within the
    flows-at-once limit, ``True`` past it, ``False`` never); ``progress``: a bar of
    iterations done (``None``: when stderr is a terminal); ``max_flows_at_once``: the
    most flows one vertex may start at once (default ``HCSIM_MAX_FLOWS_AT_ONCE`` or
    :data:`~hcsim.engine.exact.MAX_FLOWS_AT_ONCE`); ``raw_contexts``: the controller on
    SimGrid's raw contexts (default: unless ``HCSIM_CONTEXTS=thread``).
    """

    record_flows: bool = True
    record_trace: bool = True
    timed_execs: bool = True
    tasks: bool | None = None
    progress: bool | None = None
    max_flows_at_once: int = field(default_factory=max_flows_at_once)
    raw_contexts: bool = field(default_factory=_raw_contexts)

    @classmethod
    def of(cls, options: EngineOptions | None = None, **switches: Any) -> Any:
        """``options`` (default: all defaults) with the keyword ``switches`` set: where keywords become options."""
        if options is None:
            base = cls()
        elif isinstance(options, cls):
            base = options
        else:  # options of a base class: the same values, this class's defaults for the rest
            base = cls(**{f.name: getattr(options, f.name) for f in dataclasses.fields(options)})
        if not switches:
            return base
        known = {f.name for f in dataclasses.fields(base)}
        unknown = sorted(set(switches) - known)
        if unknown:
            hint = " (the fast paths take hcsim.fast.RunOptions: hcsim.fast.simulate)" if cls is EngineOptions else ""
            valid = ", ".join(sorted(known))
            raise TypeError(f"{unknown[0]!r} is not an option of {cls.__name__} (valid: {valid}){hint}")
        return dataclasses.replace(base, **switches)


def xpu_info(host: Any) -> XpuInfo:
    """What the engine needs to know of an XPU, read from the host properties the compiler writes."""

    def num(key: str, default: float) -> float:
        value = host.get_property(key)
        return float(value) if value is not None else default

    return XpuInfo(
        name=host.name,
        speed=host.speed,
        fp16=num("fp16_flops", host.speed),
        fp32=num("fp32_flops", host.speed),
        capacity=num("memory", math.inf),
        bandwidth=num("memory_bandwidth", math.inf),
        host_memory=host.get_property("host_memory"),
        cxl_memory=host.get_property("cxl_memory"),
    )


class _Latency:
    """Collectives' fixed latencies (``FlowPlan.delay``): a vertex execution whose plan has one
    finishes that long after its last flow. Only a run with such a plan has this part: it
    takes the place of :meth:`Execution.finish` then (``execution.finish``), and a run
    without one never checks for a delay."""

    def __init__(self, execution: Execution) -> None:
        self.execution = execution
        self.delay = [fp.delay if fp is not None else 0.0 for fp in execution.flow_plans]

    def finish(self, run: VertexRun, now: float) -> None:
        """The last flow of ``run`` is over: finish it now, or once its plan's delay has passed."""
        delay = self.delay[run.v]
        if delay:
            self.execution.driver.add_timer(now + delay, (self, run))
        else:
            Execution.finish(self.execution, run, now)

    def timer(self, key: tuple, now: float) -> None:
        Execution.finish(self.execution, key[1], now)


class Execution:
    """The state of one workload run; its driver starts nothing but hands activities back.

    ``options``: how it runs (:class:`EngineOptions`). ``wing``: strategies and
    observers a caller adds (:class:`~hcsim.engine.strategy.Wing`; the fast paths);
    ``observers``: the caller's own (:class:`~hcsim.engine.strategy.RunObserver`: told
    of each vertex execution's end, each iteration's end, and, when the driver's owner
    calls :meth:`run_done` after the loop, of the run's end).
    """

    def __init__(
        self,
        sg: Any,
        workload: Workload,
        all_hosts: dict[str, Any],
        iterations: int,
        coherent: bool,
        placement: Placement,
        driver: Driver,
        *,
        options: EngineOptions,
        wing: Wing | None = None,
        observers: Sequence[Any] = (),
    ) -> None:
        self.sg, self.driver, self.iterations, self.options = sg, driver, iterations, options
        self._sendto, self._add_flow = sg.Comm.sendto_async, driver.add_flow
        self.record_flows, self.record_trace = options.record_flows, options.record_trace  # read on the hot path
        self.timed_execs = options.timed_execs
        tasks = options.tasks
        names = list(workload._node)  # NetworkX's node dict (as _succ below): its NodeView costs 2 us a lookup
        index = {n: i for i, n in enumerate(names)}
        data = list(workload._node.values())
        preds: list[list[tuple[int, bool]]] = [[] for _ in names]
        succs: list[list[int]] = [[] for _ in names]
        for u, out in workload._succ.items():  # NetworkX's adjacency dict: its edge views are 10x slower
            iu = index[u]
            for v, e in out.items():
                preds[index[v]].append((iu, bool(e.get("skip_first_iteration", False))))
                succs[iu].append(index[v])
        self.names, self.data, self.preds, self.succs = names, data, preds, succs

        exact = ExactFlows(self)
        strategies: list[CommStrategy] = [exact]
        if tasks is not False:  # None (default): wide vertices on tasks, within the flows-at-once limit
            strategies = [TaskFlows(self, exact, limited=tasks is None)]
        if wing is not None:
            strategies[:0] = wing.strategies(self, exact)
        placed = self._place(all_hosts, placement, coherent)
        self.compute_plan: list[ComputePlan | None] = [None] * len(names)
        self.flow_plans: list[FlowPlan | None] = [None] * len(names)
        self.flow_hosts: list[tuple[list[Any], list[Any]] | None] = [None] * len(names)  # SimGrid hosts of flows
        self.strategy_of: list[CommStrategy | None] = [None] * len(names)
        view: TopologyView | None = None  # read from the hosts once, if a communication vertex needs it
        self.comm_complete: list[Callable[[Any, ActivityKey, float], None] | None] = [None] * len(names)
        # vertices running the same collective (kind, algorithm, scope, bytes, group) share one plan and its hosts:
        # a plan is a function of those alone, and nothing changes it after it is made (a training graph repeats
        # each TP allreduce for every layer and microbatch: 21k ring vertices, a few hundred plans, at 256 XPUs)
        shared: dict[tuple, tuple[CommStrategy, FlowPlan, tuple[list[Any], list[Any]]]] = {}
        for i, d in enumerate(data):
            if d["type"] == "compute":
                self.compute_plan[i] = self._compute_plan(d, all_hosts, placed.get(names[i]), coherent)
            else:
                strategy = next(s for s in strategies if s.handles(d))
                key = (id(strategy), d["kind"], d["algorithm"], tuple(d["scope"]), d["bytes"], d.get("group"))
                known = shared.get(key)
                if known is None:
                    if view is None:
                        view = TopologyView.of_hosts(all_hosts)
                    fp = strategy.plan(d, view)
                    if isinstance(strategy, TaskFlows) and not strategy.runs(fp):
                        strategy = exact  # a narrow vertex: no extra call per flow on the hot path
                    host = all_hosts.get if fp.joins else all_hosts.__getitem__  # a join's "" ends map to None
                    known = shared[key] = (strategy, fp, ([host(h) for h in fp.src], [host(h) for h in fp.dst]))
                strategy, self.flow_plans[i], self.flow_hosts[i] = known
                self.strategy_of[i], self.comm_complete[i] = strategy, strategy.complete

        if any(fp.delay for _, fp, _ in shared.values()):  # collectives with a fixed latency (every plan is shared)
            self.finish = _Latency(self).finish  # type: ignore[method-assign]
        self.started = [0] * len(names)
        self.completed = [0] * len(names)
        self.running = [False] * len(names)
        self.per_iteration = [0] * iterations
        self.iterations_done = 0
        self.result = RunResult(
            iterations, coherent, 0.0, [0.0] * iterations, [], graph=dict(workload.graph), placement=placed
        )
        self.limit = iterations  # no execution k >= limit starts (lowered by an observer: iterations repeat)
        everyone = [*(wing.observers(self) if wing is not None else ()), *observers]
        self._vertex_done: tuple[Callable[[int, int, float, float], None], ...] = tuple(
            o.vertex_done for o in everyone if hasattr(o, "vertex_done")
        )
        self._iteration_done: tuple[Callable[[int, float], Any], ...] = tuple(
            o.iteration_done for o in everyone if hasattr(o, "iteration_done")
        )
        self._run_done: tuple[Callable[[], None], ...] = tuple(o.run_done for o in everyone if hasattr(o, "run_done"))

    def _place(self, all_hosts: dict[str, Any], placement: Placement, coherent: bool) -> dict[str, str | None]:
        """Where each compute vertex's data lives (None: local), by the placement policy."""
        per_xpu: dict[str, list[tuple[str, dict]]] = {}  # compute vertices per XPU, in graph order
        for n, d in zip(self.names, self.data, strict=True):
            if d["type"] == "compute":
                per_xpu.setdefault(d["location"], []).append((n, d))
        self.info = {x: xpu_info(all_hosts[x]) for x in sorted(per_xpu)}
        placed: dict[str, str | None] = {}
        for x, xi in self.info.items():
            placed.update(placement(xi, per_xpu[x], coherent))
        # each memory host the policy named is looked up once (38k vertices, a few hosts); the error names the first
        unknown = {where for where in set(placed.values()) if where is not None and where not in all_hosts}
        for n, where in placed.items() if unknown else ():
            if where in unknown:
                raise HcsimError(f"vertex '{n}' is placed in memory host '{where}', which the platform does not have")
        return placed

    def _compute_plan(self, d: dict, all_hosts: dict[str, Any], remote: str | None, coherent: bool) -> ComputePlan:
        """Roofline on the XPU; remote data adds a copy before (non-coherent) or an access beside (coherent)."""
        xi = self.info[d["location"]]
        host = all_hosts[xi.name]
        seconds = d.get("seconds")
        if seconds is None:
            t_compute = d["flops"] / xi.rate(d["precision"])
            t_local = max(t_compute, d["mem_bytes"] / xi.bandwidth)
        else:  # a calibrated duration on this XPU (hcsim.calibration.machine): its memory time included
            t_compute = t_local = seconds
        nbytes = int(round(d["mem_bytes"]))
        if remote is None or nbytes == 0:  # nothing to move: the operator runs as if local
            amount = t_local * xi.speed
            return ComputePlan(host, amount, None, 0, False, amount / xi.speed)
        amount = (t_compute if coherent else t_local) * xi.speed
        return ComputePlan(host, amount, all_hosts[remote], nbytes, coherent, amount / xi.speed)

    # ------------------------------------------------------------------ state
    @property
    def done(self) -> bool:
        """Every vertex ran all its iterations."""
        return self.iterations_done == self.iterations

    def run_done(self) -> None:
        """After the driver's loop: tell the observers (iteration repeat fills the iterations it extrapolates)."""
        for done in self._run_done:
            done()

    def missing(self) -> list[int]:
        """Vertices that have not run all iterations (a deadlock if nothing is live)."""
        return [v for v in range(len(self.names)) if self.completed[v] < self.iterations]

    def ready(self, v: int) -> bool:
        k = self.started[v]
        if k >= self.limit or self.running[v]:
            return False
        completed = self.completed
        for u, skip in self.preds[v]:
            if skip:
                if k and completed[u] < k:
                    return False
            elif completed[u] <= k:
                return False
        return True

    # ------------------------------------------------------------------ launching
    def start(self, now: float) -> None:
        """Launch start vertices, and any vertex whose only dependencies skip the first iteration."""
        for v in range(len(self.names)):
            if self.ready(v):
                self.launch(v, now)

    def _exec(self, cp: ComputePlan, run: VertexRun, tag: int, now: float) -> None:
        act = self.sg.this_actor.exec_init(cp.amount)
        act.host = cp.host
        act.start()
        if self.timed_execs:
            self.driver.add_exec(act, ActivityKey(self, tag, run, 0), now + cp.seconds)
        else:
            self.driver.watch(act, ActivityKey(self, tag, run, 0))

    def flow(self, src: Any, dst: Any, size: int, key: ActivityKey, now: float, links: Any = None) -> None:
        """Start a flow of ``size`` bytes (``links``: its route's link names, if the caller knows them)."""
        self._add_flow(self._sendto(src, dst, size), key, src, dst, links, now)

    def launch(self, v: int, now: float) -> None:
        k = self.started[v]
        self.started[v] = k + 1
        self.running[v] = True
        cp = self.compute_plan[v]
        if cp is None:
            self.strategy_of[v].launch(v, k, now)  # type: ignore[union-attr]
            return
        self.result.activities += 1 if cp.remote is None else 2
        if cp.remote is None:
            self._exec(cp, VertexRun(v, k, now, 1), EXEC, now)
        elif cp.coherent:
            run = VertexRun(v, k, now, 2)
            self._exec(cp, run, REMOTE_COMPUTE, now)
            self.flow(cp.remote, cp.host, cp.nbytes, ActivityKey(self, REMOTE_ACCESS, run, 0), now)
        else:
            self.flow(cp.remote, cp.host, cp.nbytes, ActivityKey(self, COPY, VertexRun(v, k, now, 1), 0), now)

    # ------------------------------------------------------------------ completions
    def complete(self, act: Any, key: ActivityKey, now: float) -> None:
        """``act`` (one of ours, with ``key``) completed at ``now``: release what waits for it."""
        _, tag, run, _ = key
        if tag == COMM:  # the hot path: a collective's flow
            self.comm_complete[run.v](act, key, now)
        elif tag == EXEC:
            self.finish(run, now)
        elif tag == COPY:  # non-coherent: the data is local now; compute
            cp = self.compute_plan[run.v]
            if self.record_flows:
                self.result.flows.append((cp.remote.name, cp.host.name, cp.nbytes, run.start, now))
            run.phase_end = now
            self._exec(cp, run, EXEC, now)
        else:  # one of the two parts of a coherent remote operator
            if tag == REMOTE_ACCESS:
                if self.record_flows:
                    cp = self.compute_plan[run.v]
                    self.result.flows.append((cp.remote.name, cp.host.name, cp.nbytes, run.start, now))
            else:
                run.phase_end = now
            run.pending -= 1
            if run.pending == 0:
                self.finish(run, now)

    def timer(self, key: tuple, now: float) -> None:
        """A driver timer set by one of this execution's strategies (``key[0]``) is due."""
        key[0].timer(key, now)

    def finish(self, run: VertexRun, now: float) -> None:
        """Vertex execution ``run`` is over: record it, then launch what it released.

        (In a run with a collective of a fixed latency, ``self.finish`` is :meth:`_Latency.finish`,
        which calls this once the latency has passed.)
        """
        v = run.v
        self.running[v] = False
        self.completed[v] += 1
        self.per_iteration[run.k] += 1
        result = self.result
        if self.record_trace:
            self._record(run, now)
        if now > result.iteration_end[run.k]:
            result.iteration_end[run.k] = now
        for done in self._vertex_done:
            done(v, run.k, run.start, now)
        if self.per_iteration[run.k] == len(self.names):
            self.iterations_done += 1
            for done in self._iteration_done:
                if done(run.k, now):
                    self.limit = run.k + 1  # nothing of the next iterations starts (e.g. they are extrapolated)
        for w in self.succs[v]:
            if self.ready(w):
                self.launch(w, now)
        if self.ready(v):
            self.launch(v, now)

    def _record(self, run: VertexRun, now: float) -> None:
        """The vertex execution's trace record, and the compute / stall / communication time of its XPUs."""
        result, v = self.result, run.v
        d = self.data[v]
        name = self.names[v]
        if d["type"] != "compute":
            result.trace.append(TraceRecord(name, run.k, "collective", d["kind"], run.start, now, d["bytes"], 0.0))
            for r in d["scope"]:
                result.comm.setdefault(r, []).append((run.start, now))
            return
        host = d["location"]
        result.trace.append(TraceRecord(name, run.k, host, "compute", run.start, now, d["mem_bytes"], d["flops"]))
        cp = self.compute_plan[v]
        if cp.remote is None:
            result.compute.setdefault(host, []).append((run.start, now))
        elif cp.coherent:  # the exec ran from start to phase_end, the remote access to the end
            result.compute.setdefault(host, []).append((run.start, run.phase_end))
            if now > run.phase_end:
                result.stall.setdefault(host, []).append((run.phase_end, now))
        else:  # non-coherent: the copy until phase_end, then the exec
            result.stall.setdefault(host, []).append((run.start, run.phase_end))
            result.compute.setdefault(host, []).append((run.phase_end, now))
