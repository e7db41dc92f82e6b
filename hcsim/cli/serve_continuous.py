"""``hcsim serve --scheduler continuous``: continuous batching of an LLM over a paged KV cache.

Builds ``--system`` (``--xpus``), splits it into TP groups of ``--tp`` XPUs (replicas,
routed round robin), sizes the KV cache per replica (HBM: each rank's memory minus its
weights, or ``--kv-hbm``; the second tier of ``--kv-cache hbm,cxl|hbm,host``:
``--kv-tier-capacity`` per rank, else the platform's memory node's capacity), draws
``--requests`` Poisson arrivals at ``--rate`` and serves them with
:func:`hcsim.frontends.serving.continuous.serve_continuous`, every iteration timed in
SimGrid. Prints the metrics (``--json``: one JSON object); ``--out DIR`` writes
requests.csv and summary.json. Every flag is checked before anything runs: one line, exit 2.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable

from hcsim.cli.platform import build_topology
from hcsim.engine.simulator import platform_xpus
from hcsim.errors import HcsimError
from hcsim.files import anonymous_file, check_outputs
from hcsim.frontends.serving import continuous as fc
from hcsim.frontends.serving import traces as ft
from hcsim.frontends.serving.disaggregated import serve_disaggregated
from hcsim.frontends.serving.iteration import IterationTimer, kv_bytes_per_token
from hcsim.frontends.serving.router import ROUTERS
from hcsim.frontends.serving.sharing import shared_links
from hcsim.frontends.serving.slo import max_goodput_rate, parse_slo, slo_summary
from hcsim.frontends.serving.transfers import KVTransferTimer, SwapTimer
from hcsim.outputs import json_text
from hcsim.platform import compile_platform
from hcsim.progress import progress_bar
from hcsim.units import parse_bytes, parse_time
from hcsim.workload.models.inference import check_inference
from hcsim.workload.models.ops import block_operators, embedding_operators, head_operators
from hcsim.workload.models.spec import load_model

__all__ = ["MAX_REQUESTS", "MAX_TOKENS", "engine", "kv_capacity", "main", "refuse_engine_flags"]

_TIERS = {"hbm": (False, None), "hbm,cxl": (True, "cxl_memory"), "hbm,host": (False, "host_memory"),
          "hbm,cxl,host": (True, "cxl_memory")}  # fmt: skip
_ENGINE_FLAGS = ("router", "preemption", "disaggregate", "shared_prefix")
_DYNAMIC_ONLY = ("gpu", "alpha", "tau0", "rho", "max_delay", "beta", "c0", "context")
MAX_REQUESTS = 10_000_000
"""Most ``--requests``: a run keeps about 200 bytes per request."""
MAX_TOKENS = 2**20
"""Most tokens of a prompt, an output, a block, a budget or a bucket: 1Mi, the longest context of published models."""


def _tiers(value: str) -> tuple[str, ...]:
    key = value.replace(" ", "").lower()
    if key not in _TIERS:
        raise HcsimError(f"--kv-cache {value!r} is invalid (valid: hbm, hbm,cxl (coherent, read in place), "
                         "hbm,host (non-coherent, copied in), hbm,cxl,host (both, in that order))")  # fmt: skip
    return tuple(key.split(","))


def _positive(value: int | None, flag: str, default: int) -> int:
    if value is None:
        return default
    if not 1 <= value <= MAX_TOKENS:
        raise HcsimError(f"{flag} {value} is invalid (valid: an integer from 1 to {MAX_TOKENS})")
    return value


def _props(platform: str) -> dict[str, dict[str, str]]:
    """Every host's properties, read from the compiled platform XML."""
    out = {}
    for host in ET.parse(platform).iter("host"):
        out[host.get("id")] = {p.get("id"): p.get("value") for p in host.iter("prop")}
    return out


def kv_capacity(
    spec: object, platform: str, group: list[str], tiers: tuple[str, ...], block_tokens: int,
    hbm: float | None = None, tier_capacity: float | None = None, host_capacity: float | None = None,
) -> tuple[tuple[int, ...], float, float]:  # fmt: skip
    """((HBM blocks, second-tier blocks[, third-tier blocks]), FLOP/s, memory bandwidth) of one TP group.

    A tier's blocks: 0 when absent, -1 when unbounded.
    HBM per rank: ``hbm`` or the XPU's memory minus the rank's weights (embedding, blocks,
    head); the smallest rank of the group decides. One line when the weights do not fit.
    """
    tp = len(group)
    b = spec.bytes_per_value
    weights = sum(op.params for op in embedding_operators(spec, 1, tp=tp, phase="prefill")) * b
    weights += sum(op.weight_bytes for i in range(spec.layers)
                   for op in block_operators(spec, 1, tp=tp, layer=i, context=1, phase="prefill"))  # fmt: skip
    if not spec.tied_embeddings:
        weights += sum(op.weight_bytes for op in head_operators(spec, 1, tp=tp, phase="prefill"))
    per_block = kv_bytes_per_token(spec, tp) * block_tokens
    props = _props(platform)
    hbm_blocks, remote_blocks, host_blocks, rate, bandwidth = math.inf, math.inf, math.inf, math.inf, math.inf
    for x in group:
        p = props[x]
        memory = float(p.get("memory", "inf"))
        rate = min(rate, float(p.get(f"{spec.precision}_flops", p.get("fp32_flops", "inf"))))
        bandwidth = min(bandwidth, float(p.get("memory_bandwidth", "inf")))
        free = (memory - weights) if hbm is None else hbm
        if hbm is None and free < per_block:
            gib = f"{weights / 2**30:.3g} GiB per rank at tp {tp}"
            raise HcsimError(f"{spec.name}'s weights ({gib}) leave no room for a KV block in the "
                             f"{memory / 2**30:.3g} GiB of XPU '{x}' (valid: a larger --tp)")  # fmt: skip
        hbm_blocks = min(hbm_blocks, int(free // per_block))
        if len(tiers) > 1:
            node = p.get(_TIERS[",".join(tiers)][1])
            if node is None:
                raise HcsimError(f"--kv-cache {','.join(tiers)}: XPU '{x}' has no {tiers[1]} memory "
                                 "(valid: --kv-cache hbm, or --system cxl for a CXL tier)")  # fmt: skip
            cap = tier_capacity if tier_capacity is not None else float(props[node].get("capacity", "inf"))
            remote_blocks = min(remote_blocks, cap // per_block if math.isfinite(cap) else math.inf)
        if len(tiers) > 2:
            node = p.get("host_memory")
            if node is None:
                raise HcsimError(f"--kv-cache {','.join(tiers)}: XPU '{x}' has no host memory "
                                 "(valid: --kv-cache hbm,cxl)")  # fmt: skip
            cap = host_capacity if host_capacity is not None else float(props[node].get("capacity", "inf"))
            host_blocks = min(host_blocks, cap // per_block if math.isfinite(cap) else math.inf)
    remote = 0 if len(tiers) == 1 else (-1 if math.isinf(remote_blocks) else int(remote_blocks))
    blocks = (int(hbm_blocks), remote)
    if len(tiers) > 2:
        blocks += (-1 if math.isinf(host_blocks) else int(host_blocks),)
    if hbm_blocks < 1 and not any(blocks[1:]):
        raise HcsimError(f"--kv-hbm holds no KV block of {per_block / 2**20:.3g} MiB (valid: at least one block)")
    return blocks, rate, bandwidth


def _check(args: argparse.Namespace) -> None:
    stray = [f"--{k.replace('_', '-')}" for k in _DYNAMIC_ONLY if getattr(args, k, None) is not None]
    if stray:
        raise HcsimError(f"{stray[0]} applies to --scheduler dynamic only (valid: drop it with continuous)")
    if not args.model:
        raise HcsimError("--scheduler continuous needs --model (a preset such as llama3-8b, or a config.json)")
    if args.system is None:
        raise HcsimError("--scheduler continuous needs --system (e.g. --system cxl --xpus 8)")
    rates = args.rate if isinstance(args.rate, tuple) else (args.rate,)
    if args.rate is None and args.trace is None:
        raise HcsimError("--rate None is invalid (valid: a finite rate > 0, e.g. 20/s; or --trace FILE)")
    for r in rates if args.rate is not None else ():
        if not (math.isfinite(r) and r > 0):
            raise HcsimError(f"--rate {r!r} is invalid (valid: a finite rate > 0, e.g. 20/s)")
    if len(set(rates)) != len(rates):
        raise HcsimError("--rate lists a rate twice (valid: distinct rates, e.g. 5,10,20/s)")
    if not 1 <= args.requests <= MAX_REQUESTS:
        raise HcsimError(f"--requests {args.requests} is invalid (valid: an integer from 1 to {MAX_REQUESTS:,})")
    if not 0 <= args.seed <= 2**63 - 1:
        raise HcsimError(f"--seed {args.seed} is invalid (valid: an integer from 0 to {2**63 - 1})")
    if args.servers != 1:
        raise HcsimError("--servers does not apply to --scheduler continuous (valid: replicas are --xpus/--tp)")
    if args.tp is not None and not 1 <= args.tp <= 4096:
        raise HcsimError(f"--tp {args.tp} is invalid (valid: an integer from 1 to 4096, XPUs per TP group)")
    if args.trace is not None:
        for flag, v in (("--prompt-tokens", args.prompt_tokens), ("--output-tokens", args.output_tokens),
                        ("--arrival-cv", args.arrival_cv)):  # fmt: skip
            if v is not None:
                raise HcsimError(f"{flag} applies to synthetic requests (valid: drop it with --trace, whose rows "
                                 "give the lengths and times)")  # fmt: skip
    elif args.trace_format is not None:
        raise HcsimError("--trace-format applies with --trace (valid: add --trace FILE, or drop it)")
    if args.slo is None and args.slo_attainment is not None:
        raise HcsimError("--slo-attainment applies with --slo (valid: add --slo ttft=...,tpot=..., or drop it)")
    if args.series_interval is not None and not args.timeline:
        raise HcsimError("--series-interval applies with --timeline (valid: add --timeline, or drop it)")
    for flag, on in (("--timeline", args.timeline), ("--plots", args.plots)):
        if on and args.out is None:
            raise HcsimError(f"{flag} writes files into --out (valid: add --out DIR)")
    inputs = {"--model": args.model} if os.path.isfile(args.model) else {}
    if args.trace is not None:
        inputs["--trace"] = args.trace
    check_outputs(dirs={"--out": args.out}, inputs=inputs)
    if args.out is not None:
        check_outputs(files={f"--out ({n})": os.path.join(args.out, n) for n in _out_names(args, rates)},
                      inputs=inputs)  # fmt: skip


def _out_names(args: argparse.Namespace, rates: tuple) -> list[str]:
    """Every file ``--out`` gets: per run requests.csv, summary.json (+ timeline, plot); a sweep's table."""
    run = ["requests.csv", "summary.json"]
    if args.timeline:
        run += ["series.csv", "iterations.json"]
    if args.plots:
        run.append("latency_cdf.png")
    if len(rates) == 1:
        return run
    names = [os.path.join(_point_dir(r), n) for r in rates for n in run]
    return [*names, "sweep.csv", "summary.json", *(["goodput_vs_rate.png"] if args.plots else [])]


def _point_dir(rate: float) -> str:
    return f"rate_{rate:g}"


class _ProgressLog(list):
    """The iteration log, advancing a progress bar by simulated time (seconds up to the last arrival, per replica)."""

    def __init__(self, bar: object, horizon: float) -> None:
        super().__init__()
        self.bar, self.horizon, self.done = bar, horizon, {}

    def append(self, entry: tuple) -> None:  # type: ignore[override]
        super().append(entry)
        replica, start, dt, _, m = entry
        now = min(start + dt * m, self.horizon)
        step = now - self.done.get(replica, 0.0)
        if step > 0:
            self.done[replica] = now
            self.bar.update(step)


def _requests(args: argparse.Namespace, rate: float | None, trace: list | None) -> list:
    from hcsim.frontends.serving import traces as ft

    if trace is not None:
        return trace if rate is None else ft.rescale(trace, rate)
    prompt = ft.parse_lengths(args.prompt_tokens if args.prompt_tokens is not None else 512, "--prompt-tokens")
    output = ft.parse_lengths(args.output_tokens if args.output_tokens is not None else 128, "--output-tokens")
    cv = 1.0 if args.arrival_cv is None else args.arrival_cv
    return ft.synthetic_requests(args.requests, rate, prompt, output, args.seed, cv)


def _capacities(value: str) -> tuple[float, ...]:
    return tuple(parse_bytes(v.strip(), "--kv-tier-capacity") for v in str(value).split(","))


def refuse_engine_flags(args: argparse.Namespace) -> None:
    """The engine's flags of ``--scheduler continuous`` refused in dynamic mode, in one line."""
    for key in _ENGINE_FLAGS:
        if getattr(args, key, None) is not None:
            flag = f"--{key.replace('_', '-')}"
            raise HcsimError(f"{flag} applies to --scheduler continuous only (valid: add it, or drop {flag})")


def _choice(value: str | None, flag: str, valid: tuple[str, ...]) -> str:
    if value is None:
        return valid[0]
    if value not in valid:
        raise HcsimError(f"{flag} {value!r} is invalid (valid: {', '.join(valid)})")
    return value


def _split(value: str | None, xpus: int, tp: int) -> tuple[int, int] | None:
    """``--disaggregate prefill=N,decode=M``: (N, M) XPUs, checked against ``--xpus`` and ``--tp``."""
    if value is None:
        return None
    bad = HcsimError(f"--disaggregate {value!r} is invalid (valid: prefill=N,decode=M, XPU counts, multiples of "
                     f"--tp {tp}, N + M = --xpus {xpus}; e.g. prefill={tp},decode={max(tp, xpus - tp)})")  # fmt: skip
    parts = dict(p.split("=", 1) for p in value.replace(" ", "").split(",") if "=" in p)
    if set(parts) != {"prefill", "decode"} or value.count("=") != 2:
        raise bad
    try:
        n, m = int(parts["prefill"]), int(parts["decode"])
    except ValueError:
        raise bad from None
    if n < tp or m < tp or n % tp or m % tp or n + m != xpus:
        raise bad
    return n, m


def _calibration(args: argparse.Namespace) -> object:
    """``--calibration``: None for ideal (the default: the roofline), else the calibration."""
    from hcsim.calibration import load_calibration

    return load_calibration(args.calibration or "ideal")


def _check_calibrated(args: argparse.Namespace, calib: object, topo: object) -> None:
    """A calibration times its own GPU: every XPU of the system must be it (the network stays as it is)."""
    gpu = calib.device_name.split()[0]  # type: ignore[attr-defined]  # "H100 SXM5 80GB" -> "H100"
    others = sorted({str(topo.nodes[x].get("device")) for x in topo.xpus()} - {gpu, f"{gpu}-SXM"})  # type: ignore
    if others:
        raise HcsimError(f"--calibration {args.calibration} times {gpu} XPUs; --system {args.system} also has "
                         f"{', '.join(others)} (valid: {gpu} XPUs only, or --calibration ideal)")  # fmt: skip


def _with_prefix(args: argparse.Namespace, requests: list) -> list:
    """``--shared-prefix TOKENS[:GROUPS]`` applied to the requests."""
    from hcsim.frontends.serving.kvcache import shared_prefix

    if args.shared_prefix is None:
        return requests
    text = str(args.shared_prefix).strip()
    try:
        tokens, _, groups = text.partition(":")
        t, g = int(tokens), int(groups or 1)
        if not (1 <= t <= MAX_TOKENS and 1 <= g <= MAX_REQUESTS):
            raise ValueError
    except ValueError:
        raise HcsimError(f"--shared-prefix {text!r} is invalid (valid: TOKENS from 1 to {MAX_TOKENS}, or "
                         "TOKENS:GROUPS with GROUPS >= 1 prefixes)") from None  # fmt: skip
    return shared_prefix(requests, t, g)


def engine(
    args: argparse.Namespace, spec: object, platform: str, topo: object, xpus: list[str], tp: int,
    tiers: tuple[str, ...], block: int, budget: int, seqs: int, bucket: int, hbm: float | None, cap: tuple | None,
    calibration: object = None,
) -> tuple[Callable[..., object], list[list[str]]]:  # fmt: skip
    """The serving engine on the compiled platform, set up once: ``(run, groups)``.

    ``run(requests, log=None)`` serves a list of requests (colocated or disaggregated,
    routed by ``--router``, preempting by ``--preemption``) and returns the result; its
    timers are shared across calls (a rate sweep: ``simulations`` counts since the start).
    Checks ``--router``, ``--preemption`` and ``--disaggregate`` in one line each.
    """
    router = _choice(args.router, "--router", ROUTERS)
    swap = _choice(args.preemption, "--preemption", ("recompute", "swap")) == "swap"
    split = _split(args.disaggregate, len(xpus), tp)
    coherent = _TIERS[",".join(tiers)][0]
    fast = not getattr(args, "exact_iterations", False)
    caps = (None, None) if cap is None else (cap + (None,))[:2]
    sides = [xpus] if split is None else [xpus[: split[0]], xpus[split[0] :]]
    made = []
    for side in sides:
        groups = [side[i : i + tp] for i in range(0, len(side), tp)]
        blocks, rate, bandwidth = kv_capacity(spec, platform, groups[0], tiers, block, hbm, *caps)
        timers = [IterationTimer(spec, platform, g, coherent=coherent, kv_bucket=bucket, memoized_rings=fast,
                                 layer_repeat=fast, calibration=calibration) for g in groups]  # fmt: skip
        block_bytes = kv_bytes_per_token(spec, tp) * block
        swaps = [SwapTimer(platform, g, block_bytes) for g in groups] if swap else None
        made.append((groups, blocks, timers, swaps, timers[0].bucket_bound(rate, bandwidth)))
    every = [g for side in made for g in side[0]]
    shared = None
    if len(every) > 1:  # replicas run one by one: exact when their routes share no link
        memories = tuple(m for t, m in (("cxl", "cxl_memory"), ("host", "host_memory")) if t in tiers)
        memories += ("host_memory",) * (swap and "host_memory" not in memories)
        shared = len(shared_links(topo, every, memories))  # type: ignore[arg-type]
    transfer = KVTransferTimer(platform, kv_bytes_per_token(spec, tp)) if split else None
    kw = dict(block_tokens=block, max_tokens=budget, max_seqs=seqs, tiers=tiers, router=router)

    def finite(blocks: tuple[int, ...], requests: list) -> tuple[int, ...]:  # an unbounded tier: all at once
        every = sum(-(-(r.prompt + r.output) // block) for r in requests)
        return tuple(every if b < 0 else b for b in blocks)

    def run(requests: list, log: object = None) -> object:
        if split is None:
            _, blocks, timers, swaps, bound = made[0]
            result = fc.serve_continuous(timers, requests, finite(blocks, requests), bucket_bound_s=bound,
                                         swaps=swaps, log=log, **kw)  # type: ignore[arg-type]  # fmt: skip
        else:
            (_, pb, pt, ps, pbound), (_, db, dt, ds, dbound) = made
            result = serve_disaggregated(pt, dt, transfer, requests, finite(pb, requests), finite(db, requests),
                                         bucket_bound_s=max(pbound, dbound), swaps=None if ps is None else (ps, ds),
                                         log=log, **kw)  # type: ignore[arg-type]  # fmt: skip
            result.extra.update(disaggregate=f"prefill={split[0]},decode={split[1]}")
        if shared is not None:
            result.extra["replicas_shared_links"] = shared
        return result

    return run, every


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim serve --scheduler continuous``; the exit status."""
    _check(args)
    tiers = _tiers(args.kv_cache or "hbm")
    rates = args.rate if isinstance(args.rate, tuple) else (args.rate,)
    block = _positive(args.block_tokens, "--block-tokens", 16)
    budget = _positive(args.max_tokens, "--max-tokens", 2048)
    seqs = _positive(args.max_batch, "--max-batch", 256)
    calib = _calibration(args)
    bucket = _positive(args.kv_bucket, "--kv-bucket", 256 if calib is None else 1)
    hbm = None if args.kv_hbm is None else parse_bytes(args.kv_hbm, "--kv-hbm")
    cap = None if args.kv_tier_capacity is None else _capacities(args.kv_tier_capacity)
    if hbm is not None and not (math.isfinite(hbm) and hbm >= 0):
        raise HcsimError(f"--kv-hbm {args.kv_hbm!r} is invalid (valid: a finite size >= 0, e.g. 1GiB)")
    if cap is not None and not all(c >= 0 for c in cap):
        raise HcsimError(f"--kv-tier-capacity {args.kv_tier_capacity!r} is invalid (valid: a size >= 0 or inf)")
    if cap is not None and len(tiers) == 1:
        raise HcsimError("--kv-tier-capacity applies to a second tier (valid: --kv-cache hbm,cxl or hbm,host)")
    if cap is not None and len(cap) > len(tiers) - 1:
        raise HcsimError(f"--kv-tier-capacity {args.kv_tier_capacity!r} gives {len(cap)} capacities for "
                         f"{len(tiers) - 1} tier(s) beyond HBM (valid: one per tier, comma-separated)")  # fmt: skip
    slo = None if args.slo is None else parse_slo(args.slo, 0.9 if args.slo_attainment is None else args.slo_attainment)
    interval = 1.0
    if args.series_interval is not None:
        interval = parse_time(args.series_interval, "--series-interval")
        if not (math.isfinite(interval) and interval > 0):
            raise HcsimError(f"--series-interval {args.series_interval!r} is invalid (valid: a duration > 0)")
    if args.arrival_cv is not None and not (args.arrival_cv == 0 or 0.001 <= args.arrival_cv <= 100):
        raise HcsimError(f"--arrival-cv {args.arrival_cv!r} is invalid (valid: 0, or a number from 0.001 to 100; "
                         "1 is Poisson)")  # fmt: skip
    if "cxl" in tiers and args.system != "cxl":
        raise HcsimError(f"--kv-cache {','.join(tiers)} needs a coherent CXL system (valid: --system cxl; "
                         f"'{args.system}' can use hbm,host)")  # fmt: skip
    spec = load_model(args.model)
    if spec.sliding_window:
        raise HcsimError(f"{spec.name} has sliding-window attention, which continuous batching does not model yet "
                         "(valid: a model without one)")  # fmt: skip
    trace, source = None, None
    if args.trace is not None:
        source = ft.read_requests(args.trace, args.trace_format, progress=True if args.progress else None)
        trace = source.requests[: args.requests]
    # every length and rate checked before any run
    points = [(r, _with_prefix(args, _requests(args, r, trace))) for r in rates]
    topo = build_topology(args)
    if calib is not None:
        _check_calibrated(args, calib, topo)
    results = []
    with anonymous_file("platform.xml") as (f, platform):  # on no disk: a SIGKILL leaves nothing behind
        compile_platform(topo, f)
        xpus = platform_xpus(platform)
        tp = check_inference(spec, len(xpus), batch=1, context=1, tp=args.tp)
        run, groups = engine(args, spec, platform, topo, xpus, tp, tiers, block, budget, seqs, bucket, hbm, cap,
                             calib)  # fmt: skip
        show = True if args.progress else None
        before = 0
        for r, requests in points:
            horizon = max(q.arrival for q in requests)
            bar = progress_bar(horizon * len(groups), f"serving at {r:g}/s" if r else "serving", "sim s", show=show,
                               bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.4g}/{total:.4g} simulated s "
                               "[{elapsed}<{remaining}]")  # fmt: skip
            log = _ProgressLog(bar, horizon) if (args.timeline or not bar.disable) else None
            result = run(requests, log)
            bar.close()
            result.simulations -= before  # this point's own SimGrid runs (a sweep's timers are shared)
            before += result.simulations
            result.extra.update(model=spec.name, system=args.system, xpus=len(xpus), tp=tp, replicas=len(groups),
                                kv_cache=",".join(tiers), block_tokens=block, max_tokens=budget, max_seqs=seqs,
                                kv_bucket_tokens=bucket, rate_per_s=r, seed=args.seed)  # fmt: skip
            if args.arrival_cv is not None:
                result.extra["arrival_cv"] = args.arrival_cv
            if calib is not None:
                result.extra["calibration"] = calib.name
            if source is not None:
                result.extra.update(trace=os.path.basename(args.trace), trace_format=source.format,
                                    trace_skipped=len(source.skipped))  # fmt: skip
            results.append((r, result, log))
    summaries = []
    for _, result, _ in results:
        summary = result.summary()
        if slo is not None:
            summary.update(slo_summary(result, slo))
        summaries.append(summary)
    sweep = None
    if len(rates) > 1:
        sweep = {"points": summaries}
        if slo is not None:
            sweep.update(slo_ttft_s=slo.ttft, slo_tpot_s=slo.tpot, slo_attainment_target=slo.attainment,
                         max_goodput_rate_per_s=max_goodput_rate(list(rates),
                                                                 [s["slo_attainment"] for s in summaries],
                                                                 slo.attainment))  # fmt: skip
    if args.out:
        _write(args, results, summaries, sweep, slo, spec, tp, interval)
    if args.json:
        sys.stdout.write(json_text(sweep if sweep is not None else summaries[0]))
        return 0
    for summary in summaries:
        if len(summaries) > 1:
            print(f"# rate {summary['rate_per_s']:g}/s")
        for key in sorted(summary):
            value = summary[key]
            print(f"{key:30s} {value:.6g}" if isinstance(value, float) else f"{key:30s} {value}")
    if sweep is not None and "max_goodput_rate_per_s" in sweep:
        print(f"{'max_goodput_rate_per_s':30s} {sweep['max_goodput_rate_per_s']:.6g}")
    return 0


def _write(args: argparse.Namespace, results: list, summaries: list, sweep: dict | None, slo: object,
           spec: object, tp: int, interval: float) -> None:  # fmt: skip
    """Every file of ``--out``, after every run succeeded (nothing written on an error)."""
    from hcsim.frontends.serving import continuous as fc
    from hcsim.frontends.serving.iteration import kv_bytes_per_token
    from hcsim.frontends.serving.timeline import SERIES_COLUMNS, chrome_trace, series
    from hcsim.outputs import write_csv, write_json

    for (r, result, log), summary in zip(results, summaries, strict=True):
        where = args.out if sweep is None else os.path.join(args.out, _point_dir(r))
        fc.write_continuous(result, where)
        if slo is not None:
            write_json(os.path.join(where, "summary.json"), summary)
        if args.timeline:
            rows = series(log, int(summary["replicas"]), kv_bytes_per_token(spec, tp), tp, interval)
            write_csv(os.path.join(where, "series.csv"), rows, SERIES_COLUMNS, line_end="\n")
            chrome_trace(log).write(os.path.join(where, "iterations.json"))
        if args.plots:
            from hcsim.frontends.serving.plots import latency_cdf_figure

            curves = {f"{summary['model']} {summary['kv_cache']}": (result.ttft(), result.tpot(), result.e2e())}
            latency_cdf_figure(curves, os.path.join(where, "latency_cdf.png"), slo)
    if sweep is None:
        return
    columns = sorted({k for s in summaries for k in s})
    write_csv(os.path.join(args.out, "sweep.csv"), [{k: s.get(k) for k in columns} for s in summaries], columns,
              line_end="\n")  # fmt: skip
    write_json(os.path.join(args.out, "summary.json"), sweep)
    if args.plots:
        from hcsim.frontends.serving.plots import goodput_figure

        key = "goodput_requests_per_s" if slo is not None else "throughput_requests_per_s"
        rates = [s["rate_per_s"] for s in summaries]
        attain = [s.get("slo_attainment", 1.0) for s in summaries]
        title = slo.text() if slo is not None else ""
        goodput_figure({str(summaries[0]["kv_cache"]): (rates, [s[key] for s in summaries], attain)},
                       os.path.join(args.out, "goodput_vs_rate.png"), title)  # fmt: skip
