"""ASTRA-sim's ring all-to-all: what it delivers (the data check) and how long it takes (closed form on a ring)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hcsim.collectives import build_schedule, names
from hcsim.engine import simulate
from hcsim.platform import ring
from hcsim.workload import Workload


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 24), size=st.floats(1.0, 1e9))
def test_it_delivers_every_piece_and_moves_astra_sims_bytes(n: int, size: float) -> None:
    ranks = [f"r{i}" for i in range(n)]
    s = build_schedule("alltoall", "ring", ranks, size)  # the data check: rank j holds shard i*N+j for all i
    assert len(s.flows) == n * (n - 1)
    # every flow goes to the next rank; per rank N(N-1)/2 messages of S/N in all (Ring.cc's stream_count)
    assert all(ranks[(ranks.index(f.src) + 1) % n] == f.dst for f in s.flows)
    sent = sum(f.nbytes for f in s.flows if f.src == "r0")
    assert sent == pytest.approx(n * (n - 1) / 2 * size / n, rel=1e-12)


def test_it_is_listed_for_alltoall() -> None:
    assert "ring" in names("alltoall") and names("alltoall")[0] == "direct"  # the default stays direct


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_time_on_a_ring_is_the_closed_form(compiled, n: int) -> None:
    """sum over k = 1..N-1 of (L + (N-k) S/(N B)) = (N-1) L + (N-1) S/(2B)."""
    bw, lat, size = 100e9, 1e-6, 840_000_000.0  # divisible by 2..8: pieces are whole bytes
    topo = ring(n, bandwidth=bw, latency=lat)
    path = compiled(topo)
    w = Workload()
    w.add_comm("a2a", size, "alltoall", topo.xpus(), algorithm="ring", is_start=True)
    t = simulate(path, w).makespan
    assert t == pytest.approx((n - 1) * lat + (n - 1) * size / (2 * bw), rel=1e-9)
