"""The list-order plans of the kinds that are not rings (hcsim.collectives.plans.plan): every field, by hand.

A p2p is one flow of the whole message; a broadcast is a chain down the rank list (each
hop waits for the one before it), a reduce the same chain up the list; the direct
all-to-all sends S/N from every rank to every other at once. Written out for small
cases (and a message under one byte, which still moves one), so that a changed
endpoint, size, wait count, release or step count fails here: mutation testing found
none of them pinned down by the ring plan's tests (docs/testing.md).
"""

from __future__ import annotations

import pytest

from hcsim.collectives.plans import FlowPlan, plan


def fields(fp: FlowPlan) -> tuple:
    return fp.src, fp.dst, fp.size, fp.waits, fp.releases, fp.steps, fp.joins, fp.delay


def test_p2p_is_one_flow_of_the_whole_message() -> None:
    assert fields(plan("p2p", "direct", ["a", "b"], 1000.0)) == (["a"], ["b"], [1000], [0], [[]], 1, 0, 0.0)
    assert plan("p2p", "direct", ["a", "b"], 0.4).size == [1]  # under a byte: still one byte


@pytest.mark.parametrize(("kind", "order"), [("broadcast", "abcd"), ("reduce", "dcba")])
def test_broadcast_and_reduce_are_chains_along_the_list(kind: str, order: str) -> None:
    fp = plan(kind, "chain", list("abcd"), 64.0)
    o = list(order)
    assert fields(fp) == (o[:3], o[1:], [64, 64, 64], [0, 1, 1], [[1], [2], []], 3, 0, 0.0)


def test_a_chain_of_two_is_one_hop() -> None:
    assert fields(plan("broadcast", "chain", ["a", "b"], 8.0)) == (["a"], ["b"], [8], [0], [[]], 1, 0, 0.0)


def test_alltoall_sends_a_share_from_every_rank_to_every_other_at_once() -> None:
    fp = plan("alltoall", "direct", ["a", "b", "c"], 30.0)
    pairs = [("a", "b"), ("a", "c"), ("b", "a"), ("b", "c"), ("c", "a"), ("c", "b")]
    assert fields(fp) == ([s for s, _ in pairs], [d for _, d in pairs], [10] * 6, [0] * 6, [[]] * 6, 1, 0, 0.0)


def test_a_ring_plan_lists_every_step_unless_compact() -> None:
    full = plan("allreduce", "ring", ["a", "b", "c"], 30.0)
    assert full.steps == 4 and len(full) == 12
    assert len(plan("allreduce", "ring", ["a", "b", "c"], 30.0, compact=True)) == 3


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown communication kind 'gather'"):
        plan("gather", "x", ["a", "b"], 1.0)
