"""Memoized rounds: every collective that is not a ring, round by round or whole.

With ``memoize=True`` :class:`MemoizedRounds` runs every other communication vertex
(trees, halving-doubling, direct, hierarchical, all-to-all, p2p, plug-ins, MSCCL-IR)
from its :class:`~hcsim.collectives.plans.FlowPlan` alone: its *rounds*
(:func:`plan_rounds`: dependency levels, joins transparent) run round-synchronously
where the plan is :func:`aligned` and even, and a round measured alone on its links is
*skipped* (one timer) when a round of the same signature starts on quiet links. Other
plans run exact and are skipped *whole* with the timeline of a run that was alone.

Invariant: a round or plan in progress or skipped claims its links in the
:class:`~hcsim.fast.ledger.LinkLedger`, and is skipped only where the ledger says the
links are quiet (no flow, no claim, no ring in progress); a flow starting on a skipped
round's links interrupts it. What is exact and what is approximated:
``docs/fast-paths.md`` ("Memoized rounds").
"""

from __future__ import annotations

from typing import Any

from hcsim.collectives import FlowPlan, TopologyView, algorithm, build_plan
from hcsim.engine.records import COMM, ActivityKey, VertexRun
from hcsim.errors import HcsimError
from hcsim.fast.ledger import LinkLedger

__all__ = ["MemoizedRounds", "RoundRun", "WholeRun", "aligned", "plan_rounds"]

EPS = 1e-9


def plan_rounds(fp: FlowPlan) -> list[tuple[int, ...]]:
    """The rounds (dependency levels) of a plan: real flows only, in plan order within a round."""
    n = len(fp)
    waits = list(fp.waits)
    after = [0] * n  # a real flow: its round + 1; a join: the latest `after` of what it waits for
    level = [0] * n  # the round a flow waits for: the latest `after` of its predecessors
    stack = [f for f in range(n) if waits[f] == 0]
    size, releases = fp.size, fp.releases
    while stack:
        f = stack.pop()
        after[f] = level[f] + 1 if size[f] else level[f]
        for g in releases[f]:
            if after[f] > level[g]:
                level[g] = after[f]
            waits[g] -= 1
            if not waits[g]:
                stack.append(g)
    if any(waits):
        raise HcsimError("a collective's flow plan has a dependency cycle (valid: flows that can be ordered)")
    rounds: list[list[int]] = [[] for _ in range(max(after, default=0))]
    for f in range(n):
        if size[f]:
            rounds[level[f]].append(f)
    return [tuple(r) for r in rounds]


def aligned(fp: FlowPlan, rounds: list[tuple[int, ...]]) -> bool:
    """Whether a rank proceeds to round r+1 only once everything sent to it in round r has arrived.

    That is: each flow of round r+1 waits (directly or through joins) for every flow of
    round r that ends where it starts. Then the round barrier holds a rank back only for
    traffic it would have waited for anyway, up to its own other sends. A plan where a
    flow may start when one of several arrivals has come (the shared-memory allreduce:
    a read waits for one write into that memory) is not aligned and runs exact.
    """
    round_of = {f: i for i, flows in enumerate(rounds) for f in flows}
    preds: list[set[int]] = [set() for _ in range(len(fp))]
    for f, out in enumerate(fp.releases):
        for g in out:
            preds[g].add(f)
    into: dict[tuple[int, str], list[int]] = {}  # (round, destination) -> flows
    for f, r in round_of.items():
        into.setdefault((r, fp.dst[f]), []).append(f)
    for g, r in round_of.items():
        if not r:
            continue
        needed = into.get((r - 1, fp.src[g]))
        if not needed:
            continue
        reach, stack = set(), list(preds[g])
        while stack:  # real predecessors, seen through joins
            f = stack.pop()
            if f in reach:
                continue
            reach.add(f)
            if not fp.size[f]:
                stack.extend(preds[f])
        if not reach.issuperset(needed):
            return False
    return True


class RoundRun(VertexRun):
    """A communication vertex execution run round by round; it claims its round's links in the ledger."""

    __slots__ = ("rounds", "index", "left", "round_start", "quiet", "skip", "fraction", "own", "strategy")

    def __init__(self, v: int, k: int, start: float, rounds: Any, strategy: Any) -> None:
        super().__init__(v, k, start, 0)
        self.own = self  # the run its flows' keys name
        self.strategy = strategy
        self.rounds = rounds  # the vertex's _Rounds
        self.index = -1  # the round in progress
        self.left = 0  # flows of the round still in SimGrid
        self.round_start = start
        self.quiet = False  # the round in SimGrid has been alone on its links so far (and is whole)
        self.skip: tuple[float, float, int] | None = None  # (since, duration, timer handle) while skipped
        self.fraction = 1.0  # of each flow's bytes launched in this round (< 1 after an interrupted skip)

    def crossed(self, started: bool, now: float) -> None:
        """Another flow started (or ended) on a link of the round: a skip is interrupted, nothing is measured."""
        if started and self.skip is not None:
            self.strategy._interrupt(self, now)
        self.quiet = False


class WholeRun(VertexRun):
    """A plan run whole: by the exact strategy (measured when alone), or skipped with its measured timeline."""

    __slots__ = ("own", "quiet", "skip", "links", "key", "ends", "strategy")

    def __init__(self, v: int, k: int, start: float, links: frozenset[str], key: Any, strategy: Any) -> None:
        super().__init__(v, k, start, 0)
        self.own: Any = None  # the exact strategy's run of it
        self.strategy = strategy
        self.quiet = False
        self.skip: tuple[float, float, int] | None = None
        self.links, self.key = links, key
        self.ends: dict[int, float] | None = None  # flow -> when it ended, while measured

    def crossed(self, started: bool, now: float) -> None:
        """Another flow started (or ended) on the plan's links: a skip is replayed up to now, nothing is measured."""
        if started and self.skip is not None:
            self.strategy._interrupt_whole(self, now)
        self.quiet = False


class _Rounds:
    """What a vertex's rounds need at run time, computed once per vertex."""

    __slots__ = ("order", "links", "flow_links", "signature", "even")

    def __init__(self) -> None:
        self.even = True  # every round but the last has flows of one signature entry each (none ends early)
        self.order: list[int] = []  # round number -> index into the per-distinct-round lists below
        self.links: list[frozenset[str]] = []  # links a round's flows cross
        self.flow_links: list[list[frozenset[str]]] = []  # per round, per flow: its links
        self.signature: list[int] = []  # interned signature of the round


class MemoizedRounds:
    """Runs non-ring communication vertices round by round, skipping what repeats (see the module docstring)."""

    def __init__(self, execution: Any, exact: Any, ledger: LinkLedger) -> None:
        self.execution = execution
        self.exact = exact  # runs the plans whose rounds are not aligned
        self.ledger = ledger  # routes, flows in flight, claims of rounds and runs (skipped or not), rings in progress
        self.signatures: dict[tuple, int] = {}  # round signature -> id
        self.measured: dict[int, float] = {}  # signature id -> duration alone on the network
        self.per_plan: dict[int, _Rounds] = {}  # plan id -> its rounds' links and signatures (vertices share plans)
        self.whole_of: dict[int, tuple[Any, frozenset[str]]] = {}  # vertex -> (plan key, links) of a plan run whole
        self.whole_runs: dict[int, WholeRun] = {}  # vertex -> its execution run whole, in progress
        # plan key -> (duration, each entry's start and end after the plan's start) of a run alone on the network
        self.timelines: dict[Any, tuple[float, list[float], list[float]]] = {}
        self.rounds_of: dict[int, list[tuple[int, ...]]] = {}

    # ------------------------------------------------------------------ the strategy protocol
    def handles(self, data: dict[str, Any]) -> bool:
        return data["kind"] == "p2p" or not algorithm(data["kind"], data["algorithm"]).ring

    def plan(self, data: dict[str, Any], view: TopologyView) -> FlowPlan:
        fp = build_plan(data["kind"], data["algorithm"], data["scope"], data["bytes"], view, group=data.get("group"))
        self.ledger.count_load()  # from its first vertex on (runs of rings only pay nothing)
        rounds = plan_rounds(fp)
        widest = max((len(r) for r in rounds), default=0)
        limit = self.execution.options.max_flows_at_once
        if widest > limit:
            raise HcsimError(
                f"{data['kind']} '{data['algorithm']}' over {len(data['scope'])} ranks runs {widest} flows in one "
                f"round, more than the engine's {limit} at once (valid: fewer ranks, another algorithm, or a higher "
                "HCSIM_MAX_FLOWS_AT_ONCE)"
            )
        self.rounds_of[id(fp)] = rounds if aligned(fp, rounds) else None
        return fp

    def launch(self, v: int, k: int, now: float) -> None:
        fp = self.execution.flow_plans[v]
        if self.rounds_of[id(fp)] is not None:
            rounds = self.per_plan.get(id(fp))
            if rounds is None:
                rounds = self.per_plan[id(fp)] = self._prepare(v)
            if rounds.even:
                self._next_round(RoundRun(v, k, now, rounds, self), now)
                return
        self._launch_whole(v, k, now)

    def complete(self, act: Any, key: ActivityKey, now: float) -> None:
        r = key[2]
        if r.__class__ is not RoundRun:  # a plan run whole, by the exact strategy
            w = self.whole_runs.get(r.v)
            if w is not None and w.ends is not None:
                w.ends[key[3]] = now
            self.exact.complete(act, key, now)
            if w is not None and self.whole_runs.get(r.v) is w and not r.pending:
                self._whole_done(w, now)
            return
        r.left -= 1
        if not r.left:
            self._round_done(r, now)

    def timer(self, key: tuple, now: float) -> None:
        """A skipped round or whole plan has ended (an interrupted skip's timer is cancelled)."""
        r = key[1]
        r.skip = None
        if r.__class__ is WholeRun:
            self._whole_done(r, now)
            self.execution.finish(r, now)
            return
        self._round_done(r, now)

    # ------------------------------------------------------------------ plans run whole
    def _launch_whole(self, v: int, k: int, now: float) -> None:
        """A plan that is not run round by round: skipped whole if it ran alone before and its links are quiet."""
        x = self.execution
        fp = x.flow_plans[v]
        if not fp.flows:
            self.exact.launch(v, k, now)
            return
        old = self.whole_runs.get(v)
        if old is not None and old.own is not None and not old.own.pending:  # its last flow is being handed back
            self._whole_done(old, now)
        info = self.whole_of.get(v)
        if info is None:
            d = x.data[v]
            key = (d["kind"], d["algorithm"], tuple(d["scope"]), d["bytes"], d.get("group"))
            src, dst = x.flow_hosts[v]
            route = self.ledger.route
            links = frozenset().union(*(route(src[f], dst[f]).links for f in range(len(fp)) if fp.size[f]))
            info = self.whole_of[v] = (key, links)
        key, links = info
        w = WholeRun(v, k, now, links, key, self)
        busy = not self.ledger.quiet(links)
        self.whole_runs[v] = w
        timeline = self.timelines.get(key)
        if timeline is not None and not busy:
            self.ledger.claim(w, links)
            handle = x.driver.add_timer(now + timeline[0], (self, w))
            w.skip = (now, timeline[0], handle)
            x.result.memoized_flows += fp.flows
            return
        w.quiet, w.ends = not busy, {}
        w.own = self.exact.launch(v, k, now)  # its first flows start before it claims its links: they are its own
        self.ledger.claim(w, links)

    def _whole_done(self, w: WholeRun, now: float) -> None:
        """The plan's execution is over: release its links; if it ran alone, keep its timeline."""
        self.ledger.release(w, w.links)
        del self.whole_runs[w.v]
        if w.quiet and w.ends is not None and w.key not in self.timelines:
            fp = self.execution.flow_plans[w.v]
            starts, ends = [0.0] * len(fp), [0.0] * len(fp)
            waits = list(fp.waits)
            stack = [f for f in range(len(fp)) if not waits[f]]
            while stack:  # entries in dependency order: a flow starts when the last it waits for has ended
                f = stack.pop()
                ends[f] = w.ends[f] - w.start if fp.size[f] else starts[f]
                for g in fp.releases[f]:
                    starts[g] = max(starts[g], ends[f])
                    waits[g] -= 1
                    if not waits[g]:
                        stack.append(g)
            self.timelines[w.key] = (now - w.start, starts, ends)

    def _interrupt_whole(self, w: WholeRun, now: float) -> None:
        """A flow starts on a skipped plan's links: replay its timeline up to now, then run the rest exact.

        Entries that had ended by now are done; flows under way get the fraction of their bytes the
        timeline had not moved yet (a constant rate over each flow); the rest wait for their flows as usual.
        """
        since, _, handle = w.skip  # type: ignore[misc]
        x = self.execution
        x.driver.cancel_timer(handle)
        w.skip, w.quiet, w.ends = None, False, None
        fp = x.flow_plans[w.v]
        _, starts, ends = self.timelines[w.key]
        t = now - since
        done = [end <= t for end in ends]
        waits = [0] * len(fp)
        for f, out in enumerate(fp.releases):
            if not done[f]:
                for g in out:
                    waits[g] += 1
        run = VertexRun(w.v, w.k, w.start, done.count(False), waits)
        w.own = run
        src, dst = x.flow_hosts[w.v]
        launched = [f for f in range(len(fp)) if not done[f] and not waits[f] and fp.size[f]]
        left = sum(1 for f in range(len(fp)) if not done[f] and fp.size[f])
        x.result.memoized_flows -= left
        x.result.activities += left
        for f in launched:
            span = ends[f] - starts[f]
            fraction = (ends[f] - t) / span if span > 0 else 1.0
            nbytes = max(1, int(round(fp.size[f] * min(1.0, fraction))))
            x.flow(src[f], dst[f], nbytes, (x, COMM, run, f), now)

    # ------------------------------------------------------------------ rounds
    def _prepare(self, v: int) -> _Rounds:
        """Each round's links and signature (rounds with one flow list share them)."""
        x = self.execution
        fp = x.flow_plans[v]
        src, dst = x.flow_hosts[v]
        out = _Rounds()
        seen: dict[int, int] = {}
        ledger = self.ledger
        classes = ledger.link_classes
        for flows in self.rounds_of[id(fp)]:
            at = seen.get(id(flows))
            if at is None:
                routes = [ledger.route(src[f], dst[f]).links for f in flows]
                count: dict[str, int] = {}
                for names in routes:
                    for link in names:
                        count[link] = count.get(link, 0) + 1
                entries = [
                    (fp.size[f], tuple(sorted((classes[link], count[link]) for link in names)))
                    for f, names in zip(flows, routes, strict=True)
                ]
                sig = tuple(sorted(entries))
                if len(out.order) + 1 < len(self.rounds_of[id(fp)]) and sig[0] != sig[-1]:
                    out.even = False
                at = seen[id(flows)] = len(out.links)
                out.links.append(frozenset(count))
                out.flow_links.append(routes)
                out.signature.append(self.signatures.setdefault(sig, len(self.signatures)))
            out.order.append(at)
        return out

    def _next_round(self, r: RoundRun, now: float) -> None:
        x = self.execution
        rs = r.rounds
        r.index += 1
        if r.index >= len(rs.order):
            x.finish(r, now)
            return
        at = rs.order[r.index]
        links = rs.links[at]
        busy = not self.ledger.quiet(links)
        self.ledger.claim(r, links)
        r.round_start, r.fraction = now, 1.0
        flows = self.rounds_of[id(x.flow_plans[r.v])][r.index]
        d = self.measured.get(rs.signature[at])
        if d is not None and not busy:
            handle = x.driver.add_timer(now + d, (self, r))
            r.skip, r.quiet = (now, d, handle), False
            x.result.memoized_flows += len(flows)
            return
        r.quiet = not busy
        self._launch(r, flows, rs.flow_links[at], 1.0, now)

    def _launch(self, r: RoundRun, flows: tuple[int, ...], flow_links: list, fraction: float, now: float) -> None:
        x = self.execution
        fp = x.flow_plans[r.v]
        src, dst = x.flow_hosts[r.v]
        size = fp.size
        r.left, r.fraction = len(flows), fraction
        x.result.activities += len(flows)
        flow = x.flow
        for f, links in zip(flows, flow_links, strict=True):
            nbytes = size[f] if fraction == 1.0 else max(1, int(round(size[f] * fraction)))
            flow(src[f], dst[f], nbytes, ActivityKey(x, COMM, r, f), now, links)

    def _round_done(self, r: RoundRun, now: float) -> None:
        rs = r.rounds
        at = rs.order[r.index]
        if r.quiet and r.fraction == 1.0:
            self.measured.setdefault(rs.signature[at], now - r.round_start)
        self.ledger.release(r, rs.links[at])
        self._next_round(r, now)

    def _interrupt(self, r: RoundRun, now: float) -> None:
        """A flow starts on a skipped round's links: launch what the round had left in SimGrid."""
        since, d, handle = r.skip  # type: ignore[misc]
        done = (now - since) / d if d > 0 else 1.0
        if done >= 1.0 - EPS:  # it ends at this very instant: let its timer end it
            return
        x = self.execution
        x.driver.cancel_timer(handle)
        r.skip = None
        rs = r.rounds
        at = rs.order[r.index]
        flows = self.rounds_of[id(x.flow_plans[r.v])][r.index]
        x.result.memoized_flows -= len(flows)
        self._launch(r, flows, rs.flow_links[at], 1.0 - done, now)
        r.quiet = False
