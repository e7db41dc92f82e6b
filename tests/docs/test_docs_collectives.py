"""docs/collectives.md works as a new user would use it: the plug-in example runs as written.

The first ```python block is saved as ``my_algos.py``, the second runs next to it (its
printed time is the closed form the page states), and the workload JSON runs through
``hcsim run`` exactly as the page's command line says.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "collectives.md"
_BLOCK = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def blocks(lang: str) -> list[str]:
    return [body for kind, body in _BLOCK.findall(PAGE.read_text(encoding="utf-8")) if kind == lang]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(cwd), str(ROOT)]))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def user_dir(tmp_path):
    plugin, usage = blocks("python")[:2]
    assert len(plugin.splitlines()) <= 25, "the plug-in example should stay about 20 lines"
    (tmp_path / "my_algos.py").write_text(plugin)
    (tmp_path / "use.py").write_text(usage)
    (tmp_path / "two_shot.json").write_text(blocks("json")[0])
    return tmp_path


def test_the_plug_in_example_runs_and_matches_its_closed_form(user_dir):
    out = run(["use.py"], user_dir)
    assert out.returncode == 0, out.stderr
    n, size, bw, lat = 4, 64e6, 100e9, 1e-6
    assert float(out.stdout.split()[-1]) == pytest.approx(2 * (2 * lat + (n - 1) * size / (n * bw)), rel=1e-9)


def test_the_workload_json_names_the_plug_in_by_its_import_path(user_dir):
    line = next(ln for ln in blocks("")[0].splitlines() if "hcsim run" in ln)
    argv = line.split("hcsim ", 1)[1].split()
    out = run(["-c", "import sys; from hcsim.cli import main; sys.exit(main(sys.argv[1:]))", *argv], user_dir)
    assert out.returncode == 0, out.stderr
    assert "simulated time" in out.stdout
