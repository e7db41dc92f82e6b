"""Workload builders: data-parallel training from a per-rank list of layers.

A model is a list of :class:`Layer` (forward and backward FLOPs and bytes, gradient
bytes); :func:`data_parallel` replicates it on every rank and adds, per layer, the
gradient synchronization (an allreduce over all ranks) that the next iteration's
forward pass of that layer waits for::

    layers = [Layer(f"fc{i}", fwd_flops=2e12, bwd_flops=4e12, fwd_bytes=1e9, bwd_bytes=2e9,
                    grad_bytes=4e8) for i in range(3)]
    w = data_parallel(["xpu0", "xpu1"], layers, algorithm="ring")

Per rank and iteration: FP_1 .. FP_L, then BP_L .. BP_1; AR_l (allreduce of layer l's
gradients) follows BP_l on every rank; FP_l of the next iteration needs AR_l (a
``skip_first_iteration`` edge), which closes the training cycle.

Guide: docs/workloads-and-engine.md, "Workloads".
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from hcsim.errors import HcsimError
from hcsim.workload.graph import Workload

__all__ = ["Layer", "data_parallel", "fig3_example", "allreduce_benchmark"]


@dataclass(frozen=True)
class Layer:
    """One layer of a model, per rank and per iteration."""

    name: str
    fwd_flops: float
    bwd_flops: float
    fwd_bytes: float = 0.0
    bwd_bytes: float = 0.0
    grad_bytes: float = 0.0
    footprint: float | None = None  # resident bytes (weights, activations...); default fwd + bwd bytes
    block: str | None = None  # data block its operators share (placed together); default the layer's name


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while a large graph is built: it creates no cycles, and every
    collection would rescan the 100k dicts built so far (a third of the build time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def data_parallel(
    ranks: list[str],
    layers: list[Layer],
    *,
    algorithm: str = "ring",
    precision: str = "fp32",
    batch_per_rank: int = 1,
    name: str = "data-parallel",
    group: int | None = None,
) -> Workload:
    """The training graph of ``layers`` replicated on ``ranks`` with per-layer gradient allreduce.

    ``group``: in a folded run (:mod:`hcsim.fast.folding`) ``ranks`` are representatives
    of ``group`` data-parallel ranks: collectives keep the full group's chunk size and
    step count, and throughput counts the full group's batches.
    """
    with _gc_paused():
        return _data_parallel(ranks, layers, algorithm, precision, batch_per_rank, name, group)


def _data_parallel(
    ranks: list[str],
    layers: list[Layer],
    algorithm: str,
    precision: str,
    batch_per_rank: int,
    name: str,
    group: int | None,
) -> Workload:
    if not ranks:
        raise HcsimError("data_parallel needs at least one rank")
    if not layers:
        raise HcsimError("data_parallel needs at least one layer")
    w = Workload(name=name, ranks=list(ranks), batch_per_rank=batch_per_rank)
    everyone = len(ranks) if group is None else group
    w.graph["samples_per_iteration"] = everyone * batch_per_rank
    w.graph["batches_per_iteration"] = everyone
    if group is not None:
        w.graph["folded_ranks"] = len(ranks)
    # Built in bulk (one check per layer rather than per vertex, and each vertex's dict made
    # once and handed to the graph as is: Workload._add_built): a folded LLaMA2-13B run has
    # 40k vertices, and vertex-by-vertex insertion with checks took longer than simulating them.
    nodes: list[tuple[str, dict]] = []
    checked: list[tuple[str, dict]] = []  # rank 0's vertices: every rank's have the same numbers
    forward: list[list[str]] = []  # vertex names per layer, in rank order (the edges reuse them)
    backward: list[list[str]] = [[] for _ in layers]

    blocks: dict[str, list[str]] = {}  # a data block's name per rank, made once (a decoder's 30 operators share it)

    def compute(names: list[str], phase: str, li: int, layer: Layer, flops: float, mem: float, fp: float) -> None:
        block = layer.block or layer.name
        data = blocks.get(block)
        if data is None:
            data = blocks[block] = [f"{rank}/{block}" for rank in ranks]
        suffix = f"/{'FP' if phase == 'forward' else 'BP'}{li}:{layer.name}"
        start = li == 0 and phase == "forward"
        for r, rank in enumerate(ranks):
            vertex = f"{rank}{suffix}"
            names.append(vertex)
            # the keys in the order they always had: the graph's JSON and Chakra files list them so
            d = {"type": "compute", "flops": flops, "location": rank, "precision": precision, "mem_bytes": mem,
                 "footprint": fp, "is_start": start, "data": data[r], "rank": r, "layer": li,
                 "phase": phase}  # fmt: skip
            nodes.append((vertex, d))
        checked.append(nodes[-len(ranks)])

    for li, layer in enumerate(layers):
        fp = layer.footprint if layer.footprint is not None else layer.fwd_bytes + layer.bwd_bytes
        forward.append([])
        compute(forward[li], "forward", li, layer, layer.fwd_flops, layer.fwd_bytes, fp)
    ars: dict[int, str] = {}  # layer -> its allreduce vertex
    for li in reversed(range(len(layers))):
        layer = layers[li]
        # footprint 0: the layer's block is counted on its forward vertex
        compute(backward[li], "backward", li, layer, layer.bwd_flops, layer.bwd_bytes, 0.0)
        if len(ranks) > 1 and layer.grad_bytes > 0:
            ar = f"AR{li}:{layer.name}"
            d = {"type": "comm", "bytes": layer.grad_bytes, "kind": "allreduce", "algorithm": algorithm}
            d.update(scope=list(ranks), is_start=False, layer=li, phase="sync")
            if group is not None:
                d["group"] = group
            nodes.append((ar, d))
            checked.append(nodes[-1])
            ars[li] = ar
    if len({vertex for vertex, _ in nodes}) != len(nodes):  # a duplicate: name the first one
        seen: set[str] = set()
        for vertex, _ in nodes:
            if vertex in seen:
                raise HcsimError(
                    f"vertex '{vertex}' is a duplicate (vertex names must be unique: is a rank listed twice?)"
                )
            seen.add(vertex)
    for vertex, d in checked:
        Workload._check_vertex(vertex, d)

    # per rank: FP_0 -> .. -> FP_L -> BP_L -> .. -> BP_0; per layer BP -> AR -> FP of the next iteration
    # (BP -> FP directly when the layer has no allreduce)
    edges: list[tuple[str, str, dict]] = []
    last = len(layers) - 1
    for r in range(len(ranks)):
        fwd = [names[r] for names in forward]
        bwd = [names[r] for names in backward]
        edges += [(fwd[li], fwd[li + 1], {"skip_first_iteration": False}) for li in range(last)]
        edges.append((fwd[last], bwd[last], {"skip_first_iteration": False}))
        edges += [(bwd[li], bwd[li - 1], {"skip_first_iteration": False}) for li in range(last, 0, -1)]
        for li in range(len(layers)):
            ar = ars.get(li)
            if ar is not None:
                edges += [(bwd[li], ar, {"skip_first_iteration": False}), (ar, fwd[li], {"skip_first_iteration": True})]
            else:
                edges.append((bwd[li], fwd[li], {"skip_first_iteration": True}))
    w._add_built(nodes, edges)
    return w


def fig3_example(
    xpus: list[str],
    *,
    layer_flops: float = 1e12,
    layer_bytes: float = 4e9,
    grad_bytes: float = 1e8,
    algorithm: str = "ring",
) -> Workload:
    """Paper Fig. 3: two XPUs train a 3-layer network with data parallelism."""
    layers = [
        Layer(f"L{i + 1}", layer_flops, 2 * layer_flops, layer_bytes, layer_bytes, grad_bytes, layer_bytes)
        for i in range(3)
    ]
    return data_parallel(xpus, layers, algorithm=algorithm, name="fig3")


def allreduce_benchmark(ranks: list[str], nbytes: float, algorithm: str = "ring", group: int | None = None) -> Workload:
    """One allreduce of ``nbytes`` over ``ranks`` per iteration (iterations run back to back).

    ``group``: the ranks stand for this many in a folded run (see :func:`data_parallel`).
    """
    w = Workload(name=f"allreduce-{algorithm}", ranks=list(ranks))
    w.graph["samples_per_iteration"] = 1
    w.graph["batches_per_iteration"] = 1
    extra = {} if group is None else {"group": group}
    w.add_comm("allreduce", nbytes, "allreduce", ranks, algorithm=algorithm, is_start=True, **extra)
    return w
