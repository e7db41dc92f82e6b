"""Platform files SimGrid 4.1 would abort or crash on, refused in one line before SimGrid reads them.

SimGrid 4.1 loads a host of speed ``-1f`` or a ``0Bps`` link without a word and then
stops the run with "The Impossible Did Happen"; a bad version, a broken file, a model it
does not have, a zone it cannot route, a profile or a deployment gets a banner and a core
dump. :func:`precheck_platform` reads the file with lxml (entities never expanded) and
refuses each of them, naming the element and what would be valid. What only SimGrid can
decide (routes) is probed by :mod:`hcsim.platform.probe`.

Invariant: a file this module passes has a <platform> root of version 4.x, a zone, and no
element or value listed in docs/platform.md, "SimGrid never crashes under hcsim".
"""

from __future__ import annotations

import math
import os
import re

from lxml import etree

from hcsim.errors import HcsimError
from hcsim.files import check_input_file
from hcsim.platform.topology import MAX_LATENCY, MIN_BANDWIDTH
from hcsim.units import parse_bandwidth, parse_flops, parse_time

__all__ = ["PROFILES", "ROUTINGS", "SIMGRID_MODELS", "UNSUPPORTED_ROUTINGS", "VERSIONS", "precheck_platform"]

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
