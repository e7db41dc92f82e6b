"""Benchmark: compile + SimGrid load time and peak memory of the paper's systems.

Each step runs as its own process, exactly as a user runs it
(``hcsim platform build`` then ``hcsim platform check``), and its wall time and peak
RSS come from ``wait4``. Writes ``results/bench_platform.csv`` and prints a table.

    python experiments/bench_platform.py            # 64, 512 and 4096 XPUs
    python experiments/bench_platform.py --quick    # 64 and 512 only
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Run ``cmd``; return (wall seconds, peak RSS in MB, stdout)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.strip()}")
    return wall, usage.ru_maxrss / 1024, out.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip 4096 XPUs")
    parser.add_argument("--out", default="results", help="directory for the CSV")
    args = parser.parse_args()
    scales = [64, 512] if args.quick else [64, 512, 4096]
    hcsim = [sys.executable, "-m", "hcsim.cli"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for system in ("noncoherent", "cxl"):
            for n in scales:
                xml = os.path.join(tmp, f"{system}-{n}.xml")
                c_wall, c_rss, c_out = timed([*hcsim, "platform", "build", system, "--xpus", str(n), "-o", xml])
                l_wall, l_rss, l_out = timed([*hcsim, "platform", "check", xml])
                load_s = float(l_out.split("loaded by SimGrid in ")[1].split(" s")[0])
                row = {
                    "system": system,
                    "xpus": n,
                    "compile_s": round(c_wall, 2),
                    "compile_rss_mb": round(c_rss),
                    "load_s": round(l_wall, 2),
                    "simgrid_load_s": round(load_s, 2),
                    "load_rss_mb": round(l_rss),
                    "total_s": round(c_wall + l_wall, 2),
                    "xml_mb": round(os.path.getsize(xml) / 1e6, 1),
                    "summary": c_out.split(": ", 1)[1],
                }
                rows.append(row)
                print(
                    f"{system:<12} {n:>5} XPUs: compile {c_wall:6.2f} s ({c_rss:5.0f} MB), "
                    f"load {l_wall:6.2f} s ({l_rss:5.0f} MB; SimGrid parse {load_s:.2f} s), "
                    f"XML {row['xml_mb']} MB, {row['summary']}",
                    flush=True,
                )
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "bench_platform.csv")
    from hcsim.outputs import write_csv

    write_csv(path, rows, list(rows[0]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
