"""FCFS with EASY backfilling (Lifka 1995), the production baseline in AnalySIM.

When the head cannot start, it gets a reservation at the earliest time enough GPUs
free up (from running jobs' estimated ends); a later job may start now if it ends
before that time or uses only GPUs the head will not need. Estimates are the jobs'
``estimate`` (the trace duration: perfect estimates, the optimistic case).
"""

from hcsim.frontends.cluster.policies.base import Policy, register


@register
class EASY(Policy):
    name = "easy"
    backfill = True
