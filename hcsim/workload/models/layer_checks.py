"""The calibrated compute model of a whole transformer layer against a public single-GPU benchmark.

Transformer Engine's getting-started guide times one GPT layer, forward plus backward, on an
NVIDIA H100 GPU (hidden 4096, FFN 16384 with GELU, 32 heads, biases, LayerNorm, causal
attention, 8 sequences of 2048 tokens) in BF16 and FP8. :func:`te_layer_rows` predicts the
same layer with :mod:`hcsim.workload.models.ops` timed by :mod:`hcsim.calibration.compute`
(``dgx-h100``). Nothing is fitted to these rows: they check the sum of the per-operator
models (GEMMs, FlashAttention, memory-bound ops, FP8 quantization, launches) on a layer.
The benchmark runs dropout (p = 0.1 on attention and hidden states): the hidden dropout's mask is
timed (``with_stack(dropout=True)``), the attention dropout inside the attention kernel is not, so the
model should come out somewhat fast, never slow. Which H100 ran it the guide does not say.
"""

from __future__ import annotations

from hcsim.calibration.checks import CheckRow
from hcsim.calibration.machine import vertex_seconds
from hcsim.calibration.schema import load_calibration
from hcsim.workload.models.ops import block_operators
from hcsim.workload.models.precision import training_precision
from hcsim.workload.models.spec import TransformerSpec

__all__ = ["TE_LAYER", "te_layer_rows"]

_SOURCE = (
    "github NVIDIA/TransformerEngine@d0067d0da6cb01811b8072a7d304f0e00344ce2b:"
    "docs/getting_started/getting_started_pytorch_summary.csv (H100: docs/getting_started/index.rst)"
)
#: The benchmark's layer: hidden, FFN, heads, sequence, batch (getting_started_pytorch.py).
TE_LAYER = {"hidden": 4096, "ffn": 16384, "heads": 32, "sequence": 2048, "batch": 8}
# (implementation, precision, measured ms per forward + backward)
_MEASURED = (
    ("TE Unfused + TE Attention", "bf16", 35.71),
    ("TE Unfused + TE Attention + FP8", "fp8", 23.41),
    ("TE TransformerLayer + FP8", "fp8", 21.67),
)


def te_layer_rows(machine: str = "dgx-h100") -> list[CheckRow]:
    """One row per benchmarked implementation: measured vs predicted ms (tolerance 20%).

    >>> rows = te_layer_rows()
    >>> [r.unit for r in rows] == ["ms"] * 3 and all(abs(r.error) < 0.2 for r in rows)
    True
    """
    calib = load_calibration(machine).with_stack(dropout=True)
    c = TE_LAYER
    spec = TransformerSpec(
        "te-getting-started", 1, c["hidden"], c["heads"], c["heads"], c["ffn"], 32000, c["sequence"],
        gated_mlp=False, bias=True, position_embeddings=c["sequence"],
    )  # fmt: skip
    rows = []
    for what, precision, measured in _MEASURED:
        ops = block_operators(
            spec, c["sequence"] * c["batch"], phase="train", precision=training_precision(precision),
            context=c["sequence"], sequences=c["batch"],
        )  # fmt: skip
        seconds = vertex_seconds([(o, "fwd") for o in ops] + [(o, "bwd") for o in ops], precision, calib)
        note = "attention dropout (p=0.1, inside the kernel) not modelled"
        rows.append(CheckRow(f"{what} ({precision.upper()})", measured, seconds * 1e3, "ms", _SOURCE, 0.20, note))
    return rows
