"""The collective library: registry, plug-ins, schedule validation and the data-movement check."""

from __future__ import annotations

import pytest

from hcsim.collectives import (
    Schedule,
    TopologyView,
    algorithm,
    build_plan,
    build_schedule,
    check_schedule,
    names,
    plan,
    register,
)
from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.platform import cxl_system, star
from hcsim.workload import Workload

RANKS = [f"x{i}" for i in range(9)]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9])
@pytest.mark.parametrize(
    "kind, name",
    [
        ("allreduce", "ring"),
        ("allreduce", "coherent_ring"),
        ("reduce_scatter", "ring"),
        ("allgather", "ring"),
        ("broadcast", "chain"),
        ("reduce", "chain"),
        ("alltoall", "direct"),
    ],
)
def test_builtin_schedules_deliver_what_their_kind_promises(kind, name, n):
    sch = build_schedule(kind, name, RANKS[:n], 1e6)  # validated and data-checked
    assert sch.shards > 0


@pytest.mark.parametrize("kind, name", [("allreduce", "ring"), ("allreduce", "coherent_ring"), ("allgather", "ring")])
def test_builtin_schedule_is_the_engines_plan(kind, name):
    """The schedule checked for data movement is the plan the engine runs (same flows, same dependencies)."""
    sch = build_schedule(kind, name, RANKS[:5], 5e6)
    fp = plan(kind, name, RANKS[:5], 5e6)
    assert (fp.src, fp.dst, fp.size) == ([f.src for f in sch.flows], [f.dst for f in sch.flows], sch.to_plan().size)
    assert fp.waits == sch.to_plan().waits
    assert [sorted(r) for r in fp.releases] == [sorted(r) for r in sch.to_plan().releases]


def test_a_coherent_ring_is_not_a_complete_allreduce():
    sch = build_schedule("allreduce", "coherent_ring", RANKS[:4], 1e6)
    sch.coherent = False  # claimed as a plain allreduce, it leaves ranks without the sum
    with pytest.raises(HcsimError, match="every rank needs every contribution"):
        check_schedule(sch)


def test_a_flow_that_sends_before_it_received_fails_the_check():
    """Right bytes, right pairs, but a forward does not wait for its data: caught, not timed."""
    sch = build_schedule("allgather", "ring", RANKS[:4], 1e6)
    broken = Schedule("allgather", sch.ranks, shards=sch.shards, name="eager")
    for f in sch.flows:
        broken.add(f.src, f.dst, f.nbytes, (), f.shards)
    with pytest.raises(HcsimError, match="eager.*never receives shard"):
        check_schedule(broken)


def test_bad_schedules_get_one_line_errors_naming_the_flow():
    s = Schedule("allreduce", ["a", "b"], name="bad")
    s.add("a", "c", 10)
    with pytest.raises(HcsimError, match=r"flow 0 \(a -> c\) names rank 'c', outside the scope"):
        s.validate()
    s = Schedule("allreduce", ["a", "b"], name="loop")
    s.add("a", "b", 10, after=[1])
    s.add("b", "a", 10, after=[0])
    with pytest.raises(HcsimError, match="flow 0 is in a dependency cycle"):
        s.validate()
    with pytest.raises(HcsimError, match="unknown for allreduce"):
        algorithm("allreduce", "nonesuch")
    with pytest.raises(HcsimError, match="cannot be imported"):
        algorithm("allreduce", "no_such_module_xyz:fn")


def pairwise_exchange(ranks, nbytes, view):
    """A plug-in found by its import path: every rank sends its whole buffer to every other."""
    s = Schedule("allreduce", ranks, shards=len(ranks))
    for a in ranks:
        for b in ranks:
            if a != b:
                s.add(a, b, nbytes, shards=range(len(ranks)))
    return s


def test_a_plug_in_by_path_runs_in_the_engine_and_is_timed_like_its_closed_form(compiled):
    """N-1 flows of S leave every rank at once on a star: L_in + L_out + (N-1) S / B."""
    n, size, bw, lat = 4, 1e8, 100e9, 1e-6
    path = compiled(star(n, bandwidth=bw, latency=lat))
    ranks = [f"xpu{i}" for i in range(n)]
    w = Workload()
    w.add_comm("ar", size, "allreduce", ranks, algorithm="test_collectives:pairwise_exchange", is_start=True)
    t = simulate(path, w).makespan
    assert t == pytest.approx(2 * lat + (n - 1) * size / bw, rel=1e-9)


def test_register_makes_an_algorithm_usable_by_name():
    @register("broadcast", "star_bcast")
    def star_bcast(ranks, nbytes, view):
        """Root sends to everyone at once."""
        s = Schedule("broadcast", ranks, shards=1)
        for r in ranks[1:]:
            s.add(ranks[0], r, nbytes, shards=[0])
        return s

    assert "star_bcast" in names("broadcast") and names("broadcast")[0] == "chain"
    assert len(build_plan("broadcast", "star_bcast", RANKS[:5], 10)) == 4


def test_non_ring_algorithms_refuse_to_stand_for_a_larger_group():
    with pytest.raises(HcsimError, match="only the ring algorithms can"):
        build_plan("alltoall", "direct", RANKS[:4], 1e6, group=16)


def test_the_view_groups_ranks_by_server_and_orders_rings_like_nccl():
    topo = cxl_system(32, servers_per_rack=2)
    view = TopologyView.of_topology(topo)
    xs = topo.xpus()
    assert [len(g) for g in view.by_server(xs)] == [8, 8, 8, 8]
    shuffled = xs[::2] + xs[1::2]
    assert view.topology_order(shuffled) != shuffled
    order = view.topology_order(shuffled)
    groups = view.by_server(order)
    assert [r for g in groups for r in g] == order  # each server's ranks contiguous: one hop out, one in
    assert [sorted(g) for g in groups] == [sorted(g) for g in view.by_server(xs)]
    assert TopologyView().by_server(["a", "b"]) == [["a"], ["b"]]  # no zones: every rank its own server
