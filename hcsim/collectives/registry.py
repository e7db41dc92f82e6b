"""Looking up collective algorithms by kind and name: the library, plug-ins, paths, MSCCL-IR.

Algorithms register in :mod:`hcsim.collectives.table` (``register``, re-exported here)::

    >>> from hcsim.collectives import Schedule, build_schedule, register
    >>> @register("allgather", "star_gather")
    ... def star_gather(ranks, nbytes, view):
    ...     '''Everyone sends its piece to every other rank at once (an allgather).'''
    ...     s = Schedule("allgather", ranks, shards=len(ranks))
    ...     for i, a in enumerate(ranks):
    ...         _ = [s.add(a, b, nbytes / len(ranks), shards=[i]) for b in ranks if b != a]
    ...     return s
    >>> len(build_schedule("allgather", "star_gather", ["a", "b", "c"], 3e6).flows)
    6

A workload may also name ``"my_package.algos:star_gather"`` (no registering) or an
MSCCL-IR ``.xml`` file. :func:`build_schedule` validates every schedule (ranks in scope,
sizes, no cycle) and, where it declares shards, checks what it delivers.
"""

from __future__ import annotations

import importlib

import hcsim.collectives.algorithms  # noqa: F401 - registers the library (before any lookup)
from hcsim.collectives.algorithms.nccl_rings import register_calibrated
from hcsim.collectives.check import check_schedule
from hcsim.collectives.plans import FlowPlan
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import KINDS, TABLE, Algorithm, register
from hcsim.collectives.view import TopologyView
from hcsim.errors import HcsimError

__all__ = [
    "KINDS", "Algorithm", "algorithm", "build_plan", "build_schedule", "describe", "for_kind", "names", "register",
]  # fmt: skip


def names(kind: str) -> tuple[str, ...]:
    """Registered algorithms of ``kind``; its default first."""
    return TABLE[kind].names() if kind in TABLE else ()


def algorithm(kind: str, name: str) -> Algorithm:
    """The algorithm ``name`` of ``kind``: registered, or ``module:function`` imported."""
    if kind not in KINDS:
        raise HcsimError(f"communication kind {kind!r} is unknown (valid: {', '.join(KINDS)})")
    found = TABLE[kind].get(name)
    if found is not None:
        return found
    if isinstance(name, str) and name.startswith("nccl") and kind in ("allreduce", "reduce_scatter", "allgather"):
        if register_calibrated(name):  # NCCL's rings (nccl, nccl@CALIBRATION), registered on first use
            return TABLE[kind].lookup(name)
    if isinstance(name, str) and ":" in name:
        module, _, attr = name.partition(":")
        try:
            fn = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError, ValueError, TypeError) as e:
            raise HcsimError(f"algorithm {name!r} cannot be imported ({type(e).__name__}: {e})") from None
        if not callable(fn):
            raise HcsimError(f"algorithm {name!r} is not a function (valid: fn(ranks, nbytes, view) -> Schedule)")
        known = TABLE[kind].get(getattr(fn, "__name__", ""))
        return known if known is not None and known.build is fn else Algorithm(kind, name, fn)
    if isinstance(name, str) and name.lower().endswith(".xml"):
        from hcsim.collectives.msccl import read_msccl

        return read_msccl(name, kind)
    raise TABLE[kind].unknown(name)


def for_kind(kind: str, name: str) -> str | None:
    """``name`` if a registered algorithm of that name exists for ``kind`` (``nccl@...`` included), else None.

    A layout names one gradient (or TP) algorithm; its reduce-scatter and allgather use the
    algorithm of that name where the library has one for their kind, else the kind's default.

        >>> for_kind("reduce_scatter", "ring"), for_kind("reduce_scatter", "coherent_ring")
        ('ring', None)
    """
    if name in TABLE[kind]:
        return name
    if isinstance(name, str) and name.startswith("nccl") and register_calibrated(name):
        return name if name in TABLE[kind] else None
    return None


def build_schedule(
    kind: str, name: str, ranks: list[str], nbytes: float, view: TopologyView | None = None, *, check: bool = True
) -> Schedule:
    """The validated (and, where shards are declared, data-checked) schedule of ``name`` over ``ranks``."""
    alg = algorithm(kind, name)
    view = view if view is not None else TopologyView()
    sch = alg.build(list(ranks), nbytes, view)
    if not isinstance(sch, Schedule):
        raise HcsimError(f"algorithm {name!r} returned {type(sch).__name__} (valid: a Schedule)")
    if sch.kind != kind:
        raise HcsimError(f"algorithm {name!r} made a {sch.kind} schedule where a {kind} was asked for")
    sch.name = sch.name or name
    sch.validate(list(ranks))
    if check:
        check_schedule(sch)
    return sch


def build_plan(
    kind: str,
    name: str,
    ranks: list[str],
    nbytes: float,
    view: TopologyView | None = None,
    *,
    group: int | None = None,
    compact: bool = False,
) -> FlowPlan:
    """The engine's flow plan of a communication vertex (see :class:`Algorithm` for ``group`` and ``compact``)."""
    alg = algorithm(kind, name)
    if alg.ring:
        return alg.plan(kind, name, ranks, nbytes, group, compact=compact, view=view)  # type: ignore[misc]
    if group is not None and group != len(ranks):
        raise HcsimError(
            f"algorithm {name!r} cannot stand for a group of {group} ranks with {len(ranks)} (a folded run): "
            "only the ring algorithms can (run without folding)"
        )
    if alg.plan is not None:
        return alg.plan(kind, name, ranks, nbytes, None)
    key = (kind, name, tuple(ranks))
    check = not alg.builtin and key not in _CHECKED  # plug-ins and MSCCL-IR: proven once per scope
    plan = build_schedule(kind, name, ranks, nbytes, view, check=check).to_plan()
    _CHECKED.add(key)
    return plan


_CHECKED: set[tuple] = set()


def describe(kind: str | None = None) -> list[tuple[str, str, str]]:
    """(kind, name, first docstring line) of every registered algorithm."""
    return [(k, n, TABLE[k][n].doc) for k in KINDS if kind in (None, k) for n in TABLE[k].names()]
