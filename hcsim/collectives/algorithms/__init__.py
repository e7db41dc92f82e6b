"""hcsim's library of collective algorithms, one module per family; importing it registers them.

Each kind's default is registered with ``default=True`` (the paper's: ``ring``); the
import order below is the order :func:`hcsim.collectives.names` lists the others in.
Each module's docstring gives the algorithm's alpha-beta closed form, which
``tests/collectives/test_collectives.py`` and ``tests/collectives/test_collective_algorithms.py`` check
against SimGrid.
"""

from hcsim.collectives.algorithms import chain, direct, ring  # noqa: F401 - the families of the defaults first

# isort: split
from hcsim.collectives.algorithms import (  # noqa: F401 - the rest of the library, after the defaults
    direct_exchange,
    halving_doubling,
    hierarchical,
    nccl_rings,
    pairwise,
    ring_alltoall,
    shared_memory,
    topology_ring,
    tree,
)
