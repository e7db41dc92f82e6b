"""Parallel training of transformers: layouts, rank mapping, pipeline schedules, the graph builder.

* :mod:`.layout`: ``dp x tp x pp (x ep)`` and where each rank lives;
* :mod:`.schedules`: GPipe and 1F1B orders of a stage's passes;
* :mod:`.costs`: a block's operators as the parts one compute vertex runs;
* :mod:`.comms`: which collectives each parallelism adds, and their sizes;
* :mod:`.builder`: :func:`training_graph`, one training iteration as a workload graph;
* :mod:`.factory`: :class:`TrainingWorkload`, that graph as the engine's workload factory;
* :mod:`.units`: what a fold keeps or drops whole (replicas, EP groups) and their flows.

Guide: docs/parallelism.md.
"""

from hcsim.workload.parallel.builder import training_graph
from hcsim.workload.parallel.factory import TrainingWorkload
from hcsim.workload.parallel.layout import Layout, RankGrid
from hcsim.workload.parallel.schedules import SCHEDULES, gpipe, one_f_one_b

__all__ = ["SCHEDULES", "Layout", "RankGrid", "TrainingWorkload", "gpipe", "one_f_one_b", "training_graph"]
