"""The report of a fast run describes the whole system (issue 25, item 7).

With ``fast=True`` only a fold's representatives run, and memoized collectives are not
run in SimGrid flow by flow. The summary's ``xpus``, ``remote_vertices`` and
``bytes_on_links`` must still be the whole system's: here each is compared with the
exact run of the same system. Under a proven fold (symmetry, zones, a layout's
replicas) and memoized steps the bytes are those of the exact run to the last byte;
``top_links`` of a fold names the simulated links only, as ``simulated_top_links``.
"""

from __future__ import annotations

import json

import pytest

from hcsim.engine import report
from hcsim.fast import simulate_system
from hcsim.platform import cxl_system, leaf_spine
from hcsim.workload.builders import allreduce_benchmark
from hcsim.workload.llama2 import llama2_13b


def allreduce(algorithm: str, nbytes: float = 16 * 2**20):
    def factory(ranks, group=None):
        return allreduce_benchmark(ranks, nbytes, algorithm, group)

    return factory


def both(topology_of, workload, iterations=1, **fast):
    exact = report.summarize(simulate_system(topology_of(), workload, iterations))
    quick = report.summarize(simulate_system(topology_of(), workload, iterations, **(fast or {"fast": True})))
    return exact, quick


def test_a_symmetry_fold_reports_the_whole_leaf_spine():
    exact, fast = both(lambda: leaf_spine(4, 4, 16), allreduce("ring"))
    assert exact["folded_from"] is None and exact["fold"] is None and exact["simulated_xpus"] == 64
    assert fast["xpus"] == exact["xpus"] == 64
    assert fast["simulated_xpus"] < 64 and fast["folded_from"] == 64
    assert fast["fold"].startswith(f"symmetry fold: {fast['simulated_xpus']} representative XPUs stand for 64")
    assert fast["memoized_flows"] > 0
    assert fast["bytes_on_links"] == exact["bytes_on_links"] > 0  # every byte x hop, scaled by the fold's weights
    assert fast["simulated_bytes_on_links"] < exact["bytes_on_links"]
    assert fast["top_links"] is None and fast["simulated_top_links"]  # per-link rows are of the simulated links
    assert fast["makespan_s"] == pytest.approx(exact["makespan_s"], rel=1e-12)
    text = report.format_summary(fast)
    assert f"folded                symmetry fold: {fast['simulated_xpus']} representative XPUs stand for 64" in text
    assert "top links, simulated only" in text and "(whole system: bytes x hops)" in text


@pytest.mark.parametrize("algorithm", ["double_binary_tree", "halving_doubling", "direct", "hierarchical"])
def test_memoized_rounds_keep_every_byte(algorithm):
    exact, fast = both(lambda: cxl_system(16), allreduce(algorithm), 2, memoize=True, repeat=True)
    assert fast["memoized_flows"] > 0 and fast["folded_from"] is None
    assert fast["bytes_on_links"] == exact["bytes_on_links"] > 0
    assert fast["top_links"] is not None  # no fold: every link of the system was simulated


@pytest.mark.slow
def test_a_zone_fold_of_training_reports_remote_operators_and_bytes_of_the_whole_system():
    exact, fast = both(lambda: cxl_system(32), llama2_13b, 1)
    assert fast["fold"].startswith("zones fold: 16 representative XPUs stand for 32")
    assert (fast["xpus"], fast["simulated_xpus"]) == (32, 16)
    assert fast["remote_vertices"] == exact["remote_vertices"] == 2 * fast["simulated_remote_vertices"] > 0
    assert fast["bytes_on_links"] == pytest.approx(exact["bytes_on_links"], rel=1e-12)


def test_a_layout_fold_reports_the_whole_system(capsys):
    from hcsim.cli import main

    def run(*extra):
        argv = ["run", "--system", "cxl", "--xpus", "32", "--model", "llama3-8b", "--parallel", "tp=4,pp=2",
                "--microbatches", "2", "--iterations", "1", "--json", *extra]  # fmt: skip
        assert main(argv) == 0
        return json.loads(capsys.readouterr().out)

    exact, fast = run(), run("--fast")
    assert (fast["xpus"], fast["folded_from"]) == (32, 32) and fast["simulated_xpus"] == 16
    assert fast["bytes_on_links"] == pytest.approx(exact["bytes_on_links"], rel=1e-12)
    assert fast["remote_vertices"] == exact["remote_vertices"]
