"""A transformer's shape: the one description that training and inference workloads share.

:class:`TransformerSpec` holds what decides FLOPs, bytes and parameters of a decoder-only
transformer: blocks, hidden width, attention heads and KV heads (grouped-query attention),
MLP width (SwiGLU's three matrices or a GELU MLP's two), vocabulary, default sequence
length, precision, and for mixture-of-experts models the experts, top-k and expert width.

Parameter count (``h`` hidden, ``d = h / heads`` head width, ``q = heads·d``,
``kv = kv_heads·d``, ``I`` MLP width, ``V`` vocabulary, ``L`` blocks):

* attention: ``h·q`` (Q) + ``2·h·kv`` (K, V) + ``q·h`` (out);
* dense MLP: ``3·h·I`` gated (gate, up, down) or ``2·h·I``;
* MoE block: ``E·3·h·I_e`` experts + ``h·E`` router; every ``moe_every``-th block is MoE;
* norms: 2 per block and a final one, ``h`` each (RMSNorm) or ``2h`` (LayerNorm with bias);
* ``bias`` models (GPT-style) add a bias to every linear: ``q + 2kv + h`` and ``I (+I) + h``;
* embeddings ``V·h``, the LM head another ``V·h`` unless tied, learned positions
  ``position_embeddings·h``.

Active parameters count only ``top_k`` of the ``E`` experts per MoE block.

Presets follow the published HuggingFace ``config.json`` files (GPT-3 175B its paper,
Table 2.1): see :data:`PRESETS`. :func:`load_model` takes a preset name or a
``config.json`` path (LLaMA / Mistral / Mixtral keys, or GPT-2's ``n_embd`` family)::

    >>> from hcsim.workload.models import load_model
    >>> m = load_model("llama2-13b")
    >>> round(m.parameters() / 1e9, 2)
    13.02
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from typing import Any

from hcsim.errors import HcsimError
from hcsim.registry import Registry

__all__ = ["TransformerSpec", "PRESETS", "load_model", "BYTES_PER_VALUE"]

#: bytes per value of the engine's precisions (bf16 counts as fp16: same width and rate)
BYTES_PER_VALUE = {"fp16": 2, "fp32": 4}


@dataclass(frozen=True)
class TransformerSpec:
    """A decoder-only transformer's shape (see the module docstring for the formulas)."""

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
        for field in ("experts", "top_k", "expert_intermediate", "position_embeddings"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise HcsimError(f"{who}: {field} {value!r} is invalid (valid: an integer >= 0)")
        if self.precision not in BYTES_PER_VALUE:
            raise HcsimError(f"{who}: precision {self.precision!r} is unknown (valid: fp16, fp32)")
        if self.hidden % self.heads:
            raise HcsimError(f"{who}: hidden {self.hidden} is not divisible by heads {self.heads}")
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
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def q_dim(self) -> int:
        """Width of the queries (and of the attention output): heads x head_dim."""
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the keys (and of the values): kv_heads x head_dim."""
        return self.kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    def is_moe_layer(self, layer: int) -> bool:
        """Whether block ``layer`` (0-based) is a MoE block: blocks moe_every-1, 2·moe_every-1, ..."""
        return self.is_moe and (layer + 1) % self.moe_every == 0

    def moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.layers))

    # ------------------------------------------------------------------ parameters
    def norm_parameters(self) -> int:
        return 2 * self.hidden if self.bias else self.hidden

    def attention_parameters(self) -> int:
        h, q, kv = self.hidden, self.q_dim, self.kv_dim
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
            return common + self.router_parameters() + used * self.expert_parameters()
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

    def kv_cache_bytes(self, batch: int, context: int) -> int:
        """Bytes of the KV cache for ``batch`` sequences of ``context`` tokens: 2·L·kv_heads·d·context·b·bytes."""
        return 2 * self.layers * self.kv_dim * context * batch * self.bytes_per_value


def _llama(name: str, layers: int, hidden: int, heads: int, kv: int, inner: int, vocab: int, seq: int, **kw: Any):
    return TransformerSpec(name, layers, hidden, heads, kv, inner, vocab, seq, **kw)


#: Published shapes (HuggingFace config.json: meta-llama/Llama-2-*-hf, Meta-Llama-3-*, Llama-3.1-405B,
#: mistralai/Mixtral-8x7B-v0.1; GPT-3: Brown et al. 2020, Table 2.1, GELU MLP of 4h, tied, learned positions)
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
    },
    valid="a config.json file or one of {}",
)

_DTYPES = {"float16": "fp16", "bfloat16": "fp16", "float32": "fp32", "fp16": "fp16", "bf16": "fp16", "fp32": "fp32"}
_GATED_ACTS = ("silu", "swiglu", "swish")


def load_model(name_or_path: str | os.PathLike[str]) -> TransformerSpec:
    """A preset (see :data:`PRESETS`) or a HuggingFace ``config.json`` read from disk (no download)."""
    key = str(name_or_path)
    if key.lower() in PRESETS:
        return PRESETS[key.lower()]
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
    """The spec of a HuggingFace config dict (LLaMA / Mistral / Mixtral keys, or GPT-2's)."""

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
    hidden = get("hidden_size", "n_embd")
    layers = get("num_hidden_layers", "n_layer")
    heads = get("num_attention_heads", "n_head")
    kv_heads = get("num_key_value_heads", default=heads, required=False)
    intermediate = get("intermediate_size", "n_inner", default=4 * hidden, required=not gpt2)
    vocab = get("vocab_size")
    sequence = get("max_position_embeddings", "n_positions", "n_ctx")
    experts = get("num_local_experts", "num_experts", default=0, required=False)
    top_k = get("num_experts_per_tok", default=(2 if experts else 0), required=False) if experts else 0
    act = config.get("hidden_act", config.get("activation_function", "silu" if not gpt2 else "gelu"))
    dtype = config.get("torch_dtype") or "float32"  # transformers' default when the config names none
    if dtype not in _DTYPES:
        raise HcsimError(
            f"model config '{source}': torch_dtype {dtype!r} is unsupported (valid: float16, bfloat16, float32)"
        )
    tied = config.get("tie_word_embeddings", gpt2)
    if not isinstance(tied, bool):
        raise HcsimError(f"model config '{source}': tie_word_embeddings {tied!r} is invalid (valid: true or false)")
    try:
        return TransformerSpec(
            name=str(config.get("_name_or_path") or name).split("/")[-1] or "model",
            layers=layers,
            hidden=hidden,
            heads=heads,
            kv_heads=kv_heads,
            intermediate=intermediate,
            vocab=vocab,
            sequence=sequence,
            precision=_DTYPES[dtype],
            gated_mlp=str(act).lower() in _GATED_ACTS,
            experts=experts,
            top_k=top_k,
            expert_intermediate=intermediate if experts else 0,
            tied_embeddings=tied,
            bias=gpt2,
            position_embeddings=sequence if gpt2 else 0,
        )
    except HcsimError as exc:
        raise HcsimError(f"model config '{source}': {str(exc).split(': ', 1)[-1]}") from None


def with_precision(spec: TransformerSpec, precision: str) -> TransformerSpec:
    """The same model at another precision."""
    return replace(spec, precision=precision)
