"""Regenerate ``sample.swf``: 400 synthetic GPU jobs in two partitions, times in whole seconds.

Run from the repository root: ``.venv/bin/python examples/traces/make_sample.py``.
The output is byte-identical on every run (seeded).
"""

from __future__ import annotations

import os

from hcsim.frontends.cluster.traces import write_trace
from hcsim.frontends.cluster.traces.synthetic import synthetic_trace

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    trace = synthetic_trace(
        400, seed=2026, mean_interarrival=120.0, mean_duration=1800.0, partitions={"train": 3, "dev": 1}, users=20
    )
    for job in trace.jobs:  # SWF logs hold whole seconds
        job.submit = float(round(job.submit))
        job.duration = float(max(1, round(job.duration)))
    trace.source = "hcsim.frontends.cluster.traces.synthetic_trace(400, seed=2026)"
    write_trace(trace, os.path.join(HERE, "sample.swf"), "swf")


if __name__ == "__main__":
    main()
