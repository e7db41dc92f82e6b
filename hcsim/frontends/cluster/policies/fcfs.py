"""First come, first served: jobs start in submission order; the head blocks the queue.

Non-preemptive: a job that does not fit on the free XPUs keeps every later job waiting
(no backfilling), as the simplest baseline of the policy study. Registered as ``fcfs``
(:func:`~hcsim.frontends.cluster.policies.base.register`); docs/cluster.md, "Model".
"""

from hcsim.frontends.cluster.policies.base import Policy, register


@register
class FCFS(Policy):
    name = "fcfs"
