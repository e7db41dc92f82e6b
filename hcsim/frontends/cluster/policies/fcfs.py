"""First come, first served: submission order; the head blocks the queue."""

from hcsim.frontends.cluster.policies.base import Policy, register


@register
class FCFS(Policy):
    name = "fcfs"
