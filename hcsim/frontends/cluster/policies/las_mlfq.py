"""LAS-MLFQ (AnalySIM): MLFQ whose quantum scales with 1/#GPUs, i.e. quanta of GPU-time.

"If a job uses 4 GPUs, then its quantum unit is 1/4 of a job using 1 GPU": a queue's
quantum is spent after ``quantum / gpus`` seconds of service, so wide jobs are demoted
sooner (Tiresias' discretized two-dimensional LAS).
"""

from typing import Any

from hcsim.frontends.cluster.policies.base import register
from hcsim.frontends.cluster.policies.mlfq import MLFQ


@register
class LASMLFQ(MLFQ):
    name = "las-mlfq"

    def quantum(self, job: Any) -> float:
        return self.quanta[job.level] / job.gpus
