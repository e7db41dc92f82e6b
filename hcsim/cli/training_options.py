"""Command-line glue for parallel training: ``hcsim run --model NAME --parallel dp=32,tp=8,pp=4 ...``.

``hcsim run --model NAME|config.json`` without ``--inference`` runs training iterations
of the model (:func:`hcsim.workload.parallel.training_graph`) on the platform's XPUs in
their rank order. The options live here so ``hcsim run``'s module keeps one small block
for them. Only the standard library at the top: ``hcsim`` imports this module for ``--help``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from hcsim.errors import HcsimError

__all__ = ["add_training_options", "training_workload"]


def add_training_options(r: argparse.ArgumentParser) -> None:
    """The parallel-training options of ``hcsim run`` (with ``--model``, without ``--inference``)."""
    g = r.add_argument_group("parallel training of --model (docs/parallelism.md)")
    g.add_argument("--parallel", help="layout, e.g. dp=32,tp=8,pp=4 (dp may be left out; default: data parallel)")
    g.add_argument("--microbatches", type=int, help="microbatches per pipeline and iteration (default 2 x pp)")
    g.add_argument("--micro-batch", type=int, default=1, help="sequences per microbatch (default 1)")
    g.add_argument("--sequence", type=int, help="tokens per sequence (default: the model's)")
    g.add_argument("--zero", type=int, choices=(0, 1, 2, 3), default=0, help="ZeRO stage (3 = FSDP; default 0)")
    g.add_argument("--ep", type=int, help="expert-parallel degree (MoE models; same as ep= in --parallel)")
    g.add_argument("--schedule", choices=("1f1b", "gpipe"), default="1f1b", help="pipeline schedule (default 1f1b)")
    g.add_argument("--sequence-parallel", action="store_true", help="Megatron sequence parallelism in TP groups")
    g.add_argument("--mapping", help="rank order, innermost first (default tp,pp,dp)")
    g.add_argument("--dp-algorithm", default="ring", help="allreduce algorithm of the gradients (default ring)")
    g.add_argument("--tp-algorithm", default="ring", help="allreduce algorithm inside TP groups (default ring)")


def training_workload(args: argparse.Namespace) -> Callable[..., object]:
    """The workload factory ``(ranks, group) -> Workload`` of ``hcsim run --model ...`` for training."""
    from hcsim.workload.models.spec import load_model
    from hcsim.workload.parallel.factory import TrainingWorkload
    from hcsim.workload.parallel.layout import Layout

    if args.workload:
        raise HcsimError("give either --workload or --model, not both")
    if getattr(args, "tp", None) is not None:
        raise HcsimError("--tp needs --inference (for training give --parallel tp=N)")
    if getattr(args, "context", None) is not None:
        raise HcsimError("--context needs --inference (for training give --sequence N, the tokens per sequence)")
    spec = load_model(args.model)

    def layout_of(xpus: int) -> Layout:
        layout = Layout.parse(args.parallel or f"dp={xpus}", xpus)
        if args.ep is not None:
            if layout.ep not in (1, args.ep):
                raise HcsimError(f"--ep {args.ep} contradicts ep={layout.ep} in --parallel")
            if args.ep < 1:
                raise HcsimError(f"--ep {args.ep} is invalid (valid: an integer >= 1)")
            layout = Layout(layout.dp, layout.tp, layout.pp, args.ep)
        return layout

    # a factory that also tells its layout, so --fast folds whole replicas (hcsim.fast.units)
    return TrainingWorkload(
        spec,
        layout_of,
        microbatches=args.microbatches,
        micro_batch=args.micro_batch,
        sequence=args.sequence,
        schedule_name=args.schedule,
        zero=args.zero,
        sequence_parallel=args.sequence_parallel,
        dp_algorithm=args.dp_algorithm,
        tp_algorithm=args.tp_algorithm,
        mapping=args.mapping,
    )
