"""One entry point from a topology (or a platform file) to a run, with the fast paths as options.

:func:`simulate_system` folds the topology (:mod:`.symmetry`: whole units of a parallel
layout, :mod:`.units`, or the data-parallel ring's representatives), compiles it and
runs it; :func:`simulate` runs a compiled platform. :class:`RunOptions` (the engine's
options and ``fold``, ``memoize``, ``repeat``, ``twins``, ``late_twins``,
``background``, ``shared_group_steps``, ``shared_ring_steps``; ``fast=True`` turns on
the first three) says how; :class:`FastPaths` is the wing that builds one run's ledger,
strategies and observers from them.

Invariant: a feature that is off is a part left out; a fold that cannot be proven runs
every XPU and says why (:class:`FoldRefused`, ``result.fold_refused``). Each shortcut
is held to the exact engine by ``tests/fast/``; the contract is in ``docs/fast-paths.md``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hcsim.engine import simulator
from hcsim.engine.execution import EngineOptions, RunResult
from hcsim.engine.memory import Placement, fill_local_first
from hcsim.errors import HcsimError
from hcsim.fast.background import Background
from hcsim.fast.ledger import LinkLedger
from hcsim.fast.repeat import IterationRepeat, platform_is_stationary
from hcsim.fast.ring_steps import MemoizedRings
from hcsim.fast.rounds import MemoizedRounds
from hcsim.fast.symmetry import fold_system, fold_units
from hcsim.fast.twins import Twins
from hcsim.fast.units import units_of
from hcsim.files import anonymous_file
from hcsim.platform.compiler import compile_platform
from hcsim.platform.simgrid_files import read_declared, runs_raw
from hcsim.platform.topology import Topology
from hcsim.workload.graph import Workload

__all__ = ["FastPaths", "FoldRefused", "RunOptions", "WorkloadFactory", "is_coherent", "simulate", "simulate_system"]


class FoldRefused(UserWarning):
    """A fold was asked for but cannot be proven for this topology: the run simulates every XPU."""


WorkloadFactory = Callable[..., Workload]
"""Called as ``factory(ranks, group=group)``: builds a workload on ``ranks`` (XPU names, in
rank order); ``group`` is the full system's XPU count when the ranks are a fold's
representatives (``None``: the ranks are all of them). ``llama2_13b`` is one."""


@dataclass(frozen=True)
class RunOptions(EngineOptions):
    """How a run runs: the engine's options (:class:`~hcsim.engine.EngineOptions`) and the fast paths.

    ``fold``: simulate a fold's representatives (:mod:`.symmetry`); ``memoize``: ring
    collectives step by step (:mod:`.ring_steps`) and every other one round by round
    (:mod:`.rounds`); ``repeat``: extrapolate the iterations after one that repeats the
    one before (:mod:`.repeat`). Memoize's features, each on by default: ``twins``
    (:mod:`.twins`), ``late_twins`` (twin classes that form once other traffic on their
    links is over), ``background`` (:mod:`.background`), ``shared_group_steps`` (rings of
    a layout group skip from their first step on a step of their plan measured before,
    :mod:`.shared_steps`), and off by default ``shared_ring_steps`` (every ring algorithm's
    steps are shared so, not only those declaring ``shared_steps``; calibrated CLI runs turn
    it on). ``dp_quotient`` (off by default): the layout fold leaves out links that can never
    limit a rate (:func:`~.symmetry.fold_units`' ``quotient``), so it keeps the fewest
    replicas; calibrated CLI runs turn it on. ``RunOptions.of(fast=True)``
    turns fold, memoize and repeat on.
    """

    fold: bool = False
    memoize: bool = False
    repeat: bool = False
    twins: bool = True
    late_twins: bool = True
    background: bool = True
    shared_group_steps: bool = True
    shared_ring_steps: bool = False
    dp_quotient: bool = False

    @classmethod
    def of(cls, options: EngineOptions | None = None, fast: bool | None = None, **switches: Any) -> Any:
        """``options`` with the keyword ``switches`` set; ``fast`` sets fold, memoize and repeat where not given."""
        for name in ("fold", "memoize", "repeat"):
            if name in switches and switches[name] is None:
                del switches[name]
            if fast is not None and name not in switches:
                switches[name] = fast
        return super().of(options, **switches)


class FastPaths:
    """The wing (:class:`~hcsim.engine.strategy.Wing`) of one run: its fast strategies and observers, from its options.

    Each feature is a part built here or left out: memoize is a :class:`~.ledger.LinkLedger`,
    :class:`~.ring_steps.MemoizedRings` and :class:`~.rounds.MemoizedRounds`; twins
    (:class:`~.twins.Twins`) and frozen components (:class:`~.background.Background`) join
    the rings only on SimGrid's raw model without cross-traffic; repeat is an
    :class:`~.repeat.IterationRepeat` observer. A subclass may hand in a feature's
    subclass (``twins_class``; the tests watch twin classes so).
    """

    twins_class: type[Twins] = Twins

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self.raw_network = False  # SimGrid's raw model without cross-traffic: twins and background skips rest on it

    def prepare(self, platform: str, config: tuple[str, ...]) -> None:
        if self.options.repeat:
            with open(platform, encoding="utf-8", errors="replace") as f:
                if not platform_is_stationary(f.read()):
                    raise HcsimError(
                        f"platform '{platform}' has time-varying profiles, so iterations cannot be extrapolated "
                        "(valid: repeat=False / no --repeat, or a platform without speed/bandwidth/latency/state files)"
                    )
        if self.options.memoize:
            self.raw_network = runs_raw(read_declared(platform), config)

    def strategies(self, execution: Any, exact: Any) -> Sequence[Any]:
        o = self.options
        if not o.memoize:
            return []
        if execution.record_flows:  # their flows are recorded whole at each vertex's end (_MemoizedTraffic)
            exact = _Unrecorded(exact)
        ledger = LinkLedger(execution)
        rings = MemoizedRings(execution, exact, ledger)
        rings.shared_steps.groups, rings.shared_steps.every_ring = o.shared_group_steps, o.shared_ring_steps
        if o.background and self.raw_network:
            Background(rings).join()  # it listens before the rings: memory flows are recorded first
        ledger.listen(rings)
        if o.twins and self.raw_network:
            self.twins_class(rings, late=o.late_twins).join()
        return [rings, MemoizedRounds(execution, exact, ledger)]

    def observers(self, execution: Any) -> Sequence[Any]:
        traffic = [_MemoizedTraffic(execution)] if self.options.memoize and execution.record_flows else []
        return [*traffic, *([IterationRepeat(execution)] if self.options.repeat else [])]


class _Unrecorded:
    """The exact strategy as the memoized ones hand flows to it: its flows are not recorded one by one.

    :class:`_MemoizedTraffic` records every flow of a memoized vertex at the vertex's end
    instead, so a flow run exact inside a memoized plan is not counted twice.
    """

    def __init__(self, exact: Any) -> None:
        self._exact = exact

    def __getattr__(self, name: str) -> Any:
        return getattr(self._exact, name)

    def complete(self, act: Any, key: Any, now: float) -> None:
        x = key[0]
        x.record_flows = False
        try:
            self._exact.complete(act, key, now)
        finally:
            x.record_flows = True


class _MemoizedTraffic:
    """Records the traffic of each memoized collective (rings, rounds) when its vertex ends.

    Memoized steps and rounds are not run in SimGrid flow by flow, so they leave no flow
    records; this observer adds, per flow of the vertex's plan, one record of the bytes
    the plan moves between its two ends (a compact ring plan's flows once per step) over
    the vertex's lifetime. Bytes on links are then those of the exact engine; a link's
    peak utilization is an average over the collective's lifetime.
    """

    def __init__(self, execution: Any) -> None:
        self.x = execution
        execution.result.graph["memoized_traffic_recorded"] = True

    def vertex_done(self, v: int, k: int, start: float, now: float) -> None:
        x = self.x
        strategy = x.strategy_of[v]
        if not isinstance(strategy, (MemoizedRings, MemoizedRounds)):
            return
        fp = x.flow_plans[v]
        times = fp.steps if isinstance(strategy, MemoizedRings) else 1
        flows = x.result.flows
        for a, b, size in zip(fp.src, fp.dst, fp.size, strict=True):
            if size:
                flows.append((a, b, size * times, start, now))


def simulate(
    platform: str | os.PathLike[str],
    workload: Workload,
    iterations: int = 1,
    *,
    coherent: bool = True,
    placement: Placement = fill_local_first,
    xpus: list[str] | None = None,
    config: tuple[str, ...] = (),
    options: RunOptions | None = None,
    paths: type[FastPaths] = FastPaths,
    **switches: Any,
) -> RunResult:
    """:func:`hcsim.engine.simulate` with the fast paths: ``memoize=True``, ``repeat=True`` (:class:`RunOptions`).

    ``paths``: the :class:`FastPaths` class that builds the run's fast strategies and
    observers from the options (a subclass can hand in a feature's subclass, as the
    tests do to watch one).
    """
    options = RunOptions.of(options, **switches)
    wing = paths(options) if options.memoize or options.repeat else None
    return simulator.simulate(
        platform, workload, iterations, coherent=coherent, placement=placement, xpus=xpus, config=config,
        options=options, wing=wing,
    )  # fmt: skip


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
    placement: Placement = fill_local_first,
    compile: Callable[[Topology], str] | None = None,
    options: RunOptions | None = None,
    fast: bool | None = None,
    paths: type[FastPaths] = FastPaths,
    **switches: Any,
) -> RunResult:
    """Run ``workload`` built on ``topology``'s XPUs; ``fast=True`` folds, memoizes and repeats.

    ``options`` (:class:`RunOptions`) and the keyword ``switches`` (``fold=``,
    ``memoize=``, ``repeat=``, ``record_flows=``, ``tasks=``, ...) say how it runs;
    ``fast`` sets fold, memoize and repeat where those are not given; ``paths`` as for
    :func:`simulate`. ``coherent=None``
    means :func:`is_coherent`. ``compile(topology) -> path`` replaces compiling into a
    anonymous in-memory file (the tests use it to reuse compiled platforms). ``result.fold``
    is the :class:`~hcsim.fast.folding.Fold` simulated (its ``ranks`` and ``weights``),
    or ``None``. A fold that cannot be proven for this topology (:func:`hcsim.fast.symmetry.fold_system`)
    runs every XPU instead, says why in a :class:`FoldRefused` warning and in ``result.fold_refused``.

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
    options = RunOptions.of(options, fast=fast, **switches)
    coherent = is_coherent(topology) if coherent is None else coherent
    ranks, group, folded = topology.xpus(), None, None
    refusal = None
    if options.fold:
        try:
            units = units_of(workload, topology)  # a factory that tells its layout: whole replicas
            folded = (
                fold_system(topology, coherent)
                if units is None
                else fold_units(topology, units, coherent, quotient=options.dp_quotient)
            )
            topology, ranks, group = folded.topology, folded.ranks, folded.group
        except HcsimError as e:  # not provable here: the exact path, said once
            refusal = str(e)
            warnings.warn(f"{refusal}; running every XPU", FoldRefused, stacklevel=2)
    work = workload(ranks, group=group)
    kwargs = dict(coherent=coherent, placement=placement, options=options, paths=paths)
    if compile is not None:
        result = simulate(compile(topology), work, iterations, **kwargs)
    else:
        with anonymous_file("platform.xml") as (f, path):  # on no disk: a SIGKILL leaves nothing behind
            compile_platform(topology, f)
            result = simulate(path, work, iterations, **kwargs)
    result.fold = folded
    result.fold_refused = refusal
    return result
