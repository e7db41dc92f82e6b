"""A process killed in the middle of the cluster, demo or sweep work leaves no temporary file (issue 25, item 1).

Each case runs the work in a child Python process whose TMPDIR is an empty directory of the
test's own, holds it at a known point in the middle (after its platform is compiled, before
SimGrid runs it: a patched function announces itself and waits for a signal), then sends
SIGTERM or SIGKILL: neither lets Python clean up, so only files never put on disk leave
nothing. TMPDIR must be empty afterwards, and the demo's output directory must not exist.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

HOLD = """
import signal, sys

def hold(*args, **kwargs):
    print("ready", flush=True)
    signal.pause()
"""

CASES = {
    # the demo: its first platform compiled and timed, held at the first computation
    "demo": """
import hcsim.demo as demo
demo.simulate_compute = hold
demo.run_demo(16, sys.argv[1])
""",
    # a cluster run without a platform file: its platform compiled, held where SimGrid would start
    "cluster": """
import hcsim.frontends.cluster.simulator as simulator
from hcsim.frontends.cluster import Job
from hcsim.platform import noncoherent_system
simulator.run_isolated = hold
simulator.simulate_cluster(noncoherent_system(8), [Job("a", 0.0, 8, duration=1.0)], progress=False)
""",
    # a sweep point of the collective experiment: its platform compiled into the per-process cache, held at
    # the measurement
    "sweep": """
import hcsim.sweep.collective_bench as bench
from hcsim.sweep.experiments import collective
bench.measure = hold
collective(system="cxl", xpus=16, nbytes="1MiB")
""",
}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
@pytest.mark.parametrize("case", list(CASES))
def test_killed_midway_leaves_no_temporary_file(case: str, sig: signal.Signals, tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out"
    env = {**os.environ, "TMPDIR": str(scratch), "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    code = textwrap.dedent(HOLD) + textwrap.dedent(CASES[case])
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(out)], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        line = p.stdout.readline()  # type: ignore[union-attr]
        assert line == b"ready\n", (line, p.stderr.read())  # type: ignore[union-attr]
        assert list(scratch.iterdir()) == []  # nothing on disk in the middle of the work either
        p.send_signal(sig)
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -sig
    assert list(scratch.iterdir()) == []
    assert not out.exists()
