"""hcsim: performance modelling of heterogeneous, cache-coherent AI systems on SimGrid.

The names a user starts from are re-exported here from one table, lazily (``import
hcsim`` stays cheap); ``docs/api.md`` lists them, generated from that table, and
``docs/architecture.md`` says where every concept lives::

    >>> import hcsim
    >>> topology = hcsim.cxl_system(16)  # paper Fig. 6(b), 16 H100
    >>> result = hcsim.simulate_system(topology, hcsim.llama2_13b, fast=True)
    >>> round(hcsim.summarize(result)["batches_per_s"], 1)  # LLaMA2-13B, data parallel
    2.8
"""

from importlib import import_module
from typing import Any

from hcsim.errors import HcsimError

__version__ = "0.1.0"

#: The public API, one table: name -> the module that defines it. ``__all__``,
#: ``dir(hcsim)`` and docs/api.md (``python scripts/gen_docs.py``) are made from it.
_LAZY = {
    # platform: build a topology, compile it to SimGrid XML
    "Topology": "hcsim.platform.topology",
    "Device": "hcsim.platform.devices",
    "cxl_system": "hcsim.platform.builders",
    "noncoherent_system": "hcsim.platform.builders",
    "single_server": "hcsim.platform.builders",
    "ring": "hcsim.platform.builders",
    "star": "hcsim.platform.builders",
    "leaf_spine": "hcsim.platform.builders",
    "fat_tree": "hcsim.platform.builders",
    "dgx_system": "hcsim.platform.dgx",
    "load_calibration": "hcsim.calibration.schema",
    "compile_platform": "hcsim.platform.compiler",
    # collectives: the plug-in API
    "register": "hcsim.collectives.table",
    "Schedule": "hcsim.collectives.schedule",
    "Flow": "hcsim.collectives.schedule",
    "TopologyView": "hcsim.collectives.view",
    "build_schedule": "hcsim.collectives.registry",
    "check_schedule": "hcsim.collectives.check",
    # workload: what runs
    "Workload": "hcsim.workload.graph",
    "data_parallel": "hcsim.workload.builders",
    "allreduce_benchmark": "hcsim.workload.builders",
    "fig3_example": "hcsim.workload.builders",
    "llama2_13b": "hcsim.workload.llama2",
    "load_model": "hcsim.workload.models.spec",
    "TransformerSpec": "hcsim.workload.models.spec",
    "Layout": "hcsim.workload.parallel.layout",
    "TrainingWorkload": "hcsim.workload.parallel.factory",
    # engine: run it
    "simulate": "hcsim.engine.simulator",
    "RunResult": "hcsim.engine.records",
    "summarize": "hcsim.engine.report",
    # fast paths: run it at scale
    "simulate_system": "hcsim.fast.system",
    "RunOptions": "hcsim.fast.system",
    "fold_data_parallel": "hcsim.fast.folding",
    # analysis: read a run
    "breakdown": "hcsim.analysis.breakdown",
    # front ends and sweeps
    "serve": "hcsim.frontends.serving.batching",
    "simulate_cluster": "hcsim.frontends.cluster.simulator",
    "Job": "hcsim.frontends.cluster.jobs",
    "read_trace": "hcsim.frontends.cluster.traces.registry",
    "SweepSpec": "hcsim.sweep.spec",
    "run_sweep": "hcsim.sweep.runner",
}

__all__ = ["HcsimError", "__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hcsim' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
