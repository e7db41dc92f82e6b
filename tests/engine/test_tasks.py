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

import pytest

from hcsim.engine import EngineOptions, simulate
from hcsim.engine.tasks import TASK_WAVE
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
