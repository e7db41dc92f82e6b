"""TP collectives beside the GEMMs, as Transformer Engine runs them under sequence parallelism.

With sequence parallelism a block half (attention or MLP) is ``[all-gather] -> first GEMM
(QKV / fc1) ... last GEMM (proj / fc2) -> [reduce-scatter]``. :func:`overlap_plan` cuts the
half's compute into sub-vertices with each TP collective beside the GEMM it overlaps:

* forward, userbuffers (``--tp-comm-overlap``): the all-gather (``ring_exchange``: copy engines,
  every SM left to the GEMM) beside the first GEMM's first ``(tp-1)/tp``, its last ``1/tp`` chunk
  after both; the last GEMM on ``sms - reserved`` SMs in ``n`` chunks, the reduce-scatter of chunks
  ``1..n-1`` beside chunks ``2..n``, the last chunk's reduce-scatter after (the pipeline's drain);
* backward, the operators in reverse: the output gradient's all-gather beside the last GEMM's
  dgrad (userbuffers: the same split) or before it (plain), then its wgrad; then the first GEMM: the
  saved norm output's shard gathered again beside its dgrad (its wgrad needs the whole input), the
  dgrad's reduce-scatter beside its wgrad, the operators after (the norm's backward) waiting for it.
  Plain and userbuffers alike (TE layernorm_linear.py: ``ln_out_needs_gather``, async or bulk).

Invariant: the pieces' FLOPs and bytes add up to the half's (its calibrated time too, when no
SM is reserved). Sources: docs/training-features.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Piece", "Step", "overlap_plan"]


@dataclass(frozen=True)
class Piece:
    """One compute sub-vertex of a half: its FLOPs and bytes, its operators, its calibrated seconds (or None)."""

    suffix: str
    flops: float
    mem: float
    ops: tuple
    seconds: float | None = None


@dataclass(frozen=True)
class Step:
    """A piece of compute, or a TP collective (``kind``, ``fraction`` of its bytes) in the chain or beside.

    ``beside``: the collective starts with the next compute piece (after the chain's previous
    vertex) and the chain vertex after that piece waits for it.
    """

    piece: Piece | None = None
    kind: str | None = None
    fraction: float = 1.0
    beside: bool = False
    name: str = ""


def _passes(ops: tuple) -> tuple[float, float]:
    flops = sum(op.fwd_flops if p in ("fwd", "recompute") else op.bwd_flops for op, p in ops)
    mem = sum(op.fwd_bytes if p in ("fwd", "recompute") else op.bwd_bytes for op, p in ops)
    return float(flops), float(mem)


def _whole(suffix: str, ops: tuple, precision: str, calib: Any) -> Piece:
    from_calib = None
    if calib is not None:
        from hcsim.calibration.machine import vertex_seconds

        from_calib = vertex_seconds(ops, precision, calib)
    return Piece(suffix, *_passes(ops), ops, from_calib)


def _gemm(op: Any, pass_: str, precision: str, calib: Any, sms: int | None) -> tuple[float, ...]:
    """Seconds of a linear's GEMMs (fwd: one; bwd: dgrad, wgrad); None entries without a calibration."""
    if calib is None:
        return (0.0,) if pass_ == "fwd" else (0.0, 0.0)
    from hcsim.calibration.compute import linear_parts

    return linear_parts(op, pass_, getattr(op, "precision", None) or precision, calib, sms)


def _share(suffix: str, op: Any, pass_: str, part: float, seconds: float, calib: Any) -> Piece:
    """``part`` of a linear's pass (its dgrad or wgrad: half its FLOPs and bytes), ``seconds`` if calibrated."""
    flops = op.fwd_flops if pass_ == "fwd" else op.bwd_flops
    mem = op.fwd_bytes if pass_ == "fwd" else op.bwd_bytes
    return Piece(suffix, part * flops, part * mem, ((op, pass_),), seconds if calib is not None else None)


def overlap_plan(
    part: Any, backward: bool, tp: int, precision: str, calib: Any = None, *, userbuffers: bool = True
) -> list[Step] | None:
    """The steps of one pass of a half (a :class:`~.costs.Part`) with its TP collectives overlapped.

    ``userbuffers``: TE's userbuffers overlap (``--tp-comm-overlap``); without it only the backward
    has a plan (forward: None, the plain half). ``precision``: the vertex's compute precision (for
    operators that carry none); ``calib``: a
    :class:`~hcsim.calibration.Calibration` (pieces get ``seconds``; its ``ub_*`` SM reservations
    apply) or None (the ideal model: FLOPs and bytes only, no SM is reserved). None if the half
    has fewer than two linears (nothing to overlap as TE does: the caller keeps the plain half).
    """
    ops = tuple(part.bwd_ops if backward else part.fwd_ops)
    linear = [i for i, (op, p) in enumerate(ops) if op.kind == "linear" and p == ("bwd" if backward else "fwd")]
    if len(linear) < 2 or tp < 2 or not (userbuffers or backward):
        return None
    i1, i2 = linear[0], linear[-1]
    pre, mid, post = ops[:i1], ops[i1 + 1 : i2], ops[i2 + 1 :]
    # the half's first GEMM (QKV / fc1) and last (proj / fc2); a backward's operators come in reverse
    first, last = (ops[i2][0], ops[i1][0]) if backward else (ops[i1][0], ops[i2][0])
    steps: list[Step] = []
    if pre:
        steps.append(Step(_whole("pre", pre, precision, calib)))
    head = (tp - 1) / tp
    if not backward:
        # all-gather (ring exchange) beside the first GEMM's first tp-1 chunks; its last chunk after
        (g1,) = _gemm(first, "fwd", precision, calib, None)
        steps.append(Step(kind="allgather", beside=True, name="pre"))
        steps.append(Step(_share("g1", first, "fwd", head, head * g1, calib)))
        steps.append(Step(_share("g1.last", first, "fwd", 1 / tp, g1 / tp, calib)))
        if mid:
            steps.append(Step(_whole("mid", mid, precision, calib)))
        # the last GEMM on the SMs the reduce-scatter pipeline leaves, in n chunks; the last chunk's RS after
        reserved, n = 0, 4  # the ideal model: no SMs; TE's default 4 chunks (module/base.py)
        if calib is not None:
            reserved = calib.ub_proj_fprop_sms if last.name.startswith("attn") else calib.ub_fc2_fprop_sms
            n = calib.ub_rs_splits
        (g2,) = _gemm(last, "fwd", precision, calib, calib.sms - reserved if reserved else None)
        if n > 1:
            steps.append(Step(_share("g2.first", last, "fwd", 1 / n, g2 / n, calib)))
            steps.append(Step(kind="reduce_scatter", fraction=(n - 1) / n, beside=True, name="post"))
            steps.append(Step(_share("g2", last, "fwd", (n - 1) / n, g2 * (n - 1) / n, calib)))
            steps.append(Step(kind="reduce_scatter", fraction=1 / n, name="post.last"))
        else:
            steps.append(Step(_share("g2", last, "fwd", 1.0, g2, calib)))
            steps.append(Step(kind="reduce_scatter", name="post"))
        if post:
            steps.append(Step(_whole("post", post, precision, calib)))
        return steps
    # backward, the last GEMM first: the output gradient's all-gather (ring exchange) beside its dgrad, then
    # its wgrad; plain, the all-gather first, in the chain
    if userbuffers:
        d2, w2 = _gemm(last, "bwd", precision, calib, None)
        steps.append(Step(kind="allgather", beside=True, name="pre"))
        steps.append(Step(_share("g2.dgrad", last, "bwd", head / 2, head * d2, calib)))
        steps.append(Step(_share("g2.dgrad.last", last, "bwd", 1 / tp / 2, d2 / tp, calib)))
        steps.append(Step(_share("g2.wgrad", last, "bwd", 0.5, w2, calib)))
    else:
        steps.append(Step(kind="allgather", name="pre"))
        steps.append(Step(_whole("g2", ((last, "bwd"),), precision, calib)))
    if mid:
        steps.append(Step(_whole("mid", mid, precision, calib)))
    # the first GEMM (QKV / fc1): the saved norm output's shard gathered again beside its dgrad (its wgrad
    # waits for it), then the dgrad's reduce-scatter beside its wgrad; what follows waits for it
    d1, w1 = _gemm(first, "bwd", precision, calib, None)
    steps.append(Step(kind="allgather", beside=True, name="regather"))
    steps.append(Step(_share("g1.dgrad", first, "bwd", 0.5, d1, calib)))
    if not post:  # nothing after to wait for it: the reduce-scatter after the wgrad, in the chain
        steps.append(Step(_share("g1.wgrad", first, "bwd", 0.5, w1, calib)))
        steps.append(Step(kind="reduce_scatter", name="post"))
        return steps
    steps.append(Step(kind="reduce_scatter", beside=True, name="post"))
    steps.append(Step(_share("g1.wgrad", first, "bwd", 0.5, w1, calib)))
    steps.append(Step(_whole("post", post, precision, calib)))
    return steps
