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
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import hcsim.collectives.algorithms  # noqa: F401 - registers the library (before any lookup)
import hcsim.simgrid_runtime as simgrid_runtime
from hcsim.collectives.algorithms.nccl_rings import register_calibrated
from hcsim.collectives.check import check_schedule
from hcsim.collectives.plans import FlowPlan
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import KINDS, TABLE, Algorithm, check_signature, register
from hcsim.collectives.view import TopologyView
from hcsim.errors import HcsimError

__all__ = [
    "KINDS",
    "Algorithm",
    "algorithm",
    "build_plan",
    "build_schedule",
    "check_coherent",
    "describe",
    "for_kind",
    "names",
    "plugin_guard",
    "register",
]


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
        with plugin_guard(f"collective plug-in {name!r} ({kind})", "cannot be imported"):
            mod = importlib.import_module(module)
        if not hasattr(mod, attr):
            raise HcsimError(f"collective plug-in {name!r} ({kind}): module {module!r} has no {attr!r}")
        fn = getattr(mod, attr)
        check_signature(fn, f"collective plug-in {name!r} ({kind})")
        table = TABLE[kind]
        known = next((a for a in map(table.get, table) if a is not None and a.build is fn), None)  # the library's
        return known if known is not None else Algorithm(kind, name, fn)
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
    if alg.builtin:
        return _built(alg.build(list(ranks), nbytes, view), kind, name, ranks, check)
    label = f"collective plug-in {name!r} ({kind})"
    with plugin_guard(label, "failed when called"):
        sch = alg.build(list(ranks), nbytes, view)
    with plugin_guard(label, "failed in the schedule it returned", prefix=False):
        return _built(sch, kind, name, ranks, check, who=label)


def _built(sch: object, kind: str, name: str, ranks: list[str], check: bool, who: str = "") -> Schedule:
    """``sch`` validated (and data-checked with ``check``) as the schedule of ``name`` over ``ranks``."""
    who = who or f"algorithm {name!r}"
    if not isinstance(sch, Schedule):
        raise HcsimError(f"{who} returned {type(sch).__name__} (valid: a Schedule)")
    if sch.kind != kind:
        raise HcsimError(f"{who} made a {sch.kind!r} schedule where a {kind} was asked for")
    sch.name = sch.name or name
    sch.validate(list(ranks))
    if check:
        check_schedule(sch)
    return sch


@contextmanager
def plugin_guard(label: str, when: str, *, prefix: bool = True) -> Iterator[None]:
    """Turn anything a plug-in raises into one line: ``label when: Type: message``.

    Every exception counts: at import (a SyntaxError, a failing top-level statement,
    ``sys.exit``), on call (a RecursionError, a wrong argument, ``SystemExit``). An
    :class:`HcsimError` keeps its text, after ``label`` (with ``prefix``; else as it is).
    Ctrl-C stays Ctrl-C: a KeyboardInterrupt goes on, except inside a simulation process, which ignores the
    signal (its parent handles Ctrl-C), so there it can only be the plug-in's own raise.
    """
    try:
        yield
    except HcsimError as exc:
        if not prefix:
            raise
        raise HcsimError(f"{label}: {exc}") from None
    except KeyboardInterrupt:
        if not getattr(simgrid_runtime, "_IGNORE_INTERRUPTS", False):
            raise
        raise HcsimError(f"{label} {when}: it raised KeyboardInterrupt") from None
    except BaseException as exc:  # noqa: BLE001 - a plug-in's failure of any kind is one line
        raise HcsimError(f"{label} {when}: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    """``Type: message`` on one line (a SyntaxError with its file and line), at most 300 characters."""
    if isinstance(exc, SyntaxError):
        text = f"{exc.msg} ({os.path.basename(exc.filename or '?')}, line {exc.lineno})"
    elif isinstance(exc, SystemExit):
        text = f"exit status {exc.code!r}"
    else:
        text = str(exc)
    text = " ".join(text.split())
    text = text if len(text) <= 300 else text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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
        if alg.builtin:
            return alg.plan(kind, name, ranks, nbytes, None)
        with plugin_guard(f"collective plug-in {name!r} ({kind})", "failed making its flow plan"):
            return alg.plan(kind, name, ranks, nbytes, None)
    key = (kind, name, tuple(ranks))
    check = not alg.builtin and key not in _CHECKED  # plug-ins and MSCCL-IR: proven once per scope
    sch = build_schedule(kind, name, ranks, nbytes, view, check=check)
    if alg.builtin:
        plan = sch.to_plan()
    else:
        with plugin_guard(f"collective plug-in {name!r} ({kind})", "failed in the schedule it returned", prefix=False):
            plan = sch.to_plan()
    _CHECKED.add(key)
    return plan


_CHECKED: set[tuple] = set()


def check_coherent(vertices: Iterable[tuple[str, Mapping[str, Any]]], coherent: bool) -> None:
    """Refuse, in one line, a communication vertex whose algorithm relies on coherent memory
    (``coherent_ring``, ``cxl_shared_memory``, a plug-in registered ``coherent=True``) on a
    run whose memory is not coherent: its result would not be an allreduce there."""
    if coherent:
        return
    seen: dict[tuple[str, str], bool] = {}
    for name, d in vertices:
        if d.get("type") != "comm":
            continue
        key = (d.get("kind"), d.get("algorithm"))
        if key not in seen:
            seen[key] = algorithm(*key).coherent if key[0] in KINDS and isinstance(key[1], str) else False
        if seen[key]:
            raise HcsimError(
                f"communication vertex '{name}': algorithm {key[1]!r} relies on coherent memory and this run's "
                "memory is not coherent (valid: a coherent system such as --system cxl, or --coherent; or "
                f"another {key[0]} algorithm, e.g. {TABLE[key[0]].default or names(key[0])[0]})"
            )


def describe(kind: str | None = None) -> list[tuple[str, str, str]]:
    """(kind, name, first docstring line) of every registered algorithm."""
    return [(k, n, TABLE[k][n].doc) for k in KINDS if kind in (None, k) for n in TABLE[k].names()]
