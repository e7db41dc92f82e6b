"""One iteration of continuous batching as a workload graph, timed by SimGrid and memoized.

An iteration (:class:`IterationShape`) runs one forward pass of a TP group over ``decodes``
decode tokens (one per running request) and prefill chunks ``(tokens, prior KV in HBM,
prior KV in the second tier)``. :func:`iteration_graph` builds it as
:func:`hcsim.workload.models.inference.inference_step` builds a step: per rank a chain of
the model's operators (:func:`~hcsim.workload.models.ops.block_operators` over all the
iteration's tokens), the TP allreduces and the logits allgather; only the attention core is
split into kernels: the decode attention reading the KV held in HBM, the one reading KV in
the second tier (a vertex whose data the placement puts in the XPU's CXL memory, read in
place, when coherent, or its host DRAM, copied in first, when not: the engine's memory
semantics), and one causal attention per prefill chunk.

Invariant: the graph, hence its SimGrid time, is a function of the shape alone, so
:class:`IterationTimer` memoizes by the shape exactly (``kv_bucket=1``); a pure-decode shape
of equal contexts is the engine's own decode step (tested equal). Bucketing: see
:class:`IterationTimer`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from hcsim.calibration.machine import vertex_seconds
from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.workload.graph import Workload
from hcsim.workload.models.inference import tp_allreduce_bytes
from hcsim.workload.models.ops import (
    Operator,
    block_operators,
    check_layout,
    embedding_operators,
    head_operators,
    kv_heads_per_rank,
)
from hcsim.workload.models.spec import TransformerSpec

__all__ = ["IterationShape", "IterationTimer", "iteration_graph", "kv_bytes_per_token"]

_ATTN = ("norm1", "attn.qkv", "attn.core", "attn.out")


@dataclass(frozen=True, order=True)
class IterationShape:
    """What one iteration computes: ``decodes`` decode requests whose attention reads ``kv_hbm``
    KV tokens (summed over them) from HBM and ``kv_remote`` from the second tier, and prefill
    ``chunks`` ``(tokens, prior KV tokens in HBM, prior KV tokens remote)``, sorted."""

    decodes: int
    kv_hbm: int
    kv_remote: int
    chunks: tuple[tuple[int, int, int], ...] = ()

    @property
    def tokens(self) -> int:
        """Tokens of the forward pass: one per decode request plus every chunk's."""
        return self.decodes + sum(c[0] for c in self.chunks)

    @property
    def sequences(self) -> int:
        """Sequences whose next-token logits the LM head computes."""
        return self.decodes + len(self.chunks)


def kv_bytes_per_token(spec: TransformerSpec, tp: int) -> int:
    """KV-cache bytes one token takes on one TP rank: K and V of every layer."""
    return 2 * kv_heads_per_rank(spec, tp) * spec.head_dim * spec.bytes_per_value * spec.layers


def _attention_ops(spec: TransformerSpec, shape: IterationShape, tp: int) -> list[tuple[Operator, bool]]:
    """The iteration's attention kernels on one rank, each with whether its data is remote."""
    b, d = spec.bytes_per_value, spec.head_dim
    q, kv = spec.q_dim // tp, kv_heads_per_rank(spec, tp) * d
    heads = spec.heads // tp
    out: list[tuple[Operator, bool]] = []
    n = shape.decodes
    if n:
        kv_read = 2.0 * shape.kv_hbm * kv * b
        nbytes = kv_read + b * n * (2 * q + 2 * kv)  # + read Q, write O, write the new K and V
        mean_kv = max(1, round(shape.kv_hbm / n))
        op = Operator("attn.decode", "attention", 4.0 * shape.kv_hbm * q, 0.0, nbytes, 0.0, 0, 0.0,
                      kv_cache_bytes=kv_read, attention=(n, 1, mean_kv, heads, d, False))  # fmt: skip
        out.append((op, False))
    remote_tokens = shape.kv_remote + sum(c[2] for c in shape.chunks)
    if remote_tokens:
        flops = 4.0 * q * (shape.kv_remote + sum(t * r for t, _, r in shape.chunks))
        kv_read = 2.0 * remote_tokens * kv * b
        op = Operator("attn.remote", "attention", flops, 0.0, kv_read, 0.0, 0, 0.0, kv_cache_bytes=kv_read)
        out.append((op, True))
    for j, (t, prior, _) in enumerate(shape.chunks):
        ctx = prior + t
        kv_read = 2.0 * prior * kv * b  # the chunk attends to the KV its earlier chunks wrote
        nbytes = kv_read + b * t * (2 * q + 2 * kv)
        op = Operator(f"attn.prefill{j}", "attention", 4.0 * t * ctx * q, 0.0, nbytes, 0.0, 0, 0.0,
                      kv_cache_bytes=kv_read, attention=(1, t, ctx, heads, d, True))  # fmt: skip
        out.append((op, False))
    return out


def iteration_graph(
    spec: TransformerSpec,
    group: list[str],
    shape: IterationShape,
    *,
    calibration: Any = None,
    algorithm: str | None = None,
) -> Workload:
    """The iteration ``shape`` of ``spec`` on the TP group ``group`` (one rank per XPU)."""
    tp = len(group)
    check_layout(spec, tp)
    if shape.tokens < 1:
        raise HcsimError("an iteration needs at least one token (a decode request or a prefill chunk)")
    tokens, precision = shape.tokens, spec.precision
    w = Workload()
    w.graph.update(name=f"{spec.name}-iteration", model=spec.name, phase="iteration", tp=tp, ranks=list(group))
    last: dict[str, str | None] = {x: None for x in group}

    def compute(x: str, name: str, op: Operator, remote: bool = False) -> None:
        extra: dict[str, Any] = {"kv_tier": "remote"} if remote else {}
        if calibration is not None:
            extra["seconds"] = vertex_seconds([(op, "fwd")], precision, calibration)
        v = f"{x}.{name}"
        w.add_compute(v, op.fwd_flops, x, precision=precision, mem_bytes=op.fwd_bytes, footprint=0.0,
                      data=v if remote else f"{x}.local", is_start=last[x] is None, **extra)  # fmt: skip
        if last[x] is not None:
            w.add_dependency(last[x], v)
        last[x] = v

    def collective(name: str, nbytes: float, kind: str) -> None:
        if tp == 1:
            return
        w.add_comm(name, float(nbytes), kind, list(group), algorithm=algorithm)
        for x in group:
            w.add_dependency(last[x], name)
            last[x] = name

    embed = embedding_operators(spec, tokens, tp=tp, phase="prefill")
    head = head_operators(spec, shape.sequences, tp=tp, phase="prefill")
    attention = _attention_ops(spec, shape, tp)
    for x in group:
        for op in embed:
            compute(x, op.name, op)
    collective("embedding.allreduce", tp_allreduce_bytes(spec, tokens), "allreduce")
    for i in range(spec.layers):
        ops = block_operators(spec, tokens, tp=tp, layer=i, context=tokens, phase="prefill", sequences=1)
        for part in ("attn", "mlp"):
            for x in group:
                for op in ops:
                    if op.name == "add2" or (op.name in _ATTN) != (part == "attn"):
                        continue
                    if op.name != "attn.core":
                        compute(x, f"l{i}.{op.name}", op)
                        continue
                    for kernel, remote in attention:
                        compute(x, f"l{i}.{kernel.name}", kernel, remote)
            collective(f"l{i}.{part}.allreduce", tp_allreduce_bytes(spec, tokens), "allreduce")
        for x in group:
            compute(x, f"l{i}.add2", ops[-1])
    for x in group:
        for op in head:
            compute(x, op.name, op)
    collective("logits.allgather", shape.sequences * math.ceil(spec.vocab / tp) * spec.bytes_per_value, "allgather")
    return w


def _kv_tiers(xpu: Any, vertices: list[tuple[str, dict]], coherent: bool) -> dict[str, str | None]:
    """Placement: weights and HBM KV local; second-tier KV in the XPU's CXL memory (coherent) or host DRAM."""
    remote = xpu.remote(coherent)
    out: dict[str, str | None] = {}
    for name, data in vertices:
        if data.get("kv_tier") == "remote":
            if remote is None:
                tier = "cxl_memory" if coherent else "host_memory"
                raise HcsimError(f"XPU '{xpu.name}' has no {tier} to hold the KV cache's second tier "
                                 "(valid: --kv-cache hbm, or a system whose XPUs have one)")  # fmt: skip
            out[name] = remote
        else:
            out[name] = None
    return out


class IterationTimer:
    """Seconds of an iteration shape on one TP group, simulated in SimGrid once per key.

    Exactness: :func:`iteration_graph` is a function of the shape, the group, the semantics
    and the calibration, fixed for a timer, so with ``kv_bucket=1`` the memo returns
    bit-for-bit what an unmemoized run would simulate. With ``kv_bucket=W > 1`` (roofline
    model only) the decode KV totals ``kv_hbm`` and ``kv_remote`` are rounded *up* to a
    multiple of W (the iteration reads at most W-1 extra KV tokens per tier); prefill chunks
    stay exact. Bound in HBM:
    the times then differ from exact ones only by the decode attention vertices, each rank's
    a chain of operators joined by collectives whose sizes do not change, so the iteration is
    longer by at most ``layers x`` the longest a decode-attention vertex grows, and a roofline
    max(F / R, M / BW) grows by at most max(dF / R, dM / BW):
    ``(W - 1) x max(4q / R, 2 kv b / BW)`` per layer (roofline of the extra W tokens; R, BW the
    XPU's rate and memory bandwidth, q and kv the per-rank widths), and never shorter
    (:meth:`bucket_bound`, reported; a test checks exact <= bucketed <= exact + bound).
    In the second tier the extra tokens are bytes of the remote-attention vertex's memory
    flows (every rank's alike, concurrent, so each ends at latency + bytes / its max-min
    share: nondecreasing in the bytes); the bound there is measured, not assumed: each
    remote bucket used is also simulated one bucket lower, and :attr:`remote_gap`, the
    largest T(top) - T(top - W), bounds the rounding (the exact KV lies above top - W). The
    two add: an iteration is at most ``bucket_bound + remote_gap`` longer.
    """

    def __init__(
        self,
        spec: TransformerSpec,
        platform: str | os.PathLike[str],
        group: list[str],
        *,
        coherent: bool,
        calibration: Any = None,
        kv_bucket: int = 1,
        memoize: bool = True,
    ) -> None:
        if isinstance(kv_bucket, bool) or not isinstance(kv_bucket, int) or kv_bucket < 1:
            raise HcsimError(f"--kv-bucket {kv_bucket!r} is invalid (valid: an integer >= 1 token; 1 is exact)")
        if kv_bucket > 1 and calibration is not None:
            raise HcsimError(
                f"--kv-bucket {kv_bucket} applies to the roofline model only (valid: 1 with a calibration)"
            )
        self.spec, self.platform, self.group = spec, os.fspath(platform), list(group)
        self.coherent, self.calibration, self.kv_bucket, self.memoize = coherent, calibration, kv_bucket, memoize
        self.memo: dict[IterationShape, float] = {}
        self.gaps: dict[IterationShape, float] = {}
        self.simulations = 0
        self.lookups = 0

    def key(self, shape: IterationShape) -> IterationShape:
        """The memo key: the shape with decode KV totals rounded up to the bucket."""
        w = self.kv_bucket
        if w == 1:
            return shape
        return IterationShape(shape.decodes, -(-shape.kv_hbm // w) * w, -(-shape.kv_remote // w) * w, shape.chunks)

    def seconds(self, shape: IterationShape) -> float:
        """The iteration's time in SimGrid (memoized by :meth:`key`); a new remote bucket measures its gap."""
        self.lookups += 1
        key = self.key(shape)
        t = self._time(key)
        if key.kv_remote and self.kv_bucket > 1 and key not in self.gaps:
            lower = IterationShape(key.decodes, key.kv_hbm, key.kv_remote - self.kv_bucket, key.chunks)
            self.gaps[key] = t - self._time(lower)
        return t

    def _time(self, key: IterationShape) -> float:
        t = self.memo.get(key) if self.memoize else None
        if t is None:
            t = self.simulate(key)
            if self.memoize:
                self.memo[key] = t
        return t

    @property
    def remote_gap(self) -> float:
        """Largest T(bucket's top) - T(previous bucket's top) over the remote buckets used (0 if none)."""
        return max(self.gaps.values(), default=0.0)

    def simulate(self, shape: IterationShape) -> float:
        """One SimGrid run of the shape's graph (no memo)."""
        self.simulations += 1
        w = iteration_graph(self.spec, self.group, shape, calibration=self.calibration)
        run = simulate(self.platform, w, 1, coherent=self.coherent, placement=_kv_tiers,
                       record_flows=False, record_trace=False, progress=False)  # fmt: skip
        return run.makespan

    def bucket_bound(self, rate: float, bandwidth: float) -> float:
        """Most seconds the HBM bucket adds to one iteration (0 when exact); ``rate`` FLOP/s, ``bandwidth`` B/s."""
        if self.kv_bucket == 1:
            return 0.0
        spec, tp = self.spec, len(self.group)
        q, kv = spec.q_dim // tp, kv_heads_per_rank(spec, tp) * spec.head_dim
        per_token = max(4.0 * q / rate, 2.0 * kv * spec.bytes_per_value / bandwidth)
        return spec.layers * (self.kv_bucket - 1) * per_token
