"""``hcsim serve`` (alias ``queue``): dynamic-batching inference serving (:mod:`hcsim.frontends.batching`).

Simulates Poisson arrivals served in batches on V100 servers behind a dispatcher and
prints the latency beside the exact one of the truncated Markov chain
(:func:`hcsim.analysis.queueing.exact_finite`). Durations take units (``--alpha 2ms``,
``--max-delay 5ms``); a bare number is in seconds. Only the standard library at the
top: the ``hcsim`` command loads this module for ``--help`` (see :mod:`hcsim.cli`).
"""

from __future__ import annotations

import argparse
import math
import os

from hcsim.errors import HcsimError
from hcsim.units import parse_time

__all__ = ["register"]


def _cmd_serve(args: argparse.Namespace) -> int:
    import tempfile

    import numpy as np

    from hcsim.analysis import queueing as q
    from hcsim.frontends import batching as fb
    from hcsim.platform import builders, compile_platform

    model = None
    stray = [f"--{k.replace('_', '-')}" for k in ("system", "xpus", "mix", "tp", "context") if getattr(args, k)]
    if stray and not args.model:
        raise HcsimError(f"{stray[0]} applies to --model only (valid: --model NAME|config.json with it, or drop it)")
    if args.model:  # a transformer on --system: tau[b] from the engine (hcsim.workload.models.commands)
        from hcsim.workload.models.commands import check_serve_model

        check_serve_model(args)
        model, alpha, tau0, beta, c0 = args.model, 1.0, 0.0, math.nan, math.nan
    elif args.gpu:
        fit = q.fit_linear(q.V100_RESNET50 if args.gpu == "v100" else q.P4_RESNET50)
        alpha, tau0, beta, c0 = fit.alpha, fit.tau0, fit.beta, fit.c0
    else:
        if args.alpha is None or args.tau0 is None:
            raise HcsimError("give --gpu v100|p4, or both --alpha and --tau0 (seconds)")
        alpha, tau0 = parse_time(args.alpha, "--alpha"), parse_time(args.tau0, "--tau0")
        beta = args.beta if args.beta is not None else math.nan
        c0 = args.c0 if args.c0 is not None else math.nan
        if not alpha > 0 or not tau0 >= 0:
            bad, value = ("--alpha", args.alpha) if not alpha > 0 else ("--tau0", args.tau0)
            raise HcsimError(f"{bad} {value!r} is invalid (valid: --alpha > 0 and --tau0 >= 0, e.g. 2ms and 5ms)")
    max_delay = None if args.max_delay is None else parse_time(args.max_delay, "--max-delay")
    if max_delay is not None and not max_delay >= 0:
        raise HcsimError(f"--max-delay {args.max_delay!r} is invalid (valid: a duration >= 0, e.g. 5ms)")
    m = math.inf if args.max_batch is None else args.max_batch
    if args.servers < 1:
        raise HcsimError(f"--servers {args.servers} is invalid (valid: an integer >= 1)")
    if args.rho is not None:
        if not 0 < args.rho:
            raise HcsimError(f"--rho {args.rho} is invalid (valid: 0 < rho < 1)")
        lam_server = args.rho / alpha
    else:
        lam_server = args.rate / args.servers
    if model is None:
        fb.check_stable(lam_server, alpha, tau0, m)
        topo, servers = builders.star(args.servers, "V100"), None
    else:
        from hcsim.platform.commands import build_topology

        topo = build_topology(args)
    with tempfile.TemporaryDirectory() as tmp:
        platform = os.path.join(tmp, "p.xml")
        compile_platform(topo, platform)
        if model is None:
            servers, batch_time = topo.xpus(), fb.linear_time(alpha, tau0)
        else:
            lam_server, servers, batch_time = _model_timing(args, platform, m)
        arrivals = fb.arrival_times("poisson", lam_server * len(servers), args.jobs, args.seed)
        r = fb.serve(
            platform,
            servers,
            arrivals,
            batch_time,
            max_batch=m,
            max_delay=max_delay,
            dispatch=args.dispatch,
            seed=args.seed,
        )
    mean, half = fb.confidence_interval(r.latency)
    p99, p99_half = fb.percentile_interval(r.latency, 99)
    if args.out:
        fb.write_outputs(r, args.out, beta, c0)
    # the exact chain and the bound model no max delay, and one server's own Poisson stream
    exact_model = model is None and max_delay is None and (args.dispatch == "random" or args.servers == 1)
    exact = q.exact_finite(lam_server, alpha, tau0, m) if exact_model else None
    print(f"simulated E[W]   {mean * 1e3:.6g} ms +- {half * 1e3:.3g} ms (95% CI, batch means, {args.jobs} jobs)")
    print(f"p50              {np.percentile(r.latency, 50) * 1e3:.6g} ms")
    print(f"p99              {p99 * 1e3:.6g} ms +- {p99_half * 1e3:.3g} ms (95% CI, batch means)")
    if exact is not None:
        print(f"exact E[W]       {exact.mean_latency * 1e3:.6g} ms (truncated chain, {exact.states} states)")
    if math.isinf(m) and max_delay is None:
        print(f"phi (bound)      {q.phi(lam_server, alpha, tau0) * 1e3:.6g} ms")
    print(f"utilization      {r.utilization():.4f}")
    print(f"mean batch       {r.batch_size.mean():.4g}")
    if not math.isnan(beta):
        print(f"eta              {r.jobs_per_joule(beta, c0):.6g} jobs/J ({r.energy_per_job(beta, c0):.6g} J per job)")
    return 0


def _model_timing(args: argparse.Namespace, platform: str, max_batch: int):  # noqa: ANN202
    """Per-server arrival rate, servers and tau[b] of ``serve --model``; prints the engine's table.

    ``--rho`` is the load relative to a server's capacity, max over b <= M of b / tau[b].
    """
    from hcsim.workload.models.commands import serve_batch_time

    table, servers = serve_batch_time(args, platform, max_batch)
    capacity = max(b / t for b, t in table.items())
    lam_server = args.rho * capacity if args.rho is not None else args.rate / len(servers)
    if not lam_server < capacity:
        raise HcsimError(
            f"unstable: each server gets {lam_server:.6g} requests/s but serves at most {capacity:.6g} "
            "(valid: --rho < 1, or a lower --rate)"
        )
    print(f"model            {args.model}: {len(servers)} server(s), a TP group each; tau[b] by the engine")
    for b, t in table.items():
        print(f"tau[{b}]{' ' * (12 - len(str(b)))}{t * 1e3:.6g} ms ({b / t:.4g} requests/s)")
    return lam_server, servers, table.__getitem__


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``hcsim serve`` (alias ``queue``, its former name)."""
    qu = sub.add_parser(
        "serve", aliases=["queue"], help="dynamic-batching inference serving: simulated vs exact latency"
    )
    gpu = qu.add_mutually_exclusive_group(required=True)
    gpu.add_argument("--gpu", choices=("v100", "p4"), help="ResNet-50 timings fitted from NVIDIA's table")
    gpu.add_argument("--alpha", help="time per job in a batch, e.g. 2ms (bare number: seconds; with --tau0)")
    from hcsim.cli import _load  # without importing hcsim.workload: --help stays light

    _load("hcsim.workload.models.commands").add_serve_options(qu, gpu)  # --model --system --xpus --tp --context
    qu.add_argument("--tau0", help="fixed time per batch, e.g. 5ms (bare number: seconds; with --alpha)")
    load = qu.add_mutually_exclusive_group(required=True)
    load.add_argument("--rho", type=float, help="load per server, lambda * alpha (--model: lambda / capacity)")
    load.add_argument("--rate", type=float, help="total arrival rate, jobs/s")
    qu.add_argument("--max-batch", type=int, help="largest batch (default: unlimited)")
    qu.add_argument(
        "--max-delay",
        help="an idle server waits for a full batch up to this long after its oldest job arrived, e.g. 5ms "
        "(bare number: seconds; default: no wait; no exact E[W] then)",
    )
    qu.add_argument("--jobs", type=int, default=1_000_000, help="jobs to simulate (default 1e6)")
    qu.add_argument("--seed", type=int, default=0)
    qu.add_argument("--servers", type=int, default=1, help="servers behind the dispatcher")
    qu.add_argument("--dispatch", choices=("random", "round_robin", "jsq"), default="random")
    qu.add_argument("--beta", type=float, help="with --alpha: energy per job in a batch (J), for eta")
    qu.add_argument("--c0", type=float, help="with --alpha: fixed energy per batch (J), for eta")
    qu.add_argument("--out", help="directory for jobs.csv, batches.csv, batch_sizes.csv/.png, summary.json")
    qu.set_defaults(func=_cmd_serve)
