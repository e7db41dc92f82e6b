"""Pipeline schedules: the order in which one stage runs its microbatches' passes.

A schedule is, per stage, the list of ``(pass, microbatch)`` it runs one after the other,
``pass`` being ``"F"`` (forward) or ``"B"`` (backward). The graph builder chains them on
every rank of the stage, so the order here is the order SimGrid runs them.

* **GPipe** (all forward, then all backward): ``F0 .. F(m-1), B0 .. B(m-1)`` on every
  stage (Megatron's order when every microbatch is a warm-up one). ``m`` activations are
  kept per stage.
* **1F1B** (PipeDream-Flush, Megatron's ``forward_backward_pipelining_without_interleaving``):
  stage ``s`` of ``p`` runs ``w = min(p - s - 1, m)`` warm-up forwards, then alternates one
  forward and one backward ``m - w`` times, then the ``w`` cool-down backwards. At most
  ``w + 1`` activations are kept, which is why it replaces GPipe; its bubble is the same,
  (p-1)/(m+p-1) of the iteration on uniform stages.

    >>> one_f_one_b(3, 4, 0)
    [('F', 0), ('F', 1), ('F', 2), ('B', 0), ('F', 3), ('B', 1), ('B', 2), ('B', 3)]
    >>> gpipe(3, 2, 1)
    [('F', 0), ('F', 1), ('B', 0), ('B', 1)]
"""

from __future__ import annotations

from collections.abc import Callable

from hcsim.registry import Registry

__all__ = ["SCHEDULES", "gpipe", "in_flight", "in_flight_by_chunk", "interleaved_1f1b", "one_f_one_b", "schedule"]

Pass = tuple[str, int]


def gpipe(stages: int, microbatches: int, stage: int) -> list[Pass]:
    """All forwards, then all backwards (in microbatch order)."""
    return [("F", i) for i in range(microbatches)] + [("B", i) for i in range(microbatches)]


def one_f_one_b(stages: int, microbatches: int, stage: int) -> list[Pass]:
    """Megatron's non-interleaved 1F1B: warm-up forwards, one-forward-one-backward, cool-down backwards."""
    warmup = min(stages - stage - 1, microbatches)
    order: list[Pass] = [("F", i) for i in range(warmup)]
    for i in range(microbatches - warmup):
        order += [("F", warmup + i), ("B", i)]
    return order + [("B", i) for i in range(microbatches - warmup, microbatches)]


def interleaved_1f1b(stages: int, microbatches: int, stage: int, chunks: int) -> list[tuple[str, int, int]]:
    """Megatron's interleaved 1F1B (``forward_backward_pipelining_with_interleaving``): ``(pass, mb, chunk)``.

    Each rank holds ``chunks`` model chunks (virtual stages ``chunk * stages + stage``).
    Forwards walk microbatches in groups of ``stages``: chunk 0 of the group's
    microbatches, then chunk 1, ...; backwards walk the same table with the chunks
    reversed (Megatron's ``get_schedule_table``, ``microbatch_group_size_per_vp_stage =
    stages``; a last group of fewer or more than ``stages`` microbatches takes the rest).
    Rank ``stage`` runs ``min(2*(stages - stage - 1) + (chunks - 1)*stages, m*chunks)``
    warm-up forwards, then one forward and one backward, then the cool-down backwards.
    On equal stages and no communication the bubble is ``(p-1)/(v*m)`` of the ideal time
    (Narayanan et al., SC'21, §2.2) when ``stages`` divides ``microbatches``.
    """
    table: list[tuple[int, int]] = []  # (microbatch, chunk) of the k-th forward
    for first in range(0, microbatches, stages):
        last = microbatches if first + stages >= microbatches else first + stages
        table += [(mb, c) for c in range(chunks) for mb in range(first, last)]
        if last == microbatches:
            break
    total = len(table)
    warmup = min(2 * (stages - stage - 1) + (chunks - 1) * stages, total)
    order: list[tuple[str, int, int]] = [("F", *table[k]) for k in range(warmup)]
    for k in range(total - warmup):
        mb, c = table[k + warmup]
        order.append(("F", mb, c))
        mb, c = table[k]
        order.append(("B", mb, chunks - 1 - c))
    for k in range(total - warmup, total):
        mb, c = table[k]
        order.append(("B", mb, chunks - 1 - c))
    return order


SCHEDULES: Registry[Callable[[int, int, int], list[Pass]]] = Registry(
    "pipeline schedule", {"1f1b": one_f_one_b, "gpipe": gpipe}
)


def schedule(name: str) -> Callable[[int, int, int], list[Pass]]:
    """The schedule called ``name`` (see :data:`SCHEDULES`)."""
    return SCHEDULES.lookup(name)


def in_flight(order: list[Pass] | list[tuple[str, int, int]]) -> int:
    """The most microbatches whose activations a stage keeps at once (forward done, backward not).

    With model chunks (``(pass, mb, chunk)`` entries) it counts chunk-microbatches:
    activations of one chunk each.
    """
    live = peak = 0
    for kind, *_ in order:
        live += 1 if kind == "F" else -1
        peak = max(peak, live)
    return peak


def in_flight_by_chunk(order: list[tuple[str, int, int]], chunks: int) -> list[int]:
    """Per model chunk, the microbatches whose activations it keeps when the stage keeps the most in all.

    With equal chunks that is the stage's activation peak: Megatron's interleaved first
    stage keeps ``2(p-1) + (v-1)p + 1`` chunk-microbatches, ``L·(1 + (p-1)/(p·v))`` layers'
    worth. One chunk: ``[in_flight(order)]``.
    """
    live = [0] * chunks
    best, peak = list(live), 0
    for kind, _, c in order:
        live[c] += 1 if kind == "F" else -1
        if sum(live) > peak:
            peak, best = sum(live), list(live)
    return best
