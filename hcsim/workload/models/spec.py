"""A transformer's shape: the one description that training and inference workloads share.

:class:`TransformerSpec` holds what decides FLOPs, bytes and parameters of a decoder-only
transformer: blocks, hidden width, attention heads and KV heads (grouped-query attention),
MLP width (SwiGLU's or a GELU MLP's matrices), vocabulary, default sequence length, precision,
the experts, top-k and expert width of a mixture of experts, latent attention's ranks and widths.
Presets (:data:`PRESETS`; other spellings :data:`PRESET_ALIASES`) follow the published HuggingFace
``config.json`` files (GPT-3 175B its paper); :func:`load_model` takes a preset name or a ``config.json``
path (LLaMA / Mistral / Mixtral / Qwen / Gemma / DeepSeek keys, read by ``model_type``, or GPT-2's)::

    >>> from hcsim.workload.models import load_model
    >>> m = load_model("llama2-13b")
    >>> round(m.parameters() / 1e9, 2)
    13.02

Invariant: every preset's parameter count is within 1% of the published size (GPT-2
124M exactly); active parameters count only ``top_k`` of the ``E`` experts.

The parameter formulas and the presets' table: docs/models.md, "The spec", "Presets".
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, replace
from typing import Any

from hcsim.errors import HcsimError
from hcsim.registry import Registry

__all__ = [
    "TransformerSpec",
    "PRESETS",
    "PRESET_ALIASES",
    "load_model",
    "BYTES_PER_VALUE",
    "HF_FAMILIES",
    "UnknownModelType",
]

#: bytes per value of the engine's precisions (bf16 counts as fp16: same width and rate)
BYTES_PER_VALUE = {"fp16": 2, "fp32": 4}


@dataclass(frozen=True)
class TransformerSpec:
    """A decoder-only transformer's shape (the parameter formulas: docs/models.md, "The spec")."""

    name: str
    layers: int  # transformer blocks
    hidden: int
    heads: int
    kv_heads: int  # GQA; == heads for MHA
    intermediate: int  # dense MLP width (per expert width is expert_intermediate)
    vocab: int
    sequence: int  # default training sequence length
    precision: str = "fp16"  # "fp16" or "fp32" (engine precisions); bytes_per_value follows
    gated_mlp: bool = True  # SwiGLU (3 matrices) vs GELU MLP (2)
    experts: int = 0  # 0 = dense; MoE otherwise
    top_k: int = 0
    expert_intermediate: int = 0
    moe_every: int = 1  # every k-th block is MoE (1 = all, Mixtral)
    tied_embeddings: bool = False
    bias: bool = False  # GPT-style: biases on every linear, LayerNorm with bias
    position_embeddings: int = 0  # learned position embedding rows (GPT); 0 = rotary (LLaMA)
    kv_channels: int = 0  # head width when it is not hidden / heads (HF head_dim, Megatron kv_channels); 0 = h/heads
    shared_intermediate: int = 0  # MoE blocks: width of the shared expert(s), which every token uses (DeepSeek, Qwen2)
    first_dense: int = 0  # MoE models: the first blocks are dense (DeepSeek's first_k_dense_replace)
    sliding_window: int = 0  # keys a query of a sliding-window block attends (gpt-oss); 0 = every block is full
    sliding_every: int = 0  # blocks 0, k, 2k, ... use the sliding window (gpt-oss: 2, alternating)
    # multi-head latent attention (DeepSeek-V2/V3; kv_lora_rank 0 = none): queries through a q_lora_rank
    # bottleneck (0 = a full h -> heads x (nope + rope) projection, DeepSeek-V2-Lite), keys and values
    # from a kv_lora_rank latent plus one shared rope key of qk_rope_head_dim; values of v_head_dim
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    mtp_layers: int = 0  # DeepSeek-V3's multi-token-prediction modules (num_nextn_predict_layers)

    def __post_init__(self) -> None:
        self.validate()

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """One-line :class:`HcsimError` for a shape no transformer has."""
        who = f"model {self.name!r}"
        for field in ("layers", "hidden", "heads", "kv_heads", "intermediate", "vocab", "sequence"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise HcsimError(f"{who}: {field} {value!r} is invalid (valid: an integer >= 1)")
        for field in (
            "experts", "top_k", "expert_intermediate", "position_embeddings", "kv_channels", "shared_intermediate",
            "first_dense", "sliding_window", "sliding_every", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
            "qk_rope_head_dim", "v_head_dim", "mtp_layers",
        ):  # fmt: skip
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise HcsimError(f"{who}: {field} {value!r} is invalid (valid: an integer >= 0)")
        if self.precision not in BYTES_PER_VALUE:
            raise HcsimError(f"{who}: precision {self.precision!r} is unknown (valid: fp16, fp32)")
        if self.hidden % self.heads and not (self.kv_channels or self.kv_lora_rank):
            raise HcsimError(
                f"{who}: hidden {self.hidden} is not divisible by heads {self.heads} (valid: set kv_channels)"
            )
        if bool(self.sliding_window) != bool(self.sliding_every):
            raise HcsimError(f"{who}: sliding_window and sliding_every go together (valid: both 0 or both >= 1)")
        if (self.shared_intermediate or self.first_dense) and not self.experts:
            raise HcsimError(f"{who}: shared_intermediate and first_dense need experts >= 1 (a mixture of experts)")
        mla = (self.q_lora_rank, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim)
        if self.kv_lora_rank and not all(mla[1:]) or any(mla) and not self.kv_lora_rank:
            raise HcsimError(
                f"{who}: latent attention needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim "
                "all >= 1 (q_lora_rank >= 0), or all 0"
            )
        if self.kv_lora_rank and (self.kv_heads != self.heads or self.kv_channels or self.bias):
            raise HcsimError(f"{who}: latent attention has kv_heads == heads, no kv_channels and no biases")
        if self.heads % self.kv_heads:
            raise HcsimError(f"{who}: heads {self.heads} is not divisible by kv_heads {self.kv_heads}")
        if self.experts:
            if not 1 <= self.top_k <= self.experts:
                raise HcsimError(f"{who}: top_k {self.top_k} is invalid (valid: 1..experts = {self.experts})")
            if self.expert_intermediate < 1:
                raise HcsimError(f"{who}: expert_intermediate must be >= 1 for a MoE model")
            if isinstance(self.moe_every, bool) or not isinstance(self.moe_every, int) or self.moe_every < 1:
                raise HcsimError(f"{who}: moe_every {self.moe_every!r} is invalid (valid: an integer >= 1)")
        elif self.top_k:
            raise HcsimError(f"{who}: top_k {self.top_k} needs experts >= 1 (a dense model has top_k 0)")

    # ------------------------------------------------------------------ shapes
    @property
    def bytes_per_value(self) -> int:
        return BYTES_PER_VALUE[self.precision]

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-V2/V3) rather than grouped-query attention."""
        return self.kv_lora_rank > 0

    @property
    def head_dim(self) -> int:
        """A query's (and key's) head width: nope + rope under latent attention."""
        if self.is_mla:
            return self.qk_nope_head_dim + self.qk_rope_head_dim
        return self.kv_channels or self.hidden // self.heads

    @property
    def v_dim(self) -> int:
        """Width of the attention output (heads x the value head width)."""
        return self.heads * (self.v_head_dim if self.is_mla else self.head_dim)

    @property
    def q_dim(self) -> int:
        """Width of the queries (and, without latent attention, of the attention output): heads x head_dim."""
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the keys (and, without latent attention, of the values): kv_heads x head_dim."""
        return self.kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    def is_moe_layer(self, layer: int) -> bool:
        """Whether block ``layer`` (0-based) is a MoE block: blocks moe_every-1, 2·moe_every-1, ..."""
        return self.is_moe and layer >= self.first_dense and (layer + 1) % self.moe_every == 0

    def attention_window(self, layer: int, context: int) -> int:
        """Keys a query of block ``layer`` attends over a ``context``-token context (the window if it slides)."""
        if self.sliding_every and layer % self.sliding_every == 0:
            return min(context, self.sliding_window)
        return context

    def moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.layers))

    # ------------------------------------------------------------------ parameters
    def norm_parameters(self) -> int:
        return 2 * self.hidden if self.bias else self.hidden

    def attention_parameters(self) -> int:
        h, q, kv = self.hidden, self.q_dim, self.kv_dim
        if self.is_mla:  # q: down, norm, up (or one h x q); kv: down to latent + rope key, norm, up; out
            r, c = self.q_lora_rank, self.kv_lora_rank
            queries = r * (h + 1 + q) if r else h * q
            latent = c * (h + 1 + self.heads * (self.qk_nope_head_dim + self.v_head_dim)) + h * self.qk_rope_head_dim
            return queries + latent + self.v_dim * h
        return h * q + 2 * h * kv + q * h + ((q + 2 * kv + h) if self.bias else 0)

    def mlp_parameters(self) -> int:
        """One dense MLP."""
        h, inner = self.hidden, self.intermediate
        mats = 3 if self.gated_mlp else 2
        return mats * h * inner + ((inner * (mats - 1) + h) if self.bias else 0)

    def expert_parameters(self) -> int:
        """One expert (an MLP of width expert_intermediate)."""
        h, inner = self.hidden, self.expert_intermediate
        mats = 3 if self.gated_mlp else 2
        return mats * h * inner + ((inner * (mats - 1) + h) if self.bias else 0)

    def router_parameters(self) -> int:
        return self.hidden * self.experts

    def shared_parameters(self) -> int:
        """The shared expert(s) of a MoE block (an MLP of width shared_intermediate; 0 without)."""
        if not self.shared_intermediate:
            return 0
        h, inner = self.hidden, self.shared_intermediate
        mats = 3 if self.gated_mlp else 2
        return mats * h * inner + ((inner * (mats - 1) + h) if self.bias else 0)

    def embedding_parameters(self) -> int:
        """Input embedding (and learned positions)."""
        return self.vocab * self.hidden + self.position_embeddings * self.hidden

    def head_parameters(self) -> int:
        """Final norm plus the LM head (0 for the head when tied to the embedding)."""
        return self.norm_parameters() + (0 if self.tied_embeddings else self.vocab * self.hidden)

    def block_parameters(self, layer: int = 0, *, active: bool = False) -> int:
        """Parameters of block ``layer``; ``active``: only the top_k experts a token uses."""
        common = 2 * self.norm_parameters() + self.attention_parameters()
        if self.is_moe_layer(layer):
            used = self.top_k if active else self.experts
            return common + self.router_parameters() + used * self.expert_parameters() + self.shared_parameters()
        return common + self.mlp_parameters()

    def parameters(self) -> int:
        """Total, including embeddings (and the head unless tied)."""
        blocks = sum(self.block_parameters(i) for i in range(self.layers))
        return blocks + self.embedding_parameters() + self.head_parameters()

    def active_parameters(self) -> int:
        """Parameters one token uses (top_k experts per MoE block)."""
        blocks = sum(self.block_parameters(i, active=True) for i in range(self.layers))
        return blocks + self.embedding_parameters() + self.head_parameters()

    def weight_bytes(self) -> int:
        """All parameters at the model's precision."""
        return self.parameters() * self.bytes_per_value

    def cache_values(self) -> int:
        """Values one token caches per block: K and V of each KV head, or (latent) kv_lora_rank + the rope key."""
        return self.kv_lora_rank + self.qk_rope_head_dim if self.is_mla else 2 * self.kv_dim

    def kv_cache_bytes(self, batch: int, context: int) -> int:
        """Bytes of the KV cache for ``batch`` sequences of ``context`` tokens: L·cache_values·context·b·bytes."""
        return self.layers * self.cache_values() * context * batch * self.bytes_per_value


def _llama(name: str, layers: int, hidden: int, heads: int, kv: int, inner: int, vocab: int, seq: int, **kw: Any):
    return TransformerSpec(name, layers, hidden, heads, kv, inner, vocab, seq, **kw)


def _gpt(name: str, layers: int, hidden: int, heads: int, seq: int = 2048) -> TransformerSpec:
    """Megatron / NeMo GPT: GELU MLP of 4h, biases, tied embeddings, learned positions, GPT-2 vocabulary."""
    return TransformerSpec(
        name, layers, hidden, heads, heads, 4 * hidden, 50257, seq,
        gated_mlp=False, tied_embeddings=True, bias=True, position_embeddings=seq,
    )  # fmt: skip


def _qwen3_moe(name: str, layers: int, hidden: int, heads: int, inner: int, expert: int) -> TransformerSpec:
    """Qwen3-MoE: 4 KV groups of width 128, 128 experts (SwiGLU) top-8 in every block, untied, 151936 tokens."""
    return _llama(name, layers, hidden, heads, 4, inner, 151936, 4096, experts=128, top_k=8,
                  expert_intermediate=expert, kv_channels=128)  # fmt: skip


def _nemotron(name: str, layers: int, hidden: int, heads: int, kv: int, inner: int) -> TransformerSpec:
    """NeMo Nemotron: squared-ReLU MLP (two matrices), no linear biases, untied, rotary, 256k vocabulary."""
    return TransformerSpec(name, layers, hidden, heads, kv, inner, 256000, 4096, gated_mlp=False)


#: Published shapes. LLaMA: HuggingFace config.json of meta-llama/Llama-2-{7b,13b,70b}-hf,
#: Meta-Llama-3-{8B,70B}, Llama-3.1-405B; Mixtral: mistralai/Mixtral-8x7B-v0.1. GPT-3: NeMo 2
#: ``nemo/collections/llm/gpt/model/base.py`` GPTConfig5B (24 layers, 4096, 32 heads), GPTConfig20B
#: (44, 6144, 48), GPTConfig175B (96, 12288, 96; = Brown et al. 2020, Table 2.1), seq 2048, ffn 4h,
#: GELU, learned positions, tied, vocabulary GPT-2's 50257 (Megatron pads it to a multiple of 128 x TP).
#: Nemotron: NeMo 2 ``nemo/collections/llm/gpt/model/nemotron.py`` Nemotron3Config8B (32, 4096, 32 heads,
#: ffn 16384, MHA), Nemotron3Config22B (40, 6144, 48, 24576, MHA), Nemotron4Config15B (32, 6144, 48 heads,
#: 8 groups, 24576), Nemotron4Config340B (96, 18432, 96 heads, 8 groups, 73728), squared ReLU, seq 4096,
#: vocabulary 256000 (HF nvidia/Nemotron-4-340B-Base); their LayerNorm biases are not counted (h, not 2h).
#: gpt-oss-120b: HF openai/gpt-oss-120b config.json: 36 layers, hidden 2880, 64 heads of 64, 8 KV heads,
#: 128 experts of 2880 (SwiGLU), top-4, vocabulary 201088, untied, sliding window 128 on every other
#: layer (layer_types), initial context 4096; its attention and expert biases and attention sinks are
#: not counted.
#: Mixtral-8x22B: NeMo 2 ``nemo/collections/llm/gpt/model/mixtral.py`` MixtralConfig8x22B (56, 6144, 48 heads,
#: 8 groups, ffn 16384, 8 experts top-2), vocabulary 32768 (HF mistralai/Mixtral-8x22B-v0.1).
#: Qwen3-MoE: NeMo 2 ``nemo/collections/llm/gpt/model/qwen3.py``@8cfedd72 Qwen3Config30B_A3B (48, 2048,
#: 32 heads, 4 groups, expert ffn 768) and Qwen3Config235B_A22B (94, 4096, 64 heads, 4 groups, expert ffn
#: 1536), from Qwen3MoEConfig: kv_channels 128, 128 experts top-8, vocabulary 151936, untied (= HF
#: Qwen/Qwen3-30B-A3B and Qwen3-235B-A22B config.json); every block is MoE; the q/k RMSNorms are not counted.
#: deepseek-v3: HF deepseek-ai/DeepSeek-V3 config.json: 61 layers, hidden 7168, 128 heads, q_lora_rank 1536,
#: kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, 256 routed experts
#: (n_routed_experts) of moe_intermediate_size 2048, top-8 (num_experts_per_tok), n_shared_experts 1,
#: first_k_dense_replace 3, intermediate_size 18432, vocabulary 129280, untied, max_position_embeddings 163840
#: (the default sequence here is 4096, its pre-training length), num_nextn_predict_layers 1. 671.0B
#: parameters (the MTP module not counted, as the published 671B), 37.6B active (published: 37B).
_V3_MOE = {"experts": 256, "top_k": 8, "expert_intermediate": 2048, "shared_intermediate": 2048, "first_dense": 3}
_V3_MLA = {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}
PRESETS: Registry[TransformerSpec] = Registry(
    "model",
    {
        "llama2-7b": _llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096),
        "llama2-13b": _llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096),
        "llama2-70b": _llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096),
        "llama3-8b": _llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192),
        "llama3-70b": _llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192),
        "llama3-405b": _llama("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192),
        "mixtral-8x7b": _llama(
            "mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768, experts=8, top_k=2, expert_intermediate=14336
        ),
        "gpt3-175b": TransformerSpec(
            "gpt3-175b",
            96,
            12288,
            96,
            96,
            4 * 12288,
            50257,
            2048,
            gated_mlp=False,
            tied_embeddings=True,
            bias=True,
            position_embeddings=2048,
        ),
        "gpt3-5b": _gpt("gpt3-5b", 24, 4096, 32),
        "gpt3-20b": _gpt("gpt3-20b", 44, 6144, 48),
        "nemotron-8b": _nemotron("nemotron-8b", 32, 4096, 32, 32, 16384),
        "nemotron-15b": _nemotron("nemotron-15b", 32, 6144, 48, 8, 24576),
        "nemotron-22b": _nemotron("nemotron-22b", 40, 6144, 48, 48, 24576),
        "nemotron-340b": _nemotron("nemotron-340b", 96, 18432, 96, 8, 73728),
        "gpt-oss-120b": TransformerSpec(
            "gpt-oss-120b",
            36,
            2880,
            64,
            8,
            2880,
            201088,
            4096,
            experts=128,
            top_k=4,
            expert_intermediate=2880,
            kv_channels=64,
            sliding_window=128,
            sliding_every=2,
        ),  # fmt: skip
        "mixtral-8x22b": _llama(
            "mixtral-8x22b", 56, 6144, 48, 8, 16384, 32768, 4096, experts=8, top_k=2, expert_intermediate=16384
        ),  # fmt: skip
        "qwen3-30b-a3b": _qwen3_moe("qwen3-30b-a3b", 48, 2048, 32, 6144, 768),
        "qwen3-235b-a22b": _qwen3_moe("qwen3-235b-a22b", 94, 4096, 64, 12288, 1536),
        "deepseek-v3": _llama(
            "deepseek-v3", 61, 7168, 128, 128, 18432, 129280, 4096, mtp_layers=1, **_V3_MOE, **_V3_MLA
        ),
    },
    valid="a config.json file or one of {}",
)
#: Other names of presets, as NVIDIA's tables spell them (LLaMA 3.1 keeps LLaMA 3's shapes; only RoPE differs).
PRESET_ALIASES = {f"llama3.1-{s}": f"llama3-{s}" for s in ("8b", "70b", "405b")}
PRESET_ALIASES |= {f"nemotron{g}-{s}": f"nemotron-{s}" for g, s in (("3", "8b"), ("3", "22b"), ("4", "15b"))}
PRESET_ALIASES["nemotron4-340b"] = "nemotron-340b"

_DTYPES = {"float16": "fp16", "bfloat16": "fp16", "float32": "fp32", "fp16": "fp16", "bf16": "fp16", "fp32": "fp32"}
_GATED_ACTS = ("silu", "swiglu", "swish")

#: model_type -> (gated MLP, tie_word_embeddings when the file leaves it out), as the model's class in
#: HuggingFace transformers builds it: the LLaMA family's MLP is gate/up/down whatever its activation
#: (Gemma's GeGLU is gated GELU), GPT-2's and Nemotron's are two matrices; the tying default is the
#: config class's own (LlamaConfig False, GemmaConfig True, GPT2Config PretrainedConfig's True, ...).
HF_FAMILIES: dict[str, tuple[bool, bool]] = {
    **dict.fromkeys(("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe"), (True, False)),
    **dict.fromkeys(("gemma", "gemma2", "gemma3_text"), (True, True)),
    **dict.fromkeys(("deepseek", "deepseek_v2", "deepseek_v3", "gpt_oss", "phi3", "olmo", "olmo2"), (True, False)),
    "gpt2": (False, True),
    "nemotron": (False, False),
}  # fmt: skip
#: model types that are no decoder-only transformer hcsim can build (refused by name)
HF_REFUSED = frozenset(
    {"mamba", "mamba2", "falcon_mamba", "rwkv", "jamba", "recurrent_gemma", "bert", "roberta", "t5", "bart", "whisper"}
)


class UnknownModelType(UserWarning):
    """A config.json whose ``model_type`` hcsim has no family rule for: read with the LLaMA layout (said once)."""


def load_model(name_or_path: str | os.PathLike[str]) -> TransformerSpec:
    """A preset (see :data:`PRESETS`) or a HuggingFace ``config.json`` read from disk (no download)."""
    key = str(name_or_path)
    if PRESET_ALIASES.get(key.lower(), key.lower()) in PRESETS:
        return PRESETS[PRESET_ALIASES.get(key.lower(), key.lower())]
    if not key.endswith(".json") and not os.path.exists(key):
        raise PRESETS.unknown(key)
    try:
        with open(key, encoding="utf-8") as f:
            config = json.load(f)
    except FileNotFoundError:
        raise HcsimError(f"model config '{key}' does not exist") from None
    except IsADirectoryError:
        raise HcsimError(f"model config '{key}' is a directory (valid: a config.json file)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HcsimError(f"model config '{key}' is not valid JSON: {str(exc).splitlines()[0]}") from None
    if not isinstance(config, dict):
        raise HcsimError(f"model config '{key}' is not a JSON object (valid: a HuggingFace config.json)")
    return from_hf_config(config, os.path.splitext(os.path.basename(os.path.dirname(os.path.abspath(key))))[0], key)


def from_hf_config(config: dict[str, Any], name: str = "model", source: str = "config") -> TransformerSpec:
    """The spec of a HuggingFace config dict (LLaMA / Mistral / Mixtral keys, or GPT-2's).

    Also read: ``head_dim`` (when not hidden / heads); the MoE spellings of Mixtral
    (``num_local_experts``, ``num_experts_per_tok``), Qwen3-MoE (``num_experts``,
    ``moe_intermediate_size``, ``decoder_sparse_step``), DeepSeek (``n_routed_experts``,
    ``moe_intermediate_size``, ``first_k_dense_replace``, ``n_shared_experts``,
    ``moe_layer_freq``), Qwen2-MoE's ``shared_expert_intermediate_size`` and gpt-oss's
    ``experts_per_token`` and alternating ``layer_types`` with ``sliding_window``; DeepSeek-V2/V3's
    latent attention (``q_lora_rank``, null for none, ``kv_lora_rank``, ``qk_nope_head_dim``,
    ``qk_rope_head_dim``, ``v_head_dim``) and ``num_nextn_predict_layers``. What a
    family's class decides is read by ``model_type`` (:data:`HF_FAMILIES`: a gated MLP for
    the LLaMA family, Gemma's GeGLU included; ``tie_word_embeddings``' default, true for
    Gemma and GPT-2); an unknown ``model_type`` is read as a LLaMA-like decoder with one
    :class:`UnknownModelType` warning. What the spec cannot express is refused in one line
    (non-decoder types, multimodal configs, MoE blocks listed
    by ``mlp_only_layers`` or DeepSeek's ``moe_layer_freq`` > 1, other sliding patterns).
    """

    def get(*keys: str, default: Any = None, required: bool = True) -> Any:
        for k in keys:
            if k in config and config[k] is not None:
                value = config[k]
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise HcsimError(f"model config '{source}': {k} {value!r} is invalid (valid: an integer >= 1)")
                return value
        if required:
            raise HcsimError(f"model config '{source}': key {keys[0]!r} is missing (a transformer's shape needs it)")
        return default

    gpt2 = "n_embd" in config and "hidden_size" not in config
    model_type = config.get("model_type", "gpt2" if gpt2 else None)
    if model_type in HF_REFUSED or config.get("is_encoder_decoder") is True:
        raise HcsimError(
            f"model config '{source}': model_type {model_type!r} is not a decoder-only transformer hcsim models "
            f"(valid: {', '.join(HF_FAMILIES)}, or another LLaMA-like decoder)"
        )
    if "text_config" in config and "hidden_size" not in config:
        raise HcsimError(
            f"model config '{source}': a multimodal config (its language model sits in text_config) "
            "(valid: the language model's own config.json, e.g. text_config's keys at the top level)"
        )
    hidden = get("hidden_size", "n_embd")
    layers = get("num_hidden_layers", "n_layer")
    heads = get("num_attention_heads", "n_head")
    kv_heads = get("num_key_value_heads", default=heads, required=False)
    intermediate = get("intermediate_size", "n_inner", default=4 * hidden, required=not gpt2)
    vocab = get("vocab_size")
    sequence = get("max_position_embeddings", "n_positions", "n_ctx")
    experts = get("num_local_experts", "num_experts", "n_routed_experts", default=0, required=False)
    top_k = (
        get("num_experts_per_tok", "experts_per_token", default=(2 if experts else 0), required=False) if experts else 0
    )
    extra = _hf_extras(config, source, get, hidden, heads, layers, intermediate, experts, model_type)
    act = config.get("hidden_act", config.get("activation_function", "silu" if not gpt2 else "gelu"))
    act = config.get("hidden_activation") or act  # Gemma's newer spelling (gelu_pytorch_tanh)
    dtype = config.get("torch_dtype") or "float32"  # transformers' default when the config names none
    if dtype not in _DTYPES:
        raise HcsimError(
            f"model config '{source}': torch_dtype {dtype!r} is unsupported (valid: float16, bfloat16, float32)"
        )
    family = HF_FAMILIES.get(model_type) if isinstance(model_type, str) else None
    gated = family[0] if family else str(act).lower() in _GATED_ACTS
    tied = config.get("tie_word_embeddings", family[1] if family else False)  # unknown: LLaMA's default
    if not isinstance(tied, bool):
        raise HcsimError(f"model config '{source}': tie_word_embeddings {tied!r} is invalid (valid: true or false)")
    unknown = None
    if family is None:  # said once the spec is known to be valid: an invalid file gets its one error line only
        said = "as the file says" if "tie_word_embeddings" in config else "LlamaConfig's default"
        what = f"model_type {model_type!r} is not one hcsim knows" if model_type else "it names no model_type"
        unknown = (
            f"model config '{source}': {what} ({', '.join(HF_FAMILIES)}): read as a LLaMA-like decoder with a "
            f"{'gated (3-matrix)' if gated else '2-matrix'} MLP (hidden_act {act!r}) and tie_word_embeddings "
            f"{str(tied).lower()} ({said})"
        )
    try:
        spec = TransformerSpec(
            name=str(config.get("_name_or_path") or name).split("/")[-1] or "model",
            layers=layers,
            hidden=hidden,
            heads=heads,
            kv_heads=kv_heads,
            intermediate=intermediate,
            vocab=vocab,
            sequence=sequence,
            precision=_DTYPES[dtype],
            gated_mlp=gated,
            experts=experts,
            top_k=top_k,
            expert_intermediate=(extra.pop("expert_intermediate", intermediate) if experts else 0),
            tied_embeddings=tied,
            bias=gpt2,
            position_embeddings=sequence if gpt2 else 0,
            **extra,
        )
    except HcsimError as exc:
        raise HcsimError(f"model config '{source}': {str(exc).split(': ', 1)[-1]}") from None
    if unknown:
        warnings.warn(unknown, UnknownModelType, stacklevel=2)
    return spec


def _hf_extras(
    config: dict[str, Any],
    source: str,
    get: Any,
    hidden: int,
    heads: int,
    layers: int,
    intermediate: int,
    experts: int,
    model_type: Any = None,
) -> dict[str, Any]:
    """The issue-24 keys of a HuggingFace config: head_dim, the MoE spellings, sliding windows (see from_hf_config)."""
    out: dict[str, Any] = {}
    head_dim = get("head_dim", default=0, required=False)
    if head_dim and head_dim * heads != hidden:
        out["kv_channels"] = head_dim
    if config.get("kv_lora_rank") is not None or config.get("q_lora_rank"):  # latent attention (DeepSeek-V2/V3)
        out["kv_lora_rank"] = get("kv_lora_rank")
        out.update({k: get(k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")})
        out["q_lora_rank"] = get("q_lora_rank", default=0, required=False)  # null: no query bottleneck (V2-Lite)
        out.pop("kv_channels", None)  # head_dim, when given, is the rope width (DeepseekV3Config)
    mtp = config.get("num_nextn_predict_layers") or 0
    if mtp:
        out["mtp_layers"] = get("num_nextn_predict_layers")
    if experts:
        width = get("moe_intermediate_size", default=0, required=False)
        if width:
            out["expert_intermediate"] = width
        step = get("decoder_sparse_step", default=1, required=False)
        if step != 1:
            out["moe_every"] = step  # Qwen's rule: block i is MoE when (i + 1) % step == 0
        freq = get("moe_layer_freq", default=1, required=False)
        if freq != 1:
            raise HcsimError(
                f"model config '{source}': moe_layer_freq {freq} is not modelled (DeepSeek's rule, MoE blocks at "
                "i % freq == 0 from first_k_dense_replace; valid: 1, as every published DeepSeek config has it)"
            )
        first = config.get("first_k_dense_replace") or 0
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise HcsimError(f"model config '{source}': first_k_dense_replace {first!r} is invalid (valid: >= 0)")
        if first:
            out["first_dense"] = first
        if config.get("mlp_only_layers"):
            raise HcsimError(
                f"model config '{source}': mlp_only_layers {config['mlp_only_layers']!r} is not modelled "
                "(valid: an empty list; MoE blocks every decoder_sparse_step)"
            )
        shared = get("n_shared_experts", default=0, required=False)
        if shared:
            out["shared_intermediate"] = shared * (width or intermediate)
        shared_width = get("shared_expert_intermediate_size", default=0, required=False)
        if shared_width:
            out["shared_intermediate"] = shared_width
    kinds = config.get("layer_types")
    window = config.get("sliding_window")
    if kinds and window and any(k == "sliding_attention" for k in kinds):
        sliding = [i for i, k in enumerate(kinds) if k == "sliding_attention"]
        every = sliding[1] - sliding[0] if len(sliding) > 1 else layers
        if sliding[0] != 0 or sliding != list(range(0, layers, every)) or len(kinds) != layers:
            raise HcsimError(
                f"model config '{source}': layer_types has sliding-window blocks {sliding[:6]}... that are not "
                "every k-th block from block 0 (valid: such a pattern, e.g. gpt-oss's alternating one)"
            )
        out.update(sliding_window=get("sliding_window"), sliding_every=every)
    elif window and model_type == "mistral":  # MistralConfig: the window on every block (Mistral-7B v0.1)
        out.update(sliding_window=get("sliding_window"), sliding_every=1)
    elif window and model_type == "gemma2":  # Gemma 2 alternates: blocks 0, 2, 4, ... slide
        out.update(sliding_window=get("sliding_window"), sliding_every=2)
    elif window and model_type == "gemma3_text":
        raise HcsimError(
            f"model config '{source}': Gemma 3's sliding-window pattern (five sliding blocks, then one full) is not "
            "modelled (valid: no window, a window on every k-th block from block 0, or on every block)"
        )
    elif window and config.get("use_sliding_window"):
        raise HcsimError(
            f"model config '{source}': use_sliding_window without layer_types is not modelled "
            "(valid: layer_types naming the sliding_attention blocks)"
        )
    return out


def with_precision(spec: TransformerSpec, precision: str) -> TransformerSpec:
    """The same model at another precision."""
    return replace(spec, precision=precision)
