"""The options of every ``hcsim`` subcommand: one ``add_<command>(sub)`` each, returning its parser.

Only the standard library and :mod:`hcsim.cli.flags` (which needs :mod:`hcsim.units`):
building the whole parser imports no networkx, numpy or SimGrid, so ``hcsim --help``
and usage errors answer at once. What a command does with its options is in the
module named for it (:data:`hcsim.cli.main.COMMANDS`). A few lists of valid values are
copied here from the library so its modules stay unloaded; tests/cli checks each copy.
Bandwidth, latency and duration flags take units (:mod:`hcsim.units`).
"""

from __future__ import annotations

import argparse

from hcsim.cli.flags import DeprecatedAlias, rate_type
from hcsim.cli.serve_parsers import add_serve as _add_serve

__all__ = [
    "CROSS_ENTROPY",
    "FP8_RECIPES",
    "KINDS",
    "NETWORK_MODELS",
    "SYSTEMS",
    "WORKLOADS",
    "XPUS_FROM",
    "add_cluster",
    "add_collective",
    "add_demo",
    "add_platform",
    "add_queue_selection",
    "add_queue_selection_options",
    "add_run",
    "add_serve",
    "add_sweep",
    "add_topology_options",
]

SYSTEMS = ("noncoherent", "cxl", "server", "ring", "star", "leafspine", "fattree", "dgx-h100", "dgx-a100")
"""The systems ``hcsim platform build`` and ``hcsim run --system`` can build."""
WORKLOADS = ("allreduce", "coherent-allreduce", "fig3", "llama2-13b")  # hcsim.workload.catalog.WORKLOADS
XPUS_FROM = ("auto", "property", "all-hosts")  # hcsim.platform.simgrid_files.XPUS_FROM
NETWORK_MODELS = ("file", "raw")  # hcsim.platform.simgrid_files.NETWORK_MODELS
KINDS = ("allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall")  # collective_bench.BENCH_KINDS
CROSS_ENTROPY = ("unfused", "native", "te")  # hcsim.calibration.schema.CROSS_ENTROPY
FP8_RECIPES = ("delayed", "current")  # hcsim.calibration.schema.FP8_RECIPES

Subparsers = argparse._SubParsersAction


# ------------------------------------------------------------------ hcsim platform
def add_topology_options(p: argparse.ArgumentParser, required: bool = True) -> None:
    """The options :func:`hcsim.cli.platform.build_topology` reads: a system name and its sizes and links."""
    p.add_argument("system", choices=SYSTEMS, nargs=None if required else "?", help="which topology to build")
    p.add_argument(
        "--xpus",
        type=int,
        help="number of XPUs (paper systems: a multiple of 8 up to 4096; ring <= 256, star <= 1024, leafspine <= 4096; "
        "dgx-h100/dgx-a100: 1-8 or a multiple of 8)",
    )
    p.add_argument("--mix", help="XPU type(s): 'H100', 'H100+A100', 'H100+V100' (paper systems: one type per ToR)")
    p.add_argument("--cxl-bandwidth", help="CXL link bandwidth for 'cxl' (default 128GBps)")
    p.add_argument("--cxl-latency", help="CXL link latency for 'cxl' (default 200ns)")
    p.add_argument("--link-bandwidth", help="link bandwidth for ring/star/leafspine (e.g. 128GBps)")
    p.add_argument("--link-latency", help="link latency for ring/star/leafspine (e.g. 1us)")
    p.add_argument("--hosts-per-leaf", type=int, help="leafspine: XPUs per leaf (default 16)")
    p.add_argument("--spines", type=int, help="leafspine: spine switches (default 4)")


def add_platform(sub: Subparsers) -> argparse.ArgumentParser:
    """``hcsim platform`` and its actions build, compile, import, check and draw (``args.action``)."""
    plat = sub.add_parser("platform", help="build, check and draw platforms")
    psub = plat.add_subparsers(dest="action", required=True, parser_class=type(plat))

    b = psub.add_parser("build", help="build a topology and compile it to SimGrid platform XML")
    add_topology_options(b)
    b.add_argument("--precision", choices=("fp32", "fp16"), default="fp32", help="XPU speed = FLOPS at this precision")
    b.add_argument("--save-graphml", metavar="FILE", help="also save the topology as GraphML (to edit, then compile)")
    b.add_argument("-o", "--output", required=True, help="platform XML file to write")

    k = psub.add_parser("compile", help="compile a GraphML topology (e.g. edited in yEd) to SimGrid platform XML")
    k.add_argument("topology", help="GraphML file (see Topology.write_graphml)")
    k.add_argument("--precision", choices=("fp32", "fp16"), default="fp32", help="XPU speed = FLOPS at this precision")
    k.add_argument("-o", "--output", required=True, help="platform XML file to write")

    i = psub.add_parser("import", help="import an ASTRA-sim network YAML or an InfraGraph file to SimGrid platform XML")
    i.add_argument("file", help="ASTRA-sim network YAML or InfraGraph YAML/JSON (recognised by content)")
    i.add_argument("--format", choices=("astra-sim", "infragraph"), help="force the format instead of detecting it")
    i.add_argument("--xpu", default="H100", help="XPU preset of every NPU / xpu component (default H100)")
    i.add_argument("--link-bandwidth", help="InfraGraph: bandwidth of links that declare none (e.g. 100Gbps)")
    i.add_argument("--link-latency", help="InfraGraph: latency of links that declare none (e.g. 1us)")
    i.add_argument("--precision", choices=("fp32", "fp16"), default="fp32", help="XPU speed = FLOPS at this precision")
    i.add_argument("--save-graphml", metavar="FILE", help="also save the topology as GraphML")
    i.add_argument("-o", "--output", required=True, help="platform XML file to write")

    c = psub.add_parser("check", help="load a platform XML in SimGrid and print what it holds")
    c.add_argument("platform", help="platform XML file")
    c.add_argument(
        "--xpus-from",
        choices=XPUS_FROM,
        default="auto",
        help="which hosts count as XPUs: those with kind=xpu ('property'), every host ('all-hosts'), or "
        "'property' if any host has it and every host otherwise ('auto', the default)",
    )

    d = psub.add_parser("draw", help="draw a topology (layered) to PNG")
    add_topology_options(d, required=False)
    d.add_argument("--graphml", help="draw a GraphML topology instead of building one")
    d.add_argument("-o", "--output", required=True, help="PNG file to write")
    return plat


# ------------------------------------------------------------------ hcsim run
def add_run(sub: Subparsers) -> argparse.ArgumentParser:
    """``hcsim run``."""
    r = sub.add_parser("run", help="run a workload graph on a platform and print its metrics")
    r.add_argument("--platform", help="platform XML (from 'hcsim platform build')")
    r.add_argument("--system", choices=SYSTEMS, help="or build this system on the fly")
    r.add_argument("--xpus", type=int, help="with --system: number of XPUs")
    r.add_argument("--mix", help="with --system: XPU type(s), e.g. H100+A100")
    r.add_argument("--cxl-bandwidth", help=argparse.SUPPRESS)
    r.add_argument("--cxl-latency", help=argparse.SUPPRESS)
    r.add_argument("--link-bandwidth", help="ring/star/leafspine links; InfraGraph --platform: links that declare none")
    r.add_argument("--link-latency", help="ring/star/leafspine links; InfraGraph --platform: links that declare none")
    r.add_argument("--hosts-per-leaf", type=int, help=argparse.SUPPRESS)
    r.add_argument("--spines", type=int, help=argparse.SUPPRESS)
    r.add_argument(
        "--workload",
        help=f"workload JSON file (Workload.to_json), Chakra trace PATH/PREFIX (PREFIX.RANK.et), AICB workload file, "
        f"or one of {', '.join(WORKLOADS)}",
    )
    r.add_argument(
        "--chakra",
        metavar="PATH",
        help="a Chakra trace: PATH/PREFIX of PREFIX.RANK.et files, their folder or one rank file (as --workload, "
        "which recognises it too; one iteration unless --iterations)",
    )
    r.add_argument("--rank-map", help='Chakra/AICB: JSON file placing ranks on XPUs ({"0": "xpu3", ...} or a list)')
    r.add_argument("--comm-groups", help='Chakra: ASTRA-sim communicator-group JSON ({"1": [0, 1], ...})')
    _add_model_options(r)  # --model --inference --batch --context --tp
    # --parallel dp=N,tp=N,pp=N --microbatches --zero --ep --schedule --sequence-parallel (training with --model)
    _add_training_options(r)
    r.add_argument(
        "--placement",
        choices=("auto", "spill", "local"),
        default="auto",
        help="where operators' data lives: spill what does not fit in XPU memory to the XPU's host (or CXL) memory, "
        "or keep it local (capacity not checked); auto: spill where the XPUs name such a memory, else local, "
        "with a note (default auto)",
    )
    r.add_argument("--bytes", help="size for the allreduce workloads, e.g. 16MiB (default 1GiB)")
    r.add_argument(
        "--algorithm",
        help="allreduce algorithm of llama2-13b and allreduce (default ring): a name of 'hcsim collective "
        "--algorithm all', module:function, or an MSCCL-IR .xml; for Chakra and AICB traces, per kind: "
        "KIND=NAME,... (e.g. all_to_all=ring,all_reduce=halving_doubling)",
    )
    r.add_argument(
        "--iterations", type=int, help="iterations to run (>= 1; with --model or a Chakra/AICB trace default 1)"
    )
    coh = r.add_mutually_exclusive_group()
    coh.add_argument(
        "--coherent",
        dest="coherent",
        action="store_true",
        default=None,
        help="coherent memory (default: --system cxl, or a --platform whose root zone has coherent=true)",
    )
    coh.add_argument(
        "--no-coherent",
        dest="coherent",
        action="store_false",
        help="non-coherent memory (default for other systems and for platforms without a 'coherent' property)",
    )
    r.add_argument(
        "--fast",
        action="store_true",
        help="fold the system to representative servers, memoize repeated ring steps and extrapolate repeating "
        "iterations (within 1%% of exact)",
    )
    r.add_argument(
        "--repeat",
        action="store_true",
        help="extrapolate the iterations after one that repeats the one before on an idle network (--fast: on)",
    )
    r.add_argument(
        "--xpus-from",
        choices=XPUS_FROM,
        help="with --platform: which hosts are XPUs: those with kind=xpu ('property'), every host ('all-hosts'), "
        "or 'auto' (default): 'property' if any host has kind=xpu, else every host",
    )
    r.add_argument(
        "--network-model",
        choices=NETWORK_MODELS,
        help="with --platform: 'file' (default) runs the model the file's <config> names, or SimGrid's default "
        "LV08 if none; 'raw' forces SimGrid's raw model (lone transfer = latency + size/bandwidth)",
    )
    r.add_argument("--chrome-trace", metavar="FILE", help="write a Chrome/Perfetto trace (JSON)")
    # in 'hcsim cluster' --trace is an input: here the old spelling still works, with a note
    r.add_argument("--trace", dest="chrome_trace", metavar="FILE", action=DeprecatedAlias, new="--chrome-trace")
    r.add_argument("--csv", help="write the per-vertex trace as CSV")
    r.add_argument("--links", help="write bytes and mean/peak utilization of every used link as CSV")
    r.add_argument("--json", action="store_true", help="print the metrics as JSON")
    bar = r.add_mutually_exclusive_group()
    bar.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="show a bar of simulated iterations on stderr (default: when stderr is a terminal)",
    )
    bar.add_argument("--no-progress", dest="progress", action="store_false", help="never show the bar")
    return r


def _add_model_options(r: argparse.ArgumentParser) -> None:
    """The transformer options of ``hcsim run`` (docs/models.md)."""
    g = r.add_argument_group("transformer models (docs/models.md)")
    g.add_argument("--model", help="a preset (llama2-7b, llama3-70b, mixtral-8x7b, ...) or a HuggingFace config.json")
    g.add_argument("--inference", action="store_true", help="with --model: run one inference step")
    g.add_argument("--phase", choices=("decode", "prefill"), help="inference step (default decode)")
    g.add_argument("--batch", type=int, help="with --inference: sequences in the batch (default 1)")
    g.add_argument("--context", type=int, help="with --inference: prompt length (prefill) or KV length (decode)")
    g.add_argument("--tp", type=int, help="with --inference: tensor-parallel degree (default: all XPUs)")


def _add_training_options(r: argparse.ArgumentParser) -> None:
    """The parallel-training options of ``hcsim run`` (with ``--model``, without ``--inference``)."""
    g = r.add_argument_group("parallel training of --model (docs/parallelism.md)")
    g.add_argument("--parallel", help="layout, e.g. dp=32,tp=8,pp=4 (dp may be left out; default: data parallel)")
    g.add_argument("--microbatches", type=int, help="microbatches per pipeline and iteration (default 2 x pp)")
    g.add_argument("--micro-batch", type=int, help="sequences per microbatch (default 1)")
    g.add_argument("--sequence", type=int, help="tokens per sequence (default: the model's)")
    g.add_argument(
        "--zero",
        type=int,
        choices=(0, 1, 2, 3),
        help="ZeRO stage (3 = FSDP; default 0, or 1 = Megatron's distributed optimizer on dgx-* systems)",
    )
    g.add_argument("--ep", type=int, help="expert-parallel degree (MoE models; same as ep= in --parallel)")
    g.add_argument("--schedule", choices=("1f1b", "gpipe"), help="pipeline schedule (default 1f1b)")
    sp = g.add_mutually_exclusive_group()
    sp.add_argument(
        "--sequence-parallel",
        action="store_true",
        default=None,
        help="Megatron sequence parallelism in TP groups (default: on with tp > 1 on dgx-* systems, as NeMo runs)",
    )
    sp.add_argument("--no-sequence-parallel", dest="sequence_parallel", action="store_false")
    ov = g.add_mutually_exclusive_group()
    ov.add_argument(
        "--tp-comm-overlap",
        action="store_true",
        default=None,
        help="TP collectives beside the GEMMs they overlap, as Megatron-Core's --tp-comm-overlap (TE userbuffers; "
        "needs sequence parallelism; default: off)",
    )
    ov.add_argument("--no-tp-comm-overlap", dest="tp_comm_overlap", action="store_false")
    g.add_argument(
        "--mapping",
        help="rank order, innermost first (default tp,pp,dp; ep > 1 on dgx-h100/dgx-a100: Megatron-Core's tp,dp,pp)",
    )
    g.add_argument(
        "--precision",
        choices=("fp32", "fp16", "bf16", "fp8"),
        help="training precision (docs/training-features.md; default the model's)",
    )
    g.add_argument("--recompute", choices=("none", "selective", "full"), help="activation recomputation (default none)")
    g.add_argument(
        "--recompute-modules",
        help="selective recomputation of these Megatron-Core modules, comma-separated: core_attn, layernorm, "
        "moe_act, mlp, mla_up_proj (implies --recompute selective; docs/training-features.md)",
    )
    g.add_argument(
        "--recompute-num-layers",
        type=int,
        help="with --recompute full: only the first N blocks of each model chunk (Megatron's --recompute-method "
        "block --recompute-num-layers N)",
    )
    g.add_argument(
        "--optimizer-dtype",
        choices=("fp32", "bf16"),
        help="Adam state: fp32 master and moments (Megatron-Core, the default) or bf16 moments without a master "
        "copy (NeMo 1's distributed Adam with optim.dtype bf16)",
    )
    g.add_argument(
        "--fp8-param-gather",
        action="store_true",
        default=None,
        help="with --precision fp8: keep and all-gather the parameters in fp8 (Megatron's --fp8-param-gather)",
    )
    g.add_argument(
        "--calibration",
        help="ideal (datasheet peaks, link speed; the default), dgx-h100, dgx-a100, or a calibration YAML "
        "(docs/calibration.md)",
    )
    g.add_argument(
        "--attention-backend",
        choices=("auto", "flash"),
        help="with --calibration: the attention kernel: auto (the framework's choice, cuDNN fused attention on "
        "H100; the default) or flash (FlashAttention-2, as stacks with NVTE_FUSED_ATTN=0 ran; docs/calibration.md)",
    )
    g.add_argument(
        "--cross-entropy",
        choices=CROSS_ENTROPY,
        help="with --calibration: the loss's kernels: unfused (Megatron-Core's default), native (its jit-fused "
        "cross_entropy_loss_fusion) or te (cross_entropy_fusion_impl te); docs/calibration.md",
    )
    g.add_argument(
        "--fp8-recipe",
        choices=FP8_RECIPES,
        help="with --calibration and --precision fp8: Transformer Engine's scaling, delayed (the default, amax "
        "history) or current (Float8CurrentScaling: an amax pass before each cast); docs/calibration.md",
    )
    g.add_argument(
        "--hidden-dropout",
        action="store_true",
        default=None,
        help="with --calibration: the run drops hidden activations (p > 0): its residual adds write and read a "
        "dropout mask; docs/calibration.md",
    )
    g.add_argument("--allow-spill", action="store_true", help="on a DGX: let what does not fit in HBM spill to host "
                   "memory (default: refuse in one line)")  # fmt: skip
    g.add_argument("--exact-microbatches", action="store_true", default=None,
                   help="with --fast and --calibration: simulate every micro-batch (default: two short runs, the "
                   "steady pipeline periods between them extrapolated; docs/fast-paths.md)")  # fmt: skip
    g.add_argument(
        "--dp-algorithm",
        help="collective algorithm of the gradients (default ring; nccl@CALIBRATION with --calibration)",
    )
    g.add_argument(
        "--tp-algorithm",
        help="collective algorithm inside TP groups (default ring; nccl@CALIBRATION with --calibration)",
    )


# ------------------------------------------------------------------ hcsim collective
def add_collective(sub: Subparsers) -> argparse.ArgumentParser:
    """``hcsim collective``."""
    c = sub.add_parser(
        "collective",
        help="nccl-tests-style time, algbw and busbw of collective algorithms",
        description="Run collectives per size and algorithm on a platform; print time, algbw, busbw (nccl-tests).",
    )
    c.add_argument("--platform", help="platform XML (from 'hcsim platform build')")
    c.add_argument("--system", choices=SYSTEMS, help="or build this system on the fly")
    c.add_argument("--xpus", type=int, help="with --system: number of XPUs")
    c.add_argument("--mix", help="with --system: XPU type(s), e.g. H100+A100")
    c.add_argument("--cxl-bandwidth", help="with --system cxl: CXL link bandwidth (default 128GBps)")
    c.add_argument("--cxl-latency", help="with --system cxl: CXL link latency (default 200ns)")
    c.add_argument("--link-bandwidth", help="with ring/star/leafspine: link bandwidth, e.g. 128GBps")
    c.add_argument("--link-latency", help="with ring/star/leafspine: link latency, e.g. 1us")
    c.add_argument("--hosts-per-leaf", type=int, help=argparse.SUPPRESS)
    c.add_argument("--spines", type=int, help=argparse.SUPPRESS)
    c.add_argument("--kind", default="allreduce", help=f"collective: {', '.join(KINDS)} (default allreduce)")
    c.add_argument(
        "--algorithm",
        default="all",
        help="'all' (every registered algorithm of the kind) or a comma list: names, module:function, MSCCL-IR .xml",
    )
    c.add_argument("--sizes", default="1KiB:1GiB", help="LO:HI (doubling) or a comma list, e.g. 1KiB:4GiB")
    c.add_argument("--ranks", type=int, help="ranks taking part: the first N XPUs (default all)")
    c.add_argument("--iterations", type=int, default=1, help="collectives per point, back to back (default 1)")
    coh = c.add_mutually_exclusive_group()
    coh.add_argument("--coherent", dest="coherent", action="store_true", default=None, help="coherent memory")
    coh.add_argument("--no-coherent", dest="coherent", action="store_false", help="non-coherent memory")
    c.add_argument("--out", help="directory for collective_<kind>.csv and .png (busbw vs size)")
    c.add_argument("--json", action="store_true", help="print the rows as JSON instead of the table")
    c.add_argument(
        "--host-times",
        action="store_true",
        help="with --json: add 'host_times', the wall-clock seconds each point took on this machine (they differ "
        "from run to run, so the rows leave them out)",
    )
    c.add_argument(
        "--fast",
        action="store_true",
        help="with --system and every XPU: fold and memoize rings, memoize other algorithms by rounds (within 1%% of "
        "exact)",
    )
    return c


# ------------------------------------------------------------------ hcsim sweep
def add_sweep(sub: Subparsers) -> argparse.ArgumentParser:
    """``hcsim sweep``."""
    sw = sub.add_parser("sweep", help="run a parameter sweep (resumable; local processes or Dask)")
    sw.add_argument("spec", help="sweep spec (YAML): function, grid, fixed, points, timeout, out")
    sw.add_argument("--executor", choices=("local", "dask"), default="local", help="where points run")
    sw.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786 (default: a local cluster)")
    sw.add_argument(
        "-j",
        "--workers",
        type=int,
        help="parallel processes: points at once, or local Dask workers (a count; default: CPU count)",
    )
    sw.add_argument("--jobs", dest="workers", type=int, action=DeprecatedAlias, new="-j/--workers")
    sw.add_argument("--out", help="results file, JSON lines (default: the spec's 'out')")
    return sw


# ------------------------------------------------------------------ hcsim serve
def add_serve(sub: Subparsers) -> argparse.ArgumentParser:
    """``hcsim serve`` (alias ``queue``, its former name): :func:`hcsim.cli.serve_parsers.add_serve`."""
    return _add_serve(sub, SYSTEMS)


# ------------------------------------------------------------------ hcsim cluster
def add_cluster(sub: Subparsers) -> argparse.ArgumentParser:
    """``hcsim cluster``."""
    cl = sub.add_parser("cluster", help="multi-tenant GPU cluster: schedule a job trace on a platform (AnalySIM)")
    cl.add_argument(
        "--trace", required=True, help="job trace: Helios cluster_log.csv, Philly JSON or SWF, each may be gzipped"
    )
    cl.add_argument("--format", choices=("helios", "philly", "swf"), help="trace format (default: guessed)")
    cl.add_argument("--policy", default="fcfs", help="fcfs, easy, sjf, las, rr, mlfq, las-mlfq (default fcfs)")
    cl.add_argument("--placement", default="best-fit", help="first-fit, best-fit, free-gpu (default best-fit)")
    cl.add_argument("--migration", action="store_true", help="migrate jobs to free nodes when a job ends")
    cl.add_argument(
        "--overhead", default=8.0, help="preemption/migration overhead, e.g. 8 or 500ms (bare number: s; default 8)"
    )
    cl.add_argument("--xpus", type=int, help="GPUs of the cluster (default: the largest job, rounded up to 8)")
    cl.add_argument("--system", choices=("noncoherent", "cxl"), default="noncoherent", help="platform (Fig. 6)")
    cl.add_argument(
        "--partitions",
        help="nodes per partition, named as the trace's partitions (Helios/Philly vc, SWF partition number), "
        "e.g. 1=24,2=8 (default: one for all jobs)",
    )
    cl.add_argument("--slice", help="rr: time slice, e.g. 3600 or 1h (bare number: s; default 3600)")
    cl.add_argument(
        "--quanta",
        help="mlfq, las-mlfq: quanta, e.g. 3250,7200,18000 or 1h,2h,5h (bare numbers: s; default 3250,7200,18000)",
    )
    cl.add_argument("--sort", action="store_true", help="sort a trace whose rows are not in submit order")
    cl.add_argument(
        "--snapshot", action="append", help="GPU picture at this time, e.g. 100 or 2h (bare number: s; repeatable)"
    )
    cl.add_argument("--out", help="directory for jobs.csv, summary.json, series.csv/png, trace.json, gpus_*.png")
    return cl


# ------------------------------------------------------------------ hcsim queue-selection
def add_queue_selection(sub: Subparsers) -> argparse.ArgumentParser:
    """``hcsim queue-selection`` (alias ``queues``, its former name)."""
    p = sub.add_parser(
        "queue-selection",
        aliases=["queues"],
        help="queue selection for batch supercomputers (Kawanami): Random/MQL/MAQL/Offset",
    )
    add_queue_selection_options(p)
    return p


def add_queue_selection_options(p: argparse.ArgumentParser) -> None:
    """The options of ``hcsim queue-selection`` (for other parsers too: the studies, the tests)."""
    p.add_argument(
        "--method",
        default="all",
        help="random, mql, maql, offset, a comma-separated list, or all (= all four; default all)",
    )
    p.add_argument("--set", dest="set_name", metavar="SET", default="1d", help="parameter set 1a..3d (default 1d)")
    p.add_argument(
        "--offset",
        default="150",
        help="offset window M, e.g. 150 or 2.5h (bare number: minutes); several comma-separated (default 150)",
    )
    p.add_argument("--model", default="paper", help="paper (no waiting, the paper's model) or fifo (default paper)")
    p.add_argument("--servers", type=int, default=None, help="fifo: servers per queue (default 1)")
    p.add_argument("--replications", type=int, default=20, help="simulated periods (default 20)")
    p.add_argument(
        "--period", help="length of a replication, e.g. 10080 or 168h (bare number: minutes; default 10080, a week)"
    )
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--arrival", default="lomax", help="lomax (the paper's) or poisson (with --rate)")
    p.add_argument(
        "--rate",
        type=rate_type("--rate", per="min"),
        default=None,
        help="poisson arrival rate, e.g. 0.1/min or 6/h (bare number: per minute)",
    )
    p.add_argument("--offset-ties", default="lowest", help="offset ties: lowest id or random (default lowest)")
    p.add_argument(
        "--offset-rule", default="fewest", help="offset picks the queue with the fewest (default) or most completions"
    )
    p.add_argument("-j", "--workers", type=int, default=1, help="parallel SimGrid processes (default 1)")
    p.add_argument("--out", default=None, help="directory for summary.csv, cdf.csv, cdf.png")


# ------------------------------------------------------------------ hcsim demo
def add_demo(sub: Subparsers) -> argparse.ArgumentParser:
    """``hcsim demo``."""
    demo = sub.add_parser("demo", help="build the CXL system, simulate transfers in SimGrid, draw it")
    demo.add_argument(
        "--xpus", type=int, default=32, help="XPUs of the demo systems: a multiple of 8 from 16 to 256 (default 32)"
    )
    demo.add_argument("--out", default="results/demo", help="directory for the demo's files")
    return demo
