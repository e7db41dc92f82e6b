"""The options of ``hcsim serve`` (:func:`add_serve`), beside :mod:`hcsim.cli.parsers` for size.

The same rule as there: only the standard library and :mod:`hcsim.cli.flags`, so ``hcsim serve
--help`` and usage errors answer without loading the simulator. What the command does with its
options: :mod:`hcsim.cli.serve` (Inoue's dynamic batching) and :mod:`hcsim.cli.serve_continuous`
(continuous batching of a transformer). :func:`hcsim.cli.parsers.add_serve` calls :func:`add_serve` with
the systems ``--system`` takes (so the imports run one way, parsers -> here).
"""

from __future__ import annotations

import argparse

from hcsim.cli.flags import DeprecatedAlias, int_or_text, rate_list_type

__all__ = ["add_serve"]

Subparsers = argparse._SubParsersAction


def add_serve(sub: Subparsers, systems: tuple[str, ...]) -> argparse.ArgumentParser:
    """``hcsim serve`` (alias ``queue``, its former name)."""
    qu = sub.add_parser(
        "serve",
        aliases=["queue"],
        help="inference serving: dynamic batching vs its exact latency, or continuous batching of an LLM",
    )
    gpu = qu.add_mutually_exclusive_group(required=True)
    gpu.add_argument("--gpu", choices=("v100", "p4"), help="ResNet-50 timings fitted from NVIDIA's table")
    gpu.add_argument("--alpha", help="time per job in a batch, e.g. 2ms (bare number: seconds; with --tau0)")
    _add_serve_model_options(qu, gpu, systems)  # --model --system --xpus --tp --context
    qu.add_argument("--tau0", help="fixed time per batch, e.g. 5ms (bare number: seconds; with --alpha)")
    load = qu.add_mutually_exclusive_group()  # one is required, but continuous --trace may replay without --rate
    load.add_argument(
        "--rho", type=float, help="load per server, lambda * alpha (dimensionless, < 1; --model: lambda / capacity)"
    )
    load.add_argument(
        "--rate",
        type=rate_list_type("--rate", per="s"),
        help="total arrival rate of requests, e.g. 6000/s or 360000/min (bare number: per second); continuous: "
        "a list 5,10,20/s sweeps the rates",
    )
    qu.add_argument("--max-batch", type=int, help="largest batch, in requests (default: unlimited)")
    qu.add_argument(
        "--max-delay",
        help="an idle server waits for a full batch up to this long after its oldest job arrived, e.g. 5ms "
        "(bare number: seconds; default: no wait; no exact E[W] then)",
    )
    qu.add_argument("--requests", type=int, default=1_000_000, help="requests to simulate (a count; default 1e6)")
    qu.add_argument("--jobs", dest="requests", type=int, action=DeprecatedAlias, new="--requests")
    qu.add_argument("--seed", type=int, default=0, help="random seed of arrivals and dispatch (default 0)")
    qu.add_argument("--servers", type=int, default=1, help="servers behind the dispatcher (a count; default 1)")
    qu.add_argument("--dispatch", choices=("random", "round_robin", "jsq"), default="random")
    qu.add_argument("--beta", type=float, help="with --alpha: energy per request in a batch, in joules, for eta")
    qu.add_argument("--c0", type=float, help="with --alpha: fixed energy per batch, in joules, for eta")
    qu.add_argument("--progress", action="store_true", help="show a progress bar on stderr (default: on a terminal)")
    qu.add_argument("--out", help="directory for jobs.csv, batches.csv, batch_sizes.csv/.png, summary.json")
    _add_serve_continuous_options(qu)
    return qu


def _add_serve_continuous_options(s: argparse.ArgumentParser) -> None:
    """The options of ``hcsim serve --scheduler continuous`` (docs/serving.md, "Continuous batching")."""
    s.add_argument(
        "--scheduler",
        choices=("dynamic", "continuous"),
        default="dynamic",
        help="dynamic: Inoue's dynamic batching (default); continuous: iteration-level batching of --model",
    )
    g = s.add_argument_group("continuous batching (--scheduler continuous --model NAME; docs/serving.md)")
    g.add_argument("--prompt-tokens", help="prompt length: N tokens, or LOW:HIGH uniform (default 512)")
    g.add_argument(
        "--kv-cache",
        help="KV tiers: hbm (default), hbm,cxl (coherent, read in place), hbm,host (copied), hbm,cxl,host (both)",
    )
    g.add_argument("--kv-hbm", help="HBM for KV per rank, e.g. 1GiB (default: the XPU's memory minus weights)")
    g.add_argument(
        "--kv-tier-capacity",
        help="KV capacity per rank of the tier(s) after HBM, e.g. 256GiB or 64GiB,inf (default: the platform's)",
    )
    g.add_argument("--block-tokens", type=int, help="tokens per KV block (a count; default 16)")
    g.add_argument(
        "--max-tokens", type=int, help="token budget of an iteration, a count: chunked prefill (default 2048)"
    )
    g.add_argument(
        "--kv-bucket",
        type=int,
        help="round decode KV totals up to a count of tokens for the memo (default 256; 1 exact)",
    )
    g.add_argument(
        "--exact-iterations",
        action="store_true",
        help="simulate every block and ring flow of each iteration shape (default: 3 blocks, the rest repeated; "
        "memoized ring steps; equal within 1e-12, docs/serving.md)",
    )
    g.add_argument(
        "--calibration",
        help="time every operator with a calibration: dgx-h100, dgx-a100 or a YAML (docs/calibration.md; "
        "default ideal: the roofline); --kv-bucket is then 1",
    )
    g.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    g.add_argument("--router", help="replicas' router: round_robin (default) or least_tokens (least outstanding)")
    g.add_argument("--preemption", help="when the KV cache is full: recompute (default) or swap (to host DRAM)")
    g.add_argument(
        "--disaggregate",
        help="prefill=N,decode=M: prefill on the first N XPUs, decode on the next M (default: both on every replica)",
    )
    g.add_argument(
        "--shared-prefix",
        help="TOKENS[:GROUPS]: prompts start with one of GROUPS shared prefixes (request i: i mod GROUPS), cached",
    )
    t = s.add_argument_group("continuous batching: traces, SLOs and outputs over time (docs/serving.md)")
    t.add_argument(
        "--arrival-cv",
        type=float,
        help="coefficient of variation of the gaps between arrivals: 1 Poisson (default), > 1 bursty (gamma), 0 even",
    )
    t.add_argument("--trace", help="replay a request trace (Azure LLM inference CSV, BurstGPT CSV)")
    t.add_argument("--trace-format", help="the trace's format: azure or burstgpt (default: from its header)")
    t.add_argument("--slo", help="service levels, e.g. ttft=0.5s,tpot=50ms: SLO attainment and goodput")
    t.add_argument("--slo-attainment", type=float, help="fraction of requests a rate must serve within --slo (0.9)")
    t.add_argument("--timeline", action="store_true", help="with --out: series.csv (KV, tier traffic), iterations.json")
    t.add_argument("--series-interval", help="bin of series.csv, e.g. 100ms (default 1s)")
    t.add_argument("--plots", action="store_true", help="with --out: latency_cdf.png; a sweep: goodput_vs_rate.png")


def _add_serve_model_options(
    s: argparse.ArgumentParser, timing: argparse._MutuallyExclusiveGroup, systems: tuple[str, ...]
) -> None:
    """The model options of ``hcsim serve``; ``--model`` joins the batch-time choice (``timing``)."""
    timing.add_argument("--model", help="serve this model (preset or config.json) on --system: engine-computed tau[b]")
    g = s.add_argument_group("serving a transformer (with --model; docs/models.md)")
    g.add_argument("--system", choices=systems)
    g.add_argument("--xpus", type=int, help="XPUs of --system")
    g.add_argument("--mix", help="XPU type(s) of --system, e.g. H100")
    g.add_argument(
        "--servers-per-rack",
        type=int,
        help="servers of 8 XPUs per rack of noncoherent/cxl (default 16); --mix alternates by rack",
    )
    g.add_argument("--tp", type=int, help="tensor-parallel degree: a server is a group of tp XPUs (default all)")
    g.add_argument("--context", type=int, help="prompt length of a request (tokens)")
    g.add_argument(
        "--output-tokens",
        type=int_or_text,
        help="tokens a request generates (default 128); continuous: also LOW:HIGH, zipf:..., lognormal:...",
    )
    for hidden in ("--cxl-bandwidth", "--cxl-latency", "--link-bandwidth", "--link-latency"):
        g.add_argument(hidden, help=argparse.SUPPRESS)
    g.add_argument("--hosts-per-leaf", type=int, help=argparse.SUPPRESS)
    g.add_argument("--spines", type=int, help=argparse.SUPPRESS)
