"""Job traces for the cluster front end: three public trace formats and a synthetic generator.

Every reader returns a :class:`~hcsim.frontends.cluster.jobs.Trace` whose jobs are sorted
by submit time (stable: file order among equal submits), with time 0 = the earliest
submit; ``Trace.submit_epoch`` keeps the absolute time of time 0 in the format's own
clock. Rows that are well formed but cannot be a GPU job are left out and listed in
``Trace.skipped`` as ``(line, reason)``; malformed input raises
:class:`~hcsim.errors.HcsimError` with one line naming the file, the line (or the job
index in JSON) and what would be valid.

* :mod:`.helios`, :mod:`.philly`, :mod:`.swf`: the readers (and :func:`write_swf`);
* :mod:`.synthetic`: :func:`synthetic_trace` and :func:`scale_load`;
* :mod:`.registry`: the format table (name -> reader, writer, extensions, sniffing),
  :func:`read_trace`, :func:`guess_format`, :func:`write_trace`, :func:`register_format`.

Every format and its mapping: docs/cluster.md, "Trace formats".
"""

from __future__ import annotations

from hcsim.frontends.cluster.traces.helios import HELIOS_OPTIONAL, HELIOS_REQUIRED, read_helios
from hcsim.frontends.cluster.traces.philly import read_philly
from hcsim.frontends.cluster.traces.registry import (
    FORMATS,
    TRACE_FORMATS,
    TraceFormat,
    guess_format,
    read_trace,
    register_format,
    write_trace,
)
from hcsim.frontends.cluster.traces.swf import read_swf, write_swf
from hcsim.frontends.cluster.traces.synthetic import DEFAULT_GPU_MIX, scale_load, synthetic_trace

__all__ = [
    "DEFAULT_GPU_MIX",
    "FORMATS",
    "HELIOS_OPTIONAL",
    "HELIOS_REQUIRED",
    "TRACE_FORMATS",
    "TraceFormat",
    "guess_format",
    "read_helios",
    "read_philly",
    "read_swf",
    "read_trace",
    "register_format",
    "scale_load",
    "synthetic_trace",
    "write_swf",
    "write_trace",
]
