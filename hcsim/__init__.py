"""hcsim: performance modelling of heterogeneous, cache-coherent AI systems on SimGrid.

Layers, data flowing one way (as in the HCSim paper):
``hcsim.platform`` (topology -> SimGrid platform XML) -> ``hcsim.engine`` <-
``hcsim.workload`` (workload graphs) <- front ends (``hcsim.frontends``, ``hcsim.sweep``).
Where each concept lives: ``docs/architecture.md``.

The public entry points are re-exported here lazily (``import hcsim`` stays cheap)::

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

_LAZY = {
    # platform
    "Topology": "hcsim.platform.topology",
    "compile_platform": "hcsim.platform.compiler",
    "cxl_system": "hcsim.platform.builders",
    "noncoherent_system": "hcsim.platform.builders",
    "leaf_spine": "hcsim.platform.builders",
    "ring": "hcsim.platform.builders",
    "star": "hcsim.platform.builders",
    "single_server": "hcsim.platform.builders",
    "fold_data_parallel": "hcsim.fast.folding",
    # workload
    "Workload": "hcsim.workload.graph",
    "data_parallel": "hcsim.workload.builders",
    "allreduce_benchmark": "hcsim.workload.builders",
    "fig3_example": "hcsim.workload.builders",
    "llama2_13b": "hcsim.workload.llama2",
    # engine
    "simulate": "hcsim.engine.simulator",
    "simulate_system": "hcsim.fast.system",
    "RunResult": "hcsim.engine.records",
    "summarize": "hcsim.engine.report",
    # front ends
    "simulate_cluster": "hcsim.frontends.cluster.simulator",
    "run_sweep": "hcsim.sweep",
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
