"""Benchmark: iteration memoization (``repeat=True``) against simulating every iteration.

For each configuration, LLaMA2-13B data parallel runs K iterations twice in fresh
processes, with ``repeat`` off and on (the other switches as given), and the script
prints the wall time of each (whole job: build, fold, compile, run), the activities
SimGrid ran and those accounted for by extrapolation, and the largest relative
difference of the per-iteration times and of the makespan between the two.

    python experiments/bench_repeat.py [--iterations 10] [--configs cxl:8:exact,noncoherent:8:exact,cxl:1024:fast]

A config is ``system:xpus:mode``, mode ``exact`` (no other shortcut) or ``fast`` (fold
and memoize on both sides).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def one(system: str, xpus: int, mode: str, iterations: int, repeat: bool) -> dict:
    from hcsim.fast import simulate_system
    from hcsim.platform import cxl_system, noncoherent_system
    from hcsim.workload.llama2 import llama2_13b

    t0 = time.perf_counter()
    topo = (cxl_system if system == "cxl" else noncoherent_system)(xpus)
    r = simulate_system(
        topo, llama2_13b, iterations, coherent=system == "cxl", fast=mode == "fast", repeat=repeat, record_flows=False
    )
    return {
        "wall_s": time.perf_counter() - t0,
        "activities": r.activities,
        "memoized_activities": r.memoized_activities,
        "iteration_end": r.iteration_end,
        "repeat": r.repeat,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--configs", default="cxl:8:exact,noncoherent:8:exact,cxl:64:exact,cxl:1024:fast")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        system, xpus, mode, iterations, repeat = args.one.split(":")
        print(json.dumps(one(system, int(xpus), mode, int(iterations), repeat == "1")))
        return 0
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (shared machine)", flush=True)
    for config in args.configs.split(","):
        runs = {}
        for repeat in (False, True):
            spec = f"{config}:{args.iterations}:{int(repeat)}"
            out = subprocess.run([sys.executable, __file__, "--one", spec], capture_output=True, text=True, check=True)
            runs[repeat] = json.loads(out.stdout.strip().splitlines()[-1])
        full, memo = runs[False], runs[True]
        ends_f, ends_m = full["iteration_end"], memo["iteration_end"]
        per_f = [b - a for a, b in zip([0.0, *ends_f], ends_f, strict=False)]
        per_m = [b - a for a, b in zip([0.0, *ends_m], ends_m, strict=False)]
        per = max(abs(b / a - 1) for a, b in zip(per_f, per_m, strict=True))
        span = abs(ends_m[-1] / ends_f[-1] - 1)
        print(
            f"{config:<20} {args.iterations} iterations: "
            f"full {full['wall_s']:7.2f} s ({full['activities']:,} activities)"
            f"  repeat {memo['wall_s']:7.2f} s ({memo['activities']:,} + {memo['memoized_activities']:,} memoized)"
            f"  {full['wall_s'] / memo['wall_s']:.1f}x; per-iteration times {per:.1e}, makespan {span:.1e} apart",
            flush=True,
        )
        print(f"{'':<20} {memo['repeat']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
