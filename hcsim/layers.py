"""The layer list: every hcsim module, bottom layer first, and what it holds.

A module may import modules of its own layer and of lower ones, never of a higher one,
and modules form no import circle. ``tests/test_layers.py`` checks every import
(function-local ones too) against this list, that every module is listed, and that no
module is over 600 lines. ``docs/architecture.md`` is generated from it
(``python scripts/gen_docs.py``); add a new module here with one line on what it holds.
Pure data: this module imports nothing of hcsim.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LAYERS", "Layer", "layer_of", "modules"]


@dataclass(frozen=True)
class Layer:
    """One layer: its ``name``, what it is for, its guides ``(title, docs page)`` and its
    ``modules`` ``(dotted name, what it holds)``; a package's ``__init__`` is the package name."""

    name: str
    summary: str
    guides: tuple[tuple[str, str], ...]
    modules: tuple[tuple[str, str], ...]


LAYERS: tuple[Layer, ...] = (
    Layer(
        "core",
        "what every layer shares: errors, units, files, SimGrid access, the registry helper",
        (),
        (
            ("hcsim.errors", "`HcsimError`, the one exception users see for bad input"),
            ("hcsim.units", "human units (`128GBps`, `200ns`, `80GiB`, `67TFLOPS`) to SI floats"),
            ("hcsim.files", "output paths refused up front when unwritable; atomic writes (never half a file)"),
            ("hcsim.outputs", "every CSV, JSON line, figure and Chrome trace hcsim writes, atomically"),
            ("hcsim.progress", "progress bars on terminals, silent in pipes, CI and logs"),
            ("hcsim.registry", "`Registry`: named choices (algorithms, policies, presets) with one-line errors"),
            ("hcsim.simgrid_runtime", "load SimGrid; one forked process per simulation, pinned to a CPU; raw contexts"),
            ("hcsim._preload", "preload libsimgrid at interpreter start (from a `.pth` file)"),
            ("hcsim.layers", "this layer list, from which docs/architecture.md is generated"),
        ),
    ),
    Layer(
        "platform",
        "topologies of XPUs, memory and switches, compiled to SimGrid platform XML",
        (("platform", "platform.md"),),
        (
            ("hcsim.platform", "the platform's public names: `Topology`, builders, `compile_platform`, devices"),
            ("hcsim.platform.topology", "the topology graph: XPUs, memory nodes, switches, links (paper Table 2)"),
            ("hcsim.platform.devices", "accelerator presets (H100, A100, V100) and custom devices"),
            ("hcsim.platform.builders", "the paper's two systems (Fig. 6); ring, star, leaf-spine, fat tree"),
            ("hcsim.platform.dgx", "DGX-H100 / DGX-A100: NVSwitch nodes on a rail-optimised two-level fat tree"),
            ("hcsim.platform.routing", "latency-weighted shortest paths, composed through the zone hierarchy"),
            ("hcsim.platform.compiler", "a topology to SimGrid platform XML (v4.1)"),
            ("hcsim.platform.drawing", "layered pictures of a topology, to check it by eye"),
            ("hcsim.platform.precheck", "platform files SimGrid 4.1 would abort or crash on, refused up front"),
            ("hcsim.platform.probe", "load a platform in SimGrid and measure it: counts, routes, transfers"),
            ("hcsim.platform.simgrid_files", "SimGrid platform files written by others: their XPUs and network model"),
        ),
    ),
    Layer(
        "calibration",
        "calibrated machine models: operator times and NCCL's collective cost, from cited measurements",
        (("calibration", "calibration.md"),),
        (
            ("hcsim.calibration", "the calibration's public names: `load_calibration`, `op_seconds`, `nccl_time`"),
            ("hcsim.calibration.schema", "a machine calibration file (YAML, every number cited) as frozen dataclasses"),
            ("hcsim.calibration.compute", "calibrated operator time: GEMMs, FlashAttention, memory-bound ops"),
            ("hcsim.calibration.host", "a serving framework's host time per continuous-batching iteration"),
            ("hcsim.calibration.nccl", "NCCL's own collective cost model (algorithm, protocol) on a machine"),
            ("hcsim.calibration.machine", "a calibration applied: a vertex's operator time, DGX links at NCCL's rate"),
            ("hcsim.calibration.checks", "the check tables: the models against measurements they were not fitted to"),
        ),
    ),
    Layer(
        "collectives",
        "collective algorithms as flows with dependencies; no SimGrid",
        (("collectives", "collectives.md"),),
        (
            ("hcsim.collectives", "the plug-in API: `register`, `Schedule`, `Flow`, `TopologyView`, `build_plan`"),
            ("hcsim.collectives.schedule", "what an algorithm produces: flows (src, dst, bytes), dependencies, shards"),
            ("hcsim.collectives.table", "every algorithm by kind and name, each kind's default; `register`"),
            ("hcsim.collectives.registry", "look an algorithm up: registered, `module:function`, or MSCCL-IR file"),
            ("hcsim.collectives.check", "the data-movement check: a schedule delivers what its kind promises"),
            ("hcsim.collectives.view", "what an algorithm may know of the topology: servers, racks, CXL memory"),
            ("hcsim.collectives.plans", "the engine's form of a schedule (`FlowPlan`); built-in ring, chain plans"),
            ("hcsim.collectives.msccl", "MSCCL-IR XML programs as algorithms (the collectives' plug-in format)"),
            ("hcsim.collectives.algorithms", "hcsim's library, one module per family; importing it registers them"),
            ("hcsim.collectives.algorithms.ring", "ring allreduce, reduce-scatter, allgather; paper's coherent ring"),
            ("hcsim.collectives.algorithms.chain", "chain broadcast and reduce"),
            ("hcsim.collectives.algorithms.direct", "direct all-to-all and p2p"),
            ("hcsim.collectives.algorithms.direct_exchange", "direct reduce-scatter, allgather and allreduce"),
            ("hcsim.collectives.algorithms.halving_doubling", "Rabenseifner's recursive halving-doubling"),
            ("hcsim.collectives.algorithms.hierarchical", "hierarchical (intra/inter-server) and 2D-ring allreduce"),
            ("hcsim.collectives.algorithms.pairwise", "pairwise-exchange all-to-all"),
            ("hcsim.collectives.algorithms.ring_alltoall", "ASTRA-sim's ring all-to-all"),
            ("hcsim.collectives.algorithms.shared_memory", "CXL shared-memory allreduce (coherent systems)"),
            ("hcsim.collectives.algorithms.topology_ring", "rings in topology order (NCCL-like)"),
            ("hcsim.collectives.algorithms.nccl_rings", "NCCL's rings: channels on rails, NCCL's latency"),
            ("hcsim.collectives.algorithms.tree", "binary-tree broadcast and reduce, NCCL's double binary tree"),
        ),
    ),
    Layer(
        "workload",
        "AI tasks as graphs of compute and communication vertices, independent of the platform",
        (
            ("workloads and engine", "workloads-and-engine.md"),
            ("parallelism", "parallelism.md"),
            ("models", "models.md"),
        ),
        (
            ("hcsim.workload", "the workload's public names: `Workload`, builders, workloads by name"),
            ("hcsim.workload.graph", "the workload graph (paper Table 3): compute and comm vertices, may cycle"),
            ("hcsim.workload.builders", "data-parallel training from layers; the Fig. 3 and allreduce workloads"),
            ("hcsim.workload.llama2", "LLaMA2-13B as the paper models it (Table 4)"),
            ("hcsim.workload.catalog", "the named workloads of `hcsim run --workload` (allreduce, fig3, ...)"),
            ("hcsim.workload.models", "transformer models: their shape and operators"),
            ("hcsim.workload.models.spec", "a transformer's shape (`TransformerSpec`), presets, HF `config.json`"),
            ("hcsim.workload.models.flops", "model FLOPs per trained token as Megatron counts them (GQA, MLA, MTP)"),
            ("hcsim.workload.models.precision", "training precisions (fp32, fp16, bf16, fp8): bytes per tensor kind"),
            ("hcsim.workload.models.ops", "per-operator FLOPs, memory traffic, parameters and activations"),
            ("hcsim.workload.models.inference", "inference steps as workload graphs: prefill, decode, tensor-parallel"),
            ("hcsim.workload.models.layer_checks", "the calibrated layer model against TE's H100 layer benchmark"),
            ("hcsim.workload.parallel", "parallel training: layouts, pipeline schedules, the graph builder"),
            ("hcsim.workload.parallel.layout", "`dp x tp x pp (x ep)` layouts and the rank mapping onto XPUs"),
            ("hcsim.workload.parallel.experts", "MoE parallel folding: a stage's expert ranks etp x ep x edp"),
            ("hcsim.workload.parallel.schedules", "GPipe and 1F1B orders of a pipeline stage's passes"),
            ("hcsim.workload.parallel.costs", "a block's operators as vertex-sized parts"),
            ("hcsim.workload.parallel.comms", "which collectives each parallelism adds, and their sizes"),
            ("hcsim.workload.parallel.memory", "whether a layout fits in device memory: the per-rank bytes"),
            ("hcsim.workload.parallel.tp_overlap", "TP collectives beside the GEMMs they overlap (TE userbuffers)"),
            ("hcsim.workload.parallel.builder", "`training_graph`: one training iteration as a workload graph"),
            ("hcsim.workload.parallel.gradient_sync", "the DP / ZeRO / FSDP gradient and parameter collectives"),
            ("hcsim.workload.parallel.optimizer", "the optimizer step's HBM bytes and calibrated time"),
            ("hcsim.workload.parallel.factory", "`TrainingWorkload`: that graph as the engine's workload factory"),
        ),
    ),
    Layer(
        "formats",
        "other tools' files read and written as functions",
        (("formats", "formats.md"),),
        (
            ("hcsim.formats", "the file formats of other tools"),
            ("hcsim.formats.chakra", "Chakra execution traces (per-rank `.et`) in and out of workload graphs"),
            ("hcsim.formats.chakra.files", "Chakra rank files: finding them, varint framing, the schema, attributes"),
            ("hcsim.formats.chakra.read", "reading a Chakra trace: parse, validate each node, merge pairs"),
            ("hcsim.formats.chakra.assemble", "a read trace as a workload graph: dependencies, the deadlock check"),
            ("hcsim.formats.chakra.write", "`write_chakra`: a workload graph as per-rank Chakra files"),
            ("hcsim.formats.chakra.et_def_pb2", "the Chakra schema (`et_def.proto`) compiled by protoc: not edited"),
            ("hcsim.formats.ranks", "the rank map Chakra and AICB readers share"),
            ("hcsim.formats.workload_files", "`hcsim run --workload NAME|FILE`: named, JSON, Chakra or AICB"),
            ("hcsim.formats.aicb", "SimAI / AICB workload text files to workload graphs"),
            ("hcsim.formats.astra_network", "ASTRA-sim network YAML (Ring, FullyConnected, Switch) to a topology"),
            ("hcsim.formats.astra_routes", "routes by rule of imported grids: the order SimGrid's Dijkstra numbers"),
            ("hcsim.formats.infragraph", "InfraGraph files, expanded by the `infragraph` package, to a topology"),
            ("hcsim.formats.graphml", "topologies as GraphML (`read_graphml`, `write_graphml`), igraph's names"),
            ("hcsim.formats.topology_files", "recognise a topology file's format by its content and read it"),
        ),
    ),
    Layer(
        "engine",
        "the kernel: runs a workload graph on a compiled platform in SimGrid (paper Fig. 5)",
        (("workloads and engine", "workloads-and-engine.md"),),
        (
            ("hcsim.engine", "the engine's public names: `simulate`, `EngineOptions`, `RunResult`, memory placements"),
            ("hcsim.engine.driver", "the one `Driver`: activities, owners, timers, the wait loop, flow observers"),
            ("hcsim.engine.execution", "the Fig. 5 rules: which vertex executions run, wait, and what ends release"),
            ("hcsim.engine.strategy", "the seam: `CommStrategy`, and the `Wing` and observers a caller hands in"),
            ("hcsim.engine.exact", "the exact strategy: every flow of a plan a SimGrid flow"),
            ("hcsim.engine.tasks", "wide communication vertices on SimGrid's Task plugin"),
            ("hcsim.engine.memory", "memory semantics (paper Fig. 3): local, coherent and non-coherent remote data"),
            ("hcsim.engine.records", "a run's records: `RunResult`, `TraceRecord`, `ComputePlan`, activity keys"),
            ("hcsim.engine.simulator", "`simulate(platform_xml, workload)`: load the platform, run one execution"),
            ("hcsim.engine.report", "a run's metrics (`summarize`), its CSV and Chrome-trace files; interval lengths"),
        ),
    ),
    Layer(
        "fast",
        "the fast paths around the engine: folding, memoized rings and rounds, iteration repeat",
        (("fast paths", "fast-paths.md"), ("benchmarks", "benchmarks.md")),
        (
            ("hcsim.fast", "the fast paths' public names: `simulate_system`, `simulate`, `RunOptions`, folding"),
            ("hcsim.fast.system", "`RunOptions`, `simulate_system`, `simulate`; `FastPaths`, the wing one run gets"),
            ("hcsim.fast.ledger", "the link ledger: routes, flows in flight, claims and rings in progress per link"),
            ("hcsim.fast.ring_steps", "memoized ring steps: skipped steps, virtual flows"),
            ("hcsim.fast.groups", "overlapping rings of one layout, counted per flow index"),
            ("hcsim.fast.shared_steps", "a ring step measured alone stands for later rings of the same plan"),
            ("hcsim.fast.twins", "twin flows: one representative in SimGrid for a class of alike routes"),
            ("hcsim.fast.background", "frozen components: ring steps skipped beside remote-memory flows"),
            ("hcsim.fast.rounds", "memoized rounds of every other collective"),
            ("hcsim.fast.repeat", "iteration repeat: once an iteration repeats the last, extrapolate the rest"),
            ("hcsim.fast.microbatches", "steady micro-batches: a pipeline iteration from two short runs of it"),
            ("hcsim.fast.folding", "fold a paper system to the servers a data-parallel ring needs"),
            ("hcsim.fast.symmetry", "fold any topology by the symmetry of its routes (colour refinement)"),
            ("hcsim.fast.units", "what a fold of a parallel layout keeps or drops whole (replicas, EP groups)"),
        ),
    ),
    Layer(
        "analysis",
        "closed forms, statistics, and analyses of a run's trace",
        (("parallelism", "parallelism.md"), ("serving", "serving.md")),
        (
            ("hcsim.analysis", "analytical models and analyses of runs"),
            ("hcsim.analysis.breakdown", "where a rank's iteration goes: compute, stall, exposed comm by kind, idle"),
            ("hcsim.analysis.queueing", "Inoue's dynamic-batching analysis: fits, bounds, exact chains"),
            ("hcsim.analysis.statistics", "shared statistics: t quantiles, confidence intervals, Erlang C"),
        ),
    ),
    Layer(
        "frontends",
        "front ends that feed jobs to the platform: serving, cluster scheduling, queue selection",
        (("serving", "serving.md"), ("cluster", "cluster.md"), ("queue selection", "queue-selection.md")),
        (
            ("hcsim.frontends", "the front ends"),
            ("hcsim.frontends.serving", "inference serving"),
            ("hcsim.frontends.serving.batching", "dynamic batching on a platform's XPUs (Inoue), JSQ dispatch"),
            ("hcsim.frontends.serving.batch_times", "a model's batch-time table tau[b], computed by the engine"),
            ("hcsim.frontends.serving.iteration", "a continuous-batching iteration as a workload graph, memoized"),
            ("hcsim.frontends.serving.continuous", "continuous batching over a paged KV cache in tiers (vLLM-style)"),
            ("hcsim.frontends.serving.kvcache", "the paged KV cache of a replica: three tiers, prefix caching"),
            ("hcsim.frontends.serving.replica", "one replica's continuous-batching scheduler (vLLM's rules)"),
            ("hcsim.frontends.serving.router", "routing requests to replicas: round robin, least outstanding tokens"),
            ("hcsim.frontends.serving.transfers", "KV swaps to host DRAM and KV transfers between groups, timed"),
            ("hcsim.frontends.serving.disaggregated", "disaggregated prefill and decode on separate XPU groups"),
            ("hcsim.frontends.serving.sharing", "links the routes of several replicas share (exactness check)"),
            ("hcsim.frontends.serving.traces", "LLM request traces: gamma arrivals, lengths, Azure, BurstGPT"),
            ("hcsim.frontends.serving.slo", "TTFT/TPOT service levels: SLO attainment and goodput (DistServe's)"),
            ("hcsim.frontends.serving.timeline", "a run over time: KV and tier traffic series, iterations trace"),
            ("hcsim.frontends.serving.plots", "figures of serving runs: latency CDFs, goodput against the rate"),
            ("hcsim.frontends.cluster", "the cluster front end's public names: `simulate_cluster`, jobs, policies"),
            ("hcsim.frontends.cluster.cluster", "the scheduler's view of a platform: nodes, switches, partitions"),
            ("hcsim.frontends.cluster.jobs", "what a job is: a trace row or a synthetic draw"),
            ("hcsim.frontends.cluster.placement", "where a job's GPUs go: first-fit, best-fit, free-GPU"),
            ("hcsim.frontends.cluster.policies", "scheduling policies behind a four-method interface; `policy(name)`"),
            ("hcsim.frontends.cluster.policies.base", "the policy interface (`Policy`), the table, `register`"),
            ("hcsim.frontends.cluster.policies.fcfs", "first come, first served"),
            ("hcsim.frontends.cluster.policies.easy", "FCFS with EASY backfilling"),
            ("hcsim.frontends.cluster.policies.sjf", "shortest job first"),
            ("hcsim.frontends.cluster.policies.las", "least attained service"),
            ("hcsim.frontends.cluster.policies.rr", "round-robin time slices (preemptive)"),
            ("hcsim.frontends.cluster.policies.mlfq", "multi-level feedback queue (Tiresias' quanta)"),
            ("hcsim.frontends.cluster.policies.las_mlfq", "MLFQ with quanta of GPU-time"),
            ("hcsim.frontends.cluster.scheduler", "the scheduler's rules: start, preempt, backfill, migrate"),
            ("hcsim.frontends.cluster.simulator", "`simulate_cluster`: the scheduler run on the platform in SimGrid"),
            ("hcsim.frontends.cluster.outputs", "what a cluster run leaves: jobs.csv, summary, series, GPU pictures"),
            ("hcsim.frontends.cluster.traces", "job traces: Helios, Philly, SWF readers and the synthetic generator"),
            ("hcsim.frontends.cluster.traces.registry", "trace formats: readers, writers, extensions, sniffing"),
            ("hcsim.frontends.cluster.traces._common", "what every trace reader shares: reading, errors, time parsing"),
            ("hcsim.frontends.cluster.traces.helios", "SenseTime Helios `cluster_log.csv`"),
            ("hcsim.frontends.cluster.traces.philly", "Microsoft Philly `cluster_job_log` JSON"),
            ("hcsim.frontends.cluster.traces.swf", "the Standard Workload Format, read and written"),
            ("hcsim.frontends.cluster.traces.synthetic", "synthetic traces and load scaling"),
            ("hcsim.frontends.queue_selection", "Kawanami's queue selection for batch supercomputers"),
            ("hcsim.frontends.queue_selection.model", "parameters, random inputs, queue state, run records"),
            ("hcsim.frontends.queue_selection.rules", "the selection rules (random, MQL, MAQL, offset), a registry"),
            ("hcsim.frontends.queue_selection.simulator", "queue selection on SimGrid: one controller per replication"),
            ("hcsim.frontends.queue_selection.outputs", "per-method summary, completion-time CDFs, their files"),
        ),
    ),
    Layer(
        "sweep",
        "any function over a grid of parameters, locally or on Dask; benchmarks beside the sweeps",
        (("sweeps", "sweeps.md"), ("benchmarks", "benchmarks.md")),
        (
            ("hcsim.sweep", "the sweep's public names: `run_sweep`, `SweepSpec`, results"),
            ("hcsim.sweep.spec", "sweep specifications: function, grid, fixed, points"),
            ("hcsim.sweep.runner", "a local process pool or Dask; a resumable results file"),
            ("hcsim.sweep.point", "one point in a process of its own (`python -m hcsim.sweep.point`)"),
            ("hcsim.sweep.experiments", "experiment functions ready for sweeps: keyword parameters in, a dict out"),
            ("hcsim.sweep.collective_bench", "nccl-tests-style time, algbw and busbw of collectives"),
        ),
    ),
    Layer(
        "demo",
        "the paper's two systems at a small scale, timed by SimGrid",
        (("README", "../README.md"),),
        (("hcsim.demo", "`hcsim demo`: both paper systems built, compiled, probed and compared"),),
    ),
    Layer(
        "cli",
        "the `hcsim` command: one module per subcommand, dispatching to the layers below",
        (("README", "../README.md"),),
        (
            ("hcsim.cli", "the `hcsim` command's entry point"),
            ("hcsim.cli.__main__", "`python -m hcsim.cli`"),
            (
                "hcsim.cli.main",
                "the top-level parser and the command table: a command's module loads only when it runs",
            ),
            ("hcsim.cli.parsers", "every subcommand's options, standard library only (fast `--help`)"),
            ("hcsim.cli.serve_parsers", "`hcsim serve`'s options, beside the parsers (standard library only)"),
            ("hcsim.cli.flags", "flag conventions of the commands: rates with units, deprecated aliases"),
            ("hcsim.cli.platform", "`hcsim platform build|compile|import|check|draw`"),
            ("hcsim.cli.run", "`hcsim run`: a workload on a platform, its metrics"),
            ("hcsim.cli.training", "`hcsim run --model` training: its factory, throughput and steady-micro-batch run"),
            ("hcsim.cli.collective", "`hcsim collective`: nccl-tests-style measurements"),
            (
                "hcsim.cli.serve",
                "`hcsim serve`: dynamic batching (Inoue); `--scheduler continuous` goes to serve_continuous",
            ),
            ("hcsim.cli.serve_continuous", "`hcsim serve --scheduler continuous`: LLM continuous batching"),
            ("hcsim.cli.cluster", "`hcsim cluster`: a job trace on a simulated GPU cluster"),
            ("hcsim.cli.queue_selection", "`hcsim queue-selection`"),
            ("hcsim.cli.sweep", "`hcsim sweep` (a sweep from a YAML spec) and the studies' sweep flags"),
            ("hcsim.cli.demo", "`hcsim demo`"),
        ),
    ),
    Layer(
        "api",
        "the public names a user starts from, re-exported lazily from the layers below",
        (("API", "api.md"),),
        (("hcsim", "the public API: one lazy table of names (`import hcsim` stays cheap)"),),
    ),
)


def modules() -> dict[str, tuple[int, str]]:
    """Every listed module -> (its layer's index, bottom = 0; what it holds)."""
    return {name: (i, holds) for i, layer in enumerate(LAYERS) for name, holds in layer.modules}


def layer_of(module: str) -> int | None:
    """The index of ``module``'s layer (bottom = 0), or None if it is not listed."""
    found = modules().get(module)
    return None if found is None else found[0]
