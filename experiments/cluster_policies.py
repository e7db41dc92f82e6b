"""AnalySIM study: mean JCT per scheduling policy x placement, with and without migration.

Two traces, each scheduled by every policy (FCFS, FCFS + EASY backfill, SJF, LAS,
round-robin, MLFQ, LAS-MLFQ) under every placement (first-fit, best-fit, free-GPU),
with and without migration, on the paper's non-coherent system (8-GPU servers):

* ``helios-like``: a synthetic trace (Poisson arrivals, lognormal run times of mean
  1 h with sigma 2, a Helios-like GPU-count mix; see ``hcsim.frontends.cluster.traces``)
  at 90% offered load (over the arrival period) on 256 GPUs;
* ``lublin``: the Lublin-Feitelson SWF sample (10,000 jobs on 256 processors, each
  processor taken as one GPU) on 256 GPUs.

Writes ``results/cluster_policies.csv`` and ``.png`` (mean JCT bars per policy, one
panel per trace, bars per placement, hatched with migration) and prints the table and
the orderings to compare with AnalySIM's findings.

    python experiments/cluster_policies.py --quick      # 1,500 synthetic jobs, first 1,500 Lublin jobs
    python experiments/cluster_policies.py -j 2         # full: 10,000 jobs each
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from hcsim.cli.sweep import add_sweep_arguments, sweep_from_arguments
from hcsim.frontends.cluster.traces import read_swf, write_swf
from hcsim.outputs import save_figure, write_csv
from hcsim.sweep import SweepSpec

POLICIES = ["fcfs", "easy", "sjf", "las", "rr", "mlfq", "las-mlfq"]
PLACEMENTS = ["first-fit", "best-fit", "free-gpu"]
HERE = os.path.dirname(os.path.abspath(__file__))
LUBLIN = os.path.join(HERE, "..", "..", "shared", "data", "lublin_256.swf")


def lublin_path(jobs: int | None, tmp: str) -> str | None:
    """The SWF sample (the project's data beside a clone), cut to its first ``jobs`` jobs; None if absent.

    The sample is not shipped (its copy states no license: NOTICE); a clone without it
    runs the helios-like trace alone and says so.
    """
    path = os.environ.get("HCSIM_LUBLIN", LUBLIN)
    if not os.path.isfile(path):
        return None
    if jobs is None:
        return os.path.abspath(path)
    trace = read_swf(path)
    trace.jobs = trace.jobs[:jobs]
    cut = os.path.join(tmp, "lublin_cut.swf")
    write_swf(trace, cut)
    return cut


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1,500 jobs per trace")
    p.add_argument("--out", default="results")
    add_sweep_arguments(p)
    args = p.parse_args()
    jobs = 1_500 if args.quick else 10_000
    os.makedirs(args.out, exist_ok=True)
    name = "cluster_policies" + ("_quick" if args.quick else "")
    tmp = tempfile.mkdtemp()
    traces = {"helios-like": {"trace": "helios-like", "xpus": 256, "jobs": jobs, "load": 0.9, "seed": 1}}
    lublin = lublin_path(jobs if args.quick else None, tmp)
    if lublin is None:
        where = os.path.abspath(os.environ.get("HCSIM_LUBLIN", LUBLIN))
        print(f"note: the Lublin SWF sample is not at {where} (not shipped, see NOTICE; set HCSIM_LUBLIN): "
              "running the helios-like trace only", file=sys.stderr)  # fmt: skip
    else:
        traces["lublin"] = {"trace": lublin, "xpus": 256}
    points = [
        {**spec, "policy": pol, "placement": pl, "migration": mig}
        for spec in traces.values()
        for pol in POLICIES
        for pl in PLACEMENTS
        for mig in (False, True)
    ]
    spec = SweepSpec("hcsim.sweep.experiments:cluster_policy", points=points, timeout=1800)
    rows = sweep_from_arguments(spec, args, os.path.join(args.out, f"{name}.jsonl"))
    label = {v["trace"]: k for k, v in traces.items()}
    table = []
    for r in rows:
        pr, res = r["params"], r["result"]
        table.append(
            {
                "trace": label.get(pr["trace"], pr["trace"]),
                "policy": pr["policy"],
                "placement": pr["placement"],
                "migration": pr["migration"],
                **{k: v for k, v in res.items() if k != "wall_s"},
                "wall_s": res["wall_s"],
            }
        )
    table.sort(
        key=lambda t: (t["trace"], POLICIES.index(t["policy"]), PLACEMENTS.index(t["placement"]), t["migration"])
    )
    write_csv(os.path.join(args.out, f"{name}.csv"), table, list(table[0]))
    plot(table, os.path.join(args.out, f"{name}.png"))
    report(table)
    print(f"wrote {args.out}/{name}.csv and .png ({len(table)} runs)")


def plot(table: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = sorted({t["trace"] for t in table})
    fig, axes = plt.subplots(len(traces), 1, figsize=(10, 3.6 * len(traces)), squeeze=False)
    width = 0.8 / (2 * len(PLACEMENTS))
    colours = {"first-fit": "tab:blue", "best-fit": "tab:orange", "free-gpu": "tab:green"}
    for ax, trace in zip(axes[:, 0], traces, strict=True):
        for i, pl in enumerate(PLACEMENTS):
            for j, mig in enumerate((False, True)):
                xs, ys = [], []
                for k, pol in enumerate(POLICIES):
                    row = [
                        t
                        for t in table
                        if (t["trace"], t["policy"], t["placement"], t["migration"]) == (trace, pol, pl, mig)
                    ]
                    if row:
                        xs.append(k + (2 * i + j - len(PLACEMENTS) + 0.5) * width)
                        ys.append(row[0]["jct_mean_s"] / 3600)
                ax.bar(xs, ys, width, color=colours[pl], hatch="//" if mig else None, edgecolor="black", lw=0.3,
                       label=f"{pl}{' + migration' if mig else ''}")  # fmt: skip
        ax.set_xticks(range(len(POLICIES)), POLICIES)
        ax.set_ylabel("mean JCT (h)")
        ax.set_title(trace)
        ax.set_yscale("log")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=7, ncol=3)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def report(table: list[dict]) -> None:
    for trace in sorted({t["trace"] for t in table}):
        print(f"\n{trace}: mean JCT (h) by policy (rows) and placement (columns; +m = with migration)")
        head = "".join(f"{pl + m:>14}" for pl in PLACEMENTS for m in ("", "+m"))
        print(f"{'policy':10}{head}")
        for pol in POLICIES:
            cells = []
            for pl in PLACEMENTS:
                for mig in (False, True):
                    row = [
                        t
                        for t in table
                        if (t["trace"], t["policy"], t["placement"], t["migration"]) == (trace, pol, pl, mig)
                    ]
                    cells.append(f"{row[0]['jct_mean_s'] / 3600:14.3f}" if row else f"{'-':>14}")
            print(f"{pol:10}{''.join(cells)}")
        best = {
            pol: min(t["jct_mean_s"] for t in table if t["trace"] == trace and t["policy"] == pol) for pol in POLICIES
        }
        print("order (best placement each): " + " < ".join(sorted(best, key=best.get)))


if __name__ == "__main__":
    main()
