"""SimAI / AICB workload files (the text format AICB generates for SimAI) as hcsim workload graphs.

The format, as SimAI's workload reader parses it (aliyun/SimAI, ``Workload::initialize_workload``):

* line 1, the header: a parallelism policy (``HYBRID_TRANSFORMER_FWD_IN_BCKWD``,
  ``HYBRID_TRANSFORMER``, ``MICRO`` or ``DATA``) then ``key: value`` pairs:
  ``model_parallel_NPU_group`` (tensor-parallel size TP), ``ep`` (expert-parallel
  size), ``pp`` (pipeline stages), ``vpp``, ``ga`` (gradient-accumulation steps, the
  micro-batches of an iteration), ``all_gpus``, ``checkpoints``,
  ``checkpoint_initiates`` and ``pp_comm`` (bytes sent between pipeline stages);
* line 2: the number of layer lines;
* one line per layer, 12 whitespace-separated fields: name, dependency, forward compute
  time, forward comm type, forward comm size, input-gradient compute time, its comm
  type and size, weight-gradient compute time, its comm type and size, and the
  weight-update time. Times are SimAI ticks (nanoseconds); sizes are bytes.

Comm types are ``NONE``, ``ALLREDUCE``, ``ALLGATHER``, ``REDUCESCATTER`` and ``ALLTOALL``,
each optionally suffixed ``_EP`` or ``_DP_EP``. The group, as in SimAI: the forward and
input-gradient comms of a plain type run over the tensor-parallel group, the
weight-gradient comm over the data-parallel group; ``_EP`` over the expert-parallel
group (EP consecutive data-parallel ranks), ``_DP_EP`` over the expert-data-parallel
group (the data-parallel ranks with the same EP index).

Ranks: rank = t + TP (d + DP p) for tensor index t, data-parallel index d and stage p,
with DP = all_gpus / (TP pp); rank r runs on ``ranks[r]`` (or a ``rank_map``). Layers
are split into pp contiguous, nearly equal blocks, one per stage.

Per iteration each rank runs, in order (GPipe): for each micro-batch, its stage's layers
forward (compute, then the forward comm), then ``pp_comm`` bytes to the next stage; then
for each micro-batch in reverse, the layers backward (input-gradient compute and comm,
weight-gradient compute), ``pp_comm`` bytes back to the previous stage; the
weight-gradient comm and the weight update run once, after the last micro-batch.
Compute times become FLOPs at the XPU's fp32 rate (``xpu_flops``), so a vertex takes
exactly its traced time. The next iteration starts after the last.

Ignored (stated in docs/formats.md as well): the dependency field, ``vpp`` (virtual
pipeline stages), ``checkpoints`` / ``checkpoint_initiates`` (activation
recomputation), the ``BROADCAST`` comm type AICB writes for ``norm`` (SimAI ignores it
too), zero-time compute (no vertex) and collectives over a group of one rank (no
traffic); the last two are counted in ``graph["aicb_skipped"]``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hcsim.errors import HcsimError
from hcsim.workload.graph import ALGORITHMS, Workload

__all__ = ["read_aicb", "is_aicb", "parse_aicb", "AicbLayer", "AicbFile"]

POLICIES = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_TRANSFORMER", "MICRO", "DATA")
KINDS = {"ALLREDUCE": "allreduce", "ALLGATHER": "allgather", "REDUCESCATTER": "reduce_scatter", "ALLTOALL": "alltoall"}
IGNORED_TYPES = ("BROADCAST",)
HEADER_KEYS = ("model_parallel_NPU_group", "ep", "pp", "vpp", "ga", "all_gpus", "checkpoints", "checkpoint_initiates")


@dataclass(frozen=True)
class AicbLayer:
    """One layer line: three compute times (ns), three comms (type, bytes), and the update time (ns)."""

    name: str
    fwd_time: float
    fwd_comm: str
    fwd_bytes: int
    ig_time: float
    ig_comm: str
    ig_bytes: int
    wg_time: float
    wg_comm: str
    wg_bytes: int
    update_time: float


@dataclass(frozen=True)
class AicbFile:
    """A parsed workload file."""

    policy: str
    tp: int
    ep: int
    pp: int
    ga: int
    all_gpus: int | None
    pp_comm: int
    layers: list[AicbLayer]


def is_aicb(path: str) -> bool:
    """Whether ``path`` is a file whose first word is an AICB parallelism policy."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, errors="replace") as f:
            first = f.readline().split()
    except OSError:
        return False
    return bool(first) and first[0] in POLICIES


def _int(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise HcsimError(f"{what}: {text!r} is not a number") from None
        if not math.isfinite(value) or value != int(value):
            raise HcsimError(f"{what}: {text!r} is not an integer") from None
        value = int(value)
    if value < 0:
        raise HcsimError(f"{what}: {text!r} is negative (valid: >= 0)")
    return value


def _comm(text: str, what: str) -> str:
    base = text.removesuffix("_DP_EP").removesuffix("_EP")
    if text == "NONE" or base in KINDS or text in IGNORED_TYPES:
        return text
    valid = ", ".join(["NONE", *KINDS, *(k + "_EP" for k in KINDS), *(k + "_DP_EP" for k in KINDS)])
    raise HcsimError(f"{what}: comm type {text!r} is not supported (valid: {valid})")


def parse_aicb(path: str | os.PathLike[str]) -> AicbFile:
    """Parse an AICB workload file; every malformed item is a one-line error naming it."""
    path = os.fspath(path)
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise HcsimError(f"AICB workload file '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HcsimError(f"AICB workload file '{path}' cannot be read: {exc}") from None
    lines = [ln for ln in lines if ln.strip()]
    if len(lines) < 2:
        raise HcsimError(f"AICB workload file '{path}' needs a header line and a layer-count line")
    tokens = lines[0].split()
    if tokens[0] not in POLICIES:
        raise HcsimError(f"AICB workload file '{path}': policy {tokens[0]!r} is unknown (valid: {', '.join(POLICIES)})")
    header: dict[str, int] = {}
    i = 1
    while i < len(tokens):
        key = tokens[i].rstrip(":")
        if key not in (*HEADER_KEYS, "pp_comm"):
            raise HcsimError(
                f"AICB workload file '{path}': header item {tokens[i]!r} is unknown "
                f"(valid: {', '.join(k + ':' for k in HEADER_KEYS)}, pp_comm)"
            )
        if i + 1 >= len(tokens):
            raise HcsimError(f"AICB workload file '{path}': header item {tokens[i]!r} has no value")
        header[key] = _int(tokens[i + 1], f"AICB workload file '{path}': header {key}")
        i += 2
        if key in ("checkpoints", "checkpoint_initiates"):
            i += header[key]  # the listed layer numbers (ignored)
    count = _int(lines[1].strip(), f"AICB workload file '{path}': layer count (line 2)")
    body = lines[2:]
    if count != len(body):
        raise HcsimError(f"AICB workload file '{path}': line 2 announces {count} layers but {len(body)} lines follow")
    layers = []
    for n, line in enumerate(body, 3):
        f = line.split()
        where = f"AICB workload file '{path}', line {n}"
        if len(f) != 12:
            raise HcsimError(
                f"{where}: {len(f)} fields (valid: 12: name, dependency, then compute time, comm type and comm size "
                "for forward, input gradient and weight gradient, then the update time)"
            )
        layers.append(
            AicbLayer(
                f[0],
                _int(f[2], f"{where}: forward compute time"),
                _comm(f[3], where),
                _int(f[4], f"{where}: forward comm size"),
                _int(f[5], f"{where}: input-gradient compute time"),
                _comm(f[6], where),
                _int(f[7], f"{where}: input-gradient comm size"),
                _int(f[8], f"{where}: weight-gradient compute time"),
                _comm(f[9], where),
                _int(f[10], f"{where}: weight-gradient comm size"),
                _int(f[11], f"{where}: update time"),
            )
        )
    for key in ("model_parallel_NPU_group", "ep", "pp", "ga"):
        if header.get(key, 1) < 1:
            raise HcsimError(f"AICB workload file '{path}': {key} {header[key]} is invalid (valid: an integer >= 1)")
    return AicbFile(
        tokens[0],
        header.get("model_parallel_NPU_group", 1),
        header.get("ep", 1),
        header.get("pp", 1),
        header.get("ga", 1),
        header.get("all_gpus"),
        header.get("pp_comm", 0),
        layers,
    )


def read_aicb(
    path: str | os.PathLike[str],
    xpus: Sequence[str],
    *,
    xpu_flops: Mapping[str, float] | float | None = None,
    rank_map: str | os.PathLike[str] | Mapping[int, str] | Sequence[str] | None = None,
    algorithms: Mapping[str, str] | None = None,
) -> Workload:
    """The workload of an AICB file on ``xpus`` (rank r on ``xpus[r]``); see the module docstring."""
    from hcsim.formats.chakra import _load_rank_map

    spec = parse_aicb(path)
    path = os.fspath(path)
    tp, ep, pp = spec.tp, spec.ep, spec.pp
    world = spec.all_gpus or len(xpus)
    if world % (tp * pp):
        raise HcsimError(
            f"AICB workload file '{path}': all_gpus {world} is not a multiple of TP {tp} x pp {pp} (valid: DP = "
            "all_gpus / (TP pp) an integer)"
        )
    dp = world // (tp * pp)
    if dp % ep:
        raise HcsimError(f"AICB workload file '{path}': ep {ep} does not divide the data-parallel size {dp}")
    if pp > 1 and spec.pp_comm <= 0:
        raise HcsimError(f"AICB workload file '{path}': pp {pp} needs pp_comm > 0 (bytes between stages)")
    if pp > len(spec.layers):
        raise HcsimError(f"AICB workload file '{path}': pp {pp} stages but only {len(spec.layers)} layers")
    xpu_of = _load_rank_map(rank_map, world, xpus)

    def rate(x: str) -> float:
        r = xpu_flops.get(x) if isinstance(xpu_flops, Mapping) else xpu_flops
        if r is None or not r > 0:
            raise HcsimError(
                f"AICB compute times need the FLOP rate of XPU '{x}' (run on a platform or give xpu_flops)"
            )
        return float(r)

    def rank(t: int, d: int, p: int) -> int:
        return t + tp * (d + dp * p)

    def group(kind: str, phase: str, t: int, d: int, p: int) -> tuple[str, list[int]]:
        if kind.endswith("_DP_EP"):
            return f"dpep{t}.{d % ep}.{p}", [rank(t, e, p) for e in range(d % ep, dp, ep)]
        if kind.endswith("_EP"):
            b = d // ep
            return f"ep{t}.{b}.{p}", [rank(t, e, p) for e in range(b * ep, (b + 1) * ep)]
        if phase == "wg":
            return f"dp{t}.{p}", [rank(t, e, p) for e in range(dp)]
        return f"tp{d}.{p}", [rank(s, d, p) for s in range(tp)]

    n = len(spec.layers)
    stage_layers = [list(range(p * n // pp, (p + 1) * n // pp)) for p in range(pp)]
    w = Workload(name=os.path.basename(path), ranks=xpu_of[:world])
    w.graph.update(samples_per_iteration=spec.ga * dp, batches_per_iteration=spec.ga * dp, source="aicb")
    skipped = {"zero-time compute": 0, "collective over one rank": 0, "BROADCAST comm": 0}
    chains: dict[int, list[tuple[str, bool]]] = {r: [] for r in range(world)}  # per rank: (vertex, gates the next)

    def compute(r: int, label: str, ns: float) -> None:
        if ns <= 0:
            skipped["zero-time compute"] += 1
            return
        x = xpu_of[r]
        name = f"{x}/{label}"
        w.add_node(name, type="compute", flops=ns * 1e-9 * rate(x), location=x, precision="fp32", mem_bytes=0.0,
                   footprint=0.0, is_start=False, rank=r)  # fmt: skip
        chains[r].append((name, True))

    def comm(r: int, label: str, kind: str, nbytes: int, phase: str, t: int, d: int, p: int) -> None:
        if kind == "NONE" or nbytes <= 0:
            return
        if kind in IGNORED_TYPES:
            skipped["BROADCAST comm"] += 1
            return
        gid, members = group(kind, phase, t, d, p)
        if len(members) < 2:
            skipped["collective over one rank"] += 1
            return
        name = f"{label}@{gid}"
        if name not in w:
            base = KINDS[kind.removesuffix("_DP_EP").removesuffix("_EP")]
            algo = (algorithms or {}).get(base, ALGORITHMS[base][0])
            w.add_node(name, type="comm", bytes=float(nbytes), kind=base, algorithm=algo,
                       scope=[xpu_of[m] for m in members], is_start=False)  # fmt: skip
        chains[r].append((name, True))

    def transfer(src: int, dst: int, label: str) -> None:
        name = f"{label}:{xpu_of[src]}->{xpu_of[dst]}"
        w.add_node(name, type="comm", bytes=float(spec.pp_comm), kind="p2p", algorithm=ALGORITHMS["p2p"][0],
                   scope=[xpu_of[src], xpu_of[dst]], is_start=False)  # fmt: skip
        chains[src].append((name, True))
        chains[dst].append((name, False))  # the receiver waits for it; it does not wait for the receiver

    for m in range(spec.ga):
        for p in range(pp):
            for d in range(dp):
                for t in range(tp):
                    r = rank(t, d, p)
                    if p > 0:
                        transfer(rank(t, d, p - 1), r, f"mb{m}/act{p - 1}->{p}")
                    for li in stage_layers[p]:
                        layer = spec.layers[li]
                        compute(r, f"mb{m}/L{li}:{layer.name}/fwd", layer.fwd_time)
                        comm(r, f"mb{m}/L{li}:{layer.name}/fwd-comm", layer.fwd_comm, layer.fwd_bytes, "fwd", t, d, p)
    for m in reversed(range(spec.ga)):
        for p in reversed(range(pp)):
            for d in range(dp):
                for t in range(tp):
                    r = rank(t, d, p)
                    if p < pp - 1:
                        transfer(rank(t, d, p + 1), r, f"mb{m}/grad{p + 1}->{p}")
                    for li in reversed(stage_layers[p]):
                        layer = spec.layers[li]
                        label = f"mb{m}/L{li}:{layer.name}"
                        compute(r, f"{label}/ig", layer.ig_time)
                        comm(r, f"{label}/ig-comm", layer.ig_comm, layer.ig_bytes, "ig", t, d, p)
                        compute(r, f"{label}/wg", layer.wg_time)
                        if m == 0:  # the last micro-batch of the backward order: gradients are complete
                            comm(r, f"L{li}:{layer.name}/wg-comm", layer.wg_comm, layer.wg_bytes, "wg", t, d, p)
                            compute(r, f"L{li}:{layer.name}/update", layer.update_time)
    _chain(w, chains)
    w.graph["aicb_skipped"] = {k: v for k, v in skipped.items() if v}
    if w.number_of_nodes() == 0:
        raise HcsimError(f"AICB workload file '{path}' has nothing to run (every compute is 0 and every comm NONE)")
    return w


def _chain(w: Workload, chains: dict[int, list[tuple[str, bool]]]) -> None:
    """Program order per rank as edges; the last operator of an iteration gates the first of the next."""
    for ops in chains.values():
        prev: str | None = None
        pending: list[str] = []  # received transfers the next operator waits for
        first: str | None = None
        for name, gates in ops:
            if not gates:
                pending.append(name)
                continue
            for u in ([prev] if prev else []) + pending:
                if u != name:  # a collective follows itself on no rank; the guard keeps the graph simple
                    w.add_edge(u, name, skip_first_iteration=False)
            pending = []
            first = first or name
            prev = name
        if first and prev and not w.has_edge(prev, first):
            w.add_edge(prev, first, skip_first_iteration=True)
    for name in w.nodes:
        w.nodes[name]["is_start"] = not any(not e["skip_first_iteration"] for _, _, e in w.in_edges(name, data=True))
