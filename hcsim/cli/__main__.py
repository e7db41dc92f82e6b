"""``python -m hcsim.cli``: the ``hcsim`` command."""

import sys

from hcsim.cli.main import main

sys.exit(main())
