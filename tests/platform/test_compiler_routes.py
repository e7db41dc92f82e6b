"""Every route the compiler writes, as SimGrid resolves it, is ``Router.path`` link by link: every host pair.

One small system per route class the compiler writes: a flat ``Full`` zone (a ring, hosts as
transit), server zones under a root (``zoneRoute`` between servers), racks of servers
(``bypassZoneRoute`` pairs between racks), memory nodes beside the XPUs, and a topology routed
each way from its own source (an imported grid: ``symmetrical="NO"`` routes). Not a sample: a
mutation of the route writers (a reversed link, a dropped hop, a wrong gateway) changes one
of these routes (docs/testing.md).
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from hcsim.formats.astra_network import astra_network_topology
from hcsim.platform import Router, compile_platform, leaf_spine, noncoherent_system, path_latency, ring
from hcsim.platform.compiler import link_id
from hcsim.simgrid_runtime import run_isolated

SYSTEMS = {
    "ring": lambda: ring(5),
    "leaf-spine": lambda: leaf_spine(2, 2, 3),
    "servers-in-racks": lambda: noncoherent_system(32, servers_per_rack=2),
    "grid-each-way": lambda: astra_network_topology(
        {"topology": ["Ring", "Switch"], "npus_count": [4, 3], "bandwidth": [50, 25], "latency": [100, 500]}
    ),
}


def _resolved(path: str) -> dict[tuple[str, str], tuple[list[str], float]]:
    from hcsim.simgrid_runtime import load_platform

    engine = load_platform(path)
    engine.netzone_root.seal()
    hosts = {h.name: h for h in engine.all_hosts}
    out = {}
    for a in sorted(hosts):
        for b in sorted(hosts):
            if a != b:
                links, latency = hosts[a].route_to(hosts[b])
                out[a, b] = ([link.name for link in links], latency)
    return out


@pytest.mark.parametrize("name", sorted(SYSTEMS))
def test_every_host_pair_takes_the_router_path(tmp_path: Path, name: str) -> None:
    topo = SYSTEMS[name]()
    path = str(tmp_path / "p.xml")
    compile_platform(topo, path)
    got = run_isolated(_resolved, path)
    router = Router(topo)
    hosts = sorted(topo.hosts())
    assert sorted({a for a, _ in got}) == hosts and len(got) == len(hosts) * (len(hosts) - 1)
    for (a, b), (links, latency) in got.items():
        route = router.path(a, b)
        assert links == [f"{link_id(u, v)}_{'UP' if u < v else 'DOWN'}" for u, v in pairwise(route)], (a, b)
        assert latency == pytest.approx(path_latency(topo, route), rel=1e-12, abs=1e-21), (a, b)


def test_the_classes_are_there() -> None:
    """The systems above hold every kind of route element the compiler writes."""
    import tempfile

    kinds = set()
    for build in SYSTEMS.values():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "p.xml"
            compile_platform(build(), path)
            text = path.read_text()
        kinds |= {k for k in ("<route ", "<zoneRoute ", "<bypassZoneRoute ", 'symmetrical="NO"') if k in text}
    assert kinds == {"<route ", "<zoneRoute ", "<bypassZoneRoute ", 'symmetrical="NO"'}
