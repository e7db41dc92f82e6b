"""Transformer models: one shape (:mod:`.spec`) and its operators (:mod:`.ops`) for training and inference.

:class:`TransformerSpec` (presets or a HuggingFace ``config.json``) describes a
decoder-only transformer once; :mod:`.ops` derives every operator's FLOPs, bytes,
parameters and activations per tensor-parallel rank, and :mod:`.inference` builds
prefill and decode steps from them. Training layouts are in :mod:`hcsim.workload.parallel`.

Guide: docs/models.md.
"""

from hcsim.workload.models.ops import Operator, block_operators, check_layout, embedding_operators, head_operators
from hcsim.workload.models.spec import PRESETS, TransformerSpec, load_model

__all__ = [
    "PRESETS",
    "Operator",
    "TransformerSpec",
    "block_operators",
    "check_layout",
    "embedding_operators",
    "head_operators",
    "load_model",
]
