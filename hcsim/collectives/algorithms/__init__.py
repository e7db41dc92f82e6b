"""hcsim's library of collective algorithms, one module per family; importing it registers them.

The first algorithm registered for a kind is its default (the paper's: ``ring``).
Each module's docstring gives the algorithm's alpha-beta closed form, which
``tests/test_collectives.py`` checks against SimGrid.
"""

from hcsim.collectives.algorithms import chain, direct, ring  # noqa: F401 - registration order: defaults first
