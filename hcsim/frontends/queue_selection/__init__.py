"""Queue selection for batch-processing supercomputers (Kawanami, Yoshihisa, Kanazawa), on SimGrid.

A gateway puts each arriving job into one of N = 6 queues by a selection rule (random,
mql, maql, offset(M)); the metric is the distribution of job completion times per rule.
Every queue is a SimGrid host and every job an exec on it (1 simulated second is 1
minute); all rules of a replication share its arrivals and service draws (common random
numbers), and results do not depend on the number of worker processes.

Where it lives: :mod:`.model` (parameters, inputs, queue state, run records),
:mod:`.rules` (the selection rules, a registry), :mod:`.simulator` (SimGrid:
:func:`simulate`, :func:`run_traces`), :mod:`.outputs` (summary, CDFs, files); the
command is :mod:`hcsim.cli.queue_selection`. The model, the paper's parameter sets and
the choices made where the paper is silent: docs/queue-selection.md.
"""

from __future__ import annotations

from hcsim.analysis.statistics import erlang_c_response, ratio_interval
from hcsim.analysis.statistics import t975 as _t975  # noqa: F401 - the old private name, used by tests
from hcsim.frontends.queue_selection.model import (
    ARRIVALS,
    LOMAX_A,
    LOMAX_B,
    LOMAX_CAP,
    MODELS,
    OFFSET_RULES,
    OFFSET_TIES,
    OFFSETS,
    SETS,
    WEEK,
    Inputs,
    MethodJobs,
    QueueRun,
    QueueState,
    draw_inputs,
    lomax_cdf,
    lomax_sample,
    service_times,
)
from hcsim.frontends.queue_selection.outputs import cdf_points, summarize, write_outputs
from hcsim.frontends.queue_selection.rules import (
    METHODS,
    RULES,
    Method,
    paper_methods,
    parse_method,
    register_rule,
    select_queue,
)
from hcsim.frontends.queue_selection.simulator import BLOCK, run_traces, simulate

__all__ = [
    "SETS",
    "METHODS",
    "MODELS",
    "OFFSETS",
    "WEEK",
    "LOMAX_A",
    "LOMAX_B",
    "LOMAX_CAP",
    "BLOCK",
    "Method",
    "parse_method",
    "paper_methods",
    "service_times",
    "lomax_cdf",
    "lomax_sample",
    "Inputs",
    "draw_inputs",
    "QueueState",
    "select_queue",
    "run_traces",
    "MethodJobs",
    "QueueRun",
    "simulate",
    "summarize",
    "ratio_interval",
    "cdf_points",
    "erlang_c_response",
    "write_outputs",
    "ARRIVALS",
    "OFFSET_RULES",
    "OFFSET_TIES",
    "RULES",
    "register_rule",
]
