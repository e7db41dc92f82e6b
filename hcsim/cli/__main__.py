"""``python -m hcsim.cli``: the ``hcsim`` command, as the console script runs it.

The tests and the fingerprint runs start the command this way, in a fresh interpreter,
so they see what a user sees: the exit status, and stdout and stderr as printed by
:func:`hcsim.cli.main.main`.
"""

import sys

from hcsim.cli.main import main

sys.exit(main())
