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
import math
import mmap
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from lxml import etree

from hcsim.errors import HcsimError
from hcsim.files import check_input_file
from hcsim.platform.simgrid_files import HostFacts, choose_xpus, count_links, model_in_force, read_declared
from hcsim.platform.topology import MAX_LATENCY, MIN_BANDWIDTH
from hcsim.simgrid_runtime import import_simgrid, load_platform, run_isolated
from hcsim.units import parse_bandwidth, parse_flops, parse_time

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
UNSUPPORTED_ROUTINGS = {
    "Wifi": "aborts SimGrid 4.1 at the first transfer unless a program attaches each station to its access point",
}
"""Zone routings hcsim refuses, and why (a Vivaldi zone is probed: SimGrid aborts only where coordinates lack)."""
SIMGRID_MODELS = {
    "network/model": ("LV08", "CM02", "SMPI", "Constant", "raw"),
    "host/model": ("default", "ptask_L07"),
    "cpu/model": ("Cas01",),
    "disk/model": ("S19",),
}
"""The models this SimGrid 4.1 build has (``--cfg=network/model:help``); any other value aborts it."""
PROFILES = ("speed_file", "availability_file", "state_file", "bandwidth_file", "latency_file")
"""Attributes that attach a profile (speeds that vary, hosts or links that fail) to a host or link."""
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


_CHECKED = (
    "platform", "config", "prop", "zone", "AS", "host", "cluster", "cabinet", "peer", "link", "backbone", "route",
    "router", "trace", "trace_connect", "actor", "process", "include", "random",
)  # fmt: skip
"""The elements :func:`precheck_platform` reads."""


_NOT_HERE = {
    "trace": "a <trace> profile (speeds that vary, hosts or links that fail)",
    "trace_connect": "a <trace_connect> (a profile attached to a host or link)",
    "actor": "an <actor> (a deployment: hcsim starts its own actors)",
    "process": "a <process> (a deployment: hcsim starts its own actors)",
    "include": "an <include> (SimGrid 4.1 does not load it)",
    "random": "a <random> (SimGrid 4.1 does not load it)",
}


def _routing_problem(el: etree._Element, where: str) -> str | None:
    """A zone whose routing SimGrid cannot build, or hcsim cannot run on."""
    routing = el.get("routing")
    name = f"zone '{el.get('id', '?')}'"
    if routing is None:
        valid = ", ".join(r for r in ROUTINGS if r not in UNSUPPORTED_ROUTINGS)
        return f"{where}: {name} has no routing (valid: {valid})"
    if routing not in ROUTINGS:
        return f"{where}: {name} has routing '{routing}' (valid: {', '.join(ROUTINGS)})"
    if routing in UNSUPPORTED_ROUTINGS:
        return (
            f"{where}: {name} has routing '{routing}', which {UNSUPPORTED_ROUTINGS[routing]} "
            "(valid: Full, Floyd, Dijkstra, DijkstraCache, Vivaldi or Cluster zones, <cluster>)"
        )
    if routing == "None":
        points = [c for c in el if c.tag in ("host", "router", "zone", "AS", "cluster", "cabinet", "peer")]
        if len(points) > 1:
            return (
                f"{where}: {name} has routing 'None' and {len(points)} hosts, routers or zones: SimGrid 4.1 "
                "aborts on the first route between two of them (valid: Full, Floyd or Dijkstra routing)"
            )
    return None


def _speed_problem(el: etree._Element, where: str, name: str) -> str | None:
    """Power states may be 0 (a host switched off, as SimGrid's energy examples have); the initial one may not."""
    text = el.get("speed")
    if text is None:
        return None
    parts = text.split(",")
    pstate = el.get("pstate", "0").strip()
    try:
        initial = int(float(pstate))
    except ValueError:
        initial = -1
    if not (0 <= initial < len(parts)) or float(pstate) != initial:
        return f"{where}: {name} has pstate '{pstate}' (valid: an integer from 0 to {len(parts) - 1}, one per speed)"
    for i, part in enumerate(parts):
        if not _quantity_ok("speed", part) and not (i != initial and _is_zero(part)):
            zero = f"0 only in a state other than pstate {initial}"
            return f"{where}: {name} has speed '{text}' (valid: {_VALID['speed']}; {zero})"
    return None


def _is_zero(text: str) -> bool:
    match = _LEADING_NUMBER.match(text)
    return bool(match) and float(match.group(1)) == 0.0


def _config_problem(el: etree._Element, where: str) -> str | None:
    """A ``<config>`` model that this SimGrid build does not have, or tracing (SimGrid would write a file)."""
    key, value = el.get("id", ""), el.get("value", "")
    if key.strip().startswith("tracing"):
        return (
            f"{where}: <config> sets {key}: SimGrid would write its own trace file (valid: no tracing "
            "properties; 'hcsim run --chrome-trace FILE' writes hcsim's)"
        )
    valid = SIMGRID_MODELS.get(key.strip())
    if valid is not None and value.strip() not in valid:
        return f"{where}: <config> sets {key} to '{value}', which SimGrid 4.1 does not have (valid: {', '.join(valid)})"
    return None


def _element_problems(el: etree._Element, where: str) -> list[str]:
    """What is wrong with one element's routing, cores, speeds, bandwidths, latencies and profiles."""
    problems = []
    name = f"{el.tag} '{el.get('id', '?')}'"
    parent = el.getparent()
    if el.tag in _NOT_HERE:
        return [f"{where} has {_NOT_HERE[el.tag]}: hcsim runs platforms without them (valid: remove it)"]
    if el.tag == "prop":
        problem = _config_problem(el, where) if parent is not None and parent.tag == "config" else None
        return [problem] if problem else []
    if el.tag in ("host", "link", "router", "route", "backbone") and parent is not None and parent.tag == "platform":
        return [f'{where}: {name} is outside any zone (valid: inside a <zone id=... routing="Full">)']
    topology = el.get("topology", "FLAT").strip().upper()
    if el.tag == "cluster" and topology != "FLAT" and parent is not None and parent.tag == "platform":
        return [
            f"{where}: {name} is a {topology} cluster outside any zone, which SimGrid 4.1 crashes on "
            '(valid: inside a <zone id=... routing="Full">)'
        ]
    if el.tag in ("zone", "AS"):
        problem = _routing_problem(el, where)
        if problem:
            return [problem]
    vivaldi = parent is not None and parent.tag in ("zone", "AS") and parent.get("routing") == "Vivaldi"
    if el.tag in ("host", "peer") and vivaldi and len((el.get("coordinates") or "").split()) != 3:
        return [
            f"{where}: {name} in Vivaldi zone '{parent.get('id', '?')}' has coordinates "
            f"'{el.get('coordinates', '')}', which SimGrid 4.1 aborts on (valid: three numbers, e.g. '25.5 9.4 1.4')"
        ]
    if el.tag == "peer" and not vivaldi:
        return [f"{where}: {name} is a <peer> outside a Vivaldi zone, which SimGrid 4.1 aborts on (valid: <host>)"]
    for attr in PROFILES:
        if el.get(attr):
            return [
                f"{where}: {name} has {attr} '{el.get(attr)}': hcsim runs without failures and with constant "
                f"speeds and bandwidths (valid: remove {attr})"
            ]
    core = el.get("core")
    if el.tag in ("host", "cluster") and core is not None and not (core.strip().isdigit() and int(core) >= 1):
        problems.append(f"{where}: {name} has core '{core}' (valid: an integer >= 1)")
    for attr in _REQUIRED.get(el.tag, ()):
        if el.get(attr) is None:
            problems.append(f"{where}: {name} has no {attr} (valid: {_VALID[_QUANTITIES[attr]]})")
    for attr, text in el.attrib.items():
        kind = _QUANTITIES.get(attr)
        if attr == "speed" and el.tag in ("host", "cluster", "cabinet"):
            problem = _speed_problem(el, where, name)
            problems.extend([problem] if problem else [])
        elif kind is not None and not _quantity_ok(kind, text):
            problems.append(f"{where}: {name} has {attr} '{text}' (valid: {_VALID[kind]})")
    return problems


def precheck_platform(path: str | os.PathLike[str]) -> str:
    """Refuse, in one line, a platform file SimGrid would reject with a crash or accept and then abort on.

    SimGrid 4.1 loads a host of speed ``-1f`` or a ``0Bps`` link without a word and then
    stops the run with "The Impossible Did Happen"; a bad version, a broken file, a model
    it does not have or a zone without routes gets a multi-line banner and a core dump.
    Checked here, without SimGrid: the file, its XML, the root and its version, every
    speed, bandwidth and latency, the zones' routings (:data:`UNSUPPORTED_ROUTINGS`, and
    'None' zones of more than one point), the ``<config>`` models (:data:`SIMGRID_MODELS`),
    profiles and failures (:data:`PROFILES`), deployments, and elements outside any zone.
    What only SimGrid can decide (routes) is probed by :func:`host_facts`. Entities are not
    expanded (a platform has no use for them; this keeps entity bombs and external
    entities out). Returns the path.
    """
    path = check_input_file(path, "platform file", "an XML file from 'hcsim platform build'")
    where = f"platform file '{path}'"
    problems: list[str] = []  # the first is reported, once the whole file is known to be XML
    events = etree.iterparse(
        path, events=("end",), tag=_CHECKED, load_dtd=False, no_network=True, resolve_entities=False
    )
    root = None
    zones = 0  # zones and clusters: SimGrid 4.1 needs one to hold any host
    try:
        for _, el in events:
            if el.getparent() is None:
                root = el  # a <platform> root ends the file; its own attributes are checked below
                break
            zones += el.tag in ("zone", "AS", "cluster")
            if not problems:
                problems.extend(_element_problems(el, where))
            if el.tag != "prop":  # a <prop> is read by its parent's check (a None zone counts its children)
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
    if not zones:
        raise HcsimError(f'{where} has no zone (valid: hosts inside <zone id="..." routing="Full">, or a <cluster>)')
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

    def unreachable(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` sit in one Dijkstra zone whose routes do not join them.

        SimGrid 4.1 crashes resolving such a route (a segmentation fault, not its "No route"
        exception), so the probe answers it from the file instead.
        """
        zone = self.dijkstra.get(a)
        if zone is None or zone != self.dijkstra.get(b):
            return False
        edges, seen, todo = self.edges.get(zone, {}), {a}, [a]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return b not in seen


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
