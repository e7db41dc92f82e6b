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

__all__ = ["SCHEDULES", "gpipe", "in_flight", "one_f_one_b", "schedule"]

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


SCHEDULES: Registry[Callable[[int, int, int], list[Pass]]] = Registry(
    "pipeline schedule", {"1f1b": one_f_one_b, "gpipe": gpipe}
)


def schedule(name: str) -> Callable[[int, int, int], list[Pass]]:
    """The schedule called ``name`` (see :data:`SCHEDULES`)."""
    return SCHEDULES.lookup(name)


def in_flight(order: list[Pass]) -> int:
    """The most microbatches whose activations a stage keeps at once (forward done, backward not)."""
    live = peak = 0
    for kind, _ in order:
        live += 1 if kind == "F" else -1
        peak = max(peak, live)
    return peak
