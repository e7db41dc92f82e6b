"""MoE parallel folding: the expert ranks of a pipeline stage, regrouped ``etp x ep x edp``.

Megatron-Core decomposes the expert layers apart from the attention: per stage the
attention ranks are ``tp x cp x dp`` and the expert ranks ``etp x ep x edp`` over the
same GPUs, in the expert order ``tp-ep-dp`` (megatron/core/parallel_state.py@d98e8a64,
initialize_model_parallel: the expert RankGenerator with ``tp=expert_tensor_parallel_size``,
``cp=1``). A stage's rank ``j = t + tp x d`` (``d``: replica x CP slice, as
:class:`~hcsim.workload.parallel.layout.RankGrid`) is expert rank ``(et, e, ed)`` with
``j = et + etp x (e + ep x ed)``. With ``etp = tp`` (the default) the EP group of
``(d, t)`` is ``ep`` consecutive replicas at slice ``t``, as before; with ``etp < tp`` it
spans TP slices. Invariant: every group here is a list of ``(d, t)`` in Megatron's order,
and the three kinds partition the stage's ``tp x replicas`` ranks.

Guide: docs/training-features.md, "Expert tensor parallelism (MoE parallel folding, etp)".
"""

from __future__ import annotations

from typing import Any

from hcsim.collectives.registry import for_kind
from hcsim.errors import HcsimError
from hcsim.workload.parallel.comms import DP_SYNC

__all__ = [
    "check_folded",
    "dispatch_bytes",
    "expert_coords",
    "expert_data_parallel",
    "expert_gradient_sync",
    "expert_group",
    "folded",
]

KINDS = ("etp", "ep", "edp")


def folded(layout: Any) -> bool:
    """Whether the expert ranks are regrouped (``etp < tp``); False keeps the historical model bit for bit."""
    return layout.expert_tp != layout.tp


def expert_data_parallel(layout: Any, replicas: int | None = None) -> int:
    """The expert-DP size ``edp = tp x replicas / (etp x ep)`` (``replicas``: default the layout's ``dp x cp``).

    With ``etp = tp`` it is ``replicas // ep``, the same integer.
    """
    replicas = layout.replicas if replicas is None else replicas
    return layout.tp * replicas // (layout.expert_tp * layout.ep)


def expert_coords(layout: Any, d: int, t: int) -> tuple[int, int, int]:
    """``(et, e, ed)`` of the rank at replica ``d``, TP slice ``t``: its expert-TP, EP and expert-DP indices."""
    j = t + layout.tp * d
    etp, ep = layout.expert_tp, layout.ep
    return j % etp, (j // etp) % ep, j // (etp * ep)


def expert_group(layout: Any, d: int, t: int, kind: str) -> list[tuple[int, int]]:
    """The ``(d, t)`` of the ranks in ``(d, t)``'s group of ``kind`` ("etp", "ep", "edp"), in Megatron's order."""
    et, e, ed = expert_coords(layout, d, t)
    etp, ep, tp = layout.expert_tp, layout.ep, layout.tp
    if kind == "etp":
        js = [x + etp * (e + ep * ed) for x in range(etp)]
    elif kind == "ep":
        js = [et + etp * (x + ep * ed) for x in range(ep)]
    elif kind == "edp":
        js = [et + etp * (e + ep * x) for x in range(expert_data_parallel(layout))]
    else:
        raise ValueError(f"expert group kind {kind!r} (valid: {', '.join(KINDS)})")
    return [(j // tp, j % tp) for j in js]


def dispatch_bytes(layout: Any, tokens: int, spec: Any, bytes_per_value: int) -> tuple[float, float]:
    """(dispatch all-to-all, expert-TP all-gather) buffer per rank of one MoE block and microbatch, folded.

    Megatron's MoEAlltoAllTokenDispatcher (megatron/core/transformer/moe/token_dispatcher.py@d98e8a64):
    each rank sends its sequence shard's ``tokens / tp x top_k`` routed copies over the EP group
    (``token_dispatch``), then all-gathers them over the expert-TP group (``dispatch_postprocess``,
    none when ``etp = 1``); the combine is the mirror image (reduce-scatter, then all-to-all).
    """
    shard = tokens // layout.tp * max(1, getattr(spec, "top_k", 0)) * spec.hidden * bytes_per_value
    return float(shard), float(shard * layout.expert_tp)


def check_folded(layout: Any, sequence_parallel: bool, zero: int, gathers_moved: bool) -> None:
    """One-line errors for what a folded (``etp < tp``) layout needs or hcsim does not model with it.

    ``gathers_moved``: FSDP's per-microbatch gathers or ``overlap_param_gather`` (not modelled here).
    """
    if not folded(layout):
        return
    if layout.tp > 1 and not sequence_parallel:
        raise HcsimError(
            f"layout {layout}: etp={layout.expert_tp} < tp needs sequence parallelism (valid: sequence_parallel, as "
            "Megatron-Core's MoELayer requires with tensor parallelism in training)"
        )
    if zero == 3 or gathers_moved:
        raise HcsimError(
            f"layout {layout}: etp={layout.expert_tp} < tp is modelled with zero 0, 1 or 2 without "
            "overlap_param_gather (valid: one of those, or etp = tp)"
        )


def expert_gradient_sync(b: Any) -> None:
    """The expert gradients' collectives of a folded layout: per stage, per expert-DP group, per unit.

    ``b``: the training graph's walker (:class:`.gradient_sync.GradientSync`). A group's
    collectives run one at a time, last unit first (the backward's order), after every member's
    last backward of the unit; the next iteration's first forward of the unit waits for them. An
    expert-DP group is its own communicator stream, beside the dense gradients' (Megatron-Core
    keeps expert parameters in their own buffers, reduced over the expert-DP group).
    """
    lay, grid = b.layout, b.grid
    size = b.expert_replicas
    if size < 2:
        return
    dp = b.algorithms["dp"]
    for p in range(lay.pp):
        groups = list(dict.fromkeys(tuple(expert_group(lay, d, t, "edp")) for d in range(lay.replicas)
                                    for t in range(lay.tp)))  # fmt: skip
        for gi, members in enumerate(groups):
            scope = [grid.xpu(d, p, t) for d, t in members]
            stands = {} if size == len(members) else {"group": size}
            last: str | None = None
            for unit, cost, _ in reversed(b.units[p]):
                params = getattr(cost, "expert_params", 0)
                if not params:
                    continue
                if b.policy is not None:
                    grad_bytes, gather_bytes = params * b.policy.grad_reduce_bytes, params * b.policy.param_gather_bytes
                else:
                    grad_bytes = gather_bytes = params * b.bpv
                prev = [b.unit_last_bwd[(d, p, t, unit)] for d, t in members] + ([last] if last else [])
                for kind in DP_SYNC[b.zero]:
                    vertex = f"edp{gi}.{p}/{unit}.{kind}"
                    alg = dp if kind == "allreduce" else for_kind(kind, dp)
                    nb = gather_bytes if kind == "allgather" else grad_bytes
                    b._comm(vertex, nb, kind, scope, alg, phase="dp", **stands)
                    b.edges.extend((u, vertex, False) for u in prev)
                    prev = [vertex]
                last = prev[0]
                b.edges.extend((last, b.first[(d, p, t, unit, "F")], True) for d, t in members)
            if last is not None and b._steps is not None:
                for d, t in members:
                    b._step(d, p, t)[0].append(last)
