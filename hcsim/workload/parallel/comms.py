"""Where each parallelism puts its communication, and how many bytes it moves.

Sizes follow the collectives' convention (:mod:`hcsim.collectives`): the buffer each
rank holds (an allreduce of S sums S bytes; an allgather or reduce-scatter of S has
S/n per rank; an all-to-all of S sends S/n to each peer).

* **Tensor parallelism** (Megatron): a block's attention and MLP each end with an
  allreduce of the activations, ``tokens x hidden x bytes`` over the TP group, in
  the forward pass (operator *g*) and again in the backward pass (operator *f*'s
  gradient): four per block and microbatch. With **sequence parallelism** each
  allreduce becomes an allgather before the half and a reduce-scatter after it, the
  same bytes on the wire (Korthikanti et al. 2022).
* **Pipeline parallelism**: one p2p per microbatch and stage boundary in each
  direction, the activations (forward) or their gradients (backward), ``tokens x
  hidden x bytes``, divided by ``tp`` with sequence parallelism (each TP rank sends its
  sequence shard; without it every TP rank sends the full tensor to its peer).
* **Expert parallelism**: a MoE block dispatches each token to its ``top_k`` experts
  and combines the results back, two all-to-alls of ``tokens x top_k x hidden x bytes``
  in the forward pass and two in the backward pass, over the EP group.
* **Data parallelism**: per pipeline unit, the gradients (``params x bytes``) are
  allreduced after the last microbatch's backward, and the next iteration's first
  forward of that unit waits for it. **ZeRO-1/2**: a reduce-scatter of the gradients,
  then an allgather of the updated parameters (the same volume as the allreduce).
  **ZeRO-3 / FSDP**: the reduce-scatter, plus an allgather of the parameters before the
  forward pass and another before the backward pass (prefetched one unit ahead, in
  order): 1.5x the allreduce's traffic.
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
