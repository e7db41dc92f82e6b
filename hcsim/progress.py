"""Progress bars that show on terminals and stay silent otherwise (CI, pipes, log files).

One helper for every long job: sweeps (points done), simulations (iterations done and
simulated time) and trace readers (rows read), so they all look and behave alike. A bar
writes to stderr only, so no output file or JSON on stdout changes with it; docs/cli.md,
"Progress and what is printed".
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["progress_bar"]


def progress_bar(total: int | None, desc: str, unit: str, show: bool | None = None, **kwargs: Any) -> Any:
    """A tqdm bar on stderr; disabled unless ``show`` (default: stderr is a terminal)."""
    from tqdm import tqdm

    enabled = sys.stderr.isatty() if show is None else show
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, file=sys.stderr, **kwargs)
