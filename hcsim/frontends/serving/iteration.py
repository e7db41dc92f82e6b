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
of equal contexts is the engine's own decode step (tested equal). Bucketing, layer repeat
and memoized rings (switches, held to the exact path): see :class:`IterationTimer`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from hcsim.calibration.host import serving_host_seconds
from hcsim.calibration.machine import vertex_seconds
from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.fast import simulate as fast_simulate
from hcsim.workload.graph import ALGORITHMS, Workload
from hcsim.workload.models.inference import tp_allreduce_bytes
from hcsim.workload.models.ops import (
    Operator,
    attention_widths,
    block_operators,
    cache_values_per_rank,
    check_layout,
    embedding_operators,
    head_operators,
)
from hcsim.workload.models.spec import TransformerSpec

__all__ = ["LAYER_REPEAT_TOLERANCE", "IterationShape", "IterationTimer", "iteration_graph", "kv_bytes_per_token"]

REPEAT_LAYERS = 3
"""Blocks a layer-repeated iteration runs in SimGrid: the first, and two whose periods must agree."""
LAYER_REPEAT_TOLERANCE = 1e-9
"""The second and third blocks' periods must agree within this fraction (as hcsim.fast.repeat's iterations)."""


@dataclass(frozen=True, order=True)
class IterationShape:
    """What one iteration computes: ``decodes`` decode requests whose attention reads ``kv_hbm``
    KV tokens (summed over them) from HBM and ``kv_remote`` from the second tier, and prefill
    ``chunks`` ``(tokens, prior KV tokens in HBM, prior KV tokens remote)``, sorted; with a
    third tier (host DRAM behind CXL), ``kv_host`` decode KV tokens there and each chunk's
    4th entry its prior KV tokens there."""

    decodes: int
    kv_hbm: int
    kv_remote: int
    chunks: tuple[tuple[int, ...], ...] = ()
    kv_host: int = 0

    @property
    def tokens(self) -> int:
        """Tokens of the forward pass: one per decode request plus every chunk's."""
        return self.decodes + sum(c[0] for c in self.chunks)

    @property
    def sequences(self) -> int:
        """Sequences whose next-token logits the LM head computes."""
        return self.decodes + len(self.chunks)


def _in_attention(op: Operator) -> bool:
    """Whether ``op`` runs before the attention's TP allreduce (norm1 .. attn.out, latent attention's too)."""
    return op.name == "norm1" or op.name.startswith("attn.")


def kv_bytes_per_token(spec: TransformerSpec, tp: int) -> int:
    """KV-cache bytes one token takes on one TP rank: K and V of every layer (latent attention: the latent)."""
    return cache_values_per_rank(spec, tp) * spec.bytes_per_value * spec.layers


def _attention_ops(spec: TransformerSpec, shape: IterationShape, tp: int) -> list[tuple[Operator, str]]:
    """The iteration's attention kernels on one rank, each with its data's tier ("" local, "remote", "host")."""
    b, heads = spec.bytes_per_value, spec.heads // tp
    # per query-key pair FLOPs, values moved per query besides the cache, cached values per token, shape width
    pair, io, cached, d = attention_widths(spec, tp, decode=True)
    pre_pair, pre_io, _, pre_d = attention_widths(spec, tp, decode=False)
    out: list[tuple[Operator, str]] = []
    n = shape.decodes
    if n:
        kv_read = 1.0 * shape.kv_hbm * cached * b
        nbytes = kv_read + b * n * io  # + read Q, write O, write the new K and V (or latent)
        mean_kv = max(1, round(shape.kv_hbm / n))
        op = Operator("attn.decode", "attention", 1.0 * shape.kv_hbm * pair, 0.0, nbytes, 0.0, 0, 0.0,
                      kv_cache_bytes=kv_read, attention=(n, 1, mean_kv, heads, d, False))  # fmt: skip
        out.append((op, False))
    for name, col, decode_tokens in (("remote", 2, shape.kv_remote), ("host", 3, shape.kv_host)):
        tokens = decode_tokens + sum(c[col] for c in shape.chunks if len(c) > col)
        if tokens:
            flops = 1.0 * pair * decode_tokens + 1.0 * pre_pair * sum(
                c[0] * c[col] for c in shape.chunks if len(c) > col
            )
            kv_read = 1.0 * tokens * cached * b
            op = Operator(f"attn.{name}", "attention", flops, 0.0, kv_read, 0.0, 0, 0.0, kv_cache_bytes=kv_read)
            out.append((op, name))
    for j, (t, prior, *_) in enumerate(shape.chunks):
        ctx = prior + t
        kv_read = 1.0 * prior * cached * b  # the chunk attends to the KV its earlier chunks wrote
        nbytes = kv_read + b * t * pre_io
        op = Operator(f"attn.prefill{j}", "attention", 1.0 * t * ctx * pre_pair, 0.0, nbytes, 0.0, 0, 0.0,
                      kv_cache_bytes=kv_read, attention=(1, t, ctx, heads, pre_d, True))  # fmt: skip
        out.append((op, ""))
    return out


def iteration_graph(
    spec: TransformerSpec,
    group: list[str],
    shape: IterationShape,
    *,
    calibration: Any = None,
    algorithm: str | None = None,
    layers: int | None = None,
) -> Workload:
    """The iteration ``shape`` of ``spec`` on the TP group ``group`` (one rank per XPU); ``layers``: only the
    first that many blocks (default all: :class:`IterationTimer`'s layer repeat runs three)."""
    tp = len(group)
    check_layout(spec, tp)
    if shape.tokens < 1:
        raise HcsimError("an iteration needs at least one token (a decode request or a prefill chunk)")
    tokens, precision = shape.tokens, spec.precision
    w = Workload()
    w.graph.update(name=f"{spec.name}-iteration", model=spec.name, phase="iteration", tp=tp, ranks=list(group))
    # Built in bulk (Workload._add_built): the same vertices, attributes and edges in the same order as
    # add_compute / add_comm / add_dependency would make them, checked once per distinct vertex (rank 0's and
    # every collective: the other ranks' vertices hold the same numbers); names are distinct by construction.
    nodes: list[tuple[str, dict[str, Any]]] = []
    edges: list[tuple[str, str, dict[str, Any]]] = []
    checked: list[tuple[str, dict[str, Any]]] = []
    last: dict[str, str | None] = {x: None for x in group}
    first = group[0]
    # a calibrated operator's time, once per operator (every rank's is the same); the entry holds the operator
    # so its id cannot be reused by a later one while the graph is built (a freed block's ids would be)
    seconds: dict[int, tuple[Operator, float]] = {}

    def compute(x: str, name: str, op: Operator, remote: str = "") -> None:
        v = f"{x}.{name}"
        d: dict[str, Any] = {"type": "compute", "flops": op.fwd_flops, "location": x, "precision": precision,
                             "mem_bytes": op.fwd_bytes, "footprint": 0.0, "is_start": last[x] is None,
                             "data": v if remote else f"{x}.local"}  # fmt: skip
        if remote:
            d["kv_tier"] = remote
        if remote == "host":  # the third tier is copied in over PCIe even on a coherent system
            d["coherent"] = False
        if calibration is not None:
            hit = seconds.get(id(op))
            if hit is None:
                hit = seconds[id(op)] = (op, vertex_seconds([(op, "fwd")], precision, calibration))
            d["seconds"] = hit[1]
        nodes.append((v, d))
        if x == first:
            checked.append((v, d))
        if last[x] is not None:
            edges.append((last[x], v, {"skip_first_iteration": False}))
        last[x] = v

    def collective(name: str, nbytes: float, kind: str) -> None:
        if tp == 1:
            return
        algo = algorithm if algorithm is not None else ALGORITHMS[kind][0]
        d = {"type": "comm", "bytes": float(nbytes), "kind": kind, "algorithm": algo, "scope": list(group),
             "is_start": False}  # fmt: skip
        nodes.append((name, d))
        checked.append((name, d))
        for x in group:
            edges.append((last[x], name, {"skip_first_iteration": False}))
            last[x] = name

    embed = embedding_operators(spec, tokens, tp=tp, phase="prefill")
    head = head_operators(spec, shape.sequences, tp=tp, phase="prefill")
    attention = _attention_ops(spec, shape, tp)
    for x in group:
        for op in embed:
            compute(x, op.name, op)
    collective("embedding.allreduce", tp_allreduce_bytes(spec, tokens), "allreduce")
    for i in range(spec.layers if layers is None else min(layers, spec.layers)):
        ops = block_operators(spec, tokens, tp=tp, layer=i, context=tokens, phase="prefill", sequences=1)
        for part in ("attn", "mlp"):
            for x in group:
                for op in ops:
                    if op.name == "add2" or _in_attention(op) != (part == "attn"):
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
    if len(set(group)) != tp:
        raise HcsimError(f"the TP group {group} repeats an XPU (valid: {tp} distinct XPUs)")
    for v, d in checked:
        Workload._check_vertex(v, d)
    w._add_built(nodes, edges)
    return w


def _kv_tiers(xpu: Any, vertices: list[tuple[str, dict]], coherent: bool) -> dict[str, str | None]:
    """Placement: weights and HBM KV local; second-tier KV in the XPU's CXL memory (coherent) or host DRAM;
    third-tier KV in its host DRAM."""
    remote = xpu.remote(coherent)
    out: dict[str, str | None] = {}
    for name, data in vertices:
        if data.get("kv_tier") == "host":
            if xpu.host_memory is None:
                raise HcsimError(f"XPU '{xpu.name}' has no host_memory to hold the KV cache's third tier "
                                 "(valid: --kv-cache hbm,cxl, or a system whose XPUs have one)")  # fmt: skip
            out[name] = xpu.host_memory
        elif data.get("kv_tier") == "remote":
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
    third tier's total likewise, its gap measured with the second tier one bucket lower, so
    T(top, top) - T(top - W, top - W) is the sum of the two gaps, and :attr:`remote_gap`
    adds the largest of each. The bounds add: an iteration is at most ``bucket_bound +
    remote_gap`` longer.

    Two switches make a shape's run cheaper (``hcsim serve`` turns both on; ``--exact-iterations``
    off). ``layer_repeat``: every block ends at an idle boundary (its MLP allreduce, which every
    rank waits for; on one rank its last operator), so from there the run is the block before
    it shifted in time; the timer simulates the first three blocks and adds ``layers - 3`` times
    the third block's period, if the second's agrees with it within
    :data:`LAYER_REPEAT_TOLERANCE`, else it simulates the whole graph (``layer_fallbacks``). Only
    for models whose blocks are all alike and more than three. ``memoized_rings``: the run goes
    through :func:`hcsim.fast.simulate` with ``memoize=True`` (ring steps skipped once measured
    alone on their links; docs/fast-paths.md). Both held within 1e-12 of the exact path
    (tests/frontends/test_serving_shortcuts.py; measured worst 2.3e-14).
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
        memoized_rings: bool = False,
        layer_repeat: bool = False,
    ) -> None:
        if isinstance(kv_bucket, bool) or not isinstance(kv_bucket, int) or kv_bucket < 1:
            raise HcsimError(f"--kv-bucket {kv_bucket!r} is invalid (valid: an integer >= 1 token; 1 is exact)")
        if kv_bucket > 1 and calibration is not None:
            raise HcsimError(
                f"--kv-bucket {kv_bucket} applies to the roofline model only (valid: 1 with a calibration)"
            )
        self.spec, self.platform, self.group = spec, os.fspath(platform), list(group)
        self.coherent, self.calibration, self.kv_bucket, self.memoize = coherent, calibration, kv_bucket, memoize
        self.memoized_rings = memoized_rings
        # blocks all alike (no MoE/dense mix) and more than the three the repeat simulates
        alike = len({spec.is_moe_layer(i) for i in range(spec.layers)}) == 1
        self.layer_repeat = layer_repeat and alike and spec.layers > REPEAT_LAYERS
        self.layer_fallbacks = 0  # shapes whose layers did not repeat (simulated whole)
        self.memo: dict[IterationShape, float] = {}
        self.gaps: dict[IterationShape, float] = {}
        self.host_gaps: dict[IterationShape, float] = {}
        self.simulations = 0
        self.lookups = 0

    def key(self, shape: IterationShape) -> IterationShape:
        """The memo key: the shape with decode KV totals rounded up to the bucket."""
        w = self.kv_bucket
        if w == 1:
            return shape
        kv_hbm, kv_remote = -(-shape.kv_hbm // w) * w, -(-shape.kv_remote // w) * w
        return IterationShape(shape.decodes, kv_hbm, kv_remote, shape.chunks, -(-shape.kv_host // w) * w)

    def seconds(self, shape: IterationShape) -> float:
        """The iteration's time: SimGrid's (memoized by :meth:`key`; a new remote bucket measures its gap) plus
        the serving framework's host time if the calibration has it (:func:`serving_host_seconds`)."""
        t = self._gpu_seconds(shape)
        if self.calibration is None:
            return t
        return t + serving_host_seconds(self.calibration, shape.decodes + len(shape.chunks), len(self.group), t)

    def _gpu_seconds(self, shape: IterationShape) -> float:
        self.lookups += 1
        key = self.key(shape)
        t = self._time(key)
        if key.kv_remote and self.kv_bucket > 1 and key not in self.gaps:
            lower = IterationShape(key.decodes, key.kv_hbm, key.kv_remote - self.kv_bucket, key.chunks, key.kv_host)
            self.gaps[key] = t - self._time(lower)
        if key.kv_host and self.kv_bucket > 1 and key not in self.host_gaps:  # at the remote gap's lower end
            w, remote = self.kv_bucket, max(0, key.kv_remote - self.kv_bucket)
            top = IterationShape(key.decodes, key.kv_hbm, remote, key.chunks, key.kv_host)
            lower = IterationShape(key.decodes, key.kv_hbm, remote, key.chunks, key.kv_host - w)
            self.host_gaps[key] = self._time(top) - self._time(lower)
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
        """Largest T(bucket's top) - T(previous bucket's top) over the remote buckets used (0 if none), plus the
        same over the third tier's buckets."""
        return max(self.gaps.values(), default=0.0) + max(self.host_gaps.values(), default=0.0)

    def simulate(self, shape: IterationShape) -> float:
        """One SimGrid run of the shape's graph (no memo); with ``layer_repeat`` of its first three blocks."""
        self.simulations += 1
        if self.layer_repeat:
            t = self._repeated(shape)
            if t is not None:
                return t
            self.layer_fallbacks += 1
        return self._run(iteration_graph(self.spec, self.group, shape, calibration=self.calibration)).makespan

    def _run(self, w: Workload, trace: bool = False) -> Any:
        kw: dict[str, Any] = dict(coherent=self.coherent, placement=_kv_tiers, record_flows=False,
                                  record_trace=trace, progress=False)  # fmt: skip
        if self.memoized_rings:
            return fast_simulate(self.platform, w, 1, memoize=True, **kw)
        return simulate(self.platform, w, 1, **kw)

    def _repeated(self, shape: IterationShape) -> float | None:
        """Layer repeat: the iteration with its first three blocks in SimGrid, plus ``layers - 3`` times the third
        block's period, or None if the second and third periods differ (see the class docstring)."""
        w = iteration_graph(self.spec, self.group, shape, calibration=self.calibration, layers=REPEAT_LAYERS)
        run = self._run(w, trace=True)
        # each block ends at an idle boundary: its MLP allreduce (every rank waits for it), or on one rank its add2
        names = [f"l{i}.mlp.allreduce" if len(self.group) > 1 else f"{self.group[0]}.l{i}.add2" for i in range(3)]
        ends = {r.vertex: r.end for r in run.trace if r.vertex in names}
        b0, b1, b2 = (ends[n] for n in names)
        period = b2 - b1
        if not abs(period - (b1 - b0)) <= LAYER_REPEAT_TOLERANCE * period:
            return None
        return run.makespan + (self.spec.layers - REPEAT_LAYERS) * period

    def bucket_bound(self, rate: float, bandwidth: float) -> float:
        """Most seconds the HBM bucket adds to one iteration (0 when exact); ``rate`` FLOP/s, ``bandwidth`` B/s."""
        if self.kv_bucket == 1:
            return 0.0
        spec, tp = self.spec, len(self.group)
        pair, _, cached, _ = attention_widths(spec, tp, decode=True)
        per_token = max(1.0 * pair / rate, 1.0 * cached * spec.bytes_per_value / bandwidth)
        return spec.layers * (self.kv_bucket - 1) * per_token
