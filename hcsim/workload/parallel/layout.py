"""A parallel layout ``dp x tp x pp (x ep)`` and the rank mapping that places it on XPUs.

Every XPU holds one *rank* with coordinates ``(d, p, t)``: data-parallel replica ``d``,
pipeline stage ``p``, tensor-parallel slice ``t``. The mapping walks the XPUs in the
topology's order, servers grouped (:meth:`hcsim.collectives.TopologyView.by_server`),
innermost dimension first. The default order ``tp,pp,dp`` (TP groups of consecutive XPUs,
inside one server when ``tp`` divides the server size) is kept for the paper's studies;
:data:`MEGATRON_ORDER` (``tp,dp,pp``) is Megatron-Core's own, which the CLI uses on the DGX
systems when ``ep > 1``. Any permutation, or an explicit list of XPU names in rank order, replaces it.
Expert parallelism is carved out of data parallelism (Megatron-Core): the EP group of rank
``(d, p, t)`` is ``ep`` consecutive replicas at the same ``(p, t)``; with ``etp < tp`` the
expert ranks of a stage are regrouped across TP slices (:mod:`.experts`).

    >>> from hcsim.workload.parallel.layout import Layout, RankGrid
    >>> grid = RankGrid(Layout.parse("dp=2,tp=2,pp=2"), [f"x{i}" for i in range(8)])
    >>> grid.tp_group(0, 1), grid.dp_group(1, 0), grid.stage_ranks(1, 1)
    (['x2', 'x3'], ['x2', 'x6'], ['x6', 'x7'])

:func:`pipeline_split` places the layers on the ``pp x vp`` virtual stages, each on one, in order.
Guide: docs/parallelism.md, "Layout and rank mapping"; docs/training-features.md, "Uneven pipeline stages".
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from hcsim.errors import HcsimError
from hcsim.workload.parallel.experts import expert_group, folded

__all__ = [
    "DEFAULT_ORDER",
    "MEGATRON_ORDER",
    "PIPELINE_SPLITS",
    "Layout",
    "PipelineSplit",
    "RankGrid",
    "experts_order",
    "expert_tp_note",
    "fitting_expert_tp",
    "pipeline_split",
]

DIMENSIONS = ("dp", "tp", "pp", "ep", "cp", "vp", "etp")
DEFAULT_ORDER = ("tp", "pp", "dp")  # innermost first
#: Megatron-Core's rank order ``tp-cp-ep-dp-pp`` (megatron/core/parallel_state.py@d98e8a64 line 617,
#: initialize_model_parallel's default): pipeline stages outermost, so a stage's replicas (and the
#: EP groups carved out of them) sit on consecutive XPUs; cp goes right after tp as in every order here
MEGATRON_ORDER = ("tp", "dp", "pp")


@dataclass(frozen=True)
class Layout:
    """How many ways each kind of parallelism splits the work (``ep`` divides ``dp x cp``).

    ``cp``: context parallelism, the sequence split ``cp`` ways (ranks ``dp x tp x pp x cp``;
    a CP group is ``cp`` ranks of one replica, placed right outside TP as Megatron's
    ``tp-cp-...`` order does). ``vp``: model chunks per pipeline rank (interleaved 1F1B),
    no ranks of its own. ``etp``: Megatron-Core's expert_tensor_parallel_size, the ways each
    expert is split (None: ``tp``, the historical model); ``etp < tp`` regroups a stage's
    expert ranks ``etp x ep x edp`` (:mod:`.experts`), ``ep`` dividing ``(tp/etp) x dp x cp``.
    """

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    cp: int = 1
    vp: int = 1
    etp: int | None = None

    def __post_init__(self) -> None:
        if self.etp is not None and self.etp == self.tp:  # the default spelled out: the same layout
            object.__setattr__(self, "etp", None)

    @property
    def expert_tp(self) -> int:
        """The ways each expert is split (``etp``; default ``tp``)."""
        return self.tp if self.etp is None else self.etp

    @property
    def ranks(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def replicas(self) -> int:
        """Ranks per (stage, TP slice): the data-parallel replicas times their CP slices (the gradient group)."""
        return self.dp * self.cp

    def __str__(self) -> str:
        text = f"dp={self.dp},tp={self.tp},pp={self.pp}"
        text += f",ep={self.ep}" if self.ep > 1 else ""
        text += f",cp={self.cp}" if self.cp > 1 else ""
        text += f",etp={self.etp}" if self.etp is not None else ""
        return text + (f",vp={self.vp}" if self.vp > 1 else "")

    @classmethod
    def parse(cls, text: str, xpus: int | None = None) -> Layout:
        """``"dp=32,tp=8,pp=4[,ep=8][,cp=2][,vp=2][,etp=1]"``; a missing ``dp`` is ``xpus / (tp x pp x cp)``."""
        values: dict[str, int] = {}
        for item in str(text).split(","):
            key, sep, value = item.strip().partition("=")
            key = key.strip().lower()
            if not sep or key not in DIMENSIONS:
                raise HcsimError(
                    f"parallel layout item {item.strip()!r} is invalid (valid: dp=N,tp=N,pp=N[,ep=N][,cp=N][,vp=N]"
                    "[,etp=N])"
                )
            if key in values:
                raise HcsimError(f"parallel layout gives {key} twice in {text!r}")
            try:
                n = int(value)
            except ValueError:
                n = 0
            if n < 1:
                raise HcsimError(f"parallel layout {key}={value.strip()!r} is invalid (valid: an integer >= 1)")
            values[key] = n
        if "dp" not in values and xpus is not None:
            rest = values.get("tp", 1) * values.get("pp", 1) * values.get("cp", 1)
            if xpus % rest:
                what = "tp x pp x cp" if values.get("cp", 1) > 1 else "tp x pp"
                raise HcsimError(
                    f"parallel layout {text!r}: {what} = {rest} does not divide the {xpus} XPUs (valid: a divisor)"
                )
            values["dp"] = xpus // rest
        return cls(**values)

    def check(self, xpus: int, spec: Any | None = None, split: Any = None) -> None:
        """One-line errors for a layout that cannot run ``spec`` (a TransformerSpec) on ``xpus`` XPUs.

        ``split``: the pipeline split (:func:`pipeline_split`; default: even when the layers
        divide ``pp x vp``, else the embedding/loss accounting when that divides).
        """
        if self.ranks != xpus:
            what = "dp x tp x pp x cp" if self.cp > 1 else "dp x tp x pp"
            raise HcsimError(
                f"layout {self} needs {what} = {self.ranks} XPUs but the platform has {xpus} "
                "(valid: a layout whose product is the XPU count)"
            )
        etp = self.expert_tp
        if self.tp % etp:
            raise HcsimError(
                f"layout {self}: etp={etp} does not divide tp={self.tp} (valid: etp dividing tp; hcsim splits "
                "each expert at most as the attention)"
            )
        if etp != self.tp and (self.tp // etp) * self.replicas % self.ep:
            free = (self.tp // etp) * self.replicas
            raise HcsimError(
                f"layout {self}: etp x ep = {etp * self.ep} does not divide tp x dp x cp = {self.tp * self.replicas} "
                f"(Megatron-Core: the world size must be divisible by etp x ep x pp; valid: ep dividing "
                f"(tp/etp) x dp x cp = {free})"
            )
        if etp == self.tp and self.replicas % self.ep:
            over = f"dp x cp={self.replicas}" if self.cp > 1 else f"dp={self.dp}"
            raise HcsimError(
                f"layout {self}: ep={self.ep} does not divide {over} (experts are spread over DP replicas)"
            )
        if self.vp > 1 and self.pp < 2:
            raise HcsimError(f"layout {self}: vp={self.vp} needs pipeline parallelism (valid: pp >= 2, or vp=1)")
        if spec is None:
            return
        if spec.heads % self.tp:
            raise HcsimError(
                f"layout {self}: {spec.name} has {spec.heads} attention heads, not divisible by tp={self.tp} "
                f"(valid: tp dividing {spec.heads})"
            )
        mtp = getattr(spec, "mtp_layers", 0)
        pipeline_split(spec.layers, self.pp, self.vp, split, what=f"layout {self}: {spec.name}", mtp=mtp)
        experts = getattr(spec, "experts", 0)
        if self.ep > 1 and not experts:
            raise HcsimError(f"layout {self}: {spec.name} is a dense model, ep={self.ep} needs a mixture of experts")
        if self.etp is not None and not experts:
            raise HcsimError(f"layout {self}: {spec.name} is a dense model, etp={self.etp} needs a mixture of experts")
        if experts and experts % self.ep:
            raise HcsimError(
                f"layout {self}: {spec.name} has {experts} experts, not divisible by ep={self.ep} "
                f"(valid: ep dividing {experts})"
            )

    def representatives(self, kept: int) -> Layout:
        """The layout of ``kept`` representative XPUs of this layout's system: fewer replicas, whole EP groups."""
        ep_replicas = math.lcm(self.tp, self.expert_tp * self.ep) // self.tp  # replicas of whole EP groups
        per_unit = self.tp * self.pp * math.lcm(ep_replicas, self.cp)
        if kept % per_unit or kept > self.ranks:
            what = "tp x pp x lcm(ep, cp)" if self.cp > 1 else "tp x pp x ep"
            raise HcsimError(
                f"a folded run of layout {self} has {kept} representative XPUs (valid: whole units of "
                f"{what} = {per_unit} XPUs, at most {self.ranks})"
            )
        return replace(self, dp=kept // (self.tp * self.pp * self.cp))


#: the named pipeline splits (an explicit one is a ``(first, last)`` pair of layer counts, either may be None)
PIPELINE_SPLITS = ("even", "account_embedding", "account_loss", "account_embedding_loss")


@dataclass(frozen=True)
class PipelineSplit:
    """Decoder layers per virtual stage ``v = chunk * pp + stage`` (``counts[v]``), and how they were chosen.

    ``name``: "even", one of the ``account_*`` names of :data:`PIPELINE_SPLITS`, or "first_last"
    (explicit first/last stage layer counts, ``first`` and ``last``).
    """

    name: str
    pp: int
    vp: int
    counts: tuple[int, ...]
    first: int | None = None
    last: int | None = None

    @property
    def even(self) -> bool:
        return self.name == "even"

    def layers(self, stage: int, chunk: int) -> range:
        """The global layer indices of chunk ``chunk`` of stage ``stage`` (virtual stage ``chunk * pp + stage``)."""
        v = chunk * self.pp + stage
        start = sum(self.counts[:v])
        return range(start, start + self.counts[v])

    def stage_layers(self, stage: int) -> int:
        """Decoder layers stage ``stage`` holds over its chunks."""
        return sum(self.counts[c * self.pp + stage] for c in range(self.vp))

    def describe(self) -> str:
        """One line: the split and the layers of each stage (per chunk when they differ)."""
        what = {
            "even": "even",
            "account_embedding": "the embedding counted as one layer (Megatron-Core "
            "account_for_embedding_in_pipeline_split)",
            "account_loss": "the loss counted as one layer (Megatron-Core account_for_loss_in_pipeline_split)",
            "account_embedding_loss": "the embedding and the loss each counted as one layer (Megatron-Core "
            "account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split)",
            "account_embedding_loss_mtp": "the embedding, the loss and each MTP module counted as one layer "
            "(Megatron-Bridge's DeepSeek-V3 pipeline layout)",
            "first_last": f"first stage {self.first if self.first is not None else 'even'}, last stage "
            f"{self.last if self.last is not None else 'even'} (Megatron-Core num_layers_in_first/last_pipeline_stage)",
        }[self.name]
        stages = ", ".join(str(self.stage_layers(p)) for p in range(self.pp))
        text = f"pipeline split: {what}; decoder layers per stage {stages}"
        if self.vp > 1:
            common = max(set(self.counts), key=self.counts.count)
            odd = [f"{n} on virtual stage {v}" for v, n in enumerate(self.counts) if n != common]
            text += f"; per virtual stage {common}" + (f" ({', '.join(odd)})" if odd else "")
        return text


def _valid_splits(layers: int) -> str:
    """What would be valid for ``layers`` decoder layers (for a one-line error)."""
    return (
        f"pp x vp dividing {layers} (even), or dividing {layers + 2} (the embedding and the loss each counted as a "
        "layer, as Megatron-Core's account_for_embedding/loss_in_pipeline_split), or explicit first/last stage "
        "layer counts"
    )


def pipeline_split(
    layers: int, pp: int, vp: int = 1, split: Any = None, *, what: str = "model", mtp: int = 0
) -> PipelineSplit:
    """Which layers each virtual stage holds (module docstring); a one-line error naming what is valid.

    ``split``: None (automatic: even when ``pp x vp`` divides ``layers``, else the embedding
    and the loss counted as one layer each when ``pp x vp`` divides ``layers + 2``), a name
    of :data:`PIPELINE_SPLITS`, or ``(first, last)``: the decoder layers of the first and the
    last stage (either may be None: even with the rest), as Megatron-Core's
    ``num_layers_in_first_pipeline_stage`` / ``num_layers_in_last_pipeline_stage``. ``mtp``: a
    model's multi-token-prediction modules, which the automatic split also counts as one layer
    each on the last stage when nothing else divides (Megatron-Bridge's DeepSeek-V3 layout
    ``Et|(tt|)*30mL``: 61 layers on pp x vp = 32); they hold no decoder layer of the split.
    """
    n = pp * vp
    if split is None:
        if layers % n == 0:
            split = "even"
        elif (layers + 2) % n == 0 and (layers + 2) // n >= 1:
            split = "account_embedding_loss"
        elif mtp and (layers + 2 + mtp) % n == 0 and (layers + 2 + mtp) // n >= 1 + mtp:
            counts = [(layers + 2 + mtp) // n] * n
            counts[0] -= 1
            counts[-1] -= 1 + mtp
            return PipelineSplit("account_embedding_loss_mtp", pp, vp, tuple(counts))
        else:
            by = f"pp={pp}" if vp == 1 else f"pp x vp = {pp} x {vp} = {n}"
            raise HcsimError(f"{what} has {layers} layers, not divisible by {by} (valid: {_valid_splits(layers)})")
    if isinstance(split, str):
        if split not in PIPELINE_SPLITS:
            raise HcsimError(
                f"pipeline split {split!r} is unknown (valid: {', '.join(PIPELINE_SPLITS)}, or (first, last) layers)"
            )
        embedding = split in ("account_embedding", "account_embedding_loss")
        loss = split in ("account_loss", "account_embedding_loss")
        total = layers + embedding + loss
        counts = [total // n] * n
        if embedding:
            counts[0] -= 1
        if loss:
            counts[-1] -= 1
        if total % n or min(counts) < 0:
            raise HcsimError(
                f"{what} has {layers} layers: pipeline split {split} needs pp x vp = {pp} x {vp} = {n} dividing "
                f"{total} (valid: {_valid_splits(layers)})"
            )
        return PipelineSplit(split, pp, vp, tuple(counts))
    return _first_last(layers, pp, vp, split, what)


def _first_last(layers: int, pp: int, vp: int, split: Any, what: str) -> PipelineSplit:
    """Megatron-Core's uneven first/last stages (``transformer_config.py``'s checks, one line each)."""
    try:
        first, last = split
    except (TypeError, ValueError):
        first = last = "?"
    bad = [x for x in (first, last) if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 1)]
    if bad or (first is None and last is None):
        raise HcsimError(
            f"pipeline split {split!r} is invalid (valid: {', '.join(PIPELINE_SPLITS)}, or (first, last): the "
            "decoder layers of the first and last stage, integers >= 1, either may be None)"
        )
    if pp < 2:
        raise HcsimError(f"pipeline split (first, last) = {split!r} needs pipeline parallelism (valid: pp >= 2)")
    middle, stages = layers, pp
    for end, count in (("first", first), ("last", last)):
        if count is None:
            continue
        if count % vp:
            raise HcsimError(
                f"{what}: {count} layers on the {end} stage are not divisible by vp={vp} (valid: a multiple of {vp})"
            )
        middle -= count
        stages -= 1
    if middle < 0 or bool(middle) != bool(stages) or (stages and (middle % stages or (middle // stages) % vp)):
        raise HcsimError(
            f"{what} has {layers} layers: first={first}, last={last} leave {max(middle, 0)} for {stages} middle "
            f"stages (valid: a remainder divisible by the middle stages, {stages}, and by vp={vp} per stage)"
        )
    per_middle = middle // stages if stages else 0
    per_stage = [per_middle] * pp
    if first is not None:
        per_stage[0] = first
    if last is not None:
        per_stage[-1] = last
    counts = tuple(per_stage[v % pp] // vp for v in range(pp * vp))
    return PipelineSplit("first_last", pp, vp, counts, first, last)


def experts_order(parallel: str | None, ep: int | None = None) -> tuple[str, ...] | None:
    """:data:`MEGATRON_ORDER` for a ``--parallel`` text (or ``--ep``) with ``ep > 1``, else None (the default).

    What the DGX systems use: Megatron-Core's placement where it matters, EP groups inside a node.

    >>> experts_order("tp=1,pp=2,ep=8"), experts_order("tp=4,pp=4"), experts_order(None, ep=8)
    (('tp', 'dp', 'pp'), None, ('tp', 'dp', 'pp'))
    """
    experts = max(ep or 1, Layout.parse(parallel).ep if parallel else 1)
    return MEGATRON_ORDER if experts > 1 else None


def fitting_expert_tp(layout: Layout) -> Layout:
    """``layout`` with the largest ``etp`` below ``tp`` that fits, when Megatron-Core's default cannot.

    With ``etp`` unset (``tp``), an EP group must lie within DP replicas; when ``ep`` does not
    divide ``dp x cp``, Megatron-Core refuses the layout unless the recipe lowers
    expert_tensor_parallel_size (NVIDIA's H100 MoE recipes set 1). Any other layout is returned as is.

    >>> fitting_expert_tp(Layout(dp=16, tp=2, pp=8, ep=32)).etp, fitting_expert_tp(Layout(dp=8, tp=2, ep=8)).etp
    (1, None)
    """
    if layout.ep < 2 or layout.etp is not None or layout.replicas % layout.ep == 0:
        return layout
    for etp in range(layout.tp - 1, 0, -1):
        if layout.tp % etp == 0 and (layout.tp // etp) * layout.replicas % layout.ep == 0:
            return replace(layout, etp=etp)
    return layout


def expert_tp_note(given: Layout, fitted: Layout) -> str:
    """The one-line note a run prints when :func:`fitting_expert_tp` lowered ``etp``."""
    return (
        f"ep={given.ep} does not divide the {given.replicas} DP replicas with etp=tp (Megatron-Core's default); "
        f"running etp={fitted.etp}, the largest that fits, as NVIDIA's MoE recipes set it (valid: etp=N in --parallel)"
    )


def _order(mapping: str | Sequence[str]) -> tuple[str, ...]:
    names = tuple(s.strip().lower() for s in (mapping.split(",") if isinstance(mapping, str) else mapping))
    if sorted(names) != sorted(DEFAULT_ORDER):
        raise HcsimError(
            f"rank mapping {','.join(names)!r} is invalid (valid: a permutation of tp,pp,dp, innermost first, "
            "or the list of XPU names in rank order)"
        )
    return names


class RankGrid:
    """The XPU of every rank ``(d, p, t)`` of ``layout`` on ``xpus``.

    ``mapping``: ``None`` (``tp,pp,dp``, innermost first), another order of the three
    names, or the XPU names in rank order (rank ``d*pp*tp + p*tp + t``). ``view``: a
    :class:`~hcsim.collectives.TopologyView` whose server grouping orders the XPUs
    (default: ``xpus`` as given, the topology's rank order).

    With context parallelism (``cp > 1``) ``d`` is the replica's CP slice index
    ``dp_index * cp + cp_index`` (``d`` in ``range(dp * cp)``: every rank of one stage and
    TP slice, the group its gradients are reduced over) and ``cp`` is placed right after
    ``tp`` in the order (Megatron's ``tp-cp-...``; an explicit XPU list is in the order
    ``tp, cp, pp, dp``).
    """

    def __init__(
        self, layout: Layout, xpus: Sequence[str], mapping: str | Sequence[str] | None = None, view: Any = None
    ) -> None:
        xpus = list(xpus)
        layout.check(len(xpus))
        self.layout = layout
        explicit = mapping is not None and not isinstance(mapping, str) and not set(mapping) <= set(DEFAULT_ORDER)
        if explicit:
            if sorted(mapping) != sorted(xpus):
                wrong = next((x for x in mapping if x not in set(xpus)), None) or "a repeated XPU"
                raise HcsimError(f"rank mapping names {wrong!r} (valid: each XPU of the platform exactly once)")
            ordered, order = list(mapping), ("tp", "pp", "dp")
        else:
            ordered = [x for server in view.by_server(xpus) for x in server] if view is not None else xpus
            order = DEFAULT_ORDER if mapping is None else _order(mapping)
        cp = layout.cp
        if cp > 1:  # CP right outside TP (Megatron's tp-cp order)
            i = order.index("tp") + 1
            order = (*order[:i], "cp", *order[i:])
        sizes = {"dp": layout.dp, "tp": layout.tp, "pp": layout.pp, "cp": cp}
        self._xpu: dict[tuple[int, int, int], str] = {}
        ranges = [range(sizes[name]) for name in reversed(order)]  # outermost first
        for i, coords in enumerate(itertools.product(*ranges)):
            c = dict(zip(reversed(order), coords, strict=True))
            self._xpu[(c["dp"] * cp + c.get("cp", 0), c["pp"], c["tp"])] = ordered[i]

    def xpu(self, d: int, p: int, t: int) -> str:
        return self._xpu[(d, p, t)]

    def tp_group(self, d: int, p: int) -> list[str]:
        return [self._xpu[(d, p, t)] for t in range(self.layout.tp)]

    def stage_ranks(self, d: int, p: int) -> list[str]:
        """The XPUs of stage ``p`` of replica ``d`` (its TP group)."""
        return self.tp_group(d, p)

    def dp_group(self, p: int, t: int) -> list[str]:
        """The ranks of stage ``p``, TP slice ``t`` over the replicas (and their CP slices: dp x cp)."""
        return [self._xpu[(d, p, t)] for d in range(self.layout.replicas)]

    def cp_group(self, d: int, p: int, t: int) -> list[str]:
        """The ``cp`` ranks sharing replica ``d // cp``'s sequences at stage ``p``, TP slice ``t``."""
        first = d - d % self.layout.cp
        return [self._xpu[(c, p, t)] for c in range(first, first + self.layout.cp)]

    def ep_group(self, d: int, p: int, t: int) -> list[str]:
        """The EP group of rank ``(d, p, t)`` (with ``etp < tp`` across TP slices: :mod:`.experts`)."""
        if folded(self.layout):
            return [self._xpu[(e, p, u)] for e, u in expert_group(self.layout, d, t, "ep")]
        first = d - d % self.layout.ep
        return [self._xpu[(e, p, t)] for e in range(first, first + self.layout.ep)]

    def expert_dp_group(self, d: int, p: int, t: int) -> list[str]:
        """The replicas holding the same experts as ``d`` (whose expert gradients are summed)."""
        if folded(self.layout):
            return [self._xpu[(e, p, u)] for e, u in expert_group(self.layout, d, t, "edp")]
        ep = self.layout.ep
        return [self._xpu[(e, p, t)] for e in range(d % ep, self.layout.replicas, ep)]

    def expert_tp_group(self, d: int, p: int, t: int) -> list[str]:
        """The ``etp`` ranks splitting the same experts as rank ``(d, p, t)`` (its TP group when ``etp = tp``)."""
        return [self._xpu[(e, p, u)] for e, u in expert_group(self.layout, d, t, "etp")]
