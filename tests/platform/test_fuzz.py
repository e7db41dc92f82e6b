"""Fuzzing: random small systems and random workload graphs through compile and simulate.

Hypothesis draws topologies (flat ones with mixed XPU types, custom devices, switches,
memory nodes, uneven links and extra links; and the builders' ring, star, leaf-spine
and paper systems with their links made uneven afterwards) and workload graphs
(computes, p2p and every collective kind with a random algorithm from the registry,
random dependencies, loop-carried edges, several iterations). A run fails the test when

* it raises anything but :class:`hcsim.errors.HcsimError` (bad input is allowed to be
  refused, in one line; nothing else may escape);
* it does not finish within :data:`TIME_BOUND` seconds (a hang);
* a lone transfer's time differs from sum(latency) + size / bottleneck bandwidth along
  the route hcsim computed, or a lone compute's from flops / rate, by more than relative
  1e-9 or SimGrid's own time resolution (the platform's ``precision/timing``: 1e-9 s by
  default, finer where the compiler sets it), whichever is larger.

CI runs :data:`EXAMPLES` = 100 derandomized examples (about half a minute). For nightly
runs set ``HCSIM_FUZZ_EXAMPLES`` (e.g. 5000) and, to explore new inputs each night,
``HCSIM_FUZZ_RANDOM=1`` (Hypothesis prints the failing example and its seed)::

    HCSIM_FUZZ_EXAMPLES=5000 HCSIM_FUZZ_RANDOM=1 .venv/bin/python -m pytest tests/platform/test_fuzz.py -q
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, Phase, event, given, note, settings
from hypothesis import strategies as st

from hcsim.collectives.registry import KINDS
from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.platform import builders
from hcsim.platform.compiler import SIMGRID_TIMING_PRECISION, compile_platform
from hcsim.platform.routing import Router, path_bandwidth, path_latency
from hcsim.platform.simgrid_files import read_declared
from hcsim.platform.topology import Topology
from hcsim.workload import Workload
from hcsim.workload.graph import ALGORITHMS

EXAMPLES = int(os.environ.get("HCSIM_FUZZ_EXAMPLES", "100"))
RANDOM = os.environ.get("HCSIM_FUZZ_RANDOM", "0") == "1"
TIME_BOUND = 60.0  # seconds for one example's compile and simulations; a small system takes well under 1 s
REL = 1e-9

FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=not RANDOM,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
    phases=(Phase.generate,) if os.environ.get("HCSIM_FUZZ_NOSHRINK") == "1" else tuple(Phase),
)

PRESETS = ("H100", "A100", "V100")
LINK_KINDS = ("pcie", "cxl", "ethernet", "xpu", "generic")

bandwidths = st.floats(1e3, 1e13, allow_nan=False, allow_infinity=False)
latencies = st.one_of(st.just(0.0), st.floats(1e-9, 1e-2, allow_nan=False))
# values validation accepts but no physical link has; one of them goes on one link of 1 system in 10
ONE_IN_TEN = st.sampled_from((False,) * 9 + (True,))  # shrinks to False, unlike integers() == k
ABSURD = {"bandwidth": (5e-300, 0.5, 1.0, 1e300), "latency": (1e6, 1e297)}
rates = st.floats(1e6, 1e16, allow_nan=False, allow_infinity=False)


class Hang(Exception):
    """A compile or simulation that ran past the time bound."""


@contextmanager
def time_bound(seconds: float):
    """Raise :class:`Hang` after ``seconds``, and stop the SimGrid children this process started."""

    def expire(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except Hang:
        for child in multiprocessing.active_children():
            child.kill()
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------- topologies


def _absurd(draw, topo: Topology) -> Topology:
    """Now and then, put an extreme value on one link (routing once overflowed on them; SimGrid hung)."""
    if topo.number_of_edges() and draw(ONE_IN_TEN):
        u, v = draw(st.sampled_from(sorted(tuple(sorted(e)) for e in topo.edges)))
        key = draw(st.sampled_from(sorted(ABSURD)))
        topo.edges[u, v][key] = draw(st.sampled_from(ABSURD[key]))
    return topo


def _link(draw, topo: Topology, u: str, v: str) -> None:
    topo.add_link(
        u,
        v,
        draw(bandwidths),
        draw(latencies),
        link_kind=draw(st.sampled_from(LINK_KINDS)),
        lanes=draw(st.integers(1, 4)),
    )


@st.composite
def flat_topologies(draw) -> Topology:
    """XPUs of mixed types (presets and custom devices), switches, memory nodes; a random tree plus extra links."""
    n_xpus, n_switches, n_memories = draw(st.integers(1, 5)), draw(st.integers(0, 3)), draw(st.integers(0, 2))
    if n_xpus + n_switches + n_memories < 2:  # a lone node has no link, which validate() rightly refuses
        n_switches = 1
    transit = n_switches == 0 or draw(st.booleans())
    topo = Topology(name="fuzz", host_transit=transit)
    for i in range(n_xpus):
        preset = draw(st.sampled_from((*PRESETS, None)))
        if preset is None:
            topo.add_xpu(
                f"x{i}",
                fp16=draw(rates),
                fp32=draw(rates),
                memory=draw(st.sampled_from((16 * 2**30, 2**20, 0))),
                memory_bandwidth=draw(st.floats(1e6, 1e13)),
                device="custom",
            )
        else:
            topo.add_xpu(f"x{i}", preset)
    for j in range(n_memories):
        topo.add_memory(
            f"m{j}", draw(st.sampled_from(("inf", "1MiB", "64GiB"))), draw(st.sampled_from(("host_dram", "cxl_type3")))
        )
    for k in range(n_switches):
        topo.add_switch(f"s{k}", draw(st.sampled_from(("generic", "pcie", "cxl", "tor"))))
    hosts, switches = topo.hosts(), [n for n in topo if not topo.is_host(n)]
    if transit:  # any tree over all nodes: routes may pass through hosts
        order = draw(st.permutations(list(topo.nodes)))
        for k in range(1, len(order)):
            _link(draw, topo, order[k], order[draw(st.integers(0, k - 1))])
    else:  # a tree over the switches, every host on one of them
        for k in range(1, len(switches)):
            _link(draw, topo, switches[k], switches[draw(st.integers(0, k - 1))])
        for h in hosts:
            _link(draw, topo, h, draw(st.sampled_from(switches)))
    nodes = sorted(topo.nodes)
    for _ in range(draw(st.integers(0, 3))):  # extra links make cycles and alternative routes
        if len(nodes) < 2:
            break
        u, v = draw(st.lists(st.sampled_from(nodes), min_size=2, max_size=2, unique=True))
        if not topo.has_edge(u, v):
            _link(draw, topo, u, v)
    return _absurd(draw, topo)


@st.composite
def built_topologies(draw) -> Topology:
    """The builders' systems, made uneven: some links get another bandwidth, latency or lane count."""
    which = draw(st.sampled_from(("ring", "star", "leafspine", "noncoherent", "cxl")))
    xpu = draw(st.sampled_from(PRESETS))
    link = (draw(bandwidths), draw(latencies))
    if which == "ring":
        topo = builders.ring(draw(st.integers(2, 6)), xpu, *link)
    elif which == "star":
        topo = builders.star(draw(st.integers(1, 6)), xpu, *link)
    elif which == "leafspine":
        topo = builders.leaf_spine(
            draw(st.integers(1, 3)),
            draw(st.integers(1, 2)),
            draw(st.integers(1, 3)),
            xpu,
            link,
            (draw(bandwidths), 0.0),
        )
    else:
        topo = builders.paper_system(
            8, coherent=which == "cxl", mix=xpu, cxl_bandwidth=link[0], cxl_latency=link[1], servers_per_rack=1
        )
    edges = sorted(tuple(sorted(e)) for e in topo.edges)
    for u, v in draw(st.lists(st.sampled_from(edges), max_size=4, unique=True)):
        data = topo.edges[u, v]
        data.update(bandwidth=draw(bandwidths), latency=draw(latencies), lanes=draw(st.integers(1, 4)))
    return _absurd(draw, topo.validate())  # the built system is valid; the absurd value is for compile to refuse


topologies = st.one_of(flat_topologies(), built_topologies())


# ---------------------------------------------------------------- workloads


@st.composite
def workloads(draw, xpus: list[str]) -> Workload:
    """Computes, p2p and collectives (random kind and registered algorithm) with random dependencies."""
    w = Workload()
    n = draw(st.integers(1, 6))
    for i in range(n):
        if len(xpus) < 2 or draw(st.booleans()):
            w.add_compute(
                f"v{i}",
                draw(st.floats(0, 1e13)),
                draw(st.sampled_from(xpus)),
                precision=draw(st.sampled_from(("fp16", "fp32"))),
                mem_bytes=draw(st.sampled_from((0.0, 1e3, 1e8, 1e10))),
            )
        else:
            kind = draw(st.sampled_from(KINDS))
            size = 2 if kind == "p2p" else draw(st.integers(2, len(xpus)))
            scope = draw(st.permutations(xpus))[:size]
            w.add_comm(
                f"v{i}",
                draw(st.sampled_from((0, 1, 1000, 2**20, 10**9))),
                kind,
                scope,
                algorithm=draw(st.sampled_from(ALGORITHMS[kind])),
            )
    for j in range(n):
        for i in range(j):
            if draw(st.integers(0, 3)) == 0:
                w.add_edge(f"v{i}", f"v{j}")
    if n > 1 and draw(st.booleans()):  # a loop-carried edge, as from backward to the next forward pass
        w.add_edge(f"v{n - 1}", "v0", skip_first_iteration=True)
    for v in w.nodes:
        forward_preds = [u for u in w.predecessors(v) if not w.edges[u, v].get("skip_first_iteration")]
        # a vertex with predecessors is never a start (refused); one without is, but now and then
        # is not, which leaves it waiting forever: a deadlock the engine must name
        w.nodes[v]["is_start"] = not forward_preds and not draw(ONE_IN_TEN)
    return w


# ---------------------------------------------------------------- the properties


def _durations(result) -> dict[str, float]:
    return {r[0]: r[5] - r[4] for r in result.trace if r[1] == 0}


@FUZZ
@given(topology=topologies, data=st.data())
def test_random_systems_and_workloads(tmp_path_factory, topology: Topology, data: st.DataObject) -> None:
    path = os.path.join(tmp_path_factory.mktemp("fuzz"), "platform.xml")
    xpus = topology.xpus()
    note(f"topology nodes: {dict(topology.nodes(data=True))}")
    note(f"topology links: {list(topology.edges(data=True))}; graph: {topology.graph}")
    with time_bound(TIME_BOUND):
        try:
            compile_platform(topology, path, precision=data.draw(st.sampled_from(("fp32", "fp16")), label="precision"))
        except HcsimError as exc:
            event(f"topology refused: {str(exc)[:60]}")
            return

        # a lone transfer and a lone compute (they share no resource): closed forms
        lone = Workload()
        host = data.draw(st.sampled_from(xpus), label="compute on")
        flops = data.draw(st.floats(1.0, 1e15), label="flops")
        precision = data.draw(st.sampled_from(("fp16", "fp32")), label="compute precision")
        lone.add_compute("compute", flops, host, precision=precision, is_start=True)
        pair = None
        if len(xpus) >= 2:
            pair = data.draw(st.lists(st.sampled_from(xpus), min_size=2, max_size=2, unique=True), label="p2p")
            size = data.draw(st.integers(1, 10**10), label="p2p bytes")
            lone.add_comm("transfer", size, "p2p", pair, is_start=True)
        try:
            result = simulate(path, lone, 1, record_flows=False, progress=False)
        except HcsimError as exc:
            event(f"lone run refused: {str(exc)[:60]}")
            result = None
        if result is not None:
            took = _durations(result)
            # SimGrid resolves event dates to its precision/timing (seconds): below that, no closed form holds
            timing = float(read_declared(path).config.get("precision/timing", SIMGRID_TIMING_PRECISION))
            rate = topology.nodes[host][f"{precision}_flops"]
            assert took["compute"] == pytest.approx(flops / rate, rel=REL, abs=timing)
            if pair is not None:
                route = Router(topology).path(*pair)
                closed = path_latency(topology, route) + size / path_bandwidth(topology, route)
                assert took["transfer"] == pytest.approx(closed, rel=REL, abs=timing), route

        # a random workload graph: it may be refused (HcsimError), nothing else
        work = data.draw(workloads(xpus), label="workload")
        iterations = data.draw(st.integers(1, 3), label="iterations")
        coherent = data.draw(st.booleans(), label="coherent")
        try:
            result = simulate(path, work, iterations, coherent=coherent, progress=False)
        except HcsimError as exc:
            event(f"workload refused: {str(exc)[:60]}")
            return
        event("workload ran")
        assert len(result.iteration_end) == iterations
        assert all(math.isfinite(t) and t >= 0 for t in result.iteration_end)


# ---------------------------------------------------------------- what fuzzing found (regressions)


def _lone_pair(tmp_path, topology: Topology, transfer: tuple[str, str, int], compute: tuple[str, float]):
    """Run a lone p2p beside a lone fp32 compute; return (transfer's duration, its closed form)."""
    path = str(tmp_path / "p.xml")
    compile_platform(topology, path)
    w = Workload()
    src, dst, size = transfer
    w.add_comm("transfer", size, "p2p", [src, dst], is_start=True)
    w.add_compute("compute", compute[1], compute[0], is_start=True)
    took = _durations(simulate(path, w, 1, record_flows=False, progress=False))
    route = Router(topology).path(src, dst)
    return took["transfer"], path_latency(topology, route) + size / path_bandwidth(topology, route)


def test_zero_latency_flow_ends_at_its_own_date_beside_a_shorter_exec(tmp_path):
    """SimGrid's Lazy solver ended it with the exec (at 3.2e-12 s instead of 2.19e-10 s): Full is compiled in."""
    topology = builders.ring(3, "A100", 9490290806902.285, 0.0)
    took, closed = _lone_pair(tmp_path, topology, ("xpu0", "xpu1", 2083), ("xpu0", 1000.0))
    assert took == pytest.approx(closed, rel=REL)
    assert read_declared(tmp_path / "p.xml").config["network/optim"] == "Full"


def test_latency_within_simgrid_timing_precision_is_kept(tmp_path):
    """An exec ending within 1 ns of a flow's latency end dropped that nanosecond (1e-3 s instead of 1e-3 + 1e-9 s)."""
    t = Topology()
    t.add_xpu("x0", "H100")
    t.add_xpu("x1", "H100")
    t.add_switch("s0")
    t.add_link("x0", "s0", 1000.0, 0.0)
    t.add_link("x1", "s0", 1000.0, 1e-9)
    took, closed = _lone_pair(tmp_path, t, ("x0", "x1", 1), ("x1", 1.0))
    assert took == pytest.approx(closed, rel=REL)  # strict: the dropped 1e-9 s is 1e-6 relative


@pytest.mark.parametrize("key, value", [("bandwidth", 5e-300), ("latency", 1e297), ("bandwidth", 0.5)])
def test_links_beyond_what_simgrid_can_simulate_are_refused(tmp_path, key, value):
    """Routing overflowed (OverflowError) on these; once routed, SimGrid's clock hung on them."""
    t = builders.ring(3, "H100", "100GBps", "1us")
    t.edges["xpu0", "xpu1"][key] = value
    route = Router(t).path("xpu0", "xpu2")  # no OverflowError: the route is still computed
    assert route[0] == "xpu0" and route[-1] == "xpu2"
    with pytest.raises(HcsimError, match=f"link 'xpu0'--'xpu1': {key}.*(valid|must be)"):
        compile_platform(t, tmp_path / "p.xml")
    assert not os.listdir(tmp_path)
