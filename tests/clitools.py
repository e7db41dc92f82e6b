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


def run_here(*args):
    """``hcsim ARGS`` in this interpreter (fast for errors found before any work); (status, stdout, stderr)."""
    import contextlib
    import io

    from hcsim.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(a) for a in args])
        except SystemExit as exc:  # argparse's usage errors
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def assert_refused(status_out_err, *needles):
    """A :func:`run_here` result that is exit 2 and one line ``hcsim: error: ...`` containing every needle."""
    status, _, err = status_out_err
    lines = err.strip().splitlines()
    assert status == 2, (status, err)
    assert len(lines) == 1 and lines[0].startswith("hcsim: error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]
