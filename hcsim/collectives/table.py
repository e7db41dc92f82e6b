"""The table of collective algorithms: per kind, every :class:`Algorithm` by name, and :func:`register`.

An algorithm is a function ``(ranks, nbytes, view) -> Schedule`` registered for one kind;
each kind names its default explicitly (``register(..., default=True)``: ``ring`` for
allreduce, reduce-scatter and allgather, ``chain`` for broadcast and reduce, ``direct``
for all-to-all and p2p). The library (:mod:`hcsim.collectives.algorithms`) and plug-ins
register here; :mod:`hcsim.collectives.registry` looks them up. This module imports no
algorithm, so the library and the lookup form no import circle.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from hcsim.collectives.plans import FlowPlan
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.view import TopologyView
from hcsim.errors import HcsimError
from hcsim.registry import Registry

__all__ = ["KINDS", "SIGNATURE", "TABLE", "Algorithm", "AlgorithmFn", "check_signature", "register"]

KINDS = ("p2p", "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall")
AlgorithmFn = Callable[[list[str], float, TopologyView], Schedule]


@dataclass(frozen=True)
class Algorithm:
    """A registered algorithm.

    ``build`` makes its schedule; ``plan`` (built-in rings and chains only) makes the
    engine's flow plan directly and may stand for a larger ``group`` of ranks (a folded
    run) or list one step only (``compact``, for the memoized strategy); ``ring``
    marks the step-synchronous rings :mod:`hcsim.fast.ring_steps` can run; ``shared_steps``
    lets it skip a ring's steps from its first when a ring of the same flows and chunk
    was measured alone on quiet links before (rings whose steps' flows share links:
    NCCL's channels); ``system_fold``: a fold of the system proven for the rank-order
    ring (:func:`hcsim.fast.symmetry.fold_system`) holds for its plan (not for NCCL's
    rings, whose other rails such a fold does not keep).
    """

    kind: str
    name: str
    build: AlgorithmFn
    plan: Callable[..., FlowPlan] | None = None
    ring: bool = False
    coherent: bool = False  # relies on coherent memory (see the algorithm's docstring)
    builtin: bool = False  # part of hcsim's library (checked by its tests, not at every run)
    shared_steps: bool = False  # ring steps measured alone may stand for other vertices' (hcsim.fast.ring_steps)
    system_fold: bool = True  # a system fold proven for the rank-order ring (hcsim.fast.symmetry) holds for it

    @property
    def doc(self) -> str:
        return (self.build.__doc__ or "").strip().splitlines()[0] if self.build.__doc__ else ""


#: kind -> its algorithms by name (the default first in ``names()``)
TABLE: dict[str, Registry[Algorithm]] = {
    k: Registry("algorithm", scope=f"for {k}", valid="{}, a module:function plug-in, or an MSCCL-IR .xml file")
    for k in KINDS
}


SIGNATURE = "fn(ranks, nbytes, view) -> Schedule"


def check_signature(fn: object, label: str) -> None:
    """Refuse, in one line naming ``label``, a plug-in that is not a function of (ranks, nbytes, view)."""
    if not callable(fn):
        raise HcsimError(f"{label} is not a function (valid: {SIGNATURE})")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C function without a signature: its call will say
        return
    try:
        sig.bind(["a", "b"], 1.0, TopologyView())
    except TypeError:
        raise HcsimError(f"{label} takes {sig} (valid: {SIGNATURE})") from None


def register(
    kind: str, name: str | None = None, *, coherent: bool = False, plan: Callable[..., FlowPlan] | None = None,
    ring: bool = False, default: bool = False, replace: bool = False, shared_steps: bool = False,
    system_fold: bool = True,
) -> Callable[[AlgorithmFn], AlgorithmFn]:  # fmt: skip
    """Decorator: register ``fn(ranks, nbytes, view) -> Schedule`` as algorithm ``name`` of ``kind``
    (``default=True``: the kind's default from now on; ``shared_steps``, ``system_fold``: see
    :class:`Algorithm`).

    A name hcsim's library already holds for ``kind`` is refused unless ``replace=True``;
    a function that cannot be called as ``fn(ranks, nbytes, view)`` is refused at once."""
    if kind not in KINDS:
        raise HcsimError(f"kind {kind!r} is unknown (valid: {', '.join(KINDS)})")

    def wrap(fn: AlgorithmFn) -> AlgorithmFn:
        key = name or getattr(fn, "__name__", "")
        if not isinstance(key, str) or not key:
            raise HcsimError(f"algorithm name {key!r} for {kind} is invalid (valid: a non-empty string)")
        check_signature(fn, f"algorithm {key!r} ({kind})")
        builtin = getattr(fn, "__module__", "").startswith("hcsim.collectives.algorithms")
        old = TABLE[kind].get(key)
        if old is not None and old.builtin and not replace and not _same(old.build, fn):
            raise HcsimError(
                f"algorithm {key!r} ({kind}) is one of hcsim's own (valid: another name, or "
                f"register({kind!r}, {key!r}, replace=True) to replace it)"
            )
        alg = Algorithm(kind, key, fn, plan, ring, coherent, builtin, shared_steps, system_fold)
        TABLE[kind].register(key, alg, default=default)
        return fn

    return wrap


def _same(a: object, b: object) -> bool:
    """Whether two functions are one definition (a module imported again registers its functions again)."""
    return a is b or (
        getattr(a, "__module__", None) == getattr(b, "__module__", 0)
        and getattr(a, "__qualname__", None) == getattr(b, "__qualname__", 0)
    )
