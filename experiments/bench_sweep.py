"""Benchmark: sweep speed-up with 2 workers against 1, on points of equal cost.

Each point is a real simulation of equal cost: a 64 MiB ring allreduce on the 64-XPU
CXL system, at one of ``--points`` CXL bandwidths (the same flows every time; only
the numbers change). The sweep runs with 1 and with 2 workers, on the local process
pool and on an already running Dask LocalCluster of 1 or 2 workers (its start-up is
measured and printed apart). Three repeats in alternating order after an untimed
warm-up point; prints median wall times and speed-ups (goal: >= 1.8x on 2 cores).

    python experiments/bench_sweep.py [--points 16]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from hcsim.sweep import SweepSpec, run_sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=16)
    parser.add_argument("--xpus", type=int, default=64)
    args = parser.parse_args()
    bandwidths = [f"{64 + 16 * i}GBps" for i in range(args.points)]
    spec = SweepSpec(
        "hcsim.sweep.experiments:allreduce",
        fixed={"system": "cxl", "xpus": args.xpus, "nbytes": "64MiB", "iterations": 2},
        grid={"cxl_bandwidth": bandwidths},
    )
    from distributed import LocalCluster

    walls: dict[tuple[str, int], list[float]] = {}
    startup: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        warm = SweepSpec(spec.function, fixed=spec.fixed, grid={"cxl_bandwidth": ["1TBps"]})
        run_sweep(warm, out=os.path.join(tmp, "warm.jsonl"), jobs=1, progress=False)  # caches, not timed

        def timed(executor: str, jobs: int, scheduler: str | None, tag: str) -> None:
            out = os.path.join(tmp, f"{executor}-{jobs}-{tag}.jsonl")
            t0 = time.perf_counter()
            report = run_sweep(spec, out=out, executor=executor, jobs=jobs, scheduler=scheduler, progress=False)
            wall = time.perf_counter() - t0
            assert report.ok == args.points, report
            walls.setdefault((executor, jobs), []).append(wall)
            print(f"{executor:5} -j {jobs}: {args.points} points in {wall:6.2f} s", flush=True)

        for repeat, order in enumerate(((1, 2), (2, 1), (1, 2))):  # three times, alternating the order
            for jobs in order:
                timed("local", jobs, None, str(repeat))
            for jobs in order:  # a running cluster, as a user's would be; only it is alive while timed
                t0 = time.perf_counter()
                with LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None) as c:
                    startup[jobs] = time.perf_counter() - t0
                    timed("dask", jobs, c.scheduler_address, str(repeat))
    print(
        f"Dask LocalCluster start-up (not in the times above): {startup[1]:.2f} s (1 worker), "
        f"{startup[2]:.2f} s (2 workers)"
    )
    for executor in ("local", "dask"):
        one, two = statistics.median(walls[(executor, 1)]), statistics.median(walls[(executor, 2)])
        ratios = sorted(a / b for a, b in zip(walls[(executor, 1)], walls[(executor, 2)], strict=True))
        print(
            f"{executor}: median {one:.2f} s (1 worker) vs {two:.2f} s (2 workers): speed-up {one / two:.2f}x "
            f"(per repeat {', '.join(f'{r:.2f}' for r in ratios)}; goal >= 1.8x)"
        )


if __name__ == "__main__":
    main()
