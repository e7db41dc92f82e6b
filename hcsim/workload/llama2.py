"""LLaMA2-13B data-parallel training, as the HCSim paper models it (Table 4).

:func:`llama2_13b` builds the data-parallel workload of the paper's Table 4 on any
ranks: per decoder layer and sample, forward and backward FLOPs and memory traffic as
printed (GFLOP read as 1e9 FLOP, so the workload is the paper's own), gradient bytes
from LLaMA2-13B's real parameter counts (317,204,480 per decoder, FP32), and a memory
footprint per decoder (16 bytes per parameter plus the kept activations) that decides
which decoders stay in an XPU's memory and which live in remote memory.

Invariant: the numbers are the table's, not re-derived; :mod:`hcsim.workload.models`
derives them from the shapes instead, and a test keeps the two within the stated gaps.

Guide: docs/workloads-and-engine.md, "LLaMA2-13B" (the table's units, the parameter
counts, the footprint).
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
    a fold's representatives (see :func:`hcsim.fast.simulate_system`)::

        >>> from hcsim.workload.llama2 import llama2_13b
        >>> w = llama2_13b(["x0", "x1"])
        >>> sorted({d["type"] for _, d in w.nodes(data=True)})
        ['comm', 'compute']
    """
    layers = decoder_layers(b, sync)
    return data_parallel(
        ranks, layers, algorithm=algorithm, precision="fp32", batch_per_rank=b, name="llama2-13b", group=group
    )
