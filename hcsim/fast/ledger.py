"""The link ledger: per link, every flow the fast strategies put on the network, seen or not.

One :class:`LinkLedger` per execution is the only observer of its driver's flows. It
holds the route cache, every flow in SimGrid (its links and key), and the traffic
SimGrid does not see: rounds claimed or skipped, rings in progress (whose skipped steps,
virtual flows or frozen components hold links with nothing in SimGrid). The fast
strategies (:mod:`.ring_steps`, :mod:`.rounds`) and their features read and write it
instead of keeping their own copies or asking each other.

Invariant: a link is *quiet* (:meth:`LinkLedger.quiet`) only if no flow of SimGrid, no
claim and no ring in progress is on it; listeners are told of each flow start and end
after the ledger recorded it, in the order they listen. The API and the words are in
``docs/fast-paths.md`` ("How the fast paths are built", "Glossary").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

__all__ = ["LinkLedger", "LinkUsers", "Route"]

OTHER_FLOWS_SCANNED = 200_000
"""At most this many flow entries of vertices other than ring layouts are read by :meth:`LinkLedger.users`."""


class Route(NamedTuple):
    """A route between two hosts, as the fast paths read it."""

    links: frozenset[str]  # link names (each direction of a duplex link has its own)
    path: tuple[str, ...]  # the same, in path order
    latency: float
    signature: tuple  # (latency, the sorted link classes): routes of one signature are alike


class LinkUsers(NamedTuple):
    """What an execution's plans may put on each link (read once, before the run's rings start)."""

    vertices: dict[str, set[tuple[int, bool]]]  # link -> (vertex, starts flows while running) of non-ring flows
    layouts: dict[str, list[tuple]]  # link -> the ring layouts crossing it
    layout_vertices: dict[tuple, list[int]]  # ring layout -> its vertices


class Holder(Protocol):
    """What claims links (:meth:`LinkLedger.claim`): told of every other flow starting or ending on them."""

    own: Any  # flows whose key names this run are the holder's own

    def crossed(self, started: bool, now: float) -> None: ...


class LinkLedger:
    """Routes, flows in flight and claims per link, for one execution (see the module docstring)."""

    def __init__(self, execution: Any) -> None:
        self.execution = execution
        self.routes: dict[tuple[str, str], Route] = {}
        self.link_classes: dict[str, tuple] = {}  # link -> (bandwidth, latency, sharing policy)
        self.inflight: dict[Any, tuple[frozenset[str], Any]] = {}  # every flow in SimGrid -> its links and key
        self.events = 0  # flow starts and ends so far
        # per link, from the first count_load(): flows in flight, holders of claims, rings in progress
        self.load: dict[str, int] = {}
        self.claims: dict[str, list[Holder]] = {}
        self.rings_on: dict[str, int] = {}
        self.counting = False
        self.thaw: Callable[[float], None] | None = None  # set while a component is frozen (background.py)
        self._started: tuple[Callable[..., None], ...] = ()
        self._ended: tuple[Callable[..., None], ...] = ()
        self._users: LinkUsers | None = None
        self._users_read = False
        execution.driver.observe(self)

    # ------------------------------------------------------------------ routes
    def route(self, src: Any, dst: Any) -> Route:
        """The route from host ``src`` to host ``dst`` (routes recur: cached)."""
        key = (src.name, dst.name)
        hit = self.routes.get(key)
        if hit is None:
            links, latency = src.route_to(dst)
            classes = self.link_classes
            for link in links:
                if link.name not in classes:
                    classes[link.name] = (link.bandwidth, link.latency, str(link.get_sharing_policy()))
            path = tuple(link.name for link in links)
            signature = (latency, tuple(sorted(classes[name] for name in path)))
            hit = self.routes[key] = Route(frozenset(path), path, latency, signature)
        return hit

    # ------------------------------------------------------------------ listeners
    def listen(self, listener: Any) -> None:
        """Tell ``listener`` of every flow from now on, after the listeners before it.

        It has ``flow_started(act, key, src, dst, links, now)`` and ``flow_ended(act, key, links, now)``.
        """
        self._started += (listener.flow_started,)
        self._ended += (listener.flow_ended,)

    def flow_started(self, act: Any, key: Any, src: Any, dst: Any, links: Any, now: float) -> None:
        thaw = self.thaw
        if thaw is not None:  # anything that starts ends a freeze (before it is recorded)
            thaw(now)
        if links is None:
            links = self.route(src, dst).links
        self.inflight[act] = (links, key)
        self.events += 1
        for started in self._started:
            started(act, key, src, dst, links, now)

    def flow_ended(self, act: Any, key: Any, now: float) -> None:
        thaw = self.thaw
        if thaw is not None:
            thaw(now)
        links = self.inflight.pop(act)[0]
        self.events += 1
        for ended in self._ended:
            ended(act, key, links, now)

    # ------------------------------------------------------------------ per-link counts and claims
    def count_load(self) -> None:
        """Keep per-link counts of flows, claims and rings from now on (call before the run starts; idempotent)."""
        if not self.counting:
            self.counting = True
            self._started += (self._count_started,)
            self._ended += (self._count_ended,)

    def _count_started(self, act: Any, key: Any, src: Any, dst: Any, links: frozenset[str], now: float) -> None:
        load, claims = self.load, self.claims
        owner = key[2]
        for link in links:
            load[link] = load.get(link, 0) + 1
            held = claims.get(link)
            if held:
                for h in list(held):
                    if h.own is not owner:
                        h.crossed(True, now)

    def _count_ended(self, act: Any, key: Any, links: frozenset[str], now: float) -> None:
        load, claims = self.load, self.claims
        owner = key[2]
        for link in links:
            load[link] -= 1
            held = claims.get(link)
            if held:
                for h in held:
                    if h.own is not owner:
                        h.crossed(False, now)

    def claim(self, holder: Holder, links: frozenset[str]) -> None:
        """``holder`` is on ``links`` (in SimGrid or not) until it releases them."""
        claims = self.claims
        for link in links:
            held = claims.get(link)
            if held is None:
                claims[link] = [holder]
            else:
                held.append(holder)

    def release(self, holder: Holder, links: frozenset[str]) -> None:
        claims = self.claims
        for link in links:
            held = claims[link]
            held.remove(holder)
            if not held:
                del claims[link]

    def occupy(self, links: frozenset[str]) -> None:
        """A ring in progress is on ``links``: it may hold them with nothing in SimGrid."""
        if self.counting:
            on = self.rings_on
            for link in links:
                on[link] = on.get(link, 0) + 1

    def vacate(self, links: frozenset[str]) -> None:
        if self.counting:
            on = self.rings_on
            for link in links:
                if on[link] == 1:
                    del on[link]
                else:
                    on[link] -= 1

    def quiet(self, links: frozenset[str]) -> bool:
        """No flow in flight, no claim and no ring in progress on any of ``links`` (needs :meth:`count_load`)."""
        load, claims, on = self.load, self.claims, self.rings_on
        for link in links:
            if load.get(link) or claims.get(link) or on.get(link):
                return False
        return True

    # ------------------------------------------------------------------ what may come
    def users(self, is_ring: Callable[[int], bool]) -> LinkUsers | None:
        """What the execution's plans may put on each link, read once; ``is_ring(v)``: ``v`` runs as a ring layout.

        Other flows are the remote-memory flows of compute vertices (started when the
        vertex starts) and the flows of every communication vertex not run as a ring
        (started while it runs). None if there are more than :data:`OTHER_FLOWS_SCANNED`
        of those to read.
        """
        if not self._users_read:
            self._users_read = True
            self._users = self._read_users(is_ring)
        return self._users

    def _read_users(self, is_ring: Callable[[int], bool]) -> LinkUsers | None:
        x = self.execution
        layouts: dict[tuple, tuple[frozenset[str], list[int]]] = {}
        pairs: dict[tuple[Any, Any], set[tuple[int, bool]]] = {}
        scanned = 0
        for v, fp in enumerate(x.flow_plans):
            if fp is None:
                cp = x.compute_plan[v]
                if cp is not None and cp.remote is not None:
                    pairs.setdefault((cp.remote, cp.host), set()).add((v, False))
                continue
            src, dst = x.flow_hosts[v]
            if is_ring(v):
                key = tuple((a.name, b.name) for a, b in zip(src, dst, strict=True))
                known = layouts.get(key)
                if known is None:
                    links = frozenset().union(*(self.route(a, b).links for a, b in zip(src, dst, strict=True)))
                    known = layouts[key] = (links, [])
                known[1].append(v)
                continue
            scanned += len(src)
            if scanned > OTHER_FLOWS_SCANNED:
                return None
            for a, b in zip(src, dst, strict=True):
                if a is not None and b is not None:
                    pairs.setdefault((a, b), set()).add((v, True))
        vertices: dict[str, set[tuple[int, bool]]] = {}
        for (a, b), users in pairs.items():
            for link in self.route(a, b).links:
                vertices.setdefault(link, set()).update(sorted(users))
        by_link: dict[str, list[tuple]] = {}
        for key, (links, _) in layouts.items():
            for link in links:
                by_link.setdefault(link, []).append(key)
        return LinkUsers(vertices, by_link, {key: found for key, (_, found) in layouts.items()})
