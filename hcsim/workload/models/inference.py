"""Inference steps of a transformer as workload graphs: prefill and decode, tensor-parallel.

:func:`inference_step` builds one step on the given ranks: a **prefill** runs ``batch``
prompts of ``context`` tokens and writes their KV cache; a **decode** produces one
token for each of ``batch`` sequences whose KV cache holds ``context`` tokens, reading
every block's weights and KV cache (memory-bound). With tensor parallelism (Megatron)
each block's operators run on every rank of a TP group, an allreduce follows the
attention and the MLP (and the embedding), and the LM head's logits are allgathered; the
XPUs are split into ``len(ranks)/tp`` replicas of consecutive ranks, each serving its
own ``batch``; each rank's block (weights and KV cache) is placed by the engine.

Example: a decode step of LLaMA2-7B at batch 8, KV length 4096, on two XPUs::

    >>> from hcsim.workload.models import load_model
    >>> from hcsim.workload.models.inference import inference_step
    >>> w = inference_step(load_model("llama2-7b"), ["x0", "x1"], batch=8, context=4096)
    >>> w.graph["phase"], w.graph["tp"], sum(d["type"] == "comm" for _, d in w.nodes(data=True))
    ('decode', 2, 66)

Guide: docs/models.md, "Inference".
"""

from __future__ import annotations

import math

from hcsim.errors import HcsimError
from hcsim.workload.graph import Workload
from hcsim.workload.models.ops import (
    Operator,
    block_operators,
    cache_values_per_rank,
    check_layout,
    embedding_operators,
    head_operators,
)
from hcsim.workload.models.spec import TransformerSpec

__all__ = ["inference_step", "check_inference", "tp_allreduce_bytes"]


def check_inference(spec: TransformerSpec, xpus: int, *, batch: int, context: int, tp: int | None = None) -> int:
    """The TP degree to use (default: all ``xpus``); one-line :class:`HcsimError` for an impossible layout."""
    for what, value in (("batch", batch), ("context", context)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise HcsimError(f"--{what} {value!r} is invalid (valid: an integer >= 1)")
    tp = xpus if tp is None else tp
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise HcsimError(f"--tp {tp!r} is invalid (valid: an integer >= 1)")
    if xpus % tp:
        raise HcsimError(f"--tp {tp} does not divide the {xpus} XPUs (valid: a divisor of {xpus})")
    check_layout(spec, tp)
    return tp


def tp_allreduce_bytes(spec: TransformerSpec, tokens: int) -> int:
    """Bytes per rank of one TP allreduce of a block's output: tokens x hidden x bytes per value."""
    return tokens * spec.hidden * spec.bytes_per_value


def inference_step(
    spec: TransformerSpec,
    ranks: list[str],
    *,
    batch: int,
    context: int,
    phase: str = "decode",
    tp: int | None = None,
    algorithm: str | None = None,
) -> Workload:
    """One prefill or decode step of ``spec`` on ``ranks`` (``len(ranks)/tp`` replicas of ``tp`` ranks)."""
    if phase not in ("prefill", "decode"):
        raise HcsimError(f"inference phase {phase!r} is unknown (valid: prefill, decode)")
    tp = check_inference(spec, len(ranks), batch=batch, context=context, tp=tp)
    tokens = batch * context if phase == "prefill" else batch
    w = Workload()
    w.graph.update(
        name=f"{spec.name}-{phase}",
        model=spec.name,
        phase=phase,
        batch=batch,
        context=context,
        tp=tp,
        ranks=list(ranks),
        samples_per_iteration=batch * (len(ranks) // tp),
        batches_per_iteration=len(ranks) // tp,
    )
    embed = embedding_operators(spec, tokens, tp=tp, phase=phase)
    blocks = [block_operators(spec, tokens, tp=tp, layer=i, context=context, phase=phase) for i in range(spec.layers)]
    head = head_operators(spec, batch, tp=tp, phase=phase)  # logits of one token per sequence
    for g in range(len(ranks) // tp):
        group = ranks[g * tp : (g + 1) * tp]
        _replica(w, spec, f"g{g}." if len(ranks) > tp else "", group, tokens, batch, embed, blocks, head, algorithm)
    return w


def _replica(
    w: Workload,
    spec: TransformerSpec,
    prefix: str,
    group: list[str],
    tokens: int,
    batch: int,
    embed: list[Operator],
    blocks: list[list[Operator]],
    head: list[Operator],
    algorithm: str | None,
) -> None:
    """One TP group's step: per rank a chain of operators, joined by the TP collectives."""
    tp = len(group)
    last = {x: None for x in group}  # each rank's previous vertex
    precision = spec.precision

    def compute(x: str, name: str, op: Operator, footprint: float, data: str) -> None:
        v = f"{prefix}{x}.{name}"
        w.add_compute(
            v,
            op.fwd_flops,
            x,
            precision=precision,
            mem_bytes=op.fwd_bytes,
            footprint=footprint,
            data=data,
            is_start=last[x] is None,
        )
        if last[x] is not None:
            w.add_dependency(last[x], v)
        last[x] = v

    def collective(name: str, nbytes: float, kind: str) -> None:
        if tp == 1:
            return
        v = f"{prefix}{name}"
        w.add_comm(v, float(nbytes), kind, list(group), algorithm=algorithm)
        for x in group:
            w.add_dependency(last[x], v)
            last[x] = v

    b = spec.bytes_per_value
    # the K and V the step appends to the cache (prefill: the whole prompt; decode: one token)
    kv_written = tokens * cache_values_per_rank(spec, tp) * b
    for x in group:
        for op in embed:
            compute(x, op.name, op, op.params * b, f"{prefix}{x}.embedding")
    collective("embedding.allreduce", tp_allreduce_bytes(spec, tokens), "allreduce")
    for i, ops in enumerate(blocks):
        resident = sum(op.weight_bytes + op.kv_cache_bytes for op in ops) + kv_written
        for part in ("attn", "mlp"):
            for x in group:
                for op in ops:
                    if _part(op) == part:
                        first = op is ops[0]
                        compute(x, f"l{i}.{op.name}", op, resident if first else 0.0, f"{prefix}{x}.l{i}")
            collective(f"l{i}.{part}.allreduce", tp_allreduce_bytes(spec, tokens), "allreduce")
        for x in group:
            compute(x, f"l{i}.add2", ops[-1], 0.0, f"{prefix}{x}.l{i}")
    for x in group:
        for op in head:
            tied = spec.tied_embeddings and op.name == "head.lm"  # the embedding's block holds the shared table
            compute(x, op.name, op, 0.0 if tied else op.weight_bytes, f"{prefix}{x}.head")
    collective("logits.allgather", batch * math.ceil(spec.vocab / tp) * b, "allgather")


def _part(op: Operator) -> str:
    """Which TP allreduce an operator comes before: the attention's (norm1 .. out) or the MLP's (add1 .. down)."""
    if op.name == "add2":
        return "after"
    if op.name == "norm1" or op.name.startswith("attn."):
        return "attn"
    return "mlp"
