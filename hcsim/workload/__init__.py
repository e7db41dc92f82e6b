"""Workload layer: AI tasks as cyclic graphs of compute and communication vertices."""

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
