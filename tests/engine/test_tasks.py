"""Wide communication vertices on SimGrid's Task plugin (``tasks=True``) against the exact controller.

The Task route must give the same run bit for bit: iteration ends, every vertex
execution's dates, every flow's dates, the activity count. One subtlety: when two
vertices start at one date, SimGrid's per-flow results depend on which vertex's flows
enter first, on either route (up to 2.6e-6 s per flow here, iteration ends unchanged).
The controller starts them in successor order; the Task route starts a task vertex's
flows one maestro round later (after the plugin's 0-flop dispatcher exec), i.e. after
the controller's. The workload below lists the narrow ring first, so both routes use
the same order; the last test shows the exact engine alone moving by as much when the
order changes.
"""

from __future__ import annotations

import math

import pytest

from hcsim.engine import EngineOptions, simulate
from hcsim.engine.tasks import TASK_WAVE, periodic_lanes
from hcsim.errors import HcsimError
from hcsim.workload import Workload


def _wide_workload(xpus: list[str]) -> Workload:
    """Compute, a direct all-to-all (N(N-1) flows at once), compute, a direct allreduce (with joins), a ring."""
    w = Workload()
    for i, x in enumerate(xpus):
        w.add_compute(f"A{i}", 1e11 * (1 + i % 3), x, is_start=True)
        w.add_compute(f"B{i}", 2e11, x, mem_bytes=3e8)
        w.add_compute(f"C{i}", 1e11, x)
    w.add_comm("A2A", 64 * 2**20, "alltoall", xpus, algorithm="direct")
    w.add_comm("ARD", 32 * 2**20, "allreduce", xpus, algorithm="direct")
    w.add_comm("RING", 16 * 2**20, "allreduce", xpus, algorithm="ring")
    for i in range(len(xpus)):
        w.add_dependency(f"A{i}", "A2A")
        w.add_dependency("A2A", f"B{i}")
        w.add_dependency(f"B{i}", "RING")  # launched first at B's end: see the last test
        w.add_dependency(f"B{i}", "ARD")
        w.add_dependency("ARD", f"C{i}")
        w.add_dependency("RING", f"C{i}")
        w.add_dependency(f"C{i}", f"A{i}", skip_first_iteration=True)
    return w


def test_task_route_is_bit_identical_to_the_controller(paper_system):
    topology, path = paper_system("cxl", 32)
    xpus = topology.xpus()
    assert len(xpus) * (len(xpus) - 1) >= TASK_WAVE  # the all-to-all and the direct allreduce take the Task route
    runs = {tasks: simulate(path, _wide_workload(xpus), 2, tasks=tasks, record_flows=True) for tasks in (False, True)}
    exact, task = runs[False], runs[True]
    assert task.iteration_end == exact.iteration_end
    key = lambda t: (t.iteration, t.vertex)  # noqa: E731
    assert sorted(task.trace, key=key) == sorted(exact.trace, key=key)
    assert sorted(task.flows) == sorted(exact.flows)
    assert task.activities == exact.activities
    assert task.compute == exact.compute and task.comm == exact.comm


def test_task_route_lifts_the_flows_at_once_limit(paper_system):
    """The limit exists because of wait_any; a vertex on the Task route does not wait that way."""
    topology, path = paper_system("cxl", 32)
    xpus = topology.xpus()
    w = Workload()
    w.add_comm("A2A", 2**20, "alltoall", xpus, algorithm="direct", is_start=True)
    exact = simulate(path, w, 1, tasks=False)
    low = EngineOptions(max_flows_at_once=600)  # the all-to-all starts 992 flows at once
    with pytest.raises(HcsimError, match="starts 992 flows at once"):
        simulate(path, w, 1, options=low, tasks=False)
    assert simulate(path, w, 1, options=low, tasks=True).activities == 992
    with pytest.raises(HcsimError, match="starts 992 flows at once"):
        simulate(path, w, 1, options=low)  # by default the Task route keeps the limit (SimGrid's solver aborts past it)
    by_default = simulate(path, w, 1)  # 992 >= TASK_WAVE: on tasks by default, the same result bit for bit
    assert (by_default.makespan, sorted(by_default.flows)) == (exact.makespan, sorted(exact.flows))


def test_the_exact_engine_itself_depends_on_the_start_order_at_one_date(paper_system):
    """Why the workload above lists the ring first: swap the order and the exact run moves, tasks or not."""
    topology, path = paper_system("cxl", 32)
    xpus = topology.xpus()
    first = _wide_workload(xpus)
    swapped = Workload()
    swapped.add_nodes_from(first.nodes(data=True))
    swapped.add_edges_from(sorted(first.edges(data=True), key=lambda e: e[1] != "ARD"))  # ARD launched first
    a = simulate(path, first, 1, record_flows=True, tasks=False)
    b = simulate(path, swapped, 1, record_flows=True, tasks=False)
    assert a.iteration_end == b.iteration_end
    assert sorted(a.flows) != sorted(b.flows)  # same flows, same starts, some ends differ
    assert sorted(f[:4] for f in a.flows) == sorted(f[:4] for f in b.flows)
    worst = max(abs(x[4] - y[4]) for x, y in zip(sorted(a.flows), sorted(b.flows), strict=True))
    assert 0 < worst < 1e-5


# ---------------------------------------------------------------- the lane route: a task per lane, not per flow


def _ring_plan(n: int, kind: str = "allreduce"):
    from hcsim.collectives.plans import plan

    return plan(kind, "ring", [f"x{i}" for i in range(n)], 1e6)


@pytest.mark.parametrize("kind", ["allreduce", "reduce_scatter", "allgather"])
@pytest.mark.parametrize("n", [2, 3, 8])
def test_a_ring_plan_is_n_lanes_each_waiting_for_its_left_neighbour(n, kind):
    fp = _ring_plan(n, kind)
    if fp.steps == 1:  # one flow per lane: nothing repeats, a task per flow
        assert periodic_lanes(fp) is None
        return
    lanes, waits_for = periodic_lanes(fp)
    assert len(lanes) == n and all(len(flows) == fp.steps for flows in lanes)
    assert sorted(f for flows in lanes for f in flows) == list(range(len(fp)))
    for i, flows in enumerate(lanes):
        assert {(fp.src[f], fp.dst[f]) for f in flows} == {(f"x{i}", f"x{(i + 1) % n}")}
        assert waits_for[i] == [(i - 1) % n]


def test_plans_that_are_not_lanes_keep_a_task_per_flow():
    from hcsim.collectives.plans import FlowPlan, plan

    xs = [f"x{i}" for i in range(4)]
    assert periodic_lanes(plan("alltoall", "direct", xs, 1e6)) is None  # one flow per pair: nothing repeats
    assert periodic_lanes(plan("broadcast", "chain", xs, 1e6)) is None
    fp = _ring_plan(4)
    dropped = FlowPlan(fp.src, fp.dst, fp.size, list(fp.waits), [list(r) for r in fp.releases], fp.steps)
    dropped.releases[5].remove(9)  # flow 9 (step 2, rank 1) no longer waits for its left neighbour's chunk
    dropped.waits[9] -= 1
    assert periodic_lanes(dropped) is None
    skewed = FlowPlan(fp.src, fp.dst, fp.size, list(fp.waits), [list(r) for r in fp.releases], fp.steps)
    skewed.releases[0].append(9)  # a wait two steps back
    skewed.waits[9] += 1
    assert periodic_lanes(skewed) is None
    joined = FlowPlan(fp.src, fp.dst, [0, *fp.size[1:]], fp.waits, fp.releases, fp.steps, joins=1)
    assert periodic_lanes(joined) is None


def _rings_workload(xpus: list[str]) -> Workload:
    """A ring reduce-scatter, compute, a ring all-gather over all XPUs, then a ring allreduce over half of them.

    One collective at a time: two vertices starting at one date may enter SimGrid in
    another order on tasks (the module docstring), which moves the last bit of a date.
    """
    w = Workload()
    half = xpus[: len(xpus) // 2]
    w.add_comm("RS", 16 * 2**20, "reduce_scatter", xpus, algorithm="ring", is_start=True)
    w.add_comm("AG", 16 * 2**20, "allgather", xpus, algorithm="ring")
    w.add_comm("AR", 8 * 2**20, "allreduce", half, algorithm="ring")
    for i, x in enumerate(xpus):
        w.add_compute(f"C{i}", 1e11 * (1 + i % 3), x)
        w.add_dependency("RS", f"C{i}")
        w.add_dependency(f"C{i}", "AG")
    w.add_dependency("AG", "AR")
    return w


def _platform(system: str, tmp_path):
    from hcsim.formats.astra_network import astra_network_topology, compile_astra_network
    from hcsim.platform import compile_platform, ring, star

    path = str(tmp_path / f"{system}.xml")
    if system == "grid":  # an imported 2D network (a compact Dijkstra zone)
        spec = {"topology": ["Ring", "Switch"], "npus_count": [4, 3], "bandwidth": [200, 50], "latency": [500, 1000]}
        topology = astra_network_topology(spec)
        compile_astra_network(topology, path)
    else:
        topology = (star if system == "star" else ring)(6, bandwidth=100e9, latency=1e-6)
        compile_platform(topology, path)
    return topology, path


def _same_run(a, b, ulps: int = 0) -> None:
    """The same flows, vertex executions and iteration ends; dates equal to ``ulps`` units in the last place."""
    key = lambda t: (t.iteration, t.vertex)  # noqa: E731

    def near(x: float, y: float) -> bool:
        return abs(x - y) <= ulps * math.ulp(max(abs(x), abs(y)))

    assert a.activities == b.activities
    assert all(near(x, y) for x, y in zip(a.iteration_end, b.iteration_end, strict=True))
    ta, tb = sorted(a.trace, key=key), sorted(b.trace, key=key)
    assert [(t.iteration, t.vertex) for t in ta] == [(t.iteration, t.vertex) for t in tb]
    assert all(near(x.start, y.start) and near(x.end, y.end) for x, y in zip(ta, tb, strict=True))
    fa, fb = sorted(a.flows), sorted(b.flows)
    assert [f[:3] for f in fa] == [f[:3] for f in fb]
    assert all(near(x[3], y[3]) and near(x[4], y[4]) for x, y in zip(fa, fb, strict=True))
    if not ulps:
        assert a.iteration_end == b.iteration_end and fa == fb


@pytest.mark.parametrize(("system", "ulps"), [("star", 0), ("ring", 16), ("grid", 16)])
def test_the_lane_route_gives_the_controllers_dates_on_rings(system, ulps, tmp_path, monkeypatch):
    """Ring collectives on lanes (TASK_WAVE 2) against the controller: bit for bit on a star (a switch).

    On the ring and the grid the Task route, lanes or a task per flow, ends some flows up to
    6 units in the last place (3.5e-18 s) away from the controller's (measured; the
    plugin's 0-flop dispatcher and collector execs make SimGrid solve in other rounds).
    """
    import hcsim.engine.tasks as tasks_module

    topology, path = _platform(system, tmp_path)
    w = _rings_workload(topology.xpus())
    exact = simulate(path, w, 2, tasks=False, record_flows=True)
    monkeypatch.setattr(tasks_module, "TASK_WAVE", 2)
    _same_run(simulate(path, w, 2, record_flows=True), exact, ulps)
    monkeypatch.setattr(tasks_module, "periodic_lanes", lambda fp: None)
    _same_run(simulate(path, w, 2, record_flows=True), exact, ulps)  # a task per flow: the same
    n = len(topology.xpus())
    assert exact.activities == 2 * (2 * (n - 1) * n + 2 * (n // 2 - 1) * (n // 2) + n)  # RS, AG, AR over half, computes


@pytest.mark.parametrize("system", ["star", "ring", "grid"])
def test_the_lane_route_is_bit_identical_to_a_task_per_flow(system, tmp_path, monkeypatch):
    """Every vertex on tasks: the ring on lanes, the all-to-all and direct allreduce per flow (not periodic).

    Against the controller, this workload differs on the grid by 1e-6 s with a task per flow
    as with lanes: vertices starting at one date enter in another order (the module docstring).
    """
    import hcsim.engine.tasks as tasks_module

    topology, path = _platform(system, tmp_path)
    w = _wide_workload(topology.xpus())
    monkeypatch.setattr(tasks_module, "TASK_WAVE", 2)
    lanes = simulate(path, w, 2, record_flows=True)
    monkeypatch.setattr(tasks_module, "periodic_lanes", lambda fp: None)
    per_flow = simulate(path, w, 2, record_flows=True)
    _same_run(lanes, per_flow)
