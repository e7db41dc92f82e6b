"""Benchmark: SimGrid's Task plugin (C++ dependency resolution) against the engine's controller.

The engine runs every flow of a collective from one Python actor on raw contexts: it
starts the flows whose dependencies are met, waits for the next completion with
``ActivitySet.wait_any`` and starts what that completion releases. SimGrid's Task plugin
(``simgrid.CommTask`` / ``ExecTask``) resolves the same dependencies in C++, in maestro:
each flow of the plan is a ``CommTask`` (``CommTask.init(name, bytes, src, dst)``), each
dependency an ``add_successor``, the flows with nothing to wait for get
``enqueue_firings(1)``, and ``Engine.run()`` does the rest without a Python actor.

Both run the same :class:`~hcsim.collectives.plans.FlowPlan` on the same compiled
platform, each in its own process, timed around ``Engine.run()`` only (platform loading
and task creation excluded; task creation is printed apart). The Task route runs twice:
with Python callbacks recording every flow's start and end (what the engine needs to
know when a vertex ends and to write a trace), and with none (the C++ floor). The script
prints flows per second and wall time (median and range over ``--rounds``), and whether
the makespan and every flow's start and end are bit-identical to the controller's.

    python experiments/bench_tasks.py [--rounds 3] [--ring 64,256,1024] [--alltoall 32,64] [--llama 8]

Workloads: a ring allreduce over N ranks of a ring platform (N flows per step),
the direct all-to-all over the first N ranks of the CXL system of max(64, N) XPUs
(N(N-1) flows in flight at once), and ``--llama N``: LLaMA2-13B data parallel, one iteration on the N-XPU CXL
system (compute vertices as ``ExecTask`` and remote-memory ``CommTask``, collectives as
their flows; the controller is the engine itself).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any

from hcsim.collectives import plan
from hcsim.engine import simulate
from hcsim.platform import compile_platform, cxl_system, ring
from hcsim.simgrid_runtime import import_simgrid, load_platform, run_isolated
from hcsim.workload import Workload
from hcsim.workload.llama2 import llama2_13b


def _workload(kind: str, algorithm: str, ranks: list[str], nbytes: float) -> Workload:
    w = Workload(name=f"{kind}-{algorithm}", ranks=list(ranks))
    w.add_comm("C", nbytes, kind, list(ranks), algorithm=algorithm, is_start=True)
    return w


def controller(
    platform: str, kind: str, algorithm: str, ranks: list[str], nbytes: float, tasks: bool = False
) -> dict[str, Any]:
    """The engine (one Python actor, ActivitySet.wait_any; ``tasks``: wide vertices on tasks); flows recorded."""
    r = simulate(platform, _workload(kind, algorithm, ranks, nbytes), 1, record_flows=True, progress=False, tasks=tasks)
    flows = sorted((s, d, st, en) for s, d, _, st, en in r.flows)
    return {"wall": r.wall_seconds, "flows": len(flows), "makespan": r.makespan, "times": flows}


def _tasks(platform: str, kind: str, algorithm: str, ranks: list[str], nbytes: float, record: bool) -> dict[str, Any]:
    sg = import_simgrid()
    engine = load_platform(platform, one_actor=True)
    t0 = time.perf_counter()
    fp = plan(kind, algorithm, ranks, nbytes)
    if fp.joins:
        raise SystemExit(f"{kind} {algorithm}: joins (0-byte entries) have no CommTask: a 0-byte Comm never completes")
    hosts = {h.name: h for h in engine.all_hosts}
    n = len(fp.size)
    tasks = [sg.CommTask.init(str(f), float(fp.size[f]), hosts[fp.src[f]], hosts[fp.dst[f]]) for f in range(n)]
    for f, released in enumerate(fp.releases):
        for g in released:
            tasks[f].add_successor(tasks[g])
    start, end = [0.0] * n, [0.0] * n
    if record:
        Engine = sg.Engine

        def started(t: Any) -> None:
            start[int(t.name)] = Engine.clock

        def ended(t: Any) -> None:
            end[int(t.name)] = Engine.clock

        sg.Task.on_start_cb(started)
        sg.Task.on_completion_cb(ended)
    for f in range(n):
        if fp.waits[f] == 0:
            tasks[f].enqueue_firings(1)
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    engine.run()
    wall = time.perf_counter() - t0
    times = sorted((fp.src[f], fp.dst[f], start[f], end[f]) for f in range(n)) if record else []
    return {"wall": wall, "setup": setup, "flows": n, "makespan": sg.Engine.clock, "times": times}


def tasks(platform: str, kind: str, algorithm: str, ranks: list[str], nbytes: float, record: bool) -> dict[str, Any]:
    return run_isolated(_tasks, platform, kind, algorithm, ranks, nbytes, record)


# ---------------------------------------------------------------------------------------------- LLaMA2-13B DP
def _llama_tasks(platform: str, xpus: list[str], record: bool) -> dict[str, Any]:
    """One LLaMA2-13B DP iteration as a Task graph, built from the engine's own plans (Execution)."""
    from hcsim.engine.driver import Driver
    from hcsim.engine.execution import EngineOptions, Execution
    from hcsim.engine.memory import fill_local_first

    sg = import_simgrid()
    engine = load_platform(platform, one_actor=True)
    all_hosts = {h.name: h for h in engine.all_hosts}
    t0 = time.perf_counter()
    options = EngineOptions(record_flows=False, record_trace=False)
    x = Execution(sg, llama2_13b(xpus), all_hosts, 1, True, fill_local_first, Driver(sg), options=options)
    first: list[list[Any]] = []  # per vertex: the tasks that start it
    last: list[list[Any]] = []  # per vertex: the tasks whose ends end it
    every: list[Any] = []
    for v in range(len(x.names)):
        cp = x.compute_plan[v]
        if cp is not None:
            exe = sg.ExecTask.init(f"e{v}", cp.amount, cp.host)
            every.append(exe)
            if cp.remote is None:
                first.append([exe])
                last.append([exe])
            elif cp.coherent:  # the exec and its remote access side by side
                acc = sg.CommTask.init(f"a{v}", float(cp.nbytes), cp.remote, cp.host)
                every.append(acc)
                first.append([exe, acc])
                last.append([exe, acc])
            else:  # the copy, then the exec
                copy = sg.CommTask.init(f"c{v}", float(cp.nbytes), cp.remote, cp.host)
                every.append(copy)
                copy.add_successor(exe)
                first.append([copy])
                last.append([exe])
            continue
        fp = x.flow_plans[v]
        src, dst = x.flow_hosts[v]
        ts = [sg.CommTask.init(f"f{v}.{f}", float(fp.size[f]), src[f], dst[f]) for f in range(len(fp.size))]
        every.extend(ts)
        for f, released in enumerate(fp.releases):
            for g in released:
                ts[f].add_successor(ts[g])
        first.append([ts[f] for f in range(len(ts)) if fp.waits[f] == 0])
        last.append([ts[f] for f in range(len(ts)) if not fp.releases[f]])
    for v, preds in enumerate(x.preds):
        for u, skip in preds:
            if not skip:  # one iteration: loop-carried edges do not apply
                for a in last[u]:
                    for b in first[v]:
                        a.add_successor(b)
    ends: list[float] = []
    if record:
        Engine = sg.Engine
        sg.Task.on_completion_cb(lambda t: ends.append(Engine.clock))
    for v in range(len(x.names)):
        if not any(not skip for _, skip in x.preds[v]):
            for t in first[v]:
                t.enqueue_firings(1)
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    engine.run()
    wall = time.perf_counter() - t0
    return {"wall": wall, "setup": setup, "flows": len(every), "makespan": sg.Engine.clock, "times": []}


def llama_controller(platform: str, xpus: list[str]) -> dict[str, Any]:
    r = simulate(platform, llama2_13b(xpus), 1, record_flows=False, progress=False)
    return {"wall": r.wall_seconds, "flows": r.activities, "makespan": r.makespan, "times": []}


# ---------------------------------------------------------------------------------------------- report
def _stats(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s [{min(values):.3f}-{max(values):.3f}]"


def _row(name: str, runs: list[dict[str, Any]], reference: dict[str, Any] | None) -> None:
    walls = [r["wall"] for r in runs]
    n = runs[0]["flows"]
    rate = n / statistics.median(walls)
    line = f"  {name:<22} {_stats(walls)}  {rate / 1e3:8.1f}k activities/s  makespan {runs[0]['makespan']!r}"
    if "setup" in runs[0]:
        line += f"  (task creation {statistics.median(r['setup'] for r in runs):.3f} s)"
    if reference is not None:
        same = runs[0]["makespan"] == reference["makespan"]
        gap = runs[0]["makespan"] / reference["makespan"] - 1
        line += f"  makespan {'bit-identical' if same else f'differs by {gap:.2e}'}"
        if runs[0]["times"] and reference["times"]:
            a, b = runs[0]["times"], reference["times"]
            diff = max(max(abs(p[2] - q[2]), abs(p[3] - q[3])) for p, q in zip(a, b, strict=True))
            line += f"; flows {'bit-identical' if a == b else f'differ by up to {diff:.2e} s'}"
    print(line, flush=True)


def _bench(label: str, rounds: int, jobs: list[tuple[str, Any]]) -> None:
    print(f"{label}", flush=True)
    reference = None
    for name, job in jobs:
        runs = [job() for _ in range(rounds)]
        _row(name, runs, reference)
        reference = reference or runs[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ring", default="64,256,1024", help="ring allreduce sizes (ranks = flows per step)")
    p.add_argument("--alltoall", default="32,64", help="direct all-to-all sizes (N(N-1) flows at once)")
    p.add_argument(
        "--controller-max", type=int, default=64, help="largest all-to-all run on the controller (128: ~5 min)"
    )
    p.add_argument("--llama", default="8", help="LLaMA2-13B DP on N CXL XPUs, one iteration ('' for none)")
    p.add_argument("--bytes", type=float, default=64 * 2**20)
    args = p.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (shared machine)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(s) for s in args.ring.split(",") if s]:
            topo = ring(n, bandwidth=100e9, latency=1e-6)
            path = os.path.join(tmp, f"ring{n}.xml")
            compile_platform(topo, path)
            ranks = topo.xpus()
            job = ("allreduce", "ring", ranks, args.bytes)
            _bench(
                f"ring allreduce, {n} ranks ({n} flows per step, {2 * (n - 1)} steps)",
                args.rounds,
                [
                    ("controller", lambda job=job, path=path: controller(path, *job)),
                    ("tasks, flows recorded", lambda job=job, path=path: tasks(path, *job, True)),
                    ("tasks, no callback", lambda job=job, path=path: tasks(path, *job, False)),
                ],
            )
        sizes = [int(s) for s in args.alltoall.split(",") if s]
        if sizes:
            topo = cxl_system(max(64, *sizes))
            path = os.path.join(tmp, "cxl-alltoall.xml")
            compile_platform(topo, path)
            for n in sizes:
                job = ("alltoall", "direct", topo.xpus()[:n], args.bytes)
                rows = [("controller", lambda job=job: controller(path, *job))] if n <= args.controller_max else []
                _bench(
                    f"direct all-to-all, {n} ranks of the CXL system ({n * (n - 1)} flows at once)",
                    args.rounds,
                    [
                        *rows,
                        ("engine, tasks=True", lambda job=job: controller(path, *job, tasks=True)),
                        ("tasks, flows recorded", lambda job=job: tasks(path, *job, True)),
                        ("tasks, no callback", lambda job=job: tasks(path, *job, False)),
                    ],
                )
        for n in [int(s) for s in args.llama.split(",") if s]:
            topo = cxl_system(n)
            path = os.path.join(tmp, f"cxl{n}.xml")
            compile_platform(topo, path)
            xpus = topo.xpus()
            _bench(
                f"LLaMA2-13B DP, one iteration, {n} CXL XPUs",
                args.rounds,
                [
                    ("controller", lambda path=path, xpus=xpus: llama_controller(path, xpus)),
                    ("tasks, ends recorded", lambda path=path, xpus=xpus: run_isolated(_llama_tasks, path, xpus, True)),
                    ("tasks, no callback", lambda path=path, xpus=xpus: run_isolated(_llama_tasks, path, xpus, False)),
                ],
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
