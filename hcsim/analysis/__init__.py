"""Analysis: closed forms and exact numerics to check simulations against, and what a run's trace says.

* :mod:`.queueing`: Inoue's dynamic-batching queue (fits, bounds, exact latency);
* :mod:`.statistics`: Student's t quantiles, confidence intervals, Erlang C, shared by
  the front ends' checks;
* :mod:`.breakdown`: where a rank's training iteration goes, read from a run's trace.

Guides: docs/serving.md, "Analysis"; docs/parallelism.md, "Where the time goes".
"""
