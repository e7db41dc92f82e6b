"""The cluster scheduler, run on the platform in SimGrid: :func:`simulate_cluster`.

One controller actor (:class:`~hcsim.frontends.cluster.scheduler.Scheduler`, whose
docstring gives the rules) schedules the jobs as they arrive at their submit times; a
started job runs *on the platform*, so jobs whose traffic crosses the same links slow
each other down. The simulation runs in a process of its own
(:func:`hcsim.simgrid_runtime.run_isolated`) and returns a picklable
:class:`ClusterResult`. Jobs that can never run (more GPUs than their partition has, an
unknown partition, neither a duration nor a workload) are rejected and reported; the
run goes on. Guide: docs/cluster.md, "Model".
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hcsim.errors import HcsimError
from hcsim.files import anonymous_file
from hcsim.frontends.cluster.cluster import Cluster
from hcsim.frontends.cluster.jobs import Job, Trace
from hcsim.frontends.cluster.placement import Placement, placement
from hcsim.frontends.cluster.policies import Policy, policy
from hcsim.frontends.cluster.scheduler import JobRecord, Scheduler
from hcsim.platform import compile_platform
from hcsim.simgrid_runtime import import_simgrid, load_platform, run_isolated

__all__ = ["ClusterResult", "JobRecord", "simulate_cluster"]


@dataclass
class ClusterResult:
    """Per-job records, the time series of the cluster's state, and run facts."""

    jobs: list[JobRecord]
    # (time, used GPUs, used nodes, pending jobs, running jobs), one row per change
    series: list[tuple[float, int, int, int, int]]
    gpu_names: list[str]
    gpu_node: list[int]
    node_names: list[str]
    node_partition: list[str]
    policy: str
    placement: str
    migration: bool
    makespan: float = 0.0
    events: int = 0
    wall_seconds: float = 0.0  # host time in SimGrid's run loop


def _simulate(
    platform: str,
    cluster: Cluster,
    jobs: list[Job],
    policies: dict[str, Policy],
    place: Placement,
    migration: bool,
    overhead: float,
    progress: bool,
    names: tuple[str, str],
) -> ClusterResult:
    sg = import_simgrid()
    engine = load_platform(platform, one_actor=True)
    hosts = {h.name: h for h in engine.all_hosts}
    missing = [g for g in cluster.gpu_names if g not in hosts]
    if missing:
        raise HcsimError(f"GPU '{missing[0]}' of the cluster is not a host of platform '{platform}'")
    sched = Scheduler(sg, hosts, cluster, jobs, policies, place, migration, overhead, progress)
    sg.Actor.create("hcsim-scheduler", hosts[cluster.gpu_names[0]], sched.run)
    t0 = time.perf_counter()
    engine.run()
    wall = time.perf_counter() - t0
    stuck = [js for js in sched.states if js.state != "done"]
    if stuck:
        raise HcsimError(f"job '{stuck[0].job.job_id}' never finished ({len(stuck)} jobs left; a workload deadlock?)")
    finish = [r.finish for r in sched.records if r.state == "COMPLETED"]
    return ClusterResult(
        jobs=sched.records,
        series=sched.series,
        gpu_names=cluster.gpu_names,
        gpu_node=cluster.gpu_node,
        node_names=[n.name for n in cluster.nodes],
        node_partition=[n.partition for n in cluster.nodes],
        policy=names[0],
        placement=names[1],
        migration=migration,
        makespan=max(finish) if finish else 0.0,
        events=sched.events,
        wall_seconds=wall,
    )


def simulate_cluster(
    topology: Any,
    jobs: Trace | Sequence[Job],
    *,
    policy_name: str | Mapping[str, str] = "fcfs",
    placement_name: str = "best-fit",
    migration: bool = False,
    overhead: float = 8.0,
    partitions: Mapping[str, int | Sequence[str]] | None = None,
    policy_options: Mapping[str, Any] | None = None,
    platform: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> ClusterResult:
    """Schedule ``jobs`` on the cluster of ``topology`` and run them on its platform in SimGrid.

    ``policy_name`` is one policy for all partitions or one per partition; ``platform``
    is the topology's compiled XML (compiled into an anonymous in-memory file when omitted).

    Two 8-GPU jobs on one 8-GPU server run one after the other under FCFS::

        >>> from hcsim.frontends.cluster import Job, simulate_cluster
        >>> from hcsim.platform import noncoherent_system
        >>> jobs = [Job("a", 0.0, 8, duration=100.0), Job("b", 1.0, 8, duration=50.0)]
        >>> r = simulate_cluster(noncoherent_system(8), jobs)
        >>> [(j.job_id, j.start, j.finish) for j in r.jobs]
        [('a', 0.0, 100.0), ('b', 100.0, 150.0)]
    """
    job_list = list(jobs.jobs if isinstance(jobs, Trace) else jobs)
    if not job_list:
        raise HcsimError("no jobs to schedule (valid: a trace or list with at least one job)")
    if not (isinstance(overhead, int | float) and overhead >= 0 and math.isfinite(overhead)):
        raise HcsimError(f"overhead {overhead!r} is invalid (valid: seconds >= 0)")
    prev = -math.inf
    for k, job in enumerate(job_list):
        if not (isinstance(job.submit, int | float) and math.isfinite(job.submit)):
            raise HcsimError(f"job '{job.job_id}' has submit time {job.submit!r} (valid: a finite number of seconds)")
        if job.submit < prev:
            raise HcsimError(
                f"job '{job.job_id}' (#{k}) is submitted at {job.submit} s, before the previous job ({prev} s) "
                "(valid: jobs sorted by submit time)"
            )
        prev = job.submit
    cluster = Cluster.from_topology(topology, partitions)
    per_part = policy_name if isinstance(policy_name, Mapping) else dict.fromkeys(cluster.partitions, policy_name)
    unknown = [p for p in per_part if p not in cluster.partitions]
    if unknown:
        raise HcsimError(f"policy given for partition {unknown[0]!r}, which does not exist")
    policies = {p: policy(per_part.get(p, "fcfs"), **dict(policy_options or {})) for p in cluster.partitions}
    place = placement(placement_name)
    show = sys.stderr.isatty() if progress is None else progress
    names = ("/".join(sorted({pol.name for pol in policies.values()})), placement_name)
    if platform is None:
        with anonymous_file("cluster.xml") as (f, path):  # on no disk: a SIGTERM or SIGKILL leaves nothing behind
            compile_platform(topology, f)
            return run_isolated(_simulate, path, cluster, job_list, policies, place, migration, overhead, show, names)
    return run_isolated(
        _simulate, os.fspath(platform), cluster, job_list, policies, place, migration, overhead, show, names
    )
