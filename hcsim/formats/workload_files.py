"""``hcsim run --workload NAME|FILE``: a named workload, or a workload file recognised by its content.

* a name of :data:`~hcsim.workload.catalog.WORKLOADS`: :func:`~hcsim.workload.catalog.workload_by_name`;
* a Chakra trace ``PATH/PREFIX`` (rank files ``PREFIX.RANK.et``, a folder of them or one of them):
  :mod:`hcsim.formats.chakra`;
* a SimAI AICB workload file (first word a parallelism policy): :mod:`hcsim.formats.aicb`;
* any other file: a JSON graph (:meth:`Workload.to_json <hcsim.workload.graph.Workload.to_json>`).

:func:`xpu_rates_from_platform` gives the fp32 rates that turn traced durations into FLOPs.
Invariant: an option that does not apply to the workload given (``--rank-map`` to a named
one, ...) is a one-line error, never ignored. See docs/formats.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hcsim.errors import HcsimError
from hcsim.formats.aicb import is_aicb, read_aicb
from hcsim.formats.chakra import chakra_files, is_chakra, read_chakra
from hcsim.workload.catalog import WORKLOADS, workload_by_name
from hcsim.workload.graph import Workload

__all__ = ["load_workload", "workload_format", "xpu_rates_from_platform"]


def workload_format(name: str) -> str | None:
    """ "chakra" or "aicb" when ``name`` is such a file (or trace prefix), else None (a named workload or JSON)."""
    if name in WORKLOADS or name.endswith(".json"):
        return None
    if is_chakra(name):
        return "chakra"
    if is_aicb(name):
        return "aicb"
    return None


def load_workload(
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
    """The workload ``name`` on ``ranks``: one of :data:`~hcsim.workload.catalog.WORKLOADS`, a JSON file
    (:meth:`Workload.to_json <hcsim.workload.graph.Workload.to_json>`), a Chakra trace ``PATH/PREFIX`` (files
    ``PREFIX.RANK.et``, see :mod:`hcsim.formats.chakra`) or a SimAI AICB workload file (see
    :mod:`hcsim.formats.aicb`).

    ``size``, ``what``, ``group`` and ``algorithm`` are those of
    :func:`~hcsim.workload.catalog.workload_by_name`. ``xpu_flops`` (fp32 FLOP/s per XPU),
    ``rank_map`` and ``comm_groups`` are for Chakra traces and AICB files (rank placement,
    durations to FLOPs).
    """
    fmt = workload_format(name)
    if rank_map is not None and not fmt:
        raise HcsimError(f"--rank-map applies to Chakra traces and AICB files, not {name!r}")
    if comm_groups is not None and fmt != "chakra":
        raise HcsimError(f"--comm-groups applies to Chakra traces, not {name!r}")
    if name in WORKLOADS:
        return workload_by_name(name, ranks, group, size=size, what=what, algorithm=algorithm)
    if algorithm is not None:
        raise HcsimError(f"--algorithm applies to the llama2-13b and allreduce workloads, not {name!r}")
    if fmt == "chakra":
        return read_chakra(name, ranks, xpu_flops=xpu_flops, rank_map=rank_map, groups=comm_groups)
    if fmt == "aicb":
        return read_aicb(name, ranks, xpu_flops=xpu_flops, rank_map=rank_map)
    if name.endswith(".json"):
        return Workload.from_json(name)
    if not os.path.exists(name):
        raise HcsimError(
            f"workload {name!r} is unknown (valid: a JSON file, a Chakra trace PATH/PREFIX of PREFIX.RANK.et files, "
            f"an AICB workload file, or one of {', '.join(WORKLOADS)})"
        )
    if os.path.isdir(name):
        chakra_files(name)  # says what the folder lacks
    return Workload.from_json(name)


def xpu_rates_from_platform(path: str | os.PathLike[str]) -> dict[str, float]:
    """fp32 FLOP/s of every XPU host of a compiled platform XML (the ``fp32_flops`` property the compiler writes)."""
    from lxml import etree

    rates: dict[str, float] = {}
    try:
        for _, el in etree.iterparse(os.fspath(path), events=("end",), tag="host", no_network=True):
            props = {p.get("id"): p.get("value") for p in el.iter("prop")}
            if props.get("kind") == "xpu":
                speed = el.get("speed", "0").rstrip("f")
                rates[el.get("id")] = float(props.get("fp32_flops") or speed)
            el.clear()
    except (etree.XMLSyntaxError, OSError, ValueError) as exc:
        raise HcsimError(f"platform file '{os.fspath(path)}' cannot be read for XPU rates: {exc}") from None
    return rates
