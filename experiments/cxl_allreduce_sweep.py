"""Ring vs coherent-ring allreduce on the CXL system, across CXL bandwidth and scale.

A design-study sweep that runs through the sweep layer, so it is resumable and scales
out unchanged: ``--executor dask --scheduler tcp://HOST:8786``. Writes
``results/cxl_allreduce_sweep.{jsonl,csv,png}``.

    python experiments/cxl_allreduce_sweep.py --quick          # small, for CI
    python experiments/cxl_allreduce_sweep.py -j 2             # full
    python experiments/cxl_allreduce_sweep.py --executor dask  # on a local Dask cluster
"""

from __future__ import annotations

import argparse
import os

from hcsim.cli.sweep import add_sweep_arguments, sweep_from_arguments
from hcsim.outputs import save_figure, write_csv
from hcsim.sweep import SweepSpec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small grid (seconds)")
    parser.add_argument("--out", default="results", help="output directory")
    add_sweep_arguments(parser)
    args = parser.parse_args()
    scales = [16, 32] if args.quick else [16, 64, 256]
    bandwidths = [32, 128] if args.quick else [16, 32, 64, 128, 256, 512, 1024]
    spec = SweepSpec(
        "hcsim.sweep.experiments:allreduce",
        fixed={"system": "cxl", "nbytes": "256MiB", "iterations": 2},
        grid={
            "xpus": scales,
            "cxl_bandwidth": [f"{b}GBps" for b in bandwidths],
            "algorithm": ["ring", "coherent_ring"],
        },
    )
    os.makedirs(args.out, exist_ok=True)
    name = "cxl_allreduce_sweep" + ("_quick" if args.quick else "")
    rows = sweep_from_arguments(spec, args, os.path.join(args.out, f"{name}.jsonl"))
    table = [
        {
            "xpus": r["params"]["xpus"],
            "cxl_gbps": int(r["params"]["cxl_bandwidth"].removesuffix("GBps")),
            "algorithm": r["params"]["algorithm"],
            "allreduce_s": r["result"]["iteration_s"],
            "busiest_link": r["result"]["busiest_link"],
        }
        for r in rows
    ]
    table.sort(key=lambda t: (t["xpus"], t["algorithm"], t["cxl_gbps"]))
    write_csv(os.path.join(args.out, f"{name}.csv"), table, list(table[0]))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for xpus in scales:
        for algorithm, style in (("ring", "-"), ("coherent_ring", "--")):
            pts = [
                (t["cxl_gbps"], t["allreduce_s"] * 1e3)
                for t in table
                if t["xpus"] == xpus and t["algorithm"] == algorithm
            ]
            ax.plot(*zip(*pts, strict=True), style, marker="o", label=f"{xpus} XPUs, {algorithm}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("CXL link bandwidth (GB/s)")
    ax.set_ylabel("256 MiB allreduce time (ms)")
    ax.set_title("Ring vs coherent ring allreduce, CXL system (H100)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, os.path.join(args.out, f"{name}.png"))
    print(f"wrote {args.out}/{name}.csv and .png ({len(table)} points)")


if __name__ == "__main__":
    main()
