"""``hcsim platform build|compile|import|check|draw``: topologies to SimGrid platform XML.

Also :func:`build_topology`, the system the ``--system``/``--xpus``/link flags name,
shared with ``hcsim run``, ``collective`` and ``serve``. Bandwidth and latency flags take
units (``--cxl-bandwidth 256GBps``, ``--link-latency 1us``; see :mod:`hcsim.units`); the
options are in :func:`hcsim.cli.parsers.add_platform`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from contextlib import nullcontext
from typing import Any

from hcsim.cli.parsers import SYSTEMS
from hcsim.collectives import RING_KINDS, plans
from hcsim.errors import HcsimError
from hcsim.files import atomic_path, check_outputs
from hcsim.formats.astra_network import compile_astra_network
from hcsim.formats.graphml import read_graphml, write_graphml
from hcsim.formats.topology_files import import_topology
from hcsim.platform import builders, dgx
from hcsim.platform.builders import MAX_SPINES, MAX_XPUS
from hcsim.platform.compiler import compile_platform
from hcsim.platform.probe import MAX_ROUTE_CHECKS, check_platform, unrouted_pairs
from hcsim.platform.simgrid_files import HostFacts
from hcsim.platform.topology import Topology
from hcsim.workload import Workload

__all__ = ["SYSTEM_FLAGS", "build_topology", "main", "refuse_system_flags", "refuse_unrouted", "unused_mix", "warn"]


SYSTEM_FLAGS = (
    ("xpus", "--xpus"), ("mix", "--mix"), ("cxl_bandwidth", "--cxl-bandwidth"), ("cxl_latency", "--cxl-latency"),
    ("link_bandwidth", "--link-bandwidth"), ("link_latency", "--link-latency"),
    ("hosts_per_leaf", "--hosts-per-leaf"), ("spines", "--spines"),
)  # fmt: skip
"""The flags that size or shape a system built on the fly (``dest``, flag)."""


def refuse_system_flags(args: argparse.Namespace, instead: str, allow: tuple[str, ...] = ()) -> None:
    """One line for a system flag given where no system is built (``instead`` names what fixes the system).

    ``allow``: the ``dest`` of flags the caller reads itself (``--mix`` of an imported network).
    """
    for dest, flag in SYSTEM_FLAGS:
        if dest not in allow and getattr(args, dest, None) is not None:
            raise HcsimError(f"{flag} applies to a system built on the fly, not {instead} (valid: drop {flag})")


def build_topology(args: argparse.Namespace, warnings: list[str] | None = None, spec: object = None) -> Topology:
    """The topology named by the options of :func:`add_topology_options` (shared by build, draw and run).

    A warning (an option that had no effect) is printed on stderr, or appended to
    ``warnings`` for a caller that prints it once its command has succeeded. ``spec``: a DGX's
    links (:func:`hcsim.calibration.machine.calibrated_dgx_spec`), for ``dgx-*`` systems.
    """
    system, n = args.system, args.xpus
    for flag, value in (("--hosts-per-leaf", args.hosts_per_leaf), ("--spines", args.spines)):
        if value is not None and system != "leafspine":
            raise HcsimError(f"{flag} applies to 'leafspine' only, not '{system}' (valid: drop {flag})")
    if n is None:
        raise HcsimError(f"--xpus is required for '{system}' (valid: a positive integer, e.g. --xpus 64)")
    _check_scale(args)
    if system != "cxl" and (args.cxl_bandwidth or args.cxl_latency):
        raise HcsimError(f"--cxl-bandwidth/--cxl-latency apply to 'cxl' only, not '{system}'")
    if system in ("noncoherent", "cxl", "server") and (args.link_bandwidth or args.link_latency):
        raise HcsimError(
            f"--link-bandwidth/--link-latency apply to ring/star/leafspine/fattree, not '{system}' (Table 5)"
        )
    link = {}
    if args.link_bandwidth:
        link["bandwidth"] = args.link_bandwidth
    if args.link_latency:
        link["latency"] = args.link_latency
    xpu = args.mix or "H100"
    if system in dgx.DGX_SYSTEMS:
        if args.mix or args.link_bandwidth or args.link_latency:
            raise HcsimError(f"--mix/--link-bandwidth/--link-latency do not apply to '{system}' (a fixed machine)")
        return dgx.dgx_system(n, dgx.DGX_SYSTEMS[system], spec=spec)
    if system in ("noncoherent", "cxl"):
        kwargs = {"mix": xpu}
        if args.cxl_bandwidth:
            kwargs["cxl_bandwidth"] = args.cxl_bandwidth
        if args.cxl_latency:
            kwargs["cxl_latency"] = args.cxl_latency
        if getattr(args, "servers_per_rack", None) is not None:  # hcsim serve's option (small mixed systems)
            kwargs["servers_per_rack"] = args.servers_per_rack
        topo = builders.paper_system(n, coherent=system == "cxl", **kwargs)
        message = unused_mix(args, topo)
        if message and warnings is not None:
            warnings.append(f"warning: {message}")
        elif message:
            warn(message)
        return topo
    if getattr(args, "servers_per_rack", None) is not None:
        raise HcsimError(f"--servers-per-rack applies to noncoherent and cxl only, not '{system}'")
    if "+" in xpu:
        raise HcsimError(f"--mix {xpu!r}: '{system}' takes a single XPU type (valid: H100, A100, V100)")
    if system == "server":
        if n != builders.XPUS_PER_SERVER:
            raise HcsimError(f"--xpus {n} is invalid for 'server' (valid: {builders.XPUS_PER_SERVER})")
        return builders.single_server(xpu)
    if system == "ring":
        return builders.ring(n, xpu, **link)
    if system == "star":
        return builders.star(n, xpu, **link)
    if system == "fattree":
        pair = (link.get("bandwidth", "12.5GBps"), link.get("latency", "5us"))
        return builders.fat_tree(_fat_tree_arity(n), xpu, host_link=pair, fabric_link=pair)
    h = DEFAULT_HOSTS_PER_LEAF if args.hosts_per_leaf is None else args.hosts_per_leaf
    if not 1 <= h <= MAX_XPUS["leafspine"]:
        raise HcsimError(
            f"--hosts-per-leaf {h} is invalid (valid: an integer from 1 to {MAX_XPUS['leafspine']}, dividing --xpus)"
        )
    if n < 1 or n % h:
        raise HcsimError(f"--xpus {n} is not a positive multiple of --hosts-per-leaf {h} (valid: {h}, {2 * h}, ...)")
    pair = (link.get("bandwidth", "12.5GBps"), link.get("latency", "5us"))
    spines = DEFAULT_SPINES if args.spines is None else args.spines
    return builders.leaf_spine(n // h, spines, h, xpu, host_link=pair, fabric_link=pair)


DEFAULT_HOSTS_PER_LEAF = 16
"""``--hosts-per-leaf`` of ``leafspine`` when not given."""
DEFAULT_SPINES = 4
"""``--spines`` of ``leafspine`` when not given."""

_SCALES = {  # smallest, and what is valid given the largest
    "noncoherent": (8, "a multiple of 8, at most {most}"),
    "cxl": (8, "a multiple of 8, at most {most}"),
    "server": (8, "8"),
    "ring": (2, "an integer >= 2, at most {most}"),
    "star": (1, "an integer >= 1, at most {most}"),
    "leafspine": (1, "a multiple of --hosts-per-leaf, at most {most}"),
    "fattree": (2, "k^3/4 for an even k: 2, 16, 54, 128, 250, 432, 686, 1024, ..., at most {most}"),
    "dgx-h100": (1, "1-8 or a multiple of 8, at most {most}"),
    "dgx-a100": (1, "1-8 or a multiple of 8, at most {most}"),
}


def _check_scale(args: argparse.Namespace) -> None:
    """Refuse sizes beyond :data:`hcsim.platform.builders.MAX_XPUS` up front: building them would look hung."""
    system, n = args.system, args.xpus
    smallest, shape = _SCALES[system]
    largest = dgx.MAX_GPUS if system in dgx.DGX_SYSTEMS else MAX_XPUS.get(system, MAX_FAT_TREE_XPUS)
    if system in ("noncoherent", "cxl") and isinstance(n, int) and smallest <= n <= largest and n % smallest:
        raise HcsimError(
            f"--xpus {n} is invalid for '{system}' (valid: a multiple of the server size {smallest}, "
            f"from {smallest} to {largest})"
        )
    if not smallest <= n <= largest:
        valid = shape.format(most=largest)
        raise HcsimError(f"--xpus {n} is invalid for '{system}' (valid: {valid}; see docs/platform.md, Limits)")
    if system == "leafspine" and args.spines is not None and not 1 <= args.spines <= MAX_SPINES:
        raise HcsimError(f"--spines {args.spines} is invalid (valid: an integer from 1 to {MAX_SPINES})")


MAX_FAT_TREE_XPUS = 3456
"""Largest fat tree ``--system fattree`` builds (k = 24); its routes are by zone, as leaf-spine's."""


def _fat_tree_arity(xpus: int) -> int:
    """The even k of the k-ary fat tree with ``xpus`` = k^3/4 XPUs (one line naming the valid sizes otherwise)."""
    k = round((4 * xpus) ** (1 / 3))
    if k < 2 or k % 2 or k**3 // 4 != xpus:
        raise HcsimError(
            f"--xpus {xpus} is invalid for 'fattree' (valid: k^3/4 XPUs for an even k: 2, 16, 54, 128, 250, 432, "
            f"686, 1024, ... at most {MAX_FAT_TREE_XPUS})"
        )
    return k


def _compile_and_report(topo: Topology, args: argparse.Namespace, path: str, compile_with: Any = None) -> None:
    """Compile ``topo`` to ``path`` (a temporary file standing for ``args.output``) and say what was written."""
    stats = (compile_with or compile_platform)(topo, path, precision=args.precision)
    print(
        f"wrote {args.output}: {stats.hosts} hosts, {stats.routers} routers, {stats.links} links, "
        f"{stats.routes} routes in {stats.zones} zones"
    )


def _outputs(args: argparse.Namespace, **inputs: str | None) -> None:
    """``-o`` and ``--save-graphml`` refused before any work if they cannot be written, coincide or name an input."""
    check_outputs(
        files={"-o/--output": args.output, "--save-graphml": getattr(args, "save_graphml", None)}, inputs=inputs
    )


def _write_platform(topo: Topology, args: argparse.Namespace, compile_with: Any = None) -> None:
    """Both outputs written once the work is done: either both appear or neither does."""
    save = getattr(args, "save_graphml", None)
    with (
        atomic_path(args.output, ".xml.tmp") as xml,
        atomic_path(save, ".graphml") if save else nullcontext() as graphml,
    ):
        _compile_and_report(topo, args, xml, compile_with)
        if graphml:
            write_graphml(topo, graphml)


def _build(args: argparse.Namespace) -> int:
    _outputs(args)
    _write_platform(build_topology(args), args)
    return 0


def _compile(args: argparse.Namespace) -> int:
    _outputs(args, topology=args.topology)
    _write_platform(read_graphml(args.topology), args)
    return 0


def _import(args: argparse.Namespace) -> int:
    _outputs(args, file=args.file)
    topo = import_topology(
        args.file, xpu=args.xpu, link_bandwidth=args.link_bandwidth, link_latency=args.link_latency, fmt=args.format
    )
    # compact zones where the network has a rule-based form (a switch, a ring), else explicit routes
    _write_platform(topo, args, compile_astra_network)
    return 0


def _check(args: argparse.Namespace) -> int:
    s = check_platform(args.platform, args.xpus_from)
    facts = s.facts or HostFacts([], [], frozenset())
    coherent = {True: "coherent", False: "non-coherent", None: "not set (runs default to non-coherent)"}[s.coherent]
    grouped = ", the nodes of a <cluster> as one" if facts.route_groups else ""
    which = "a sample of" if facts.route_sampled else "all"
    print(
        f"{s.path}: loaded by SimGrid in {s.load_seconds:.2f} s: {s.hosts} hosts "
        f"({s.xpus} XPUs [{s.xpus_how}], {s.memories} memory nodes), {s.routers} routers, {s.links} links; "
        f"network model {s.network_model}; memory semantics {coherent}; "
        f"routes resolved: {which} {facts.route_pairs} XPU pairs{grouped}, {len(facts.unrouted)} without a route"
    )
    if s.xpus_without_memory:
        warn(f"{s.xpus_without_memory} of {s.xpus} XPUs have no 'memory' property: their memory is taken as unlimited")
    if facts.unrouted:
        a, b = facts.unrouted[0]
        warn(
            f"SimGrid has no route for {len(facts.unrouted)} of {facts.route_pairs} XPU pairs (first: '{a}' to "
            f"'{b}'): 'hcsim run' refuses a workload in which two of them talk"
        )
    if facts.route_sampled:
        warn(f"{s.xpus} XPUs: the routes of ring neighbours and of the first XPU were resolved, not every pair")
    return 0


def _talking(data: dict) -> Iterable[tuple[str, str]]:
    """The (sender, receiver) pairs of one communication vertex.

    Exact for the library's fast forms, whose flows do not depend on the topology (the
    ring of the ring kinds, a p2p, the chains, the direct all-to-all: :func:`plans.plan`);
    for any other algorithm, every ordered pair of its scope (a superset of its flows).
    """
    kind, name, scope = data.get("kind"), data.get("algorithm"), list(data.get("scope") or ())
    exact = (
        (kind in RING_KINDS and name == "ring")
        or kind == "p2p"
        or (kind in ("broadcast", "reduce") and name == "chain")
        or (kind == "alltoall" and name == "direct")
    )
    if exact and len(scope) > 1:
        fp = plans.plan(kind, name, scope, float(data.get("bytes") or 1), data.get("group"), compact=True)
        return [(a, b) for a, b, size in zip(fp.src, fp.dst, fp.size, strict=True) if size > 0]
    return [(a, b) for a in scope for b in scope if a != b]


MAX_RUN_ROUTE_CHECKS = 5 * MAX_ROUTE_CHECKS
"""Pairs a run resolves itself when ``check`` only sampled (about 6 s at most); past it, none (docs/platform.md)."""


def refuse_unrouted(facts: HostFacts, work: Workload, path: str) -> None:
    """Refuse, in one line, a run whose workload sends between two hosts SimGrid has no route for.

    The pairs are each communication's flows (:func:`_talking`), both ways, and each XPU
    with its memory hosts. SimGrid 4.1 would abort the run at the first such transfer ("no
    connecting path"); a Full zone missing routes between hosts that never talk runs.
    Where the probe resolved only a sample (a large platform), the pairs the workload
    uses are resolved now, up to :data:`MAX_RUN_ROUTE_CHECKS`.
    """
    if not facts.unrouted and not facts.route_sampled:
        return
    key = facts.route_groups.get
    talking: dict[tuple[str, str], str] = {}  # pair of route groups -> the vertex that sends between them
    used = {data.get("location") for _, data in work.nodes(data=True)}
    used.update(x for _, data in work.nodes(data=True) for x in data.get("scope") or ())
    memory: dict[str, list[tuple[str, str]]] = {}  # XPU -> its pairs with a memory host (not in the workload)
    for a, b in facts.unrouted:
        if (a in used) != (b in used):
            memory.setdefault(a if a in used else b, []).append((a, b))
    for name, data in work.nodes(data=True):
        if data.get("type") == "comm":
            for a, b in _talking(data):
                if a != b:  # and the way back, which SimGrid's cross-traffic looks up (a Floyd zone aborts on it)
                    talking.setdefault((key(a, a), key(b, b)), name)
                    talking.setdefault((key(b, b), key(a, a)), name)
        else:
            for a, b in memory.get(data.get("location"), ()):
                talking.setdefault((a, b), name)
    missing = [pair for pair in talking if facts.unrouted_between(*pair)]
    if not missing and facts.route_sampled and len(talking) <= MAX_RUN_ROUTE_CHECKS:
        missing = unrouted_pairs(path, sorted(talking))
    if missing:
        a, b = missing[0]
        raise HcsimError(
            f"platform file '{path}': SimGrid has no route from host '{a}' to host '{b}', and the workload's "
            f"vertex '{talking[missing[0]]}' sends between them (valid: a <route> between them, or a workload that "
            "keeps them apart; 'hcsim platform check' counts the pairs without a route)"
        )


def warn(message: str) -> None:
    """One line on stderr for a choice the user did not spell out (not an error: the command goes on)."""
    print(f"hcsim: warning: {message}", file=sys.stderr)


def unused_mix(args: argparse.Namespace, topo: Topology) -> str | None:
    """A warning when ``--mix`` names XPU types the built system does not use (types alternate by rack)."""
    if not args.mix or "+" not in args.mix:
        return None
    asked = [m.strip() for m in args.mix.split("+")]
    used = {d for _, d in topo.nodes(data="device") if d}
    unused = [m for m in asked if m not in used]
    if not unused:
        return None
    racks = len({topo.nodes[x].get("zone", "").split("/")[0] for x in topo.xpus()})
    return (
        f"--mix {args.mix}: {'/'.join(unused)} unused: {args.system} with {args.xpus} XPUs has {racks} "
        f"rack{'s' if racks != 1 else ''} and XPU types alternate by rack (128 XPUs each)"
    )


def _draw(args: argparse.Namespace) -> int:
    if args.graphml and args.system:
        raise HcsimError("give either a system to build or --graphml FILE, not both")
    if not args.graphml and not args.system:
        raise HcsimError(f"nothing to draw (valid: a system, one of {', '.join(SYSTEMS)}, or --graphml FILE)")
    if args.graphml:
        refuse_system_flags(args, "--graphml FILE")
    _outputs(args, **{"--graphml": args.graphml})
    topo = read_graphml(args.graphml) if args.graphml else build_topology(args)
    with atomic_path(args.output, ".png") as tmp:
        topo.draw(tmp)
    print(f"wrote {args.output}: {topo.number_of_nodes()} nodes, {topo.number_of_edges()} links")
    return 0


_ACTIONS = {"build": _build, "compile": _compile, "import": _import, "check": _check, "draw": _draw}


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim platform ACTION``; the exit status."""
    return _ACTIONS[args.action](args)
