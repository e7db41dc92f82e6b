"""hcsim: performance modelling of heterogeneous, cache-coherent AI systems on SimGrid.

Layers, data flowing one way (as in the HCSim paper):
``hcsim.platform`` (topology -> SimGrid platform XML) -> engine <- workload graph <- front ends.
"""

from hcsim.errors import HcsimError

__version__ = "0.1.0"
__all__ = ["HcsimError", "__version__"]
