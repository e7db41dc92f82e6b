"""Allreduce algorithms x sizes x scales on the CXL, non-coherent and fat-tree systems; then LLaMA2-13B per algorithm.

Part 1 runs every registered allreduce algorithm (``hcsim.collectives.names``: new
ones join the study by registering; the coherent-only ones run on the CXL system
alone) over sizes 1 KiB..4 GiB at each scale, through the sweep layer
(``hcsim.sweep.experiments:collective``), and reports nccl-tests' time, algbw and
busbw. Part 2 trains LLaMA2-13B (data parallel) with each allreduce algorithm on the
CXL and non-coherent systems (batch/s). Writes ``results/collectives_study.{jsonl,csv,png}``
and ``results/collectives_llama.{jsonl,csv,png}`` (``_quick`` with ``--quick``).

Exactness: every point is exact (real contending flows) except the ring algorithms
at 256 XPUs and more in the full run, which fold and memoize (``fast``, within 1%
of exact; the ``exact`` column says which). The fat tree is the smallest k-ary one
with at least the scale's XPUs (k = 4, 8, 16 for 8..16, 64..128, 256..1024); the
collective runs over its first XPUs.

What is not run, and why (listed in ``*_not_run.csv`` and printed): an algorithm whose
plan starts more flows at once than the exact engine accepts
(``hcsim.engine.exact.MAX_FLOWS_AT_ONCE``: ``direct`` and ``cxl_shared_memory`` from 256
XPUs, N(N-1) flows at once), and, in part 2, the algorithms without a fast path beyond
16 XPUs (LLaMA2-13B runs 40 allreduces an iteration: at 1024 XPUs the double binary
tree alone would take about an hour a point, and at 64 XPUs one exact point took over 30
minutes on this machine); part 2 adds 16 XPUs to the scales so every algorithm meets
LLaMA2-13B at two scales. Sizes go from 1 KiB to 4 GiB in steps
of 32x (``--all-sizes``: every power of two).

    .venv/bin/python experiments/collectives_study.py --quick -j 2   # 8 and 16 XPUs (~4 minutes)
    .venv/bin/python experiments/collectives_study.py -j 1           # 8, 64, 256, 1024 XPUs
"""

from __future__ import annotations

import argparse
import os

from hcsim.cli.sweep import add_sweep_arguments, sweep_from_arguments
from hcsim.outputs import save_figure, write_csv
from hcsim.sweep import SweepSpec
from hcsim.sweep.runner import read_results

SYSTEMS = ["cxl", "noncoherent", "fattree"]  # --systems narrows it
SIZES = ["1KiB", "32KiB", "1MiB", "32MiB", "1GiB", "4GiB"]  # 1 KiB..4 GiB in steps of 32x
ALL_SIZES = [f"{2**k}KiB" if k < 10 else f"{2 ** (k - 10)}MiB" if k < 20 else f"{2 ** (k - 20)}GiB" for k in range(23)]
LLAMA_EXACT_UP_TO = 16  # LLaMA points beyond run only the algorithms with a fast path (see the docstring)


def _applies(system: str, kind: str, name: str) -> bool:
    from hcsim.collectives import algorithm

    return system == "cxl" or not algorithm(kind, name).coherent


_REFUSALS: dict[tuple[str, str, int], str | None] = {}


def refusal(system: str, name: str, xpus: int) -> str | None:
    """Why the exact engine refuses ``name`` over ``xpus`` ranks of ``system`` up front (None: it runs).

    The engine refuses a vertex that starts more flows at once than
    ``hcsim.engine.exact.max_flows_at_once()`` (hours of SimGrid time otherwise); the
    plan is built here once to ask, so the sweep does not spend a worker on it.
    """
    key = (system, name, xpus)
    if key not in _REFUSALS:
        from hcsim.collectives import TopologyView, algorithm, build_plan
        from hcsim.engine.exact import max_flows_at_once
        from hcsim.sweep.experiments import _collective_topology

        _REFUSALS[key] = None
        if not algorithm("allreduce", name).ring:
            topo = _collective_topology(system, xpus, "H100", "128GBps", "200ns")
            ranks = topo.xpus()[:xpus]
            wave = build_plan("allreduce", name, ranks, 2**20, TopologyView.of_topology(topo)).waits.count(0)
            if wave > max_flows_at_once():
                _REFUSALS[key] = f"{wave} flows at once (the exact engine's limit is {max_flows_at_once()})"
    return _REFUSALS[key]


def collective_points(scales: list[int], sizes: list[str], fast_from: int) -> tuple[list[dict], list[dict]]:
    """The sweep's points, and the (system, xpus, algorithm) combinations not run with the reason."""
    from hcsim.collectives import algorithm, names

    pts, skipped = [], []
    for system in SYSTEMS:
        for xpus in scales:
            for name in names("allreduce"):
                if not _applies(system, "allreduce", name):
                    continue
                why = refusal(system, name, xpus)
                if why:
                    skipped.append({"system": system, "xpus": xpus, "algorithm": name, "reason": why})
                    continue
                fast = algorithm("allreduce", name).ring and xpus >= fast_from
                for size in sizes:
                    pts.append({"system": system, "xpus": xpus, "algorithm": name, "nbytes": size, "fast": fast})
    return pts, skipped


def llama_points(scales: list[int]) -> list[dict]:
    from hcsim.collectives import algorithm, names

    return [
        {"system": system, "xpus": xpus, "algorithm": name, "fast": algorithm("allreduce", name).ring}
        for system in ("cxl", "noncoherent")
        for xpus in scales
        for name in names("allreduce")
        if _applies(system, "allreduce", name)
        and (algorithm("allreduce", name).ring or xpus <= LLAMA_EXACT_UP_TO)
        and not refusal(system, name, xpus)
    ]


def _plot_busbw(table: list[dict], scales: list[int], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(SYSTEMS), len(scales), figsize=(3.2 * len(scales), 2.6 * len(SYSTEMS)), dpi=110, squeeze=False
    )
    colors = {name: f"C{i}" for i, name in enumerate(dict.fromkeys(t["algorithm"] for t in table))}
    for i, system in enumerate(SYSTEMS):
        for j, xpus in enumerate(scales):
            ax = axes[i][j]
            at = [t for t in table if t["system"] == system and t["xpus"] == xpus]
            for name in dict.fromkeys(t["algorithm"] for t in at):
                pts = sorted((t["size_bytes"], t["busbw_gbps"]) for t in at if t["algorithm"] == name)
                ax.plot(*zip(*pts, strict=True), marker="o", ms=3, color=colors[name], label=name)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{system}, {xpus} XPUs", fontsize=8)
            ax.grid(True, which="both", alpha=0.3)
            ax.tick_params(labelsize=6)
            if i == len(SYSTEMS) - 1:
                ax.set_xlabel("size S (bytes)", fontsize=7)
            if j == 0:
                ax.set_ylabel("busbw (GB/s)", fontsize=7)
            if j == 0:
                ax.legend(fontsize=6)
    fig.suptitle("Allreduce busbw (nccl-tests definition) by algorithm", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path)


def _same_series(a: dict[int, float], b: dict[int, float], rel: float = 0.005) -> bool:
    """Two algorithms' batch/s at the same scales, each within ``rel`` of the other's."""
    return a.keys() == b.keys() and all(abs(a[x] - b[x]) <= rel * max(a[x], b[x]) for x in a)


def llama_groups(table: list[dict], system: str) -> list[tuple[list[str], dict[int, float]]]:
    """The algorithms of ``system`` as lines to draw: (names, batch/s by XPUs), those within 0.5% on one line."""
    groups: list[tuple[list[str], dict[int, float]]] = []
    for name in sorted({t["algorithm"] for t in table if t["system"] == system}):
        series = {t["xpus"]: t["batches_per_s"] for t in table if t["system"] == system and t["algorithm"] == name}
        for names, first in groups:
            if _same_series(series, first):
                names.append(name)
                break
        else:
            groups.append(([name], series))
    return groups


def _plot_llama(table: list[dict], path: str) -> None:
    """A panel per system: batch/s per XPU against XPUs; algorithms within 0.5% of each other share a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = list(dict.fromkeys(t["system"] for t in table))
    fig, axes = plt.subplots(1, len(systems), figsize=(5.2 * len(systems), 5.6), dpi=110, squeeze=False, sharey=True)
    scales = sorted({t["xpus"] for t in table})
    markers = "osD^vP*Xh<>"
    for ax, system in zip(axes[0], systems, strict=True):
        for i, (names, series) in enumerate(llama_groups(table, system)):
            xs = sorted(series)
            ax.plot(xs, [series[x] / x for x in xs], marker=markers[i % len(markers)], ms=6, lw=1.5, color=f"C{i}",
                    label=", ".join(names))  # fmt: skip
        spread = max(
            1 - min(ts) / max(ts)
            for x in scales
            if (ts := [t["batches_per_s"] for t in table if t["system"] == system and t["xpus"] == x])
        )
        if spread < 0.05:  # lines on top of each other: say by how much they differ
            ax.text(0.5, 0.5, f"every algorithm within {100 * spread:.1f}%\nof the others at each scale",
                    transform=ax.transAxes, ha="center", va="center", fontsize=10)  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xticks(scales, [str(x) for x in scales])
        ax.set_ylim(0, 1.12 * max(t["batches_per_s"] / t["xpus"] for t in table))
        ax.set_title(system, fontsize=11)
        ax.set_xlabel("XPUs", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=9)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1, frameon=False)
    axes[0][0].set_ylabel("batches / s per XPU", fontsize=10)
    fig.suptitle("LLaMA2-13B data parallel by allreduce algorithm (one line: algorithms within 0.5%)", fontsize=11)
    fig.tight_layout()
    save_figure(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 and 16 XPUs, six sizes (under a minute)")
    parser.add_argument("--out", default="results", help="output directory")
    parser.add_argument("--scales", help="comma list of XPU counts (default 8,64,256,1024; --quick 8,16)")
    parser.add_argument(
        "--part", choices=("both", "collectives", "llama"), default="both", help="run part 1, part 2 or both"
    )
    parser.add_argument("--skip-llama", action="store_true", help="the collective sweep only (= --part collectives)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma list of {', '.join(SYSTEMS)}")
    parser.add_argument("--all-sizes", action="store_true", help="every power of two from 1 KiB to 4 GiB (23 sizes)")
    add_sweep_arguments(parser)
    args = parser.parse_args()
    scales = [int(x) for x in args.scales.split(",")] if args.scales else [8, 16] if args.quick else [8, 64, 256, 1024]
    sizes = ALL_SIZES if args.all_sizes else SIZES
    systems = args.systems.split(",")
    if not set(systems) <= set(SYSTEMS):
        parser.error(f"--systems {args.systems!r} (valid: a comma list of {', '.join(SYSTEMS)})")
    SYSTEMS[:] = [s for s in SYSTEMS if s in systems]
    os.makedirs(args.out, exist_ok=True)
    suffix = "_quick" if args.quick else ""

    if args.skip_llama:
        args.part = "collectives"
    if args.part != "llama":
        collectives_part(args, scales, sizes, suffix)
    if args.part != "collectives":
        llama_part(args, scales, suffix)


def collectives_part(args: argparse.Namespace, scales: list[int], sizes: list[str], suffix: str) -> None:
    """Part 1: every allreduce algorithm x sizes x scales x systems."""
    name = "collectives_study" + suffix
    spec = SweepSpec(
        "hcsim.sweep.experiments:collective",
        fixed={"kind": "allreduce", "iterations": 1},
        points=(points := collective_points(scales, sizes, fast_from=256))[0],
    )
    skipped = points[1]
    out = os.path.join(args.out, f"{name}.jsonl")
    rows = sweep_from_arguments(spec, args, out)
    done = {r["id"] for r in rows}
    failed = {r["id"]: r for r in read_results(out) if r["id"] not in done}  # the latest error or timeout of each
    for row in failed.values():
        skipped.append({**{k: row["params"][k] for k in ("system", "xpus", "algorithm", "nbytes")},
                        "reason": row.get("error")})  # fmt: skip
    if skipped:
        write_csv(
            os.path.join(args.out, f"{name}_not_run.csv"), skipped, ["system", "xpus", "algorithm", "nbytes", "reason"]
        )
        for t in skipped:
            print(f"not run: {t['system']} {t['xpus']} XPUs {t['algorithm']}: {t['reason']}")
    from hcsim.units import parse_bytes

    table = [
        {
            "system": r["params"]["system"],
            "xpus": r["params"]["xpus"],
            "algorithm": r["params"]["algorithm"],
            "size_bytes": int(parse_bytes(r["params"]["nbytes"])),
            **{k: r["result"][k] for k in ("time_us", "algbw_gbps", "busbw_gbps", "activities", "exact", "wall_s")},
        }
        for r in rows
    ]
    table.sort(key=lambda t: (SYSTEMS.index(t["system"]), t["xpus"], t["size_bytes"], t["algorithm"]))
    for t in table:
        at = [
            u for u in table if (u["system"], u["xpus"], u["size_bytes"]) == (t["system"], t["xpus"], t["size_bytes"])
        ]
        t["best"] = min(at, key=lambda u: u["time_us"]) is t
    write_csv(os.path.join(args.out, f"{name}.csv"), table, list(table[0]))
    _plot_busbw(table, scales, os.path.join(args.out, f"{name}.png"))
    print(f"wrote {args.out}/{name}.csv and .png ({len(table)} points)")


def llama_part(args: argparse.Namespace, scales: list[int], suffix: str) -> None:
    """Part 2: LLaMA2-13B data parallel with each allreduce algorithm."""
    name = "collectives_llama" + suffix
    scales = sorted({*scales, LLAMA_EXACT_UP_TO})
    spec = SweepSpec("hcsim.sweep.experiments:llama2_13b", fixed={"iterations": 2}, points=llama_points(scales))
    rows = sweep_from_arguments(spec, args, os.path.join(args.out, f"{name}.jsonl"))
    keys = ("batches_per_s", "iteration_s", "compute_s", "exposed_communication_s", "activities", "wall_s")
    llama = [{**{k: r["params"][k] for k in ("system", "xpus", "algorithm")}, **{k: r["result"][k] for k in keys}}
             for r in rows]  # fmt: skip
    llama.sort(key=lambda t: (t["system"], t["xpus"], t["algorithm"]))
    write_csv(os.path.join(args.out, f"{name}.csv"), llama, list(llama[0]))
    _plot_llama(llama, os.path.join(args.out, f"{name}.png"))
    print(f"wrote {args.out}/{name}.csv and .png ({len(llama)} points)")


if __name__ == "__main__":
    main()
