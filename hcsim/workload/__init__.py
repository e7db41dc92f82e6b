"""Workload layer: AI tasks as cyclic graphs of compute and communication vertices.

A :class:`Workload` is a NetworkX digraph whose loop-carried edges close the training
cycle; the builders make data-parallel training from a list of layers
(:func:`data_parallel`), LLaMA2-13B as the paper models it (:mod:`.llama2`), transformer
models (:mod:`.models`) and parallel layouts (:mod:`.parallel`). This layer knows no
SimGrid: the engine runs the graphs.

Guide: docs/workloads-and-engine.md.
"""

from hcsim.workload.builders import Layer, allreduce_benchmark, data_parallel, fig3_example
from hcsim.workload.catalog import WORKLOADS, workload_by_name
from hcsim.workload.graph import ALGORITHMS, COMM_KINDS, Workload

__all__ = [
    "ALGORITHMS",
    "COMM_KINDS",
    "WORKLOADS",
    "Layer",
    "Workload",
    "allreduce_benchmark",
    "data_parallel",
    "fig3_example",
    "workload_by_name",
]
