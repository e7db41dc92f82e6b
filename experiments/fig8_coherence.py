"""Paper Fig. 8: LLaMA2-13B throughput, coherent (CXL) vs non-coherent, across scales and mixes.

H100 only, H100+A100 and H100+V100 (XPU type per ToR of 128 XPUs, racks alternating), CXL
128 GB/s and 200 ns. Runs through the sweep layer (resumable; ``--executor dask``).
Writes ``results/fig8_coherence[_quick].{jsonl,csv,png}``.

    python experiments/fig8_coherence.py --quick        # 8..32 XPUs, H100 only
    python experiments/fig8_coherence.py -j 2 --scales 8,16,32,64,128,256
"""

from __future__ import annotations

import argparse
import csv
import os

from hcsim.sweep import SweepSpec, add_sweep_arguments, sweep_from_arguments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--scales", help="comma-separated XPU counts (default: 8..256)")
    parser.add_argument("--out", default="results")
    add_sweep_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        scales, mixes = [8, 16, 32], ["H100"]
    else:
        scales = [int(x) for x in (args.scales or "8,16,32,64,128,256").split(",")]
        mixes = ["H100", "H100+A100", "H100+V100"]
    points = [
        {"system": system, "xpus": n, "mix": mix}
        for system in ("cxl", "noncoherent")
        for mix in mixes
        for n in scales
        if mix == "H100" or n > 128  # up to 128 XPUs (one ToR) every mix is H100 only
    ]
    spec = SweepSpec("hcsim.sweep.experiments:llama2_13b", fixed={"iterations": 2}, points=points)
    os.makedirs(args.out, exist_ok=True)
    name = "fig8_coherence" + ("_quick" if args.quick else "")
    rows = sweep_from_arguments(spec, args, os.path.join(args.out, f"{name}.jsonl"))
    table = [{**r["params"], **{k: v for k, v in r["result"].items() if k != "wall_s"}} for r in rows]
    table.sort(key=lambda t: (t["mix"], t["system"], t["xpus"]))
    with open(os.path.join(args.out, f"{name}.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0]))
        w.writeheader()
        w.writerows(table)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for mix in mixes:
        for system, style in (("cxl", "-"), ("noncoherent", "--")):
            pts = sorted((t["xpus"], t["batches_per_s"]) for t in table if t["mix"] == mix and t["system"] == system)
            if pts:
                ax.plot(*zip(*pts, strict=True), style, marker="o", label=f"{mix}, {system}")
    ax.set(xscale="log", xlabel="XPUs", ylabel="batch/s", title="LLaMA2-13B: coherent vs non-coherent")
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, f"{name}.png"))
    print(f"wrote {args.out}/{name}.csv and .png ({len(table)} points)")


if __name__ == "__main__":
    main()
