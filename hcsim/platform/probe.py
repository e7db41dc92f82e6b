"""Load a compiled platform in SimGrid and measure it: counts, routes, transfers, computations.

These are the platform layer's own checks (``hcsim platform check``, the exactness
tests, the demo); the workload engine builds on the same loading path. Each public
function runs SimGrid in a child process (:func:`hcsim.simgrid_runtime.run_isolated`), so it can be
called any number of times from one Python session.
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass
from typing import Any

from lxml import etree

from hcsim.errors import HcsimError
from hcsim.files import check_input_file
from hcsim.platform.simgrid_files import HostFacts, choose_xpus, count_links, model_in_force, read_declared
from hcsim.platform.topology import MAX_LATENCY, MIN_BANDWIDTH
from hcsim.simgrid_runtime import import_simgrid, load_platform, run_isolated
from hcsim.units import parse_bandwidth, parse_flops, parse_time

__all__ = [
    "PlatformSummary",
    "precheck_platform",
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
    xpus_how: str = ""  # how the XPUs were picked (see hcsim.platform.simgrid_files.choose_xpus)


VERSIONS = ("4", "4.0", "4.1")
"""Platform format versions SimGrid 4.1 loads."""

# attributes holding a rate, a bandwidth or a time, on whichever element carries them
_QUANTITIES = {
    "speed": "speed",
    "bandwidth": "bandwidth",
    "bw": "bandwidth",
    "bw_in": "bandwidth",
    "bw_out": "bandwidth",
    "bb_bw": "bandwidth",
    "loopback_bw": "bandwidth",
    "limiter_link": "bandwidth",
    "latency": "latency",
    "lat": "latency",
    "bb_lat": "latency",
    "loopback_lat": "latency",
}
ROUTINGS = ("Full", "Floyd", "Dijkstra", "DijkstraCache", "None", "Vivaldi", "Cluster", "Wifi")
"""Zone routing models SimGrid 4.1 builds from XML (any other name aborts it)."""
_REQUIRED = {"host": ("speed",), "link": ("bandwidth",), "backbone": ("bandwidth", "latency")}
_VALID = {
    "speed": "rates > 0 such as '1Gf', comma-separated per power state",
    "bandwidth": f"a finite rate >= {MIN_BANDWIDTH:g} B/s such as '1GBps'",
    "latency": f"a time >= 0 and at most {MAX_LATENCY:g} s such as '1us'",
}
_LEADING_NUMBER = re.compile(r"^\s*([-+]?(?:nan|inf(?:inity)?|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?))(.*)$", re.I)


def _quantity_ok(kind: str, text: str) -> bool:
    """Whether one SimGrid quantity is in range; units SimGrid knows and hcsim does not are left to SimGrid."""
    match = _LEADING_NUMBER.match(text)
    if not match:
        return True  # not a number: SimGrid's parser names it
    number = float(match.group(1))
    if math.isnan(number) or math.isinf(number) or number < 0 or (number == 0 and kind != "latency"):
        return False
    parse = {"speed": parse_flops, "bandwidth": parse_bandwidth, "latency": parse_time}[kind]
    try:
        value = parse(text.strip(), kind)
    except HcsimError:
        return True
    if kind == "bandwidth":
        return value >= MIN_BANDWIDTH
    if kind == "latency":
        return value <= MAX_LATENCY
    return value > 0


_CHECKED = ("platform", "zone", "AS", "host", "cluster", "cabinet", "peer", "link", "backbone", "route")
"""The elements :func:`precheck_platform` reads."""


class _FullZoneRoutes:
    """Hosts and routes of each zone, to find two hosts of a ``Full`` zone without a route.

    SimGrid 4.1 loads such a zone and aborts the run at the first transfer between them
    ("there is no connecting path between these two hosts").
    """

    def __init__(self) -> None:
        self.hosts: dict[str, list[str]] = {}
        self.routes: dict[str, set[tuple[str, str]]] = {}
        self.parents: set[str] = set()  # zones with sub-zones: routed through gateways, not checked here

    def add(self, el: etree._Element) -> None:
        zone = el.getparent().get("id", "")
        if el.tag == "host":
            self.hosts.setdefault(zone, []).append(el.get("id", "?"))
        elif el.tag == "route":
            pair = (el.get("src", ""), el.get("dst", ""))
            routes = self.routes.setdefault(zone, set())
            routes.add(pair)
            if el.get("symmetrical", "YES").upper() != "NO":
                routes.add(pair[::-1])
        elif el.tag in ("zone", "AS"):
            self.parents.add(zone)

    def missing(self, zone: etree._Element) -> tuple[str, str] | None:
        """Two hosts of ``zone`` (just ended) joined by no route, if it is a Full zone without sub-zones."""
        name = zone.get("id", "")
        hosts, routes = self.hosts.pop(name, []), self.routes.pop(name, set())
        if zone.get("routing") != "Full" or name in self.parents:
            return None
        for i, a in enumerate(hosts):
            for b in hosts[i + 1 :]:
                if (a, b) not in routes or (b, a) not in routes:
                    return (a, b) if (a, b) not in routes else (b, a)
        return None


def _element_problems(el: etree._Element, where: str) -> list[str]:
    """What is wrong with one element's routing, cores, speeds, bandwidths and latencies."""
    problems = []
    name = f"{el.tag} '{el.get('id', '?')}'"
    routing = el.get("routing")
    if el.tag in ("zone", "AS") and routing is not None and routing not in ROUTINGS:
        problems.append(f"{where}: {name} has routing '{routing}' (valid: {', '.join(ROUTINGS)})")
    core = el.get("core")
    if el.tag in ("host", "cluster") and core is not None and not (core.strip().isdigit() and int(core) >= 1):
        problems.append(f"{where}: {name} has core '{core}' (valid: an integer >= 1)")
    for attr in _REQUIRED.get(el.tag, ()):
        if el.get(attr) is None:
            problems.append(f"{where}: {name} has no {attr} (valid: {_VALID[_QUANTITIES[attr]]})")
    for attr, text in el.attrib.items():
        kind = _QUANTITIES.get(attr)
        parts = text.split(",") if kind == "speed" else [text]
        if kind is not None and not all(_quantity_ok(kind, part) for part in parts):
            problems.append(f"{where}: {name} has {attr} '{text}' (valid: {_VALID[kind]})")
    return problems


def precheck_platform(path: str | os.PathLike[str]) -> str:
    """Refuse, in one line, a platform file SimGrid would reject with a crash or accept and then abort on.

    SimGrid 4.1 loads a host of speed ``-1f`` or a ``0Bps`` link without a word and then
    stops the run with "The Impossible Did Happen"; a bad version or a broken file gets
    a multi-line banner. Checked here: the file, its XML, the root and its version, and
    every speed, bandwidth and latency. Entities are not expanded (a platform has no use
    for them; this keeps entity bombs and external entities out). Returns the path.
    """
    path = check_input_file(path, "platform file", "an XML file from 'hcsim platform build'")
    where = f"platform file '{path}'"
    problems: list[str] = []  # the first is reported, once the whole file is known to be XML
    events = etree.iterparse(
        path, events=("end",), tag=_CHECKED, load_dtd=False, no_network=True, resolve_entities=False
    )
    root = None
    full = _FullZoneRoutes()
    try:
        for _, el in events:
            if el.getparent() is None:
                root = el  # a <platform> root ends the file; its own attributes are checked below
                break
            if not problems:
                problems.extend(_element_problems(el, where))
                full.add(el)
                pair = full.missing(el) if el.tag in ("zone", "AS") else None
                if pair:
                    problems.append(
                        f"{where}: zone '{el.get('id')}' has no route from host '{pair[0]}' to host '{pair[1]}' "
                        "(valid: a <route> between every two hosts of a Full zone)"
                    )
            el.clear(keep_tail=True)  # 4096-XPU platforms hold ~100k routes: keep memory flat
    except etree.XMLSyntaxError as exc:
        raise HcsimError(f"{where} is not valid XML: {exc}") from None
    root = events.root if root is None else root  # another root element was not among the tags
    version = root.get("version")
    if root.tag != "platform":
        raise HcsimError(f"{where}: root element is <{root.tag}>, expected <platform>")
    if version is None:
        raise HcsimError(f'{where} has no version (valid: <platform version="4.1">, SimGrid 4.1\'s format)')
    if version.strip() not in VERSIONS:
        raise HcsimError(f"{where} has version '{version}' (valid: {', '.join(VERSIONS)}; SimGrid 4.1 loads 4.1)")
    if problems:
        raise HcsimError(problems[0])
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
    path = precheck_platform(os.fspath(path))
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
    return run_isolated(_host_facts, precheck_platform(os.fspath(path)))


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
    return run_isolated(_transfers, precheck_platform(os.fspath(path)), list(transfers))


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
    return run_isolated(_compute, precheck_platform(os.fspath(path)), host, flops)


def _route(path: str, src: str, dst: str) -> tuple[list[str], float]:
    simgrid = import_simgrid()
    engine = load_platform(path)  # keep the engine alive while its hosts are used
    links, latency = simgrid.Host.by_name(src).route_to(simgrid.Host.by_name(dst))
    names = [link.name for link in links]
    del engine
    return names, latency


def simgrid_route(path: str | os.PathLike[str], src: str, dst: str) -> tuple[list[str], float]:
    """The links SimGrid itself resolves from ``src`` to ``dst``, and their total latency."""
    return run_isolated(_route, precheck_platform(os.fspath(path)), src, dst)
