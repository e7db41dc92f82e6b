"""Where each parallelism puts its communication, and how many bytes it moves.

Sizes follow the collectives' convention (:mod:`hcsim.collectives`): the buffer each
rank holds. Per block and microbatch:

* **TP** (Megatron): an allreduce of ``tokens x hidden x bytes`` after the attention and
  after the MLP, forward and backward (four); with sequence parallelism each becomes an
  allgather and a reduce-scatter, the same bytes on the wire;
* **PP**: one p2p per stage boundary and direction, ``tokens x hidden x bytes`` (divided
  by ``tp`` with sequence parallelism);
* **EP**: two all-to-alls of ``tokens x top_k x hidden x bytes`` forward, two backward;
* **DP**, per pipeline unit: an allreduce of ``params x bytes`` after the last backward,
  which the next iteration's first forward waits for; ZeRO-1/2 a reduce-scatter and an
  allgather (the same volume), ZeRO-3 also an allgather before each pass (1.5x).

Guide: docs/parallelism.md, "The graph" (the table, and why each size).
"""

from __future__ import annotations

__all__ = ["TP_PATTERNS", "alltoall_bytes", "activation_bytes", "p2p_bytes", "DP_SYNC"]

#: (before, after) a TP-split half: the collective kinds around it, forward and backward alike
TP_PATTERNS = {False: (None, "allreduce"), True: ("allgather", "reduce_scatter")}

#: ZeRO stage -> the gradient collectives after the backward pass, in order
DP_SYNC = {0: ("allreduce",), 1: ("reduce_scatter", "allgather"), 2: ("reduce_scatter", "allgather"),
           3: ("reduce_scatter",)}  # fmt: skip


def activation_bytes(tokens: int, hidden: int, bytes_per_value: int) -> float:
    """One microbatch's activations between blocks (the TP collectives' buffer)."""
    return float(tokens * hidden * bytes_per_value)


def p2p_bytes(tokens: int, hidden: int, bytes_per_value: int, tp: int, sequence_parallel: bool) -> float:
    """What one TP rank sends to the next stage per microbatch."""
    full = activation_bytes(tokens, hidden, bytes_per_value)
    return full / tp if sequence_parallel else full


def alltoall_bytes(tokens: int, top_k: int, hidden: int, bytes_per_value: int) -> float:
    """One dispatch (or combine) all-to-all of a MoE block, per rank."""
    return float(tokens * top_k * hidden * bytes_per_value)
