"""Analysis: closed forms and statistics to check simulations against, and analyses of a run.

* :mod:`.queueing` - Inoue's dynamic-batching queue: fits, bounds, exact latency;
* :mod:`.statistics` - t quantiles, confidence intervals, Erlang C, shared by front ends;
* :mod:`.breakdown` - where a training iteration goes, read from a run's trace.

Above the engine and the fast paths (it reads their ``RunResult``), below the front ends.
"""
