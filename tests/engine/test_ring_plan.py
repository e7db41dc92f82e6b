"""The engine's ring plan (hcsim.collectives.plans): every flow goes to its rank's ring neighbour.

A wrong-neighbour mutation of the plan (a flow to rank i+2, or to i-1) used to be caught
by one sampled test only; here every flow of every step is checked for every ring size
from 2 to 12, full and compact, with and without a folded group, against the ring's
definition: in step j rank i sends chunk S/g to rank i+1, and its next send waits for
that send and for the chunk it receives from rank i-1.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hcsim.collectives.plans import RING_KINDS, plan, ring_steps


def check_ring(kind: str, n: int, nbytes: float, group: int | None, compact: bool) -> None:
    ranks = [f"x{i}" for i in range(n)]
    fp = plan(kind, "ring", ranks, nbytes, group=group, compact=compact)
    g = n if group is None else group
    steps = ring_steps(kind, "ring", g)
    listed = min(1, steps) if compact else steps
    assert fp.steps == steps and len(fp) == listed * n
    chunk = max(1, int(round(nbytes / g)))
    for f in range(len(fp)):
        j, i = divmod(f, n)
        assert (fp.src[f], fp.dst[f]) == (ranks[i], ranks[(i + 1) % n]), (kind, n, f)
        assert fp.size[f] == chunk
        assert fp.waits[f] == (0 if j == 0 else 2)
        nxt = [(j + 1) * n + i, (j + 1) * n + (i + 1) % n] if j + 1 < listed else []
        assert fp.releases[f] == nxt, (kind, n, f)
    for j in range(listed):  # each step: every rank sends once and receives once
        step = range(j * n, (j + 1) * n)
        assert sorted(fp.src[f] for f in step) == sorted(ranks) == sorted(fp.dst[f] for f in step)


@pytest.mark.parametrize("kind", RING_KINDS)
@pytest.mark.parametrize("n", range(2, 13))
@pytest.mark.parametrize("compact", [False, True])
def test_every_flow_of_the_ring_goes_to_the_next_rank(kind, n, compact):
    check_ring(kind, n, 3 * 2**20 + 7, None, compact)


@given(st.sampled_from(RING_KINDS), st.integers(2, 24), st.integers(0, 40), st.booleans(), st.floats(1, 1e12))
def test_a_folded_ring_keeps_the_full_group_step_count_and_chunk(kind, n, extra, compact, nbytes):
    check_ring(kind, n, nbytes, n + extra, compact)


def test_ring_step_counts_are_the_closed_forms():
    for g in range(2, 40):
        assert ring_steps("allreduce", "ring", g) == 2 * (g - 1)
        assert ring_steps("allgather", "ring", g) == ring_steps("reduce_scatter", "ring", g) == g - 1
