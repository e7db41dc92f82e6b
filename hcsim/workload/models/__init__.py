"""Transformer models: one shape (:mod:`.spec`) and its operators (:mod:`.ops`) for training and inference.

See docs/models.md.
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
