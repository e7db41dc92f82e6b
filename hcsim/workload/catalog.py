"""Workloads by name, as ``hcsim run --workload NAME`` picks them (docs/workloads-and-engine.md).

Workload files (JSON, Chakra, AICB) are read by :mod:`hcsim.formats.workload_files`.
Example: the 1 GiB ring allreduce on four ranks::

    >>> from hcsim.workload.catalog import workload_by_name
    >>> w = workload_by_name("allreduce", ["a", "b", "c", "d"], size="1GiB")
    >>> w.graph["ranks"], w.nodes["allreduce"]["bytes"]
    (['a', 'b', 'c', 'd'], 1073741824.0)
"""

from __future__ import annotations

from hcsim.errors import HcsimError
from hcsim.units import parse_bytes
from hcsim.workload.builders import allreduce_benchmark, fig3_example
from hcsim.workload.graph import MAX_BYTES, Workload
from hcsim.workload.llama2 import llama2_13b

__all__ = ["DATA_PARALLEL", "WORKLOADS", "workload_by_name"]

WORKLOADS = ("allreduce", "coherent-allreduce", "fig3", "llama2-13b")
"""The named workloads: a ring allreduce of ``size`` bytes (non-coherent or coherent
ring), the paper's Fig. 3 example on the first two ranks, Llama 2 13B data-parallel
training."""

DATA_PARALLEL = ("llama2-13b", "allreduce", "coherent-allreduce")
"""The named workloads that are data-parallel over every rank, so a fold of the system
(:func:`hcsim.fast.folding.fold_data_parallel`) may stand for them."""


def workload_by_name(
    name: str,
    ranks: list[str],
    group: int | None = None,
    *,
    size: object = "1GiB",
    what: str = "size",
    algorithm: str | None = None,
) -> Workload:
    """The named workload ``name`` (one of :data:`WORKLOADS`) on ``ranks``.

    ``size`` (bytes, or a string with units such as ``"16MiB"``) sizes the allreduce
    workloads and is checked for every named one; ``group`` is the full system's XPU
    count when ``ranks`` are a fold's representatives. ``what`` names ``size`` in
    error messages (the CLI passes ``"--bytes"``). ``algorithm`` is the allreduce algorithm
    of ``llama2-13b`` and ``allreduce`` (any name of :func:`hcsim.collectives.names`, a
    ``module:function`` plug-in or an MSCCL-IR file; default ``ring``);
    ``coherent-allreduce`` is ``allreduce`` with ``coherent_ring``. Workload files (JSON,
    Chakra, AICB) are read by :func:`hcsim.formats.workload_files.load_workload`.
    """
    if name not in WORKLOADS:
        raise HcsimError(f"workload {name!r} is unknown (valid: {', '.join(WORKLOADS)})")
    if algorithm is not None and name not in ("llama2-13b", "allreduce"):
        raise HcsimError(f"--algorithm applies to the llama2-13b and allreduce workloads, not {name!r}")
    nbytes = parse_bytes(size, what)
    if not 0 <= nbytes <= MAX_BYTES:
        raise HcsimError(f"{what} {size!r} is invalid (valid: a size >= 0 and at most 1PiB, e.g. 1GiB)")
    if name == "fig3":
        return fig3_example(ranks[:2])
    if name == "llama2-13b":
        return llama2_13b(ranks, algorithm=algorithm or "ring", group=group)
    default = "coherent_ring" if name == "coherent-allreduce" else "ring"
    return allreduce_benchmark(ranks, nbytes, algorithm or default, group)
