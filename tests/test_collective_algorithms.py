"""The library of collective algorithms: data movement at N = 2..9, 16, and closed forms with real SimGrid."""

from __future__ import annotations

import pytest

from hcsim.collectives import Schedule, TopologyView, build_plan, build_schedule, check_schedule, plan
from hcsim.collectives.algorithms.tree import dtree_parents
from hcsim.errors import HcsimError
from hcsim.platform import cxl_system

ALGORITHMS = [
    ("allreduce", "double_binary_tree"),
    ("allreduce", "halving_doubling"),
    ("allreduce", "coherent_halving_doubling"),
    ("allreduce", "direct"),
    ("allreduce", "hierarchical"),
    ("allreduce", "ring_2d"),
    ("allreduce", "ring_topo"),
    ("allreduce", "cxl_shared_memory"),
    ("reduce_scatter", "halving_doubling"),
    ("reduce_scatter", "direct"),
    ("reduce_scatter", "ring_topo"),
    ("allgather", "halving_doubling"),
    ("allgather", "direct"),
    ("allgather", "ring_topo"),
    ("broadcast", "binary_tree"),
    ("reduce", "binary_tree"),
    ("alltoall", "pairwise"),
]
SIZES = [2, 3, 4, 5, 6, 7, 8, 9, 16]


def ranks(n: int) -> list[str]:
    return [f"x{i}" for i in range(n)]


def views(n: int) -> list[TopologyView]:
    """No topology; servers of 4 in two racks, listed shuffled; servers of 2 (and 3 when it divides n)."""
    rs = ranks(n)
    memories = {r: f"{r}.mem" for r in rs}
    out = [TopologyView(memories=memories)]
    for per in (4, 2, 3):
        if n % per == 0 and n > per:
            zones = {r: f"r{i // (2 * per)}/s{i // per}" for i, r in enumerate(rs)}
            out.append(TopologyView(zones, memories))
    return out


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind, name", ALGORITHMS)
def test_every_algorithm_delivers_what_its_kind_promises(kind, name, n):
    for view in views(n):
        order = ranks(n)[::2] + ranks(n)[1::2]  # a scope not in topology order
        for scope in (ranks(n), order):
            sch = build_schedule(kind, name, scope, 1e6 * n, view)  # validated and data-checked
            assert sch.shards > 0 and sch.flows


@pytest.mark.parametrize("kind, name", [("allreduce", "halving_doubling"), ("reduce_scatter", "halving_doubling")])
def test_halving_doubling_without_the_post_step_fails_the_check(kind, name):
    """Rank 2k+1 of a non-power of two never gets its result back if the folding's post-step is dropped."""
    sch = build_schedule(kind, name, ranks(6), 6e6)
    broken = Schedule(kind, sch.ranks, shards=sch.shards, name="no_post_step")
    for f in sch.flows[:-2]:  # the last two flows: the post-step, 0 -> 1 and 2 -> 3
        broken.add(f.src, f.dst, f.nbytes, f.after, f.shards)
    with pytest.raises(HcsimError, match=r"no_post_step.*rank 'x1' ends with"):
        check_schedule(broken)


def test_a_tree_that_broadcasts_before_it_has_reduced_fails_the_check():
    sch = build_schedule("allreduce", "double_binary_tree", ranks(7), 7e6)
    broken = Schedule("allreduce", sch.ranks, shards=sch.shards, name="eager_tree")
    for f in sch.flows:
        broken.add(f.src, f.dst, f.nbytes, f.after if f.src != "x0" else (), f.shards)  # the root does not wait
    with pytest.raises(HcsimError, match="eager_tree.*every rank needs every contribution"):
        check_schedule(broken)


def test_double_binary_tree_uses_complementary_trees():
    """NCCL's dtree: in each tree every rank but the root has a parent, and few ranks are inner nodes of both."""
    for n in SIZES + [64]:
        for parent in dtree_parents(n):
            assert parent.count(-1) == 1
            for r in range(n):  # every rank reaches the root
                seen = 0
                while parent[r] >= 0 and seen <= n:
                    r, seen = parent[r], seen + 1
                assert seen <= n
        first, second = dtree_parents(n)
        inner = [set(p for p in parents if p >= 0) for parents in (first, second)]
        assert len(inner[0] & inner[1]) <= 1


def test_cxl_shared_memory_needs_a_cxl_memory_for_every_rank():
    with pytest.raises(HcsimError, match="rank 'x0' has none") as e:
        build_schedule("allreduce", "cxl_shared_memory", ranks(4), 1e6)
    assert "\n" not in str(e.value)


def test_ring_topo_plan_is_the_ring_over_the_topology_order():
    topo = cxl_system(16, servers_per_rack=2)
    view = TopologyView.of_topology(topo)
    xs = topo.xpus()
    shuffled = xs[::2] + xs[1::2]
    order = view.topology_order(shuffled)
    assert order != shuffled
    for kind in ("allreduce", "reduce_scatter", "allgather"):
        for compact in (False, True):
            got = build_plan(kind, "ring_topo", shuffled, 16e6, view, compact=compact)
            want = plan(kind, "ring", order, 16e6, compact=compact)
            assert (got.src, got.dst, got.size, got.waits, got.releases, got.steps) == (
                want.src, want.dst, want.size, want.waits, want.releases, want.steps
            )  # fmt: skip
        sch = build_schedule(kind, "ring_topo", shuffled, 16e6, view).to_plan()
        full = plan(kind, "ring", order, 16e6)
        assert (sch.src, sch.dst, sch.size, sch.waits) == (full.src, full.dst, full.size, full.waits)
    folded = build_plan("allreduce", "ring_topo", shuffled[:4], 16e6, view, group=16)
    assert folded.steps == 30 and folded.size[0] == 10**6
