"""SimGrid never crashes under hcsim: platform files it would abort or segfault on are refused in one line.

Issue 25, item 3. Each refusal class has a hand-made file here (SimGrid 4.1 aborts,
segfaults or stops mid-run on every one of them without hcsim's checks); each shape
SimGrid itself accepts (power states of speed 0, clusters, bypass routes, Full zones with
routes missing between hosts that never talk) must be accepted. The files mirror the
shapes of SimGrid's own examples/platforms (docs/platform.md, "SimGrid's examples"
has the count over all of them); they are written here, not copied.

Route oracle: for Full, Floyd and Dijkstra zones the pairs without a route follow from the
file alone (a Full zone routes exactly the pairs it lists; Floyd and Dijkstra zones those
joined by a chain of routes), and :func:`hcsim.platform.probe.host_facts` must find
exactly them.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest
from clitools import assert_one_line_error, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hcsim.cli.platform import refuse_unrouted
from hcsim.errors import HcsimError
from hcsim.platform import probe
from hcsim.platform.probe import host_facts, simulate_transfers
from hcsim.workload import Workload

DOCTYPE = '<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
ALLREDUCE = ("--workload", "allreduce", "--bytes", "1MB", "--iterations", "1")


def platform(body: str, config: str = "") -> str:
    """A SimGrid 4.1 platform file around ``body`` (zones), with ``config`` <prop>s if any."""
    conf = f"<config>{config}</config>\n" if config else ""
    return f'{DOCTYPE}<platform version="4.1">\n{conf}{body}\n</platform>\n'


def hosts(*names: str, speed: str = "1Gf") -> str:
    return "".join(f'<host id="{n}" speed="{speed}"/>' for n in names)


def full_zone(names: list[str], routes: list[tuple[str, str]], routing: str = "Full", zone: str = "z") -> str:
    """A zone of ``names`` with one link per route (symmetrical, as SimGrid's default)."""
    links = "".join(f'<link id="l{i}" bandwidth="1GBps" latency="1us"/>' for i in range(len(routes)))
    rs = "".join(f'<route src="{a}" dst="{b}"><link_ctn id="l{i}"/></route>' for i, (a, b) in enumerate(routes))
    return f'<zone id="{zone}" routing="{routing}">{hosts(*names)}{links}{rs}</zone>'


LINE = full_zone(["a", "b", "c"], [("a", "b"), ("b", "c")])  # a - b - c, no route a - c
TWO_ZONES = (
    '<zone id="w" routing="Full"><zone id="z1" routing="Full"><host id="a" speed="1Gf"/></zone>'
    '<zone id="z2" routing="Full"><host id="b" speed="1Gf"/></zone>{routes}</zone>'
)
FAT_TREE = 'topology="FAT_TREE" topo_parameters="2;4,4;1,2;1,2"'
TORUS = 'topology="TORUS" topo_parameters="4,4"'
BAD_DRAGONFLY = 'topology="DRAGONFLY" topo_parameters="1;2"'
VIVALDI = (
    '<zone id="v" routing="Vivaldi"><host id="a" speed="1Gf" coordinates="1 2 3"/>'
    '<host id="b" speed="1Gf" coordinates="4 5 6"/></zone>'
)
CLUSTER = '<cluster id="c" prefix="n" suffix="" radical="0-{last}" speed="1Gf" bw="1GBps" lat="1us" {extra}/>'

# ---------------------------------------------------------------- refused, one line each

REFUSED = {
    # no zone: SimGrid 4.1 aborts ("no zone under construction")
    "host-outside-zone": (platform(hosts("a")), r"host 'a' is outside any zone"),
    "no-zone-at-all": (platform(""), r"has no zone"),
    # unknown models: SimGrid aborts on the config value
    "network-model-unknown": (
        platform(LINE, '<prop id="network/model" value="Frobnicate"/>'),
        r"network/model to 'Frobnicate'.*LV08, CM02, SMPI, Constant, raw",
    ),
    "network-model-ns3": (
        platform(LINE, '<prop id="network/model" value="ns-3"/>'),
        r"network/model to 'ns-3', which SimGrid 4.1 does not have",
    ),
    "host-model-unknown": (platform(LINE, '<prop id="host/model" value="nope"/>'), r"host/model to 'nope'"),
    # zones SimGrid builds and then aborts on (or hcsim cannot follow)
    "vivaldi-without-coordinates": (
        platform(f'<zone id="v" routing="Vivaldi">{hosts("a", "b")}</zone>'),
        r"host 'a' in Vivaldi zone 'v' has coordinates '', which SimGrid 4.1 aborts on",
    ),
    "vivaldi-two-coordinates": (
        platform(VIVALDI.replace('"4 5 6"', '"4 5"')),
        r"host 'b' in Vivaldi zone 'v' has coordinates '4 5'.*three numbers",
    ),
    "vivaldi-sub-zones-without-coordinates": (
        platform(
            '<zone id="v" routing="Vivaldi"><zone id="z1" routing="Full"><host id="a" speed="1Gf"/></zone>'
            '<zone id="z2" routing="Full"><host id="b" speed="1Gf"/></zone></zone>'
        ),
        r"SimGrid crashed \(SIGABRT\) resolving the route from host 'a' to host 'b': Please specify the Vivaldi "
        r"coordinates of Netzone z1",
    ),
    "wifi-zone": (
        platform(
            '<zone id="w" routing="Wifi"><prop id="access_point" value="r"/><router id="r"/>'
            f'{hosts("a", "b")}<link id="ap" sharing_policy="WIFI" bandwidth="54Mbps,36Mbps" latency="0ms"/></zone>'
        ),
        r"zone 'w' has routing 'Wifi'",
    ),
    "routing-none-two-hosts": (
        platform(f'<zone id="z" routing="None">{hosts("a", "b")}</zone>'),
        r"zone 'z' has routing 'None' and 2 hosts.*aborts",
    ),
    "routing-unknown": (platform(LINE.replace('"Full"', '"Frob"')), r"routing 'Frob'.*Full"),
    "peer-outside-vivaldi": (
        platform('<zone id="z" routing="Full"><peer id="p" speed="1Gf" bw_in="1GBps" bw_out="1GBps"/></zone>'),
        r"peer 'p' is a <peer> outside a Vivaldi zone",
    ),
    # failures and profiles
    "host-state-file": (
        platform(LINE.replace('<host id="a" speed="1Gf"/>', '<host id="a" speed="1Gf" state_file="f.profile"/>')),
        r"host 'a' has state_file 'f.profile': hcsim runs without failures",
    ),
    "host-speed-file": (
        platform(LINE.replace('<host id="a" speed="1Gf"/>', '<host id="a" speed="1Gf" speed_file="s.txt"/>')),
        r"host 'a' has speed_file 's.txt'",
    ),
    "link-bandwidth-file": (
        platform(LINE.replace('latency="1us"/>', 'latency="1us" bandwidth_file="b.txt"/>', 1)),
        r"link 'l0' has bandwidth_file",
    ),
    "trace-connect": (
        platform(
            LINE + '<trace id="t" periodicity="1">0 1\n1 0\n</trace>'
            '<trace_connect kind="HOST_AVAIL" trace="t" element="a"/>'
        ),
        r"has a <trace> profile",
    ),
    "actor-deployment": (platform(LINE + '<actor host="a" function="f"/>'), r"has an <actor>"),
    "tracing-config": (
        platform(LINE, '<prop id="tracing" value="yes"/><prop id="tracing/filename" value="/tmp/x.trace"/>'),
        r"sets tracing: SimGrid would write its own trace file",
    ),
    # malformed values
    "initial-pstate-off": (
        platform(LINE.replace('<host id="a" speed="1Gf"/>', '<host id="a" speed="1Gf,0f" pstate="1"/>')),
        r"host 'a' has speed '1Gf,0f'.*0 only in a state other than pstate 1",
    ),
    "pstate-out-of-range": (
        platform(LINE.replace('<host id="a" speed="1Gf"/>', '<host id="a" speed="1Gf,2Gf" pstate="2"/>')),
        r"host 'a' has pstate '2' \(valid: an integer from 0 to 1",
    ),
    "speed-negative-state": (
        platform(LINE.replace('<host id="a" speed="1Gf"/>', '<host id="a" speed="1Gf,-1f"/>')),
        r"speed '1Gf,-1f'",
    ),
    "fat-tree-cluster-outside-zone": (
        platform(CLUSTER.format(last=15, extra=FAT_TREE)),
        r"cluster 'c' is a FAT_TREE cluster outside any zone, which SimGrid 4.1 crashes on",
    ),
    # SimGrid aborts or crashes while loading: its own reason, in one line
    "dragonfly-bad-parameters": (
        platform(f'<zone id="w" routing="Full">{CLUSTER.format(last=7, extra=BAD_DRAGONFLY)}</zone>'),
        r"SimGrid crashed \(SIGABRT\): Dragonfly are defined by the number of groups",
    ),
    # SimGrid crashes resolving a route between two zones that have none
    "zones-without-zone-route": (
        platform(TWO_ZONES.format(routes="")),
        r"SimGrid crashed \(SIGABRT\) resolving the route from host 'a' to host 'b': No Gateway.*zoneRoute",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_check_refuses_in_one_line(tmp_path, name):
    xml, match = REFUSED[name]
    (tmp_path / "p.xml").write_text(xml)
    r = run("platform", "check", tmp_path / "p.xml")
    assert_one_line_error(r, "p.xml")
    assert re.search(match, r.stderr), r.stderr
    assert "core dumped" not in r.stderr and "Backtrace" not in r.stderr


@pytest.mark.parametrize("name", ["no-zone-at-all", "network-model-ns3", "routing-none-two-hosts", "host-state-file",
                                  "dragonfly-bad-parameters", "zones-without-zone-route"])  # fmt: skip
def test_run_refuses_the_same_files_in_one_line(tmp_path, name):
    xml, match = REFUSED[name]
    (tmp_path / "p.xml").write_text(xml)
    r = run("run", "--platform", tmp_path / "p.xml", *ALLREDUCE)
    assert_one_line_error(r, "p.xml")
    assert re.search(match, r.stderr), r.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "p.xml"]  # SimGrid wrote nothing (no core, no trace)


def test_a_missing_route_is_refused_by_run_once_the_workload_makes_the_hosts_talk(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(platform(LINE))
    r = run("platform", "check", path)
    assert r.returncode == 0, r.stderr
    assert "routes resolved: all 6 XPU pairs, 2 without a route" in r.stdout
    assert "SimGrid has no route for 2 of 6 XPU pairs (first: 'a' to 'c')" in r.stderr
    # a ring allreduce over a, b, c sends c -> a: SimGrid would abort mid-run ("no connecting path")
    assert_one_line_error(
        run("run", "--platform", path, *ALLREDUCE), "no route from host 'c' to host 'a'", "vertex 'allreduce'"
    )


# ---------------------------------------------------------------- accepted as SimGrid accepts them


def _p2p(tmp_path, src: str, dst: str) -> str:
    w = Workload()
    w.add_comm("send", 1e6, "p2p", [src, dst], is_start=True)
    path = tmp_path / "w.json"
    w.to_json(path)
    return str(path)


RING4 = full_zone(["a", "b", "c", "d"], [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")])  # no a - c, no b - d


def _comm(tmp_path, kind: str, algorithm: str | None = None) -> str:
    w = Workload()
    w.add_comm("x", 1e6, kind, ["a", "b", "c", "d"], algorithm=algorithm, is_start=True)
    path = tmp_path / f"{kind}-{algorithm}.json"
    w.to_json(path)
    return str(path)


def test_a_ring_allreduce_runs_on_ring_routes_and_what_sends_across_is_refused(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(platform(RING4))
    r = run("platform", "check", path)
    assert r.returncode == 0 and "all 12 XPU pairs, 4 without a route" in r.stdout, r.stderr
    # the ring a -> b -> c -> d -> a uses routed pairs only: SimGrid runs it, so does hcsim
    r = run("run", "--platform", path, *ALLREDUCE)
    assert r.returncode == 0, r.stderr
    # the direct all-to-all sends a -> c; an algorithm of unknown flows counts every pair of its scope
    for workload, pair in ((_comm(tmp_path, "alltoall"), "'a' to host 'c'"),
                           (_comm(tmp_path, "allreduce", "halving_doubling"), "'a' to host 'c'")):  # fmt: skip
        r = run("run", "--platform", path, "--workload", workload, "--iterations", "1")
        assert_one_line_error(r, f"no route from host {pair}", "vertex 'x'")


def test_a_full_zone_missing_routes_between_hosts_that_never_talk_runs(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(platform(LINE))
    r = run("run", "--platform", path, "--workload", _p2p(tmp_path, "a", "b"), "--iterations", "1",
            "--network-model", "raw", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    # raw model, one flow alone: latency + size / bandwidth (1 us + 1e6 B / 1e9 B/s)
    assert json.loads(r.stdout)["makespan_s"] == pytest.approx(1e-6 + 1e-3, rel=1e-9)


ACCEPTED = {
    "power-states-with-0f": platform(
        full_zone(["a", "b"], [("a", "b")]).replace(
            '<host id="a" speed="1Gf"/>', '<host id="a" speed="100Mf,50Mf,20Mf,0f,0f" pstate="0"/>'
        )
    ),
    "initial-pstate-not-first": platform(
        full_zone(["a", "b"], [("a", "b")]).replace(
            '<host id="a" speed="1Gf"/>', '<host id="a" speed="0f,1Gf" pstate="1"/>'
        )
    ),
    "star-cluster": platform(CLUSTER.format(last=7, extra="")),
    "cluster-with-backbone": platform(CLUSTER.format(last=7, extra='bb_bw="10GBps" bb_lat="1us"')),
    "fat-tree-cluster": platform(f'<zone id="w" routing="Full">{CLUSTER.format(last=15, extra=FAT_TREE)}</zone>'),
    "torus-cluster": platform(f'<zone id="w" routing="Full">{CLUSTER.format(last=15, extra=TORUS)}</zone>'),
    "zones-with-zone-route": platform(
        TWO_ZONES.format(
            routes='<link id="l" bandwidth="1GBps" latency="1us"/>'
            '<zoneRoute src="z1" dst="z2" gw_src="a" gw_dst="b"><link_ctn id="l"/></zoneRoute>'
        )
    ),
    "bypass-zone-route": platform(
        '<zone id="w" routing="Full"><zone id="z1" routing="Full"><host id="a" speed="1Gf"/><router id="g1"/>'
        '<link id="la" bandwidth="1GBps" latency="1us"/><route src="a" dst="g1"><link_ctn id="la"/></route></zone>'
        '<zone id="z2" routing="Full"><host id="b" speed="1Gf"/><router id="g2"/>'
        '<link id="lb" bandwidth="1GBps" latency="1us"/><route src="b" dst="g2"><link_ctn id="lb"/></route></zone>'
        '<link id="slow" bandwidth="1MBps" latency="1ms"/><link id="fast" bandwidth="10GBps" latency="1us"/>'
        '<zoneRoute src="z1" dst="z2" gw_src="g1" gw_dst="g2"><link_ctn id="slow"/></zoneRoute>'
        '<bypassZoneRoute src="z1" dst="z2" gw_src="g1" gw_dst="g2"><link_ctn id="fast"/></bypassZoneRoute></zone>'
    ),
    "dijkstra-over-full-and-floyd": platform(
        '<zone id="big" routing="Dijkstra">'
        '<zone id="z1" routing="Full"><host id="a" speed="1Gf"/><router id="g1"/>'
        '<link id="la" bandwidth="1GBps" latency="1us"/><route src="a" dst="g1"><link_ctn id="la"/></route></zone>'
        f'<zone id="z2" routing="Floyd">{hosts("b", "c")}<router id="g2"/>'
        '<link id="lb" bandwidth="1GBps" latency="1us"/><link id="lc" bandwidth="1GBps" latency="1us"/>'
        '<route src="b" dst="g2"><link_ctn id="lb"/></route><route src="c" dst="g2"><link_ctn id="lc"/></route>'
        '<bypassRoute src="b" dst="c"><link_ctn id="lb"/></bypassRoute></zone>'
        '<link id="bb" bandwidth="1GBps" latency="1us"/>'
        '<zoneRoute src="z1" dst="z2" gw_src="g1" gw_dst="g2"><link_ctn id="bb"/></zoneRoute></zone>'
    ),
    "vivaldi-with-coordinates": platform(VIVALDI),
    "cm02-model-config": platform(
        full_zone(["a", "b", "c"], [("a", "b"), ("b", "c"), ("a", "c")]), '<prop id="network/model" value="CM02"/>'
    ),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_shapes_simgrid_accepts_are_checked_and_run(tmp_path, name):
    path = tmp_path / "p.xml"
    path.write_text(ACCEPTED[name])
    r = run("platform", "check", path)
    assert r.returncode == 0, r.stderr
    assert ", 0 without a route" in r.stdout, r.stdout
    r = run("run", "--platform", path, *ALLREDUCE)
    assert r.returncode == 0, r.stderr
    assert "simulated time" in r.stdout


def test_a_run_on_more_xpus_than_a_run_takes_is_refused_but_checked(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(platform(CLUSTER.format(last=probe.MAX_RUN_XPUS, extra="")))
    r = run("platform", "check", path)
    assert r.returncode == 0 and f"({probe.MAX_RUN_XPUS + 1} XPUs" in r.stdout, r.stderr
    assert "the nodes of a <cluster> as one" in r.stdout  # one pair inside the cluster stands for all of them
    assert_one_line_error(run("run", "--platform", path, *ALLREDUCE), f"{probe.MAX_RUN_XPUS + 1} XPUs", "at most 4096")


# ---------------------------------------------------------------- the probe against the file's own routes


def _expected_unrouted(names: list[str], routes: list[tuple[str, str]], routing: str) -> set[tuple[str, str]]:
    """The pairs a zone of ``routing`` has no route for, from its routes alone (all symmetrical)."""
    edges = {(a, b) for a, b in routes} | {(b, a) for a, b in routes}
    if routing == "Full":
        return {(a, b) for a, b in itertools.permutations(names, 2) if (a, b) not in edges}
    reach = {a: {a} for a in names}
    for _ in names:
        for a, b in edges:
            for src in names:
                if a in reach[src]:
                    reach[src].add(b)
    return {(a, b) for a, b in itertools.permutations(names, 2) if b not in reach[a]}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    routing=st.sampled_from(["Full", "Floyd", "Dijkstra"]),
    n=st.integers(2, 5),
    data=st.data(),
)
def test_probe_finds_exactly_the_pairs_without_a_route(tmp_path, routing, n, data):
    names = [f"h{i}" for i in range(n)]
    candidates = list(itertools.combinations(names, 2))
    routes = data.draw(st.lists(st.sampled_from(candidates), unique=True, max_size=len(candidates)))
    path = tmp_path / f"{routing}{n}.xml"
    path.write_text(platform(full_zone(names, routes, routing)))
    facts = host_facts(path, "auto")
    expected = _expected_unrouted(names, routes, routing)
    assert set(facts.unrouted) == expected
    assert facts.route_pairs == n * (n - 1) and not facts.route_sampled
    for a, b in itertools.permutations(names, 2):
        assert facts.unrouted_between(a, b) == ((a, b) in expected)


def test_a_route_the_probe_finds_carries_a_transfer_and_one_it_misses_would_abort(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text(platform(LINE))
    assert not host_facts(path, "auto").unrouted_between("a", "b")
    assert simulate_transfers(path, [("a", "b", 1e6)])[0] > 0
    # what SimGrid does with the pair the probe reports: abort; caught here as one line, not a crash
    with pytest.raises(HcsimError, match=r"SimGrid crashed \(SIGABRT\): .*no connecting path"):
        simulate_transfers(path, [("a", "c", 1e6)])


def test_nodes_of_one_cluster_share_their_routes(tmp_path, monkeypatch):
    three = "".join(
        CLUSTER.replace('id="c" prefix="n"', f'id="c{i}" prefix="n{i}-"').format(last=7, extra="") for i in range(3)
    )
    routes = "".join(
        f'<zoneRoute src="c{i}" dst="c{j}" gw_src="n{i}-c{i}_router" gw_dst="n{j}-c{j}_router"><link_ctn id="bb"/>'
        "</zoneRoute>"
        for i, j in ((0, 1), (0, 2), (1, 2))
    )
    path = tmp_path / "p.xml"
    path.write_text(platform(f'<zone id="w" routing="Full">{three}<link id="bb" bandwidth="1GBps" latency="1us"/>'
                             f"{routes}</zone>"))  # fmt: skip
    facts = host_facts(path, "auto")
    assert facts.route_pairs == 3 * 2 + 3 * 2  # between the 3 clusters, and one pair each way inside each
    assert not facts.unrouted and facts.route_groups["n0-5"] == "n0-0" and facts.route_groups["n2-7"] == "n2-0"
    # every pair resolved one by one agrees: no pair without a route
    monkeypatch.setattr(probe, "_layout", lambda path: probe._Layout(set(), set(), {}, {}))
    every = host_facts(path, "auto")
    assert every.route_pairs == 24 * 23 and not every.unrouted and not every.route_groups


def test_past_the_route_budget_the_probe_samples_and_says_so(tmp_path, monkeypatch):
    names = [f"h{i}" for i in range(6)]
    path = tmp_path / "p.xml"
    path.write_text(platform(full_zone(names, list(itertools.combinations(names, 2)))))
    monkeypatch.setattr(probe, "MAX_ROUTE_CHECKS", 10)
    facts = host_facts(path, "auto")
    assert facts.route_sampled and not facts.unrouted
    assert facts.route_pairs == 2 * 6 + 2 * 5 - 4  # ring both ways, star from h0 both ways, minus the 4 in both


def test_past_the_budget_a_run_resolves_the_pairs_its_workload_uses(tmp_path, monkeypatch):
    names = [f"h{i}" for i in range(6)]
    routes = [p for p in itertools.combinations(names, 2) if p != ("h2", "h4")]  # neither ring nor star: unsampled
    path = tmp_path / "p.xml"
    path.write_text(platform(full_zone(names, routes)))
    monkeypatch.setattr(probe, "MAX_ROUTE_CHECKS", 10)
    facts = host_facts(path, "auto")
    assert facts.route_sampled and not facts.unrouted  # the sample misses h2 - h4

    def workload(kind: str) -> Workload:
        w = Workload()
        w.add_comm("x", 1e6, kind, names, is_start=True)
        return w

    refuse_unrouted(facts, workload("allreduce"), str(path))  # the ring h0 -> ... -> h5 -> h0: all routed
    with pytest.raises(HcsimError, match=r"no route from host 'h2' to host 'h4', and the workload's vertex 'x'"):
        refuse_unrouted(facts, workload("alltoall"), str(path))
