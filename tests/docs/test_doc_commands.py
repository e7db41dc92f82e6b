"""Every shell command in the documentation runs as written, from a clean copy of the repository.

The commands are the lines of README.md's and docs/*.md's fenced ``sh``/``bash``/
``console``/plain blocks that start with ``hcsim`` or ``python`` (``.venv/bin/`` in
front, ``PYTHONPATH=.`` or ``$`` before, ``\\`` continuations joined), and the examples
of README.md's command table. Each is listed in :data:`HOW` with how it is checked:

* ``fast``: run, in the page's order, in one fresh copy of the repository per page
  (so ``platform check p.xml`` finds the ``p.xml`` an earlier line wrote); exit 0; a
  command two pages hold (:data:`ONCE`) runs once, the other page getting the files it wrote;
* ``slow``: the same, in the slow suite (``@pytest.mark.slow``);
* a sentence (why it cannot run here: hours of work, a Dask scheduler on another
  machine, a download): its script or subcommand exists and its ``--help`` names every
  flag the line uses.

A command found in the docs and not in :data:`HOW` fails (a new command must say how it
is checked), and so does an entry of :data:`HOW` no page holds any more. Optional parts
written ``[--quick]`` run with what the brackets hold; ``# comments`` are dropped.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
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

BENCH = "not run here: a benchmark, minutes to hours of a quiet machine (docs/benchmarks.md)"
STUDY = "not run here: a study of many points, tens of minutes or more (docs/sweeps.md)"
HOW: dict[str, str] = {
    # README.md
    "hcsim platform build cxl --xpus 4096 -o p.xml": "slow",
    "hcsim platform import examples/astra-sim/HGX-H100.yml -o p.xml": "fast",
    "hcsim run --system cxl --xpus 1024 --workload llama2-13b --iterations 2 --fast": "fast",
    "hcsim sweep examples/sweeps/allreduce.yaml -j 2": "slow",
    "hcsim serve --gpu v100 --rho 0.7": "fast",
    "hcsim run --system cxl --xpus 8 --model llama3-70b --inference --batch 8 --context 4096": "fast",
    "hcsim cluster --trace examples/traces/sample.swf --policy mlfq --out results/sample": "fast",
    "hcsim queue-selection --method all --set 1d": "fast",
    "hcsim demo": "fast",
    # docs/models.md (latent attention and MTP on a 4-block DeepSeek-V3: about 15 s)
    "hcsim run --system dgx-h100 --xpus 64 --model examples/models/deepseek-v3-4layers-config.json --precision fp8 "
    "--parallel tp=2,pp=2,ep=16 --micro-batch 1 --microbatches 4 --sequence 4096 --calibration dgx-h100 --fast": "slow",
    # docs/benchmarks.md
    "python experiments/bench_platform.py": BENCH,
    "python experiments/bench_engine.py": BENCH,
    "python experiments/bench_engine.py --system cxl --xpus 256 --bytes 256MiB --iterations 2": BENCH,
    "python experiments/bench_scale.py": BENCH,
    "python experiments/bench_scale.py --one cxl:1024:H100:fast": "fast",
    "python experiments/bench_serve_engine.py --repeat 3": BENCH,
    "python experiments/bench_serve_engine.py --repeat 3 --exact-iterations": BENCH,
    "python experiments/bench_parallel.py": BENCH,
    "python experiments/bench_parallel.py --rows llama --dp 4": "slow",
    "python experiments/bench_parallel.py --mode exact": BENCH,
    "python experiments/bench_tasks.py": BENCH,
    "python experiments/bench_import.py": BENCH,
    "python experiments/bench_import.py --rows sw:allreduce:exact": BENCH,
    "python experiments/bench_repeat.py --iterations 10": BENCH,
    "python experiments/bench_collectives.py --xpus 64 --scales 16": BENCH,
    "python experiments/bench_collectives.py": BENCH,
    "python experiments/bench_queue.py": BENCH,
    "python experiments/bench_cluster.py": BENCH,
    "python experiments/bench_sweep.py --points 12": BENCH,
    "python -m pytest tests/engine/test_faults.py -q": "not run here: a file of this test suite, which runs it",
    # docs/cluster.md
    "hcsim cluster --trace examples/traces/sample.swf --policy easy --placement best-fit --out results/sample": "fast",
    "hcsim cluster --trace examples/traces/sample.swf --policy mlfq --placement free-gpu --migration --xpus 128 "
    "--partitions train=8,dev=8 --snapshot 7200 --out results/sample-mlfq": "fast",
    "hcsim cluster --trace tests/data/helios_cluster_log.csv --policy mlfq --placement free-gpu --xpus 1024 "
    "--out results/helios": "fast",
    "python experiments/cluster_policies.py [--quick] [-j 2]": "slow",
    # docs/collectives.md
    "PYTHONPATH=. hcsim run --system cxl --xpus 8 --workload two_shot.json --iterations 1": "not run here: it needs "
    "the page's my_algos.py and two_shot.json, which tests/docs/test_docs_collectives.py writes and runs",
    "hcsim collective --system cxl --xpus 64 --algorithm all --sizes 1KiB:4GiB --out results/coll": "slow",
    "hcsim platform build star --xpus 4 -o mine.xml": "fast",
    "PYTHONPATH=examples/collectives hcsim collective --platform mine.xml --algorithm "
    "ring,my_algos:two_shot,examples/collectives/allreduce_ring_2ch_4gpus.xml --json": "fast",
    "hcsim collective --platform mine.xml --kind allgather --algorithm "
    "ring,examples/collectives/allgather_recursive_doubling_4gpus.xml --json": "fast",
    "hcsim collective --system cxl --xpus 1024 --algorithm ring,coherent_ring --sizes 1MiB:1GiB --fast": "slow",
    # docs/formats.md
    "python -m venv /tmp/protoc && /tmp/protoc/bin/pip install grpcio-tools": "not run here: it downloads a package",
    # docs/models.md
    "hcsim run --system cxl --xpus 8 --model llama3-70b --inference --batch 8 --context 4096 [--tp 8] "
    "[--phase prefill]": "fast",
    "hcsim platform build cxl --xpus 8 -o p.xml": "fast",
    "hcsim run --platform p.xml --model examples/models/mistral-7b-config.json --inference --batch 1 --context 2048 "
    "--json": "fast",
    "hcsim serve --model llama3-70b --system cxl --xpus 8 --tp 8 --context 4096 --max-batch 8 --rho 0.7 "
    "--jobs 20000": "slow",
    "hcsim serve --model llama3-8b --system cxl --xpus 8 --tp 8 --scheduler continuous --kv-cache hbm,cxl "
    "--rate 20/s --requests 2000 --prompt-tokens 512 --output-tokens 128 --json": "slow",
    # docs/parallelism.md
    "hcsim run --system cxl --xpus 1024 --model llama3-70b --parallel dp=32,tp=8,pp=4 --microbatches 8 --fast": "slow",
    "hcsim run --system cxl --xpus 256 --model mixtral-8x7b --parallel tp=1,pp=1 --ep 8 --zero 1 --fast": "slow",
    "hcsim run --system cxl --xpus 256 --model mixtral-8x7b --parallel tp=1,pp=1 --ep 8 --zero 1": "not run here: "
    "the exact engine, about 4 minutes and 1.3 GB (the same run with --fast is checked)",
    "hcsim run --system noncoherent --xpus 64 --model examples/models/mistral-7b-config.json --parallel tp=8,pp=2 "
    "--schedule gpipe --sequence-parallel --fast": "slow",
    # docs/platform.md
    "hcsim platform check p.xml": "slow",
    "hcsim platform build noncoherent --xpus 256 --mix H100+V100 -o nc.xml": "fast",
    "hcsim platform build cxl --xpus 1024 --cxl-bandwidth 512GBps --cxl-latency 1us -o c.xml": "slow",
    "hcsim platform draw cxl --xpus 64 -o cxl64.png": "fast",
    "hcsim platform build leafspine --xpus 64 --hosts-per-leaf 8 --spines 4 -o ls.xml": "fast",
    "hcsim platform build ring --xpus 16 --link-bandwidth 50GBps --link-latency 1us -o ring.xml": "fast",
    "hcsim platform build cxl --xpus 16 --save-graphml t.graphml -o t.xml": "fast",
    "hcsim platform compile t.graphml -o t2.xml": "fast",
    # docs/queue-selection.md
    "hcsim queue-selection --method mql --set 1d --offset 150 --model paper": "fast",
    "hcsim queue-selection --method all --set 2b --model fifo --servers 2 --replications 50 --out q": "fast",
    "python experiments/queue_selection.py [--quick]": "slow",
    # docs/serving.md
    "hcsim serve --gpu p4 --rate 2000/s --servers 2 --dispatch jsq --max-batch 16 --requests 200000": "fast",
    "hcsim serve --alpha 0.5ms --tau0 2ms --rho 0.5": "fast",
    "python experiments/inference_latency.py [--quick]": "slow",
    "hcsim serve --model llama3-8b --system cxl --xpus 16 --servers-per-rack 1 --mix H100+A100 --tp 8 --scheduler "
    "continuous --disaggregate prefill=8,decode=8 --router least_tokens --kv-cache hbm,cxl,host --preemption swap "
    "--shared-prefix 256:4 --rate 20/s --requests 500 --prompt-tokens 512 --output-tokens 128 --json": "slow",
    # docs/sweeps.md
    "hcsim sweep examples/sweeps/allreduce.yaml --executor dask -j 2": "slow",
    "hcsim sweep examples/sweeps/allreduce.yaml --executor dask --scheduler tcp://head:8786": "not run here: it "
    "needs a Dask scheduler at tcp://head:8786 (the local one runs above)",
    "python experiments/cxl_allreduce_sweep.py --executor dask --scheduler tcp://head:8786": "not run here: it "
    "needs a Dask scheduler at tcp://head:8786",
    "python experiments/fig8_coherence.py -j 2": STUDY,
    "python experiments/fig10_bandwidth.py -j 2": STUDY,
    "python experiments/fig11_latency.py -j 2": STUDY,
    "python experiments/table6_allreduce.py -j 2": STUDY,
    "python experiments/cxl_allreduce_sweep.py -j 2": STUDY,
    # docs/workloads-and-engine.md
    "hcsim run --system cxl --xpus 16 --workload fig3 --iterations 3 --chrome-trace t.json --csv t.csv": "fast",
    "hcsim platform build cxl --xpus 16 -o p.xml": "fast",
    "python workloads/allreduce.py --system cxl --xpus 16 --bytes 64MiB -o model.json": "fast",
    "hcsim run --platform p.xml --workload model.json --iterations 5 --no-coherent --json --links links.csv": "fast",
    "hcsim run --system noncoherent --xpus 64 --workload allreduce --bytes 1GiB --iterations 2": "fast",
}


ONCE = {
    "hcsim platform build cxl --xpus 4096 -o p.xml",
    "hcsim run --system cxl --xpus 1024 --workload llama2-13b --iterations 2 --fast",
    "hcsim sweep examples/sweeps/allreduce.yaml -j 2",
    "hcsim serve --gpu v100 --rho 0.7",
    "hcsim collective --system cxl --xpus 64 --algorithm all --sizes 1KiB:4GiB --out results/coll",
    "hcsim run --system cxl --xpus 1024 --model llama3-70b --parallel dp=32,tp=8,pp=4 --microbatches 8 --fast",
}
"""Commands that two pages hold and that read only the repository's own files (no file an earlier
line writes): run once per test session; the other page gets the files that run wrote (same
bytes: hcsim's outputs are deterministic) and its exit status, as if it had run it."""


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
    """A command not run: its script, module or subcommand exists and its --help names every flag it uses."""
    args, _ = argv(command.split(" && ")[0])
    words = args[1:]
    if words[0] == "-m":  # python -m MODULE [SUBCOMMAND [SUBCOMMAND]]
        size = 2
        if words[1] == "hcsim.cli":
            size += 1 + (len(words) > 3 and words[2] == "platform")
    else:
        assert (cwd / words[0]).is_file(), f"{command}: no script {words[0]}"
        size = 1
    head = args[: 1 + size]
    code, stdout, stderr = _help(tuple(head), str(cwd))
    assert code == 0, (command, stderr)
    for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*|-[a-zA-Z])\b", " ".join(words[size:])):
        assert flag in stdout, f"{command}: {flag} is not in {' '.join(head[1:])} --help"


@functools.cache
def _help(head: tuple[str, ...], cwd: str) -> tuple[int, str, str]:
    """``head --help``: exit code, stdout, stderr (once per script or subcommand: several lines share one)."""
    shown = subprocess.run([*head, "--help"], cwd=cwd, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": cwd})  # fmt: skip
    return shown.returncode, shown.stdout, shown.stderr


COMMANDS = _pages_commands()


def test_every_command_of_the_docs_says_how_it_is_checked():
    found = {c for _, c in COMMANDS}
    unknown = sorted(found - set(HOW))
    assert not unknown, f"commands in the docs that HOW does not list: {unknown}"
    stale = sorted(set(HOW) - found)
    assert not stale, f"HOW lists commands no page holds: {stale}"
    assert len(found) >= 60
    pages = {c: {p for p, c2 in COMMANDS if c2 == c} for c in ONCE}
    assert all(HOW.get(c) in ("fast", "slow") and len(pages[c]) >= 2 for c in ONCE), pages
    odd = {c: how for c, how in HOW.items() if how not in ("fast", "slow") and not how.startswith(NOT_RUN)}
    assert not odd, f"HOW values must be fast, slow or a sentence starting {NOT_RUN!r}: {odd}"


def _page_commands(page: str, mode: str) -> list[str]:
    """The commands of ``page`` checked as ``mode`` ("fast", "slow" or NOT_RUN), in page order, once each."""
    out: list[str] = []
    for p, c in COMMANDS:
        how = HOW.get(c, "")
        if p == page and c not in out and (how == mode or (mode == NOT_RUN and how.startswith(NOT_RUN))):
            out.append(c)
    return out


PAGE_NAMES = sorted({p for p, _ in COMMANDS})


def _files(repo: Path) -> dict[str, tuple[int, int]]:
    """Every file of a copy: relative path -> (size, modification time)."""
    out = {}
    for d, _, names in os.walk(repo):
        for n in names:
            st = os.stat(os.path.join(d, n))
            out[os.path.relpath(os.path.join(d, n), repo)] = (st.st_size, st.st_mtime_ns)
    return out


def _run_once(command: str, repo: Path, shared: Path) -> tuple[int, str]:
    """Run a command of :data:`ONCE` in ``repo``, or copy in the files its one run wrote; (exit code, stderr).

    ``shared`` is a directory every pytest-xdist worker of the session sees; a lock makes the
    first page to reach the command run it while the other waits, then copies.
    """
    cache = shared / hashlib.sha256(command.encode()).hexdigest()[:16]
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (cache / "result.json").exists():
            done = json.loads((cache / "result.json").read_text())
            for rel in done["written"]:
                (repo / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(cache / "files" / rel, repo / rel)
            return done["returncode"], done["stderr"]
        before = _files(repo)
        r = _run(command, repo)
        written = sorted(rel for rel, st in _files(repo).items() if before.get(rel) != st)
        for rel in written:
            (cache / "files" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, cache / "files" / rel)
        done = {"returncode": r.returncode, "stderr": r.stderr, "written": written}
        (cache / "result.json").write_text(json.dumps(done))
        return r.returncode, r.stderr


def _run_page(page: str, mode: str, tmp_path: Path, shared: Path) -> None:
    commands = _page_commands(page, mode)
    if not commands:
        return
    repo = _copy(tmp_path)
    for command in commands:
        if command in ONCE:
            code, stderr = _run_once(command, repo, shared)
        else:
            r = _run(command, repo)
            code, stderr = r.returncode, r.stderr
        assert code == 0, f"{page}: `{command}` exited {code}:\n{stderr[-2000:]}"
        assert "Traceback" not in stderr, f"{page}: `{command}`:\n{stderr[-2000:]}"


@pytest.fixture(scope="session")
def shared(tmp_path_factory, worker_id) -> Path:
    """A directory all pytest-xdist workers of this session share (their base temporary directories' parent)."""
    base = tmp_path_factory.getbasetemp()
    return (base if worker_id == "master" else base.parent) / "doc-commands-once"


@pytest.mark.parametrize("page", PAGE_NAMES)
def test_fast_commands_run_as_written(page, tmp_path, shared):
    _run_page(page, "fast", tmp_path, shared)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGE_NAMES)
def test_slow_commands_run_as_written(page, tmp_path, shared):
    _run_page(page, "slow", tmp_path, shared)


@pytest.mark.parametrize("page", PAGE_NAMES)
def test_commands_not_run_offer_their_flags(page):
    for command in _page_commands(page, NOT_RUN):
        _flags_are_offered(command, ROOT)
