"""The three-level fat tree: structure, and routes that are global shortest paths."""

from itertools import combinations

import networkx as nx
import pytest

from hcsim.errors import HcsimError
from hcsim.platform import Router
from hcsim.platform.builders import fat_tree


@pytest.mark.parametrize("k", [2, 4, 6])
def test_fat_tree_structure(k):
    topo = fat_tree(k).validate()
    assert len(topo.xpus()) == k**3 // 4
    switches = topo.nodes_of("switch")
    assert len(switches) == k * k + (k // 2) ** 2  # k pods of k switches, (k/2)^2 cores
    assert all(topo.degree(s) == k for s in switches if not s.startswith("core")) or k == 2
    assert all(topo.degree(s) == k for s in switches if s.startswith("core"))


@pytest.mark.parametrize("k", [4, 6])
def test_fat_tree_routes_are_shortest_paths(k):
    topo = fat_tree(k).validate()
    router = Router(topo)
    g = nx.Graph(topo)
    switch_only = nx.subgraph_view(g, filter_node=lambda n: topo.nodes[n]["kind"] == "switch")
    for a, b in combinations(topo.xpus(), 2):
        path = router.path(a, b)
        assert path[0] == a and path[-1] == b
        assert all(g.has_edge(u, v) for u, v in zip(path, path[1:], strict=False))
        assert all(topo.nodes[n]["kind"] == "switch" for n in path[1:-1])  # never through an XPU
        ea, eb = next(iter(g[a])), next(iter(g[b]))
        assert len(path) - 1 == 2 + nx.shortest_path_length(switch_only, ea, eb)
        pod_a, pod_b = a.split("e")[0], b.split("e")[0]
        assert len(path) - 1 == (2 if ea == eb else 4 if pod_a == pod_b else 6)


def test_fat_tree_needs_an_even_arity():
    with pytest.raises(HcsimError, match="arity"):
        fat_tree(3)


def test_fat_tree_compiles_and_times_a_cross_pod_transfer(tmp_path):
    from hcsim.platform import compile_platform
    from hcsim.platform.probe import simulate_transfers

    topo = fat_tree(4)
    path = str(tmp_path / "ft.xml")
    compile_platform(topo, path)
    xs = topo.xpus()
    (t,) = simulate_transfers(path, [(xs[0], xs[-1], 1e8)])
    assert t == pytest.approx(6 * 5e-6 + 1e8 / 12.5e9, rel=1e-9)
