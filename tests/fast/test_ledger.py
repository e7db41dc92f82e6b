"""The link ledger on its own: routes, flows in flight, listeners, claims and quiet links.

The ledger only reads hosts' routes and keys, so plain stand-ins do here; the fast paths
that use it are held to the exact engine by the other tests of this directory.
"""

from __future__ import annotations

from hcsim.fast.ledger import LinkLedger


class _Link:
    def __init__(self, name: str, bandwidth: float = 1e9, latency: float = 1e-6) -> None:
        self.name, self.bandwidth, self.latency = name, bandwidth, latency

    def get_sharing_policy(self) -> str:
        return "SHARED"


class _Host:
    def __init__(self, name: str, routes: dict[str, list[_Link]]) -> None:
        self.name, self.routes, self.asked = name, routes, 0

    def route_to(self, dst: _Host) -> tuple[list[_Link], float]:
        self.asked += 1
        links = self.routes[dst.name]
        return links, sum(link.latency for link in links)


class _Driver:
    def __init__(self) -> None:
        self.observers: list = []

    def observe(self, observer) -> None:
        self.observers.append(observer)


class _Execution:
    def __init__(self) -> None:
        self.driver = _Driver()


class _Listener:
    def __init__(self, name: str, log: list) -> None:
        self.name, self.log = name, log

    def flow_started(self, act, key, src, dst, links, now) -> None:
        self.log.append((self.name, "started", act, tuple(sorted(links)), now))

    def flow_ended(self, act, key, links, now) -> None:
        self.log.append((self.name, "ended", act, tuple(sorted(links)), now))


class _Holder:
    def __init__(self, own) -> None:
        self.own, self.told = own, []

    def crossed(self, started: bool, now: float) -> None:
        self.told.append((started, now))


def _network():
    a, b, c = _Link("ab"), _Link("bc"), _Link("ab2")
    hosts = {
        "x": _Host("x", {"y": [a, b], "z": [c, b]}),
        "y": _Host("y", {}),
        "z": _Host("z", {}),
    }
    return hosts


def test_routes_are_read_once_and_alike_routes_share_a_signature():
    x = _Execution()
    ledger = LinkLedger(x)
    assert x.driver.observers == [ledger]  # the one observer of the driver's flows
    h = _network()
    first = ledger.route(h["x"], h["y"])
    assert ledger.route(h["x"], h["y"]) is first and h["x"].asked == 1
    assert first.links == {"ab", "bc"} and first.path == ("ab", "bc") and first.latency == 2e-6
    other = ledger.route(h["x"], h["z"])
    assert other.links != first.links and other.signature == first.signature  # same attributes, other links
    assert ledger.link_classes["ab"] == (1e9, 1e-6, "SHARED")


def test_listeners_hear_of_each_flow_after_the_ledger_recorded_it_in_the_order_they_listen():
    ledger = LinkLedger(_Execution())
    h = _network()
    log: list = []
    seen_inflight = []

    class First(_Listener):
        def flow_started(self, act, key, src, dst, links, now) -> None:
            seen_inflight.append((act in ledger.inflight, ledger.events))
            super().flow_started(act, key, src, dst, links, now)

    ledger.listen(First("first", log))
    ledger.listen(_Listener("second", log))
    thawed = []
    ledger.thaw = thawed.append
    key = (None, 4, object(), 0)
    ledger.flow_started("f1", key, h["x"], h["y"], None, 1.0)  # links from the route
    assert thawed == [1.0] and seen_inflight == [(True, 1)]
    ledger.thaw = None
    ledger.flow_started("f2", key, h["x"], h["z"], frozenset({"given"}), 2.0)  # links as the caller knows them
    ledger.flow_ended("f1", key, 3.0)
    assert log == [
        ("first", "started", "f1", ("ab", "bc"), 1.0),
        ("second", "started", "f1", ("ab", "bc"), 1.0),
        ("first", "started", "f2", ("given",), 2.0),
        ("second", "started", "f2", ("given",), 2.0),
        ("first", "ended", "f1", ("ab", "bc"), 3.0),
        ("second", "ended", "f1", ("ab", "bc"), 3.0),
    ]
    assert list(ledger.inflight) == ["f2"] and ledger.events == 3


def test_quiet_links_have_no_flow_no_claim_and_no_ring_and_claims_hear_of_other_flows():
    ledger = LinkLedger(_Execution())
    h = _network()
    ab_bc = ledger.route(h["x"], h["y"]).links
    ledger.occupy(ab_bc)  # before count_load: not counted (no one asks yet)
    assert not ledger.rings_on
    ledger.count_load()
    mine, other = object(), object()
    holder = _Holder(mine)
    ledger.claim(holder, frozenset({"bc"}))
    assert not ledger.quiet(frozenset({"bc"})) and ledger.quiet(frozenset({"ab"}))
    ledger.flow_started("own", (None, 4, mine, 0), h["x"], h["y"], None, 1.0)
    assert holder.told == []  # its own flow does not disturb it
    assert not ledger.quiet(frozenset({"ab"}))  # a flow in flight
    ledger.flow_started("f", (None, 4, other, 0), h["x"], h["y"], None, 2.0)
    ledger.flow_ended("f", (None, 4, other, 0), 3.0)
    assert holder.told == [(True, 2.0), (False, 3.0)]
    ledger.flow_ended("own", (None, 4, mine, 0), 4.0)
    ledger.release(holder, frozenset({"bc"}))
    assert ledger.quiet(ab_bc) and not ledger.claims and ledger.load == {"ab": 0, "bc": 0}
    ledger.occupy(frozenset({"ab"}))  # a ring in progress: its links are not quiet
    ledger.occupy(frozenset({"ab"}))
    ledger.vacate(frozenset({"ab"}))
    assert not ledger.quiet(frozenset({"ab"}))
    ledger.vacate(frozenset({"ab"}))
    assert ledger.quiet(frozenset({"ab"})) and not ledger.rings_on
