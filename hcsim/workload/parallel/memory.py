"""Whether a training layout fits in device memory: per-rank bytes, and a one-line error when it does not.

:func:`training_memory` adds up, per pipeline stage (every TP, CP and DP rank of a stage
holds the same), what :func:`~hcsim.workload.parallel.training_graph` puts in its compute
vertices' ``footprint``: the units' weights, gradients and optimizer state (by precision
and ZeRO stage, :mod:`hcsim.workload.models.precision`) and their kept activations times
the microbatches the schedule keeps in flight (per model chunk with ``vp``), after
recomputation. With sequence parallelism the norms' saved inputs are split ``tp`` ways
(Korthikanti et al. 2022). :func:`check_fits` turns the largest into a one-line
:class:`~hcsim.errors.HcsimError` naming the rank, the need and the capacity, unless a
spill is allowed. Pure functions: the engine's placement decides what a spill costs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hcsim.errors import HcsimError
from hcsim.workload.parallel.layout import Layout

__all__ = ["StageMemory", "check_fits", "training_memory"]


@dataclass(frozen=True)
class StageMemory:
    """Bytes one rank of pipeline stage ``stage`` holds during an iteration."""

    stage: int
    weights: float  # the compute copy (+ fp8 weight copies)
    grads: float
    optimizer: float
    activations: float  # kept for the backward pass, at the schedule's peak

    @property
    def total(self) -> float:
        return self.weights + self.grads + self.optimizer + self.activations


def training_memory(
    spec: Any,
    layout: Layout | str,
    *,
    micro_batch: int = 1,
    sequence: int | None = None,
    microbatches: int | None = None,
    schedule_name: str = "1f1b",
    zero: int = 0,
    precision: str | None = None,
    recompute: str = "none",
    sequence_parallel: bool = False,
    xpus: int | None = None,
) -> list[StageMemory]:
    """Per pipeline stage, what one of its ranks holds (see the module docstring); ``xpus`` fills a missing dp."""
    from hcsim.workload.models import ops as model_ops
    from hcsim.workload.models.precision import training_precision
    from hcsim.workload.parallel.costs import block_cost, fold
    from hcsim.workload.parallel.schedules import in_flight_by_chunk, interleaved_1f1b, schedule

    if isinstance(layout, str):
        layout = Layout.parse(layout, xpus)
    layout.check(layout.ranks, spec)
    policy = training_precision(precision or spec.precision)  # the spec's own: as the graph's footprints
    seq = spec.sequence if sequence is None else sequence
    m = microbatches if microbatches is not None else (2 * layout.pp if layout.pp > 1 else 1)
    tp, pp, cp, vp, ep = layout.tp, layout.pp, layout.cp, layout.vp, layout.ep
    tokens = micro_batch * seq // cp
    kw: dict[str, Any] = {"precision": policy} if precision is not None else {}
    block_kw = dict(kw)
    if cp > 1 or seq != min(spec.sequence, micro_batch * seq):
        block_kw.update(context=seq, sequences=micro_batch)
    per_chunk = spec.layers // pp // vp
    replicas = layout.replicas
    out: list[StageMemory] = []
    for p in range(pp):
        if vp > 1:
            order: Sequence[Any] = interleaved_1f1b(pp, m, p, vp)
        else:
            order = [(k, i, 0) for k, i in schedule(schedule_name)(pp, m, p)]
        weights = grads = optimizer = activations = 0.0
        kept_of = in_flight_by_chunk(list(order), vp)
        for c in range(vp):
            kept = kept_of[c]
            virtual = c * pp + p
            units: list[tuple[Any, int]] = []  # (operators' fold, expert parameters)
            if virtual == 0:
                units.append((fold(model_ops.embedding_operators(spec, tokens, tp=tp, **kw)), 0))
            for layer in range(virtual * per_chunk, (virtual + 1) * per_chunk):
                block = model_ops.block_operators(spec, tokens, tp=tp, ep=ep, layer=layer, phase="train", **block_kw)
                if sequence_parallel and tp > 1:
                    block = [replace(o, activation_bytes=o.activation_bytes / tp) if o.kind == "norm" else o
                             for o in block]  # fmt: skip
                cost = block_cost(block, recompute)
                units.append((cost, cost.expert_params))
            if virtual == pp * vp - 1:
                units.append((fold(model_ops.head_operators(spec, tokens, tp=tp, **kw)), 0))
            for cost, expert in units:
                dense = cost.params
                for n, shards in ((dense, replicas), (expert, replicas // ep)):
                    if not n:
                        continue
                    w, g, o = policy.state_split(zero, shards)
                    weights += n * w
                    grads += n * g
                    optimizer += n * o
                activations += cost.activation_bytes * kept
        out.append(StageMemory(p, weights, grads, optimizer, activations))
    return out


def check_fits(
    stages: Sequence[StageMemory],
    capacity: float,
    *,
    allow_spill: bool = False,
    xpu_of: Mapping[int, str] | None = None,
) -> StageMemory:
    """The stage that needs the most; a one-line error if it exceeds ``capacity`` bytes and no spill is allowed.

    ``xpu_of``: an XPU name per stage (e.g. ``{p: grid.xpu(0, p, 0)}``) to name in the error.
    """
    worst = max(stages, key=lambda s: s.total)
    if worst.total > capacity and not allow_spill:
        gib = 2.0**30
        who = f"each rank of pipeline stage {worst.stage}"
        if xpu_of is not None and worst.stage in xpu_of:
            who = f"XPU {xpu_of[worst.stage]} (as every rank of pipeline stage {worst.stage})"
        names = ("weights", "gradients", "optimizer", "activations")
        parts = (worst.weights, worst.grads, worst.optimizer, worst.activations)
        split = ", ".join(f"{k} {v / gib:.1f}" for k, v in zip(names, parts, strict=True))
        raise HcsimError(
            f"{who} needs {worst.total / gib:.1f} GiB ({split}) but an XPU has "
            f"{capacity / gib:.1f} GiB (valid: a layout that fits, more ZeRO sharding or recomputation, or "
            "allowing a spill)"
        )
    return worst
