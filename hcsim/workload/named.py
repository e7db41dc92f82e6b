"""Workloads by name, as ``hcsim run --workload NAME`` picks them.

Example: the 1 GiB ring allreduce on four ranks::

    >>> from hcsim.workload.named import workload_by_name
    >>> w = workload_by_name("allreduce", ["a", "b", "c", "d"], size="1GiB")
    >>> w.graph["ranks"], w.nodes["allreduce"]["bytes"]
    (['a', 'b', 'c', 'd'], 1073741824.0)
"""

from __future__ import annotations

import os

from hcsim.errors import HcsimError
from hcsim.workload.graph import MAX_BYTES, Workload

__all__ = ["DATA_PARALLEL", "WORKLOADS", "workload_by_name"]

WORKLOADS = ("allreduce", "coherent-allreduce", "fig3", "llama2-13b")
"""The named workloads: a ring allreduce of ``size`` bytes (non-coherent or coherent
ring), the paper's Fig. 3 example on the first two ranks, Llama 2 13B data-parallel
training."""

DATA_PARALLEL = ("llama2-13b", "allreduce", "coherent-allreduce")
"""The named workloads that are data-parallel over every rank, so a fold of the system
(:func:`hcsim.platform.folding.fold_data_parallel`) may stand for them."""


def workload_by_name(
    name: str, ranks: list[str], group: int | None = None, *, size: object = "1GiB", what: str = "size"
) -> Workload:
    """The workload ``name`` on ``ranks``: one of :data:`WORKLOADS`, or a JSON file (:meth:`Workload.to_json`).

    ``size`` (bytes, or a string with units such as ``"16MiB"``) sizes the allreduce
    workloads and is checked for every named one; ``group`` is the full system's XPU
    count when ``ranks`` are a fold's representatives. ``what`` names ``size`` in
    error messages (the CLI passes ``"--bytes"``).
    """
    from hcsim.units import parse_bytes
    from hcsim.workload.builders import allreduce_benchmark, fig3_example

    if name in WORKLOADS:
        nbytes = parse_bytes(size, what)
        if not 0 <= nbytes <= MAX_BYTES:
            raise HcsimError(f"{what} {size!r} is invalid (valid: a size >= 0 and at most 1PiB, e.g. 1GiB)")
        if name == "fig3":
            return fig3_example(ranks[:2])
        if name == "llama2-13b":
            from hcsim.workload.llama2 import llama2_13b

            return llama2_13b(ranks, group=group)
        return allreduce_benchmark(ranks, nbytes, "coherent_ring" if name == "coherent-allreduce" else "ring", group)
    if not name.endswith(".json") and not os.path.exists(name):
        raise HcsimError(f"workload {name!r} is unknown (valid: a JSON file or one of {', '.join(WORKLOADS)})")
    return Workload.from_json(name)
