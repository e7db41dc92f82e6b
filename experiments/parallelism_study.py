"""Which parallel layout trains fastest on which fabric: LLaMA-3-70B and Mixtral-8x7B, CXL vs non-coherent.

Each point is one training iteration (:func:`hcsim.sweep.experiments:parallel_training`,
exact path: every flow simulated by SimGrid) of a model under a ``dp x tp x pp (x ep)``
layout on the paper's CXL or non-coherent system. It reports tokens/s and, read from
the trace on the first rank of every pipeline stage, where the iteration goes:
compute, exposed TP / PP / EP / DP communication, idle (the pipeline bubble and waits),
plus the operators whose data lives in remote memory (CXL memory when coherent, host
DRAM otherwise) and the memory stall they cost. Writes
``results/parallelism_study.{jsonl,csv,png}`` (``_quick`` with ``--quick``).

Every layout of a model trains the same global batch (sequences per iteration:
``microbatches = batch / dp``, one sequence each). The full study runs 256 and 1024 XPUs
with 512 sequences of the model's length; ``--quick`` runs 64 XPUs with sequences of
4096 tokens, 16 per iteration for LLaMA-3-70B and 64 for Mixtral, with the same layout
families, which is what docs/results/parallelism.md
reports (a full 1024-XPU point costs minutes of exact simulation: see docs/benchmarks.md).

    python experiments/parallelism_study.py --quick -j 1
    python experiments/parallelism_study.py -j 2           # full (hours)
"""

from __future__ import annotations

import argparse
import os

from hcsim.outputs import save_figure, write_csv
from hcsim.sweep import SweepSpec, add_sweep_arguments, sweep_from_arguments

SYSTEMS = ("cxl", "noncoherent")
#: model -> layouts (dp is what is left of the XPUs); "+z1" adds ZeRO-1
LAYOUTS = {
    "llama3-70b": ["tp=8,pp=4", "tp=8,pp=8", "tp=4,pp=8", "tp=8,pp=2+z1"],
    "mixtral-8x7b": ["ep=8", "tp=2,ep=8", "tp=4,pp=2,ep=8", "tp=8,ep=8"],
}
QUICK_BATCH = {"llama3-70b": 16, "mixtral-8x7b": 64}  # sequences per iteration at 64 XPUs
FULL_BATCH = 512
KEYS = ("microbatches", "tokens_per_s", "iteration_s", "compute_s", "exposed_tp_s", "exposed_pp_s", "exposed_ep_s",
        "exposed_dp_s", "idle_s", "memory_stall_s", "remote_operators", "activities", "wall_s")  # fmt: skip


def points(scales: list[int], quick: bool) -> list[dict]:
    pts = []
    for model, layouts in LAYOUTS.items():
        for xpus in scales:
            for system in SYSTEMS:
                for text in layouts:
                    layout, _, zero = text.partition("+z")
                    pt = {"system": system, "xpus": xpus, "model": model, "layout": layout, "zero": int(zero or 0)}
                    # the same optimizer batch for every layout of a model: microbatches = batch / dp
                    pt["global_batch"] = QUICK_BATCH[model] if quick else FULL_BATCH
                    if quick:
                        pt["sequence"] = 4096
                    pts.append(pt)
    return pts


def _plot(table: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys((t["model"], t["xpus"]) for t in table))
    fig, axes = plt.subplots(len(groups), 2, figsize=(12, 4.2 * len(groups)), dpi=110, squeeze=False)
    parts = ("compute_s", "exposed_tp_s", "exposed_pp_s", "exposed_ep_s", "exposed_dp_s", "memory_stall_s", "idle_s")
    for i, (model, xpus) in enumerate(groups):
        rows = [t for t in table if t["model"] == model and t["xpus"] == xpus]
        labels = list(dict.fromkeys(t["label"] for t in rows))
        ax = axes[i][0]
        width = 0.38
        for j, system in enumerate(SYSTEMS):
            ys = [
                next((t["tokens_per_s"] for t in rows if t["label"] == lab and t["system"] == system), 0)
                for lab in labels
            ]
            ax.bar([k + (j - 0.5) * width for k in range(len(labels))], ys, width, label=system)
        ax.set_xticks(range(len(labels)), labels, fontsize=7, rotation=15)
        ax.set(ylabel="tokens / s", title=f"{model}, {xpus} XPUs: throughput")
        ax.legend(fontsize=7)
        ax = axes[i][1]
        bars = [(t["label"], t["system"]) for t in rows]
        bottom = [0.0] * len(bars)
        for k, part in enumerate(parts):
            ys = [next(t[part] for t in rows if (t["label"], t["system"]) == b) for b in bars]
            ax.bar(range(len(bars)), ys, bottom=bottom, color=f"C{k}", label=part.removesuffix("_s"))
            bottom = [a + b for a, b in zip(bottom, ys, strict=True)]
        ticks = [f"{lab.replace(',', chr(10))}\n{'CXL' if s == 'cxl' else 'NC'}" for lab, s in bars]
        ax.set_xticks(range(len(bars)), ticks, fontsize=5)
        ax.set(ylabel="s per iteration (first rank of each stage)", title="where the time goes")
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    save_figure(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 XPUs, sequences of 4096 tokens")
    parser.add_argument("--scales", help="comma list of XPU counts (default 256,1024; --quick 64)")
    parser.add_argument("--out", default="results", help="output directory")
    add_sweep_arguments(parser)
    args = parser.parse_args()
    scales = [int(x) for x in args.scales.split(",")] if args.scales else [64] if args.quick else [256, 1024]
    os.makedirs(args.out, exist_ok=True)
    name = "parallelism_study" + ("_quick" if args.quick else "")
    spec = SweepSpec("hcsim.sweep.experiments:parallel_training", fixed={"iterations": 1},
                     points=points(scales, args.quick))  # fmt: skip
    rows = sweep_from_arguments(spec, args, os.path.join(args.out, f"{name}.jsonl"))
    table = []
    for r in rows:
        p = r["params"]
        label = r["result"]["layout"] + (f",zero={p['zero']}" if p["zero"] else "")
        table.append({"model": p["model"], "xpus": p["xpus"], "system": p["system"], "label": label,
                      **{k: r["result"][k] for k in KEYS}})  # fmt: skip
    table.sort(key=lambda t: (t["model"], t["xpus"], t["system"], -t["tokens_per_s"]))
    for t in table:
        same = [u for u in table if (u["model"], u["xpus"], u["system"]) == (t["model"], t["xpus"], t["system"])]
        t["best"] = max(same, key=lambda u: u["tokens_per_s"]) is t
    write_csv(os.path.join(args.out, f"{name}.csv"), table, list(table[0]))
    _plot(table, os.path.join(args.out, f"{name}.png"))
    for t in table:
        print(f"{t['model']:13} {t['xpus']:5} {t['system']:11} {t['label']:30} {t['tokens_per_s']:12.0f} tok/s"
              f"  compute {t['compute_s']:.3f}  tp {t['exposed_tp_s']:.3f}  pp {t['exposed_pp_s']:.3f}"
              f"  ep {t['exposed_ep_s']:.3f}  dp {t['exposed_dp_s']:.3f}  stall {t['memory_stall_s']:.3f}"
              f"  idle {t['idle_s']:.3f}  remote {t['remote_operators']}"
              f"{'  <- best' if t['best'] else ''}")  # fmt: skip
    print(f"wrote {args.out}/{name}.csv and .png ({len(table)} points)")


if __name__ == "__main__":
    main()
