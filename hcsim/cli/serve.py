"""``hcsim serve`` (alias ``queue``): dynamic-batching inference serving (:mod:`hcsim.frontends.serving.batching`).

``--scheduler continuous`` hands the run to :mod:`hcsim.cli.serve_continuous` (LLM continuous batching).

Simulates Poisson arrivals served in batches on V100 servers behind a dispatcher and
prints the latency beside the exact one of the truncated Markov chain
(:func:`hcsim.analysis.queueing.exact_finite`); with ``--model`` the servers are TP groups
of ``--system`` and each batch lasts the engine-computed time of its prefill and decode
steps. Durations take units (``--alpha 2ms``) and rates too (``--rate 6000/s``); a bare
number is in seconds, or per second. The options are in :func:`hcsim.cli.parsers.add_serve`.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable

import numpy as np

from hcsim.analysis import queueing as q
from hcsim.cli.platform import build_topology
from hcsim.cli.serve_continuous import main as continuous
from hcsim.engine.simulator import platform_xpus
from hcsim.errors import HcsimError
from hcsim.files import anonymous_file, check_outputs
from hcsim.frontends.serving import batching as fb
from hcsim.frontends.serving.batch_times import batch_times
from hcsim.platform import builders, compile_platform
from hcsim.units import parse_time
from hcsim.workload.models.inference import check_inference
from hcsim.workload.models.spec import load_model

__all__ = ["MAX_JOBS", "MAX_SEED", "MAX_SERVERS", "MAX_TOKENS", "main"]

MAX_JOBS = 100_000_000
"""Most ``--requests`` one run simulates: the run keeps about 40 bytes per request in memory (4 GB at this bound)."""
MAX_SERVERS = 4096
"""Most ``--servers``: the star platform is compiled and simulated whole (the paper's largest system has 4096 XPUs)."""
MAX_TOKENS = 2**20
"""Most ``--context`` and ``--output-tokens``: 1Mi tokens, the longest context of published models."""
MAX_SEED = 2**63 - 1
"""Seeds are non-negative 64-bit integers (numpy's generators refuse negative ones)."""


def _check_count(value: int, flag: str, low: int, high: int, why: str = "") -> None:
    """Refuse an integer flag outside [low, high], naming the flag and the valid range."""
    if not low <= value <= high:
        raise HcsimError(f"{flag} {value} is invalid (valid: an integer from {low} to {high:,}{why})")


def _finite(value: float | None, flag: str, low: float, strict: bool = False, example: str = "") -> None:
    """Refuse a float flag that is NaN, infinite or below ``low`` (or equal to it when ``strict``)."""
    if value is None:
        return
    if not math.isfinite(value) or value < low or (strict and value == low):
        bound = f"> {low:g}" if strict else f">= {low:g}"
        raise HcsimError(f"{flag} {value!r} is invalid (valid: a finite number {bound}{example})")


def _check_arguments(args: argparse.Namespace) -> None:
    """Every flag checked before anything is built or simulated: one line naming the flag and what is valid."""
    _check_count(args.requests, "--requests", 1, MAX_JOBS, " requests to simulate")
    _check_count(args.servers, "--servers", 1, MAX_SERVERS, ", the XPUs of the serving platform")
    _check_count(args.seed, "--seed", 0, MAX_SEED)
    if args.context is not None:
        _check_count(args.context, "--context", 1, MAX_TOKENS, " prompt tokens")
    _check_count(args.output_tokens, "--output-tokens", 0, MAX_TOKENS, " generated tokens")
    if args.tp is not None:
        _check_count(args.tp, "--tp", 1, MAX_SERVERS, " XPUs per TP group")
    if args.max_batch is not None:
        _check_count(args.max_batch, "--max-batch", 1, 2**31 - 1, "; omit it for no limit")
    if args.gpu and (args.beta is not None or args.c0 is not None):
        flag = "--beta" if args.beta is not None else "--c0"
        raise HcsimError(f"{flag} applies with --alpha only (valid: omit it with --gpu, whose energies are fitted)")
    _finite(args.beta, "--beta", 0.0, example=" joules per job in a batch, e.g. 0.1")
    _finite(args.c0, "--c0", 0.0, example=" joules per batch, e.g. 0.5")
    _finite(args.rate, "--rate", 0.0, strict=True, example=" jobs/s, e.g. 500")
    model = {"--model": args.model} if args.model and os.path.isfile(args.model) else {}
    check_outputs(dirs={"--out": args.out}, inputs=model)
    if args.out is not None:
        names = ("jobs.csv", "batches.csv", "batch_sizes.csv", "batch_sizes.png", "summary.json")
        check_outputs(files={f"--out ({n})": os.path.join(args.out, n) for n in names}, inputs=model)


def _check_continuous_flags(args: argparse.Namespace) -> None:
    """Flags of ``--scheduler continuous`` refused in dynamic mode, in one line."""
    for key in ("prompt_tokens", "kv_cache", "kv_hbm", "kv_tier_capacity", "block_tokens", "max_tokens", "kv_bucket",
                "calibration"):  # fmt: skip
        if getattr(args, key, None) is not None:
            flag = f"--{key.replace('_', '-')}"
            raise HcsimError(f"{flag} applies to --scheduler continuous only (valid: add it, or drop {flag})")
    if getattr(args, "json", False):
        raise HcsimError("--json applies to --scheduler continuous only (valid: add it, or drop --json)")
    for key in ("arrival_cv", "trace", "trace_format", "slo", "slo_attainment", "series_interval"):
        if getattr(args, key, None) is not None:
            flag = f"--{key.replace('_', '-')}"
            raise HcsimError(f"{flag} applies to --scheduler continuous only (valid: add it, or drop {flag})")
    for key in ("timeline", "plots", "exact_iterations"):
        if getattr(args, key, False):
            flag = f"--{key.replace('_', '-')}"
            raise HcsimError(f"{flag} applies to --scheduler continuous only (valid: add it, or drop {flag})")
    if args.rho is None and args.rate is None:
        raise HcsimError("one of the arguments --rho --rate is required (see 'hcsim serve --help')")
    if isinstance(args.rate, tuple):
        raise HcsimError("--rate with a list of rates applies to --scheduler continuous only (valid: one rate)")
    if args.output_tokens is None:
        args.output_tokens = 128  # the default of dynamic batching (continuous has its own)
    if isinstance(args.output_tokens, str):
        raise HcsimError(f"--output-tokens {args.output_tokens!r} is invalid (valid: an integer from 0 to "
                         f"{MAX_TOKENS:,}; distributions apply to --scheduler continuous)")  # fmt: skip


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim serve``; the exit status."""
    if getattr(args, "scheduler", "dynamic") == "continuous":
        return continuous(args)
    _check_continuous_flags(args)
    from hcsim.cli.serve_continuous import refuse_engine_flags

    refuse_engine_flags(args)
    _check_arguments(args)
    model = None
    stray = [f"--{k.replace('_', '-')}" for k in ("system", "xpus", "mix", "tp", "context") if getattr(args, k)]
    if stray and not args.model:
        raise HcsimError(f"{stray[0]} applies to --model only (valid: --model NAME|config.json with it, or drop it)")
    if args.model:  # a transformer on --system: tau[b] from the engine
        _check_model_options(args)
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
        if not (alpha > 0 and math.isfinite(alpha)) or not (tau0 >= 0 and math.isfinite(tau0)):
            bad_alpha = not (alpha > 0 and math.isfinite(alpha))
            bad, value = ("--alpha", args.alpha) if bad_alpha else ("--tau0", args.tau0)
            raise HcsimError(
                f"{bad} {value!r} is invalid (valid: finite --alpha > 0 and --tau0 >= 0, e.g. 2ms and 5ms)"
            )
    max_delay = None if args.max_delay is None else parse_time(args.max_delay, "--max-delay")
    if max_delay is not None and not (max_delay >= 0 and math.isfinite(max_delay)):
        raise HcsimError(f"--max-delay {args.max_delay!r} is invalid (valid: a finite duration >= 0, e.g. 5ms)")
    m = math.inf if args.max_batch is None else args.max_batch
    if args.rho is not None:
        if not 0 < args.rho:  # rho >= 1 is refused below as unstable, with the capacity
            raise HcsimError(f"--rho {args.rho} is invalid (valid: 0 < rho < 1, the load per server)")
        lam_server = args.rho / alpha
    else:
        lam_server = args.rate / args.servers
    if model is None:
        try:
            fb.check_stable(lam_server, alpha, tau0, m)
        except HcsimError as exc:
            if math.isinf(m) or lam_server * alpha >= 1:
                raise
            raise HcsimError(f"--max-batch {args.max_batch} is too small for this load: {exc}") from None
        topo, servers = builders.star(args.servers, "V100"), None
    else:
        topo = build_topology(args)
    with anonymous_file("platform.xml") as (f, platform):  # on no disk: a SIGKILL leaves nothing behind
        compile_platform(topo, f)
        if model is None:
            servers, batch_time = topo.xpus(), fb.linear_time(alpha, tau0)
        else:
            lam_server, servers, batch_time = _model_timing(args, platform, m)
        arrivals = fb.arrival_times("poisson", lam_server * len(servers), args.requests, args.seed)
        r = fb.serve(
            platform,
            servers,
            arrivals,
            batch_time,
            max_batch=m,
            max_delay=max_delay,
            dispatch=args.dispatch,
            seed=args.seed,
            progress=True if args.progress else None,
        )
    mean, half = fb.confidence_interval(r.latency)
    p99, p99_half = fb.percentile_interval(r.latency, 99)
    if args.out is not None:
        fb.write_outputs(r, args.out, beta, c0)
    # the exact chain and the bound model no max delay, and one server's own Poisson stream
    exact_model = model is None and max_delay is None and (args.dispatch == "random" or args.servers == 1)
    exact = q.exact_finite(lam_server, alpha, tau0, m) if exact_model else None
    ci = f"95% CI, batch means, {args.requests} requests"
    print(f"simulated E[W]   {mean * 1e3:.6g} ms +- {half * 1e3:.3g} ms ({ci})")
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


def _model_timing(
    args: argparse.Namespace, platform: str, max_batch: int
) -> tuple[float, list[str], Callable[[int], float]]:
    """Per-server arrival rate, servers and tau[b] of ``serve --model``; prints the engine's table.

    ``--rho`` is the load relative to a server's capacity, max over b <= M of b / tau[b].
    """
    table, servers = _batch_times(args, platform, max_batch)
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


def _batch_times(args: argparse.Namespace, platform: str, max_batch: int) -> tuple[dict[int, float], list[str]]:
    """tau[b], b = 1..max_batch, of ``--model`` on the compiled ``platform``; the servers (each group's first XPU)."""
    spec = load_model(args.model)
    if args.context is None:
        raise HcsimError("--model needs --context (the prompt length of a request)")
    xpus = platform_xpus(platform)
    tp = check_inference(spec, len(xpus), batch=max_batch, context=args.context, tp=args.tp)
    groups = [xpus[i : i + tp] for i in range(0, len(xpus), tp)]
    table = batch_times(
        spec,
        platform,
        groups[0],
        max_batch=max_batch,
        context=args.context,
        output_tokens=args.output_tokens,
        coherent=args.system == "cxl",
    )
    return table, [g[0] for g in groups]


def _check_model_options(args: argparse.Namespace) -> None:
    """Options that must come with ``serve --model``."""
    if args.system is None:
        raise HcsimError("--model needs --system (the platform the model is served on, e.g. --system cxl --xpus 8)")
    if args.max_batch is None:
        raise HcsimError("--model needs --max-batch (the engine computes tau[b] for b = 1..max-batch)")
    if not 1 <= args.max_batch <= 256:
        raise HcsimError(f"--max-batch {args.max_batch} is invalid with --model (valid: 1..256)")
    if args.output_tokens < 0:
        raise HcsimError(f"--output-tokens {args.output_tokens} is invalid (valid: an integer >= 0)")
    if args.servers != 1:
        raise HcsimError("--servers does not apply to --model (valid: the servers are the --xpus/--tp TP groups)")
