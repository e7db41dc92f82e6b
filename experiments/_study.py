"""Shared plumbing of the LLaMA2-13B studies: run points through the sweep layer, write CSV + PNG."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from hcsim.outputs import save_figure, write_csv
from hcsim.sweep import SweepSpec, add_sweep_arguments, sweep_from_arguments


def parser(doc: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small scales, for CI")
    p.add_argument("--out", default="results")
    add_sweep_arguments(p)
    return p


def add_scales_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scales",
        help="XPUs:mix list, e.g. 4096:H100 (default 8, 64, 256, 1024 H100 and 256, 1024 H100+V100)",
    )


def chosen_scales(args: argparse.Namespace) -> list[tuple[int, str]]:
    """The (XPUs, mix) points of a sweep study: --quick, --scales, or the full default."""
    if args.scales:  # e.g. --scales 4096:H100 (about 40 s per point)
        return [(int(x.split(":")[0]), x.split(":")[1] if ":" in x else "H100") for x in args.scales.split(",")]
    if args.quick:
        return [(8, "H100"), (16, "H100")]
    return [(8, "H100"), (64, "H100"), (256, "H100"), (1024, "H100"), (256, "H100+V100"), (1024, "H100+V100")]


def run_study(
    args: argparse.Namespace,
    name: str,
    points: list[dict],
    series: Callable[[dict], str],
    x: Callable[[dict], float],
    y: str,
    xlabel: str,
    title: str,
    log_x: bool = True,
) -> list[dict]:
    """Run LLaMA2-13B at ``points``; write ``name``.jsonl/.csv/.png (``y`` against ``x(row)``, by ``series``)."""
    spec = SweepSpec("hcsim.sweep.experiments:llama2_13b", fixed={"iterations": 2, "fast": True}, points=points)
    os.makedirs(args.out, exist_ok=True)
    name += "_quick" if args.quick else ""
    rows = sweep_from_arguments(spec, args, os.path.join(args.out, f"{name}.jsonl"))
    table = [{**r["params"], **{k: v for k, v in r["result"].items() if k != "wall_s"}} for r in rows]
    table.sort(key=lambda t: (series(t), x(t)))
    write_csv(os.path.join(args.out, f"{name}.csv"), table, sorted({k for t in table for k in t}))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for label in sorted({series(t) for t in table}):
        pts = sorted((x(t), t[y]) for t in table if series(t) == label)
        ax.plot(*zip(*pts, strict=True), marker="o", label=label)
    if log_x:
        ax.set_xscale("log", base=2)
    ax.set(xlabel=xlabel, ylabel=y.replace("_", " "), title=title)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    save_figure(fig, os.path.join(args.out, f"{name}.png"))
    print(f"wrote {args.out}/{name}.csv and .png ({len(table)} points)")
    return table
