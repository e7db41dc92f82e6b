"""Model FLOPs per trained token, as Megatron-LM and Megatron-Bridge count them (no recomputation).

:func:`model_flops_per_token` is the numerator of the ``model_tflops_per_gpu`` that the
published training rows report: grouped-query attention, sliding windows, mixtures of
experts with shared experts, DeepSeek's multi-head latent attention (MLA) and its
multi-token-prediction (MTP) modules, each term as the cited counter writes it.

Invariant: a model without MLA or MTP counts exactly as before this module existed (the
``megatron`` and ``megatron-2024`` conventions, tested to 1e-12 against Narayanan et al.'s
closed form); MLA and MTP terms follow Megatron-Bridge's ``flop_utils.py`` term by term.

Formulas: docs/models.md, "Model FLOPs".
"""

from __future__ import annotations

from hcsim.errors import HcsimError
from hcsim.workload.models.spec import TransformerSpec

__all__ = ["model_flops_per_token", "attention_flops_per_token"]


def attention_flops_per_token(spec: TransformerSpec, layer: int, sequence: int, core: float = 6.0) -> float:
    """One block's attention (projections and core) FLOPs per trained token; ``core`` 6 causal-halved, 12 full.

    Grouped-query: ``6h(q + 2k) + 6qh + core·s·q``. Latent (Megatron-Bridge flop_utils.py, the MLA
    branch, NVIDIA-NeMo/Megatron-Bridge@067f987d): ``6·[r(h + n(d_n + d_r) + 1) + c(h + n(d_n + d_v) + 1)
    + h·d_r + n·d_v·h] + (core/2)·s·n·(d_n + d_r + d_v)`` with ``r`` = q_lora_rank (a plain
    ``h·n(d_n + d_r)`` when 0), ``c`` = kv_lora_rank, ``n`` heads (the +1 terms are the q/kv norms).
    """
    h, q, k = spec.hidden, spec.q_dim, spec.kv_dim
    window = spec.attention_window(layer, sequence)
    attended = core * sequence if window == sequence else 12.0 * window  # a window's queries each see it
    if not spec.is_mla:
        return 6.0 * h * (q + 2 * k) + 6.0 * q * h + attended * q
    n, r, c = spec.heads, spec.q_lora_rank, spec.kv_lora_rank
    dn, dr, dv = spec.qk_nope_head_dim, spec.qk_rope_head_dim, spec.v_head_dim
    queries = r * (h + n * (dn + dr) + 1) if r else h * n * (dn + dr)
    latent = c * (h + n * (dn + dv) + 1) + h * dr
    return 6.0 * (queries + latent + n * dv * h) + attended / 2.0 * n * (dn + dr + dv)


def model_flops_per_token(
    spec: TransformerSpec,
    sequence: int | None = None,
    *,
    convention: str = "megatron",
    vocab: int | None = None,
    mtp: bool = True,
) -> float:
    """Model FLOPs per trained token (forward + backward, no recomputation), as Megatron reports them.

    ``convention`` "megatron" (Megatron-LM ``num_floating_point_operations`` since commit
    8873b55d, 2025-03-06, and Megatron-Bridge's ``flop_utils.py``): per token
    ``Σ_layers [attention + 6·g·h·f] + 6hV`` with the attention of
    :func:`attention_flops_per_token` (the core's ``12·q·s`` halved by the causal mask), ``g`` = 3
    gated / 2 GELU or squared ReLU, ``f`` the dense width or ``top_k`` x the expert width (+ the
    shared experts' width) in MoE blocks; the router is not counted. "megatron-2024" (before that
    commit; NAR's 72-factor form): the core counted in full, ``12·q·s``. ``vocab``: the padded
    vocabulary Megatron uses (default the spec's). Sliding-window blocks count
    ``12·q·min(s, window)`` (derived, no source). ``mtp`` (the spec's ``mtp_layers``, DeepSeek-V3):
    as Megatron-Bridge, each MTP module is one more block of the last block's kind plus its norms
    and ``2h x h`` projection, ``6·(3h + 2h²)``, and one more LM head, ``6hV``.
    """
    if convention not in ("megatron", "megatron-2024"):
        raise HcsimError(f"FLOP convention {convention!r} is unknown (valid: megatron, megatron-2024)")
    s = spec.sequence if sequence is None else sequence
    h = spec.hidden
    g = 3 if spec.gated_mlp else 2
    core = 6.0 if convention == "megatron" else 12.0

    def block(layer: int) -> float:
        if spec.is_moe_layer(layer):
            width = spec.top_k * spec.expert_intermediate + spec.shared_intermediate
        else:
            width = spec.intermediate
        return attention_flops_per_token(spec, layer, s, core) + 6.0 * g * h * width

    total = sum(block(layer) for layer in range(spec.layers))
    heads = 1
    if mtp and spec.mtp_layers:
        total += spec.mtp_layers * (block(spec.layers - 1) + 6.0 * (3 * h + 2 * h * h))
        heads += spec.mtp_layers
    return total + 6.0 * h * (spec.vocab if vocab is None else vocab) * heads
