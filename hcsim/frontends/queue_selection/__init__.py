"""Queue selection for batch-processing supercomputers (Kawanami, Yoshihisa, Kanazawa), on SimGrid.

A job manager (the gateway) receives jobs and puts each into one of N = 6 queues. The
selection methods, as in the paper's section 3:

* ``random`` - a uniformly random queue;
* ``mql`` (minimum queue length) - the queue holding the fewest jobs (running + waiting)
  at the arrival instant; ties broken at random;
* ``maql`` (minimum average queue length) - the queue whose time-averaged length over
  [0, now] is smallest; ties to the lowest queue id (at time 0 every average is 0);
* ``offset(M)`` - the queue that completed the fewest jobs during the last M minutes
  ("offset jobs"); jobs arriving before time M go to a random queue.

The model (section 4). Inter-arrival times X [min] follow the Lomax (Pareto II) law
fitted to two months of HPC2500 data, F(x) = 1 - (1 + x/b)^(-a), a = 1.1, b = 7.34927;
draws above 1000 min are discarded and redrawn. They are sampled by inverse transform,
x = b ((1 - u)^(-1/a) - 1), from a Mersenne Twister (numpy ``MT19937``). Mean service
times p_i [min] (:data:`SETS`):

* set 1: (a) all 30; (b) 15,15,15,45,45,45; (c) 15,15,30,30,45,45; (d) 5,15,25,35,45,55
* set 2: (a) all 60; (b) 30,30,30,90,90,90; (c) 30,30,60,60,90,90; (d) 35,45,...,85
* set 3: (a) all 90; (b) 45,45,45,135,135,135; (c) 45,45,90,90,135,135; (d) 65,75,...,115

Two models of a queue:

* ``paper`` - as in the paper: a job arriving at T_now into queue i gets the end time
  T_now + Y, Y ~ Exp(mean p_i); it never waits (so jobs need not finish in arrival order).
  A queue's length is the number of its jobs not yet finished.
* ``fifo`` - a realistic queue: ``servers`` (c) servers per queue, a FIFO line, service
  Y ~ Exp(mean p_i); the length counts running and waiting jobs.

The metric is the distribution of the job service time as the paper calls it, i.e. the
completion time, finish - arrival; :func:`summarize` gives its mean (with a 95% interval
across replications), median, p90 and p99 per method.

How it runs on SimGrid. 1 simulated second is 1 minute. Every queue of every simulated
system is a SimGrid host of speed 1 (flop per minute); every job is an ``Exec`` of Y
flops on its queue's host, so it lasts Y minutes. In the paper model the host has more
cores than the replication has jobs, so executions never share a core and each lasts
exactly Y; in the fifo model it has c cores and the controller starts a job only when one
of the queue's c executions ends, so SimGrid never shares a core either. One controller
actor per replication (on a host of its own) drives the systems of all requested methods
side by side: the systems share the replication's arrivals, service draws and uniforms
(common random numbers), so differences between methods are not masked by different
arrivals. The controller (a :class:`~hcsim.engine.driver.Driver`) waits for every running
execution and a timer execution that ends at the next arrival instant: it wakes once per completion and
once per arrival, and reads the queue lengths, the area under them and the completion
times from what SimGrid reported. Replications run in blocks of :data:`BLOCK` per SimGrid
process (:func:`hcsim.simgrid_runtime.run_isolated`), blocks in parallel with ``workers`` > 1; the block
layout does not depend on ``workers``, so neither do the results.

Choices made here where the paper is silent (they are this implementation's choices):

* a replication covers arrivals in [0, period) (period = one week, 10080 min); the first
  job arrives after one inter-arrival time (a renewal process from time 0); every job that
  arrived is run to completion (no censoring at the end of the week); queues start empty;
* seeds: replication r uses three MT19937 streams seeded by ``SeedSequence([seed, r, s])``:
  s = 0 inter-arrival times, s = 1 unit-mean exponentials E_j (job j's service time in
  queue i is p_i E_j), s = 2 one uniform u_j per job (the Random choice, the random
  tie-breaks of MQL and of offset if ``offset_ties="random"``, and offset before time M);
* MAQL compares the areas under the queue-length curves over [0, now] (the same order as
  the averages, which share the divisor now); queue length = jobs not yet finished;
* offset counts completions in the window (now - M, now]; ties go to the lowest queue id
  by default (``offset_ties="lowest"``, as MAQL, the other history-based method; ``random``
  is offered). The paper states the rule once as "fewest offset jobs" (section 3.4, the
  rule used here, ``offset_rule="fewest"``) but motivates it in the sentence before by
  picking the queue that completed the *most* jobs; ``offset_rule="most"`` runs that
  reading;
* events at the same instant (probability zero with continuous draws) are handled in the
  order SimGrid reports them; a job's arrival instant is SimGrid's clock when the timer
  ends, which differs from the drawn instant by float rounding only (about 1e-12 min).

Where it lives: :mod:`.model` (parameters, inputs, queue state, run records),
:mod:`.rules` (the selection rules, a registry), :mod:`.simulator` (SimGrid:
:func:`simulate`, :func:`run_traces`), :mod:`.outputs` (summary, CDFs, files),
:mod:`.cli` (``hcsim queues``); the shared statistics (t quantiles, the ratio estimator's
interval, Erlang C) are in :mod:`hcsim.analysis.statistics`.
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
