"""Benchmark: one training iteration of a parallel layout on the paper's systems, fast and exact paths.

Rows (issues 16, 17): LLaMA-3-70B tp8 pp4 dp32 on 1024 CXL XPUs (8 microbatches of 8192
tokens), the same on the non-coherent system (``--system noncoherent``, row
``llama-nc``), and Mixtral-8x7B ep8 on 256 XPUs (dp=256, ep=8: each server's 8 XPUs hold
the 8 experts; one microbatch of 4096 tokens). Each row runs in a fresh process through
:class:`hcsim.workload.parallel.TrainingWorkload` and
:func:`hcsim.engine.simulate_system`: ``--mode fast`` folds whole replicas
(:func:`hcsim.fast.symmetry.fold_units`), memoizes repeated collective steps and
repeats iterations (``fast=True``); ``--mode exact`` simulates every XPU with none of
that; ``--mode both`` runs both and reports the fast/exact iteration-time ratio.

The full-size exact rows cost about 625 (LLaMA) and 219 (Mixtral) CPU seconds, so the
default mode is ``both`` only when ``--dp`` scales the rows down (fewer data-parallel
replicas on fewer XPUs), and ``fast`` otherwise; ask for ``--mode exact`` or ``both``
explicitly to run the full-size exact rows.

Each row reports the wall time (and the SimGrid loop's part of it), the CPU seconds of
the process and its SimGrid child (on a shared machine the wall time also counts other
people's work), the XPUs simulated (the fold keeps whole replicas), SimGrid activities,
the flows that memoization accounted for without simulating them one by one, peak RSS and
the iteration time. Writes ``results/bench_parallel.csv``.

    python experiments/bench_parallel.py                                  # all rows, fast
    python experiments/bench_parallel.py --rows llama --system noncoherent
    python experiments/bench_parallel.py --rows llama --dp 2              # 64 XPUs, fast and exact
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
    "llama-nc": dict(model="llama3-70b", system="noncoherent", layout="tp=8,pp=4", dp=32, microbatches=8),
    "mixtral": dict(model="mixtral-8x7b", system="cxl", layout="ep=8", dp=256, microbatches=1, sequence=4096),
}
DEFAULT_ROWS = "llama,llama-nc,mixtral"


def one(row: str, dp: int, fast: bool, system: str | None = None) -> dict:
    """In a child process: one iteration of ``row`` with ``dp`` replicas, measured."""
    import resource

    from hcsim.fast import simulate_system
    from hcsim.platform import cxl_system, noncoherent_system
    from hcsim.workload.models import load_model
    from hcsim.workload.parallel import Layout
    from hcsim.workload.parallel.factory import TrainingWorkload

    cfg = dict(ROWS[row])
    if system:
        cfg["system"] = system
    t0 = time.perf_counter()
    layout = Layout.parse(f"{cfg['layout']},dp={dp}")
    xpus = layout.ranks
    topo = (cxl_system if cfg["system"] == "cxl" else noncoherent_system)(xpus)
    spec = load_model(cfg["model"])
    options = {"microbatches": cfg["microbatches"]}
    if cfg.get("sequence"):
        options["sequence"] = cfg["sequence"]
    workload = TrainingWorkload(spec, layout, **options)
    r = simulate_system(topo, workload, 1, coherent=cfg["system"] == "cxl", fast=fast, record_flows=False)
    wall = time.perf_counter() - t0
    own, child = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    rss = max(
        own.ru_maxrss, child.ru_maxrss
    )  # the simulation runs in a forked child (hcsim.simgrid_runtime.run_isolated)
    cpu = own.ru_utime + own.ru_stime + child.ru_utime + child.ru_stime
    return {
        "row": row,
        "mode": "fast" if fast else "exact",
        "model": cfg["model"],
        "layout": str(layout),
        "system": cfg["system"],
        "xpus": xpus,
        "simulated_xpus": len(r.fold.ranks) if r.fold is not None else xpus,
        "microbatches": cfg["microbatches"],
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),  # the machine is shared: wall may exceed it
        "simgrid_loop_s": round(r.wall_seconds, 2),
        "activities": r.activities,
        "memoized_flows": r.memoized_flows,
        "peak_rss_mb": round(rss / 1024),
        "iteration_s": r.makespan,
        "fold_refused": r.fold_refused or "",
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default=DEFAULT_ROWS, help=f"comma-separated, of {', '.join(ROWS)}")
    p.add_argument("--dp", type=int, help="data-parallel replicas (default: each row's own)")
    p.add_argument("--system", choices=("cxl", "noncoherent"), help="run every row on this system instead")
    p.add_argument(
        "--mode", choices=("fast", "exact", "both"), help="default: both with --dp (scaled-down rows), else fast"
    )
    p.add_argument("--out", default="results")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        row, dp, mode, system = args.one.split(":")
        print(json.dumps(one(row, int(dp), mode == "fast", system or None)))
        return
    mode = args.mode or ("both" if args.dp else "fast")
    modes = ["fast", "exact"] if mode == "both" else [mode]
    rows = []
    for row in args.rows.split(","):
        if row not in ROWS:
            p.error(f"unknown row {row!r} (valid: {', '.join(ROWS)})")
        dp = args.dp or ROWS[row]["dp"]
        by_mode = {}
        for m in modes:
            done = subprocess.run(
                [sys.executable, __file__, "--one", f"{row}:{dp}:{m}:{args.system or ''}"],
                capture_output=True,
                text=True,
            )
            if done.returncode:
                sys.exit(f"bench_parallel: row {row} dp={dp} {m} failed:\n{done.stderr.strip()}")
            r = json.loads(done.stdout.strip().splitlines()[-1])
            by_mode[m] = r
            if m == "exact" and "fast" in by_mode:
                r["fast_over_exact"] = by_mode["fast"]["iteration_s"] / r["iteration_s"]
            rows.append(r)
            print(
                f"{r['model']:13} {r['system']:11} {r['layout']:20} {m:5} {r['xpus']:5} XPUs"
                f" ({r['simulated_xpus']} simulated)  wall {r['wall_s']:7.2f} s (CPU {r['cpu_s']:.2f} s,"
                f" SimGrid loop {r['simgrid_loop_s']:.2f} s)  activities {r['activities']:,}"
                f"  memoized {r['memoized_flows']:,}  RSS {r['peak_rss_mb']} MB  iteration {r['iteration_s']:.6f} s"
                + (f"  fast/exact {r['fast_over_exact']:.9f}" if "fast_over_exact" in r else "")
                + (f"  fold refused: {r['fold_refused']}" if r["fold_refused"] else ""),
                flush=True,
            )
    os.makedirs(args.out, exist_ok=True)
    from hcsim.outputs import write_csv

    fields = list(dict.fromkeys(k for r in rows for k in r))
    write_csv(os.path.join(args.out, "bench_parallel.csv"), [{k: r.get(k, "") for k in fields} for r in rows], fields)
    print(f"wrote {args.out}/bench_parallel.csv")


if __name__ == "__main__":
    main()
