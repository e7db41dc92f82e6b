"""One run of a workload graph inside a SimGrid simulation (paper Fig. 5), steppable.

An :class:`Execution` owns the state of one workload run: which vertex executions are
in the container, which wait, and what each completed SimGrid activity releases. It
does not own the loop. Whoever drives the simulation (the engine's controller actor in
:mod:`.simulator`, or the cluster front end running many jobs at once on one platform)
keeps one ``ActivitySet`` and an ``owner`` dict, and hands each completed activity back
with :meth:`Execution.complete`. Several executions can thus share one simulation and
really contend for links and XPUs.

* **execution container**: the activities of running vertex executions; start vertices
  enter at :meth:`Execution.start`;
* **event trigger**: when a vertex execution completes, each successor whose
  dependencies are met (and the vertex itself, for its next iteration) enters;
* **iterations**: a vertex runs executions 0..K-1, one at a time. Execution k needs
  execution k of each predecessor, or k-1 across a ``skip_first_iteration`` edge
  (ignored for k = 0). The run is over when every vertex ran K times.

A compute vertex becomes an ``Exec`` on its XPU (plus a ``Comm`` from its remote
memory when its data is not local; see :mod:`.memory`); a communication vertex becomes
the ``Comm`` flows of its algorithm (see :mod:`.collectives`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hcsim.engine.collectives import RING_KINDS, FlowPlan, plan
from hcsim.engine.memory import Placement, XpuInfo
from hcsim.errors import HcsimError
from hcsim.workload.graph import Workload

__all__ = ["Execution", "RunResult", "xpu_info"]

# activity tags
_EXEC, _COPY, _PART, _FLOW, _STEP, _TIMER, _VEND = 0, 1, 2, 3, 4, 5, 6


@dataclass
class RunResult:
    """Raw outcome of a run; :mod:`hcsim.engine.report` turns it into metrics and traces."""

    iterations: int
    coherent: bool
    makespan: float
    iteration_end: list[float]
    # (vertex, iteration, host, kind, start, end, bytes, flops)
    trace: list[tuple[str, int, str, str, float, float, float, float]]
    # per XPU: (start, end) of compute, of communication it takes part in, of memory stall
    compute: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    comm: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    stall: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    # flows: (src, dst, bytes, start, end)
    flows: list[tuple[str, str, int, float, float]] = field(default_factory=list)
    routes: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    link_bandwidth: dict[str, float] = field(default_factory=dict)
    activities: int = 0  # SimGrid activities started
    memoized_flows: int = 0  # flows of memoized ring steps: accounted for, not simulated one by one
    wall_seconds: float = 0.0  # host time spent in SimGrid's run loop (excludes loading the platform)
    graph: dict[str, Any] = field(default_factory=dict)
    placement: dict[str, str | None] = field(default_factory=dict)
    fold: Any = None  # the hcsim.platform.folding.Fold the run was simulated on (simulate_system), or None


class _Exec:
    """One execution (vertex v, iteration k) in the container."""

    __slots__ = ("v", "k", "start", "pending", "waits", "mid")

    def __init__(self, v: int, k: int, start: float, pending: int, waits: list[int] | None = None) -> None:
        self.v, self.k, self.start, self.pending, self.waits, self.mid = v, k, start, pending, waits, start


class _Ring(_Exec):
    """A ring collective run step by step (memoize mode), with its fast-forward state."""

    __slots__ = (
        "steps", "done_steps", "left", "step_start", "quiet", "ff", "gen", "links",
        "flinks", "lat", "solo", "fstart", "fsize", "disturbed", "real", "nvirtual", "vstart", "vsize", "vend",
        "vgen", "disjoint", "by_link", "hits", "unknown", "order", "foreign", "busy",
    )  # fmt: skip

    def __init__(self, v: int, k: int, start: float, steps: int) -> None:
        super().__init__(v, k, start, 0)
        # per flow of a step: links, route latency, measured solo duration of a full chunk, start and
        # size when launched, whether another flow crossed its links meanwhile
        self.flinks: list[frozenset[str]] = []
        self.lat: list[float] = []
        self.solo: list[float | None] = []
        self.fstart: list[float] = []
        self.fsize: list[int] = []
        self.disturbed: list[bool] = []
        # flows of a step left out of SimGrid (*virtual*) are all but ``real``; they started at vstart with vsize bytes
        self.real: set[int] = set()
        self.nvirtual, self.vstart, self.vsize = 0, start, 0
        self.vend, self.vgen, self.disjoint = start, 0, False
        self.by_link: dict[str, list[int]] = {}  # link -> flows of a step that cross it
        self.hits: dict[frozenset[str], tuple[int, ...]] = {}  # a route's links -> flows of a step it shares one with
        self.unknown: set[int] = set()  # flows whose solo duration is not measured yet
        self.order: list[int] | None = None  # flows with a known solo duration, slowest first (None: stale)
        self.foreign: list[int] = []  # per flow of a step: other flows in flight that share one of its links
        self.busy: set[int] = set()  # flows of a step with foreign > 0
        self.steps, self.done_steps, self.left = steps, 0, 0
        self.step_start, self.quiet = start, True
        self.ff: tuple[float, float, int] | None = None  # (since, step duration, steps covered)
        self.gen = 0
        self.links: frozenset[str] = frozenset()  # links the ring's flows cross


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


class Execution:
    """The state of one workload run; the driver pushes and hands back its activities.

    ``add(act, key)`` is the driver's hook: it must remember ``key`` for ``act`` (a
    tuple ``(execution, tag, vertex execution, flow index)``), push ``act`` into its
    ``ActivitySet``, and on completion call ``key[0].complete(act, *key[1:], now)``.
    ``on_iteration(k, now)`` is called when every vertex has finished iteration k.

    ``add_exec(act, key, end)`` (optional) takes an exec instead of ``add``, with the
    time ``end`` at which it completes if it has its XPU to itself. The driver may look
    at it only then, instead of keeping it in its ``ActivitySet``, whose ``wait_any``
    costs time in proportion to its size (15 us per wake-up with 64 activities in the
    set, 5.5 us with none). SimGrid stays the judge: at ``end`` the driver completes the
    exec only if ``act.test()`` says it is done, and otherwise waits for it as usual.

    ``memoize`` (needs the driver's ``add_timer(at, key)``, whose key comes back through
    :meth:`timer`): ring collectives run step by step, all flows of a step at once. A
    step that ran while no other flow crossed any of the ring's links (none in flight,
    none starting or ending) is the ring alone on its links: every later step takes the
    same time d, and leaving the ring's flows out of SimGrid changes no other flow's
    rate. So the remaining r steps are skipped with one timer of r*d. A flow that
    shares a link with the ring starting meanwhile interrupts the skip: the whole steps
    elapsed are kept and the current step resumes with the bytes it had left, in
    SimGrid again. (Skipping while another flow shares the ring's links would be wrong
    both ways: the ring's absence would speed that flow up.) Within a step, a flow
    whose links carry nothing else and whose solo duration has been measured (a full
    chunk, undisturbed) stays *virtual*: it takes that duration and touches no one. If
    another flow starts on its links it is launched with the bytes it has left (paying
    its latency again: the only approximation, below 1e-5 of an iteration in the
    tests). Memoize assumes this run is alone on the platform (other drivers' flows are
    not seen).
    """

    def __init__(
        self,
        sg: Any,
        workload: Workload,
        all_hosts: dict[str, Any],
        iterations: int,
        coherent: bool,
        placement: Placement,
        add: Callable[[Any, tuple], None],
        *,
        record_flows: bool = False,
        record_trace: bool = True,
        on_iteration: Callable[[int, float], None] | None = None,
        memoize: bool = False,
        add_timer: Callable[[float, tuple], None] | None = None,
        add_exec: Callable[[Any, tuple, float], None] | None = None,
    ) -> None:
        if memoize and add_timer is None:
            raise ValueError("memoize needs the driver's add_timer hook")
        self.memoize = memoize
        self.add_timer = add_timer
        self.add_exec = add_exec
        self.rings: list[_Ring] = []  # ring collectives in progress (memoize mode)
        self.routes: dict[tuple[str, str], tuple[frozenset[str], float]] = {}
        self.inflight: dict[Any, frozenset[str]] = {}  # flows in flight (memoize mode) -> their links
        self.sg = sg
        self._sendto = sg.Comm.sendto_async
        self.add = add
        self.iterations = iterations
        self.record_flows = record_flows
        self.record_trace = record_trace
        self.on_iteration = on_iteration
        names = list(workload.nodes)
        index = {n: i for i, n in enumerate(names)}
        data = [workload.nodes[n] for n in names]
        preds: list[list[tuple[int, bool]]] = [[] for _ in names]
        succs: list[list[int]] = [[] for _ in names]
        for u, out in workload._succ.items():  # NetworkX's adjacency dict: its edge views are 10x slower
            iu = index[u]
            for v, e in out.items():
                preds[index[v]].append((iu, bool(e.get("skip_first_iteration", False))))
                succs[iu].append(index[v])
        self.names, self.data, self.preds, self.succs = names, data, preds, succs

        # ---- memory placement and per-vertex costs
        per_xpu: dict[str, list[tuple[str, dict]]] = {}  # compute vertices per XPU, in graph order
        for n, d in zip(names, data, strict=True):
            if d["type"] == "compute":
                per_xpu.setdefault(d["location"], []).append((n, d))
        info = {x: xpu_info(all_hosts[x]) for x in sorted(per_xpu)}
        placed: dict[str, str | None] = {}
        for x, xi in info.items():
            placed.update(placement(xi, per_xpu[x], coherent))
        for n, where in placed.items():
            if where is not None and where not in all_hosts:
                raise HcsimError(f"vertex '{n}' is placed in memory host '{where}', which the platform does not have")

        # compute vertex -> (host, exec amount, remote host or None, remote bytes, concurrent?, seconds alone)
        compute_plan: list[tuple[Any, float, Any, int, bool, float] | None] = [None] * len(names)
        flow_plans: list[FlowPlan | None] = [None] * len(names)
        flow_hosts: list[tuple[list[Any], list[Any]] | None] = [None] * len(names)  # SimGrid hosts of each flow
        for i, d in enumerate(data):
            if d["type"] == "compute":
                xi = info[d["location"]]
                t_compute = d["flops"] / xi.rate(d["precision"])
                t_local = max(t_compute, d["mem_bytes"] / xi.bandwidth)
                remote = placed.get(names[i])
                nbytes = int(round(d["mem_bytes"]))
                if remote is None or nbytes == 0:  # nothing to move: the operator runs as if local
                    amount = t_local * xi.speed
                    compute_plan[i] = (all_hosts[xi.name], amount, None, 0, False, amount / xi.speed)
                else:  # coherent: compute alone on the XPU, beside the remote access; else copy, then roofline
                    t_exec = t_compute if coherent else t_local
                    amount = t_exec * xi.speed
                    host = all_hosts[xi.name]
                    compute_plan[i] = (host, amount, all_hosts[remote], nbytes, coherent, amount / xi.speed)
            else:
                compact = memoize and d["kind"] in RING_KINDS
                fp = plan(d["kind"], d["algorithm"], d["scope"], d["bytes"], d.get("group"), compact=compact)
                flow_plans[i] = fp
                flow_hosts[i] = ([all_hosts[h] for h in fp.src], [all_hosts[h] for h in fp.dst])
        self.compute_plan, self.flow_plans, self.flow_hosts = compute_plan, flow_plans, flow_hosts

        self.started = [0] * len(names)
        self.completed = [0] * len(names)
        self.running = [False] * len(names)
        self.per_iteration = [0] * iterations
        self.iterations_done = 0
        self.live = 0  # activities of this execution in the driver's set
        self.result = RunResult(
            iterations, coherent, 0.0, [0.0] * iterations, [], graph=dict(workload.graph), placement=placed
        )

    # ------------------------------------------------------------------ state
    @property
    def done(self) -> bool:
        """Every vertex ran all its iterations."""
        return self.iterations_done == self.iterations

    def missing(self) -> list[int]:
        """Vertices that have not run all iterations (a deadlock if nothing is live)."""
        return [v for v in range(len(self.names)) if self.completed[v] < self.iterations]

    def ready(self, v: int) -> bool:
        k = self.started[v]
        if k >= self.iterations or self.running[v]:
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

    def _exec(self, host: Any, amount: float, ex: _Exec, tag: int, now: float, seconds: float) -> None:
        act = self.sg.this_actor.exec_init(amount)
        act.host = host
        act.start()
        self.live += 1
        if self.add_exec is None:
            self.add(act, (self, tag, ex, 0))
        else:
            self.add_exec(act, (self, tag, ex, 0), now + seconds)

    def _flow(
        self,
        src: Any,
        dst: Any,
        size: int,
        ex: _Exec,
        tag: int,
        f: int,
        now: float,
        links: frozenset[str] | None = None,
    ) -> None:
        self.live += 1
        act = self._sendto(src, dst, size)
        self.add(act, (self, tag, ex, f))
        if self.memoize:
            if links is None:
                links = self._route(src, dst)[0]
            self.inflight[act] = links
            if self.rings:
                self._network_changed(ex, now, links, 1)

    # ------------------------------------------------------------------ memoized rings
    def _route(self, src: Any, dst: Any) -> tuple[frozenset[str], float]:
        """Links (names; each direction of a duplex link has its own) and latency of a route, cached."""
        key = (src.name, dst.name)
        hit = self.routes.get(key)
        if hit is None:
            links, latency = src.route_to(dst)
            hit = self.routes[key] = (frozenset(link.name for link in links), latency)
        return hit

    @staticmethod
    def _hits(r: _Ring, links: frozenset[str]) -> tuple[int, ...]:
        """Flows of a step of ``r`` that share a link with ``links`` (routes recur: cached)."""
        hit = r.hits.get(links)
        if hit is None:
            found: set[int] = set()
            for link in links:
                found.update(r.by_link.get(link, ()))
            hit = r.hits[links] = tuple(sorted(found))
        return hit

    def _network_changed(self, owner: _Exec, now: float, links: frozenset[str], change: int) -> None:
        """A flow started (+1) or ended (-1): rings it shares a link with are not quiet; skips stop here."""
        rings = self.rings
        if len(rings) == 1 and rings[0] is owner:  # a ring's own flow, no other ring: the common case
            return
        for r in list(rings):
            if r is owner:
                continue
            hit = self._hits(r, links)
            if hit:
                r.quiet = False
                if r.ff is not None:
                    self._interrupt(r, now)
                for f in hit:
                    r.disturbed[f] = True
                    r.foreign[f] += change
                    if r.foreign[f]:
                        r.busy.add(f)
                    else:
                        r.busy.discard(f)
                    if change > 0 and r.nvirtual and f not in r.real:
                        self._materialize(r, f, now)

    def _vdur(self, r: _Ring, f: int, size: int) -> float:
        """How long flow f of a step takes for ``size`` bytes alone on its links (from its measured solo step)."""
        solo, lat = r.solo[f], r.lat[f]
        chunk = self.flow_plans[r.v].size[0]
        return solo if size == chunk else lat + max(0.0, solo - lat) * size / chunk  # type: ignore[operator]

    def _materialize(self, r: _Ring, f: int, now: float) -> None:
        """Another flow starts on a virtual flow's links: run what it has left in SimGrid from now on."""
        r.real.add(f)
        r.nvirtual -= 1
        size = r.vsize
        dur = self._vdur(r, f, size)
        elapsed = now - r.vstart
        r.vgen += 1  # the step's virtual end changes
        virtual = [g for g in range(len(r.flinks)) if g not in r.real]
        r.vend = max([r.step_start] + [r.vstart + self._vdur(r, g, size) for g in virtual])
        if elapsed >= dur:  # it already arrived
            if not r.left:  # nothing of the step is in SimGrid: the new virtual end must still come
                self.add_timer(max(r.vend, now), (self, _VEND, r, r.vgen))  # type: ignore[misc]
            return
        lat = r.lat[f]
        moved = 0.0 if dur <= lat else max(0.0, elapsed - lat) / (dur - lat) * size
        rest = max(1, int(round(size - moved)))
        src, dst = self.flow_hosts[r.v]
        r.fstart[f], r.fsize[f], r.disturbed[f] = now, rest, True
        r.left += 1
        self.result.memoized_flows -= 1
        self.result.activities += 1
        self._flow(src[f], dst[f], rest, r, _STEP, f, now, r.flinks[f])

    def _step(self, r: _Ring, now: float, size: int) -> None:
        """Start a step: flows whose links carry nothing else and whose solo time is known stay virtual."""
        fp = self.flow_plans[r.v]
        src, dst = self.flow_hosts[r.v]
        n = len(fp)
        r.step_start = r.vstart = r.vend = now
        r.vsize, r.quiet = size, True
        r.vgen += 1
        for o in list(self.rings):  # another ring alone on links this step needs is not alone any more
            if o is r:
                continue
            hit = self._hits(o, r.links)
            if not hit:
                continue
            if o.ff is not None:
                self._interrupt(o, now)  # its skip assumed it had those links to itself
            for g in hit:
                if o.nvirtual and g not in o.real:
                    self._materialize(o, g, now)
        busy = r.busy
        real = busy | r.unknown if r.disjoint else set(range(n))
        nvirtual = n - len(real)
        if nvirtual:
            if size == fp.size[0]:  # a full chunk: each virtual flow takes its solo time; the slowest ends the step
                if r.order is None:
                    r.order = sorted((f for f in range(n) if r.solo[f] is not None), key=lambda f: -r.solo[f])
                for f in r.order:
                    if f not in real:
                        r.vend = now + r.solo[f]  # type: ignore[operator]
                        break
            else:
                r.vend = max(now + self._vdur(r, f, size) for f in range(n) if f not in real)
        r.real, r.nvirtual = real, nvirtual
        self.result.memoized_flows += nvirtual
        r.left = len(real)
        self.result.activities += len(real)
        for f in sorted(real):
            r.fstart[f], r.fsize[f], r.disturbed[f] = now, size, f in busy
            self._flow(src[f], dst[f], size, r, _STEP, f, now, r.flinks[f])
        if not real:
            self.add_timer(r.vend, (self, _VEND, r, r.vgen))  # type: ignore[misc]

    def _flow_done(self, r: _Ring, f: int, now: float) -> None:
        if not r.disturbed[f] and r.fsize[f] == self.flow_plans[r.v].size[0]:
            solo = now - r.fstart[f]
            if solo != r.solo[f]:
                r.solo[f] = solo
                r.unknown.discard(f)
                r.order = None
        r.left -= 1
        if not r.left:
            if now >= r.vend:
                self._step_done(r, now)
            else:
                self.add_timer(r.vend, (self, _VEND, r, r.vgen))  # type: ignore[misc]

    def _step_done(self, r: _Ring, now: float) -> None:
        r.real, r.nvirtual = set(), 0
        r.vgen += 1
        r.done_steps += 1
        if r.done_steps >= r.steps:
            self.rings.remove(r)
            self.finish(r, now)
            return
        d = now - r.step_start
        if r.quiet and not r.busy:  # alone on its links, and nothing else is in flight on them
            left = r.steps - r.done_steps
            r.ff = (now, d, left)
            r.gen += 1
            self.add_timer(now + left * d, (self, _TIMER, r, r.gen))  # type: ignore[misc]
            return
        self._step(r, now, self.flow_plans[r.v].size[0])

    def _interrupt(self, r: _Ring, now: float) -> None:
        since, d, left = r.ff  # type: ignore[misc]
        elapsed = (now - since) / d
        whole = int(elapsed + 1e-9)
        if whole >= left:  # the skip ends at this very instant: let its timer finish the ring
            return
        r.ff = None
        r.gen += 1  # cancels the timer
        r.vgen += 1
        r.done_steps += whole
        n = len(self.flow_plans[r.v])
        self.result.memoized_flows += whole * n
        part = max(0.0, elapsed - whole)
        chunk = self.flow_plans[r.v].size[0]
        self._step(r, now, max(1, int(round(chunk * (1.0 - part)))))
        r.quiet = False  # a partial step measures nothing

    def timer(self, key: tuple, now: float) -> None:
        """The driver's timer ``key`` (from ``add_timer``) is due: a skipped ring ends."""
        _, tag, r, gen = key
        if tag == _VEND:  # the virtual flows of a step have arrived
            if gen == r.vgen and not r.left and r in self.rings:
                self._step_done(r, now)
            return
        if gen != r.gen or r.ff is None:
            return  # cancelled by an interruption
        _, _, left = r.ff
        r.ff = None
        self.result.memoized_flows += left * len(self.flow_plans[r.v])
        r.done_steps = r.steps
        self.rings.remove(r)
        self.finish(r, now)

    def launch(self, v: int, now: float) -> None:
        k = self.started[v]
        self.started[v] = k + 1
        self.running[v] = True
        cp = self.compute_plan[v]
        result = self.result
        if cp is not None:
            host, amount, remote, nbytes, concurrent, seconds = cp
            result.activities += 1 if remote is None else 2
            if remote is None:
                self._exec(host, amount, _Exec(v, k, now, 1), _EXEC, now, seconds)
            elif concurrent:
                ex = _Exec(v, k, now, 2)
                self._exec(host, amount, ex, _PART, now, seconds)
                self._flow(remote, host, nbytes, ex, _PART, -1, now)
            else:
                self._flow(remote, host, nbytes, _Exec(v, k, now, 1), _COPY, -1, now)
            return
        fp = self.flow_plans[v]
        if self.memoize and self.data[v]["kind"] in RING_KINDS and fp.steps > 0:
            r = _Ring(v, k, now, fp.steps)
            src, dst = self.flow_hosts[v]
            routes = [self._route(a, b) for a, b in zip(src, dst, strict=True)]
            r.flinks = [links for links, _ in routes]
            r.lat = [lat for _, lat in routes]
            r.links = frozenset().union(*r.flinks)
            r.disjoint = len(r.links) == sum(len(fl) for fl in r.flinks)  # no two flows of a step share a link
            n = len(routes)
            for f, links in enumerate(r.flinks):
                for link in links:
                    r.by_link.setdefault(link, []).append(f)
            r.unknown = set(range(n))
            r.foreign = [0] * n
            for links in self.inflight.values():
                for f in self._hits(r, links):
                    r.foreign[f] += 1
            r.busy = {f for f in range(n) if r.foreign[f]}
            r.solo, r.fstart, r.fsize, r.disturbed = [None] * n, [0.0] * n, [0] * n, [False] * n
            self.rings.append(r)
            self._step(r, now, fp.size[0])
            return
        src, dst = self.flow_hosts[v]
        result.activities += len(fp)
        ex = _Exec(v, k, now, len(fp), list(fp.waits))
        for f, w in enumerate(ex.waits):
            if w == 0:
                self._flow(src[f], dst[f], fp.size[f], ex, _FLOW, f, now)
        if len(fp) == 0:
            self.finish(ex, now)

    # ------------------------------------------------------------------ completions
    def complete(self, act: Any, tag: int, ex: _Exec, f: int, now: float) -> None:
        """``act`` (one of ours) completed at ``now``: release what waits for it."""
        self.live -= 1
        if self.memoize and tag != _EXEC and (tag != _PART or f == -1):
            links = self.inflight.pop(act)
            if self.rings:
                self._network_changed(ex, now, links, -1)
        if tag == _STEP:
            self._flow_done(ex, f, now)  # type: ignore[arg-type]
            return
        if tag == _FLOW:  # the hot path: a collective's flow
            fp = self.flow_plans[ex.v]
            if self.record_flows:
                self.result.flows.append((fp.src[f], fp.dst[f], fp.size[f], act.start_time, now))
            waits = ex.waits
            src, dst = self.flow_hosts[ex.v]
            for g in fp.releases[f]:
                waits[g] -= 1
                if not waits[g]:
                    self._flow(src[g], dst[g], fp.size[g], ex, _FLOW, g, now)
            ex.pending -= 1
            if not ex.pending:
                self.finish(ex, now)
            return
        if tag == _EXEC:
            self.finish(ex, now)
        elif tag == _COPY:
            host, amount, remote, nbytes, _, seconds = self.compute_plan[ex.v]
            if self.record_flows:
                self.result.flows.append((remote.name, host.name, nbytes, ex.start, now))
            ex.mid = now
            self._exec(host, amount, ex, _EXEC, now, seconds)
        else:  # _PART of a coherent remote operator
            if f == -1:
                if self.record_flows:
                    host, _, remote, nbytes, _, _ = self.compute_plan[ex.v]
                    self.result.flows.append((remote.name, host.name, nbytes, ex.start, now))
            else:
                ex.mid = now
            ex.pending -= 1
            if ex.pending == 0:
                self.finish(ex, now)

    def finish(self, ex: _Exec, now: float) -> None:
        v = ex.v
        self.running[v] = False
        self.completed[v] += 1
        self.per_iteration[ex.k] += 1
        result = self.result
        if self.record_trace:
            d = self.data[v]
            name = self.names[v]
            if d["type"] == "compute":
                host = d["location"]
                result.trace.append((name, ex.k, host, "compute", ex.start, now, d["mem_bytes"], d["flops"]))
                cp = self.compute_plan[v]
                if cp[2] is None:
                    result.compute.setdefault(host, []).append((ex.start, now))
                elif cp[4]:  # coherent: compute ran from start to ex.mid, memory access to its own end
                    result.compute.setdefault(host, []).append((ex.start, ex.mid))
                    if now > ex.mid:
                        result.stall.setdefault(host, []).append((ex.mid, now))
                else:  # non-coherent: copy until ex.mid, then compute
                    result.stall.setdefault(host, []).append((ex.start, ex.mid))
                    result.compute.setdefault(host, []).append((ex.mid, now))
            else:
                result.trace.append((name, ex.k, "collective", d["kind"], ex.start, now, d["bytes"], 0.0))
                for r in d["scope"]:
                    result.comm.setdefault(r, []).append((ex.start, now))
        if now > result.iteration_end[ex.k]:
            result.iteration_end[ex.k] = now
        if self.per_iteration[ex.k] == len(self.names):
            self.iterations_done += 1
            if self.on_iteration is not None:
                self.on_iteration(ex.k, now)
        for w in self.succs[v]:
            if self.ready(w):
                self.launch(w, now)
        if self.ready(v):
            self.launch(v, now)
