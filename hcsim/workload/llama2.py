"""LLaMA2-13B data-parallel training, as the HCSim paper models it (Table 4).

Per decoder layer and per sample (b = per-XPU batch, seq 4096, hidden 5120, FP32),
forward and backward FLOPs (GFLOP) and memory traffic (GB), transcribed as printed
("~0" is 0). The table's MLP is two linears of 4h (780b GFLOP each); the paper keeps it.

Gradient bytes come from parameter counts (FP32, 4 bytes each), with LLaMA2-13B's real
shapes (hidden h = 5120, intermediate 13824, no biases, RMSNorm):

* K, Q, V, out: h x h = 26,214,400 parameters each;
* "Linear (up)" carries LLaMA's gate and up projections: 2 x h x 13824 = 141,557,760;
* "Linear (down)": 13824 x h = 70,778,880;
* each norm: h = 5,120.

That is 317,204,480 parameters per decoder (12.69 G for the 40 decoders; 1.269 GB of
FP32 gradients per decoder). The table's FLOPs for one iteration (40 decoders, forward
+ backward: 318.3 "TFLOP" per sample as printed) are 2.1% above 6 x parameters x tokens
(311.8 TFLOP); a test checks it.

**Units.** The table's GFLOP columns are in units of 2^40/1000 FLOP (1.0995e9), not
1e9: linear_k is 2 x 4096 x 5120^2 = 214.7e9 FLOP, printed 195.0 (195.3 in those units),
and the attention row's 312.5 is 4 x 4096^2 x 5120 exactly in them. hcsim keeps the
numbers as printed, read with GFLOP = 1e9, so that this workload is the paper's own
(every SI count of these operators is 9.95% higher). :mod:`hcsim.workload.models`
derives FLOPs from the shapes instead (``hcsim run --model llama2-13b``); its docs
compare the two row by row.

**Memory footprint** (what decides locality, per decoder and XPU): weights, gradients
and Adam's two moments, 16 bytes per parameter (5.08 GB), plus the activations kept for
the backward pass, taken as the b-proportional part of the forward memory column
(4.02 b GB). At b = 1 a decoder needs 9.10 GB: an H100 or A100 (80 GiB) holds 9
decoders locally, a V100 (32 GiB) 3; the rest lives in remote memory.
"""

from __future__ import annotations

from hcsim.workload.builders import Layer, data_parallel
from hcsim.workload.graph import Workload

__all__ = ["TABLE4", "DECODERS", "SEQ", "HIDDEN", "INTERMEDIATE", "decoder_parameters", "decoder_layers", "llama2_13b"]

DECODERS = 40
SEQ = 4096
HIDDEN = 5120
INTERMEDIATE = 13824
GIGA = 1e9
_H2 = HIDDEN * HIDDEN
_NORM = HIDDEN

#: (name, fwd GFLOP per b, fwd GB fixed, fwd GB per b, bwd GFLOP per b, bwd GB fixed, bwd GB per b, parameters)
TABLE4 = [
    ("layernorm1", 0.0, 0.00002, 0.039, 0.0, 0.00015, 0.156, _NORM),
    ("linear_k", 195.0, 0.0488, 0.039, 390.0, 0.39, 0.156, _H2),
    ("linear_q", 195.0, 0.0488, 0.039, 390.0, 0.39, 0.156, _H2),
    ("linear_v", 195.0, 0.0488, 0.039, 390.0, 0.39, 0.156, _H2),
    ("attention", 312.5, 0.0, 3.242, 625.0, 0.0, 0.234, 0),
    ("concat", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0),
    ("linear_out", 195.0, 0.0488, 0.039, 390.0, 0.39, 0.156, _H2),
    ("dropout1", 0.0, 0.0, 0.0195, 0.0, 0.0195, 0.0, 0),
    ("add1", 0.0, 0.0, 0.078, 0.0, 0.039, 0.0, 0),
    ("layernorm2", 0.0, 0.00002, 0.039, 0.0, 0.00015, 0.156, _NORM),
    ("linear_up", 780.0, 0.195, 0.039, 1560.0, 1.562, 0.39, 2 * HIDDEN * INTERMEDIATE),
    ("gelu", 0.0, 0.0, 0.156, 0.0, 0.078, 0.0, 0),
    ("linear_down", 780.0, 0.195, 0.156, 1560.0, 1.562, 0.39, INTERMEDIATE * HIDDEN),
    ("dropout2", 0.0, 0.0, 0.0195, 0.0, 0.0195, 0.0, 0),
    ("add2", 0.0, 0.0, 0.078, 0.0, 0.156, 0.0, 0),
]
BYTES_PER_PARAMETER_STATE = 16  # FP32 weights + gradients + Adam m and v


def decoder_parameters() -> int:
    return sum(row[7] for row in TABLE4)


def decoder_layers(b: int = 1, sync: str = "decoder") -> list[Layer]:
    """The 40 x 15 operators as layers; gradients synchronized per decoder or per operator."""
    activations = sum(row[3] for row in TABLE4) * b * GIGA
    state = decoder_parameters() * BYTES_PER_PARAMETER_STATE
    layers = []
    for d in range(DECODERS):
        for i, (name, ff, fm0, fmb, bf, bm0, bmb, params) in enumerate(TABLE4):
            if sync == "decoder":
                grad = decoder_parameters() * 4 if i == 0 else 0.0  # one allreduce per decoder
            else:
                grad = params * 4.0
            layers.append(
                Layer(
                    f"d{d:02d}.{name}",
                    fwd_flops=ff * b * GIGA,
                    bwd_flops=bf * b * GIGA,
                    fwd_bytes=(fm0 + fmb * b) * GIGA,
                    bwd_bytes=(bm0 + bmb * b) * GIGA,
                    grad_bytes=grad,
                    footprint=(state + activations) if i == 0 else 0.0,
                    block=f"d{d:02d}",  # a decoder's operators share its footprint: one data block
                )
            )
    return layers


def llama2_13b(
    ranks: list[str], b: int = 1, algorithm: str = "ring", sync: str = "decoder", group: int | None = None
) -> Workload:
    """Data-parallel LLaMA2-13B over ``ranks``: one iteration = forward + backward + gradient sync.

    ``b`` is the batch per rank; ``group`` the full data-parallel group when ``ranks`` are
    a fold's representatives (see :func:`hcsim.engine.simulate_system`)::

        >>> from hcsim.workload.llama2 import llama2_13b
        >>> w = llama2_13b(["x0", "x1"])
        >>> sorted({d["type"] for _, d in w.nodes(data=True)})
        ['comm', 'compute']
    """
    layers = decoder_layers(b, sync)
    return data_parallel(
        ranks, layers, algorithm=algorithm, precision="fp32", batch_per_rank=b, name="llama2-13b", group=group
    )
