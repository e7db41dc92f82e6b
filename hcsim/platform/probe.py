"""Load a compiled platform in SimGrid and measure it: counts, routes, transfers, computations.

These are the platform layer's own checks (``hcsim platform check``, the exactness
tests, the demo); the workload engine builds on the same loading path. Each public
function runs SimGrid in a child process (:func:`hcsim.sg.run_isolated`), so it can be
called any number of times from one Python session.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from lxml import etree

from hcsim.errors import HcsimError
from hcsim.platform.foreign import HostFacts, choose_xpus, count_links, model_in_force, read_declared
from hcsim.sg import import_simgrid, load_platform, run_isolated

__all__ = [
    "PlatformSummary",
    "check_platform",
    "host_facts",
    "simulate_transfers",
    "simulate_compute",
    "simgrid_route",
]


@dataclass
class PlatformSummary:
    """What SimGrid saw when it loaded a platform file."""

    path: str
    hosts: int
    xpus: int
    memories: int
    routers: int
    links: int
    load_seconds: float
    network_model: str = ""  # which model SimGrid runs the file with, and why
    coherent: bool | None = None  # the file's root-zone 'coherent' property, if any
    xpus_without_memory: int = 0  # XPUs (as run would pick them) without a 'memory' property
    xpus_how: str = ""  # how the XPUs were picked (see hcsim.platform.foreign.choose_xpus)


def _precheck(path: str) -> str:
    """Fail early, in one line, on files SimGrid would reject with a crash."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise HcsimError(f"platform file '{path}' does not exist (valid: an XML file from 'hcsim platform build')")
    try:
        for _, el in etree.iterparse(path, events=("start",), load_dtd=False, no_network=True):
            if el.tag != "platform":
                raise HcsimError(f"platform file '{path}': root element is <{el.tag}>, expected <platform>")
            break
    except etree.XMLSyntaxError as exc:
        raise HcsimError(f"platform file '{path}' is not valid XML: {exc}") from None
    return path


def _facts(engine: Any) -> HostFacts:
    hosts = engine.all_hosts
    xpus = [h for h in hosts if h.get_property("kind") == "xpu"]

    def rank(h: Any) -> float:
        try:
            return float(h.get_property("rank") or 0)
        except ValueError:
            return 0.0

    xpus.sort(key=lambda h: (rank(h), h.name))
    return HostFacts(
        hosts=[h.name for h in hosts],
        by_property=[h.name for h in xpus],
        without_memory=frozenset(h.name for h in hosts if h.get_property("memory") is None),
    )


def _summary(path: str) -> tuple[PlatformSummary, HostFacts]:
    t0 = time.perf_counter()
    engine = load_platform(path)
    elapsed = time.perf_counter() - t0
    hosts = engine.all_hosts
    kinds = [h.get_property("kind") for h in hosts]
    # the bindings expose no NetPoint kind: netpoints are hosts, routers and zones
    routers = len(engine.all_netpoints) - len(hosts) - len(engine.all_netzones)
    summary = PlatformSummary(
        path=path,
        hosts=len(hosts),
        xpus=kinds.count("xpu"),
        memories=kinds.count("memory"),
        routers=routers,
        links=count_links([link.name for link in engine.all_links]),
        load_seconds=elapsed,
    )
    return summary, _facts(engine)


def check_platform(path: str | os.PathLike[str], xpus_from: str = "auto") -> PlatformSummary:
    """Load ``path`` in SimGrid and count what it holds (XPUs as ``hcsim run --xpus-from`` would pick them)."""
    path = _precheck(os.fspath(path))
    declared = read_declared(path)
    summary, facts = run_isolated(_summary, path)
    xpus, summary.xpus_how = choose_xpus(facts, xpus_from, path)
    summary.xpus = len(xpus)
    summary.xpus_without_memory = sum(1 for x in xpus if x in facts.without_memory)
    summary.network_model = model_in_force(declared, "file")
    summary.coherent = declared.coherent
    return summary


def _host_facts(path: str) -> HostFacts:
    engine = load_platform(path)
    facts = _facts(engine)
    del engine
    return facts


def host_facts(path: str | os.PathLike[str]) -> HostFacts:
    """The hosts of a platform file: all of them, those with kind=xpu, those without a memory property."""
    return run_isolated(_host_facts, _precheck(os.fspath(path)))


def _transfers(path: str, transfers: list[tuple[str, str, float]]) -> list[float]:
    simgrid = import_simgrid()
    engine = load_platform(path)
    ends = [float("nan")] * len(transfers)

    def sender(i: int, src: Any, dst: Any, size: int) -> None:
        simgrid.Comm.sendto(src, dst, size)
        ends[i] = simgrid.Engine.clock

    for i, (src, dst, size) in enumerate(transfers):
        s, d = simgrid.Host.by_name(src), simgrid.Host.by_name(dst)
        # SimGrid 4.1 never completes a zero-byte communication: send at least one byte
        simgrid.Actor.create(f"t{i}", s, sender, i, s, d, max(1, int(size)))
    engine.run()
    return ends


def simulate_transfers(path: str | os.PathLike[str], transfers: list[tuple[str, str, float]]) -> list[float]:
    """Start every (src, dst, bytes) transfer at time 0; return each one's completion time."""
    return run_isolated(_transfers, _precheck(os.fspath(path)), list(transfers))


def _compute(path: str, host: str, flops: float) -> float:
    simgrid = import_simgrid()
    engine = load_platform(path)
    end = []

    def worker() -> None:
        simgrid.this_actor.execute(flops)
        end.append(simgrid.Engine.clock)

    simgrid.Actor.create("compute", simgrid.Host.by_name(host), worker)
    engine.run()
    return end[0]


def simulate_compute(path: str | os.PathLike[str], host: str, flops: float) -> float:
    """Time SimGrid takes to execute ``flops`` on ``host`` alone."""
    return run_isolated(_compute, _precheck(os.fspath(path)), host, flops)


def _route(path: str, src: str, dst: str) -> tuple[list[str], float]:
    simgrid = import_simgrid()
    engine = load_platform(path)  # keep the engine alive while its hosts are used
    links, latency = simgrid.Host.by_name(src).route_to(simgrid.Host.by_name(dst))
    names = [link.name for link in links]
    del engine
    return names, latency


def simgrid_route(path: str | os.PathLike[str], src: str, dst: str) -> tuple[list[str], float]:
    """The links SimGrid itself resolves from ``src`` to ``dst``, and their total latency."""
    return run_isolated(_route, _precheck(os.fspath(path)), src, dst)
