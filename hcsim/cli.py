"""The ``hcsim`` command.

Every bad input ends the same way: one line ``hcsim: error: ...`` naming the item and
what is valid, exit status 2, no traceback, no partial output file.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence

import numpy as np

from hcsim.errors import HcsimError

SYSTEMS = ("noncoherent", "cxl", "server", "ring", "star", "leafspine")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (exit 2) like every other bad input."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"hcsim: error: {message} (see '{self.prog} --help')\n")


def _add_topology_options(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("system", choices=SYSTEMS, nargs=None if required else "?", help="which topology to build")
    p.add_argument("--xpus", type=int, help="number of XPUs (paper systems: a multiple of 8, from 8 to 4096)")
    p.add_argument("--mix", help="XPU type(s): 'H100', 'H100+A100', 'H100+V100' (paper systems: one type per ToR)")
    p.add_argument("--cxl-bandwidth", help="CXL link bandwidth for 'cxl' (default 128GBps)")
    p.add_argument("--cxl-latency", help="CXL link latency for 'cxl' (default 200ns)")
    p.add_argument("--link-bandwidth", help="link bandwidth for ring/star/leafspine (e.g. 128GBps)")
    p.add_argument("--link-latency", help="link latency for ring/star/leafspine (e.g. 1us)")
    p.add_argument("--hosts-per-leaf", type=int, default=16, help="leafspine: XPUs per leaf (default 16)")
    p.add_argument("--spines", type=int, default=4, help="leafspine: spine switches (default 4)")


def build_topology(args: argparse.Namespace):  # noqa: ANN201 - returns a Topology
    """The topology named by CLI options (shared by build and draw)."""
    from hcsim.platform import builders

    system, n = args.system, args.xpus
    if n is None:
        raise HcsimError(f"--xpus is required for '{system}' (valid: a positive integer, e.g. --xpus 64)")
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
        return builders.paper_system(n, coherent=system == "cxl", **kwargs)
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


def _compile_and_report(topo, args: argparse.Namespace) -> int:  # noqa: ANN001
    from hcsim.platform.compiler import compile_platform

    stats = compile_platform(topo, args.output, precision=args.precision)
    print(
        f"wrote {args.output}: {stats.hosts} hosts, {stats.routers} routers, {stats.links} links, "
        f"{stats.routes} routes in {stats.zones} zones"
    )
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from hcsim.files import check_output_path

    check_output_path(args.output)
    if args.save_graphml:
        check_output_path(args.save_graphml)
    topo = build_topology(args)
    code = _compile_and_report(topo, args)
    if args.save_graphml:
        topo.write_graphml(args.save_graphml)
    return code


def _cmd_compile(args: argparse.Namespace) -> int:
    from hcsim.files import check_output_path
    from hcsim.platform.topology import Topology

    check_output_path(args.output)
    return _compile_and_report(Topology.read_graphml(args.topology), args)


def _cmd_check(args: argparse.Namespace) -> int:
    from hcsim.platform.probe import check_platform

    s = check_platform(args.platform)
    print(
        f"{s.path}: loaded by SimGrid in {s.load_seconds:.2f} s: {s.hosts} hosts "
        f"({s.xpus} XPUs, {s.memories} memory nodes), {s.routers} routers, {s.links} links"
    )
    return 0


def _cmd_draw(args: argparse.Namespace) -> int:
    from hcsim.files import check_output_path, temporary_beside
    from hcsim.platform.topology import Topology

    check_output_path(args.output)
    if args.graphml:
        if args.system:
            raise HcsimError("give either a system to build or --graphml FILE, not both")
        topo = Topology.read_graphml(args.graphml)
    elif args.system:
        topo = build_topology(args)
    else:
        raise HcsimError(f"nothing to draw (valid: a system, one of {', '.join(SYSTEMS)}, or --graphml FILE)")
    tmp = temporary_beside(args.output, ".png")
    try:
        topo.draw(tmp)
        os.replace(tmp, args.output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    print(f"wrote {args.output}: {topo.number_of_nodes()} nodes, {topo.number_of_edges()} links")
    return 0


WORKLOADS = ("allreduce", "coherent-allreduce", "fig3", "llama2-13b")


def _workload(args: argparse.Namespace, xpus: list[str], group: int | None = None):  # noqa: ANN202 - a Workload
    from hcsim.units import parse_bytes
    from hcsim.workload import Workload, allreduce_benchmark, fig3_example

    name = args.workload
    if name in WORKLOADS:
        size = parse_bytes(args.bytes, "--bytes")
        if not size >= 0 or size == float("inf"):
            raise HcsimError(f"--bytes {args.bytes!r} is invalid (valid: a finite size >= 0, e.g. 1GiB)")
        if name == "fig3":
            return fig3_example(xpus[:2])
        if name == "llama2-13b":
            from hcsim.workload.llama2 import llama2_13b

            return llama2_13b(xpus, group=group)
        return allreduce_benchmark(xpus, size, "coherent_ring" if name == "coherent-allreduce" else "ring", group)
    if not name.endswith(".json") and not os.path.exists(name):
        raise HcsimError(f"workload {name!r} is unknown (valid: a JSON file or one of {', '.join(WORKLOADS)})")
    return Workload.from_json(name)


def _cmd_run(args: argparse.Namespace) -> int:
    import json
    import tempfile

    from hcsim.engine import report, simulate
    from hcsim.files import check_output_path
    from hcsim.platform.compiler import compile_platform

    if isinstance(args.iterations, int) and args.iterations < 1:
        raise HcsimError(f"--iterations {args.iterations} is invalid (valid: an integer >= 1)")
    for out in (args.trace, args.csv, args.links):
        if out:
            check_output_path(out)
    with tempfile.TemporaryDirectory(prefix="hcsim-run-") as tmp:
        if args.platform:
            if args.system:
                raise HcsimError("give either --platform FILE.xml or --system, not both")
            platform = args.platform
            coherent = bool(args.coherent)
            from hcsim.engine.simulator import platform_xpus

            xpus = platform_xpus(platform)
        else:
            if not args.system:
                raise HcsimError("a platform is required (valid: --platform FILE.xml or --system cxl|noncoherent)")
            topo = build_topology(args)
            group = None
            if args.fast:
                from hcsim.platform.folding import fold_data_parallel

                if args.workload not in ("llama2-13b", "allreduce", "coherent-allreduce"):
                    raise HcsimError(
                        f"--fast applies to data-parallel workloads, not {args.workload!r} "
                        "(valid: llama2-13b, allreduce, coherent-allreduce)"
                    )
                folded = fold_data_parallel(topo)
                topo, group = folded.topology, folded.group
            platform = os.path.join(tmp, "platform.xml")
            compile_platform(topo, platform)
            coherent = args.system == "cxl" if args.coherent is None else args.coherent
            xpus = topo.xpus()
        if args.fast and args.platform:
            raise HcsimError("--fast needs --system (it folds the system before compiling it), not --platform")
        workload = _workload(args, xpus, group if not args.platform else None)
        result = simulate(platform, workload, args.iterations, coherent=coherent, memoize=args.fast)
    summary = report.summarize(result)
    if args.trace:
        report.write_chrome_trace(result, args.trace)
    if args.csv:
        report.write_csv(result, args.csv)
    if args.links:
        report.write_links_csv(result, args.links)
    print(json.dumps(summary, indent=1, sort_keys=True) if args.json else report.format_summary(summary))
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from hcsim.sweep import load_spec, run_sweep

    spec = load_spec(args.spec)
    report = run_sweep(spec, out=args.out, executor=args.executor, jobs=args.jobs, scheduler=args.scheduler)
    print(
        f"{report.out}: {report.total} points, {report.skipped} already done, {report.ok} ok, "
        f"{report.failed} failed, in {report.seconds:.1f} s"
    )
    return 0 if report.failed == 0 else 1


def _cmd_queue(args: argparse.Namespace) -> int:
    import math
    import tempfile

    from hcsim.analysis import queueing as q
    from hcsim.frontends import batching as fb
    from hcsim.platform import builders, compile_platform

    if args.gpu:
        fit = q.fit_linear(q.V100_RESNET50 if args.gpu == "v100" else q.P4_RESNET50)
        alpha, tau0, beta, c0 = fit.alpha, fit.tau0, fit.beta, fit.c0
    else:
        if args.alpha is None or args.tau0 is None:
            raise HcsimError("give --gpu v100|p4, or both --alpha and --tau0 (seconds)")
        alpha, tau0 = args.alpha, args.tau0
        beta = args.beta if args.beta is not None else math.nan
        c0 = args.c0 if args.c0 is not None else math.nan
    m = math.inf if args.max_batch is None else args.max_batch
    if args.servers < 1:
        raise HcsimError(f"--servers {args.servers} is invalid (valid: an integer >= 1)")
    if args.rho is not None:
        if not 0 < args.rho:
            raise HcsimError(f"--rho {args.rho} is invalid (valid: 0 < rho < 1)")
        lam_server = args.rho / alpha
    else:
        lam_server = args.rate / args.servers
    if lam_server * alpha >= 1 or lam_server >= q.capacity(alpha, tau0, m):
        raise HcsimError(
            f"unstable: each server gets {lam_server:.6g} jobs/s but can serve at most "
            f"{q.capacity(alpha, tau0, m):.6g} (valid: rho = lambda alpha < 1 and lambda < M / (alpha M + tau0))"
        )
    topo = builders.star(args.servers, "V100")
    with tempfile.TemporaryDirectory() as tmp:
        platform = os.path.join(tmp, "p.xml")
        compile_platform(topo, platform)
        arrivals = fb.arrival_times("poisson", lam_server * args.servers, args.jobs, args.seed)
        r = fb.serve(
            platform,
            topo.xpus(),
            arrivals,
            fb.linear_time(alpha, tau0),
            max_batch=m,
            dispatch=args.dispatch,
            seed=args.seed,
        )
    mean, half = fb.confidence_interval(r.latency)
    p99, p99_half = fb.percentile_interval(r.latency, 99)
    if args.out:
        fb.write_outputs(r, args.out, beta, c0)
    exact = q.exact_finite(lam_server, alpha, tau0, m) if args.dispatch == "random" or args.servers == 1 else None
    print(f"simulated E[W]   {mean * 1e3:.6g} ms +- {half * 1e3:.3g} ms (95% CI, batch means, {args.jobs} jobs)")
    print(f"p50              {np.percentile(r.latency, 50) * 1e3:.6g} ms")
    print(f"p99              {p99 * 1e3:.6g} ms +- {p99_half * 1e3:.3g} ms (95% CI, batch means)")
    if exact is not None:
        print(f"exact E[W]       {exact.mean_latency * 1e3:.6g} ms (truncated chain, {exact.states} states)")
    if math.isinf(m):
        print(f"phi (bound)      {q.phi(lam_server, alpha, tau0) * 1e3:.6g} ms")
    print(f"utilization      {r.utilization():.4f}")
    print(f"mean batch       {r.batch_size.mean():.4g}")
    if not math.isnan(beta):
        eta = r.batch_size.sum() / (beta * r.batch_size + c0).sum()
        print(f"eta              {eta:.6g} jobs/J ({r.energy_per_job(beta, c0):.6g} J per job)")
    return 0


def _cmd_cluster(args: argparse.Namespace) -> int:
    from hcsim.frontends.cluster import simulate_cluster
    from hcsim.frontends.cluster.outputs import summarize, write_outputs
    from hcsim.frontends.cluster.traces import read_trace
    from hcsim.platform import builders

    if args.out and os.path.exists(args.out) and not os.path.isdir(args.out):
        raise HcsimError(f"--out '{args.out}' is a file (valid: a directory to write into)")
    if not os.path.isfile(args.trace):
        raise HcsimError(f"--trace '{args.trace}' does not exist (valid: a Helios CSV, Philly JSON or SWF file)")
    trace = read_trace(args.trace, args.format, sort=args.sort)
    if not trace.jobs:
        raise HcsimError(f"--trace '{args.trace}' has no jobs to schedule ({len(trace.skipped)} rows skipped)")
    xpus = args.xpus
    if xpus is None:  # the smallest paper system that holds the trace's largest job
        xpus = max(8, -(-max(j.gpus for j in trace.jobs) // 8) * 8)
    if xpus < 8 or xpus % 8:
        raise HcsimError(f"--xpus {xpus} is invalid (valid: a positive multiple of 8, the server size)")
    topo = builders.cxl_system(xpus) if args.system == "cxl" else builders.noncoherent_system(xpus)
    partitions = None
    if args.partitions:
        partitions = {}
        for item in args.partitions.split(","):
            name, _, count = item.partition("=")
            if not count.strip().isdigit():
                raise HcsimError(f"--partitions item {item!r} is invalid (valid: name=nodes, e.g. train=96,dev=32)")
            partitions[name.strip()] = int(count)
    options: dict[str, object] = {}
    if args.slice is not None:
        options["slice"] = args.slice
    if args.quanta is not None:
        try:
            options["quanta"] = tuple(float(q) for q in args.quanta.split(","))
        except ValueError:
            raise HcsimError(f"--quanta {args.quanta!r} is invalid (valid: seconds, e.g. 3250,7200,18000)") from None
    result = simulate_cluster(
        topo,
        trace,
        policy_name=args.policy,
        placement_name=args.placement,
        migration=args.migration,
        overhead=args.overhead,
        partitions=partitions,
        policy_options=options,
    )
    summary = write_outputs(result, trace.jobs, args.out, args.snapshot) if args.out else summarize(result)
    print(f"{len(trace.jobs)} jobs ({len(trace.skipped)} rows skipped) on {xpus} GPUs, {args.system} system")
    migration = "on" if args.migration else "off"
    print(f"policy {summary['policy']}, placement {summary['placement']}, migration {migration}")
    print(f"completed {summary['completed']}, rejected {summary['rejected']}")
    for r in summary["rejections"][:3]:
        print(f"  rejected job {r['job_id']}: {r['reason']}")
    print(f"JCT mean {summary['jct_mean']:.6g} s, p50 {summary['jct_p50']:.6g} s, p99 {summary['jct_p99']:.6g} s")
    print(f"wait mean {summary['wait_mean']:.6g} s, makespan {summary['makespan']:.6g} s")
    print(f"GPU utilization {summary['utilization']:.4f}, GPUs per used node {summary['gpus_per_used_node']:.3f}")
    print(f"preemptions {summary['preemptions']}, migrations {summary['migrations']}")
    jobs_per_s = len(trace.jobs) / result.wall_seconds if result.wall_seconds > 0 else math.inf
    print(f"simulated in {result.wall_seconds:.2f} s ({jobs_per_s:.0f} jobs/s)")
    if args.out:
        print(f"wrote {args.out}/jobs.csv, summary.json, series.csv/png, trace.json, gpus_*.png")
    return 0


def _cmd_queues(args: argparse.Namespace) -> int:
    from hcsim.frontends.queue_selection import run_from_arguments

    return run_from_arguments(args)


def _cmd_demo(args: argparse.Namespace) -> int:
    from hcsim.demo import run_demo

    return run_demo(args.xpus, args.out)


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hcsim", description="Simulate heterogeneous, cache-coherent AI systems on SimGrid.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    plat = sub.add_parser("platform", help="build, check and draw platforms")
    psub = plat.add_subparsers(dest="action", required=True, parser_class=_Parser)

    b = psub.add_parser("build", help="build a topology and compile it to SimGrid platform XML")
    _add_topology_options(b)
    b.add_argument("--precision", choices=("fp32", "fp16"), default="fp32", help="XPU speed = FLOPS at this precision")
    b.add_argument("--save-graphml", metavar="FILE", help="also save the topology as GraphML (to edit, then compile)")
    b.add_argument("-o", "--output", required=True, help="platform XML file to write")
    b.set_defaults(func=_cmd_build)

    k = psub.add_parser("compile", help="compile a GraphML topology (e.g. edited in yEd) to SimGrid platform XML")
    k.add_argument("topology", help="GraphML file (see Topology.write_graphml)")
    k.add_argument("--precision", choices=("fp32", "fp16"), default="fp32", help="XPU speed = FLOPS at this precision")
    k.add_argument("-o", "--output", required=True, help="platform XML file to write")
    k.set_defaults(func=_cmd_compile)

    c = psub.add_parser("check", help="load a platform XML in SimGrid and print what it holds")
    c.add_argument("platform", help="platform XML file")
    c.set_defaults(func=_cmd_check)

    d = psub.add_parser("draw", help="draw a topology (layered) to PNG")
    _add_topology_options(d, required=False)
    d.add_argument("--graphml", help="draw a GraphML topology instead of building one")
    d.add_argument("-o", "--output", required=True, help="PNG file to write")
    d.set_defaults(func=_cmd_draw)

    r = sub.add_parser("run", help="run a workload graph on a platform and print its metrics")
    r.add_argument("--platform", help="platform XML (from 'hcsim platform build')")
    r.add_argument("--system", choices=SYSTEMS, help="or build this system on the fly")
    r.add_argument("--xpus", type=int, help="with --system: number of XPUs")
    r.add_argument("--mix", help="with --system: XPU type(s), e.g. H100+A100")
    r.add_argument("--cxl-bandwidth", help=argparse.SUPPRESS)
    r.add_argument("--cxl-latency", help=argparse.SUPPRESS)
    r.add_argument("--link-bandwidth", help=argparse.SUPPRESS)
    r.add_argument("--link-latency", help=argparse.SUPPRESS)
    r.add_argument("--hosts-per-leaf", type=int, default=16, help=argparse.SUPPRESS)
    r.add_argument("--spines", type=int, default=4, help=argparse.SUPPRESS)
    r.add_argument(
        "--workload", required=True, help=f"workload JSON file (Workload.to_json) or one of {', '.join(WORKLOADS)}"
    )
    r.add_argument("--bytes", default="1GiB", help="size for the allreduce workloads (default 1GiB)")
    r.add_argument("--iterations", type=int, required=True, help="iterations to run (>= 1)")
    coh = r.add_mutually_exclusive_group()
    coh.add_argument("--coherent", dest="coherent", action="store_true", default=None, help="coherent memory")
    coh.add_argument("--no-coherent", dest="coherent", action="store_false", help="non-coherent memory")
    r.add_argument(
        "--fast",
        action="store_true",
        help="fold the system to representative servers and memoize repeated ring steps (within 1%% of exact)",
    )
    r.add_argument("--trace", help="write a Chrome/Perfetto trace (JSON)")
    r.add_argument("--csv", help="write the per-vertex trace as CSV")
    r.add_argument("--links", help="write bytes and mean/peak utilization of every used link as CSV")
    r.add_argument("--json", action="store_true", help="print the metrics as JSON")
    r.set_defaults(func=_cmd_run)

    sw = sub.add_parser("sweep", help="run a parameter sweep (resumable; local processes or Dask)")
    sw.add_argument("spec", help="sweep spec (YAML): function, grid, fixed, points, timeout, out")
    sw.add_argument("--executor", choices=("local", "dask"), default="local", help="where points run")
    sw.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786 (default: a local cluster)")
    sw.add_argument("-j", "--jobs", type=int, help="parallel points / local Dask workers (default: CPU count)")
    sw.add_argument("--out", help="results file, JSON lines (default: the spec's 'out')")
    sw.set_defaults(func=_cmd_sweep)

    qu = sub.add_parser("queue", help="dynamic-batching inference server: simulated vs exact latency")
    gpu = qu.add_mutually_exclusive_group(required=True)
    gpu.add_argument("--gpu", choices=("v100", "p4"), help="ResNet-50 timings fitted from NVIDIA's table")
    gpu.add_argument("--alpha", type=float, help="seconds per job in a batch (with --tau0)")
    qu.add_argument("--tau0", type=float, help="fixed seconds per batch (with --alpha)")
    load = qu.add_mutually_exclusive_group(required=True)
    load.add_argument("--rho", type=float, help="load per server, lambda * alpha")
    load.add_argument("--rate", type=float, help="total arrival rate, jobs/s")
    qu.add_argument("--max-batch", type=int, help="largest batch (default: unlimited)")
    qu.add_argument("--jobs", type=int, default=1_000_000, help="jobs to simulate (default 1e6)")
    qu.add_argument("--seed", type=int, default=0)
    qu.add_argument("--servers", type=int, default=1, help="servers behind the dispatcher")
    qu.add_argument("--dispatch", choices=("random", "round_robin", "jsq"), default="random")
    qu.add_argument("--beta", type=float, help="with --alpha: energy per job in a batch (J), for eta")
    qu.add_argument("--c0", type=float, help="with --alpha: fixed energy per batch (J), for eta")
    qu.add_argument("--out", help="directory for jobs.csv, batches.csv, batch_sizes.csv/.png, summary.json")
    qu.set_defaults(func=_cmd_queue)

    cl = sub.add_parser("cluster", help="multi-tenant GPU cluster: schedule a job trace on a platform (AnalySIM)")
    cl.add_argument("--trace", required=True, help="job trace: Helios cluster_log.csv, Philly JSON or SWF")
    cl.add_argument("--format", choices=("helios", "philly", "swf"), help="trace format (default: guessed)")
    cl.add_argument("--policy", default="fcfs", help="fcfs, easy, sjf, las, rr, mlfq, las-mlfq (default fcfs)")
    cl.add_argument("--placement", default="best-fit", help="first-fit, best-fit, free-gpu (default best-fit)")
    cl.add_argument("--migration", action="store_true", help="migrate jobs to free nodes when a job ends")
    cl.add_argument("--overhead", type=float, default=8.0, help="preemption/migration overhead, s (default 8)")
    cl.add_argument("--xpus", type=int, help="GPUs of the cluster (default: the largest job, rounded up to 8)")
    cl.add_argument("--system", choices=("noncoherent", "cxl"), default="noncoherent", help="platform (Fig. 6)")
    cl.add_argument("--partitions", help="nodes per partition, e.g. train=96,dev=32 (default: one)")
    cl.add_argument("--slice", type=float, help="rr: time slice, s (default 3600)")
    cl.add_argument("--quanta", help="mlfq, las-mlfq: quanta, s (default 3250,7200,18000)")
    cl.add_argument("--sort", action="store_true", help="sort a trace whose rows are not in submit order")
    cl.add_argument("--snapshot", type=float, action="append", help="GPU picture at this time, s (repeatable)")
    cl.add_argument("--out", help="directory for jobs.csv, summary.json, series.csv/png, trace.json, gpus_*.png")
    cl.set_defaults(func=_cmd_cluster)

    qs = sub.add_parser("queues", help="queue selection for batch supercomputers (Kawanami): Random/MQL/MAQL/Offset")
    from hcsim.frontends.queue_selection import add_arguments as _queues_arguments

    _queues_arguments(qs)
    qs.set_defaults(func=_cmd_queues)

    demo = sub.add_parser("demo", help="build the CXL system, simulate transfers in SimGrid, draw it")
    demo.add_argument("--xpus", type=int, default=32, help="scale of the demo system (default 32)")
    demo.add_argument("--out", default="results/demo", help="directory for the demo's files")
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except HcsimError as exc:
        print(f"hcsim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hcsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into head: nothing left to say
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
