"""hcsim's library of collective algorithms, one module per family; importing it registers them.

The first algorithm registered for a kind is its default (the paper's: ``ring``).
Each module's docstring gives the algorithm's alpha-beta closed form, which
``tests/collectives/test_collectives.py`` and ``tests/collectives/test_collective_algorithms.py`` check
against SimGrid.
"""

from hcsim.collectives.algorithms import chain, direct, ring  # noqa: F401 - registration order: defaults first

# isort: split
from hcsim.collectives.algorithms import (  # noqa: F401 - the rest of the library, after the defaults
    direct_exchange,
    halving_doubling,
    hierarchical,
    pairwise,
    shared_memory,
    topology_ring,
    tree,
)
