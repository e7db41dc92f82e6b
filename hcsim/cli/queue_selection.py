"""``hcsim queue-selection`` (alias ``queues``): Kawanami's queue selection for batch supercomputers.

The simulation clock is in minutes, so ``--period`` and ``--offset`` take a bare number
as minutes, or a duration with a unit (``--period 168h``, ``--offset 2.5h``). The run
itself is :func:`hcsim.frontends.queue_selection.simulate`; this module turns the
options into its arguments, prints the summary table and writes ``--out``. The options
are in :func:`hcsim.cli.parsers.add_queue_selection_options`.
"""

from __future__ import annotations

import argparse
import math
import os

from hcsim.errors import HcsimError
from hcsim.files import check_outputs
from hcsim.frontends.queue_selection.model import MODELS, WEEK
from hcsim.frontends.queue_selection.outputs import summarize, write_outputs
from hcsim.frontends.queue_selection.rules import METHODS, Method, parse_method
from hcsim.frontends.queue_selection.simulator import simulate
from hcsim.units import parse_minutes

__all__ = ["main", "methods", "minutes_list"]


def minutes_list(text: str, what: str) -> str:
    """``text`` (comma-separated windows) with every duration that has a unit turned into minutes."""
    items = []
    for item in str(text).split(","):
        try:
            float(item)
        except ValueError:
            if item.strip():
                item = repr(parse_minutes(item, what))
        items.append(item)  # bare numbers are minutes already and are checked by the run as before
    return ",".join(items)


def methods(method: str, offset: str) -> list[Method]:
    """The methods ``--method`` names (``all``, ``offset``, a comma list), with the windows of ``--offset`` (minutes).

    Every window is checked, whether an offset method is named or not; a method named twice runs once.
    """
    windows = [parse_method("offset", w).window for w in str(offset).split(",") if w.strip()]
    windows = windows or [parse_method("offset", offset).window]
    out: list[Method] = []
    for name in str(method).split(","):
        t = name.strip().lower()
        if t == "all":
            out += [Method("random"), Method("mql"), Method("maql")] + [Method("offset", w) for w in windows]
        elif t == "offset":
            out += [Method("offset", w) for w in windows]
        elif t in METHODS or t.startswith("offset("):
            out.append(parse_method(t))
        else:
            raise HcsimError(f"method {name.strip()!r} is unknown (valid: {', '.join(METHODS)}, all)")
    unique: list[Method] = []
    for m in out:
        if m not in unique:
            unique.append(m)
    return unique


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim queue-selection``: simulate, print a summary, write outputs to ``--out`` if given; returns 0."""
    period = WEEK if args.period is None else parse_minutes(args.period, "--period")
    chosen = methods(args.method, minutes_list(args.offset, "--offset"))
    if args.model not in MODELS:
        raise HcsimError(f"model {args.model!r} is unknown (valid: {', '.join(MODELS)})")
    if args.servers is not None and args.model != "fifo":
        raise HcsimError(f"--servers {args.servers} applies to --model fifo only (valid: omit it, or --model fifo)")
    check_outputs(dirs={"--out": args.out})
    if args.out is not None:
        check_outputs(files={f"--out ({n})": os.path.join(args.out, n) for n in ("summary.csv", "cdf.csv", "cdf.png")})
    run = simulate(
        args.set_name,
        chosen,
        model=args.model,
        servers=1 if args.servers is None else args.servers,
        replications=args.replications,
        seed=args.seed,
        period=period,
        arrival=args.arrival,
        rate=args.rate,
        offset_ties=args.offset_ties,
        offset_rule=args.offset_rule,
        workers=args.workers,
    )
    rows = summarize(run, "random" if "random" in run.methods else None)
    p = ", ".join(f"{x:g}" for x in run.service)
    model = "paper model" if run.model == "paper" else f"fifo model ({run.servers} server(s) per queue)"
    print(f"set {run.set_name} (p = {p} min), {model}, {run.replications} x {run.period:g} min, seed {run.seed}")
    print(
        f"{'method':<14}{'jobs':>8}{'mean (min)':>20}{'median':>9}{'p90':>9}{'p99':>9}"
        f"  share of jobs q1..q{len(run.service)}"
    )
    for r in rows:
        shares = " ".join(f"{r[f'share_q{k + 1}']:.2f}" for k in range(len(run.service)))
        ci = "" if math.isnan(r["ci95_min"]) else f" +- {r['ci95_min']:.2f}"
        print(
            f"{r['method']:<14}{r['jobs']:>8}{r['mean_min']:>11.2f}{ci:<9}"
            f"{r['median_min']:>9.2f}{r['p90_min']:>9.2f}{r['p99_min']:>9.2f}  {shares}"
        )
    speed = run.total_jobs / max(run.seconds, 1e-9)
    print(f"simulated {run.total_jobs} jobs on SimGrid in {run.seconds:.1f} s ({speed:.0f} jobs/s)")
    if args.out is not None:
        paths = write_outputs(run, args.out)
        print("wrote " + ", ".join(paths))
    return 0
