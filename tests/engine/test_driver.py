"""The driver's loop, with SimGrid for real: timers, exec ends, lanes, observers, cancellation.

Each scenario runs in a SimGrid process of its own on a two-XPU ring (one link of 1 GB/s
and 1 ms each way) and returns what the driver handed back, when: ``(date, key)`` rows.
The engine's one-lane loop (``Driver._run_one_lane``) and the general loop (taken with a
custom horizon, several lanes, ``after_wake`` or ``next_wake``) must say the same.
"""

from __future__ import annotations

import pytest

from hcsim.engine.driver import Driver, relative_horizon
from hcsim.platform import ring
from hcsim.simgrid_runtime import import_simgrid, load_platform, run_isolated

BANDWIDTH, LATENCY = 1e9, 1e-3


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    from hcsim.platform import compile_platform

    path = str(tmp_path_factory.mktemp("driver") / "ring2.xml")
    compile_platform(ring(2, bandwidth=BANDWIDTH, latency=LATENCY), path)
    return path


def _in_simgrid(path: str, scenario, general: bool = False) -> list:
    """Run ``scenario(sg, driver, hosts, log)`` in the controller actor of a fresh SimGrid process; return ``log``.

    ``general``: the driver gets a horizon equal to the default but not it, so its general loop runs.
    """

    def child() -> list:
        sg = import_simgrid()
        engine = load_platform(path, one_actor=True)
        hosts = [engine.host_by_name(n) for n in ("xpu0", "xpu1")]
        log: list = []

        def controller() -> None:
            driver = Driver(sg, horizon=(lambda now: relative_horizon(now)) if general else relative_horizon)
            scenario(sg, driver, hosts, log)

        hosts[0].add_actor("controller", controller)
        engine.run()
        return log

    return run_isolated(child)


def _handed_back(log: list):
    """complete() and timer() callbacks that log (date, key)."""

    def complete(act, key, now) -> None:
        log.append((now, key))

    def timer(key, now) -> None:
        log.append((now, key))

    return complete, timer


def _exec(sg, host, seconds: float):
    act = sg.this_actor.exec_init(seconds * host.speed)
    act.host = host
    return act.start()


def _timers(sg, driver, hosts, log) -> None:
    driver.add_timer(3.0, "three")
    driver.add_timer(1.0, "one, second", order=2)
    driver.add_timer(1.0, "one, first", order=1)
    driver.cancel_timer(driver.add_timer(0.5, "cancelled"))
    driver.add_timer(2.0, "two")
    log.append(("next due", driver.next_due()))  # the cancelled timer is not due
    driver.run(*_handed_back(log))
    log.append(("end", sg.Engine.clock))


@pytest.mark.parametrize("general", [False, True], ids=["one-lane loop", "general loop"])
def test_timers_are_handed_back_in_date_then_order_and_cancelled_ones_never(platform, general):
    log = _in_simgrid(platform, _timers, general)
    assert log == [
        ("next due", 1.0),
        (1.0, "one, first"),
        (1.0, "one, second"),
        (2.0, "two"),
        (3.0, "three"),
        ("end", 3.0),
    ]


def _lanes(sg, driver, hosts, log) -> None:
    lanes = Driver(sg, lanes=2)
    lanes.add_timer(1.0, "lane 1, early", lane=1, order=0)
    lanes.add_timer(1.0, "lane 0, late", lane=0, order=9)
    lanes.add_timer(0.5, "lane 1 alone", lane=1)
    lanes.run(*_handed_back(log))


def test_due_timers_of_lane_0_go_before_lane_1_at_one_date(platform):
    assert _in_simgrid(platform, _lanes) == [(0.5, "lane 1 alone"), (1.0, "lane 0, late"), (1.0, "lane 1, early")]


def _exec_ends(sg, driver, hosts, log) -> None:
    alone = _exec(sg, hosts[1], 1.0)
    driver.add_exec(alone, "alone on xpu1", 1.0)
    a, b = _exec(sg, hosts[0], 1.0), _exec(sg, hosts[0], 1.0)  # sharing xpu0: each takes 2 s
    driver.add_exec(a, "shared a", 1.0)
    driver.add_exec(b, "shared b", 1.0)
    log.append(("watched before", len(driver.owner)))
    driver.run(*_handed_back(log))


@pytest.mark.parametrize("general", [False, True], ids=["one-lane loop", "general loop"])
def test_an_exec_is_looked_at_its_end_and_waited_for_if_not_done(platform, general):
    log = _in_simgrid(platform, _exec_ends, general)
    assert log[0] == ("watched before", 0)  # exec ends are in the heap, not in the ActivitySet
    assert log[1] == (1.0, "alone on xpu1")
    shared = sorted(log[2:], key=lambda row: row[1])
    assert [key for _, key in shared] == ["shared a", "shared b"]
    assert all(now == pytest.approx(2.0, rel=1e-12) for now, _ in shared)


class _Observer:
    def __init__(self, log: list) -> None:
        self.log = log

    def flow_started(self, act, key, src, dst, links, now) -> None:
        self.log.append(("started", key, src.name, dst.name, links, now))

    def flow_ended(self, act, key, now) -> None:
        self.log.append(("ended", key, now))


def _observed(sg, driver, hosts, log) -> None:
    driver.observe(_Observer(log))
    a, b = hosts
    size = int(BANDWIDTH * 0.1)  # 0.1 s of transfer after the latency
    driver.add_flow(sg.Comm.sendto_async(a, b, size), "flow", a, b, ("l",), 0.0)
    doomed = sg.Comm.sendto_async(b, a, size)
    driver.add_flow(doomed, "cancelled flow", b, a, None, 0.0)
    driver.watch(_exec(sg, a, 0.05), "exec")  # watched, not a flow: no observer hears of it
    driver.add_timer(0.01, "cancel")

    complete, _ = _handed_back(log)

    def timer(key, now) -> None:
        log.append(("cancel returns", driver.cancel(doomed, now)))

    driver.run(complete, timer)


@pytest.mark.parametrize("general", [False, True], ids=["one-lane loop", "general loop"])
def test_observers_hear_of_every_flow_before_its_owner_and_of_cancellations(platform, general):
    log = _in_simgrid(platform, _observed, general)
    assert log[:2] == [
        ("started", "flow", "xpu0", "xpu1", ("l",), 0.0),
        ("started", "cancelled flow", "xpu1", "xpu0", None, 0.0),
    ]
    assert log[2] == ("ended", "cancelled flow", pytest.approx(0.01))  # cancel() tells the observers
    assert log[3] == ("cancel returns", "cancelled flow")
    assert log[4] == (pytest.approx(0.05), "exec")
    assert log[5][:2] == ("ended", "flow") and log[6][1] == "flow"  # the observer first, then the owner
    assert log[5][2] == log[6][0] == pytest.approx(LATENCY + 0.1, rel=1e-9)
    assert len(log) == 7  # the cancelled flow is never handed back


def _wakes(sg, driver, hosts, log) -> None:
    deadline = [0.25]

    def next_wake() -> float:
        return deadline[0]

    def after_wake(now, act) -> None:
        log.append(("woke", now, act is not None))
        deadline[0] = float("inf") if now >= 0.5 else 0.5

    driver.add_timer(0.3, "timer")
    driver.watch(_exec(sg, hosts[0], 0.6), "exec")
    complete, timer = _handed_back(log)
    driver.run(complete, timer, after_wake=after_wake, next_wake=next_wake)


def test_after_wake_follows_every_wake_up_and_next_wake_adds_dates(platform):
    log = _in_simgrid(platform, _wakes)
    assert log == [
        ("woke", 0.25, False),  # next_wake's date: nothing handed back
        (0.3, "timer"),
        ("woke", 0.3, False),
        ("woke", 0.5, False),
        (pytest.approx(0.6), "exec"),
        ("woke", pytest.approx(0.6), True),
    ]


def _together(sg, driver, hosts, log) -> None:
    for i in range(2):  # two execs ending together, one on each XPU
        driver.watch(_exec(sg, hosts[i], 0.2), f"exec{i}")
    complete, _ = _handed_back(log)

    def counted(act, key, now) -> None:
        complete(act, key, now)
        if key == "exec0" or key == "exec1":
            log.append(("drained", driver.drain(now, complete)))

    driver.run(counted)


def test_drain_hands_back_what_completed_at_the_same_date(platform):
    log = _in_simgrid(platform, _together)
    first = log[0][1]
    other = "exec1" if first == "exec0" else "exec0"
    assert log == [(0.2, first), (0.2, other), ("drained", 1)]  # one wake-up for both
