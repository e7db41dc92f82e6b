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

from hcsim.cli.platform import build_topology
from hcsim.engine.simulator import platform_xpus
from hcsim.errors import HcsimError
from hcsim.files import anonymous_file, check_outputs
from hcsim.frontends.serving import continuous as fc
from hcsim.frontends.serving.iteration import IterationTimer, kv_bytes_per_token
from hcsim.outputs import json_text
from hcsim.platform import compile_platform
from hcsim.units import parse_bytes
from hcsim.workload.models.inference import check_inference
from hcsim.workload.models.ops import block_operators, embedding_operators, head_operators
from hcsim.workload.models.spec import load_model

__all__ = ["MAX_REQUESTS", "MAX_TOKENS", "kv_capacity", "main"]

_TIERS = {"hbm": (False, None), "hbm,cxl": (True, "cxl_memory"), "hbm,host": (False, "host_memory")}
_DYNAMIC_ONLY = ("gpu", "alpha", "tau0", "rho", "max_delay", "beta", "c0", "context")
MAX_REQUESTS = 10_000_000
"""Most ``--requests``: a run keeps about 200 bytes per request."""
MAX_TOKENS = 2**20
"""Most tokens of a prompt, an output, a block, a budget or a bucket: 1Mi, the longest context of published models."""


def _tiers(value: str) -> tuple[str, ...]:
    key = value.replace(" ", "").lower()
    if key not in _TIERS:
        raise HcsimError(f"--kv-cache {value!r} is invalid (valid: hbm, hbm,cxl (coherent, read in place), "
                         "hbm,host (non-coherent, copied in))")  # fmt: skip
    return tuple(key.split(","))


def _lengths(value: str | int, flag: str) -> int | tuple[int, int]:
    text = str(value).strip()
    try:
        if ":" in text:
            low, high = (int(v) for v in text.split(":", 1))
            if not 1 <= low <= high <= MAX_TOKENS:
                raise ValueError
            return (low, high) if low != high else low
        n = int(text)
        if not 1 <= n <= MAX_TOKENS:
            raise ValueError
        return n
    except ValueError:
        raise HcsimError(f"{flag} {text!r} is invalid (valid: an integer from 1 to {MAX_TOKENS}, or LOW:HIGH, "
                         "1 <= LOW <= HIGH, uniform)") from None  # fmt: skip


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
    hbm: float | None = None, tier_capacity: float | None = None,
) -> tuple[int, int, float, float]:  # fmt: skip
    """(HBM blocks, second-tier blocks or -1 for unbounded, FLOP/s, memory bandwidth) of one TP group.

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
    hbm_blocks, remote_blocks, rate, bandwidth = math.inf, math.inf, math.inf, math.inf
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
    remote = 0 if len(tiers) == 1 else (-1 if math.isinf(remote_blocks) else int(remote_blocks))
    if hbm_blocks < 1 and remote == 0:
        raise HcsimError(f"--kv-hbm holds no KV block of {per_block / 2**20:.3g} MiB (valid: at least one block)")
    return int(hbm_blocks), remote, rate, bandwidth


def _check(args: argparse.Namespace) -> None:
    stray = [f"--{k.replace('_', '-')}" for k in _DYNAMIC_ONLY if getattr(args, k, None) is not None]
    if stray:
        raise HcsimError(f"{stray[0]} applies to --scheduler dynamic only (valid: drop it with continuous)")
    if not args.model:
        raise HcsimError("--scheduler continuous needs --model (a preset such as llama3-8b, or a config.json)")
    if args.system is None:
        raise HcsimError("--scheduler continuous needs --system (e.g. --system cxl --xpus 8)")
    if args.rate is None or not (math.isfinite(args.rate) and args.rate > 0):
        raise HcsimError(f"--rate {args.rate!r} is invalid (valid: a finite rate > 0, e.g. 20/s)")
    if not 1 <= args.requests <= MAX_REQUESTS:
        raise HcsimError(f"--requests {args.requests} is invalid (valid: an integer from 1 to {MAX_REQUESTS:,})")
    if not 0 <= args.seed <= 2**63 - 1:
        raise HcsimError(f"--seed {args.seed} is invalid (valid: an integer from 0 to {2**63 - 1})")
    if args.servers != 1:
        raise HcsimError("--servers does not apply to --scheduler continuous (valid: replicas are --xpus/--tp)")
    if args.tp is not None and not 1 <= args.tp <= 4096:
        raise HcsimError(f"--tp {args.tp} is invalid (valid: an integer from 1 to 4096, XPUs per TP group)")
    model = {"--model": args.model} if os.path.isfile(args.model) else {}
    check_outputs(dirs={"--out": args.out}, inputs=model)
    if args.out is not None:
        names = ("requests.csv", "summary.json")
        check_outputs(files={f"--out ({n})": os.path.join(args.out, n) for n in names}, inputs=model)


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim serve --scheduler continuous``; the exit status."""
    _check(args)
    tiers = _tiers(args.kv_cache or "hbm")
    prompt = _lengths(args.prompt_tokens if args.prompt_tokens is not None else 512, "--prompt-tokens")
    output = _lengths(args.output_tokens, "--output-tokens")
    block = _positive(args.block_tokens, "--block-tokens", 16)
    budget = _positive(args.max_tokens, "--max-tokens", 2048)
    seqs = _positive(args.max_batch, "--max-batch", 256)
    bucket = _positive(args.kv_bucket, "--kv-bucket", 256)
    hbm = None if args.kv_hbm is None else parse_bytes(args.kv_hbm, "--kv-hbm")
    cap = None if args.kv_tier_capacity is None else parse_bytes(args.kv_tier_capacity, "--kv-tier-capacity")
    if hbm is not None and not (math.isfinite(hbm) and hbm >= 0):
        raise HcsimError(f"--kv-hbm {args.kv_hbm!r} is invalid (valid: a finite size >= 0, e.g. 1GiB)")
    if cap is not None and not cap >= 0:
        raise HcsimError(f"--kv-tier-capacity {args.kv_tier_capacity!r} is invalid (valid: a size >= 0 or inf)")
    if cap is not None and len(tiers) == 1:
        raise HcsimError("--kv-tier-capacity applies to a second tier (valid: --kv-cache hbm,cxl or hbm,host)")
    coherent = _TIERS[",".join(tiers)][0]
    if tiers[-1] == "cxl" and args.system != "cxl":
        raise HcsimError(f"--kv-cache hbm,cxl needs a coherent CXL system (valid: --system cxl; '{args.system}' "
                         "can use hbm,host)")  # fmt: skip
    spec = load_model(args.model)
    if spec.sliding_window:
        raise HcsimError(f"{spec.name} has sliding-window attention, which continuous batching does not model yet "
                         "(valid: a model without one)")  # fmt: skip
    requests = fc.synthetic_requests(args.requests, args.rate, prompt, output, args.seed)
    topo = build_topology(args)
    with anonymous_file("platform.xml") as (f, platform):  # on no disk: a SIGKILL leaves nothing behind
        compile_platform(topo, f)
        xpus = platform_xpus(platform)
        tp = check_inference(spec, len(xpus), batch=1, context=1, tp=args.tp)
        groups = [xpus[i : i + tp] for i in range(0, len(xpus), tp)]
        hbm_blocks, remote, rate, bandwidth = kv_capacity(spec, platform, groups[0], tiers, block, hbm, cap)
        if remote < 0:  # an unbounded tier: as many blocks as every request could hold at once
            remote = sum(-(-(r.prompt + r.output) // block) for r in requests)
        timers = [IterationTimer(spec, platform, g, coherent=coherent, kv_bucket=bucket) for g in groups]
        result = fc.serve_continuous(timers, requests, (hbm_blocks, remote), block_tokens=block, max_tokens=budget,
                                     max_seqs=seqs, bucket_bound_s=timers[0].bucket_bound(rate, bandwidth),
                                     tiers=tiers)  # fmt: skip
    result.extra.update(model=spec.name, system=args.system, xpus=len(xpus), tp=tp, replicas=len(groups),
                        kv_cache=",".join(tiers), block_tokens=block, max_tokens=budget, max_seqs=seqs,
                        kv_bucket_tokens=bucket, rate_per_s=args.rate, seed=args.seed)  # fmt: skip
    if args.out:
        fc.write_continuous(result, args.out)
    summary = result.summary()
    if args.json:
        sys.stdout.write(json_text(summary))
        return 0
    for key in sorted(summary):
        value = summary[key]
        print(f"{key:30s} {value:.6g}" if isinstance(value, float) else f"{key:30s} {value}")
    return 0
