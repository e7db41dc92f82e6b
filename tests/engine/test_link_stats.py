"""The columnar per-link statistics equal one pass over the flows, bit for bit.

``report.link_stats`` sums a link's bytes in flow order and steps its level through its
flows' starts and ends sorted by (date, rate change), as the loop below does one flow at a
time; the dictionaries must be equal (no tolerance), with zero-length flows, ties of dates,
flows without a route and links shared by many pairs.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hcsim.engine.report import link_stats

HOSTS = ["a", "b", "c", "d"]
ROUTES = {
    ("a", "b"): ["a-s", "s-b"],
    ("b", "a"): ["b-s", "s-a"],
    ("a", "c"): ["a-s", "s-t", "t-c"],
    ("c", "d"): ["c-t", "t-d"],
    ("d", "a"): ["d-t", "t-s", "s-a"],
    ("b", "c"): ["b-s", "s-t", "t-c"],
    ("c", "a"): [],  # same host: no link
}
LINKS = {link for route in ROUTES.values() for link in route}


def _one_pass(result: Any) -> list[dict[str, Any]]:
    carried: dict[str, float] = {}
    events: dict[str, list[tuple[float, float]]] = {}
    for src, dst, size, start, end in result.flows:
        rate = size / (end - start) if end > start else 0.0
        for link in result.routes.get((src, dst), ()):
            carried[link] = carried.get(link, 0.0) + size
            events.setdefault(link, []).extend([(start, rate), (end, -rate)])
    span = result.makespan or 1.0
    stats = []
    for link, nbytes in carried.items():
        bw = result.link_bandwidth[link]
        level = peak = 0.0
        for _, delta in sorted(events[link], key=lambda e: (e[0], e[1])):
            level += delta
            peak = max(peak, level)
        stats.append({"link": link, "bytes": nbytes, "bandwidth_Bps": bw, "mean_utilization": nbytes / (bw * span),
                      "peak_utilization": min(peak / bw, 1.0)})  # fmt: skip
    stats.sort(key=lambda s: (-s["mean_utilization"], s["link"]))
    return stats


dates = st.sampled_from([0.0, 0.1, 0.25, 1 / 3, 0.5, 1.0, 2.0]) | st.integers(0, 3000).map(lambda i: i / 1000)  # ties
flow = st.tuples(st.sampled_from(sorted(ROUTES)), st.floats(0, 1e9, allow_nan=False), dates, dates)


@settings(max_examples=100, deadline=None)
@given(st.lists(flow, max_size=40), st.floats(0, 5, allow_nan=False))
def test_columnar_stats_equal_the_loop(flows: list, makespan: float) -> None:
    result = SimpleNamespace(
        flows=[(s, d, size, min(a, b), max(a, b)) for (s, d), size, a, b in flows],
        routes=ROUTES,
        link_bandwidth={link: 1e9 + 7 * i for i, link in enumerate(sorted(LINKS))},
        makespan=makespan,
    )
    assert link_stats(result) == _one_pass(result)
