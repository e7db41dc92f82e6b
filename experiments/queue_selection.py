"""Kawanami, Yoshihisa, Kanazawa: queue selection for batch-processing supercomputers, on SimGrid.

Monte Carlo over simulated weeks of N = 6 queues fed by the paper's Lomax arrivals, for
the parameter sets 1a..3d and the methods Random, MQL, MAQL and Offset(M), M = 150, 1500,
3000, 5000 min, under the paper's model (no waiting: a job ends Y ~ Exp(p_i) after it
arrives) and under FIFO queues with one server each. Every method of a week sees the same
arrivals and service draws (common random numbers), so differences between methods are
paired. Outputs, in results/ (or --out; names end in _quick with --quick):

* queue_selection_summary.csv - per (model, set, method): jobs, mean completion time and
  its 95% CI across weeks, the paired difference to Random and its 95% CI, median, p90,
  p99, and the share of jobs sent to each queue;
* queue_selection_cdf.csv - the completion-time CDFs at 0, 5, ..., 1500 min;
* queue_selection_cdf_paper.png, queue_selection_cdf_fifo.png - a 3x4 grid of CDFs per
  method, one panel per set (as the paper's figures 4-8);
* queue_selection_offsets.png - per set, Offset(M)'s mean completion time minus Random's
  (paired, same weeks, 95% CI) against M, with MQL's and MAQL's as lines (the paper's
  figure 3 asks the same question);
* queue_selection_variants.csv (full mode) - Offset with random tie-breaks, and with the
  "most completions" reading of the rule, for the paper model.

At the end: the table of mean completion times, and a reading of the paper's findings.

    python experiments/queue_selection.py --quick   # 3 sets x 4 weeks: seconds
    python experiments/queue_selection.py           # 12 sets x 100 weeks x 2 models: minutes
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

from hcsim import outputs
from hcsim.frontends.queue_selection import (
    SETS,
    QueueRun,
    cdf_points,
    paper_methods,
    ratio_interval,
    simulate,
    summarize,
)
from hcsim.outputs import save_figure

METHOD_LABELS = [m.label for m in paper_methods()]
OFFSET_LABELS = [m for m in METHOD_LABELS if m.startswith("offset")]
SHORT = {"random": "Random", "mql": "MQL", "maql": "MAQL"} | {m: f"Off{m[7:-1]}" for m in OFFSET_LABELS}


def write_csv(path: str, rows: list[dict]) -> None:
    """The rows under every key any of them has, in first-seen order."""
    outputs.write_csv(path, rows)


class Paired:
    """Per-week job counts and completion-time sums of each method of one run (for paired differences)."""

    def __init__(self, run: QueueRun) -> None:
        self.sums = {m: run.jobs[m].replication_sums(run.replications) for m in run.methods}

    def mean(self, m: str) -> tuple[float, float]:
        return ratio_interval(*self.sums[m])

    def diff(self, a: str, b: str) -> tuple[float, float]:
        """Mean of a minus mean of b, and its 95% half-width (same weeks, same jobs)."""
        n, sa = self.sums[a]
        _, sb = self.sums[b]
        return ratio_interval(n, sa - sb)


def run_all(sets: list[str], model: str, replications: int, seed: int, workers: int, **kw) -> dict:  # noqa: ANN003
    out = {}
    for name in sets:
        t0 = time.perf_counter()
        run = simulate(name, paper_methods(), model=model, replications=replications, seed=seed, workers=workers, **kw)
        out[name] = {"rows": summarize(run), "cdf": cdf_points(run), "paired": Paired(run), "jobs": run.total_jobs}
        dt = time.perf_counter() - t0
        print(f"  {model:5} {name}: {run.total_jobs} jobs in {dt:.1f} s ({run.total_jobs / dt:.0f} jobs/s)", flush=True)
    return out


def _finish_grid(plt, fig, axes, used: int, xlabel: str, ylabel: str, title: str, path: str, loc: str = "best") -> None:  # noqa: ANN001
    """Label the outer axes of a grid of per-set panels, hide the unused ones, save and close."""
    for ax in axes[-1]:
        ax.set_xlabel(xlabel, fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel, fontsize=8)
    for ax in axes.flat[used:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=6, loc=loc)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, path)


def plot_cdfs(plt, results: dict, sets: list[str], path: str, title: str) -> None:  # noqa: ANN001
    rows, cols = max(1, math.ceil(len(sets) / 4)), min(4, len(sets))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows), dpi=110, squeeze=False)
    for ax, name in zip(axes.flat, sets, strict=False):
        pts = results[name]["cdf"]
        random_mean = next(r["mean_min"] for r in results[name]["rows"] if r["method"] == "random")
        for label in METHOD_LABELS:
            xs = [p["minutes"] for p in pts if p["method"] == label]
            ys = [p["cdf"] for p in pts if p["method"] == label]
            style = "-" if not label.startswith("offset") else "--"
            ax.plot(xs, ys, style, lw=1.2, label=SHORT[label])
        ax.set_xlim(0, min(1500, 4 * random_mean))
        ax.set_title(f"({name[0]})({name[1]}) p = {', '.join(f'{p:g}' for p in SETS[name])}", fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=7)
    _finish_grid(plt, fig, axes, len(sets), "completion time (min)", "P(T <= t)", title, path, loc="lower right")


def plot_offsets(plt, results: dict, sets: list[str], path: str, title: str) -> None:  # noqa: ANN001
    """Per set: Offset(M) minus Random against M (paired 95% CI), with MQL and MAQL minus Random as lines."""
    rows, cols = max(1, math.ceil(len(sets) / 4)), min(4, len(sets))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), dpi=110, squeeze=False)
    ms = [float(m[7:-1]) for m in OFFSET_LABELS]
    for ax, name in zip(axes.flat, sets, strict=False):
        paired = results[name]["paired"]
        diffs = [paired.diff(m, "random") for m in OFFSET_LABELS]
        ax.errorbar(ms, [d[0] for d in diffs], yerr=[d[1] for d in diffs], fmt="o-", color="C3", label="Offset(M)")
        ax.axhline(0.0, color="k", ls=":", lw=1.2, label="Random")
        for label, color in (("mql", "C0"), ("maql", "C2")):
            ax.axhline(paired.diff(label, "random")[0], color=color, ls="--", lw=1.2, label=SHORT[label])
        ax.set_xticks(ms, [f"{m:g}" for m in ms], fontsize=7)
        ax.tick_params(labelsize=7)
        ax.set_title(f"({name[0]})({name[1]}), Random mean {paired.mean('random')[0]:.1f} min", fontsize=8)
        ax.grid(True, alpha=0.3)
    _finish_grid(plt, fig, axes, len(sets), "offset M (min)", "mean minus Random (min)", title, path)


def table(results: dict, sets: list[str], model: str) -> str:
    lines = [f"mean completion time (min), {model} model; +- is the 95% CI half-width across weeks"]
    lines.append(f"{'set':<5}" + "".join(f"{SHORT[m]:>15}" for m in METHOD_LABELS))
    for name in sets:
        by = {r["method"]: r for r in results[name]["rows"]}
        lines.append(
            f"{name:<5}" + "".join(f"{by[m]['mean_min']:>8.2f} +-{by[m]['ci95_min']:>5.2f}" for m in METHOD_LABELS)
        )
    return "\n".join(lines)


def _below(d: tuple[float, float]) -> bool:
    """The paired difference's 95% interval lies below zero."""
    return d[0] + d[1] < 0


def _tied(d: tuple[float, float]) -> bool:
    """The paired difference's 95% interval holds zero (or the difference is exactly zero)."""
    return d[0] == 0 or abs(d[0]) <= d[1]


def reading(results: dict, sets: list[str], model: str) -> list[str]:  # noqa: C901
    """Whether each of the paper's findings holds in ``results``, set by set (paired 95% intervals)."""
    unequal = [s for s in sets if len(set(SETS[s])) > 1]
    equal = [s for s in sets if len(set(SETS[s])) == 1]
    out = [f"paper findings, {model} model (paired 95% intervals over common weeks):"]

    def verdict(claim: str, ok: list[str], of: list[str], detail: str = "") -> None:
        word = "holds" if len(ok) == len(of) else ("partly holds" if ok else "does not hold")
        out.append(
            f"* {claim}: {word} ({len(ok)}/{len(of)} sets{': ' + ', '.join(ok) if 0 < len(ok) < len(of) else ''})"
        )
        if detail:
            out.append(f"    {detail}")

    if equal:
        ok = [s for s in equal if all(_tied(results[s]["paired"].diff(m, "random")) for m in METHOD_LABELS[1:])]
        spread = max(
            abs(results[s]["paired"].diff(m, "random")[0]) / results[s]["paired"].mean("random")[0]
            for s in equal
            for m in METHOD_LABELS[1:]
        )
        note = " (exact by construction: job j takes p E_j whichever queue)" if model == "paper" else ""
        verdict("equal queues (a): all methods coincide", ok, equal, f"largest gap to Random: {spread:.1%}{note}")
    if not unequal:
        return out
    gaps = {
        s: {
            m: results[s]["paired"].diff(m, "random")[0] / results[s]["paired"].mean("random")[0] for m in METHOD_LABELS
        }
        for s in unequal
    }
    best = {s: min(METHOD_LABELS, key=lambda m: gaps[s][m]) for s in unequal}
    out.append("* best method per set: " + ", ".join(f"{s} {SHORT[best[s]]}" for s in unequal))
    ok = [s for s in unequal if _tied(results[s]["paired"].diff("mql", "maql"))]
    detail = ", ".join(f"{s} {gaps[s]['mql']:+.0%}/{gaps[s]['maql']:+.0%}" for s in unequal)
    verdict("MQL ~ MAQL (difference not significant)", ok, unequal, f"MQL/MAQL vs Random: {detail}")
    ok = [
        s
        for s in unequal
        if all(
            _below(results[s]["paired"].diff(best, m)) or _tied(results[s]["paired"].diff(best, m))
            for best in ("mql", "maql")
            for m in ["random"] + OFFSET_LABELS
        )
    ]
    verdict("MQL and MAQL best (each no worse than Random and every Offset)", ok, unequal)
    ok = [
        s
        for s in unequal
        if _below(results[s]["paired"].diff("offset(150)", "random"))
        and all(_below(results[s]["paired"].diff(b, "offset(150)")) for b in ("mql", "maql"))
    ]
    verdict("Offset(150) next: better than Random, worse than MQL and MAQL", ok, unequal)
    ok = [
        s
        for s in unequal
        if all(_below(results[s]["paired"].diff(m, "random")) for m in ("mql", "maql", "offset(150)"))
    ]
    verdict("Random worst (MQL, MAQL, Offset(150) all better)", ok, unequal)
    ok = [s for s in unequal if all(_below(results[s]["paired"].diff("offset(150)", m)) for m in OFFSET_LABELS[1:])]
    verdict("Offset(150) beats Offset(1500/3000/5000)", ok, unequal)
    ok = [
        s
        for s in unequal
        if all(
            _tied(results[s]["paired"].diff(a, b))
            for i, a in enumerate(OFFSET_LABELS[1:])
            for b in OFFSET_LABELS[2 + i :]
        )
    ]
    verdict("Offset(1500), (3000), (5000) alike", ok, unequal)
    groups = sorted({s[0] for s in unequal})
    ok, detail = [], []
    for g in groups:
        best = {s: -min(gaps[s].values()) for s in unequal if s[0] == g}
        if {f"{g}b", f"{g}c", f"{g}d"} <= set(best):
            if min(best[f"{g}b"], best[f"{g}d"]) > best[f"{g}c"]:
                ok.append(g)
            detail.append(", ".join(f"{s} {v:.0%}" for s, v in best.items()))
    if detail:
        out.append(
            f"* largest gains where fast and slow queues coexist ((b), (d) above (c)): "
            f"{'holds' if len(ok) == len(detail) else 'partly holds' if ok else 'does not hold'} "
            f"({len(ok)}/{len(detail)} groups)"
        )
        out.append(f"    best method's gain over Random: {'; '.join(detail)}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 sets x 4 weeks, for CI (seconds)")
    parser.add_argument("--out", default="results")
    parser.add_argument("--replications", type=int, help="weeks per set (default 100; 4 with --quick)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="parallel SimGrid processes")
    args = parser.parse_args()
    sets = ["1a", "1d", "3b"] if args.quick else list(SETS)
    reps = args.replications or (4 if args.quick else 100)
    suffix = "_quick" if args.quick else ""
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = time.perf_counter()
    print(f"queue selection: {len(sets)} sets x {len(METHOD_LABELS)} methods x {reps} weeks, seed {args.seed}")
    results = {
        "paper": run_all(sets, "paper", reps, args.seed, args.workers),
        "fifo": run_all(sets, "fifo", reps, args.seed, args.workers, servers=1),
    }
    summary = [r for model in results for name in sets for r in results[model][name]["rows"]]
    write_csv(os.path.join(args.out, f"queue_selection_summary{suffix}.csv"), summary)
    cdf = [p for model in results for name in sets for p in results[model][name]["cdf"]]
    write_csv(os.path.join(args.out, f"queue_selection_cdf{suffix}.csv"), cdf)
    for model, what in (("paper", "paper model (no waiting)"), ("fifo", "FIFO, 1 server per queue")):
        plot_cdfs(
            plt,
            results[model],
            sets,
            os.path.join(args.out, f"queue_selection_cdf_{model}{suffix}.png"),
            f"Completion-time distribution per method, {what}, {reps} weeks per set",
        )
    plot_offsets(
        plt,
        results["paper"],
        sets,
        os.path.join(args.out, f"queue_selection_offsets{suffix}.png"),
        f"Offset(M), MQL, MAQL: mean completion minus Random's in the same weeks, paper model, {reps} weeks per set",
    )
    if not args.quick:
        variants = []
        vreps = max(2, reps // 2)
        for ties, rule in (("random", "fewest"), ("lowest", "most")):
            print(f"  variant: offset ties {ties}, rule {rule} ({vreps} weeks per set)", flush=True)
            for name in sets:
                run = simulate(
                    name,
                    ["random"] + OFFSET_LABELS,
                    replications=vreps,
                    seed=args.seed,
                    workers=args.workers,
                    offset_ties=ties,
                    offset_rule=rule,
                )
                variants += [{"offset_ties": ties, "offset_rule": rule, **r} for r in summarize(run)]
        write_csv(os.path.join(args.out, "queue_selection_variants.csv"), variants)
    wall = time.perf_counter() - t0
    jobs = sum(results[m][s]["jobs"] for m in results for s in sets)
    print()
    for model in results:
        print(table(results[model], sets, model))
        print("\n".join(reading(results[model], sets, model)))
        print()
    if not args.quick:
        print(
            f"offset variants, paper model: Offset(150) / Random mean completion (min) "
            f"(first row: the main run, {reps} weeks; the others {vreps} weeks):"
        )
        for ties, rule in (("lowest", "fewest"), ("random", "fewest"), ("lowest", "most")):
            cells = []
            for name in sets:
                if (ties, rule) == ("lowest", "fewest"):
                    by = {r["method"]: r for r in results["paper"][name]["rows"]}
                else:
                    by = {
                        r["method"]: r
                        for r in variants
                        if (r["offset_ties"], r["offset_rule"], r["set"]) == (ties, rule, name)
                    }
                cells.append(f"{name} {by['offset(150)']['mean_min']:.1f}/{by['random']['mean_min']:.1f}")
            print(f"  ties {ties:<6} rule {rule:<6} Off150/Random: " + "  ".join(cells))
    print(f"wrote {args.out}/queue_selection_*{suffix}.csv/.png; {jobs} simulated jobs in {wall:.0f} s")
    assert not any(np.isnan(r["mean_min"]) for r in summary)


if __name__ == "__main__":
    main()
