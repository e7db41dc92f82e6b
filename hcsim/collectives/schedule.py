"""A collective algorithm's output: flows with dependencies, and the shards they carry.

An algorithm (built in, a plug-in, or read from MSCCL-IR) turns ranks and a size into a
:class:`Schedule`: a list of :class:`Flow` (src, dst, bytes) where each flow starts once
the flows it lists in ``after`` have completed. The engine runs every flow as a real
SimGrid flow that contends with all other traffic (:mod:`hcsim.engine.exact`). A *join*
(:meth:`Schedule.join`) stands for "all of these flows have completed" (no data, no
time) and keeps fan-ins cheap: N flows waiting for the same N flows cost 2N
dependencies instead of N^2. A *relayed* flow (``via``) is one transfer forwarded through
a third host at fine grain (NCCL's PXN: a GPU writes over NVLink to the GPU whose NIC
sends): its plan runs both hops at once, each carrying the bytes, and what waits for the
flow waits for both (cut-through pipelining; for the check it is a flow from src to dst).
A schedule's ``delay`` is a fixed time its collective takes after its last flow (NCCL's
per-step latencies, summed: docs/collectives.md, "NCCL rings").

Invariant: with ``shards`` declared (which pieces of the collective's data each flow
carries), :func:`check_schedule` proves that the schedule delivers what its kind
promises, so a wrong schedule cannot pass on timing alone.

Guide: docs/collectives.md, "Schedules, flows and shards".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hcsim.collectives.plans import FlowPlan
from hcsim.errors import HcsimError

__all__ = ["Flow", "Schedule"]


@dataclass(frozen=True)
class Flow:
    """``nbytes`` from rank ``src`` to rank ``dst``, once the flows ``after`` (indices) have completed."""

    src: str
    dst: str
    nbytes: float
    after: tuple[int, ...] = ()
    shards: tuple[int, ...] = ()  # pieces of the collective's data it carries (for the data-movement check)
    join: bool = False  # a join: no data, no time; done when every flow of ``after`` is (Schedule.join)
    via: str = ""  # relayed through this host: both hops at once (see the module docstring)


@dataclass
class Schedule:
    """The flows of one collective over ``ranks`` (``kind``: allreduce, allgather, ...).

    ``shards``: how many pieces the data is cut into for the data-movement check (0:
    no check); ``coherent``: the algorithm relies on coherent memory (the reduced data
    must exist once, anywhere, not on every rank); ``steps``: the number of dependent
    rounds, for reports; ``pools``: memory hosts (not ranks) that flows may also start or
    end at, e.g. the CXL memory of :meth:`TopologyView.memory` for in-fabric algorithms.
    """

    kind: str
    ranks: list[str]
    flows: list[Flow] = field(default_factory=list)
    shards: int = 0
    coherent: bool = False
    steps: int = 0
    name: str = ""
    pools: list[str] = field(default_factory=list)
    delay: float = 0.0

    def add(
        self, src: str, dst: str, nbytes: float, after: tuple[int, ...] | list[int] = (), shards=(), via: str = ""
    ) -> int:
        """Append a flow (``via``: relayed through that rank); returns its index (for other flows' ``after``)."""
        self.flows.append(Flow(src, dst, nbytes, tuple(after), tuple(shards), via=via))
        return len(self.flows) - 1

    def join(self, after: tuple[int, ...] | list[int]) -> int:
        """A point that is reached when every flow (or join) in ``after`` has completed; returns its index.

        Flows that all wait for the same many flows wait for one join instead::

            >>> s = Schedule("gather", ["a", "b", "c"])
            >>> done = s.join([s.add("b", "a", 8), s.add("c", "a", 8)])
            >>> s.add("a", "b", 16, [done]), s.to_plan().waits
            (3, [0, 0, 2, 1])
        """
        self.flows.append(Flow("", "", 0.0, tuple(after), (), join=True))
        return len(self.flows) - 1

    def validate(self, scope: list[str] | None = None) -> None:
        """One-line errors naming the flow: endpoints outside the scope, bad sizes, dependency cycles."""
        ranks = set(self.ranks if scope is None else scope) | set(self.pools)
        what = f"algorithm '{self.name or '?'}' ({self.kind})"
        n = len(self.flows)
        for i, f in enumerate(self.flows):
            if f.join:
                for d in f.after:
                    if not (isinstance(d, int) and 0 <= d < n) or d == i:
                        raise HcsimError(f"{what}: join {i} waits for flow {d!r}, which does not exist (0..{n - 1})")
                continue
            for end in (f.src, f.dst):
                if end not in ranks:
                    raise HcsimError(f"{what}: flow {i} ({f.src} -> {f.dst}) names rank '{end}', outside the scope")
            if f.src == f.dst:
                raise HcsimError(f"{what}: flow {i} sends from '{f.src}' to itself (valid: two different ranks)")
            if f.via and (f.via not in ranks or f.via in (f.src, f.dst)):
                raise HcsimError(f"{what}: flow {i} ({f.src} -> {f.dst}) is relayed via '{f.via}' "
                                 "(valid: a third rank of the scope)")  # fmt: skip
            if isinstance(f.nbytes, bool) or not isinstance(f.nbytes, int | float) or not 0 <= f.nbytes < math.inf:
                raise HcsimError(f"{what}: flow {i} has {f.nbytes!r} bytes (valid: a finite number >= 0)")
            for d in f.after:
                if not (isinstance(d, int) and 0 <= d < n) or d == i:
                    raise HcsimError(f"{what}: flow {i} waits for flow {d!r}, which does not exist (0..{n - 1})")
            for s in f.shards:
                if not (isinstance(s, int) and 0 <= s < self.shards):
                    raise HcsimError(f"{what}: flow {i} carries shard {s!r} (valid: 0..{self.shards - 1})")
        if not (isinstance(self.delay, int | float) and 0 <= self.delay < math.inf):
            raise HcsimError(f"{what}: delay {self.delay!r} (valid: seconds >= 0)")
        self.order()

    def order(self) -> list[int]:
        """The flows in an order where each comes after those it waits for; a cycle is an error."""
        n = len(self.flows)
        waits = [len(set(f.after)) for f in self.flows]
        released: list[list[int]] = [[] for _ in range(n)]
        for i, f in enumerate(self.flows):
            for d in set(f.after):
                released[d].append(i)
        ready = [i for i in range(n) if waits[i] == 0]
        out = []
        while ready:
            i = ready.pop()
            out.append(i)
            for j in released[i]:
                waits[j] -= 1
                if waits[j] == 0:
                    ready.append(j)
        if len(out) < n:
            stuck = min(i for i in range(n) if waits[i] > 0)
            raise HcsimError(
                f"algorithm '{self.name or '?'}' ({self.kind}): flow {stuck} is in a dependency cycle "
                "(valid: every flow waits only for flows that can complete before it)"
            )
        return out

    def to_plan(self) -> FlowPlan:
        """The engine's form: sizes in whole bytes (a 0-byte flow carries 1: SimGrid never ends one of 0).

        A relayed flow becomes three entries: its two hops (both released when the flow
        would be) and a join that the flow's dependents wait for.
        """
        if any(f.via for f in self.flows):
            return self._relayed().to_plan()
        n = len(self.flows)
        releases: list[list[int]] = [[] for _ in range(n)]
        waits = []
        for i, f in enumerate(self.flows):
            deps = sorted(set(f.after))
            waits.append(len(deps))
            for d in deps:
                releases[d].append(i)
        size = [0 if f.join else max(1, int(round(f.nbytes))) for f in self.flows]
        joins = sum(f.join for f in self.flows)
        fp = FlowPlan(
            [f.src for f in self.flows], [f.dst for f in self.flows], size, waits, releases, self.steps or n, joins
        )
        fp.delay = float(self.delay)
        return fp

    def _relayed(self) -> Schedule:
        """This schedule with every relayed flow as its two hops and a join (for :meth:`to_plan`)."""
        out = Schedule(self.kind, self.ranks, [], self.shards, self.coherent, self.steps, self.name, self.pools,
                       self.delay)  # fmt: skip
        where: list[int] = []  # flow i of self -> the index its dependents wait for in ``out``
        for f in self.flows:
            after = tuple(where[d] for d in f.after)
            if f.join:
                where.append(out.join(after))
            elif f.via:
                first = out.add(f.src, f.via, f.nbytes, after)
                second = out.add(f.via, f.dst, f.nbytes, after)
                where.append(out.join((first, second)))
            else:
                where.append(out.add(f.src, f.dst, f.nbytes, after))
        out.steps = self.steps or len(self.flows)
        return out
