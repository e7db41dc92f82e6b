"""One registry of collective algorithms, by kind and name; plug-ins by decorator or path.

An algorithm is a function ``(ranks, nbytes, view) -> Schedule`` (see
:mod:`hcsim.collectives.schedule`), registered for one kind::

    >>> from hcsim.collectives import Schedule, register
    >>> @register("allgather", "star_gather")
    ... def star_gather(ranks, nbytes, view):
    ...     '''Everyone sends its piece to every other rank at once (an allgather).'''
    ...     s = Schedule("allgather", ranks, shards=len(ranks))
    ...     for i, a in enumerate(ranks):
    ...         for b in ranks:
    ...             if a != b:
    ...                 s.add(a, b, nbytes / len(ranks), shards=[i])
    ...     return s
    >>> from hcsim.collectives import build_schedule
    >>> len(build_schedule("allgather", "star_gather", ["a", "b", "c"], 3e6).flows)
    6

A workload names it by ``algorithm`` (``"star_gather"``), or, without registering, by
its import path (``"my_package.algos:star_gather"``, for the kind of the vertex).
:func:`build_schedule` validates every schedule (ranks in scope, sizes, no cycle) and,
where it declares shards, checks that it delivers what its kind promises.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from hcsim.collectives.check import check_schedule
from hcsim.collectives.plans import FlowPlan
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.view import TopologyView
from hcsim.errors import HcsimError

__all__ = ["KINDS", "Algorithm", "algorithm", "build_plan", "build_schedule", "describe", "names", "register"]

KINDS = ("p2p", "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall")
AlgorithmFn = Callable[[list[str], float, TopologyView], Schedule]


@dataclass(frozen=True)
class Algorithm:
    """A registered algorithm.

    ``build`` makes its schedule; ``plan`` (built-in rings and chains only) makes the
    engine's flow plan directly and may stand for a larger ``group`` of ranks (a folded
    run) or list one step only (``compact``, for the memoized strategy); ``ring``
    marks the step-synchronous rings :mod:`hcsim.fast.ring_steps` can run.
    """

    kind: str
    name: str
    build: AlgorithmFn
    plan: Callable[..., FlowPlan] | None = None
    ring: bool = False
    coherent: bool = False  # relies on coherent memory (see the algorithm's docstring)
    builtin: bool = False  # part of hcsim's library (checked by its tests, not at every run)

    @property
    def doc(self) -> str:
        return (self.build.__doc__ or "").strip().splitlines()[0] if self.build.__doc__ else ""


_REGISTRY: dict[str, dict[str, Algorithm]] = {k: {} for k in KINDS}


def register(
    kind: str, name: str | None = None, *, coherent: bool = False, plan: Callable[..., FlowPlan] | None = None,
    ring: bool = False,
) -> Callable[[AlgorithmFn], AlgorithmFn]:  # fmt: skip
    """Decorator: register ``fn(ranks, nbytes, view) -> Schedule`` as algorithm ``name`` of ``kind``."""
    if kind not in KINDS:
        raise HcsimError(f"kind {kind!r} is unknown (valid: {', '.join(KINDS)})")

    def wrap(fn: AlgorithmFn) -> AlgorithmFn:
        key = name or fn.__name__
        builtin = fn.__module__.startswith("hcsim.collectives.algorithms")
        _REGISTRY[kind][key] = Algorithm(kind, key, fn, plan, ring, coherent, builtin)
        return fn

    return wrap


def _ensure_builtins() -> None:
    import hcsim.collectives.algorithms  # noqa: F401 - registers the library


def names(kind: str) -> tuple[str, ...]:
    """Registered algorithms of ``kind``; the default (the first registered) first."""
    _ensure_builtins()
    return tuple(_REGISTRY.get(kind, {}))


def algorithm(kind: str, name: str) -> Algorithm:
    """The algorithm ``name`` of ``kind``: registered, or ``module:function`` imported."""
    _ensure_builtins()
    if kind not in KINDS:
        raise HcsimError(f"communication kind {kind!r} is unknown (valid: {', '.join(KINDS)})")
    found = _REGISTRY[kind].get(name)
    if found is not None:
        return found
    if isinstance(name, str) and ":" in name:
        module, _, attr = name.partition(":")
        try:
            fn = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError, ValueError, TypeError) as e:
            raise HcsimError(f"algorithm {name!r} cannot be imported ({type(e).__name__}: {e})") from None
        if not callable(fn):
            raise HcsimError(f"algorithm {name!r} is not a function (valid: fn(ranks, nbytes, view) -> Schedule)")
        known = _REGISTRY[kind].get(getattr(fn, "__name__", ""))
        return known if known is not None and known.build is fn else Algorithm(kind, name, fn)
    if isinstance(name, str) and name.lower().endswith(".xml"):
        from hcsim.collectives.msccl import read_msccl

        return read_msccl(name, kind)
    raise HcsimError(
        f"algorithm {name!r} is unknown for {kind} (valid: {', '.join(_REGISTRY[kind])}, "
        "a module:function plug-in, or an MSCCL-IR .xml file)"
    )


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
    _ensure_builtins()
    return [(k, n, a.doc) for k in KINDS if kind in (None, k) for n, a in _REGISTRY[k].items()]
