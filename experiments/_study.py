"""Shared plumbing of the LLaMA2-13B studies: run points through the sweep layer, print a table, write CSV + PNG.

Plots read at every scale: ``log_y`` puts 8 XPUs and 1024 on one readable axis, and
``style`` gives each series its colour and line, so that paired series (coherent and
non-coherent of one mix) share a hue (:func:`paired_style`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from hcsim.cli.sweep import add_sweep_arguments, sweep_from_arguments
from hcsim.outputs import save_figure, write_csv
from hcsim.sweep import SweepSpec


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


#: Colour pairs (dark, light) of one hue each, from matplotlib's tab20 (entries 2k and 2k + 1).
_PAIRS = [("#1f77b4", "#aec7e8"), ("#ff7f0e", "#ffbb78"), ("#2ca02c", "#98df8a"), ("#d62728", "#ff9896"),
          ("#9467bd", "#c5b0d5"), ("#8c564b", "#c49c94")]  # fmt: skip


def paired_style(group: Callable[[str], str], first: Callable[[str], bool]) -> Callable[[str], dict]:
    """A ``style`` for :func:`run_study`: the series of one ``group`` share a hue.

    ``first`` series (e.g. the coherent one) are dark and solid, the others light and dashed.
    """
    hues: dict[str, int] = {}

    def style(label: str) -> dict:
        hue = _PAIRS[hues.setdefault(group(label), len(hues)) % len(_PAIRS)]
        if first(label):
            return {"color": hue[0], "linestyle": "-", "marker": "o", "linewidth": 1.8}
        return {"color": hue[1], "linestyle": "--", "marker": "s", "linewidth": 1.8, "markeredgecolor": hue[0]}

    return style


def print_table(
    table: list[dict],
    series: Callable[[dict], str],
    x: Callable[[dict], float],
    y: str,
    xname: str,
    labels: list[str] | None = None,
) -> None:
    """The results as text: one row per x, one column per series (``y``, 4 significant digits; - if not run)."""
    labels = labels if labels is not None else sorted({series(t) for t in table})
    xs = sorted({x(t) for t in table})
    cell = {(series(t), x(t)): t[y] for t in table}
    width = max(10, *(len(label) for label in labels))
    print(f"{y} by {xname}:")
    print(f"{xname:>10}  " + "  ".join(f"{label:>{width}}" for label in labels))
    for xv in xs:
        values = [cell.get((label, xv)) for label in labels]
        text = [f"{v:>{width}.4g}" if v is not None else f"{'-':>{width}}" for v in values]
        print(f"{xv:>10.6g}  " + "  ".join(text))


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
    log_y: bool = False,
    style: Callable[[str], dict] | None = None,
    xname: str = "x",
) -> list[dict]:
    """Run LLaMA2-13B at ``points``; print the table; write ``name``.jsonl/.csv/.png (``y`` against ``x(row)``).

    ``series`` names a row's curve, ``style(label)`` its matplotlib line options,
    ``log_y`` a logarithmic y axis, ``xname`` the table's first column.
    """
    spec = SweepSpec("hcsim.sweep.experiments:llama2_13b", fixed={"iterations": 2, "fast": True}, points=points)
    os.makedirs(args.out, exist_ok=True)
    name += "_quick" if args.quick else ""
    rows = sweep_from_arguments(spec, args, os.path.join(args.out, f"{name}.jsonl"))
    table = [{**r["params"], **{k: v for k, v in r["result"].items() if k != "wall_s"}} for r in rows]
    labels = list(dict.fromkeys(series(t) for t in table))  # the study's own order, for the legend and the table
    table.sort(key=lambda t: (series(t), x(t)))
    write_csv(os.path.join(args.out, f"{name}.csv"), table, sorted({k for t in table for k in t}))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for label in labels:
        pts = sorted((x(t), t[y]) for t in table if series(t) == label)
        ax.plot(*zip(*pts, strict=True), label=label, **(style(label) if style else {"marker": "o"}))
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda v, _: f"{v:g}")  # 8, 16, 0.5 rather than 2^3, 5x10^-1
    if log_x:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(plain)
    if log_y:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else ""))
    ax.set(xlabel=xlabel, ylabel=y.replace("_", " "), title=title)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    save_figure(fig, os.path.join(args.out, f"{name}.png"))
    print_table(table, series, x, y, xname, labels)
    print(f"wrote {args.out}/{name}.csv and .png ({len(table)} points)")
    return table
