"""Benchmark: the engine against a bare SimGrid loop on the same ring allreduce.

The bare loop is the least a Python program can do with SimGrid: one actor, the same
flows with the same step dependencies, ``Comm.sendto_async`` and ``ActivitySet.wait_any``,
no graph, no trace. The engine runs the allreduce workload graph with full tracing off
(``record_flows=False``) and on. Each runs in its own process and both are timed
around SimGrid's run loop only (platform loading excluded on both sides); the script
prints activities per second and the ratio (goal: engine >= 0.8x the bare loop), and
checks that both simulated the same flows and the same time.

    python experiments/bench_engine.py [--xpus 64] [--bytes 64MiB] [--iterations 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from hcsim.collectives import plan
from hcsim.engine import simulate
from hcsim.platform import compile_platform, cxl_system, ring
from hcsim.simgrid_runtime import import_simgrid, load_platform, run_isolated
from hcsim.units import parse_bytes
from hcsim.workload import allreduce_benchmark


def bare_loop(platform: str, ranks: list[str], nbytes: float, iterations: int) -> tuple[int, float, float]:
    """(activities, wall seconds, simulated seconds) of a hand-written ring allreduce."""
    sg = import_simgrid()
    engine = load_platform(platform, one_actor=True)  # as the engine does
    fp = plan("allreduce", "ring", ranks, nbytes)
    hosts = {h: sg.Host.by_name(h) for h in ranks}
    src = [hosts[h] for h in fp.src]
    dst = [hosts[h] for h in fp.dst]
    count = [0]

    def actor() -> None:
        pending = sg.ActivitySet()
        for _ in range(iterations):
            waits = list(fp.waits)
            index = {}
            for f, w in enumerate(waits):
                if w == 0:
                    c = sg.Comm.sendto_async(src[f], dst[f], fp.size[f])
                    index[c] = f
                    pending.push(c)
            while not pending.empty():
                c = pending.wait_any()
                count[0] += 1
                for g in fp.releases[index.pop(c)]:
                    waits[g] -= 1
                    if waits[g] == 0:
                        n = sg.Comm.sendto_async(src[g], dst[g], fp.size[g])
                        index[n] = g
                        pending.push(n)

    sg.Actor.create("bare", hosts[ranks[0]], actor)
    t0 = time.perf_counter()
    engine.run()
    return count[0], time.perf_counter() - t0, sg.Engine.clock


def engine_run(
    platform: str, ranks: list[str], nbytes: float, iterations: int, record: bool
) -> tuple[int, float, float]:
    r = simulate(platform, allreduce_benchmark(ranks, nbytes), iterations, record_flows=record)
    return r.activities, r.wall_seconds, r.makespan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", choices=("ring", "cxl"), default="ring")
    parser.add_argument("--xpus", type=int, default=64)
    parser.add_argument("--bytes", default="64MiB")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved repetitions (medians are printed)")
    args = parser.parse_args()
    nbytes = parse_bytes(args.bytes)
    topo = ring(args.xpus, bandwidth="100GBps", latency="1us") if args.system == "ring" else cxl_system(args.xpus)
    ranks = topo.xpus()
    with tempfile.TemporaryDirectory() as tmp:
        platform = os.path.join(tmp, "p.xml")
        compile_platform(topo, platform)
        walls: dict[str, list[float]] = {"bare": [], "engine": [], "trace": []}
        for _ in range(args.rounds):  # interleaved, so slow spells of the machine hit all three alike
            b_count, b_wall, b_sim = run_isolated(bare_loop, platform, ranks, nbytes, args.iterations)
            e_count, e_wall, e_sim = engine_run(platform, ranks, nbytes, args.iterations, record=False)
            t_count, t_wall, t_sim = engine_run(platform, ranks, nbytes, args.iterations, record=True)
            assert b_count == e_count == t_count, (b_count, e_count, t_count)
            assert abs(b_sim - e_sim) <= 1e-9 * b_sim and abs(b_sim - t_sim) <= 1e-9 * b_sim, (b_sim, e_sim, t_sim)
            walls["bare"].append(b_wall)
            walls["engine"].append(e_wall)
            walls["trace"].append(t_wall)
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(
        f"ring allreduce of {args.bytes} over {len(ranks)} XPUs ({args.system}), {args.iterations} iterations: "
        f"{b_count} flows, simulated {b_sim:.6g} s by all; medians of {args.rounds} interleaved rounds"
    )
    print(f"bare SimGrid loop   {b_count / med['bare']:10.0f} activities/s  ({med['bare']:.2f} s)")
    print(f"engine              {b_count / med['engine']:10.0f} activities/s  ({med['engine']:.2f} s)")
    print(f"engine + flow trace {b_count / med['trace']:10.0f} activities/s  ({med['trace']:.2f} s)")
    per_round = ", ".join(f"{b / e:.2f}" for b, e in zip(walls["bare"], walls["engine"], strict=True))
    print(
        f"ratio engine / bare {med['bare'] / med['engine']:.2f}x (per round {per_round}; goal >= 0.8x); "
        f"with flow trace {med['bare'] / med['trace']:.2f}x"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
