"""``hcsim collective``: nccl-tests-style time, algbw and busbw of collective algorithms.

For each size and algorithm it runs one SimGrid simulation on a platform compiled once
(``--system`` built on the fly, or ``--platform FILE.xml``) and prints a table like
nccl-tests' (time in us, algbw and busbw in GB/s; the definitions are in
:mod:`hcsim.sweep.collective_bench`), then the best algorithm per size. ``--algorithm
all`` runs every registered algorithm of the kind, skipping those that need coherent
memory on a non-coherent system. ``--out DIR`` writes ``collective_<kind>.csv`` and
``.png`` (busbw vs size). The options are in :func:`hcsim.cli.parsers.add_collective`.

    hcsim collective --system cxl --xpus 16 --kind allreduce --algorithm all --sizes 1KiB:1GiB
"""

from __future__ import annotations

import argparse
import contextlib
import os

from hcsim.cli.platform import build_topology, refuse_system_flags
from hcsim.engine.simulator import platform_xpus
from hcsim.errors import HcsimError
from hcsim.fast.system import is_coherent
from hcsim.files import anonymous_file, check_input_file, check_outputs
from hcsim.outputs import json_text, save_figure, write_csv
from hcsim.platform.compiler import compile_platform
from hcsim.sweep.collective_bench import (
    BENCH_KINDS,
    has_fast_path,
    measure,
    measure_fast,
    parse_sizes,
    select_algorithms,
)

__all__ = ["MAX_ITERATIONS", "MAX_SIZE", "MAX_SIZES", "MAX_XPUS", "format_table", "main"]

MAX_XPUS = 4096
"""Most ``--xpus`` of a system built on the fly: the paper's largest system."""
MAX_SIZE = 2**50
"""Largest ``--sizes`` entry (1 PiB): with up to 4096 ranks every flow stays below SimGrid's 2**64-byte limit."""
MAX_SIZES = 64
"""Most ``--sizes`` per run: every size is one simulation per algorithm (1B:1PiB doubling is 51)."""
MAX_ITERATIONS = 10_000
"""Most ``--iterations`` per point: every collective of every iteration is simulated."""
_COLUMNS = (
    "kind",
    "algorithm",
    "ranks",
    "size_bytes",
    "time_us",
    "algbw_gbps",
    "busbw_gbps",
    "best",
    "exact",
    "activities",
)


def _check_out(args: argparse.Namespace) -> None:
    """``--out DIR`` and the two files it will hold, refused before any work if they cannot be written."""
    inputs = {"--platform": args.platform} if args.platform else {}
    for i, name in enumerate(str(args.algorithm).split(",")):  # MSCCL-IR files are inputs too
        if os.path.isfile(name.strip()):
            inputs[f"--algorithm (item {i + 1})"] = name.strip()
    check_outputs(dirs={"--out": args.out}, inputs=inputs)
    if args.out is not None:
        base = os.path.join(args.out, f"collective_{args.kind}")
        check_outputs(files={"--out (CSV)": base + ".csv", "--out (PNG)": base + ".png"}, inputs=inputs)


def format_table(rows: list[dict], notes: list[str], header: str) -> str:
    """The nccl-tests-like table of ``rows`` (sorted by size, then as run) with the best algorithm per size."""
    width = max([len("algorithm"), *(len(r["algorithm"]) for r in rows)])
    lines = [f"# {header}", *(f"# note: {n}" for n in notes)]
    lines.append(
        f"#{'size(B)':>13}  {'algorithm':<{width}}  {'time(us)':>12}  {'algbw(GB/s)':>11}  {'busbw(GB/s)':>11}"
    )
    for size in sorted({r["size_bytes"] for r in rows}):
        at = [r for r in rows if r["size_bytes"] == size]
        for r in at:
            lines.append(
                f"{size:>14}  {r['algorithm']:<{width}}  {r['time_us']:>12.3f}  "
                f"{r['algbw_gbps']:>11.3f}  {r['busbw_gbps']:>11.3f}{'  *' if r['best'] else ''}"
            )
        best = next(r for r in at if r["best"])
        if len(at) > 1:
            lines.append(f"{'':>14}  best: {best['algorithm']}")
    avg = {}
    for r in rows:
        avg.setdefault(r["algorithm"], []).append(r["busbw_gbps"])
    for name, values in avg.items():
        lines.append(f"# Avg bus bandwidth {name}: {sum(values) / len(values):.3f} GB/s")
    return "\n".join(lines)


def _plot(rows: list[dict], kind: str, title: str, path: str) -> None:
    import matplotlib  # only with --out: matplotlib takes longer to import than many runs take

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for name in dict.fromkeys(r["algorithm"] for r in rows):
        pts = sorted((r["size_bytes"], r["busbw_gbps"]) for r in rows if r["algorithm"] == name)
        ax.plot(*zip(*pts, strict=True), marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(xlabel="size S (bytes)", ylabel="busbw (GB/s)", title=title)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path)


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim collective``; the exit status."""
    if isinstance(args.iterations, int) and not 1 <= args.iterations <= MAX_ITERATIONS:
        raise HcsimError(f"--iterations {args.iterations} is invalid (valid: an integer from 1 to {MAX_ITERATIONS:,})")
    if args.host_times and not args.json:
        raise HcsimError("--host-times applies with --json only (valid: add --json, or drop --host-times)")
    if args.kind not in BENCH_KINDS:
        raise HcsimError(f"--kind {args.kind!r} is unknown (valid: {', '.join(BENCH_KINDS)})")
    if args.xpus is not None and args.xpus > MAX_XPUS:
        raise HcsimError(f"--xpus {args.xpus} is invalid (valid: at most {MAX_XPUS}, the largest system built here)")
    sizes = parse_sizes(args.sizes)
    if len(sizes) > MAX_SIZES:
        raise HcsimError(f"--sizes lists {len(sizes)} sizes (valid: at most {MAX_SIZES}, e.g. 1KiB:1GiB)")
    if sizes[-1] > MAX_SIZE:
        raise HcsimError(
            f"--sizes {args.sizes!r} reaches {float(sizes[-1]):.4g} bytes "
            f"(valid: sizes up to 1PiB = {MAX_SIZE:,} bytes)"
        )
    _check_out(args)

    with contextlib.ExitStack() as scratch:
        if args.platform:
            if args.system:
                raise HcsimError("give either --platform FILE.xml or --system, not both")
            refuse_system_flags(args, "--platform FILE.xml (the file fixes the system)")
            check_input_file(args.platform, "platform file", "an XML file from 'hcsim platform build'")
            xpus = platform_xpus(args.platform)
            topo = None
            path = args.platform
            coherent = bool(args.coherent)
            where = os.path.basename(args.platform)
        else:
            if not args.system:
                raise HcsimError("a platform is required (valid: --platform FILE.xml or --system cxl|noncoherent|...)")
            topo = build_topology(args)
            xpus = topo.xpus()
            coherent = is_coherent(topo) if args.coherent is None else args.coherent
            where = f"{args.system}, {len(xpus)} XPU{'s' if len(xpus) != 1 else ''}"
            path = None
        if len(xpus) < 2:
            raise HcsimError(
                f"the platform ({where}) has {len(xpus)} XPU: a collective needs two (valid: at least 2 XPUs)"
            )
        n = len(xpus) if args.ranks is None else args.ranks
        if isinstance(n, int) and (n < 2 or n > len(xpus)):
            raise HcsimError(f"--ranks {n} is invalid (valid: 2 to {len(xpus)}, the platform's XPUs)")
        chosen, notes = select_algorithms(args.kind, args.algorithm, coherent)
        if path is None:
            f, path = scratch.enter_context(anonymous_file("platform.xml"))  # on no disk: SIGKILL leaves nothing
            compile_platform(topo, f)
        ranks = xpus[:n]
        fast = {name for name in chosen if args.fast and topo is not None and has_fast_path(topo, args.kind, name, n)}
        if args.fast:
            slow = [name for name in chosen if name not in fast]
            if slow:
                notes.append(
                    f"--fast: exact for {', '.join(slow)} (the fast paths need --system and every XPU: "
                    "--ranks below the XPU count, or --platform, runs exact)"
                )
        rows = []
        for name in list(chosen):
            for size in sizes:
                try:
                    if name in fast:
                        row = measure_fast(topo, args.kind, name, size, iterations=args.iterations, coherent=coherent)
                    else:
                        row = measure(path, ranks, args.kind, name, size, iterations=args.iterations, coherent=coherent)
                except HcsimError as exc:
                    if args.algorithm != "all":
                        raise
                    notes.append(f"not run: {name}: {exc}")  # with 'all', one algorithm the engine refuses is a note
                    break
                row["exact"] = name not in fast
                rows.append(row)
        if not rows:
            raise HcsimError(f"no algorithm could run: {'; '.join(notes)}")
    for size in sizes:
        at = [r for r in rows if r["size_bytes"] == size]
        best = min(at, key=lambda r: r["time_us"])
        for r in at:
            r["best"] = r is best
    header = (
        f"{args.kind} over {n} ranks ({where}, {'coherent' if coherent else 'non-coherent'}), "
        f"{args.iterations} iteration(s) per point; busbw factor: nccl-tests'"
    )
    if args.out is not None:  # the files create the directory and its parents (hcsim.files)
        base = os.path.join(args.out, f"collective_{args.kind}")
        # not wall_s: host time would make reruns differ
        write_csv(base + ".csv", [{k: r[k] for k in _COLUMNS} for r in rows], _COLUMNS)
        _plot(rows, args.kind, f"{args.kind}, {n} ranks ({where})", base + ".png")
    if args.json:
        best = {str(r["size_bytes"]): r["algorithm"] for r in rows if r["best"]}
        # the rows are the model's numbers only, so reruns give the same bytes; host time behind --host-times
        doc = {
            "kind": args.kind,
            "ranks": n,
            "coherent": coherent,
            "notes": notes,
            "rows": [{k: r[k] for k in _COLUMNS} for r in rows],
            "best": best,
        }
        if args.host_times:
            doc["host_times"] = [
                {"algorithm": r["algorithm"], "size_bytes": r["size_bytes"], "wall_s": r["wall_s"]} for r in rows
            ]
        print(json_text(doc), end="")
    else:
        print(format_table(rows, notes, header))
        if args.out is not None:
            print(f"wrote {base}.csv and .png")
    return 0
