"""Benchmark: one LLaMA2-13B training iteration at 64..4096 XPUs, fast and exact.

For each system (CXL, non-coherent), scale and mode, a fresh process builds the paper
system, (fast: folds it to its representative servers,) compiles it, and simulates
one iteration. Each row reports:
* the wall time of the whole job (build, fold, compile, SimGrid load and run);
* the SimGrid activities simulated, and the ring flows that memoization accounted
  for without simulating them one by one;
* the process's peak RSS;
* the iteration time and batch/s.

Goals (issue 4): 1024-XPU CXL in <= 7.5 s (100x HCSim's 756.6 s), 4096 in <= 30 s,
peak RSS <= 4 GB; issue 17: LLaMA2-13B data-parallel on the 1024-XPU fat tree of the
generic builder (``fat_tree(16)``, folded by symmetry, data kept local) in <= 10 s.
The exact path runs where it is feasible (``--exact-max``). The
fast/exact iteration-time ratio is printed wherever both ran (the goal is within 1%).
Writes ``results/bench_scale.csv``.

    python experiments/bench_scale.py                       # fast 64..4096, exact 64 and 256
    python experiments/bench_scale.py --exact-max 64 --nc-max 256
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def one(system: str, xpus: int, mix: str, fast: bool) -> dict:
    """Run in a child process: one iteration, measured."""
    import resource

    from hcsim.fast import simulate_system
    from hcsim.platform import cxl_system, noncoherent_system
    from hcsim.workload.llama2 import llama2_13b

    t0 = time.perf_counter()
    extra = {}
    if system == "fattree":  # the generic builder (folded by symmetry); it has no host memory, so data stays local
        from hcsim.engine.memory import all_local
        from hcsim.platform.builders import fat_tree

        topo, extra = fat_tree(fat_tree_arity(xpus), mix), {"placement": all_local}
    else:
        topo = (cxl_system if system == "cxl" else noncoherent_system)(xpus, mix=mix)
    r = simulate_system(
        topo, lambda ranks, group: llama2_13b(ranks, group=group), 1, coherent=system == "cxl", fast=fast,
        record_flows=False, **extra,
    )  # fmt: skip
    ranks = r.fold.ranks if r.fold is not None else topo.xpus()
    wall = time.perf_counter() - t0
    rss = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    )
    return {
        "system": system,
        "xpus": xpus,
        "mix": mix,
        "mode": "fast" if fast else "exact",
        "simulated_xpus": len(ranks),
        "wall_s": round(wall, 3),
        "simgrid_loop_s": round(r.wall_seconds, 3),
        "activities": r.activities,
        "memoized_flows": r.memoized_flows,
        "peak_rss_mb": round(rss / 1024),
        "iteration_s": r.makespan,
        "batches_per_s": xpus / r.makespan,
    }


def fat_tree_arity(xpus: int) -> int:
    """The k of the k-ary fat tree with ``xpus`` = k^3/4 XPUs (16, 128, 432, 1024, ...)."""
    k = round((4 * xpus) ** (1 / 3))
    if k % 2 or k**3 // 4 != xpus:
        raise SystemExit(f"no k-ary fat tree has {xpus} XPUs (valid: k^3/4 for even k: 16, 128, 432, 1024, ...)")
    return k


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scales", default="64,256,1024,4096")
    p.add_argument("--exact-max", type=int, default=256, help="largest scale run exactly (default 256)")
    p.add_argument("--nc-max", type=int, default=1024, help="largest non-coherent scale (default 1024)")
    p.add_argument("--fattree", default="1024", help="fat-tree scales (k^3/4 XPUs; '' for none; default 1024)")
    p.add_argument("--mix", default="H100")
    p.add_argument("--out", default="results")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        system, xpus, mix, mode = args.one.split(":")
        print(json.dumps(one(system, int(xpus), mix, mode == "fast")))
        return
    rows = []
    scales = {"cxl": args.scales, "noncoherent": args.scales, "fattree": args.fattree}
    for system in ("cxl", "noncoherent", "fattree"):
        for n in (int(x) for x in scales[system].split(",") if x):
            if system == "noncoherent" and n > args.nc_max:
                continue
            for mode in ("fast", "exact"):
                if mode == "exact" and n > args.exact_max:
                    continue
                spec = f"{system}:{n}:{args.mix}:{mode}"
                out = subprocess.run(
                    [sys.executable, __file__, "--one", spec], capture_output=True, text=True, check=True
                ).stdout
                row = json.loads(out.strip().splitlines()[-1])
                rows.append(row)
                print(
                    f"{system:12} {n:5} {mode:5} wall {row['wall_s']:8.2f} s  activities {row['activities']:>10,}"
                    f"  memoized {row['memoized_flows']:>12,}  RSS {row['peak_rss_mb']:5} MB"
                    f"  iteration {row['iteration_s']:.6f} s ({row['batches_per_s']:.2f} batch/s)",
                    flush=True,
                )
    print()
    for system in ("cxl", "noncoherent", "fattree"):
        for n in sorted({r["xpus"] for r in rows}):
            both = {r["mode"]: r for r in rows if r["system"] == system and r["xpus"] == n}
            if len(both) == 2:
                ratio = both["fast"]["iteration_s"] / both["exact"]["iteration_s"]
                speed = both["exact"]["wall_s"] / both["fast"]["wall_s"]
                print(f"{system:12} {n:5}: fast / exact iteration time {ratio:.5f} ({100 * (ratio - 1):+.3f}%), "
                      f"{speed:.0f}x faster")  # fmt: skip
    os.makedirs(args.out, exist_ok=True)
    from hcsim.outputs import write_csv

    write_csv(os.path.join(args.out, "bench_scale.csv"), rows, list(rows[0]))
    print(f"wrote {args.out}/bench_scale.csv")


if __name__ == "__main__":
    main()
