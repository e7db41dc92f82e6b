"""Running the hcsim command as a user does, for tests in any folder (tests/ is on sys.path via conftest.py)."""

import atexit
import os
import subprocess
import sys

from forked_cli import ForkedCli

CLI = [sys.executable, "-m", "hcsim.cli"]
_FORKED: list[ForkedCli] = []


def run(*args, cwd=None):
    """``hcsim ARGS`` in a process of its own (stdin empty); the completed process (text output).

    The process is forked from a server that has imported the command (:mod:`forked_cli`);
    ``HCSIM_TEST_FRESH_CLI=1`` starts a fresh interpreter (``python -m hcsim.cli``) instead.
    """
    argv = [str(a) for a in args]
    if os.environ.get("HCSIM_TEST_FRESH_CLI") == "1":
        return subprocess.run([*CLI, *argv], capture_output=True, text=True, cwd=cwd, timeout=600, input="")
    if not _FORKED:
        _FORKED.append(ForkedCli())
        atexit.register(_FORKED[0].close)
    r = _FORKED[0].run(argv, cwd=str(cwd) if cwd is not None else os.getcwd(), timeout=600)
    if r.timed_out:
        raise subprocess.TimeoutExpired([*CLI, *argv], 600)
    return subprocess.CompletedProcess([*CLI, *argv], r.returncode, r.stdout, r.stderr)


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


def tiny_llama_config(folder, layers: int = 2, positions: int = 1024):
    """A HuggingFace config.json of a tiny LLaMA-like model (hidden 1024, 8 heads) written in ``folder``; its path."""
    import json

    path = os.path.join(str(folder), "config.json")
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 1024, "num_attention_heads": 8,
              "num_key_value_heads": 8, "num_hidden_layers": layers, "intermediate_size": 4096, "vocab_size": 32000,
              "max_position_embeddings": positions}  # fmt: skip
    with open(path, "w") as f:
        json.dump(config, f)
    return path
