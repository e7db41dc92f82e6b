"""Command-line glue for transformer models: ``hcsim run --model`` and ``hcsim serve --model``.

``hcsim run --model NAME|config.json --inference --batch B --context L [--tp N]
[--phase decode|prefill]`` runs one inference step (:mod:`.inference`) on the platform;
``hcsim serve --model NAME --system cxl --xpus 8 --tp 8 --context 4096`` serves
requests with dynamic batching, each batch lasting the engine-computed time of its
prefill and decode steps (:mod:`.serving`). The options live here so ``hcsim run``'s
module keeps one small block for them. Only the standard library at the top: the
``hcsim`` command imports this module for ``--help``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from hcsim.errors import HcsimError

__all__ = ["add_run_options", "model_workload", "add_serve_options", "serve_batch_time"]


def add_run_options(r: argparse.ArgumentParser) -> None:
    """The model options of ``hcsim run``."""
    g = r.add_argument_group("transformer models (docs/models.md)")
    g.add_argument("--model", help="a preset (llama2-7b, llama3-70b, mixtral-8x7b, ...) or a HuggingFace config.json")
    g.add_argument("--inference", action="store_true", help="with --model: run one inference step")
    g.add_argument("--phase", choices=("decode", "prefill"), default="decode", help="inference step (default decode)")
    g.add_argument("--batch", type=int, default=1, help="with --inference: sequences in the batch (default 1)")
    g.add_argument("--context", type=int, help="with --inference: prompt length (prefill) or KV length (decode)")
    g.add_argument("--tp", type=int, help="with --inference: tensor-parallel degree (default: all XPUs)")


def model_workload(args: argparse.Namespace) -> Callable[..., object]:
    """The workload factory ``(ranks, group) -> Workload`` of ``hcsim run --model ...`` (checked now)."""
    from hcsim.workload.models.inference import check_inference, inference_step
    from hcsim.workload.models.spec import load_model

    if args.workload and args.model:
        raise HcsimError("give either --workload or --model, not both")
    if not args.model:
        raise HcsimError("a workload is required (valid: --workload NAME|FILE.json or --model NAME|config.json)")
    spec = load_model(args.model)
    if not args.inference:
        raise HcsimError(f"--model {args.model} needs --inference (one prefill or decode step)")
    if args.context is None:
        raise HcsimError("--inference needs --context (the prompt length for prefill, the KV length for decode)")
    check_inference(spec, args.tp or 1, batch=args.batch, context=args.context, tp=args.tp or 1)

    def workload(ranks: list[str], group: int | None = None):  # noqa: ANN202 - a Workload
        return inference_step(spec, ranks, batch=args.batch, context=args.context, phase=args.phase, tp=args.tp)

    return workload


def add_serve_options(s: argparse.ArgumentParser, timing: argparse._MutuallyExclusiveGroup) -> None:
    """The model options of ``hcsim serve``; ``--model`` joins the batch-time choice (``timing``)."""
    timing.add_argument("--model", help="serve this model (preset or config.json) on --system: engine-computed tau[b]")
    g = s.add_argument_group("serving a transformer (with --model; docs/models.md)")
    g.add_argument("--system", choices=("noncoherent", "cxl", "server", "ring", "star", "leafspine"))
    g.add_argument("--xpus", type=int, help="XPUs of --system")
    g.add_argument("--mix", help="XPU type(s) of --system, e.g. H100")
    g.add_argument("--tp", type=int, help="tensor-parallel degree: a server is a group of tp XPUs (default all)")
    g.add_argument("--context", type=int, help="prompt length of a request (tokens)")
    g.add_argument("--output-tokens", type=int, default=128, help="tokens a request generates (default 128)")
    for hidden in ("--cxl-bandwidth", "--cxl-latency", "--link-bandwidth", "--link-latency"):
        g.add_argument(hidden, help=argparse.SUPPRESS)
    g.add_argument("--hosts-per-leaf", type=int, default=16, help=argparse.SUPPRESS)
    g.add_argument("--spines", type=int, default=4, help=argparse.SUPPRESS)


def serve_batch_time(args: argparse.Namespace, platform: str, max_batch: int):  # noqa: ANN201
    """tau[b], b = 1..max_batch, of ``--model`` on the compiled ``platform``; the servers (each group's first XPU)."""
    from hcsim.engine.simulator import platform_xpus
    from hcsim.frontends.serving.batch_times import batch_times
    from hcsim.workload.models.inference import check_inference
    from hcsim.workload.models.spec import load_model

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


def check_serve_model(args: argparse.Namespace) -> None:
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
