"""Benchmark: every registered allreduce algorithm on the CXL system (default 1024 XPUs, 256 MiB).

A row per algorithm (``hcsim.collectives.names("allreduce")``: new algorithms get a
row by registering): the exact engine's wall time and SimGrid activities, and the fast
path's wall time, activities and difference from exact: fold + memoize for the ring
algorithms (``simulate_system(..., fast=True)``), memoized rounds for every other one
(``memoize=True``, :mod:`hcsim.fast.rounds`, no fold). The platform is
compiled once; each run is its own process, timed around the whole run (fork, load,
simulate, collect) and SimGrid's loop.

Exact runs at 1024 XPUs can take minutes (a ring allreduce is 2 x 1023 x 1024 flows).
The script runs each algorithm at the ``--scales`` below ``--xpus`` first and skips
the exact run at a scale where the last one, extrapolated by the square of the scale
(flows grow as N^2), would exceed ``--budget`` seconds, printing what it measured and
the estimate instead (and skips it at the larger scales after a failed run, which is
printed as a row).

    python experiments/bench_collectives.py                       # 1024 XPUs, 256 MiB
    python experiments/bench_collectives.py --xpus 256 --scales 64
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xpus", type=int, default=1024, help="scale of the table (default 1024)")
    parser.add_argument("--scales", default="64,256", help="smaller scales run first, for the estimate")
    parser.add_argument("--bytes", default="256MiB", help="allreduce size per rank (default 256MiB)")
    parser.add_argument("--budget", type=float, default=180.0, help="skip an exact run estimated above this (s)")
    args = parser.parse_args()

    from hcsim.collectives import algorithm, names
    from hcsim.errors import HcsimError
    from hcsim.platform import compile_platform, cxl_system
    from hcsim.sweep.collective_bench import measure
    from hcsim.sweep.experiments import collective
    from hcsim.units import parse_bytes

    nbytes = int(parse_bytes(args.bytes))
    scales = sorted({int(s) for s in args.scales.split(",") if s and int(s) < args.xpus} | {args.xpus})
    rows = []
    with tempfile.TemporaryDirectory(prefix="hcsim-bench-") as tmp:
        platforms = {}
        for n in scales:
            t0 = time.perf_counter()
            topo = cxl_system(n)
            platforms[n] = (os.path.join(tmp, f"cxl{n}.xml"), topo.xpus())
            compile_platform(topo, platforms[n][0])
            print(f"# compiled the {n}-XPU CXL system in {time.perf_counter() - t0:.1f} s", flush=True)
        for name in names("allreduce"):
            alg = algorithm("allreduce", name)
            last = None  # (xpus, wall) of the last exact run
            for n in scales:
                row = {"algorithm": name, "xpus": n}
                estimate = None if last is None else last[1] * (n / last[0]) ** 2
                if last is not None and last[1] == float("inf"):
                    row.update(exact_wall_s=None, exact_note=f"skipped: failed at {last[0]} XPUs")
                elif estimate is not None and estimate > args.budget:
                    row.update(exact_wall_s=None, exact_note=f"skipped: estimated {estimate:.0f} s")
                else:
                    path, ranks = platforms[n]
                    t0 = time.perf_counter()
                    try:
                        r = measure(path, ranks, "allreduce", name, nbytes, coherent=True)
                    except HcsimError as e:  # a failed run is a row, not the end of the table
                        last = (n, float("inf"))
                        row.update(exact_wall_s=None, exact_note=f"failed: {str(e)[:80]}")
                    else:
                        wall = time.perf_counter() - t0
                        last = (n, wall)
                        row.update(exact_wall_s=wall, exact_loop_s=r["wall_s"], exact_activities=r["activities"])
                        row["time_us"] = r["time_us"]
                t0 = time.perf_counter()
                try:
                    if alg.ring:
                        f = collective("cxl", n, "allreduce", name, nbytes, fast=True)
                    else:  # memoized rounds (hcsim/fast/rounds.py): no fold for these
                        f = _memoized(platforms[n][0], platforms[n][1], name, nbytes)
                except HcsimError as e:
                    row["fast_note"] = f"failed: {str(e)[:80]}"
                    f = None
                if f is not None:
                    row.update(fast_wall_s=time.perf_counter() - t0, fast_activities=f["activities"])
                    row["fast_memoized"] = f.get("memoized_flows")
                    if "time_us" in row:
                        row["fast_vs_exact"] = f["time_us"] / row["time_us"] - 1
                    else:
                        row["time_us"] = f["time_us"]
                rows.append(row)
                print(_line(row), flush=True)
    print()
    print(f"| algorithm | XPUs | allreduce {args.bytes} (us) | exact wall (s) | exact activities | "
          "fast wall (s) | fast activities | fast vs exact |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(_md(row))


def _memoized(path: str, ranks: list[str], name: str, nbytes: int) -> dict:
    """One memoized allreduce (``memoize=True``, no fold): simulated time, activities and memoized flows."""
    from hcsim.fast import simulate
    from hcsim.workload import Workload

    w = Workload(name=f"allreduce-{name}", ranks=list(ranks))
    w.graph["samples_per_iteration"] = w.graph["batches_per_iteration"] = 1
    w.add_comm("allreduce", nbytes, "allreduce", list(ranks), algorithm=name, is_start=True)
    r = simulate(path, w, 1, coherent=True, record_flows=False, progress=False, memoize=True)
    return {"time_us": r.makespan * 1e6, "activities": r.activities, "memoized_flows": r.memoized_flows}


def _fmt(x: object, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def _line(row: dict) -> str:
    parts = [f"{row['algorithm']:>16} {row['xpus']:>5} XPUs: {_fmt(row.get('time_us'), '.1f')} us simulated"]
    if row.get("exact_wall_s") is not None:
        parts.append(f"exact {row['exact_wall_s']:.2f} s wall, {row['exact_activities']} activities")
    else:
        parts.append(f"exact {row['exact_note']}")
    if "fast_wall_s" in row:
        parts.append(f"fast {row['fast_wall_s']:.2f} s wall, {row['fast_activities']} activities")
        if row.get("fast_memoized") is not None:
            parts.append(f"{row['fast_memoized']} flows memoized")
    if "fast_vs_exact" in row:
        parts.append(f"fast vs exact {row['fast_vs_exact']:+.2e}")
    return "; ".join(parts)


def _md(row: dict) -> str:
    exact = _fmt(row.get("exact_wall_s"), ".2f") if row.get("exact_wall_s") is not None else row.get("exact_note")
    cells = [
        row["algorithm"],
        str(row["xpus"]),
        _fmt(row.get("time_us"), ".1f"),
        exact,
        _fmt(row.get("exact_activities"), ","),
        _fmt(row.get("fast_wall_s"), ".2f") if "fast_wall_s" in row else row.get("fast_note", "no fast path"),
        _fmt(row.get("fast_activities"), ","),
        _fmt(row.get("fast_vs_exact"), "+.1e"),
    ]
    return "| " + " | ".join(cells) + " |"


if __name__ == "__main__":
    main()
