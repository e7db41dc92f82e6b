"""``hcsim platform build|compile|import|check|draw``: topologies to SimGrid platform XML.

Bandwidth and latency flags take units (``--cxl-bandwidth 256GBps``, ``--link-latency
1us``; see :mod:`hcsim.units`). Only the standard library at the top: the ``hcsim``
command loads this module for ``--help`` (see :mod:`hcsim.cli`).
"""

from __future__ import annotations

import argparse

from hcsim.errors import HcsimError

__all__ = ["SYSTEMS", "add_topology_options", "build_topology", "register"]

SYSTEMS = ("noncoherent", "cxl", "server", "ring", "star", "leafspine")
"""The systems ``hcsim platform build`` and ``hcsim run --system`` can build."""


def add_topology_options(p: argparse.ArgumentParser, required: bool = True) -> None:
    """The options :func:`build_topology` reads: a system name and its sizes and links."""
    p.add_argument("system", choices=SYSTEMS, nargs=None if required else "?", help="which topology to build")
    p.add_argument(
        "--xpus",
        type=int,
        help="number of XPUs (paper systems: a multiple of 8 up to 4096; ring <= 256, star <= 1024, leafspine <= 4096)",
    )
    p.add_argument("--mix", help="XPU type(s): 'H100', 'H100+A100', 'H100+V100' (paper systems: one type per ToR)")
    p.add_argument("--cxl-bandwidth", help="CXL link bandwidth for 'cxl' (default 128GBps)")
    p.add_argument("--cxl-latency", help="CXL link latency for 'cxl' (default 200ns)")
    p.add_argument("--link-bandwidth", help="link bandwidth for ring/star/leafspine (e.g. 128GBps)")
    p.add_argument("--link-latency", help="link latency for ring/star/leafspine (e.g. 1us)")
    p.add_argument("--hosts-per-leaf", type=int, default=16, help="leafspine: XPUs per leaf (default 16)")
    p.add_argument("--spines", type=int, default=4, help="leafspine: spine switches (default 4)")


def build_topology(args: argparse.Namespace, warnings: list[str] | None = None):  # noqa: ANN201 - a Topology
    """The topology named by the options of :func:`add_topology_options` (shared by build, draw and run).

    A warning (an option that had no effect) is printed on stderr, or appended to
    ``warnings`` for a caller that prints it once its command has succeeded.
    """
    from hcsim.platform import builders

    system, n = args.system, args.xpus
    if n is None:
        raise HcsimError(f"--xpus is required for '{system}' (valid: a positive integer, e.g. --xpus 64)")
    _check_scale(args)
    if system != "cxl" and (args.cxl_bandwidth or args.cxl_latency):
        raise HcsimError(f"--cxl-bandwidth/--cxl-latency apply to 'cxl' only, not '{system}'")
    if system in ("noncoherent", "cxl", "server") and (args.link_bandwidth or args.link_latency):
        raise HcsimError(f"--link-bandwidth/--link-latency apply to ring/star/leafspine, not '{system}' (Table 5)")
    link = {}
    if args.link_bandwidth:
        link["bandwidth"] = args.link_bandwidth
    if args.link_latency:
        link["latency"] = args.link_latency
    xpu = args.mix or "H100"
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
}


def _check_scale(args: argparse.Namespace) -> None:
    """Refuse sizes beyond :data:`hcsim.platform.builders.MAX_XPUS` up front: building them would look hung."""
    from hcsim.platform.builders import MAX_SPINES, MAX_XPUS

    system, n = args.system, args.xpus
    smallest, shape = _SCALES[system]
    largest = MAX_XPUS[system]
    if not smallest <= n <= largest:
        valid = shape if smallest == largest else f"{shape} from {smallest}, at most {largest}"
        raise HcsimError(f"--xpus {n} is invalid for '{system}' (valid: {valid}; see docs/platform.md, Limits)")
    if system == "leafspine" and not 1 <= args.spines <= MAX_SPINES:
        raise HcsimError(f"--spines {args.spines} is invalid (valid: an integer from 1 to {MAX_SPINES})")


def _compile_and_report(topo, args: argparse.Namespace, path: str) -> None:  # noqa: ANN001
    """Compile ``topo`` to ``path`` (a temporary file standing for ``args.output``) and say what was written."""
    from hcsim.platform.compiler import compile_platform

    stats = compile_platform(topo, path, precision=args.precision)
    print(
        f"wrote {args.output}: {stats.hosts} hosts, {stats.routers} routers, {stats.links} links, "
        f"{stats.routes} routes in {stats.zones} zones"
    )


def _cmd_build(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from hcsim.files import atomic_path
    from hcsim.formats.graphml import write_graphml

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


def _cmd_compile(args: argparse.Namespace) -> int:
    from hcsim.files import atomic_path
    from hcsim.formats.graphml import read_graphml

    with atomic_path(args.output, ".xml.tmp") as xml:
        _compile_and_report(read_graphml(args.topology), args, xml)
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from hcsim.files import atomic_path
    from hcsim.formats.graphml import write_graphml
    from hcsim.formats.topology_files import import_topology

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


def _cmd_check(args: argparse.Namespace) -> int:
    from hcsim.platform.probe import check_platform

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
    import sys

    print(f"hcsim: warning: {message}", file=sys.stderr)


def unused_mix(args: argparse.Namespace, topo) -> str | None:  # noqa: ANN001 - a Topology
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


def _cmd_draw(args: argparse.Namespace) -> int:
    from hcsim.files import atomic_path
    from hcsim.formats.graphml import read_graphml

    if args.graphml and args.system:
        raise HcsimError("give either a system to build or --graphml FILE, not both")
    if not args.graphml and not args.system:
        raise HcsimError(f"nothing to draw (valid: a system, one of {', '.join(SYSTEMS)}, or --graphml FILE)")
    with atomic_path(args.output, ".png") as tmp:
        topo = read_graphml(args.graphml) if args.graphml else build_topology(args)
        topo.draw(tmp)
    print(f"wrote {args.output}: {topo.number_of_nodes()} nodes, {topo.number_of_edges()} links")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``hcsim platform`` and its actions build, compile, import, check and draw."""
    plat = sub.add_parser("platform", help="build, check and draw platforms")
    psub = plat.add_subparsers(dest="action", required=True, parser_class=type(plat))

    b = psub.add_parser("build", help="build a topology and compile it to SimGrid platform XML")
    add_topology_options(b)
    b.add_argument("--precision", choices=("fp32", "fp16"), default="fp32", help="XPU speed = FLOPS at this precision")
    b.add_argument("--save-graphml", metavar="FILE", help="also save the topology as GraphML (to edit, then compile)")
    b.add_argument("-o", "--output", required=True, help="platform XML file to write")
    b.set_defaults(func=_cmd_build)

    k = psub.add_parser("compile", help="compile a GraphML topology (e.g. edited in yEd) to SimGrid platform XML")
    k.add_argument("topology", help="GraphML file (see hcsim.formats.graphml.write_graphml)")
    k.add_argument("--precision", choices=("fp32", "fp16"), default="fp32", help="XPU speed = FLOPS at this precision")
    k.add_argument("-o", "--output", required=True, help="platform XML file to write")
    k.set_defaults(func=_cmd_compile)

    i = psub.add_parser("import", help="import an ASTRA-sim network YAML or an InfraGraph file to SimGrid platform XML")
    i.add_argument("file", help="ASTRA-sim network YAML or InfraGraph YAML/JSON (recognised by content)")
    i.add_argument("--format", choices=("astra-sim", "infragraph"), help="force the format instead of detecting it")
    i.add_argument("--xpu", default="H100", help="XPU preset of every NPU / xpu component (default H100)")
    i.add_argument("--link-bandwidth", help="InfraGraph: bandwidth of links that declare none (e.g. 100Gbps)")
    i.add_argument("--link-latency", help="InfraGraph: latency of links that declare none (e.g. 1us)")
    i.add_argument("--precision", choices=("fp32", "fp16"), default="fp32", help="XPU speed = FLOPS at this precision")
    i.add_argument("--save-graphml", metavar="FILE", help="also save the topology as GraphML")
    i.add_argument("-o", "--output", required=True, help="platform XML file to write")
    i.set_defaults(func=_cmd_import)

    c = psub.add_parser("check", help="load a platform XML in SimGrid and print what it holds")
    c.add_argument("platform", help="platform XML file")
    c.add_argument(
        "--xpus-from",
        choices=("auto", "property", "all-hosts"),  # hcsim.platform.simgrid_files.XPUS_FROM
        default="auto",
        help="which hosts count as XPUs: those with kind=xpu ('property'), every host ('all-hosts'), or "
        "'property' if any host has it and every host otherwise ('auto', the default)",
    )
    c.set_defaults(func=_cmd_check)

    d = psub.add_parser("draw", help="draw a topology (layered) to PNG")
    add_topology_options(d, required=False)
    d.add_argument("--graphml", help="draw a GraphML topology instead of building one")
    d.add_argument("-o", "--output", required=True, help="PNG file to write")
    d.set_defaults(func=_cmd_draw)
