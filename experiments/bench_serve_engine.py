"""Benchmark: the continuous-batching command of issue 26, wall and CPU seconds.

    python experiments/bench_serve_engine.py [--requests 2000 10000] [--all-options]

Runs ``hcsim serve --model llama3-8b --system cxl --xpus 8 --tp 8 --scheduler continuous
--kv-cache hbm,cxl --rate 20/s --prompt-tokens 512 --output-tokens 128 --json`` for each
``--requests`` count (goals: 2,000 in <= 60 s, 10,000 in <= 10 s), in a fresh process, and
prints the wall time, the CPU time of the process and its children (the SimGrid runs are
forked), the machine's load average, and the run's SimGrid runs and iterations.
``--all-options``: also the engine's other options at once (docs/serving.md, "Routers,
disaggregation, swap, three tiers, prefix caching"), 500 requests. ``--repeat N`` runs each
command N times and prints the median wall and CPU; ``--exact-iterations`` passes that flag
(every block and ring flow simulated: the path before layer repeat and memoized rings).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

BASE = ["serve", "--model", "llama3-8b", "--system", "cxl", "--tp", "8", "--scheduler", "continuous",
        "--rate", "20/s", "--prompt-tokens", "512", "--output-tokens", "128", "--json"]  # fmt: skip
ISSUE = [*BASE, "--xpus", "8", "--kv-cache", "hbm,cxl"]
ALL = [*BASE, "--xpus", "16", "--servers-per-rack", "1", "--mix", "H100+A100", "--disaggregate",
       "prefill=8,decode=8", "--router", "least_tokens", "--kv-cache", "hbm,cxl,host", "--preemption", "swap",
       "--shared-prefix", "256:4"]  # fmt: skip


def once(args: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "hcsim.cli", *args], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    s = json.loads(out.stdout)
    load = os.getloadavg()[0]
    print(f"{s['requests']:>6} requests: {wall:6.1f} s wall, {cpu:6.1f} s CPU, load {load:.1f}; "
          f"{s['simulations']} SimGrid runs, {s['iterations']:,} iterations; ttft p50 {s['ttft_p50_s'] * 1e3:.3g} ms, "
          f"tpot p50 {s['tpot_p50_s'] * 1e3:.3g} ms, {s['throughput_tokens_per_s']:,.0f} tokens/s")  # fmt: skip
    return wall, cpu


def median_of(args: list[str], repeat: int) -> None:
    times = [once(args) for _ in range(repeat)]
    if repeat > 1:
        walls, cpus = sorted(t[0] for t in times), sorted(t[1] for t in times)
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"  median of {repeat}: {walls[repeat // 2]:.1f} s wall, {cpus[repeat // 2]:.1f} s CPU "
              f"(load averages now {load})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--all-options", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each command; the median is printed")
    parser.add_argument("--exact-iterations", action="store_true", help="pass --exact-iterations")
    args = parser.parse_args()
    extra = ["--exact-iterations"] if args.exact_iterations else []
    for n in args.requests:
        median_of([*ISSUE, "--requests", str(n), *extra], args.repeat)
    if args.all_options:
        median_of([*ALL, "--requests", "500", *extra], args.repeat)


if __name__ == "__main__":
    main()
