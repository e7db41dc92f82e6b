"""Cluster front end: trace-driven multi-tenant GPU scheduling on a simulated platform (AnalySIM).

Jobs (:mod:`.jobs`) come from traces or generators (:mod:`.traces`); a cluster view of
a platform topology (:mod:`.cluster`) is scheduled by a policy (:mod:`.policies`) and a
placement (:mod:`.placement`), and the jobs run on the platform in SimGrid
(:mod:`.simulator`, its rules in :mod:`.scheduler`); :mod:`.outputs` writes what happened.
"""

from hcsim.frontends.cluster.cluster import Cluster, Node, default_cluster_size, parse_partitions
from hcsim.frontends.cluster.jobs import Job, Trace, WorkloadJob
from hcsim.frontends.cluster.placement import PLACEMENTS, placement
from hcsim.frontends.cluster.policies import POLICIES, Policy, policy, register
from hcsim.frontends.cluster.policies.mlfq import parse_quanta
from hcsim.frontends.cluster.simulator import ClusterResult, JobRecord, simulate_cluster

__all__ = [
    "PLACEMENTS",
    "POLICIES",
    "Cluster",
    "ClusterResult",
    "Job",
    "JobRecord",
    "Node",
    "Policy",
    "Trace",
    "WorkloadJob",
    "default_cluster_size",
    "parse_partitions",
    "parse_quanta",
    "placement",
    "policy",
    "register",
    "simulate_cluster",
]
