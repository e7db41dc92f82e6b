"""A training run as the workload factory the engine calls, which also tells a fold its layout.

:func:`hcsim.fast.simulate_system` builds a workload by calling its factory with the
XPUs it simulates (``factory(ranks, group=...)``). A :class:`TrainingWorkload` builds
:func:`~hcsim.workload.parallel.training_graph` there and, through its
:meth:`~TrainingWorkload.layout_data` method, tells a fold its layout (the fold reads
the units that repeat from it: :mod:`hcsim.fast.units`): with ``fast=True`` whole
replicas are kept and the gradient rings stand for the full data-parallel groups.

    >>> from hcsim.fast import simulate_system
    >>> from hcsim.platform import cxl_system
    >>> from hcsim.workload.models import TransformerSpec
    >>> spec = TransformerSpec("tiny", layers=2, hidden=1024, heads=8, kv_heads=8, intermediate=4096,
    ...                        vocab=32000, sequence=512)
    >>> run = simulate_system(cxl_system(128, servers_per_rack=2), TrainingWorkload(spec, "tp=8,pp=2"), fast=True)
    >>> run.fold.group, len(run.fold.ranks)  # 8 replicas of 16 XPUs, 2 kept
    (128, 32)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hcsim.workload.graph import Workload
from hcsim.workload.parallel.builder import training_graph
from hcsim.workload.parallel.layout import Layout

__all__ = ["LayoutData", "TrainingWorkload"]


@dataclass(frozen=True)
class LayoutData:
    """What a run's layout says about its communication: the layout and the choices that shape its collectives."""

    layout: Layout
    mapping: str | Sequence[str] | None = None
    zero: int = 0
    sequence_parallel: bool = False
    dp_algorithm: str = "ring"
    tp_algorithm: str = "ring"
    alltoall_algorithm: str = "direct"
    experts: bool = False  # the model has expert parameters


class TrainingWorkload:
    """``factory(ranks, group=None) -> Workload`` for one training iteration of ``spec`` under ``layout``.

    ``layout``: a :class:`Layout`, its text (``dp`` may be left out: what is left of
    the system's XPUs) or a function of the system's XPU count returning one; ``options``: the keyword arguments of
    :func:`~hcsim.workload.parallel.training_graph` (``microbatches``, ``zero``,
    ``sequence_parallel``, ``dp_algorithm``, ``mapping``, ...).
    """

    def __init__(self, spec: Any, layout: Layout | str | Callable[[int], Layout], **options: Any) -> None:
        self.spec, self.layout, self.options = spec, layout, options

    def full_layout(self, xpus: int) -> Layout:
        """The layout on a system of ``xpus`` XPUs (``dp`` filled in)."""
        if isinstance(self.layout, Layout):
            return self.layout
        return Layout.parse(self.layout, xpus) if isinstance(self.layout, str) else self.layout(xpus)

    def __call__(self, ranks: list[str], group: int | None = None) -> Workload:
        layout = self.full_layout(len(ranks) if group is None else group)
        return training_graph(self.spec, layout, ranks, group=group, **self.options)

    def layout_data(self, topology: Any) -> LayoutData:
        """This run's layout on ``topology`` (checked: raises a one-line HcsimError) and its collectives' choices."""
        layout = self.full_layout(len(topology.xpus()))
        layout.check(len(topology.xpus()), self.spec, self.options.get("pipeline_split"))
        o = self.options
        return LayoutData(
            layout, mapping=o.get("mapping"), zero=o.get("zero", 0),
            sequence_parallel=o.get("sequence_parallel", False), dp_algorithm=o.get("dp_algorithm", "ring"),
            tp_algorithm=o.get("tp_algorithm", "ring"), alltoall_algorithm=o.get("alltoall_algorithm", "direct"),
            experts=bool(getattr(self.spec, "experts", 0)),
        )  # fmt: skip
