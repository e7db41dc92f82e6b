"""nccl-tests-style measurement of collectives: time, algorithm bandwidth and bus bandwidth.

The definitions are nccl-tests' (``doc/PERFORMANCE.md`` of NVIDIA/nccl-tests): for a
collective of size S over n ranks taking t seconds, ``algbw = S / t`` (GB/s = 1e9
bytes/s) and ``busbw = algbw x factor``, the factor of the kind: allreduce 2(n-1)/n;
reduce_scatter, allgather and alltoall (n-1)/n; broadcast and reduce 1. S is nccl-tests'
``size`` and the ``bytes`` of an hcsim communication vertex: an allreduce's buffer, a
reduce-scatter's input, an allgather's output, an all-to-all's send buffer, the root's
buffer of a broadcast or reduce.

Each (algorithm, size) is one SimGrid simulation of ``iterations`` back-to-back
collectives on a platform compiled once; the time is the mean per collective.
:func:`measure` takes no shortcut; :func:`measure_fast` takes the fast paths over all
XPUs of a topology (ring algorithms folded and memoized step by step, the others
memoized round by round; within 1% of exact: ``tests/fast/test_fast.py``,
``tests/fast/test_memoize_collectives.py``).

Guide: docs/collectives.md, "Timing them: hcsim collective".
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

from hcsim.collectives import algorithm, names
from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.fast import simulate_system
from hcsim.fast.system import FoldRefused
from hcsim.units import parse_bytes
from hcsim.workload import Workload

__all__ = [
    "BENCH_KINDS",
    "busbw_factor",
    "has_fast_path",
    "measure",
    "measure_fast",
    "parse_sizes",
    "select_algorithms",
]

BENCH_KINDS = ("allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall")
"""The kinds ``hcsim collective`` measures (every collective kind; p2p is not one)."""


def busbw_factor(kind: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor of ``kind`` over ``n`` ranks."""
    if kind == "allreduce":
        return 2 * (n - 1) / n
    if kind in ("reduce_scatter", "allgather", "alltoall"):
        return (n - 1) / n
    if kind in ("broadcast", "reduce"):
        return 1.0
    raise HcsimError(f"kind {kind!r} has no bus bandwidth (valid: {', '.join(BENCH_KINDS)})")


def parse_sizes(text: str, what: str = "--sizes") -> list[int]:
    """Sizes in bytes: ``LO:HI`` doubles from LO while <= HI (nccl-tests' ``-b LO -e HI -f 2``), or a comma list."""
    text = str(text).strip()
    if not text:
        raise HcsimError(f"{what} is empty (valid: e.g. 1KiB:4GiB or 1MiB,64MiB)")

    def one(s: str) -> int:
        v = parse_bytes(s.strip(), what)
        if not math.isfinite(v) or v < 1 or v != int(v):
            raise HcsimError(f"{what}: {s.strip()!r} is invalid (valid: a whole number of bytes >= 1, e.g. 1KiB)")
        return int(v)

    if ":" in text:
        parts = text.split(":")
        if len(parts) != 2:
            raise HcsimError(f"{what} {text!r} is invalid (valid: LO:HI, e.g. 1KiB:4GiB)")
        lo, hi = one(parts[0]), one(parts[1])
        if hi < lo:
            raise HcsimError(f"{what} {text!r} is invalid: {hi} < {lo} bytes (valid: LO:HI with LO <= HI)")
        sizes = []
        s = lo
        while s <= hi:
            sizes.append(s)
            s *= 2
        return sizes
    sizes = [one(s) for s in text.split(",")]
    return sorted(set(sizes))


def select_algorithms(kind: str, spec: str, coherent: bool) -> tuple[list[str], list[str]]:
    """The algorithms to run, and notes: ``spec`` is ``all`` or a comma list (names, plug-ins, MSCCL-IR files).

    ``all`` is every registered algorithm of ``kind``, skipping the ones that rely on
    coherent memory when ``coherent`` is false (each skip is a note); naming such an
    algorithm on a non-coherent system is an error.
    """
    if kind not in BENCH_KINDS:
        raise HcsimError(f"kind {kind!r} is unknown (valid: {', '.join(BENCH_KINDS)})")
    notes: list[str] = []
    if spec.strip() == "all":
        chosen = []
        for name in names(kind):
            if algorithm(kind, name).coherent and not coherent:
                notes.append(f"skipped {name}: it relies on coherent memory and the system is not coherent")
            else:
                chosen.append(name)
        if not chosen:
            raise HcsimError(f"no algorithm of {kind} applies to this system (registered: {', '.join(names(kind))})")
        return chosen, notes
    chosen = [s.strip() for s in spec.split(",") if s.strip()]
    if not chosen:
        raise HcsimError(f"--algorithm is empty (valid: all, or a comma list of {', '.join(names(kind))})")
    for name in chosen:
        alg = algorithm(kind, name)  # raises on an unknown name
        if alg.coherent and not coherent:
            raise HcsimError(
                f"algorithm {name!r} relies on coherent memory and the system is not coherent "
                "(valid: a coherent system such as --system cxl, or --coherent)"
            )
    if len(set(chosen)) != len(chosen):
        raise HcsimError(f"--algorithm {spec!r} names an algorithm twice")
    return chosen, notes


def measure(
    platform: str | os.PathLike[str],
    ranks: list[str],
    kind: str,
    name: str,
    nbytes: int,
    *,
    iterations: int = 1,
    coherent: bool = True,
) -> dict[str, Any]:
    """One SimGrid run of ``iterations`` back-to-back ``kind`` collectives; the nccl-tests row of it."""
    w = Workload(name=f"{kind}-{name}", ranks=list(ranks))
    w.graph["samples_per_iteration"] = 1
    w.graph["batches_per_iteration"] = 1
    w.add_comm(kind, nbytes, kind, list(ranks), algorithm=name, is_start=True)
    r = simulate(platform, w, iterations, coherent=coherent, record_flows=False, progress=False)
    return _row(kind, name, len(ranks), nbytes, r.makespan / iterations, r.activities, r.wall_seconds)


def has_fast_path(topology: Any, kind: str, name: str, ranks: int) -> bool:
    """Whether :func:`measure_fast` applies: the collective over every XPU of ``topology``.

    Ring algorithms are folded (where the fold holds: :func:`hcsim.fast.simulate_system`
    runs every XPU and warns where it does not) and memoized step by step; every other
    algorithm is memoized round by round on the whole system (:mod:`hcsim.fast.rounds`).
    """
    return ranks == len(topology.xpus())


def measure_fast(
    topology: Any, kind: str, name: str, nbytes: int, *, iterations: int = 1, coherent: bool = True
) -> dict[str, Any]:
    """Like :func:`measure` over all of ``topology``'s XPUs, on the fast paths (see :func:`has_fast_path`)."""

    def factory(ranks: list[str], group: int | None = None) -> Workload:
        w = Workload(name=f"{kind}-{name}", ranks=list(ranks))
        w.graph["samples_per_iteration"] = 1
        w.graph["batches_per_iteration"] = 1
        extra = {} if group is None else {"group": group}
        w.add_comm(kind, nbytes, kind, list(ranks), algorithm=name, is_start=True, **extra)
        return w

    alg = algorithm(kind, name)
    fold = alg.ring and alg.system_fold  # only rings can stand for a larger group, where the system fold holds
    with warnings.catch_warnings():  # a refused fold runs every XPU: the same numbers, slower
        warnings.simplefilter("ignore", FoldRefused)
        r = simulate_system(
            topology, factory, iterations, coherent=coherent, fast=True, fold=fold, record_flows=False, progress=False
        )
    return _row(kind, name, len(topology.xpus()), nbytes, r.makespan / iterations, r.activities, r.wall_seconds)


def _row(kind: str, name: str, n: int, nbytes: int, t: float, activities: int, wall: float) -> dict[str, Any]:
    algbw = nbytes / t / 1e9 if t > 0 else float("inf")
    return {
        "kind": kind,
        "algorithm": name,
        "ranks": n,
        "size_bytes": nbytes,
        "time_us": t * 1e6,
        "algbw_gbps": algbw,
        "busbw_gbps": algbw * busbw_factor(kind, n),
        "activities": activities,
        "wall_s": wall,
    }
