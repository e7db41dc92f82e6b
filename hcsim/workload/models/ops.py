"""Per-operator FLOPs, memory traffic, parameters and activations of a transformer.

:func:`block_operators`, :func:`embedding_operators` and :func:`head_operators` list
one block, the input embedding and the head as :class:`Operator` objects for ``t``
tokens on one tensor-parallel rank (Megatron split: Q/K/V and gate/up by columns, out
and down by rows, heads split across ranks, vocabulary-parallel embedding and head;
norms, residual adds and the router replicated), for a training pass, a prefill or a
decode step. A GEMM ``m x k x n`` costs ``2mnk`` FLOPs forward and ``4mnk`` backward;
the attention core is counted FlashAttention-style over the full square; decode reads
the KV cache; memory-bound operators move their reads plus writes; MoE experts assume
balanced routing.

Invariant: training FLOPs of a whole model equal ``6 x (matmul parameters) x tokens +
12 x L x s x q x tokens`` plus the memory-bound operators (tested to 1e-12; latent attention:
``6 x L x s x heads x (nope + rope + v)`` for the core); biases count in parameters and
weight bytes, not in FLOPs. Latent attention (DeepSeek-V2/V3): :func:`latent_attention`.

Every formula: docs/models.md, "Operator formulas".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from hcsim.errors import HcsimError
from hcsim.workload.models.precision import TrainingPrecision, training_precision
from hcsim.workload.models.spec import TransformerSpec

__all__ = [
    "Operator",
    "PHASES",
    "block_operators",
    "embedding_operators",
    "head_operators",
    "check_layout",
    "kv_heads_per_rank",
    "latent_attention",
    "cache_values_per_rank",
    "kv_values_per_rank",
    "attention_widths",
    "mtp_operators",
]

PHASES = ("train", "prefill", "decode")


@dataclass(frozen=True)
class Operator:
    """One operator of a block on one TP rank: FLOPs and bytes per pass, parameters, saved activations."""

    name: str  # e.g. "attn.qkv", "attn.core", "attn.out", "mlp.up", "moe.router", "moe.experts", "norm1"
    kind: str  # "linear" | "attention" | "norm" | "elementwise" | "embedding" | "router" | "experts"
    fwd_flops: float  # per TP rank
    bwd_flops: float
    fwd_bytes: float  # memory traffic (reads + writes) per TP rank
    bwd_bytes: float
    params: int  # parameters held per TP rank (per EP rank for experts)
    activation_bytes: float  # kept for the backward pass, per TP rank
    kv_cache_bytes: float = 0.0  # decode: the part of fwd_bytes that reads the KV cache
    weight_bytes: float = 0.0  # the part of fwd_bytes that reads weights
    # shapes for a calibrated compute model (not used by the ideal model's sums):
    gemm: tuple[int, int, int] | None = None  # (m, n, k) of the forward GEMM per rank (linear, router, experts)
    attention: tuple[int, int, int, int, int, bool] | None = (
        None  # (batch, seq_q, seq_kv, heads/rank, head_dim, causal)
    )
    precision: str | None = None  # the operator's own precision when it differs by operator (fp8/bf16 training)
    groups: int = 1  # GEMMs of ``gemm``'s rows split evenly, run as one grouped kernel (experts: local experts)
    # kernels the software stack runs around the operator, timed by a calibration only (not in the sums above):
    rope: float = 0.0  # values a fused rotary-embedding kernel rotates per pass (query and key widths x tokens)
    logits: float = 0.0  # the loss: logit elements its cross-entropy kernels read (tokens x vocabulary / TP)
    after_norm: bool = False  # a linear fed by its fused norm (Transformer Engine's LayerNormLinear)
    kernel_bwd_bytes: float | None = None  # a memory-bound op's backward kernel traffic (None: ``bwd_bytes``)
    dropout_elements: float = 0.0  # a residual add's values a hidden dropout masks (run with dropout only)
    # operators inside this one that activation recomputation can run again alone (the experts' activation
    # function, Megatron's ``moe_act``); their costs are already in this operator's
    inner: tuple = ()


def check_layout(spec: TransformerSpec, tp: int = 1, ep: int = 1) -> None:
    """One-line :class:`HcsimError` when ``spec`` cannot be split ``tp`` ways (and ``ep`` for experts)."""
    for what, value in (("tp", tp), ("ep", ep)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise HcsimError(f"{what} {value!r} is invalid (valid: an integer >= 1)")
    if spec.heads % tp:
        raise HcsimError(f"tp {tp} does not divide the {spec.heads} attention heads of {spec.name}")
    if spec.kv_heads % tp and tp % spec.kv_heads:
        raise HcsimError(
            f"tp {tp} and the {spec.kv_heads} KV heads of {spec.name} do not divide each other "
            "(valid: tp divides kv_heads, or kv_heads divides tp and KV heads are replicated)"
        )
    if spec.intermediate % tp and not (spec.is_moe and spec.moe_every == 1 and not spec.first_dense):
        raise HcsimError(f"tp {tp} does not divide the MLP width {spec.intermediate} of {spec.name}")
    if spec.is_moe:
        if spec.expert_intermediate % tp:
            raise HcsimError(f"tp {tp} does not divide the expert width {spec.expert_intermediate} of {spec.name}")
        if spec.experts % ep:
            raise HcsimError(f"ep {ep} does not divide the {spec.experts} experts of {spec.name}")
        if spec.shared_intermediate % tp:
            raise HcsimError(
                f"tp {tp} does not divide the shared-expert width {spec.shared_intermediate} of {spec.name}"
            )
    elif ep != 1:
        raise HcsimError(f"ep {ep} needs a mixture-of-experts model; {spec.name} is dense (valid: ep 1)")


def kv_heads_per_rank(spec: TransformerSpec, tp: int) -> int:
    """KV heads each TP rank holds (replicated when tp > kv_heads)."""
    return max(spec.kv_heads // tp, 1)


def kv_values_per_rank(spec: TransformerSpec, tp: int) -> int:
    """Widths of the keys plus the values one TP rank's attention core reads per token (K and V summed)."""
    if spec.is_mla:
        return spec.heads // tp * (spec.head_dim + spec.v_head_dim)
    return 2 * kv_heads_per_rank(spec, tp) * spec.head_dim


def cache_values_per_rank(spec: TransformerSpec, tp: int) -> int:
    """Values one TP rank caches per token and block: K and V of its KV heads, or the whole latent (MLA)."""
    if spec.is_mla:
        return spec.cache_values()  # kv_lora_rank + rope, not split by heads: every rank keeps it (vLLM)
    return 2 * kv_heads_per_rank(spec, tp) * spec.head_dim


def attention_widths(spec: TransformerSpec, tp: int, decode: bool) -> tuple[int, int, int, int]:
    """One TP rank's attention core per query token: (FLOPs per query-key pair, values it reads and writes
    besides the cache (Q, O and the new cache entry; prefill: Q, K, V, O), values cached per key token,
    the head width of its attention shape). Grouped-query: ``4q``, ``2q + 2kv``, ``2kv``, ``d``. Latent
    (:func:`latent_attention`): decode ``2n(2c + r)``, ``n(c + r) + nc + (c + r)``, ``c + r``, ``(2c + r)/2``;
    prefill ``2n(d_qk + d_v)``, ``2n(d_qk + d_v)``, ``c + r``, ``(d_qk + d_v)/2``.
    """
    if not spec.is_mla:
        q, kv = spec.q_dim // tp, kv_heads_per_rank(spec, tp) * spec.head_dim
        return 4 * q, 2 * q + 2 * kv, 2 * kv, spec.head_dim
    n, c, r = spec.heads // tp, spec.kv_lora_rank, spec.qk_rope_head_dim
    if decode:
        return 2 * n * (2 * c + r), n * (c + r) + n * c + (c + r), c + r, max(1, (2 * c + r) // 2)
    width = spec.head_dim + spec.v_head_dim
    return 2 * n * width, 2 * n * width, c + r, max(1, width // 2)


def _linear(
    name: str,
    m: float,
    k: int,
    n: int,
    b: int,
    params: int,
    train: bool,
    *,
    kind: str = "linear",
    operand: int | None = None,
    precision: str | None = None,
) -> Operator:
    """A GEMM; ``operand``: bytes of its inputs and weight when they differ from ``b`` (FP8 GEMMs)."""
    if operand is None:
        fwd_bytes = b * (k * n + m * k + m * n)
        weight = b * k * n
    else:
        fwd_bytes = operand * (k * n + m * k) + b * m * n
        weight = operand * k * n
    return Operator(
        name,
        kind,
        2.0 * m * n * k,
        4.0 * m * n * k if train else 0.0,
        float(fwd_bytes),
        2.0 * fwd_bytes if train else 0.0,
        params,
        float(b * m * k) if train else 0.0,
        weight_bytes=float(weight),
        gemm=(int(m), int(n), int(k)),
        precision=precision,
    )


def _memory_bound(
    name: str,
    kind: str,
    flops: float,
    nbytes: float,
    params: int,
    saved: float,
    train: bool,
    precision: str | None,
    kernel_bwd: float | None = None,
):
    """A memory-bound operator; its backward moves ``2 x nbytes`` in the model's sums, ``kernel_bwd`` bytes
    in a calibration's kernel timing where given (docs/calibration.md, "Compute model")."""
    return Operator(
        name,
        kind,
        flops,
        2.0 * flops if train else 0.0,
        nbytes,
        2.0 * nbytes if train else 0.0,
        params,
        saved if train else 0.0,
        precision=precision,
        kernel_bwd_bytes=kernel_bwd if train else None,
    )


def _norm(
    name: str, t: float, width: int, b: int, params: int, train: bool, precision: str | None, shard: float | None = None
) -> Operator:
    """A norm over ``width``: forward reads x and writes y; backward reads x and dy and writes dx. ``shard``: the
    tokens it runs on when fewer than ``t`` (sequence parallelism); it still reports ``t`` tokens' saved input,
    which the memory model divides itself (:func:`hcsim.workload.parallel.memory.kept_activation_bytes`)."""
    n = t if shard is None else shard
    return _memory_bound(name, "norm", 4.0 * n * width, 2.0 * n * width * b, params, t * width * b, train, precision,
                         kernel_bwd=3.0 * n * width * b)  # fmt: skip


def _residual_add(name: str, t: float, h: int, b: int, train: bool, precision: str | None) -> Operator:
    """A residual add (reads two, writes one). Its backward launches no kernel of its own: the gradient passes
    to both inputs, and autograd sums the two gradients of the block input it branched from (read 2, write 1)."""
    add = _memory_bound(name, "elementwise", 1.0 * t * h, 3.0 * t * h * b, 0, 0.0, train, precision,
                        kernel_bwd=3.0 * t * h * b)  # fmt: skip
    return replace(add, dropout_elements=float(t * h) if train else 0.0)


def _activation(name: str, t: float, inner: int, up: int, b: int, train: bool, precision: str | None) -> Operator:
    """The MLP's activation: reads fc1's ``up`` outputs, writes ``inner``; backward reads dy and x, writes dx."""
    return _memory_bound(name, "elementwise", 4.0 * t * inner, (up + inner) * t * b, 0, up * t * b, train, precision,
                         kernel_bwd=(inner + 2.0 * up) * t * b)  # fmt: skip


class _Widths:
    """Bytes per value and per-operator precisions of one call (legacy: the spec's, no per-op precision)."""

    def __init__(self, spec: TransformerSpec, precision: str | TrainingPrecision | None) -> None:
        if precision is None:
            self.b, self.operand, self.gemm, self.other = spec.bytes_per_value, None, None, None
            return
        policy = precision if isinstance(precision, TrainingPrecision) else training_precision(precision)
        self.b = policy.value_bytes
        self.operand = None if policy.operand_bytes == policy.value_bytes else policy.operand_bytes
        legacy = policy.legacy
        self.gemm = None if legacy else policy.gemm
        self.other = None if legacy else ("fp32" if policy.name == "fp32" else "bf16")


def _check_phase(spec: TransformerSpec, tokens: int, phase: str, context: int | None) -> int:
    if phase not in PHASES:
        raise HcsimError(f"phase {phase!r} is unknown (valid: {', '.join(PHASES)})")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise HcsimError(f"tokens {tokens!r} is invalid (valid: an integer >= 1)")
    if context is None:
        if phase == "decode":
            raise HcsimError("a decode step needs context (the KV-cache length)")
        return min(spec.sequence, tokens)
    if isinstance(context, bool) or not isinstance(context, int) or context < 1:
        raise HcsimError(f"context {context!r} is invalid (valid: an integer >= 1)")
    return context


def block_operators(
    spec: TransformerSpec,
    tokens: int,
    *,
    tp: int = 1,
    ep: int = 1,
    layer: int = 0,
    context: int | None = None,
    phase: str = "train",
    precision: str | TrainingPrecision | None = None,
    sequences: int | None = None,
    sequence_parallel: bool = False,
    etp: int | None = None,
) -> list[Operator]:
    """One transformer block for ``tokens`` tokens on one TP rank (formulas: docs/models.md, "Operator formulas").

    ``layer`` picks a dense or MoE block (``moe_every``); ``phase`` "train", "prefill" or
    "decode" (decode: ``tokens`` = batch, ``context`` = KV length; train and prefill:
    ``context`` = the sequence length each token attends over, default
    ``min(spec.sequence, tokens)``). ``precision``: a training precision (fp32, fp16,
    bf16, fp8; default the spec's): fp8 reads GEMM operands as 1 byte. ``sequences``: the
    sequences the tokens belong to (the attention shape's batch; default ``tokens // context``,
    which context parallelism, where a rank holds 1/cp of each sequence, sets explicitly).
    ``sequence_parallel``: the norms and residual adds, and latent attention's down projections
    (replicated on every TP rank), run on the rank's ``tokens / tp`` sequence shard, as Megatron-Core's
    layers do (MLASelfAttention for the latter).
    ``etp`` (MoE training with sequence parallelism, Megatron-Core's expert_tensor_parallel_size
    when it is below ``tp``): the router sees the rank's sequence shard, ``tokens / tp``, which it
    dispatches; the experts run the shards of their ``etp`` group at ``1/etp`` of their width.
    """
    check_layout(spec, tp, ep)
    if etp is not None and etp != tp and (etp < 1 or tp % etp or tokens % tp):
        raise HcsimError(f"etp {etp} with tp {tp} and {tokens} tokens (valid: etp dividing tp, tp dividing the tokens)")
    c = _check_phase(spec, tokens, phase, context)
    train = phase == "train"
    w = _Widths(spec, precision)
    t, h, b, d = tokens, spec.hidden, w.b, spec.head_dim
    q = spec.q_dim // tp
    kv = kv_heads_per_rank(spec, tp) * d
    bias = spec.bias
    norm_params = spec.norm_parameters()
    lin = {"operand": w.operand, "precision": w.gemm}
    shard = t // tp if sequence_parallel and tp > 1 and t % tp == 0 else t  # the rank's sequence shard
    ops = [_norm("norm1", t, h, b, norm_params, train, w.other, shard)]
    if spec.is_mla:
        ops += latent_attention(spec, t, spec.attention_window(layer, c), tp, phase, sequences, w, shard)
        return _after_attention(spec, ops, t, tp, ep, layer, train, w, etp, shard)
    qkv = _linear("attn.qkv", t, h, q + 2 * kv, b, h * (q + 2 * kv) + ((q + 2 * kv) if bias else 0), train, **lin)
    ops.append(replace(qkv, after_norm=train))
    c = spec.attention_window(layer, c)  # a sliding-window block attends its window only
    core_flops = 4.0 * t * c * q
    heads = spec.heads // tp
    if phase == "decode":
        shape = (t, 1, c, heads, d, False)
    else:
        batch = max(1, t // c) if sequences is None else sequences
        shape = (batch, t // batch, c, heads, d, True)
    if phase == "decode":
        kv_read = 2.0 * t * c * kv * b
        core_bytes = kv_read + b * t * (2 * q + 2 * kv)  # + read Q, write O, write the new K and V
    else:
        kv_read = 0.0
        core_bytes = b * t * (2 * q + 2 * kv)
    saved = b * t * (2 * q + 2 * kv) + 4.0 * t * (spec.heads // tp)
    ops.append(
        Operator(
            "attn.core",
            "attention",
            core_flops,
            2.0 * core_flops if train else 0.0,
            core_bytes,
            2.0 * core_bytes if train else 0.0,
            0,
            saved if train else 0.0,
            kv_cache_bytes=kv_read,
            attention=shape,
            precision=w.other,
            rope=float(t * (q + kv)) if train and not spec.position_embeddings else 0.0,
        )
    )
    ops.append(_linear("attn.out", t, q, h, b, q * h + (h if bias else 0), train, **lin))
    return _after_attention(spec, ops, t, tp, ep, layer, train, w, etp, shard)


def _after_attention(
    spec: TransformerSpec,
    ops: list[Operator],
    t: int,
    tp: int,
    ep: int,
    layer: int,
    train: bool,
    w: _Widths,
    etp: int | None = None,
    shard: int | None = None,
) -> list[Operator]:
    """The block after its attention output: add, norm, the dense MLP or the MoE, add (the adds and the norm on
    the rank's sequence ``shard`` under sequence parallelism)."""
    h, b, bias, norm_params = spec.hidden, w.b, spec.bias, spec.norm_parameters()
    s = t if shard is None else shard
    lin = {"operand": w.operand, "precision": w.gemm}
    ops.append(_residual_add("add1", s, h, b, train, w.other))
    ops.append(_norm("norm2", t, h, b, norm_params, train, w.other, s))
    if spec.is_moe_layer(layer):
        ops += _moe(spec, t, tp, ep, train, w, etp)
    else:
        inner = spec.intermediate // tp
        up = 2 * inner if spec.gated_mlp else inner
        fc1 = _linear("mlp.up", t, h, up, b, h * up + (up if bias else 0), train, **lin)
        ops.append(replace(fc1, after_norm=train))
        ops.append(_activation("mlp.act", t, inner, up, b, train, w.other))
        ops.append(_linear("mlp.down", t, inner, h, b, inner * h + (h if bias else 0), train, **lin))
    ops.append(_residual_add("add2", s, h, b, train, w.other))
    return ops


def latent_attention(
    spec: TransformerSpec, t: int, ctx: int, tp: int, phase: str, sequences: int | None, w: _Widths, shard: int
) -> list[Operator]:
    """Multi-head latent attention (DeepSeek-V2/V3) on one TP rank, from the norm's output to ``attn.out``.

    Megatron-Core's MLASelfAttention split (megatron/core/transformer/multi_latent_attention.py@d98e8a64):
    the down projections (``h -> q_lora_rank``, ``h -> kv_lora_rank + rope``) are duplicated on every
    TP rank over ``shard`` tokens, their norms replicated; the up projections and ``attn.out`` split
    by heads. The core's QK products are ``nope + rope`` wide, its PV products ``v_head_dim``; the
    attention shape carries their mean, so FlashAttention's ``4·b·pairs·h·d`` counts both exactly.
    Decode is vLLM's absorbed form (vllm/attention/backends/mla): the query's nope part times
    ``W_UK`` into the latent, attention over the cached latent (``kv_lora_rank + rope`` per token,
    one copy per rank), the output times ``W_UV``; prefill and training up-project keys and values.
    """
    train = phase == "train"
    h, b, n = spec.hidden, w.b, spec.heads // tp
    r, c = spec.q_lora_rank, spec.kv_lora_rank
    dn, dr, dv = spec.qk_nope_head_dim, spec.qk_rope_head_dim, spec.v_head_dim
    lin = {"operand": w.operand, "precision": w.gemm}
    qk, vv = n * (dn + dr), n * dv
    ops = []
    if r:
        ops.append(_linear("attn.q_down", shard, h, r, b, h * r, train, **lin))
        ops.append(_norm("attn.q_norm", t, r, b, r, train, w.other))
        ops.append(_linear("attn.q_up", t, r, qk, b, r * qk, train, **lin))
    else:
        ops.append(_linear("attn.q", t, h, qk, b, h * qk, train, **lin))
    ops.append(_linear("attn.kv_down", shard, h, c + dr, b, h * (c + dr), train, **lin))
    ops.append(_norm("attn.kv_norm", t, c, b, c, train, w.other))
    if phase == "decode":
        ops.append(_per_head("attn.q_absorb", t, dn, c, n, b, w))  # q_nope x W_UK: the query in the latent
        kv_read = float(t * ctx * (c + dr) * b)
        nbytes = kv_read + b * t * (n * (c + dr) + n * c + (c + dr))  # + read q, write o, append the latent
        flops = 2.0 * t * ctx * n * (2 * c + dr)
        shape = (t, 1, ctx, n, max(1, (2 * c + dr) // 2), False)
        ops.append(Operator("attn.core", "attention", flops, 0.0, nbytes, 0.0, 0, 0.0, kv_cache_bytes=kv_read,
                            attention=shape, precision=w.other))  # fmt: skip
        ops.append(_per_head("attn.out_absorb", t, c, dv, n, b, w))  # the latent output x W_UV
    else:
        ops.append(_linear("attn.kv_up", t, c, n * (dn + dv), b, c * n * (dn + dv), train, **lin))
        batch = max(1, t // ctx) if sequences is None else sequences
        flops = 2.0 * t * ctx * (qk + vv)
        nbytes = float(b * t * (2 * qk + 2 * vv))  # read Q, K (the rope key broadcast to every head), V; write O
        saved = nbytes + 4.0 * t * n
        shape = (batch, t // batch, ctx, n, max(1, (dn + dr + dv) // 2), True)
        # the up projections' outputs Q, K, V among what the core keeps (what "mla_up_proj" recompute drops)
        qkv = Operator(
            "attn.qkv_up", "elementwise", 0.0, 0.0, 0.0, 0.0, 0, float(b * t * (2 * qk + vv)) if train else 0.0
        )
        rope = float(t * (n * dr + dr)) if train else 0.0  # the rotated query and key parts
        ops.append(Operator("attn.core", "attention", flops, 2.0 * flops if train else 0.0, nbytes,
                            2.0 * nbytes if train else 0.0, 0, saved if train else 0.0, attention=shape,
                            precision=w.other, inner=(qkv,), rope=rope))  # fmt: skip
    ops.append(_linear("attn.out", t, vv, h, b, vv * h, train, **lin))
    return ops


def _per_head(name: str, t: int, k: int, n: int, heads: int, b: int, w: _Widths) -> Operator:
    """``heads`` GEMMs ``t x k x n`` (one per head; inference only), as one ``t x (heads·n) x k`` shape."""
    nbytes = float(b * heads * (k * n + t * k + t * n))
    return Operator(name, "linear", 2.0 * t * k * n * heads, 0.0, nbytes, 0.0, heads * k * n, 0.0,
                    weight_bytes=float(b * heads * k * n), gemm=(t, heads * n, k), precision=w.gemm)  # fmt: skip


def touched_experts(spec: TransformerSpec, tokens: int, ep: int = 1) -> float:
    """Experts per EP rank a step of ``tokens`` tokens per rank uses, in expectation (uniform routing)."""
    per_rank = spec.experts // ep
    return per_rank * (1.0 - (1.0 - spec.top_k / spec.experts) ** (tokens * ep))


def _moe(
    spec: TransformerSpec, t: int, tp: int, ep: int, train: bool, w: _Widths, etp: int | None = None
) -> list[Operator]:
    h, b, experts = spec.hidden, w.b, spec.experts
    if etp is None or etp == tp:  # experts split tp ways on the TP group's gathered tokens (the historical model)
        routed, pairs, split = t, t * spec.top_k, tp
    else:  # MoE parallel folding: the rank's SP shard is routed; the experts run their etp group's shards
        routed = t // tp
        pairs, split = routed * spec.top_k * etp, etp
    router = _linear("moe.router", routed, h, experts, b, h * experts, train, kind="router", precision=w.other)
    inner = spec.expert_intermediate // split
    up = 2 * inner if spec.gated_mlp else inner
    # pairs: token-expert pairs on this EP rank (balanced routing)
    per_expert = h * up + inner * h + ((up + h) if spec.bias else 0)
    held = (experts // ep) * per_expert
    touched = touched_experts(spec, t, ep) if not train else experts // ep
    operand = b if w.operand is None else w.operand
    weights = touched * per_expert * operand
    if w.operand is None:
        acts = pairs * b * (h + up + up + inner + inner + h)  # up: read x, write; act: read, write; down: read, write
    else:  # fp8 GEMMs read their inputs as 1 byte
        acts = pairs * (operand * h + b * up + b * up + b * inner + operand * inner + b * h)
    flops = 2.0 * pairs * (h * up + inner * h) + 4.0 * pairs * inner
    fwd_bytes = weights + acts
    # the activation function between the two grouped GEMMs: reads fc1's output (up), writes fc2's input (inner),
    # which fc2 saves (pairs x inner values; the part of the experts' kept bytes that moe_act recompute drops)
    act = _memory_bound(
        "moe.act", "elementwise", 4.0 * pairs * inner, pairs * b * (up + inner), 0, pairs * b * inner, train, w.other
    )
    expert_op = Operator(
        "moe.experts",
        "experts",
        flops,
        2.0 * flops if train else 0.0,
        fwd_bytes,
        2.0 * fwd_bytes if train else 0.0,
        held,
        pairs * b * (h + up + inner) if train else 0.0,
        weight_bytes=weights,
        gemm=(int(pairs), int(up), int(h)),  # the up projection's shape (down: k = inner, n = h)
        precision=w.gemm,
        groups=max(1, experts // ep),
        inner=(act,),
    )
    out = [router, expert_op]
    if spec.shared_intermediate:  # shared expert(s): a dense MLP every token goes through, TP-split, no dispatch
        sh = spec.shared_intermediate // tp
        sh_up = 2 * sh if spec.gated_mlp else sh
        lin = {"operand": w.operand, "precision": w.gemm}
        bias = spec.bias
        out.append(_linear("moe.shared.up", t, h, sh_up, b, h * sh_up + (sh_up if bias else 0), train, **lin))
        out.append(_activation("moe.shared.act", t, sh, sh_up, b, train, w.other))
        out.append(_linear("moe.shared.down", t, sh, h, b, sh * h + (h if bias else 0), train, **lin))
    return out


def embedding_operators(
    spec: TransformerSpec,
    tokens: int,
    *,
    tp: int = 1,
    phase: str = "train",
    precision: str | TrainingPrecision | None = None,
) -> list[Operator]:
    """The input embedding (vocabulary-parallel; learned positions added) for ``tokens`` tokens."""
    check_layout(spec, tp)
    _check_phase(spec, tokens, phase, 1)
    train = phase == "train"
    w = _Widths(spec, precision)
    t, h, b = tokens, spec.hidden, w.b
    rows = math.ceil(spec.vocab / tp) + spec.position_embeddings
    nbytes = 2.0 * t * h * b
    return [
        Operator(
            "embedding",
            "embedding",
            0.0,
            float(t * h) if train else 0.0,
            nbytes,
            2.0 * nbytes if train else 0.0,
            rows * h,
            0.0,
            precision=w.other,
            # the backward's kernels (a calibration's timing): PyTorch's dense embedding backward zeroes a
            # rows x h BF16 gradient and adds each token's gradient into its row (read 2 t h, read and write the
            # rows touched), then Megatron's DDP hook adds it into the fp32 main gradient (read 4 + 2, write 4)
            kernel_bwd_bytes=float(rows * h * (2 + 10) + 4 * t * h) if train else None,
        )
    ]


def head_operators(
    spec: TransformerSpec,
    tokens: int,
    *,
    tp: int = 1,
    phase: str = "train",
    precision: str | TrainingPrecision | None = None,
) -> list[Operator]:
    """Final norm, LM head (vocabulary-parallel) and, in training, the softmax cross-entropy loss.

    Under fp8 the LM head stays a 16-bit GEMM (Megatron's output layer is not a Transformer Engine module).
    """
    check_layout(spec, tp)
    _check_phase(spec, tokens, phase, 1)
    train = phase == "train"
    w = _Widths(spec, precision)
    t, h, b, o = tokens, spec.hidden, w.b, w.other
    vocab = math.ceil(spec.vocab / tp)
    norm = _norm("head.norm", t, h, b, spec.norm_parameters(), train, o)
    lm = _linear("head.lm", t, h, vocab, b, 0 if spec.tied_embeddings else h * vocab, train, precision=o)
    ops = [norm, lm]
    if train:
        loss = _memory_bound("head.loss", "elementwise", 5.0 * t * vocab, 2.0 * t * vocab * b, 0, 0.0, train, o)
        ops.append(replace(loss, logits=float(t * vocab)))
    return ops


def mtp_operators(
    spec: TransformerSpec,
    tokens: int,
    *,
    tp: int = 1,
    ep: int = 1,
    precision: str | TrainingPrecision | None = None,
    **block: object,
) -> tuple[list[Operator], list[Operator]]:
    """One multi-token-prediction module in training (DeepSeek-V3; Megatron-Core
    megatron/core/transformer/multi_token_prediction.py@d98e8a64): (its block, its head).

    The block: the shifted tokens' embedding (the model's table, no parameters of its own),
    ``enorm`` and ``hnorm`` over ``h``, ``eh_proj`` (column-parallel, ``2h -> h``), then a
    transformer block of the last block's kind (``block``: :func:`block_operators`' other
    keywords). The head: the module's final norm, the LM head on the shared output weight (no
    parameters of its own) and its loss, as :func:`head_operators`.
    """
    w = _Widths(spec, precision)
    t, h, b = tokens, spec.hidden, w.b
    lin = {"operand": w.operand, "precision": w.gemm}
    kw = {"precision": precision} if precision is not None else {}
    embed = [replace(op, name="mtp.embedding", params=0) for op in embedding_operators(spec, t, tp=tp, **kw)]
    norms = [_norm(f"mtp.{n}", t, h, b, spec.norm_parameters(), True, w.other) for n in ("enorm", "hnorm")]
    proj = _linear("mtp.eh_proj", t, 2 * h, h // tp, b, 2 * h * (h // tp), True, **lin)
    layer = block_operators(spec, t, tp=tp, ep=ep, layer=spec.layers - 1, phase="train", **kw, **block)  # type: ignore[arg-type]
    head = head_operators(spec, t, tp=tp, **kw)
    head = [replace(op, params=0) if op.name == "head.lm" else op for op in head]  # names kept: the same layers
    return norms[:1] + embed + norms[1:] + [proj] + layer, head
