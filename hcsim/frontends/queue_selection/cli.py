"""``hcsim queues``: its options and what it runs."""

from __future__ import annotations

import argparse
import math
import os

from hcsim.errors import HcsimError
from hcsim.frontends.queue_selection.model import MODELS, WEEK
from hcsim.frontends.queue_selection.outputs import summarize, write_outputs
from hcsim.frontends.queue_selection.rules import METHODS, Method, _check_window, parse_method
from hcsim.frontends.queue_selection.simulator import simulate

__all__ = ["add_arguments", "run_from_arguments"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``hcsim queues`` to ``parser``."""
    parser.add_argument(
        "--method",
        default="all",
        help="random, mql, maql, offset, a comma-separated list, or all (= all four; default all)",
    )
    parser.add_argument("--set", dest="set_name", metavar="SET", default="1d", help="parameter set 1a..3d (default 1d)")
    parser.add_argument(
        "--offset", default="150", help="offset window M in minutes; several comma-separated (default 150)"
    )
    parser.add_argument(
        "--model", default="paper", help="paper (no waiting, the paper's model) or fifo (default paper)"
    )
    parser.add_argument("--servers", type=int, default=None, help="fifo: servers per queue (default 1)")
    parser.add_argument("--replications", type=int, default=20, help="simulated periods (default 20)")
    parser.add_argument("--period", type=float, default=WEEK, help="minutes per replication (default 10080, a week)")
    parser.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    parser.add_argument("--arrival", default="lomax", help="lomax (the paper's) or poisson (with --rate)")
    parser.add_argument("--rate", type=float, default=None, help="poisson arrivals per minute")
    parser.add_argument("--offset-ties", default="lowest", help="offset ties: lowest id or random (default lowest)")
    parser.add_argument(
        "--offset-rule", default="fewest", help="offset picks the queue with the fewest (default) or most completions"
    )
    parser.add_argument("--workers", type=int, default=1, help="parallel SimGrid processes (default 1)")
    parser.add_argument("--out", default=None, help="directory for summary.csv, cdf.csv, cdf.png")


def _methods_from_arguments(method: str, offset: str) -> list[Method]:
    windows = [_check_window(w) for w in str(offset).split(",") if w.strip()] or [_check_window(offset)]
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


def run_from_arguments(args: argparse.Namespace) -> int:
    """Run ``hcsim queues``: simulate, print a summary, write outputs to ``--out`` if given; returns 0."""
    methods = _methods_from_arguments(args.method, args.offset)
    if args.model not in MODELS:
        raise HcsimError(f"model {args.model!r} is unknown (valid: {', '.join(MODELS)})")
    if args.servers is not None and args.model != "fifo":
        raise HcsimError(f"--servers {args.servers} applies to --model fifo only (valid: omit it, or --model fifo)")
    if args.out:
        parent = os.path.dirname(os.path.abspath(args.out))
        if os.path.exists(args.out) and not os.path.isdir(args.out):
            raise HcsimError(f"--out '{args.out}' is a file (valid: a directory to write into)")
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
            raise HcsimError(
                f"--out '{args.out}': directory '{parent}' is missing or not writable (valid: a writable path)"
            )
    run = simulate(
        args.set_name,
        methods,
        model=args.model,
        servers=1 if args.servers is None else args.servers,
        replications=args.replications,
        seed=args.seed,
        period=args.period,
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
    if args.out:
        paths = write_outputs(run, args.out)
        print("wrote " + ", ".join(paths))
    return 0
