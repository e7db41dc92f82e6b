"""``hcsim platform build|compile|import|check|draw``: topologies to SimGrid platform XML.

Also :func:`build_topology`, the system the ``--system``/``--xpus``/link flags name,
shared with ``hcsim run``, ``collective`` and ``serve``. Bandwidth and latency flags take
units (``--cxl-bandwidth 256GBps``, ``--link-latency 1us``; see :mod:`hcsim.units`); the
options are in :func:`hcsim.cli.parsers.add_platform`.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext

from hcsim.cli.parsers import SYSTEMS
from hcsim.errors import HcsimError
from hcsim.files import atomic_path
from hcsim.formats.graphml import read_graphml, write_graphml
from hcsim.formats.topology_files import import_topology
from hcsim.platform import builders, dgx
from hcsim.platform.builders import MAX_SPINES, MAX_XPUS
from hcsim.platform.compiler import compile_platform
from hcsim.platform.probe import check_platform
from hcsim.platform.topology import Topology

__all__ = ["build_topology", "main", "unused_mix", "warn"]


def build_topology(args: argparse.Namespace, warnings: list[str] | None = None, spec: object = None) -> Topology:
    """The topology named by the options of :func:`add_topology_options` (shared by build, draw and run).

    A warning (an option that had no effect) is printed on stderr, or appended to
    ``warnings`` for a caller that prints it once its command has succeeded. ``spec``: a DGX's
    links (:func:`hcsim.calibration.machine.calibrated_dgx_spec`), for ``dgx-*`` systems.
    """
    system, n = args.system, args.xpus
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
        topo = builders.paper_system(n, coherent=system == "cxl", **kwargs)
        message = unused_mix(args, topo)
        if message and warnings is not None:
            warnings.append(f"warning: {message}")
        elif message:
            warn(message)
        return topo
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
    h = args.hosts_per_leaf
    if h < 1 or n < 1 or n % h:
        raise HcsimError(f"--xpus {n} is not a positive multiple of --hosts-per-leaf {h} (valid: {h}, {2 * h}, ...)")
    pair = (link.get("bandwidth", "12.5GBps"), link.get("latency", "5us"))
    return builders.leaf_spine(n // h, args.spines, h, xpu, host_link=pair, fabric_link=pair)


_SCALES = {
    "noncoherent": (8, "a multiple of 8"),
    "cxl": (8, "a multiple of 8"),
    "server": (8, "8"),
    "ring": (2, "an integer >= 2"),
    "star": (1, "an integer >= 1"),
    "leafspine": (1, "a multiple of --hosts-per-leaf"),
    "fattree": (2, "k^3/4 for an even k: 2, 16, 54, 128, 250, 432, 686, 1024, ..."),
    "dgx-h100": (1, "1-8 or a multiple of 8"),
    "dgx-a100": (1, "1-8 or a multiple of 8"),
}


def _check_scale(args: argparse.Namespace) -> None:
    """Refuse sizes beyond :data:`hcsim.platform.builders.MAX_XPUS` up front: building them would look hung."""
    system, n = args.system, args.xpus
    smallest, shape = _SCALES[system]
    largest = dgx.MAX_GPUS if system in dgx.DGX_SYSTEMS else MAX_XPUS.get(system, MAX_FAT_TREE_XPUS)
    if not smallest <= n <= largest:
        valid = shape if smallest == largest else f"{shape} from {smallest}, at most {largest}"
        raise HcsimError(f"--xpus {n} is invalid for '{system}' (valid: {valid}; see docs/platform.md, Limits)")
    if system == "leafspine" and not 1 <= args.spines <= MAX_SPINES:
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


def _compile_and_report(topo: Topology, args: argparse.Namespace, path: str) -> None:
    """Compile ``topo`` to ``path`` (a temporary file standing for ``args.output``) and say what was written."""
    stats = compile_platform(topo, path, precision=args.precision)
    print(
        f"wrote {args.output}: {stats.hosts} hosts, {stats.routers} routers, {stats.links} links, "
        f"{stats.routes} routes in {stats.zones} zones"
    )


def _build(args: argparse.Namespace) -> int:
    # both outputs are claimed before any work, and either both appear or neither does
    with (
        atomic_path(args.output, ".xml.tmp") as xml,
        atomic_path(args.save_graphml, ".graphml") if args.save_graphml else nullcontext() as graphml,
    ):
        topo = build_topology(args)
        _compile_and_report(topo, args, xml)
        if graphml:
            write_graphml(topo, graphml)
    return 0


def _compile(args: argparse.Namespace) -> int:
    with atomic_path(args.output, ".xml.tmp") as xml:
        _compile_and_report(read_graphml(args.topology), args, xml)
    return 0


def _import(args: argparse.Namespace) -> int:
    # as for build: both outputs are claimed before any work, and either both appear or neither does
    with (
        atomic_path(args.output, ".xml.tmp") as xml,
        atomic_path(args.save_graphml, ".graphml") if args.save_graphml else nullcontext() as graphml,
    ):
        topo = import_topology(
            args.file, xpu=args.xpu, link_bandwidth=args.link_bandwidth, link_latency=args.link_latency, fmt=args.format
        )
        _compile_and_report(topo, args, xml)
        if graphml:
            write_graphml(topo, graphml)
    return 0


def _check(args: argparse.Namespace) -> int:
    s = check_platform(args.platform, args.xpus_from)
    coherent = {True: "coherent", False: "non-coherent", None: "not set (runs default to non-coherent)"}[s.coherent]
    print(
        f"{s.path}: loaded by SimGrid in {s.load_seconds:.2f} s: {s.hosts} hosts "
        f"({s.xpus} XPUs [{s.xpus_how}], {s.memories} memory nodes), {s.routers} routers, {s.links} links; "
        f"network model {s.network_model}; memory semantics {coherent}"
    )
    if s.xpus_without_memory:
        warn(f"{s.xpus_without_memory} of {s.xpus} XPUs have no 'memory' property: their memory is taken as unlimited")
    return 0


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
    with atomic_path(args.output, ".png") as tmp:
        topo = read_graphml(args.graphml) if args.graphml else build_topology(args)
        topo.draw(tmp)
    print(f"wrote {args.output}: {topo.number_of_nodes()} nodes, {topo.number_of_edges()} links")
    return 0


_ACTIONS = {"build": _build, "compile": _compile, "import": _import, "check": _check, "draw": _draw}


def main(args: argparse.Namespace) -> int:
    """Run ``hcsim platform ACTION``; the exit status."""
    return _ACTIONS[args.action](args)
