"""Experiment functions ready for sweeps: keyword parameters in, a JSON-able dict out.

Any importable function works (``module:function`` in the spec); these cover the
platform and engine layers, and :func:`synthetic` exercises executors without SimGrid.
Each function imports what it needs when called: a point is a process of its own, which
then loads only its function's layers. Invariant: a function's result depends on its
parameters alone (a seed among them), so a point re-run gives the same row;
docs/sweeps.md, "Spec".
"""

from __future__ import annotations

import os
import time
from contextlib import ExitStack
from typing import Any

from hcsim.files import anonymous_file
from hcsim.units import parse_bytes

__all__ = ["allreduce", "cluster_policy", "collective", "llama2_13b", "parallel_training", "transfer", "synthetic"]


def _system(system: str, xpus: int, mix: str, cxl_bandwidth: str, cxl_latency: str):  # noqa: ANN202
    from hcsim.platform import builders

    if system == "cxl":
        return builders.cxl_system(xpus, mix=mix, cxl_bandwidth=cxl_bandwidth, cxl_latency=cxl_latency)
    if system == "noncoherent":
        return builders.noncoherent_system(xpus, mix=mix)
    if system == "ring":
        return builders.ring(xpus, mix)
    raise ValueError(f"system {system!r} is unknown (valid: cxl, noncoherent, ring)")


def allreduce(
    system: str = "cxl",
    xpus: int = 16,
    nbytes: str | float = "64MiB",
    algorithm: str = "ring",
    iterations: int = 2,
    mix: str = "H100",
    cxl_bandwidth: str = "128GBps",
    cxl_latency: str = "200ns",
) -> dict[str, Any]:
    """An allreduce over all XPUs of a paper system: iteration time and busiest link."""
    from hcsim.engine import simulate
    from hcsim.engine.report import summarize
    from hcsim.platform import compile_platform
    from hcsim.workload import allreduce_benchmark

    topo = _system(system, xpus, mix, cxl_bandwidth, cxl_latency)
    with anonymous_file("platform.xml") as (f, path):  # on no disk: a killed sweep leaves nothing behind
        compile_platform(topo, f)
        r = simulate(path, allreduce_benchmark(topo.xpus(), parse_bytes(nbytes), algorithm), iterations)
    s = summarize(r, top=1)
    top = s["top_links"][0] if s["top_links"] else {}
    return {
        "iteration_s": s["steady_iteration_s"],
        "activities": s["activities"],
        "busiest_link": top.get("link"),
        "busiest_utilization": top.get("mean_utilization"),
        "wall_s": r.wall_seconds,
    }


_PLATFORMS: dict[tuple, str] = {}  # compiled platforms of this process, by what built them
_PLATFORM_FILES = ExitStack()  # their anonymous files, open while the process lives (the kernel frees them)


def _fat_tree_for(xpus: int):  # noqa: ANN202
    """The smallest k-ary fat tree (k even) with at least ``xpus`` XPUs."""
    from hcsim.platform.builders import fat_tree

    k = 2
    while k**3 // 4 < xpus:
        k += 2
    return fat_tree(k)


def _collective_topology(system: str, xpus: int, mix: str, cxl_bandwidth: str, cxl_latency: str):  # noqa: ANN202
    if system == "fattree":
        return _fat_tree_for(xpus)
    if system == "star":
        from hcsim.platform import builders

        return builders.star(xpus, mix)
    return _system(system, xpus, mix, cxl_bandwidth, cxl_latency)


def _compiled(key: tuple, topo) -> str:  # noqa: ANN001
    """A platform file for ``topo``, compiled once per process (sweeps run many sizes on one system).

    An anonymous file (:func:`hcsim.files.anonymous_file`), kept open while the process
    lives: a sweep point killed by SIGTERM or SIGKILL leaves nothing on disk.
    """
    if key not in _PLATFORMS:
        from hcsim.platform import compile_platform

        f, path = _PLATFORM_FILES.enter_context(anonymous_file(f"p{len(_PLATFORMS)}.xml"))
        compile_platform(topo, f)
        _PLATFORMS[key] = path
    return _PLATFORMS[key]


def collective(
    system: str = "cxl",
    xpus: int = 16,
    kind: str = "allreduce",
    algorithm: str = "ring",
    nbytes: str | float = "64MiB",
    iterations: int = 1,
    mix: str = "H100",
    cxl_bandwidth: str = "128GBps",
    cxl_latency: str = "200ns",
    fast: bool = False,
) -> dict[str, Any]:
    """One collective over ``xpus`` ranks (nccl-tests' time, algbw, busbw; see :mod:`hcsim.sweep.collective_bench`).

    ``system``: cxl, noncoherent, ring, star, or fattree (the smallest k-ary fat tree
    with at least ``xpus`` XPUs; the collective runs over its first ``xpus``). Exact by
    default, on a platform compiled once per process; ``fast`` folds and memoizes the
    ring algorithms on the paper systems (:func:`hcsim.fast.simulate_system`, within 1%
    of exact; the fold needs their server zones), and is ignored elsewhere (exact).
    """
    from hcsim.fast import is_coherent
    from hcsim.sweep.collective_bench import has_fast_path, measure, measure_fast

    size = int(parse_bytes(nbytes))
    topo = _collective_topology(system, xpus, mix, cxl_bandwidth, cxl_latency)
    coherent = is_coherent(topo)
    ranks = topo.xpus()[:xpus]
    if fast and has_fast_path(topo, kind, algorithm, xpus):
        row = measure_fast(topo, kind, algorithm, size, iterations=iterations, coherent=coherent)
        out = {k: row[k] for k in ("time_us", "algbw_gbps", "busbw_gbps", "activities")}
        out.update(coherent=coherent, exact=False, wall_s=row["wall_s"])
        return out
    key = (system, xpus if system != "fattree" else len(topo.xpus()), mix, cxl_bandwidth, cxl_latency)
    path = _compiled(key, topo)
    row = measure(path, ranks, kind, algorithm, size, iterations=iterations, coherent=coherent)
    out = {k: row[k] for k in ("time_us", "algbw_gbps", "busbw_gbps", "activities")}
    out.update(coherent=coherent, exact=True, wall_s=row["wall_s"])
    return out


def llama2_13b(
    system: str = "cxl",
    xpus: int = 8,
    mix: str = "H100",
    coherent: bool | None = None,
    algorithm: str = "ring",
    iterations: int = 2,
    batch: int = 1,
    cxl_bandwidth: str = "128GBps",
    cxl_latency: str = "200ns",
    fast: bool = True,
) -> dict[str, Any]:
    """LLaMA2-13B data-parallel training on a paper system: batch/s and where the time goes.

    ``fast`` folds the system to its representative servers and memoizes repeated ring
    steps (both checked against the exact engine within 1%, tests/fast/test_fast.py).
    """
    from hcsim.engine.report import summarize
    from hcsim.fast import simulate_system
    from hcsim.workload.llama2 import llama2_13b as build

    topo = _system(system, xpus, mix, cxl_bandwidth, cxl_latency)
    coherent = system == "cxl" if coherent is None else coherent
    r = simulate_system(
        topo,
        lambda ranks, group: build(ranks, batch, algorithm, group=group),
        iterations,
        coherent=coherent,
        fast=fast,
        record_flows=False,
    )
    ranks = r.fold.ranks if r.fold is not None else topo.xpus()
    s = summarize(r)
    per = s["per_xpu_per_iteration_s"]
    return {
        "iteration_s": s["steady_iteration_s"],
        "batches_per_s": s["batches_per_s"],
        "compute_s": per["compute"],
        "communication_s": per["communication"],
        "exposed_communication_s": per["exposed_communication"],
        "memory_stall_s": per["memory_stall"],
        "remote_operators": s["remote_vertices"],
        "activities": s["activities"],
        "simulated_xpus": len(ranks),
        "wall_s": r.wall_seconds,
    }


def transfer(
    system: str = "cxl",
    xpus: int = 16,
    src: int = 0,
    dst: int = 8,
    nbytes: str | float = "1GiB",
    mix: str = "H100",
    cxl_bandwidth: str = "128GBps",
    cxl_latency: str = "200ns",
) -> dict[str, Any]:
    """One transfer between two XPU ranks, timed by SimGrid."""
    from hcsim.platform import compile_platform
    from hcsim.platform.probe import simulate_transfers

    topo = _system(system, xpus, mix, cxl_bandwidth, cxl_latency)
    names = topo.xpus()
    with anonymous_file("platform.xml") as (f, path):
        compile_platform(topo, f)
        (t,) = simulate_transfers(path, [(names[src], names[dst], parse_bytes(nbytes))])
    return {"seconds": t}


def cluster_trace(trace: str, jobs: int, seed: int, xpus: int, load: float):  # noqa: ANN201 - returns a Trace
    """The job trace of a cluster study: ``helios-like`` (synthetic, at ``load``) or a trace file."""
    from hcsim.frontends.cluster.traces import read_trace, synthetic_trace

    if trace != "helios-like":
        return read_trace(trace)
    probe = synthetic_trace(jobs, seed=seed, mean_interarrival=1.0)
    demand = sum(j.gpus * (j.duration or 0.0) for j in probe.jobs) / jobs  # GPU-seconds per job
    return synthetic_trace(jobs, seed=seed, mean_interarrival=demand / (xpus * load))


def cluster_policy(
    trace: str = "helios-like",
    policy: str = "fcfs",
    placement: str = "best-fit",
    migration: bool = False,
    xpus: int = 1024,
    jobs: int = 10_000,
    seed: int = 1,
    load: float = 0.9,
) -> dict[str, Any]:
    """One cluster run (AnalySIM study): mean JCT and friends of ``policy`` x ``placement`` on a trace."""
    from hcsim.frontends.cluster import simulate_cluster
    from hcsim.frontends.cluster.outputs import summarize
    from hcsim.platform import builders

    tr = cluster_trace(trace, jobs, seed, xpus, load)
    result = simulate_cluster(
        builders.noncoherent_system(xpus), tr, policy_name=policy, placement_name=placement, migration=migration
    )
    s = summarize(result)
    keys = ("jct_mean_s", "jct_p50_s", "jct_p99_s", "wait_mean_s", "makespan_s", "utilization", "gpus_per_used_node")
    out: dict[str, Any] = {k: s[k] for k in keys}
    out.update(
        jobs=s["jobs"],
        rejected=s["rejected"],
        preemptions=s["preemptions"],
        migrations=s["migrations"],
        pending_mean=s["pending_mean"],
        wall_s=result.wall_seconds,
    )
    return out


def synthetic(seconds: float = 0.0, value: float = 0.0, fail: bool = False, spin: bool = False) -> dict[str, Any]:
    """Wait (or burn CPU with ``spin``) for ``seconds``, then return ``value``, or raise if ``fail``."""
    end = time.perf_counter() + seconds
    if spin:
        x = 0
        while time.perf_counter() < end:
            x += 1
    else:
        time.sleep(seconds)
    if fail:
        raise RuntimeError(f"synthetic failure (value {value})")
    return {"value": value, "pid": os.getpid()}


def parallel_training(
    system: str = "cxl",
    xpus: int = 64,
    model: str = "llama3-70b",
    layout: str = "tp=8,pp=4",
    zero: int = 0,
    schedule: str = "1f1b",
    microbatches: int | None = None,
    sequence: int | None = None,
    sequence_parallel: bool = False,
    iterations: int = 1,
    mix: str = "H100",
    global_batch: int | None = None,
    fast: bool = False,
    micro_batch: int = 1,
) -> dict[str, Any]:
    """One training iteration of ``model`` under ``layout`` (:mod:`hcsim.workload.parallel`).

    ``global_batch`` (sequences per iteration) sets the microbatches to
    ``global_batch / (dp x micro_batch)`` (``micro_batch`` sequences each, default one),
    so that layouts compare at the same optimizer batch.

    Exact by default (every XPU, every flow); ``fast`` folds the system to whole
    data-parallel replicas (EP groups with experts) where colour refinement proves it,
    memoizes ring steps and repeated iterations
    (:class:`~hcsim.workload.parallel.factory.TrainingWorkload`, within 1% of exact:
    tests/fast/test_folding_layouts.py); a fold that cannot be proven runs every XPU and
    ``fold_refused`` says why. ``simulated_xpus`` is how many XPUs the run simulated.

    Returns throughput, where the time goes on the first rank of every pipeline stage of
    the first (kept) replica (compute, exposed TP/PP/EP/DP communication, idle: see
    :mod:`hcsim.analysis.breakdown`), the operators placed on remote memory
    (all XPUs', a folded run's weighted by the replicas each kept one stands for), the
    mean memory stall per XPU, and the cost of the run.
    """
    import warnings

    from hcsim.analysis.breakdown import breakdown, remote_operators
    from hcsim.engine.report import summarize
    from hcsim.fast import simulate_system
    from hcsim.fast.system import FoldRefused
    from hcsim.workload.models import load_model
    from hcsim.workload.parallel import Layout, RankGrid
    from hcsim.workload.parallel.factory import TrainingWorkload

    t0 = time.perf_counter()
    topo = _system(system, xpus, mix, "128GBps", "200ns")
    spec = load_model(model)
    lay = Layout.parse(layout, xpus)
    if global_batch is not None:
        per_step = lay.dp * micro_batch  # sequences per microbatch step of all replicas
        if global_batch % per_step:
            raise ValueError(f"global_batch {global_batch} is not a multiple of dp x micro_batch = {per_step}")
        microbatches = global_batch // per_step
    work = _Recorded(TrainingWorkload(
        spec, lay, microbatches=microbatches, micro_batch=micro_batch, sequence=sequence, schedule_name=schedule,
        zero=zero, sequence_parallel=sequence_parallel,
    ))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FoldRefused)  # said in the result instead
        r = simulate_system(topo, work, iterations, coherent=system == "cxl", fast=fast, record_flows=False,
                            progress=False)  # fmt: skip
    s = summarize(r)
    graph = work.built
    if r.fold is not None:  # the kept replicas, in rank order: the grid of their own layout
        ranks = list(r.fold.ranks)
        grid = RankGrid(Layout(len(ranks) // (lay.tp * lay.pp), lay.tp, lay.pp, lay.ep), ranks, ranks)
        weight = r.fold.weights
    else:
        ranks = topo.xpus()
        grid = RankGrid(lay, ranks)
        weight = {}
    where = breakdown(r, graph, [grid.xpu(0, p, 0) for p in range(lay.pp)], iterations - 1)
    return {
        "layout": str(lay),
        "microbatches": graph.graph["microbatches"],
        "micro_batch": micro_batch,
        "iteration_s": s["steady_iteration_s"],
        "tokens_per_s": graph.graph["tokens_per_iteration"] / s["steady_iteration_s"],
        **where,
        "memory_stall_s": s["per_xpu_per_iteration_s"]["memory_stall"],
        "remote_operators": remote_operators(r, graph, weight),
        "vertices": graph.number_of_nodes(),
        "activities": r.activities,
        "folded": r.fold is not None,
        "simulated_xpus": len(ranks),
        "fold_refused": r.fold_refused,
        "wall_s": time.perf_counter() - t0,
    }


class _Recorded:
    """A workload factory that keeps the graph it built (the breakdown reads it), and passes on its units."""

    def __init__(self, factory: Any) -> None:
        self.factory, self.built = factory, None

    def __call__(self, ranks: list[str], group: int | None = None) -> Any:
        self.built = self.factory(ranks, group=group)
        return self.built

    def layout_data(self, topology: Any) -> Any:
        return self.factory.layout_data(topology)
