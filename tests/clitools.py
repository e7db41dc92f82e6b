"""Running the hcsim command as a user does, for tests in any folder (tests/ is on sys.path via conftest.py)."""

import subprocess
import sys

CLI = [sys.executable, "-m", "hcsim.cli"]


def run(*args, cwd=None):
    """``hcsim ARGS`` in a fresh interpreter; the completed process (text output)."""
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600)


def assert_one_line_error(result, *needles):
    """Exit 2, one line on stderr containing every needle, no traceback."""
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
