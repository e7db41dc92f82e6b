"""Synthetic traces, for scheduler studies without a real trace.

:func:`synthetic_trace` draws Poisson or Pareto (Lomax) arrivals and heavy-tailed
(lognormal or Pareto) durations with the requested means, GPU counts from a mix, users
with Zipf-like activity and partitions from weights; :func:`scale_load` compresses
submit times for load sweeps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from hcsim.errors import HcsimError
from hcsim.frontends.cluster.jobs import Job, Trace
from hcsim.frontends.cluster.traces._common import _check_gpus_per_node, _show, _whole_nodes

__all__ = ["DEFAULT_GPU_MIX", "scale_load", "synthetic_trace"]

#: Helios-like GPU-count mix: mostly 1-GPU jobs with a tail up to 64 GPUs. An assumption
#: shaped after the Helios characterisation (SC'21: most GPU jobs use one GPU, a few
#: percent use more than 8), not fitted to the trace.
DEFAULT_GPU_MIX: dict[int, float] = {1: 0.60, 2: 0.10, 4: 0.10, 8: 0.12, 16: 0.05, 32: 0.02, 64: 0.01}


def _positive(name: str, value: Any, valid: str = "a finite number > 0") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not math.isfinite(value):
        raise HcsimError(f"{name} {_show(value)} is invalid (valid: {valid})")
    if value <= 0:
        raise HcsimError(f"{name} {_show(value)} is invalid (valid: {valid})")
    return float(value)


def _shape(name: str, value: Any) -> float:
    """A Pareto shape with a finite mean."""
    shape = _positive(name, value, "a number > 1, so that the mean is finite")
    if shape <= 1:
        raise HcsimError(f"{name} {_show(value)} is invalid (valid: a number > 1, so that the mean is finite)")
    return shape


def _weights(name: str, mix: Mapping[Any, Any], key_ok: Any, key_valid: str) -> tuple[list[Any], np.ndarray]:
    """Keys and normalised probabilities of a weight mapping, checked."""
    if not isinstance(mix, Mapping) or not mix:
        raise HcsimError(f"{name} {_show(mix)} is invalid (valid: a non-empty mapping of {key_valid} to weights)")
    keys, weights = [], []
    for key, weight in mix.items():
        if not key_ok(key):
            raise HcsimError(f"{name} key {_show(key)} is invalid (valid: {key_valid})")
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float | np.number)
            or not math.isfinite(weight)
            or weight < 0
        ):
            raise HcsimError(f"{name}[{key!r}] weight {_show(weight)} is invalid (valid: a finite number >= 0)")
        keys.append(key)
        weights.append(float(weight))
    total = sum(weights)
    if total <= 0:
        raise HcsimError(f"{name} weights sum to 0 (valid: at least one weight > 0)")
    return keys, np.asarray(weights) / total


def synthetic_trace(
    n_jobs: int,
    *,
    seed: int,
    arrival: str = "poisson",
    mean_interarrival: float = 60.0,
    pareto_shape: float = 1.5,
    gpu_mix: Mapping[int, float] | None = None,
    duration: str = "lognormal",
    mean_duration: float = 3600.0,
    duration_sigma: float = 2.0,
    duration_shape: float = 1.5,
    partitions: Mapping[str, float] | None = None,
    users: int = 50,
    gpus_per_node: int = 8,
) -> Trace:
    """Draw a reproducible GPU-cluster trace, for scheduler studies without a real trace.

    * arrivals: ``"poisson"`` (exponential gaps) or ``"pareto"`` (Lomax gaps of shape
      ``pareto_shape`` > 1: bursty, finite mean; variance finite only for shape > 2);
      the first job arrives at 0 and gaps have mean ``mean_interarrival`` seconds;
    * durations: ``"lognormal"`` (log-sd ``duration_sigma``; 2 gives the heavy tail of
      DL training jobs, mostly short with a few of days) or ``"pareto"`` (shape
      ``duration_shape`` > 1, minimum ``mean (shape - 1) / shape``), mean ``mean_duration``;
    * GPUs from ``gpu_mix`` (count -> weight; default :data:`DEFAULT_GPU_MIX`, an
      assumed Helios-like mix, not fitted); jobs of more than ``gpus_per_node`` GPUs that
      are a multiple of it ask for whole nodes (rigid shape), others for any GPUs;
    * users ``"1"`` .. ``str(users)`` with Zipf-like activity (weight 1/k: a few users
      submit most jobs, as in shared clusters); partitions from ``partitions`` (name ->
      weight; default: all jobs in the default partition ``""``).

    Same arguments and seed give identical jobs (``numpy.random.default_rng(seed)``).
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs < 1:
        raise HcsimError(f"n_jobs {_show(n_jobs)} is invalid (valid: an integer >= 1)")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise HcsimError(f"seed {_show(seed)} is invalid (valid: an integer >= 0)")
    if arrival not in ("poisson", "pareto"):
        raise HcsimError(f"arrival {_show(arrival)} is unknown (valid: poisson, pareto)")
    if duration not in ("lognormal", "pareto"):
        raise HcsimError(f"duration {_show(duration)} is unknown (valid: lognormal, pareto)")
    mean_gap = _positive("mean_interarrival", mean_interarrival, "seconds > 0")
    mean_run = _positive("mean_duration", mean_duration, "seconds > 0")
    if isinstance(users, bool) or not isinstance(users, int | np.integer) or users < 1:
        raise HcsimError(f"users {_show(users)} is invalid (valid: an integer >= 1)")
    gpn = _check_gpus_per_node(gpus_per_node)
    sizes, size_p = _weights(
        "gpu_mix",
        DEFAULT_GPU_MIX if gpu_mix is None else gpu_mix,
        lambda k: not isinstance(k, bool) and isinstance(k, int | np.integer) and k >= 1,
        "GPU counts >= 1",
    )
    if partitions is None:
        part_names, part_p = [""], np.ones(1)
    else:
        part_names, part_p = _weights("partitions", partitions, lambda k: isinstance(k, str), "partition names")

    n = int(n_jobs)
    rng = np.random.default_rng(int(seed))
    if arrival == "poisson":
        gaps = rng.exponential(mean_gap, n - 1)
    else:
        shape = _shape("pareto_shape", pareto_shape)
        gaps = mean_gap * (shape - 1) * rng.pareto(shape, n - 1)  # Lomax(shape, scale): mean scale / (shape - 1)
    submits = np.concatenate(([0.0], np.cumsum(gaps)))
    gpus = np.asarray(sizes)[rng.choice(len(sizes), size=n, p=size_p)]
    if duration == "lognormal":
        sigma = _positive("duration_sigma", duration_sigma)
        runs = rng.lognormal(math.log(mean_run) - sigma * sigma / 2, sigma, n)  # mean exp(mu + sigma^2 / 2)
    else:
        shape = _shape("duration_shape", duration_shape)
        runs = mean_run * (shape - 1) / shape * (1.0 + rng.pareto(shape, n))  # Pareto(x_m): mean shape x_m/(shape-1)
    zipf = 1.0 / np.arange(1, int(users) + 1)
    who = rng.choice(int(users), size=n, p=zipf / zipf.sum()) + 1
    where = rng.choice(len(part_names), size=n, p=part_p)

    jobs = []
    for i in range(n):
        g = int(gpus[i])
        nodes, per_node = _whole_nodes(g, gpn)
        jobs.append(
            Job(
                job_id=str(i + 1),
                submit=float(submits[i]),
                gpus=g,
                duration=float(runs[i]),
                nodes=nodes,
                gpus_per_node=per_node,
                user=str(int(who[i])),
                partition=part_names[int(where[i])],
            )
        )
    source = f"synthetic(n_jobs={n}, seed={int(seed)}, arrival={arrival}, duration={duration})"
    return Trace(jobs=jobs, source=source, format="synthetic")


def scale_load(trace: Trace, factor: float) -> Trace:
    """A copy of ``trace`` with submit times divided by ``factor`` (> 1: more load), for load sweeps.

    Durations and shapes are unchanged; ``trace_start`` is dropped because the real
    system's start times belong to the original arrivals.
    """
    f = _positive("load factor", factor, "a finite number > 0, e.g. 2 for twice the arrival rate")
    jobs = [replace(job, submit=job.submit / f, trace_start=None, extra=dict(job.extra)) for job in trace.jobs]
    return Trace(
        jobs=jobs,
        source=trace.source,
        format=trace.format,
        submit_epoch=trace.submit_epoch,
        skipped=list(trace.skipped),
    )
