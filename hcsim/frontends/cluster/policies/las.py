"""Least attained service, non-preemptive (AnalySIM lists LAS among the non-preemptive policies).

Without preemption every waiting job has attained nothing, so ranking jobs by their own
service would be FCFS. We rank them by the GPU-seconds their *user* has attained so far
(running jobs counted up to now): the tenant that used least goes first, ties in
submission order. This reading is ours; the paper does not define it further.
"""

from typing import Any

from hcsim.frontends.cluster.policies.base import Policy, register


@register
class LAS(Policy):
    name = "las"

    def key(self, job: Any, now: float, scheduler: Any) -> tuple:
        return (scheduler.user_service(job.user, now), job.submit, job.seq)
