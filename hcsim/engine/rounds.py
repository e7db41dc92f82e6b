"""Memoized rounds: a fast path for every collective, behind the strategy seam.

With ``memoize=True`` an :class:`~hcsim.engine.execution.Execution` runs the ring
algorithms with :class:`~hcsim.engine.memoize.MemoizedRings` and every other
communication vertex (trees, halving-doubling, direct, hierarchical, 2D rings,
all-to-all, chains, p2p, plug-ins and MSCCL-IR schedules) with :class:`MemoizedRounds`.
Nothing here knows an algorithm: it reads the vertex's
:class:`~hcsim.collectives.plans.FlowPlan` only.

**Rounds.** The flows of a plan fall into *rounds*, its dependency levels: a flow
waiting for nothing is in round 0; a flow waiting for flows is one round after the
latest of them; a join (an entry of size 0) is transparent (what waits for a join waits
for what the join waits for). A flow of round r thus depends only on flows of earlier
rounds. The vertex runs *round-synchronously*: all flows of a round start together, and
the next round starts when the last one has ended.

**Signatures.** A round's signature is the multiset, over its flows, of (bytes, the
route's links as (bandwidth, latency, sharing policy, how many of the round's flows
cross that link)). Two rounds with one signature are the same max-min problem up to
renaming links whenever no two of their flows' bottlenecks are coupled differently
through links the signature does not tell apart (true of every round of the library's
algorithms on the paper systems and the fat trees: checked against the exact engine by
``tests/test_memoize_collectives.py``, not proven in general).

**Skipping.** A round is *quiet* if, from its start to its end, no flow but its own
crossed its links (none in flight when it started, none starting or ending meanwhile):
it was alone, so its duration d depends on its signature only. A later round (of this
vertex or of any other) with the same signature that starts while nothing is in flight
on its links, and no other skipped round claims them, is *skipped*: no SimGrid activity,
one driver timer at start + d. Leaving it out of SimGrid changes no other flow's rate
(nothing else is on its links). If a flow starts on its links meanwhile, the skip is
*interrupted*: each flow of the round is launched in SimGrid with the fraction of its
bytes the skip had not yet moved (the round is taken to move bytes at a constant
rate), and the round ends with them.

**The latency-bound case.** A skipped round costs one timer whatever its flows'
latency: nothing is materialised flow by flow, so a latency-bound round that repeats
(100-200 us per hop) costs the same as a bandwidth-bound one.

What is exact and what is approximated (numbers in ``docs/fast-paths.md``):

* exact: a skipped round takes the measured duration of a round with its signature that
  ran alone; SimGrid is deterministic, so that is the time it would take alone again;
  rounds that meet other traffic run in SimGrid, flow by flow;
* approximated: (1) round synchronisation: the exact engine starts a flow as soon as
  the flows it waits for have ended, not when its whole round has; ranks drift apart
  by amounts a round-synchronous run does not have (a pipelined tree lets a fast
  branch run ahead); (2) an interrupted skip splits each flow's bytes by the elapsed
  fraction of the round and pays each flow's latency again; (3) the signature is a
  strong hash of the max-min problem, not a canonical form of it.

Like :class:`~hcsim.engine.memoize.MemoizedRings` it observes the driver
(:class:`~hcsim.engine.driver.FlowObserver`): every flow started through the driver,
of this execution or any other sharing it, counts as traffic.
"""

from __future__ import annotations

from typing import Any

from hcsim.collectives import FlowPlan, TopologyView, algorithm, build_plan
from hcsim.engine.exact import max_flows_at_once
from hcsim.engine.records import COMM, ActivityKey, VertexRun
from hcsim.errors import HcsimError

__all__ = ["MemoizedRounds", "RoundRun", "aligned", "plan_rounds"]

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
    """A communication vertex execution run round by round."""

    __slots__ = ("rounds", "index", "left", "round_start", "quiet", "skip", "fraction")

    def __init__(self, v: int, k: int, start: float, rounds: Any) -> None:
        super().__init__(v, k, start, 0)
        self.rounds = rounds  # the vertex's _Rounds
        self.index = -1  # the round in progress
        self.left = 0  # flows of the round still in SimGrid
        self.round_start = start
        self.quiet = False  # the round in SimGrid has been alone on its links so far (and is whole)
        self.skip: tuple[float, float, int] | None = None  # (since, duration, timer handle) while skipped
        self.fraction = 1.0  # of each flow's bytes launched in this round (< 1 after an interrupted skip)


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

    def __init__(self, execution: Any, exact: Any) -> None:
        self.execution = execution
        self.exact = exact  # runs the plans whose rounds are not aligned
        self.routes: dict[tuple[str, str], tuple[frozenset[str], tuple]] = {}  # (src, dst) -> links, link classes
        self.link_class: dict[str, tuple] = {}
        self.signatures: dict[tuple, int] = {}  # round signature -> id
        self.measured: dict[int, float] = {}  # signature id -> duration alone on the network
        self.load: dict[str, int] = {}  # link -> flows in flight on it (all flows the driver started)
        self.claims: dict[str, list[RoundRun]] = {}  # link -> runs whose current round (real or skipped) crosses it
        self.inflight: dict[Any, frozenset[str]] = {}
        self.per_vertex: dict[int, _Rounds] = {}
        self.rounds_of: dict[int, list[tuple[int, ...]]] = {}
        execution.driver.observe(self)

    # ------------------------------------------------------------------ the strategy protocol
    def handles(self, data: dict[str, Any]) -> bool:
        return data["kind"] == "p2p" or not algorithm(data["kind"], data["algorithm"]).ring

    def plan(self, data: dict[str, Any], view: TopologyView) -> FlowPlan:
        fp = build_plan(data["kind"], data["algorithm"], data["scope"], data["bytes"], view, group=data.get("group"))
        rounds = plan_rounds(fp)
        widest = max((len(r) for r in rounds), default=0)
        limit = max_flows_at_once()
        if widest > limit:
            raise HcsimError(
                f"{data['kind']} '{data['algorithm']}' over {len(data['scope'])} ranks runs {widest} flows in one "
                f"round, more than the engine's {limit} at once (valid: fewer ranks, another algorithm, or a higher "
                "HCSIM_MAX_FLOWS_AT_ONCE)"
            )
        self.rounds_of[id(fp)] = rounds if aligned(fp, rounds) else None
        return fp

    def launch(self, v: int, k: int, now: float) -> None:
        if self.rounds_of[id(self.execution.flow_plans[v])] is None:
            self.exact.launch(v, k, now)
            return
        rounds = self.per_vertex.get(v)
        if rounds is None:
            rounds = self.per_vertex[v] = self._prepare(v)
        if not rounds.even:
            self.exact.launch(v, k, now)
            return
        r = RoundRun(v, k, now, rounds)
        self._next_round(r, now)

    def complete(self, act: Any, key: ActivityKey, now: float) -> None:
        r = key[2]
        if r.__class__ is not RoundRun:  # a plan run by the exact strategy
            self.exact.complete(act, key, now)
            return
        r.left -= 1
        if not r.left:
            self._round_done(r, now)

    def timer(self, key: tuple, now: float) -> None:
        """A skipped round has ended (an interrupted skip's timer is cancelled)."""
        r = key[1]
        r.skip = None
        self._round_done(r, now)

    # ------------------------------------------------------------------ observing the network
    def flow_started(self, act: Any, key: Any, src: Any, dst: Any, links: Any, now: float) -> None:
        if links is None:
            links = self._route(src, dst)[0]
        self.inflight[act] = links
        load, claims = self.load, self.claims
        owner = key[2]
        for link in links:
            load[link] = load.get(link, 0) + 1
            held = claims.get(link)
            if held:
                for r in list(held):
                    if r is not owner:
                        if r.skip is not None:
                            self._interrupt(r, now)
                        r.quiet = False

    def flow_ended(self, act: Any, key: Any, now: float) -> None:
        links = self.inflight.pop(act)
        load, claims = self.load, self.claims
        owner = key[2]
        for link in links:
            load[link] -= 1
            held = claims.get(link)
            if held:
                for r in held:
                    if r is not owner:
                        r.quiet = False

    # ------------------------------------------------------------------ rounds
    def _route(self, src: Any, dst: Any) -> tuple[frozenset[str], tuple]:
        key = (src.name, dst.name)
        hit = self.routes.get(key)
        if hit is None:
            links, _ = src.route_to(dst)
            classes = self.link_class
            for link in links:
                if link.name not in classes:
                    classes[link.name] = (link.bandwidth, link.latency, str(link.get_sharing_policy()))
            hit = self.routes[key] = (frozenset(link.name for link in links), tuple(link.name for link in links))
        return hit

    def _prepare(self, v: int) -> _Rounds:
        """Each round's links and signature (rounds with one flow list share them)."""
        x = self.execution
        fp = x.flow_plans[v]
        src, dst = x.flow_hosts[v]
        out = _Rounds()
        seen: dict[int, int] = {}
        classes = self.link_class
        for flows in self.rounds_of[id(fp)]:
            at = seen.get(id(flows))
            if at is None:
                routes = [self._route(src[f], dst[f]) for f in flows]
                count: dict[str, int] = {}
                for names, _ in routes:
                    for link in names:
                        count[link] = count.get(link, 0) + 1
                entries = [
                    (fp.size[f], tuple(sorted((classes[link], count[link]) for link in names)))
                    for f, (names, _) in zip(flows, routes, strict=True)
                ]
                sig = tuple(sorted(entries))
                if len(out.order) + 1 < len(self.rounds_of[id(fp)]) and sig[0] != sig[-1]:
                    out.even = False
                at = seen[id(flows)] = len(out.links)
                out.links.append(frozenset(count))
                out.flow_links.append([names for names, _ in routes])
                out.signature.append(self.signatures.setdefault(sig, len(self.signatures)))
            out.order.append(at)
        return out

    def _claim(self, r: RoundRun, links: frozenset[str]) -> None:
        claims = self.claims
        for link in links:
            held = claims.get(link)
            if held is None:
                claims[link] = [r]
            else:
                held.append(r)

    def _release(self, r: RoundRun, links: frozenset[str]) -> None:
        claims = self.claims
        for link in links:
            held = claims[link]
            held.remove(r)
            if not held:
                del claims[link]

    def _busy(self, r: RoundRun, links: frozenset[str]) -> bool:
        """Whether any flow is in flight on ``links``, or another run's round claims one of them."""
        load, claims = self.load, self.claims
        for link in links:
            if load.get(link) or claims.get(link):
                return True
        return False

    def _next_round(self, r: RoundRun, now: float) -> None:
        x = self.execution
        rs = r.rounds
        r.index += 1
        if r.index >= len(rs.order):
            x.finish(r, now)
            return
        at = rs.order[r.index]
        links = rs.links[at]
        busy = self._busy(r, links)
        self._claim(r, links)
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
        self._release(r, rs.links[at])
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
