"""The workload execution engine (paper Fig. 5) on SimGrid S4U.

One controller actor drives the whole run, so there is one thread wake-up per
completed SimGrid activity and nothing else:

* **execution container**: the set of running activities (an ``ActivitySet``); start
  vertices enter at time 0;
* **event trigger**: ``wait_any`` returns the next completed activity; when a vertex
  execution completes, each successor whose dependencies are met (and the vertex
  itself, for its next iteration) enters the container;
* **iterations**: a vertex runs executions 0..K-1, one at a time. Execution k needs
  execution k of each predecessor, or k-1 across a ``skip_first_iteration`` edge
  (ignored for k = 0). The run ends when the container empties; if some vertex has not
  run K times by then, that is a deadlock and the error names the waiting vertices and
  the dependencies they miss.

A compute vertex becomes an ``Exec`` on its XPU (plus a ``Comm`` from its remote
memory when its data is not local; see :mod:`.memory`); a communication vertex becomes
the ``Comm`` flows of its algorithm (see :mod:`.collectives`). All of them are real
SimGrid activities sharing the platform's links and CPUs.

Everything the engine needs is read from the platform file (host properties written by
the compiler), so any SimGrid platform with those properties can be used.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from hcsim.engine.collectives import FlowPlan, plan
from hcsim.engine.memory import Placement, XpuInfo, fill_local_first
from hcsim.errors import HcsimError
from hcsim.progress import progress_bar
from hcsim.sg import import_simgrid, load_platform, run_isolated
from hcsim.workload.graph import Workload

__all__ = ["RunResult", "simulate"]

# activity tags
_EXEC, _COPY, _PART, _FLOW = 0, 1, 2, 3


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
    activities: int = 0
    wall_seconds: float = 0.0  # host time spent in SimGrid's run loop (excludes loading the platform)
    graph: dict[str, Any] = field(default_factory=dict)
    placement: dict[str, str | None] = field(default_factory=dict)


class _Exec:
    """One execution (vertex v, iteration k) in the container."""

    __slots__ = ("v", "k", "start", "pending", "waits", "mid")

    def __init__(self, v: int, k: int, start: float, pending: int, waits: list[int] | None = None) -> None:
        self.v, self.k, self.start, self.pending, self.waits, self.mid = v, k, start, pending, waits, start


def _xpu_info(host: Any) -> XpuInfo:
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


def _run(
    platform: str,
    workload: Workload,
    iterations: int,
    coherent: bool,
    placement: Placement,
    record_flows: bool,
    progress: bool,
) -> RunResult:
    sg = import_simgrid()
    engine = load_platform(platform)
    all_hosts = {h.name: h for h in engine.all_hosts}
    xpus = {n for n, h in all_hosts.items() if h.get_property("kind") == "xpu"}
    if not xpus:  # a platform not written by hcsim: every host counts as an XPU
        xpus = set(all_hosts)
    workload.validate(xpus=xpus, hosts=set(all_hosts))

    names = list(workload.nodes)
    index = {n: i for i, n in enumerate(names)}
    data = [workload.nodes[n] for n in names]
    preds: list[list[tuple[int, bool]]] = [[] for _ in names]
    succs: list[list[int]] = [[] for _ in names]
    for u, v, skip in workload.edges(data="skip_first_iteration", default=False):
        preds[index[v]].append((index[u], bool(skip)))
        if index[v] not in succs[index[u]]:
            succs[index[u]].append(index[v])

    # ---- memory placement and per-vertex costs
    info = {x: _xpu_info(all_hosts[x]) for x in sorted({d["location"] for d in data if d["type"] == "compute"})}
    placed: dict[str, str | None] = {}
    for x, xi in info.items():
        mine = [(n, d) for n, d in zip(names, data, strict=True) if d["type"] == "compute" and d["location"] == x]
        placed.update(placement(xi, mine, coherent))
    for n, where in placed.items():
        if where is not None and where not in all_hosts:
            raise HcsimError(f"vertex '{n}' is placed in memory host '{where}', which the platform does not have")

    # compute vertex -> (host, exec amount, remote host or None, remote bytes, concurrent?)
    compute_plan: list[tuple[Any, float, Any, int, bool] | None] = [None] * len(names)
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
                compute_plan[i] = (all_hosts[xi.name], t_local * xi.speed, None, 0, False)
            else:  # coherent: compute alone on the XPU, beside the remote access; else copy, then roofline
                t_exec = t_compute if coherent else t_local
                compute_plan[i] = (all_hosts[xi.name], t_exec * xi.speed, all_hosts[remote], nbytes, coherent)
        else:
            fp = plan(d["kind"], d["algorithm"], d["scope"], d["bytes"])
            flow_plans[i] = fp
            flow_hosts[i] = ([all_hosts[h] for h in fp.src], [all_hosts[h] for h in fp.dst])

    started = [0] * len(names)
    completed = [0] * len(names)
    running = [False] * len(names)
    result = RunResult(iterations, coherent, 0.0, [0.0] * iterations, [], graph=dict(workload.graph), placement=placed)
    compute_iv, comm_iv, stall_iv = result.compute, result.comm, result.stall
    flows_rec = result.flows
    trace = result.trace
    owner: dict[Any, tuple[int, _Exec, int]] = {}
    pending_set = sg.ActivitySet()
    Comm, this_actor, Engine = sg.Comm, sg.this_actor, sg.Engine
    counter = [0]

    def ready(v: int) -> bool:
        k = started[v]
        if k >= iterations or running[v]:
            return False
        for u, skip in preds[v]:
            if skip:
                if k and completed[u] < k:
                    return False
            elif completed[u] <= k:
                return False
        return True

    def add(act: Any, tag: int, ex: _Exec, f: int) -> None:
        owner[act] = (tag, ex, f)
        pending_set.push(act)

    def start_exec(host: Any, amount: float, ex: _Exec, tag: int) -> None:
        act = this_actor.exec_init(amount)
        act.host = host
        act.start()
        add(act, tag, ex, 0)

    def start_flow(src: Any, dst: Any, size: int, ex: _Exec, tag: int, f: int) -> None:
        add(Comm.sendto_async(src, dst, size), tag, ex, f)

    def launch(v: int, now: float) -> None:
        k = started[v]
        started[v] = k + 1
        running[v] = True
        cp = compute_plan[v]
        if cp is not None:
            host, amount, remote, nbytes, concurrent = cp
            counter[0] += 1 if remote is None else 2
            if remote is None:
                start_exec(host, amount, _Exec(v, k, now, 1), _EXEC)
            elif concurrent:
                ex = _Exec(v, k, now, 2)
                start_exec(host, amount, ex, _PART)
                start_flow(remote, host, nbytes, ex, _PART, -1)
            else:
                start_flow(remote, host, nbytes, _Exec(v, k, now, 1), _COPY, -1)
            return
        fp = flow_plans[v]
        src, dst = flow_hosts[v]
        counter[0] += len(fp)
        ex = _Exec(v, k, now, len(fp), list(fp.waits))
        for f, w in enumerate(ex.waits):
            if w == 0:
                start_flow(src[f], dst[f], fp.size[f], ex, _FLOW, f)
        if len(fp) == 0:
            finish(ex, now)

    per_iteration = [0] * iterations
    bar = progress_bar(iterations, "simulating", "iteration", show=True, leave=False) if progress else None

    def finish(ex: _Exec, now: float) -> None:
        v = ex.v
        running[v] = False
        completed[v] += 1
        per_iteration[ex.k] += 1
        if bar is not None and per_iteration[ex.k] == len(names):
            bar.update(1)
            bar.set_postfix(simulated=f"{now:.4g} s")
        d = data[v]
        name = names[v]
        if d["type"] == "compute":
            host = d["location"]
            trace.append((name, ex.k, host, "compute", ex.start, now, d["mem_bytes"], d["flops"]))
            cp = compute_plan[v]
            if cp[2] is None:
                compute_iv.setdefault(host, []).append((ex.start, now))
            elif cp[4]:  # coherent: compute ran from start to ex.mid, memory access to its own end
                compute_iv.setdefault(host, []).append((ex.start, ex.mid))
                if now > ex.mid:
                    stall_iv.setdefault(host, []).append((ex.mid, now))
            else:  # non-coherent: copy until ex.mid, then compute
                stall_iv.setdefault(host, []).append((ex.start, ex.mid))
                compute_iv.setdefault(host, []).append((ex.mid, now))
        else:
            trace.append((name, ex.k, "collective", d["kind"], ex.start, now, d["bytes"], 0.0))
            for r in d["scope"]:
                comm_iv.setdefault(r, []).append((ex.start, now))
        if now > result.iteration_end[ex.k]:
            result.iteration_end[ex.k] = now
        for w in succs[v]:
            if ready(w):
                launch(w, now)
        if ready(v):
            launch(v, now)

    def controller() -> None:
        # start vertices, and any vertex whose only dependencies skip the first iteration
        for v in range(len(names)):
            if ready(v):
                launch(v, 0.0)
        # the hot loop: one iteration per completed SimGrid activity; collective flows are
        # handled inline (no clock read, no helper call) unless they finish their vertex
        wait_any, empty, push, pop = pending_set.wait_any, pending_set.empty, pending_set.push, owner.pop
        sendto = Comm.sendto_async
        while not empty():
            act = wait_any()
            tag, ex, f = pop(act)
            if tag == _FLOW:
                fp = flow_plans[ex.v]
                if record_flows:
                    flows_rec.append((fp.src[f], fp.dst[f], fp.size[f], act.start_time, Engine.clock))
                waits = ex.waits
                src, dst = flow_hosts[ex.v]
                for g in fp.releases[f]:
                    waits[g] -= 1
                    if not waits[g]:
                        c = sendto(src[g], dst[g], fp.size[g])
                        owner[c] = (_FLOW, ex, g)
                        push(c)
                ex.pending -= 1
                if not ex.pending:
                    finish(ex, Engine.clock)
                continue
            now = Engine.clock
            if tag == _EXEC:
                finish(ex, now)
            elif tag == _COPY:
                host, amount, remote, nbytes, _ = compute_plan[ex.v]
                if record_flows:
                    flows_rec.append((remote.name, host.name, nbytes, ex.start, now))
                ex.mid = now
                start_exec(host, amount, ex, _EXEC)
            else:  # _PART of a coherent remote operator
                if f == -1:
                    if record_flows:
                        host, _, remote, nbytes, _ = compute_plan[ex.v]
                        flows_rec.append((remote.name, host.name, nbytes, ex.start, now))
                else:
                    ex.mid = now
                ex.pending -= 1
                if ex.pending == 0:
                    finish(ex, now)

    controller_host = all_hosts[sorted(xpus)[0]]
    sg.Actor.create("hcsim-engine", controller_host, controller)
    t0 = time.perf_counter()
    engine.run()
    result.wall_seconds = time.perf_counter() - t0
    if bar is not None:
        bar.close()

    missing = [v for v in range(len(names)) if completed[v] < iterations]
    if missing:
        raise HcsimError(_deadlock_message(names, preds, started, completed, missing, iterations))
    result.makespan = max(result.iteration_end) if iterations else 0.0
    result.activities = counter[0]
    if record_flows:
        pairs = sorted({(s, d) for s, d, *_ in result.flows})
        for s, d in pairs:
            links, _ = all_hosts[s].route_to(all_hosts[d])
            result.routes[(s, d)] = [link.name for link in links]
            for link in links:
                result.link_bandwidth[link.name] = link.bandwidth
    del engine
    return result


def _deadlock_message(
    names: list[str],
    preds: list[list[tuple[int, bool]]],
    started: list[int],
    completed: list[int],
    missing: list[int],
    iterations: int,
) -> str:
    parts = []
    for v in missing[:4]:
        k = started[v]
        unmet = []
        for u, skip in preds[v]:
            need = k if skip else k + 1
            if (k or not skip) and completed[u] < need:
                unmet.append(f"'{names[u]}'" + (" (previous iteration)" if skip else ""))
        parts.append(f"'{names[v]}' (iteration {k + 1}) waits for {', '.join(unmet) or 'nothing'}")
    more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
    return (
        f"deadlock: no activity left but {len(missing)} vertices ran fewer than {iterations} iterations: "
        f"{'; '.join(parts)}{more} (a cycle needs a skip_first_iteration edge)"
    )


def _xpus_of(path: str) -> list[str]:
    engine = load_platform(path)
    hosts = [h for h in engine.all_hosts if h.get_property("kind") == "xpu"]
    order = sorted(hosts, key=lambda h: (float(h.get_property("rank") or 0), h.name))
    names = [h.name for h in order]
    del engine
    return names


def platform_xpus(platform: str | os.PathLike[str]) -> list[str]:
    """XPU names of a platform file, in rank order."""
    path = os.fspath(platform)
    if not os.path.isfile(path):
        raise HcsimError(f"platform file '{path}' does not exist (valid: an XML file from 'hcsim platform build')")
    return run_isolated(_xpus_of, path)


def simulate(
    platform: str | os.PathLike[str],
    workload: Workload,
    iterations: int = 1,
    *,
    coherent: bool = True,
    placement: Placement = fill_local_first,
    record_flows: bool = True,
    progress: bool | None = None,
) -> RunResult:
    """Run ``iterations`` of ``workload`` on a compiled platform; return the raw result.

    ``coherent`` chooses the memory semantics of remote data (paper Fig. 3 b/c);
    ``record_flows`` keeps every flow for link statistics (off for the fastest runs);
    ``progress`` shows a bar of iterations done (default: when stderr is a terminal).
    """
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise HcsimError(f"iterations {iterations!r} is invalid (valid: an integer >= 1)")
    path = os.fspath(platform)
    if not os.path.isfile(path):
        raise HcsimError(f"platform file '{path}' does not exist (valid: an XML file from 'hcsim platform build')")
    workload.validate()
    show = sys.stderr.isatty() if progress is None else progress
    return run_isolated(_run, path, workload, iterations, coherent, placement, record_flows, show)
