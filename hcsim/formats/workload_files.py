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

from hcsim.collectives import algorithm
from hcsim.errors import HcsimError
from hcsim.formats.aicb import is_aicb, read_aicb
from hcsim.formats.chakra import chakra_files, is_chakra, read_chakra
from hcsim.units import parse_flops
from hcsim.workload.catalog import WORKLOADS, workload_by_name
from hcsim.workload.graph import COMM_KINDS, Workload

__all__ = ["algorithm_choice", "check_workload_file", "load_workload", "workload_format", "xpu_rates_from_platform"]


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
    if algorithm is not None and name not in ("llama2-13b", "allreduce") and not fmt:
        raise HcsimError(
            f"--algorithm applies to the llama2-13b and allreduce workloads, not {name!r} (and to Chakra traces and "
            "AICB files, per kind: KIND=NAME,...)"
        )
    chosen = algorithm_choice(algorithm)
    if name in WORKLOADS:
        if set(chosen) - {"allreduce"}:
            raise HcsimError(
                f"--algorithm {algorithm!r}: workload {name!r} has allreduces only (valid: NAME or allreduce=NAME)"
            )
        return workload_by_name(name, ranks, group, size=size, what=what, algorithm=chosen.get("allreduce"))
    if fmt == "chakra":
        return read_chakra(name, ranks, xpu_flops=xpu_flops, rank_map=rank_map, groups=comm_groups, algorithms=chosen)
    if fmt == "aicb":
        return read_aicb(name, ranks, xpu_flops=xpu_flops, rank_map=rank_map, algorithms=chosen)
    if name.endswith(".json"):
        return Workload.from_json(name)
    if not os.path.exists(name):
        raise HcsimError(f"workload {name!r} is unknown (valid: {_ACCEPTED})")
    if os.path.isdir(name):
        chakra_files(name)  # says what the folder lacks
    check_workload_file(name)
    return Workload.from_json(name)


_ACCEPTED = (
    "a JSON file, a Chakra trace PATH/PREFIX of PREFIX.RANK.et files (or their "
    "folder), a SimAI/AICB workload text file (first word HYBRID_TRANSFORMER_FWD_IN_BCKWD, HYBRID_TRANSFORMER, "
    f"MICRO or DATA), or one of {', '.join(WORKLOADS)}; a JSON file as Workload.to_json writes it"
)


def check_workload_file(path: str) -> None:
    """Refuse, listing the formats hcsim reads, a file of no format it knows (its first character is not JSON's).

    For a file that is neither a Chakra trace nor an AICB file: the one line names what it looks
    like (an AICB physical-execution CSV, a binary file) and every format hcsim reads."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return  # Workload.from_json names the problem
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] in (b"{", b"["):
        return
    first = text.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    if first.replace(" ", "").startswith("comm_type,comm_group"):
        what = "an AICB physical-execution CSV, which hcsim does not read (AICB writes SimAI's workload text with "
        what += "its SimAI_training_workload_generator; hcsim reads that)"
    elif b"\0" in head:
        what = "a binary file of no format hcsim reads"
    else:
        what = "in no format hcsim reads"
    raise HcsimError(f"workload file '{path}' is {what} (valid: {_ACCEPTED})")


_KIND_SPELLINGS = {k.replace("_", ""): k for k in COMM_KINDS}


def algorithm_choice(spec: str | None) -> dict[str, str]:
    """``--algorithm``: ``NAME`` (the allreduce's) or ``KIND=NAME,...`` per collective kind -> {kind: name}.

    Kinds are hcsim's (``allreduce``, ``alltoall``, ...) or ASTRA-sim's spellings (``all_reduce``,
    ``all_to_all``, ``all_gather``, ``reduce_scatter``); each name must be an algorithm of its kind
    (registered, ``module:function`` or an MSCCL-IR file), e.g. ``all_to_all=ring``.
    """
    if spec is None:
        return {}
    if "=" not in spec:
        if not spec.strip():
            raise HcsimError("--algorithm is empty (valid: NAME, or KIND=NAME,... e.g. all_to_all=ring)")
        algorithm("allreduce", spec.strip())  # an unknown name: one line listing the allreduces
        return {"allreduce": spec.strip()}
    out: dict[str, str] = {}
    for item in spec.split(","):
        kind_text, eq, name = (p.strip() for p in item.partition("="))
        kind = _KIND_SPELLINGS.get(kind_text.lower().replace("_", "").replace("-", ""))
        if not eq or kind is None or not name:
            raise HcsimError(
                f"--algorithm item {item.strip()!r} is invalid (valid: KIND=NAME with KIND one of "
                f"{', '.join(COMM_KINDS)} or all_reduce, all_gather, reduce_scatter, all_to_all; e.g. all_to_all=ring)"
            )
        if kind in out:
            raise HcsimError(f"--algorithm names {kind} twice")
        algorithm(kind, name)  # an unknown name: one line listing the kind's algorithms
        out[kind] = name
    return out


def xpu_rates_from_platform(path: str | os.PathLike[str]) -> dict[str, float]:
    """fp32 FLOP/s of every XPU host of a compiled platform XML (the ``fp32_flops`` property the compiler writes)."""
    from lxml import etree

    rates: dict[str, float] = {}
    try:
        for _, el in etree.iterparse(os.fspath(path), events=("end",), tag="host", no_network=True):
            props = {p.get("id"): p.get("value") for p in el.iter("prop")}
            if props.get("kind") == "xpu":  # SimGrid speeds carry SI prefixes ("1Gf"; a pstate list: the first)
                speed = el.get("speed", "0").split(",")[0].strip()
                rates[el.get("id")] = float(props["fp32_flops"]) if props.get("fp32_flops") else parse_flops(speed)
            el.clear()
    except (etree.XMLSyntaxError, OSError, ValueError) as exc:
        raise HcsimError(f"platform file '{os.fspath(path)}' cannot be read for XPU rates: {exc}") from None
    return rates
