"""SimAI / AICB workload files (the text format AICB generates for SimAI) as hcsim workload graphs.

The format, as SimAI's ``Workload::initialize_workload`` parses it: a header line (a
parallelism policy, then ``key: value`` pairs: ``model_parallel_NPU_group`` (TP), ``ep``,
``pp``, ``vpp``, ``ga``, ``all_gpus``, ``checkpoints``, ``pp_comm``), the layer count, then
one 12-field line per layer (compute time in ns, comm type and bytes for the forward,
input-gradient and weight-gradient passes; the weight-update time).

:func:`parse_aicb` parses a file into an :class:`AicbFile`; :func:`read_aicb` checks its
layout (rank = t + TP (d + DP p)) and assembles each rank's program in GPipe order, with
comms over SimAI's groups and compute times as FLOPs at the XPU's fp32 rate.

Invariant: every vertex takes exactly its traced time; what hcsim ignores (the dependency
field, ``vpp``, checkpoints, ``BROADCAST``) or skips (zero-time compute, one-rank
collectives, counted in ``graph["aicb_skipped"]``) is listed in docs/formats.md.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hcsim.errors import HcsimError
from hcsim.formats.ranks import RankMap, load_rank_map
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
    rank_map: RankMap | None = None,
    algorithms: Mapping[str, str] | None = None,
) -> Workload:
    """The workload of an AICB file on ``xpus`` (rank r on ``xpus[r]``); see the module docstring."""
    spec = parse_aicb(path)
    path = os.fspath(path)
    layout = _layout(spec, path, len(xpus))
    xpu_of = load_rank_map(rank_map, layout.world, xpus)
    return _Program(spec, layout, xpu_of, xpu_flops, algorithms, path).build()


@dataclass(frozen=True)
class _Layout:
    """The parallel layout of a file: rank = t + tp (d + dp p) for tensor index t, data index d, stage p."""

    world: int
    tp: int
    dp: int
    ep: int
    pp: int

    def rank(self, t: int, d: int, p: int) -> int:
        return t + self.tp * (d + self.dp * p)


def _layout(spec: AicbFile, path: str, n_xpus: int) -> _Layout:
    """Check that the header's sizes fit together (and the layers fill the stages); the layout they give."""
    tp, ep, pp = spec.tp, spec.ep, spec.pp
    world = spec.all_gpus or n_xpus
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
    return _Layout(world, tp, dp, ep, pp)


class _Program:
    """The workload an AICB file stands for, built rank by rank in program order (GPipe)."""

    def __init__(
        self,
        spec: AicbFile,
        layout: _Layout,
        xpu_of: list[str],
        xpu_flops: Mapping[str, float] | float | None,
        algorithms: Mapping[str, str] | None,
        path: str,
    ) -> None:
        self.spec, self.layout, self.xpu_of, self.path = spec, layout, xpu_of, path
        self.xpu_flops, self.algorithms = xpu_flops, algorithms
        self.skipped = {"zero-time compute": 0, "collective over one rank": 0, "BROADCAST comm": 0}
        # per rank: (vertex, whether it gates the rank's next operator)
        self.chains: dict[int, list[tuple[str, bool]]] = {r: [] for r in range(layout.world)}
        self.w = Workload(name=os.path.basename(path), ranks=xpu_of[: layout.world])

    def build(self) -> Workload:
        """Every micro-batch forward, then every micro-batch backward in reverse; program order as edges."""
        spec, lay = self.spec, self.layout
        dp, pp = lay.dp, lay.pp
        n = len(spec.layers)
        stage_layers = [list(range(p * n // pp, (p + 1) * n // pp)) for p in range(pp)]
        w = self.w
        w.graph.update(samples_per_iteration=spec.ga * dp, batches_per_iteration=spec.ga * dp, source="aicb")
        for m in range(spec.ga):
            for p in range(pp):
                for d in range(dp):
                    for t in range(lay.tp):
                        self._forward(m, p, d, t, stage_layers[p])
        for m in reversed(range(spec.ga)):
            for p in reversed(range(pp)):
                for d in range(dp):
                    for t in range(lay.tp):
                        self._backward(m, p, d, t, stage_layers[p])
        _chain(w, self.chains)
        w.graph["aicb_skipped"] = {k: v for k, v in self.skipped.items() if v}
        if w.number_of_nodes() == 0:
            raise HcsimError(
                f"AICB workload file '{self.path}' has nothing to run (every compute is 0 and every comm NONE)"
            )
        return w

    def _forward(self, m: int, p: int, d: int, t: int, layers: list[int]) -> None:
        r = self.layout.rank(t, d, p)
        if p > 0:
            self._transfer(self.layout.rank(t, d, p - 1), r, f"mb{m}/act{p - 1}->{p}")
        for li in layers:
            layer = self.spec.layers[li]
            self._compute(r, f"mb{m}/L{li}:{layer.name}/fwd", layer.fwd_time)
            self._comm(r, f"mb{m}/L{li}:{layer.name}/fwd-comm", layer.fwd_comm, layer.fwd_bytes, "fwd", t, d, p)

    def _backward(self, m: int, p: int, d: int, t: int, layers: list[int]) -> None:
        """Micro-batch ``m``'s backward on stage ``p``: the stage's layers in reverse, then its input
        gradient to stage p-1; after the last micro-batch (m 0), the weight-gradient comms and updates.

        The gradient from stage p+1 was sent by that stage's own backward (emitted before this one):
        this rank's first backward operator waits for it. The send comes before this stage's
        data-parallel comms and updates, so the previous stage never waits for them (issue 25).
        """
        r = self.layout.rank(t, d, p)
        for li in reversed(layers):
            layer = self.spec.layers[li]
            label = f"mb{m}/L{li}:{layer.name}"
            self._compute(r, f"{label}/ig", layer.ig_time)
            self._comm(r, f"{label}/ig-comm", layer.ig_comm, layer.ig_bytes, "ig", t, d, p)
            self._compute(r, f"{label}/wg", layer.wg_time)
        if p > 0:
            self._transfer(r, self.layout.rank(t, d, p - 1), f"mb{m}/grad{p}->{p - 1}")
        if m == 0:  # the last micro-batch of the backward order: gradients are complete
            for li in reversed(layers):
                layer = self.spec.layers[li]
                self._comm(r, f"L{li}:{layer.name}/wg-comm", layer.wg_comm, layer.wg_bytes, "wg", t, d, p)
                self._compute(r, f"L{li}:{layer.name}/update", layer.update_time)

    def _rate(self, x: str) -> float:
        r = self.xpu_flops.get(x) if isinstance(self.xpu_flops, Mapping) else self.xpu_flops
        if r is None or not r > 0:
            raise HcsimError(
                f"AICB compute times need the FLOP rate of XPU '{x}' (run on a platform or give xpu_flops)"
            )
        return float(r)

    def _group(self, kind: str, phase: str, t: int, d: int, p: int) -> tuple[str, list[int]]:
        """The communicator of a comm, as SimAI picks it: its name and ranks."""
        rank, ep, dp, tp = self.layout.rank, self.layout.ep, self.layout.dp, self.layout.tp
        if kind.endswith("_DP_EP"):
            return f"dpep{t}.{d % ep}.{p}", [rank(t, e, p) for e in range(d % ep, dp, ep)]
        if kind.endswith("_EP"):
            b = d // ep
            return f"ep{t}.{b}.{p}", [rank(t, e, p) for e in range(b * ep, (b + 1) * ep)]
        if phase == "wg":
            return f"dp{t}.{p}", [rank(t, e, p) for e in range(dp)]
        return f"tp{d}.{p}", [rank(s, d, p) for s in range(tp)]

    def _compute(self, r: int, label: str, ns: float) -> None:
        if ns <= 0:
            self.skipped["zero-time compute"] += 1
            return
        x = self.xpu_of[r]
        name = f"{x}/{label}"
        self.w.add_node(name, type="compute", flops=ns * 1e-9 * self._rate(x), location=x, precision="fp32",
                        mem_bytes=0.0, footprint=0.0, is_start=False, rank=r)  # fmt: skip
        self.chains[r].append((name, True))

    def _comm(self, r: int, label: str, kind: str, nbytes: int, phase: str, t: int, d: int, p: int) -> None:
        if kind == "NONE" or nbytes <= 0:
            return
        if kind in IGNORED_TYPES:
            self.skipped["BROADCAST comm"] += 1
            return
        gid, members = self._group(kind, phase, t, d, p)
        if len(members) < 2:
            self.skipped["collective over one rank"] += 1
            return
        name = f"{label}@{gid}"
        if name not in self.w:
            base = KINDS[kind.removesuffix("_DP_EP").removesuffix("_EP")]
            algo = (self.algorithms or {}).get(base, ALGORITHMS[base][0])
            self.w.add_node(name, type="comm", bytes=float(nbytes), kind=base, algorithm=algo,
                            scope=[self.xpu_of[m] for m in members], is_start=False)  # fmt: skip
        self.chains[r].append((name, True))

    def _transfer(self, src: int, dst: int, label: str) -> None:
        xpu_of = self.xpu_of
        name = f"{label}:{xpu_of[src]}->{xpu_of[dst]}"
        self.w.add_node(name, type="comm", bytes=float(self.spec.pp_comm), kind="p2p",
                        algorithm=ALGORITHMS["p2p"][0], scope=[xpu_of[src], xpu_of[dst]], is_start=False)  # fmt: skip
        self.chains[src].append((name, True))
        self.chains[dst].append((name, False))  # the receiver waits for it; it does not wait for the receiver


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
