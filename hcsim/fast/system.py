"""One entry point from a topology to a run, with the fast paths as switches.

Every caller that starts from a :class:`~hcsim.platform.Topology` (the CLI's ``run
--system``, the sweep studies, the benchmarks, the equivalence tests) goes through
:func:`simulate_system`, so the recipe of the fast mode is written once:

1. **fold** (:func:`hcsim.fast.symmetry.fold_system`: the paper systems' zone fold, or
   colour refinement of the ring's flow-link graph on any other topology): keep the XPUs
   whose ring has every hop class of the full ring, or run them all and say why; the workload is built on the kept ranks
   with the full group size, so its collectives keep the full chunk and step count. A
   factory with a ``communication(topology)`` method (a parallel layout:
   :class:`hcsim.workload.parallel.factory.TrainingWorkload`) names the units it repeats
   and their flows instead (:func:`hcsim.fast.symmetry.fold_units`): whole replicas
   are kept;
2. **compile** the (folded) topology to a SimGrid platform in a temporary directory;
3. **memoize** (:class:`hcsim.fast.memoize.MemoizedRings`): ring collectives run step
   by step and repeated steps on an unchanged network are skipped;
4. **repeat** (:mod:`hcsim.fast.repeat`): once an iteration repeats the one before on
   an idle network, the remaining iterations are extrapolated.

Each shortcut is a switch (``fold=``, ``memoize=``, ``repeat=``; ``fast=True`` turns all on) and
each is held to the exact engine by ``tests/fast/test_fast.py`` (the contract, with its
measured bounds, is in ``docs/fast-paths.md``).

Example: a 64 MiB ring allreduce on the 64-XPU CXL system, exact and fast::

    >>> from hcsim.fast import simulate_system
    >>> from hcsim.platform import cxl_system
    >>> from hcsim.workload.builders import allreduce_benchmark
    >>> def allreduce(ranks, group):
    ...     return allreduce_benchmark(ranks, 64 * 2**20, "ring", group)
    >>> exact = simulate_system(cxl_system(64), allreduce)
    >>> fast = simulate_system(cxl_system(64), allreduce, fast=True)
    >>> len(fast.fold.ranks), abs(fast.makespan / exact.makespan - 1) < 1e-6
    (16, True)
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable

from hcsim.engine.execution import RunResult
from hcsim.engine.memory import Placement, fill_local_first
from hcsim.engine.simulator import simulate
from hcsim.platform.topology import Topology
from hcsim.workload.graph import Workload

__all__ = ["FoldRefused", "WorkloadFactory", "is_coherent", "simulate_system"]


class FoldRefused(UserWarning):
    """A fold was asked for but cannot be proven for this topology: the run simulates every XPU."""


WorkloadFactory = Callable[..., Workload]
"""Called as ``factory(ranks, group=group)``: builds a workload on ``ranks`` (XPU names, in
rank order); ``group`` is the full system's XPU count when the ranks are a fold's
representatives (``None``: the ranks are all of them). ``llama2_13b`` is one."""


def is_coherent(topology: Topology) -> bool:
    """Whether remote memory is coherent: the paper's CXL system, or any topology with CXL memory."""
    system = topology.graph.get("system")
    if system is not None:
        return system == "cxl"
    return any(d.get("kind") == "memory" and d.get("memory_kind") == "cxl" for _, d in topology.nodes(data=True))


def simulate_system(
    topology: Topology,
    workload: WorkloadFactory,
    iterations: int = 1,
    *,
    coherent: bool | None = None,
    fast: bool = False,
    fold: bool | None = None,
    memoize: bool | None = None,
    repeat: bool | None = None,
    tasks: bool | None = None,
    placement: Placement = fill_local_first,
    record_flows: bool = True,
    progress: bool | None = None,
    compile: Callable[[Topology], str] | None = None,
) -> RunResult:
    """Run ``workload`` built on ``topology``'s XPUs; ``fast=True`` folds, memoizes and repeats.

    ``fold``, ``memoize`` and ``repeat`` (iteration memoization, :mod:`hcsim.fast.repeat`)
    override ``fast`` one by one; ``tasks`` puts wide communication vertices on SimGrid's
    Task plugin (:mod:`hcsim.engine.tasks`, bit-identical). ``coherent=None`` means
    :func:`is_coherent`. ``compile(topology) -> path`` replaces compiling into a
    temporary directory (the tests use it to reuse compiled platforms). ``result.fold``
    is the :class:`~hcsim.fast.folding.Fold` simulated (its ``ranks`` and ``weights``),
    or ``None``. A fold that cannot be proven for this topology (:func:`hcsim.fast.symmetry.fold_system`)
    runs every XPU instead, says why in a :class:`FoldRefused` warning and in ``result.fold_refused``.
    """
    fold = fast if fold is None else fold
    memoize = fast if memoize is None else memoize
    repeat = fast if repeat is None else repeat
    coherent = is_coherent(topology) if coherent is None else coherent
    ranks, group, folded = topology.xpus(), None, None
    refusal = None
    if fold:
        from hcsim.errors import HcsimError
        from hcsim.fast.symmetry import fold_system, fold_units

        try:
            communication = getattr(workload, "communication", None)  # a factory that knows its units
            if communication is not None:
                folded = fold_units(topology, communication(topology), coherent)
            else:
                folded = fold_system(topology, coherent)
            topology, ranks, group = folded.topology, folded.ranks, folded.group
        except HcsimError as e:  # not provable here: the exact path, said once
            refusal = str(e)
            warnings.warn(f"{refusal}; running every XPU", FoldRefused, stacklevel=2)
    work = workload(ranks, group=group)
    kwargs = dict(
        coherent=coherent, placement=placement, record_flows=record_flows, progress=progress, memoize=memoize,
        repeat=repeat, tasks=tasks,
    )  # fmt: skip
    if compile is not None:
        result = simulate(compile(topology), work, iterations, **kwargs)
    else:
        from hcsim.platform.compiler import compile_platform

        with tempfile.TemporaryDirectory(prefix="hcsim-system-") as tmp:
            path = os.path.join(tmp, "platform.xml")
            compile_platform(topology, path)
            result = simulate(path, work, iterations, **kwargs)
    result.fold = folded
    result.fold_refused = refusal
    return result
