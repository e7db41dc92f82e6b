"""Benchmark: jobs per second through the batching front end on SimGrid.

    python experiments/bench_queue.py [--jobs 1000000] [--rho 0.7]

One V100 server (the paper's fit), Poisson arrivals; the goal is 1e6 jobs at rho = 0.7
in <= 10 s. Also prints the simulated E[W] next to the exact value.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from hcsim.analysis.queueing import V100_RESNET50, exact_infinite, fit_linear
from hcsim.frontends.serving.batching import arrival_times, confidence_interval, linear_time, serve
from hcsim.platform import compile_platform, star


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--rho", type=float, default=0.7)
    args = parser.parse_args()
    fit = fit_linear(V100_RESNET50)
    lam = args.rho / fit.alpha
    topo = star(1, "V100")
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/p.xml"
        compile_platform(topo, path)
        t0 = time.perf_counter()
        arrivals = arrival_times("poisson", lam, args.jobs, 1)
        r = serve(path, topo.xpus(), arrivals, linear_time(fit.alpha, fit.tau0))
        wall = time.perf_counter() - t0
    mean, half = confidence_interval(r.latency)
    exact = exact_infinite(lam, fit.alpha, fit.tau0).mean_latency
    print(
        f"{args.jobs} jobs at rho {args.rho}: {wall:.2f} s wall, {args.jobs / wall:,.0f} jobs/s, "
        f"{len(r.batch_size)} batches on SimGrid"
    )
    print(f"E[W] simulated {mean * 1e3:.5f} +- {half * 1e3:.5f} ms, exact {exact * 1e3:.5f} ms")


if __name__ == "__main__":
    main()
