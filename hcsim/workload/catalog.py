"""Workloads by name, as ``hcsim run --workload NAME`` picks them.

Example: the 1 GiB ring allreduce on four ranks::

    >>> from hcsim.workload.catalog import workload_by_name
    >>> w = workload_by_name("allreduce", ["a", "b", "c", "d"], size="1GiB")
    >>> w.graph["ranks"], w.nodes["allreduce"]["bytes"]
    (['a', 'b', 'c', 'd'], 1073741824.0)
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hcsim.errors import HcsimError
from hcsim.workload.graph import MAX_BYTES, Workload

__all__ = ["DATA_PARALLEL", "WORKLOADS", "workload_by_name"]

WORKLOADS = ("allreduce", "coherent-allreduce", "fig3", "llama2-13b")
"""The named workloads: a ring allreduce of ``size`` bytes (non-coherent or coherent
ring), the paper's Fig. 3 example on the first two ranks, Llama 2 13B data-parallel
training."""

DATA_PARALLEL = ("llama2-13b", "allreduce", "coherent-allreduce")
"""The named workloads that are data-parallel over every rank, so a fold of the system
(:func:`hcsim.fast.folding.fold_data_parallel`) may stand for them."""


def chakra_or_aicb(name: str) -> str | None:
    """ "chakra" or "aicb" when ``name`` is such a file (or trace prefix), else None."""
    from hcsim.formats import aicb, chakra

    if name in WORKLOADS or name.endswith(".json"):
        return None
    if chakra.is_chakra(name):
        return "chakra"
    if aicb.is_aicb(name):
        return "aicb"
    return None


def workload_by_name(
    name: str,
    ranks: list[str],
    group: int | None = None,
    *,
    size: object = "1GiB",
    what: str = "size",
    xpu_flops: Mapping[str, float] | None = None,
    rank_map: str | None = None,
    comm_groups: str | None = None,
    algorithm: str | None = None,
) -> Workload:
    """The workload ``name`` on ``ranks``: one of :data:`WORKLOADS`, a JSON file (:meth:`Workload.to_json`),
    a Chakra trace ``PATH/PREFIX`` (files ``PREFIX.RANK.et``, see :mod:`hcsim.formats.chakra`) or a SimAI
    AICB workload file (see :mod:`hcsim.formats.aicb`).

    ``size`` (bytes, or a string with units such as ``"16MiB"``) sizes the allreduce
    workloads and is checked for every named one; ``group`` is the full system's XPU
    count when ``ranks`` are a fold's representatives. ``what`` names ``size`` in
    error messages (the CLI passes ``"--bytes"``). ``xpu_flops`` (fp32 FLOP/s per XPU),
    ``rank_map`` and ``comm_groups`` are for Chakra traces and AICB files (rank placement,
    durations to FLOPs). ``algorithm`` is the allreduce algorithm of ``llama2-13b`` and
    ``allreduce`` (any name of :func:`hcsim.collectives.names`, a ``module:function`` plug-in
    or an MSCCL-IR file; default ``ring``); ``coherent-allreduce`` is ``allreduce`` with
    ``coherent_ring``.
    """
    from hcsim.units import parse_bytes
    from hcsim.workload.builders import allreduce_benchmark, fig3_example

    foreign = chakra_or_aicb(name)
    if rank_map is not None and not foreign:
        raise HcsimError(f"--rank-map applies to Chakra traces and AICB files, not {name!r}")
    if comm_groups is not None and foreign != "chakra":
        raise HcsimError(f"--comm-groups applies to Chakra traces, not {name!r}")
    if algorithm is not None and name not in ("llama2-13b", "allreduce"):
        raise HcsimError(f"--algorithm applies to the llama2-13b and allreduce workloads, not {name!r}")
    if name in WORKLOADS:
        nbytes = parse_bytes(size, what)
        if not 0 <= nbytes <= MAX_BYTES:
            raise HcsimError(f"{what} {size!r} is invalid (valid: a size >= 0 and at most 1PiB, e.g. 1GiB)")
        if name == "fig3":
            return fig3_example(ranks[:2])
        if name == "llama2-13b":
            from hcsim.workload.llama2 import llama2_13b

            return llama2_13b(ranks, algorithm=algorithm or "ring", group=group)
        default = "coherent_ring" if name == "coherent-allreduce" else "ring"
        return allreduce_benchmark(ranks, nbytes, algorithm or default, group)
    from hcsim.formats import aicb, chakra

    if foreign == "chakra":
        return chakra.read_chakra(name, ranks, xpu_flops=xpu_flops, rank_map=rank_map, groups=comm_groups)
    if foreign == "aicb":
        return aicb.read_aicb(name, ranks, xpu_flops=xpu_flops, rank_map=rank_map)
    if name.endswith(".json"):
        return Workload.from_json(name)
    if not os.path.exists(name):
        raise HcsimError(
            f"workload {name!r} is unknown (valid: a JSON file, a Chakra trace PATH/PREFIX of PREFIX.RANK.et files, "
            f"an AICB workload file, or one of {', '.join(WORKLOADS)})"
        )
    if os.path.isdir(name):
        chakra.chakra_files(name)  # says what the folder lacks
    return Workload.from_json(name)
