"""Every shell command in the documentation runs as written, from a clean copy of the repository.

The commands are the lines of README.md's and docs/*.md's fenced ``sh``/``bash``/
``console``/plain blocks that start with ``hcsim`` or ``python`` (``.venv/bin/`` in
front, ``PYTHONPATH=.`` or ``$`` before, ``\\`` continuations joined), and the examples
of README.md's command table. Each is listed in :data:`HOW` with how it is checked:

* ``fast``: run, in the page's order, in one fresh copy of the repository per page
  (so ``platform check p.xml`` finds the ``p.xml`` an earlier line wrote); exit 0;
* ``slow``: the same, in the slow suite (``@pytest.mark.slow``);
* a sentence (why it cannot run here: hours of work, a Dask scheduler on another
  machine, a download): its script or subcommand exists and its ``--help`` names every
  flag the line uses.

A command found in the docs and not in :data:`HOW` fails (a new command must say how it
is checked), and so does an entry of :data:`HOW` no page holds any more. Optional parts
written ``[--quick]`` run with what the brackets hold; ``# comments`` are dropped.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
_TABLE_EXAMPLE = re.compile(r"^\|.*\|\s*`((?:\.venv/bin/)?hcsim [^`]+)`\s*\|\s*$", re.M)
_START = re.compile(r"^(?:\$ )?(?:PYTHONPATH=\S+ )?(?:\.venv/bin/)?(?:hcsim|python)(?:\s|$)")
NOT_RUN = "not run here"
TIMEOUT = 900

HOW: dict[str, str] = {
    # README.md
    "hcsim platform build cxl --xpus 4096 -o p.xml": "fast",
    "hcsim platform import examples/astra-sim/HGX-H100.yml -o p.xml": "fast",
    "hcsim run --system cxl --xpus 1024 --workload llama2-13b --iterations 2 --fast": "fast",
    "hcsim collective --system cxl --xpus 64 --algorithm all --sizes 1KiB:1GiB": "slow",
    "hcsim sweep examples/sweeps/allreduce.yaml -j 2": "slow",
    "hcsim serve --gpu v100 --rho 0.7": "fast",
    "hcsim run --system cxl --xpus 8 --model llama3-70b --inference --batch 8 --context 4096": "fast",
    "hcsim run --system cxl --xpus 1024 --model llama3-70b --parallel tp=8,pp=4 --fast": "slow",
    "hcsim cluster --trace examples/traces/sample.swf --policy mlfq --out results/sample": "fast",
    "hcsim queue-selection --method all --set 1d": "fast",
    "hcsim demo": "fast",
}


def _pages_commands() -> list[tuple[str, str]]:
    """(page, command) in page order: fenced shell lines first, then README's table examples."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = str(page.relative_to(ROOT))
        for lang, body in _BLOCK.findall(text):
            if lang not in ("", "sh", "bash", "console", "shell"):
                continue
            joined = re.sub(r"\\\n\s*", " ", body)
            for line in joined.splitlines():
                line = line.strip()
                if _START.match(line):
                    out.append((name, normalize(line)))
        if page.name == "README.md":
            out.extend((name, normalize(m)) for m in _TABLE_EXAMPLE.findall(text))
    return out


def normalize(line: str) -> str:
    """The command as HOW keys it: no ``$``, no ``.venv/bin/``, no comment, single spaces."""
    line = re.sub(r"^\$ ", "", line)
    line = re.sub(r"\s+#.*$", "", line) if " #" in line else line
    line = line.replace(".venv/bin/", "")
    return " ".join(line.split())


def argv(command: str) -> tuple[list[str], dict[str, str]]:
    """The process to start for ``command`` (brackets' contents kept), and extra environment."""
    env = {}
    words = shlex.split(command.replace("[", "").replace("]", ""))
    while words and re.match(r"^[A-Z_]+=", words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    if words[0] == "hcsim":
        return [sys.executable, "-m", "hcsim.cli", *words[1:]], env
    assert words[0] == "python", command
    return [sys.executable, *words[1:]], env


def _copy(tmp: Path) -> Path:
    """A clean copy of the repository: what a clone holds (no venv, no results, no caches)."""
    dest = tmp / "repo"
    ignore = shutil.ignore_patterns(".git", ".venv", "results", "__pycache__", "*.egg-info", ".pytest_cache",
                                    ".hypothesis", ".ruff_cache")  # fmt: skip
    shutil.copytree(ROOT, dest, ignore=ignore)
    return dest


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    args, extra = argv(command)
    env = {**os.environ, **extra, "PYTHONPATH": str(cwd), "MPLBACKEND": "Agg"}
    if "PYTHONPATH" in extra:
        env["PYTHONPATH"] = os.pathsep.join([str(cwd / extra["PYTHONPATH"]), str(cwd)])
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def _flags_are_offered(command: str, cwd: Path) -> None:
    """A command not run: its script or subcommand exists and its --help names every flag it uses."""
    args, _ = argv(command)
    words = args[1:]
    if words[:2] == ["-m", "hcsim.cli"]:
        head = args[:4] if len(words) > 2 and not words[2].startswith("-") else args[:3]
        if len(words) > 3 and words[2] == "platform":
            head = args[:5]
    else:
        script = cwd / words[0]
        assert script.is_file(), f"{command}: no script {words[0]}"
        head = args[:2]
    shown = subprocess.run([*head, "--help"], cwd=cwd, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(cwd)})  # fmt: skip
    assert shown.returncode == 0, (command, shown.stderr)
    for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*|-[a-zA-Z])\b", " ".join(words[len(head) - 1 :])):
        assert flag in shown.stdout, f"{command}: {flag} is not in {' '.join(head[1:])} --help"


COMMANDS = _pages_commands()


def test_every_command_of_the_docs_says_how_it_is_checked():
    found = {c for _, c in COMMANDS}
    unknown = sorted(found - set(HOW))
    assert not unknown, f"commands in the docs that HOW does not list: {unknown}"
    stale = sorted(set(HOW) - found)
    assert not stale, f"HOW lists commands no page holds: {stale}"
    assert len(found) >= 60


def _page_commands(page: str, modes: tuple[str, ...]) -> list[str]:
    seen, out = set(), []
    for p, c in COMMANDS:
        if p == page and c not in seen and (HOW.get(c) in modes or (NOT_RUN in modes and HOW.get(c, "fast") not in ("fast", "slow"))):
            seen.add(c)
            out.append(c)
    return out


PAGE_NAMES = sorted({p for p, _ in COMMANDS})


def _run_page(page: str, mode: str, tmp_path: Path) -> None:
    commands = _page_commands(page, (mode,))
    if not commands:
        return
    repo = _copy(tmp_path)
    for command in commands:
        r = _run(command, repo)
        assert r.returncode == 0, f"{page}: `{command}` exited {r.returncode}:\n{r.stderr[-2000:]}"
        assert "Traceback" not in r.stderr, f"{page}: `{command}`:\n{r.stderr[-2000:]}"


@pytest.mark.parametrize("page", PAGE_NAMES)
def test_fast_commands_run_as_written(page, tmp_path):
    _run_page(page, "fast", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGE_NAMES)
def test_slow_commands_run_as_written(page, tmp_path):
    _run_page(page, "slow", tmp_path)


@pytest.mark.parametrize("page", PAGE_NAMES)
def test_commands_not_run_offer_their_flags(page):
    for command in _page_commands(page, (NOT_RUN,)):
        _flags_are_offered(command, ROOT)
