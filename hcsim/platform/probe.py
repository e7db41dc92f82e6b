"""Load a platform in SimGrid and measure it: counts, routes, transfers, computations; refuse what SimGrid crashes on.

These are the platform layer's own checks (``hcsim platform check``, ``run --platform``,
the exactness tests, the demo); the workload engine builds on the same loading path.
:func:`precheck_platform` reads the file without SimGrid and refuses what SimGrid 4.1
aborts or segfaults on (no zone, models it lacks, Wifi and 'None' zones, profiles,
malformed values); :func:`host_facts` and :func:`check_platform` load it in a child and
resolve a route between every two XPUs a run will pick. Each public function runs SimGrid
in a forked child (:func:`hcsim.simgrid_runtime.run_isolated`) whose standard error is
kept: SimGrid aborting or crashing there becomes one HcsimError line with its own reason.

Invariant: no platform file makes SimGrid abort or crash in these functions without the
caller getting one line; a pair of XPUs they report routed, SimGrid routes. Guide:
docs/platform.md, "SimGrid never crashes under hcsim".
"""

from __future__ import annotations

import faulthandler
import mmap
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from lxml import etree

from hcsim.errors import HcsimError
from hcsim.platform.precheck import precheck_platform
from hcsim.platform.simgrid_files import HostFacts, choose_xpus, count_links, model_in_force, read_declared
from hcsim.simgrid_runtime import import_simgrid, load_platform, run_isolated

T = TypeVar("T")

__all__ = [
    "MAX_ROUTE_CHECKS",
    "MAX_RUN_XPUS",
    "PlatformSummary",
    "precheck_platform",
    "check_platform",
    "host_facts",
    "simulate_transfers",
    "simulate_compute",
    "simgrid_route",
    "unrouted_pairs",
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
    xpus_how: str = ""  # how the XPUs were picked (see hcsim.platform.simgrid_files.choose_xpus)
    facts: HostFacts | None = None  # the hosts, and the routes resolved between the XPUs (HostFacts.unrouted)


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


MAX_RUN_XPUS = 4096
"""XPUs a run on a platform file takes at most (the largest built system, docs/platform.md "Limits")."""
MAX_ROUTE_CHECKS = 40_000
"""Routes :func:`host_facts` resolves at most: every ordered pair of up to 200 XPUs outside clusters.

SimGrid resolves one in 3.5 us (a flat zone) to 30 us (a compiled 512-XPU CXL system, three
zone levels): about 1 s at most at the start of a run. Past it, a sample (docs/platform.md).
"""


@dataclass
class _Layout:
    """What the probe reads from the file itself: clusters, bypassed points, Dijkstra zones' graphs."""

    clusters: set[str]
    pinned: set[str]  # points a bypass route names (never grouped)
    dijkstra: dict[str, str]  # host -> its Dijkstra zone, for hosts directly in one
    edges: dict[str, dict[str, set[str]]]  # Dijkstra zone -> point -> points its routes reach in one hop

    reached: dict[str, set[str]] = field(default_factory=dict)  # point -> the points its zone's routes reach

    def unreachable(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` sit in one Dijkstra zone whose routes do not join them.

        SimGrid 4.1 crashes resolving such a route (a segmentation fault, not its "No route"
        exception), so the probe answers it from the file instead. What a point reaches is
        searched once, and where every route of the zone goes both ways, shared by all the
        points it reaches (an imported grid of 1024 NPUs: one search, not one per pair).
        """
        zone = self.dijkstra.get(a)
        if zone is None or zone != self.dijkstra.get(b):
            return False
        if a not in self.reached:
            edges, seen, todo = self.edges.get(zone, {}), {a}, [a]
            while todo:
                for nxt in edges.get(todo.pop(), ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
            both_ways = all(u in edges.get(v, ()) for u, vs in edges.items() for v in vs)
            for x in seen if both_ways else (a,):  # routes both ways: every point of the component reaches it
                self.reached[x] = seen
        return b not in self.reached[a]


def _layout(path: str) -> _Layout:
    """Read the file's clusters, bypass routes and Dijkstra zones (see :class:`_Layout`)."""
    layout = _Layout(set(), set(), {}, {})
    for _, el in etree.iterparse(
        path, events=("end",), tag=("cluster", "bypassRoute", "bypassZoneRoute", "bypassASroute", "route", "host"),
        load_dtd=False, no_network=True, resolve_entities=False,
    ):  # fmt: skip
        parent = el.getparent()
        dijkstra = parent is not None and parent.get("routing") in ("Dijkstra", "DijkstraCache")
        if el.tag == "cluster":
            layout.clusters.add(el.get("id", ""))
        elif el.tag == "host" and dijkstra:
            layout.dijkstra[el.get("id", "")] = parent.get("id", "")
        elif el.tag == "route" and dijkstra:
            edges = layout.edges.setdefault(parent.get("id", ""), {})
            src, dst = el.get("src", ""), el.get("dst", "")
            edges.setdefault(src, set()).add(dst)
            if el.get("symmetrical", "YES").upper() != "NO":
                edges.setdefault(dst, set()).add(src)
        elif el.tag != "host":
            layout.pinned.update((el.get("src", ""), el.get("dst", "")))
        el.clear(keep_tail=True)
    return layout


def _groups(engine: Any, layout: _Layout, xpus: list[str]) -> dict[str, str]:
    """Each XPU's route group: the first XPU of its ``<cluster>``, or itself.

    Every node of a cluster reaches the cluster's router over its own links, and SimGrid
    routes from that router whoever sent: a route leaves a cluster from any of its nodes
    exactly when it leaves from one of them (unless a bypass route names a node).
    """
    clusters, pinned = layout.clusters, layout.pinned
    zone = {}
    for netzone in engine.all_netzones:
        if netzone.name in clusters and netzone.name not in pinned:
            for host in netzone.all_hosts:
                zone[host.name] = netzone.name
    first: dict[str, str] = {}
    group = {}
    for x in xpus:
        key = zone.get(x) if x not in pinned else None
        group[x] = x if key is None else first.setdefault(key, x)
    return group


def _pairs(xpus: list[str], group: dict[str, str], memory: dict[str, list[str]]) -> tuple[list[tuple[str, str]], bool]:
    """The ordered pairs whose route stands for every XPU pair (and XPU-memory pair), and whether they are a sample."""
    members: dict[str, list[str]] = {}
    for x in xpus:
        members.setdefault(group[x], []).append(x)
    reps = list(members)
    inside = [(m[0], m[1]) for m in members.values() if len(m) > 1] + [
        (m[1], m[0]) for m in members.values() if len(m) > 1
    ]
    to_memory = [(x, m) for x in xpus for m in memory.get(x, ()) if m != x]
    to_memory += [(m, x) for x, m in to_memory]
    n = len(reps)
    if n * (n - 1) + len(inside) + len(to_memory) <= MAX_ROUTE_CHECKS:
        return [(a, b) for a in reps for b in reps if a != b] + inside + to_memory, False
    ring = [(reps[i], reps[(i + 1) % n]) for i in range(n)] + [(reps[(i + 1) % n], reps[i]) for i in range(n)]
    star = [(reps[0], b) for b in reps[1:]] + [(b, reps[0]) for b in reps[1:]]
    return list(dict.fromkeys(ring + star + inside + to_memory)), True


def _resolve(engine: Any, layout: _Layout, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs SimGrid has no route for: no link and no latency (its "no connecting path"), or "No route"."""
    hosts = {h.name: h for h in engine.all_hosts}
    missing = []
    for a, b in pairs:
        if layout.unreachable(a, b):
            missing.append((a, b))
            continue
        if _MARK is not None:  # the pair being resolved, for the parent to name if SimGrid crashes on it
            note = f"{a}\0{b}".encode()[: len(_MARK) - 1] + b"\0\0"
            _MARK[: len(note)] = note
        try:
            links, latency = hosts[a].route_to(hosts[b])
        except ValueError as exc:  # a Floyd zone: "No route from 'a' to 'b'"
            if "No route" not in str(exc):
                raise
            links, latency = [], 0.0
        if not links and not latency > 0:
            missing.append((a, b))
    return missing


def _probe(path: str, xpus_from: str | None, config: tuple[str, ...]) -> tuple[PlatformSummary, HostFacts]:
    """In the child: load ``path``, count what SimGrid built, and resolve the routes between the XPUs."""
    t0 = time.perf_counter()
    engine = load_platform(path, config=config)
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
    facts = _facts(engine)
    if xpus_from is None:
        return summary, facts
    xpus, _ = choose_xpus(facts, xpus_from, path)
    by_name = {h.name: h for h in hosts}
    memory = {
        x: [m for m in (by_name[x].get_property("host_memory"), by_name[x].get_property("cxl_memory")) if m in by_name]
        for x in xpus
    }
    engine.run()  # no actor: it only seals the platform, as a run does (Dijkstra zones resolve nothing before)
    layout = _layout(path)
    group = _groups(engine, layout, xpus)
    pairs, sampled = _pairs(xpus, group, memory)
    missing = _resolve(engine, layout, pairs)
    facts = replace(
        facts,
        unrouted=tuple(missing),
        route_groups={x: g for x, g in group.items() if g != x},
        route_pairs=len(pairs),
        route_sampled=sampled,
    )
    return summary, facts


_SIMGRID_LINE = re.compile(r"\[[^\]]*/(?:CRITICAL|ERROR)\]\s*(.+)|what\(\):\s*(.+)")
_ADDRESS = re.compile(r"\s*\(0x[0-9a-f]+\)|\s*0x[0-9a-f]+")


def _simgrid_message(text: str) -> str:
    """SimGrid's own one-line reason in what it printed before aborting (addresses dropped)."""
    for line in text.splitlines():
        match = _SIMGRID_LINE.search(line)
        if match:
            return _ADDRESS.sub("", (match.group(1) or match.group(2)).strip())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("Backtrace")]
    return _ADDRESS.sub("", lines[0]) if lines else ""


def _captured(log: int, fn: Callable[..., T], *args: Any) -> T:
    """In the child: SimGrid's stderr goes to ``log`` (the parent shows it, or makes it one line)."""
    sys.stderr.flush()
    os.dup2(log, 2)
    faulthandler.disable()  # SimGrid's abort is reported by the parent, not as a Python dump on another fd
    return fn(*args)


def _isolated(fn: Callable[..., T], path: str, *args: Any) -> T:
    """``fn(path, *args)`` in a SimGrid child; SimGrid aborting or crashing there becomes one HcsimError line."""
    global _MARK
    with tempfile.TemporaryFile() as log, mmap.mmap(-1, 4096) as mark:  # unnamed file, shared anonymous memory
        _MARK = mark
        try:
            result = run_isolated(_captured, log.fileno(), fn, path, *args)
        except (HcsimError, RuntimeError) as exc:
            log.seek(0)
            text = log.read().decode("utf-8", "replace")
            said = _simgrid_message(text)
            if "stopped without an answer" in str(exc):
                code = re.search(r"exit code (-?\d+)", str(exc))
                number = int(code.group(1)) if code else 0
                how = f"crashed ({signal.Signals(-number).name})" if number < 0 and -number in _SIGNALS else "stopped"
                reason = said or "no message"
                src, _, dst = mark[:].split(b"\0\0")[0].decode("utf-8", "replace").partition("\0")
                where = f" resolving the route from host '{src}' to host '{dst}'" if dst else ""
                valid = "a route SimGrid resolves between them, e.g. a <zoneRoute> between their zones"
                valid = valid if dst else "a file SimGrid runs"
                raise HcsimError(f"platform file '{path}': SimGrid {how}{where}: {reason} (valid: {valid})") from None
            if isinstance(exc, RuntimeError):  # a Python exception in the child: SimGrid's bindings raised
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise HcsimError(f"platform file '{path}': SimGrid refused it: {first}") from None
            raise
        finally:
            _MARK = None
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    if text:
        sys.stderr.write(text)  # warnings SimGrid printed while all went well
    return result


_SIGNALS = {int(s) for s in signal.Signals}
_MARK: mmap.mmap | None = None  # while a probe runs: shared with its child, which notes the route it resolves


def check_platform(path: str | os.PathLike[str], xpus_from: str = "auto") -> PlatformSummary:
    """Load ``path`` in SimGrid, count what it holds and resolve a route between every two of its XPUs.

    The XPUs are those ``hcsim run --xpus-from`` would pick; ``summary.facts.unrouted``
    lists the pairs SimGrid has no route for.
    """
    path = precheck_platform(os.fspath(path))
    declared = read_declared(path)
    summary, facts = _isolated(_probe, path, xpus_from, ())
    xpus, summary.xpus_how = choose_xpus(facts, xpus_from, path)
    summary.xpus = len(xpus)
    summary.xpus_without_memory = sum(1 for x in xpus if x in facts.without_memory)
    summary.network_model = model_in_force(declared, "file")
    summary.coherent = declared.coherent
    summary.facts = facts
    return summary


def host_facts(path: str | os.PathLike[str], xpus_from: str | None = None, config: tuple[str, ...] = ()) -> HostFacts:
    """The hosts of a platform file: all of them, those with kind=xpu, those without a memory property.

    With ``xpus_from``, also the routes between the XPUs it picks (as :func:`check_platform`),
    with SimGrid configured by ``config`` (``--cfg`` items) as the run will be.
    """
    path = precheck_platform(os.fspath(path))
    facts = _isolated(_probe, path, xpus_from, tuple(config))[1]
    if xpus_from is not None:
        xpus, how = choose_xpus(facts, xpus_from, path)
        if len(xpus) > MAX_RUN_XPUS:
            raise HcsimError(
                f"platform file '{path}': {len(xpus)} XPUs ({how}) is more than a run takes (valid: at most "
                f"{MAX_RUN_XPUS}, as the largest built system; kind=xpu on fewer hosts and --xpus-from property)"
            )
    return facts


def _unrouted(path: str, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    engine = load_platform(path)
    engine.run()  # seal the platform, as a run does
    return _resolve(engine, _layout(path), pairs)


def unrouted_pairs(path: str | os.PathLike[str], pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Those of ``pairs`` (host names) SimGrid has no route for; for a run past the sample of :func:`host_facts`."""
    return _isolated(_unrouted, precheck_platform(os.fspath(path)), list(pairs))


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
    return _isolated(_transfers, precheck_platform(os.fspath(path)), list(transfers))


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
    return _isolated(_compute, precheck_platform(os.fspath(path)), host, flops)


def _route(path: str, src: str, dst: str) -> tuple[list[str], float]:
    simgrid = import_simgrid()
    engine = load_platform(path)  # keep the engine alive while its hosts are used
    links, latency = simgrid.Host.by_name(src).route_to(simgrid.Host.by_name(dst))
    names = [link.name for link in links]
    del engine
    return names, latency


def simgrid_route(path: str | os.PathLike[str], src: str, dst: str) -> tuple[list[str], float]:
    """The links SimGrid itself resolves from ``src`` to ``dst``, and their total latency."""
    return _isolated(_route, precheck_platform(os.fspath(path)), src, dst)
