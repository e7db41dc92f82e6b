"""The workload execution engine (paper Fig. 5) on SimGrid S4U: :func:`simulate`.

One controller actor drives the whole run on a :class:`~hcsim.engine.driver.Driver`
(on SimGrid's raw contexts, :mod:`hcsim.simgrid_runtime`), so there is at most one
wake-up per completed SimGrid activity. The run's state and rules live in
:class:`~hcsim.engine.execution.Execution`; this module loads the platform in a
process of its own, runs the loop and turns a stuck run into a deadlock message naming
the waiting vertices and the dependencies they miss. Everything the engine needs is
read from the platform file (host properties written by the compiler), so any SimGrid
platform with those properties can be used.

Invariant: :func:`simulate` runs the exact path unless a caller hands it a wing
(:func:`hcsim.fast.simulate` does); its keyword switches map onto
:class:`~hcsim.engine.execution.EngineOptions` in one place (``EngineOptions.of``).
"""

from __future__ import annotations

import dataclasses
import gc
import os
import sys
import time
from typing import Any

from hcsim.collectives.registry import check_coherent
from hcsim.engine.driver import Driver
from hcsim.engine.execution import EngineOptions, Execution, RunResult
from hcsim.engine.memory import Placement, fill_local_first
from hcsim.engine.strategy import Wing
from hcsim.errors import HcsimError
from hcsim.progress import progress_bar
from hcsim.simgrid_runtime import import_simgrid, load_platform, run_isolated
from hcsim.workload.graph import Workload

__all__ = ["EngineOptions", "RunResult", "simulate"]


class _Progress:
    """The progress bar's observer: one tick per iteration done."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def iteration_done(self, k: int, now: float) -> None:
        self.bar.update(1)
        self.bar.set_postfix(simulated=f"{now:.4g} s")


def _run(
    platform: str,
    workload: Workload,
    iterations: int,
    coherent: bool,
    placement: Placement,
    options: EngineOptions,
    xpus: list[str] | None,
    config: tuple[str, ...],
    wing: Wing | None,
) -> RunResult:
    sg = import_simgrid()
    engine = load_platform(platform, one_actor=True, raw_contexts=options.raw_contexts, config=config)
    all_hosts = {h.name: h for h in engine.all_hosts}
    if xpus is not None:  # chosen by the caller (hcsim.platform.simgrid_files.choose_xpus)
        xpus = set(xpus)
    else:
        xpus = {n for n, h in all_hosts.items() if h.get_property("kind") == "xpu"}
        if not xpus:  # a platform not written by hcsim: every host counts as an XPU
            xpus = set(all_hosts)
    workload.check_placement(xpus, set(all_hosts))  # the rest was validated by simulate() before forking

    driver = Driver(sg)
    bar = progress_bar(iterations, "simulating", "iteration", show=True, leave=False) if options.progress else None

    gc.disable()  # setting up creates 100k+ objects and no cycle: no collection to run meanwhile
    try:
        run = Execution(
            sg,
            workload,
            all_hosts,
            iterations,
            coherent,
            placement,
            driver,
            options=options,
            wing=wing,
            observers=[_Progress(bar)] if bar is not None else (),
        )
        # The run's plans (flow plans, compute plans, routes: 100k objects at 1024 XPUs) live as
        # long as the run: the cyclic GC need not rescan them at every full collection of the loop.
        # Frozen before the GC is back on: else its first allocation would trigger a collection of
        # every object the set-up made (they are all in the youngest generation): 0.02 s at 1024 XPUs.
        gc.freeze()
    finally:
        gc.enable()
    result = run.result

    def controller() -> None:
        run.start(0.0)
        driver.run(run.complete, run.timer)  # one wake-up per completed activity or batch of due timers

    controller_host = all_hosts[sorted(xpus)[0]]
    sg.Actor.create("hcsim-engine", controller_host, controller)
    t0 = time.perf_counter()
    engine.run()
    result.wall_seconds = time.perf_counter() - t0
    run.run_done()
    if bar is not None:
        bar.update(result.memoized_iterations)
        bar.close()

    missing = run.missing()
    if missing:
        raise HcsimError(_deadlock_message(run.names, run.preds, run.started, run.completed, missing, iterations))
    result.makespan = max(result.iteration_end) if iterations else 0.0
    if options.record_flows:
        pairs = sorted({(s, d) for s, d, *_ in result.flows})
        for s, d in pairs:
            links, _ = all_hosts[s].route_to(all_hosts[d])
            result.routes[(s, d)] = [link.name for link in links]
            for link in links:
                result.link_bandwidth[link.name] = link.bandwidth
    del engine
    return result


def _deadlock_message(
    names: list[str],
    preds: list[list[tuple[int, bool]]],
    started: list[int],
    completed: list[int],
    missing: list[int],
    iterations: int,
) -> str:
    parts = []
    for v in missing[:4]:
        k = started[v]
        unmet = []
        for u, skip in preds[v]:
            need = k if skip else k + 1
            if (k or not skip) and completed[u] < need:
                unmet.append(f"'{names[u]}'" + (" (previous iteration)" if skip else ""))
        parts.append(f"'{names[v]}' (iteration {k + 1}) waits for {', '.join(unmet) or 'nothing'}")
    more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
    return (
        f"deadlock: no activity left but {len(missing)} vertices ran fewer than {iterations} iterations: "
        f"{'; '.join(parts)}{more} (a cycle needs a skip_first_iteration edge)"
    )


def _xpus_of(path: str) -> list[str]:
    engine = load_platform(path)
    hosts = [h for h in engine.all_hosts if h.get_property("kind") == "xpu"]
    order = sorted(hosts, key=lambda h: (float(h.get_property("rank") or 0), h.name))
    names = [h.name for h in order]
    del engine
    return names


def platform_xpus(platform: str | os.PathLike[str]) -> list[str]:
    """XPU names of a platform file, in rank order."""
    path = os.fspath(platform)
    if not os.path.isfile(path):
        raise HcsimError(f"platform file '{path}' does not exist (valid: an XML file from 'hcsim platform build')")
    return run_isolated(_xpus_of, path)


def simulate(
    platform: str | os.PathLike[str],
    workload: Workload,
    iterations: int = 1,
    *,
    coherent: bool = True,
    placement: Placement = fill_local_first,
    xpus: list[str] | None = None,
    config: tuple[str, ...] = (),
    options: EngineOptions | None = None,
    wing: Wing | None = None,
    **switches: Any,
) -> RunResult:
    """Run ``iterations`` of ``workload`` on a compiled platform, exactly; return the raw result.

    ``coherent`` chooses the memory semantics of remote data (paper Fig. 3 b/c);
    ``placement`` where each operator's data lives (:mod:`hcsim.engine.memory`); ``xpus``
    names the hosts that may compute (default: those with ``kind=xpu``, or every host if
    none has it); ``config`` adds SimGrid ``--cfg`` items such as ``"network/model:raw"``
    (see :mod:`hcsim.platform.simgrid_files`). ``options`` says how it runs
    (:class:`EngineOptions`: ``record_flows`` keeps every flow for link statistics, off
    for the fastest runs; ``progress`` shows a bar of iterations done; ``tasks``, ...);
    keyword ``switches`` set single options (``record_flows=False``). ``wing`` adds
    strategies and observers (:class:`~hcsim.engine.strategy.Wing`): the fast paths go
    through :func:`hcsim.fast.simulate` and :func:`hcsim.fast.simulate_system`, which
    build it.

    A ring allreduce of S bytes over N XPUs on a ring of latency L and bandwidth B takes
    2(N-1)(L + S/(N B)), and SimGrid says so::

        >>> import os, tempfile
        >>> from hcsim.engine import simulate
        >>> from hcsim.platform import compile_platform, ring
        >>> from hcsim.workload import allreduce_benchmark
        >>> topology = ring(4, bandwidth=100e9, latency=1e-6)
        >>> path = os.path.join(tempfile.mkdtemp(), "ring4.xml")
        >>> _ = compile_platform(topology, path)
        >>> t = simulate(path, allreduce_benchmark(topology.xpus(), 4e8)).makespan
        >>> closed = 2 * 3 * (1e-6 + 4e8 / (4 * 100e9))
        >>> abs(t - closed) / closed < 1e-9
        True
    """
    options = EngineOptions.of(options, **switches)
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise HcsimError(f"iterations {iterations!r} is invalid (valid: an integer >= 1)")
    path = os.fspath(platform)
    if not os.path.isfile(path):
        raise HcsimError(f"platform file '{path}' does not exist (valid: an XML file from 'hcsim platform build')")
    workload.validate()
    check_coherent(workload.nodes(data=True), coherent)
    if wing is not None:
        wing.prepare(path, tuple(config))
    if options.progress is None:
        options = dataclasses.replace(options, progress=sys.stderr.isatty())
    return run_isolated(_run, path, workload, iterations, coherent, placement, options, xpus, tuple(config), wing)
