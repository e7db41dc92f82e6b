"""Queue selection for batch-processing supercomputers (Kawanami, Yoshihisa, Kanazawa), on SimGrid.

A job manager (the gateway) puts each arriving job into one of N = 6 queues by a
selection method: ``random``, ``mql`` (fewest jobs now), ``maql`` (smallest
time-averaged length) or ``offset(M)`` (fewest completions in the last M minutes).
Arrivals follow the paper's Lomax law, service times its 12 parameter sets, and a queue
is either the paper's (a job's end is fixed on arrival) or a FIFO line of c servers. The
metric is the completion time (finish - arrival); :func:`summarize` reports it per
method.

Invariants: every method of a replication sees the same arrivals, service draws and
uniforms (common random numbers), and the results do not depend on ``workers``.

Where it lives: :mod:`.model` (parameters, inputs, queue state, run records),
:mod:`.rules` (the selection rules, a registry), :mod:`.simulator` (SimGrid),
:mod:`.outputs` (summary, CDFs, files); the command is :mod:`hcsim.cli.queue_selection`.

Guide: docs/queue-selection.md (the model, how it runs on SimGrid, the choices made
where the paper is silent).
"""

from __future__ import annotations

from hcsim.analysis.statistics import erlang_c_response, ratio_interval
from hcsim.analysis.statistics import t975 as _t975  # noqa: F401 - the old private name, used by tests
from hcsim.cli.queue_selection import add_arguments
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
from hcsim.frontends.queue_selection.runner import run_from_arguments
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
    "add_arguments",
    "run_from_arguments",
    "ARRIVALS",
    "OFFSET_RULES",
    "OFFSET_TIES",
    "RULES",
    "register_rule",
]
