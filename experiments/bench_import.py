"""Benchmark: imported ASTRA-sim networks at scale (issue 25): import, load, and runs exact and ``--fast``.

Four 1024-NPU network YAMLs in ASTRA-sim's format (a switch, a ring of switches, a fully
connected block of switches, a three-dimensional grid) are written to a scratch folder,
with a Chakra trace of 1024 ranks (compute, a 1 MiB ring allreduce, compute; written by
hcsim's own Chakra writer). Each step runs as its own process, as a user runs it
(``hcsim platform import``, ``hcsim platform check``, ``hcsim run --platform net.yml``);
wall time and peak RSS come from ``wait4``. Prints a Markdown table.

    python experiments/bench_import.py                               # every network, --fast rows
    python experiments/bench_import.py --rows sw:allreduce:exact     # one row: NET:WORKLOAD:MODE
    python experiments/bench_import.py --npus 64 --rows all          # every row, small
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

NETWORKS = {  # name -> (topology, npus per dimension at 1024, bandwidth GB/s, latency ns)
    "sw": (["Switch"], [1024], [400.0], [936.25]),
    "rs": (["Ring", "Switch"], [32, 32], [200.0, 50.0], [500.0, 1000.0]),
    "fs": (["FullyConnected", "Switch"], [32, 32], [200.0, 50.0], [500.0, 1000.0]),
    "rss": (["Ring", "Switch", "Switch"], [8, 8, 16], [200.0, 100.0, 50.0], [500.0, 1000.0, 2000.0]),
}
FAST_ROWS = [f"{net}:allreduce:fast" for net in NETWORKS]
ALL_ROWS = [
    f"{net}:{work}:{mode}" for net in NETWORKS for work in ("allreduce", "chakra") for mode in ("fast", "exact")
]


def timed(cmd: list[str], timeout: float) -> tuple[float, float, str, str]:
    """Run ``cmd``; return (wall seconds, peak RSS in MB, stdout, stderr's last line or 'timeout')."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return time.perf_counter() - t0, math.nan, "", f"stopped after {timeout:g} s"
    wall = time.perf_counter() - t0
    tail = err.strip().splitlines()[-1] if proc.returncode and err.strip() else ""
    return wall, _children_peak_mb(), out, tail


def _children_peak_mb() -> float:
    """Peak RSS of the largest descendant reaped so far (``RUSAGE_CHILDREN``: a run forks SimGrid's process)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def shape(net: str, npus: int) -> list[int]:
    """The network's npus per dimension for ``npus`` in all (1024: as listed; else the last dimension shrinks)."""
    counts = list(NETWORKS[net][1])
    rest = math.prod(counts[:-1])
    counts[-1] = max(1, npus // rest) if len(counts) > 1 else npus
    return counts


def write_network(path: str, net: str, npus: int) -> None:
    blocks, _, bws, lats = NETWORKS[net]
    counts = shape(net, npus)
    with open(path, "w") as f:
        f.write(f"topology: [ {', '.join(blocks)} ]\n")
        f.write(f"npus_count: [ {', '.join(map(str, counts))} ]\n")
        f.write(f"bandwidth: [ {', '.join(map(str, bws))} ]\n")
        f.write(f"latency: [ {', '.join(map(str, lats))} ]\n")


def write_trace(directory: str, npus: int) -> str:
    """A data-parallel step of ``npus`` ranks as Chakra files DIRECTORY/dp.R.et; returns the prefix."""
    from hcsim.formats.astra_routes import npu_names
    from hcsim.formats.chakra.write import write_chakra
    from hcsim.workload import Workload

    xs = npu_names([npus])
    w = Workload(name="dp", ranks=xs)
    w.add_comm("ar", 2**20, "allreduce", xs, algorithm="ring")
    for i, x in enumerate(xs):
        w.add_compute(f"fwd{i}", 1e12, x, is_start=True)
        w.add_compute(f"opt{i}", 5e11, x)
        w.add_dependency(f"fwd{i}", "ar")
        w.add_dependency("ar", f"opt{i}")
    write_chakra(w, directory, "dp")
    return os.path.join(directory, "dp")


def _simulated(out: str) -> str:
    import json

    try:
        return f"{json.loads(out)['makespan_s'] * 1e6:.4f}"
    except (ValueError, KeyError):
        return "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=",".join(FAST_ROWS), help="NET:WORKLOAD:MODE,... or 'all'")
    parser.add_argument("--npus", type=int, default=1024, help="NPUs in all (default 1024)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds before a step is stopped")
    args = parser.parse_args()
    rows = ALL_ROWS if args.rows == "all" else args.rows.split(",")
    hcsim = [sys.executable, "-m", "hcsim.cli"]
    print("| row | step | wall (s) | peak RSS (MB) | simulated (us) | note |")
    print("|---|---|---:|---:|---:|---|")
    done_import: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        trace = None
        for row in rows:
            net, work, mode = row.split(":")
            yml, xml = os.path.join(tmp, f"{net}.yml"), os.path.join(tmp, f"{net}.xml")
            if net not in done_import:
                write_network(yml, net, args.npus)
                for step, cmd in (
                    ("import", [*hcsim, "platform", "import", yml, "-o", xml]),
                    ("check", [*hcsim, "platform", "check", xml]),
                ):
                    wall, rss, out, note = _fresh(cmd, args.timeout)
                    print(
                        f"| {net} {shape(net, args.npus)} | {step} | {wall:.2f} | {rss:.0f} | - | {note} |", flush=True
                    )
                done_import.add(net)
            cmd = [*hcsim, "run", "--platform", yml, "--iterations", "1", "--json", "--no-progress"]
            if work == "allreduce":
                cmd += ["--workload", "allreduce", "--bytes", "1MiB"]
            else:
                if trace is None:
                    trace = write_trace(tmp, args.npus)
                cmd += ["--chakra", trace]
            if mode == "fast":
                cmd.append("--fast")
            wall, rss, out, note = _fresh(cmd, args.timeout)
            print(f"| {row} | run | {wall:.2f} | {rss:.0f} | {_simulated(out)} | {note} |", flush=True)


def _fresh(cmd: list[str], timeout: float) -> tuple[float, float, str, str]:
    """:func:`timed` in a process of its own, so each step's peak RSS is its own (RUSAGE_CHILDREN only grows)."""
    import json

    here = os.path.dirname(os.path.abspath(__file__))
    code = (
        f"import json, sys; sys.path.insert(0, {here!r}); from bench_import import timed; "
        "print(json.dumps(timed(json.loads(sys.argv[1]), float(sys.argv[2]))))"
    )
    res = subprocess.run([sys.executable, "-c", code, json.dumps(cmd), str(timeout)], capture_output=True, text=True)
    wall, rss, out, note = json.loads(res.stdout.strip().splitlines()[-1])
    return wall, rss, out, note


if __name__ == "__main__":
    main()
