"""Same inputs and seed, same files, byte for byte: every command that writes files, both context factories.

Each command runs four times, as a user runs it (``python -m hcsim.cli`` in a fresh
directory, relative output paths): twice on SimGrid's ``raw`` contexts (the default
for the one-actor simulations of ``run`` and ``cluster``) and twice on threads
(``HCSIM_CONTEXTS=thread``). Every file written must be identical in all four runs:
the context factory only decides how actors are scheduled on the host, and host
timings are printed or kept apart (``<out>.timings.jsonl`` of a sweep), never mixed
into results. Commands whose simulations use several actors (``serve``, ``queues``)
always run on threads; they are checked the same way, which costs little.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
HELIOS = os.path.join(HERE, "data", "helios_cluster_log.csv")
CLI = [sys.executable, "-m", "hcsim.cli"]
FACTORIES = ("raw", "thread")


def _sweep_spec(jobs: int):  # noqa: ANN202
    def make(directory: Path) -> list[str]:
        spec = {
            "function": "hcsim.sweep.experiments:collective",
            "fixed": {"system": "ring", "nbytes": "64KiB"},
            "grid": {"xpus": [2, 4], "algorithm": ["ring", "direct"]},
            "timeout": 120,
        }
        (directory / "spec.yaml").write_text(yaml.safe_dump(spec))
        return ["sweep", "spec.yaml", "--out", "results.jsonl", "-j", str(jobs)]

    return make


def _sorted_lines(data: bytes) -> bytes:
    """Parallel points append their rows as they finish: the same rows, in any order."""
    return b"".join(sorted(data.splitlines(keepends=True)))


#: command name -> (its arguments, written in the directory it runs in; the files it writes)
COMMANDS = {
    "platform build": (
        lambda d: ["platform", "build", "cxl", "--xpus", "16", "-o", "p.xml", "--save-graphml", "p.graphml"],
        ["p.xml", "p.graphml"],
    ),
    "run": (
        lambda d: ["run", "--system", "cxl", "--xpus", "16", "--workload", "allreduce", "--bytes", "1MiB",
                   "--iterations", "2", "--chrome-trace", "trace.json", "--csv", "trace.csv", "--links", "links.csv"],
        ["trace.json", "trace.csv", "links.csv"],
    ),
    "run llama2 fast": (
        lambda d: ["run", "--system", "noncoherent", "--xpus", "16", "--workload", "llama2-13b", "--fast",
                   "--iterations", "2", "--chrome-trace", "trace.json", "--csv", "trace.csv", "--links", "links.csv"],
        ["trace.json", "trace.csv", "links.csv"],
    ),
    "serve": (
        lambda d: ["serve", "--gpu", "v100", "--rho", "0.6", "--jobs", "3000", "--seed", "7", "--servers", "2",
                   "--dispatch", "random", "--out", "serve"],
        ["serve"],
    ),
    "cluster": (
        lambda d: ["cluster", "--trace", HELIOS, "--xpus", "32", "--policy", "las", "--migration",
                   "--snapshot", "100", "--out", "cluster"],
        ["cluster"],
    ),
    "queues": (
        lambda d: ["queues", "--set", "1a", "--replications", "4", "--period", "1440", "--seed", "3",
                   "--workers", "2", "--out", "queues"],
        ["queues"],
    ),
    "collective": (
        lambda d: ["collective", "--system", "ring", "--xpus", "4", "--sizes", "1KiB:4KiB", "--out", "coll"],
        ["coll"],
    ),
    "sweep": (_sweep_spec(1), ["results.jsonl"]),
    "sweep parallel": (_sweep_spec(2), ["results.jsonl"]),
}  # fmt: skip
#: how a command's files are compared when their order of lines is not theirs to fix
NORMALIZE = {"sweep parallel": _sorted_lines}
#: commands whose four runs take over ~10 s here
SLOW = {"run llama2 fast", "serve", "cluster", "queues", "collective", "sweep", "sweep parallel"}


def _files(root: Path, names: list[str]) -> dict[str, bytes]:
    """Every file under the given outputs, by path relative to ``root``."""
    out: dict[str, bytes] = {}
    for name in names:
        path = root / name
        assert path.exists(), f"{name} was not written"
        paths = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for p in paths:
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


def _run(command: str, directory: Path, factory: str) -> dict[str, bytes]:
    directory.mkdir()
    make_args, outputs = COMMANDS[command]
    env = {**os.environ, "HCSIM_CONTEXTS": factory, "PYTHONPATH": os.path.dirname(HERE)}
    r = subprocess.run(
        [*CLI, *make_args(directory)], cwd=directory, env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    files = _files(directory, outputs)
    leftovers = [p.name for p in directory.rglob(".hcsim-*")]
    assert not leftovers, leftovers  # no temporary file of an atomic write left behind
    return files


@pytest.mark.parametrize("command", [pytest.param(c, marks=[pytest.mark.slow] if c in SLOW else []) for c in COMMANDS])
def test_every_output_is_byte_identical_across_reruns_and_context_factories(command, tmp_path):
    runs = {(f, i): _run(command, tmp_path / f"{f}{i}", f) for f in FACTORIES for i in (1, 2)}
    normalize = NORMALIZE.get(command, lambda data: data)
    reference = runs[("raw", 1)]
    assert reference and all(reference.values()), "an output file is empty"
    for key, files in runs.items():
        assert sorted(files) == sorted(reference), key
        for name, data in files.items():
            assert normalize(data) == normalize(reference[name]), f"{command}: {name} differs: (raw, 1) vs {key}"


def test_sweep_rows_hold_results_and_host_timings_apart(tmp_path):
    """The results file has only reproducible fields; seconds, worker and wall_s sit in the timings file."""
    from hcsim.sweep import SweepSpec, read_results, run_sweep
    from hcsim.sweep.runner import timings_path

    out = tmp_path / "r.jsonl"
    fixed = {"system": "ring", "nbytes": "4KiB"}
    spec = SweepSpec("hcsim.sweep.experiments:collective", fixed=fixed, grid={"xpus": [2]})
    run_sweep(spec, out=str(out), jobs=1)
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(record) == ["error", "id", "params", "result", "status"]
    assert "wall_s" not in record["result"] and record["result"]["time_us"] > 0
    (timing,) = [json.loads(line) for line in Path(timings_path(out)).read_text().splitlines()]
    assert timing["id"] == record["id"] and timing["seconds"] > 0 and timing["result"]["wall_s"] >= 0
    (row,) = read_results(out)  # readers see the row whole again
    assert row["seconds"] == timing["seconds"] and row["result"]["wall_s"] == timing["result"]["wall_s"]
    assert row["result"]["time_us"] == record["result"]["time_us"]
