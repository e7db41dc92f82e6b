"""Benchmark: one training iteration of a parallel layout on the paper's systems, exact path.

Rows (issue 16): LLaMA-3-70B tp8 pp4 dp32 on 1024 CXL XPUs (8 microbatches of 8192 tokens),
and Mixtral-8x7B ep8 on 256 XPUs (dp=256, ep=8: each server's 8 XPUs hold the 8 experts;
one microbatch of 4096 tokens). Each row runs in a fresh
process: build the system, build the graph, compile, simulate one iteration (exact: no
fold, no memoization; the fast path for these layouts is another issue). It reports the
wall time split into graph build and the rest, SimGrid activities, peak RSS and the
iteration time, and the CPU seconds of the process and its SimGrid child (on a shared
machine the wall time also counts other people's work). ``--dp`` scales a row down (fewer
data-parallel replicas on fewer XPUs) to see how the cost grows. Writes ``results/bench_parallel.csv``.

    python experiments/bench_parallel.py                        # both rows
    python experiments/bench_parallel.py --rows llama --dp 2    # LLaMA-3-70B on 64 XPUs
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROWS = {
    "llama": dict(model="llama3-70b", system="cxl", layout="tp=8,pp=4", dp=32, microbatches=8),
    "mixtral": dict(model="mixtral-8x7b", system="cxl", layout="ep=8", dp=256, microbatches=1, sequence=4096),
}


def one(row: str, dp: int, record_flows: bool = False) -> dict:
    """In a child process: one iteration of ``row`` with ``dp`` replicas, measured."""
    import resource

    from hcsim.engine import simulate_system
    from hcsim.platform import cxl_system, noncoherent_system
    from hcsim.workload.models import load_model
    from hcsim.workload.parallel import Layout, training_graph

    cfg = ROWS[row]
    t0 = time.perf_counter()
    layout = Layout.parse(f"{cfg['layout']},dp={dp}")
    xpus = layout.ranks
    topo = (cxl_system if cfg["system"] == "cxl" else noncoherent_system)(xpus)
    spec = load_model(cfg["model"])
    built = {}

    def workload(ranks: list[str], group: int | None = None):  # noqa: ANN202
        t = time.perf_counter()
        w = training_graph(spec, layout, ranks, microbatches=cfg["microbatches"], sequence=cfg.get("sequence"))
        built["s"], built["vertices"] = time.perf_counter() - t, w.number_of_nodes()
        return w

    r = simulate_system(topo, workload, 1, coherent=cfg["system"] == "cxl", record_flows=record_flows)
    wall = time.perf_counter() - t0
    own, child = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    rss = max(own.ru_maxrss, child.ru_maxrss)  # the simulation runs in a forked child (hcsim.sg.run_isolated)
    cpu = own.ru_utime + own.ru_stime + child.ru_utime + child.ru_stime
    return {
        "row": row,
        "model": cfg["model"],
        "layout": str(layout),
        "system": cfg["system"],
        "xpus": xpus,
        "microbatches": cfg["microbatches"],
        "vertices": built["vertices"],
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),  # the machine is shared: wall may exceed it
        "build_s": round(built["s"], 2),
        "simgrid_loop_s": round(r.wall_seconds, 2),
        "activities": r.activities,
        "peak_rss_mb": round(rss / 1024),
        "iteration_s": r.makespan,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default="llama,mixtral")
    p.add_argument("--dp", type=int, help="data-parallel replicas (default: each row's own)")
    p.add_argument("--out", default="results")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        row, dp = args.one.split(":")
        print(json.dumps(one(row, int(dp))))
        return
    rows = []
    for row in args.rows.split(","):
        dp = args.dp or ROWS[row]["dp"]
        out = subprocess.run(
            [sys.executable, __file__, "--one", f"{row}:{dp}"], capture_output=True, text=True, check=True
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        rows.append(r)
        print(
            f"{r['model']:14} {r['layout']:26} {r['xpus']:5} XPUs  wall {r['wall_s']:8.2f} s"
            f" (CPU {r['cpu_s']:.2f} s, graph {r['build_s']:.2f} s,"
            f" SimGrid loop {r['simgrid_loop_s']:.2f} s)  vertices {r['vertices']:,}  activities {r['activities']:,}"
            f"  RSS {r['peak_rss_mb']} MB  iteration {r['iteration_s']:.4f} s",
            flush=True,
        )
    os.makedirs(args.out, exist_ok=True)
    from hcsim.outputs import write_csv

    write_csv(os.path.join(args.out, "bench_parallel.csv"), rows, list(rows[0]))
    print(f"wrote {args.out}/bench_parallel.csv")


if __name__ == "__main__":
    main()
