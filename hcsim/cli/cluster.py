"""``hcsim cluster``: schedule a job trace on a simulated multi-tenant GPU cluster (AnalySIM).

The scheduling is :func:`hcsim.frontends.cluster.simulate_cluster`; this module reads
the trace, sizes the cluster, prints the summary and writes ``--out``. Durations
(``--overhead``, ``--slice``, ``--quanta``, ``--snapshot``) take units (``--slice 1h``);
a bare number is in seconds. The options are in :func:`hcsim.cli.parsers.add_cluster`.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from collections.abc import Callable

from hcsim.errors import HcsimError
from hcsim.files import check_input_file, check_outputs
from hcsim.frontends.cluster import default_cluster_size, parse_partitions, parse_quanta, policy, simulate_cluster
from hcsim.frontends.cluster.jobs import Job
from hcsim.frontends.cluster.outputs import summarize, workload_name, write_outputs
from hcsim.frontends.cluster.traces import read_trace
from hcsim.platform import builders
from hcsim.units import parse_time

__all__ = ["MAX_XPUS", "main"]

MAX_XPUS = 4096
"""Most GPUs a simulated cluster has: the paper's largest system (``--xpus``, and the default size from the trace)."""


def _duration(text: str, flag: str, *, positive: bool = False) -> float:
    """A finite duration in seconds (>= 0, or > 0 when ``positive``) from ``text``; one line naming ``flag`` if not."""
    value = parse_time(text, flag)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise HcsimError(f"{flag} {text!r} is invalid (valid: a finite duration {bound}, e.g. 100 or 2h)")
    return value


def _cluster_size(args: argparse.Namespace, jobs: list[Job]) -> int:
    """GPUs of the cluster: ``--xpus``, or the largest job rounded up to servers; at most :data:`MAX_XPUS`.

    With ``--xpus`` a job larger than the cluster (or its partition) is rejected as
    unschedulable and counted; without it, a job larger than the largest cluster is
    refused up front, naming it, since no default size could hold it.
    """
    if args.xpus is not None:
        if args.xpus < 8 or args.xpus % 8 or args.xpus > MAX_XPUS:
            raise HcsimError(
                f"--xpus {args.xpus} is invalid (valid: a multiple of 8, the server size, from 8 to {MAX_XPUS})"
            )
        return args.xpus
    largest = max(jobs, key=lambda job: job.gpus)
    if largest.gpus > MAX_XPUS:
        where = f" (line {largest.line})" if largest.line else ""
        raise HcsimError(
            f"job {largest.job_id}{where} asks for {largest.gpus:,} GPUs, more than the largest cluster "
            f"({MAX_XPUS} GPUs) (valid: --xpus 8..{MAX_XPUS} to reject such jobs as unschedulable and count them)"
        )
    return default_cluster_size([j.gpus for j in jobs])


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim cluster``; the exit status."""
    check_outputs(dirs={"--out": args.out}, inputs={"--trace": args.trace})
    if args.out is not None:
        names = ("jobs.csv", "summary.json", "series.csv", "series.png", "trace.json")
        check_outputs(files={f"--out ({n})": os.path.join(args.out, n) for n in names}, inputs={"--trace": args.trace})
    check_input_file(args.trace, "--trace", "a Helios CSV, Philly JSON or SWF file, gzipped or not")
    overhead = _duration(args.overhead, "--overhead")
    snapshots = None if args.snapshot is None else [_duration(t, "--snapshot") for t in args.snapshot]
    options: dict[str, object] = {}
    if args.slice is not None:
        options["slice"] = _duration(args.slice, "--slice", positive=True)
    if args.quanta is not None:
        options["quanta"] = parse_quanta(args.quanta, "--quanta")
    policy(args.policy, **options)  # an unknown policy, or a flag it does not take, before the trace is read
    partitions = parse_partitions(args.partitions, "--partitions") if args.partitions else None
    if args.xpus is not None:
        _cluster_size(args, [])
    trace = read_trace(args.trace, args.format, sort=args.sort)
    if not trace.jobs:
        raise HcsimError(f"--trace '{args.trace}' has no jobs to schedule ({len(trace.skipped)} rows skipped)")
    xpus = _cluster_size(args, trace.jobs)
    topo = builders.cxl_system(xpus) if args.system == "cxl" else builders.noncoherent_system(xpus)
    result = simulate_cluster(
        topo,
        trace,
        policy_name=args.policy,
        placement_name=args.placement,
        migration=args.migration,
        overhead=overhead,
        partitions=partitions,
        policy_options=options,
    )
    rejected = [r for r in result.jobs if r.state != "COMPLETED"]
    if rejected and len(rejected) == len(result.jobs):
        raise HcsimError(f"all {len(rejected)} jobs were rejected, e.g. job {rejected[0].job_id}: {rejected[0].reason}")
    if rejected:
        print(
            f"hcsim: warning: {len(rejected)} of {len(result.jobs)} jobs rejected, "
            f"e.g. job {rejected[0].job_id}: {rejected[0].reason}",
            file=sys.stderr,
        )
    if args.out is not None:
        workload = workload_name(args.trace)
        summary = _write(args.out, lambda: write_outputs(result, trace.jobs, args.out, snapshots, workload=workload))
    else:
        summary = summarize(result)
    print(f"{len(trace.jobs)} jobs ({len(trace.skipped)} rows skipped) on {xpus} GPUs, {args.system} system")
    migration = "on" if args.migration else "off"
    print(f"policy {summary['policy']}, placement {summary['placement']}, migration {migration}")
    print(f"completed {summary['completed']}, rejected {summary['rejected']}")
    for r in summary["rejections"][:3]:
        print(f"  rejected job {r['job_id']}: {r['reason']}")
    print(f"JCT mean {summary['jct_mean_s']:.6g} s, p50 {summary['jct_p50_s']:.6g} s, p99 {summary['jct_p99_s']:.6g} s")
    print(f"wait mean {summary['wait_mean_s']:.6g} s, makespan {summary['makespan_s']:.6g} s")
    print(f"GPU utilization {summary['utilization']:.4f}, GPUs per used node {summary['gpus_per_used_node']:.3f}")
    print(f"preemptions {summary['preemptions']}, migrations {summary['migrations']}")
    jobs_per_s = len(trace.jobs) / result.wall_seconds if result.wall_seconds > 0 else math.inf
    print(f"simulated in {result.wall_seconds:.2f} s ({jobs_per_s:.0f} jobs/s)")
    if args.out is not None:
        print(f"wrote {args.out}/jobs.csv, summary.json, series.csv/png, trace.json, gpus_*.png")
    return 0


def _write(out: str, write: Callable[[], dict]) -> dict:
    """Run ``write`` into the directory ``out``; if it fails, remove ``out`` when this run created it.

    Each file is written atomically, so a failure (e.g. a value no plot can show) leaves
    no partial file; this removes the files written before it and the new directory.
    """
    existed = os.path.isdir(out)
    before = set(os.listdir(out)) if existed else set()
    try:
        return write()
    except BaseException:
        if not existed:
            shutil.rmtree(out, ignore_errors=True)
        elif os.path.isdir(out):
            for name in set(os.listdir(out)) - before:
                path = os.path.join(out, name)
                if os.path.isfile(path):
                    os.remove(path)
        raise
