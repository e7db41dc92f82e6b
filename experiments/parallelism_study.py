"""Which parallel layout trains fastest on which fabric: LLaMA-3-70B and Mixtral-8x7B, CXL vs non-coherent.

Each point is one training iteration (:func:`hcsim.sweep.experiments:parallel_training`)
of a model under a ``dp x tp x pp (x ep)`` layout on the paper's CXL or non-coherent
system, on the fast path by default: the system folded to whole data-parallel replicas
(EP groups with experts) where colour refinement proves it, ring steps memoized (within
1% of the exact engine: tests/fast/test_folding_layouts.py, tests/sweep/test_sweep_parallel.py);
``--exact`` simulates every XPU and flow. It reports tokens/s and, read from the trace
on the first rank of every pipeline stage, where the iteration goes: compute, exposed
TP / PP / EP / DP communication, idle (the pipeline bubble and waits), plus the
operators whose data lives in remote memory (CXL memory when coherent, host DRAM
otherwise) and the memory stall they cost, and whether the point was folded (how many
XPUs were simulated). Writes ``results/parallelism_study.{jsonl,csv,png}`` (``_quick``
with ``--quick``).

Every layout of a model at a scale trains the same global batch of sequences of 4096
tokens: LLaMA-3-70B a quarter of a sequence per XPU (64 at 256 XPUs, 256 at 1024),
Mixtral one per XPU (256, 1024: its ``tp=1 ep=8`` layout has dp = XPUs). Each pipeline
runs ``2 x pp`` microbatches of ``batch / (dp x 2pp)`` sequences (one microbatch without
PP), or one sequence a microbatch when it has fewer than ``2 x pp`` (:func:`micro_batch`).
``--quick`` runs 64 XPUs with 16 (LLaMA) and 64 (Mixtral) sequences, one a microbatch,
exact. docs/results/parallelism.md reports both.

    python experiments/parallelism_study.py -j 1                  # full, fast path (29 points: 61 min, shared VM)
    python experiments/parallelism_study.py --quick --exact -j 1  # 64 XPUs, exact (~25 min)
"""

from __future__ import annotations

import argparse
import os

from hcsim.cli.sweep import add_sweep_arguments, sweep_from_arguments
from hcsim.outputs import save_figure, write_csv
from hcsim.sweep import SweepSpec

SYSTEMS = ("cxl", "noncoherent")
#: model -> layouts (dp is what is left of the XPUs); "+z1" adds ZeRO-1
LAYOUTS = {
    "llama3-70b": ["tp=8,pp=4", "tp=8,pp=8", "tp=4,pp=8", "tp=8,pp=2+z1"],
    "mixtral-8x7b": ["ep=8", "tp=2,ep=8", "tp=4,pp=2,ep=8", "tp=8,ep=8"],
}
SEQUENCE = 4096  # tokens per sequence, every point
#: sequences per iteration and XPU (the global batch is this x XPUs: the same for every layout of a model at a scale)
BATCH_PER_XPU = {"llama3-70b": 0.25, "mixtral-8x7b": 1}
#: the --quick run's global batches at 64 XPUs (as first published)
QUICK_BATCH = {"llama3-70b": 16, "mixtral-8x7b": 64}
#: (model, xpus, system, layout) -> why the point is left out of the full run (measured cost)
_TP8_EP8 = (
    "the 1024-XPU fold keeps 256 XPUs (4 EP groups of 64); the CXL point had not finished after 18 CPU minutes "
    "and was stopped (the 256-XPU points, not foldable, took 603 and 708 s of wall time, 907k activities each)"
)
NOT_RUN: dict[tuple[str, int, str, str], str] = {
    ("mixtral-8x7b", 1024, "cxl", "tp=8,ep=8"): _TP8_EP8,
    ("mixtral-8x7b", 1024, "noncoherent", "tp=8,ep=8"): _TP8_EP8,
}
KEYS = ("microbatches", "micro_batch", "tokens_per_s", "iteration_s", "compute_s", "exposed_tp_s", "exposed_pp_s",
        "exposed_ep_s", "exposed_dp_s", "idle_s", "memory_stall_s", "remote_operators", "activities", "simulated_xpus",
        "wall_s")  # fmt: skip


def global_batch(model: str, xpus: int, quick: bool) -> int:
    """Sequences per iteration of ``model`` at ``xpus``: the same for every layout (microbatches = batch / dp)."""
    return QUICK_BATCH[model] if quick else int(BATCH_PER_XPU[model] * xpus)


def micro_batch(model: str, xpus: int, layout: str) -> int:
    """Sequences per microbatch in the full run: each pipeline runs ``2 x pp`` microbatches (1 without PP, as
    :func:`~hcsim.workload.parallel.training_graph`'s default) when it has that many sequences, else one each."""
    from hcsim.workload.parallel import Layout

    lay = Layout.parse(layout, xpus)
    per_replica = global_batch(model, xpus, False) // lay.dp
    return per_replica // min(per_replica, 2 * lay.pp if lay.pp > 1 else 1)


def points(scales: list[int], quick: bool, fast: bool) -> list[dict]:
    pts = []
    for model, layouts in LAYOUTS.items():
        for xpus in scales:
            for system in SYSTEMS:
                for text in layouts:
                    if not quick and (model, xpus, system, text) in NOT_RUN:
                        continue
                    layout, _, zero = text.partition("+z")
                    pt = {"system": system, "xpus": xpus, "model": model, "layout": layout, "zero": int(zero or 0),
                          "global_batch": global_batch(model, xpus, quick), "sequence": SEQUENCE}  # fmt: skip
                    if not quick and micro_batch(model, xpus, layout) > 1:
                        pt["micro_batch"] = micro_batch(model, xpus, layout)
                    if fast:
                        pt["fast"] = True
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
    parser.add_argument("--quick", action="store_true", help="64 XPUs, the small batches of QUICK_BATCH")
    parser.add_argument("--exact", action="store_true", help="simulate every XPU and flow (default: the fast path)")
    parser.add_argument("--scales", help="comma list of XPU counts (default 256,1024; --quick 64)")
    parser.add_argument("--out", default="results", help="output directory")
    add_sweep_arguments(parser)
    args = parser.parse_args()
    scales = [int(x) for x in args.scales.split(",")] if args.scales else [64] if args.quick else [256, 1024]
    os.makedirs(args.out, exist_ok=True)
    name = "parallelism_study" + ("_quick" if args.quick else "")
    spec = SweepSpec("hcsim.sweep.experiments:parallel_training", fixed={"iterations": 1},
                     points=points(scales, args.quick, not args.exact))  # fmt: skip
    rows = sweep_from_arguments(spec, args, os.path.join(args.out, f"{name}.jsonl"))
    table = []
    for r in rows:
        p = r["params"]
        label = r["result"]["layout"] + (f",zero={p['zero']}" if p["zero"] else "")
        table.append({"model": p["model"], "xpus": p["xpus"], "system": p["system"], "label": label,
                      "global_batch": p["global_batch"], **{k: r["result"].get(k) for k in KEYS},
                      "fold_refused": r["result"].get("fold_refused")})  # fmt: skip
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
              f"  idle {t['idle_s']:.3f}  remote {t['remote_operators']}  sim {t['simulated_xpus']}"
              f"  wall {t['wall_s']:.0f} s"
              f"{'  <- best' if t['best'] else ''}")  # fmt: skip
    for key, why in NOT_RUN.items():
        if not args.quick and key[1] in scales:
            print(f"not run: {' '.join(map(str, key))}: {why}")
    print(f"wrote {args.out}/{name}.csv and .png ({len(table)} points)")


if __name__ == "__main__":
    main()
