"""``hcsim collective``: nccl-tests' time / algbw / busbw, closed forms, every registered algorithm, bad input."""

from __future__ import annotations

import csv
import json
import os

import pytest

from hcsim.cli import main
from hcsim.collectives import algorithm, names
from hcsim.sweep.collective_bench import busbw_factor, parse_sizes

RING = ["--system", "ring", "--xpus", "4", "--link-bandwidth", "100GBps", "--link-latency", "1us"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["collective", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_busbw_factors_are_nccl_tests():
    assert busbw_factor("allreduce", 8) == 2 * 7 / 8
    for kind in ("reduce_scatter", "allgather", "alltoall"):
        assert busbw_factor(kind, 8) == 7 / 8
    assert busbw_factor("broadcast", 8) == busbw_factor("reduce", 8) == 1.0


def test_sizes_double_or_list():
    assert parse_sizes("1KiB:8KiB") == [1024, 2048, 4096, 8192]
    assert parse_sizes("1KiB:3KiB") == [1024, 2048]
    assert parse_sizes("4MiB,1KiB") == [1024, 4 * 2**20]


def test_ring_allreduce_matches_closed_form_and_definitions(capsys):
    sizes = [2**20, 2**22]
    code, out, _ = run(capsys, *RING, "--algorithm", "ring", "--sizes", "1MiB,4MiB", "--json")
    assert code == 0
    doc = json.loads(out)
    n, lat, bw = 4, 1e-6, 100e9
    assert [r["size_bytes"] for r in doc["rows"]] == sizes
    for r in doc["rows"]:
        s = r["size_bytes"]
        closed = 2 * (n - 1) * (lat + s / (n * bw))
        assert r["time_us"] * 1e-6 == pytest.approx(closed, rel=1e-9)
        assert r["algbw_gbps"] == pytest.approx(s / (r["time_us"] * 1e-6) / 1e9, rel=1e-12)
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * 2 * (n - 1) / n, rel=1e-12)
    assert doc["best"] == {str(s): "ring" for s in sizes}
    # the table prints the same time
    code, out, _ = run(capsys, *RING, "--algorithm", "ring", "--sizes", "1MiB")
    closed_us = 2 * 3 * (1e-6 + 2**20 / (4 * 100e9)) * 1e6
    assert f"{closed_us:.3f}" in out and "busbw(GB/s)" in out


def test_all_runs_every_registered_allreduce(capsys, tmp_path):
    cxl = ["--system", "cxl", "--xpus", "8"]  # one server: every registered allreduce applies
    code, out, _ = run(capsys, *cxl, "--algorithm", "all", "--sizes", "64KiB", "--json")
    assert code == 0
    rows = json.loads(out)["rows"]
    assert [r["algorithm"] for r in rows] == list(names("allreduce"))
    assert sum(r["best"] for r in rows) == 1
    coherent_only = [a for a in names("allreduce") if algorithm("allreduce", a).coherent]
    assert coherent_only  # coherent_ring at least
    code, out, _ = run(capsys, "--system", "noncoherent", "--xpus", "8", "--algorithm", "all", "--sizes", "64KiB")
    assert code == 0
    for a in coherent_only:
        assert f"note: skipped {a}" in out
    # other kinds run through the same registry
    for kind in ("reduce_scatter", "allgather", "broadcast", "reduce", "alltoall"):
        code, out, _ = run(capsys, *RING, "--kind", kind, "--sizes", "64KiB", "--json")
        rows = json.loads(out)["rows"]
        assert code == 0 and {r["algorithm"] for r in rows} == set(names(kind))
        for r in rows:
            assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * busbw_factor(kind, 4), rel=1e-12)


def test_csv_and_png_written_atomically(capsys, tmp_path):
    out_dir = tmp_path / "res"
    code, _, _ = run(capsys, *RING, "--algorithm", "ring", "--sizes", "1KiB:4KiB", "--out", str(out_dir))
    assert code == 0
    assert sorted(os.listdir(out_dir)) == ["collective_allreduce.csv", "collective_allreduce.png"]
    with open(out_dir / "collective_allreduce.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [
        "kind", "algorithm", "ranks", "size_bytes", "time_us", "algbw_gbps", "busbw_gbps", "best", "exact",
        "activities",
    ]  # fmt: skip
    assert [int(r["size_bytes"]) for r in rows] == [1024, 2048, 4096]
    assert all(r["best"] == "True" for r in rows)


@pytest.mark.parametrize(
    "argv",
    [
        ["--kind", "gather"],
        ["--algorithm", "nosuch"],
        ["--sizes", "4KiB:1KiB"],
        ["--sizes", "0B:1KiB"],
        ["--sizes", "lots"],
        ["--ranks", "1"],
        ["--ranks", "5"],
        ["--algorithm", "coherent_ring"],  # the ring system is not coherent
        ["--iterations", "0"],
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(capsys, tmp_path, argv):
    out_dir = tmp_path / "res"
    code, out, err = run(capsys, *RING, "--sizes", "1KiB", *argv, "--out", str(out_dir))
    assert code == 2
    assert err.startswith("hcsim: error: ") and err.count("\n") == 1, err
    assert not out_dir.exists()
    assert os.listdir(tmp_path) == []


def test_needs_a_platform(capsys):
    code, _, err = run(capsys, "--sizes", "1KiB")
    assert code == 2 and err.count("\n") == 1


def test_sweep_experiment_matches_the_command(capsys):
    from hcsim.sweep.experiments import collective

    row = collective("ring", 4, "allreduce", "ring", "1MiB")
    code, out, _ = run(capsys, "--system", "ring", "--xpus", "4", "--algorithm", "ring", "--sizes", "1MiB", "--json")
    (cmd,) = json.loads(out)["rows"]
    assert row["exact"] and row["time_us"] == cmd["time_us"] and row["busbw_gbps"] == cmd["busbw_gbps"]
    ft = collective("fattree", 8, "allreduce", "ring", "1MiB")  # the first 8 XPUs of a k=4 fat tree
    assert ft["time_us"] > 0 and not ft["coherent"]


def test_platform_file_and_ranks(capsys, tmp_path):
    xml = str(tmp_path / "ring8.xml")
    assert main(["platform", "build", "ring", "--xpus", "8", "--link-latency", "1us", "-o", xml]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "--platform", xml, "--ranks", "4", "--algorithm", "ring", "--sizes", "1KiB", "--json")
    (row,) = json.loads(out)["rows"]
    assert code == 0 and row["ranks"] == 4
    # 4 ranks of an 8-ring: the hop from rank 3 back to rank 0 takes the short way, 3 links, and each step waits for it
    assert row["time_us"] * 1e-6 == pytest.approx(2 * 3 * (3e-6 + 256 / 128e9), rel=1e-9)


def test_fast_paths_within_one_percent_and_the_note_says_what_ran_exact(capsys):
    argv = ["--system", "cxl", "--xpus", "64", "--algorithm", "ring,coherent_ring,halving_doubling", "--sizes"]
    code, out, _ = run(capsys, *argv, "1KiB,64MiB", "--json")
    assert code == 0
    exact = {(r["algorithm"], r["size_bytes"]): r for r in json.loads(out)["rows"]}
    code, out, _ = run(capsys, *argv, "1KiB,64MiB", "--json", "--fast")
    assert code == 0
    doc = json.loads(out)
    fast = {(r["algorithm"], r["size_bytes"]): r for r in doc["rows"]}
    assert not any(r["exact"] for r in fast.values())
    for k, r in fast.items():
        assert r["time_us"] == pytest.approx(exact[k]["time_us"], rel=0.01)
        assert r["activities"] < exact[k]["activities"]  # it really took the shortcut (folded or rounds skipped)
    code, out, _ = run(capsys, *argv, "1KiB", "--json", "--fast", "--ranks", "32")
    doc = json.loads(out)
    assert all(r["exact"] for r in doc["rows"]) and any("--fast: exact for" in n for n in doc["notes"])


def test_with_all_an_algorithm_the_engine_refuses_is_a_note(capsys, monkeypatch):
    monkeypatch.setenv("HCSIM_MAX_FLOWS_AT_ONCE", "11")  # direct over 4 ranks starts 12
    code, out, _ = run(capsys, *RING, "--algorithm", "all", "--sizes", "1MiB", "--json")
    assert code == 0
    doc = json.loads(out)
    ran = {r["algorithm"] for r in doc["rows"]}
    assert "ring" in ran and "direct" not in ran
    assert any(n.startswith("not run: direct: allreduce 'direct' over 4 ranks starts") for n in doc["notes"])
    code, _, err = run(capsys, *RING, "--algorithm", "direct", "--sizes", "1MiB")
    assert code == 2 and err.count("\n") == 1 and "starts" in err


@pytest.mark.parametrize("name", ["direct", "hierarchical", "double_binary_tree"])
def test_run_takes_the_allreduce_algorithm_of_the_data_parallel_workloads(capsys, name):
    """`hcsim run --workload allreduce --algorithm X` times what `hcsim collective --algorithm X` times."""
    system = ["--system", "cxl", "--xpus", "16"]
    assert main(["run", *system, "--workload", "allreduce", "--bytes", "64MiB", "--algorithm", name,
                 "--iterations", "1", "--json"]) == 0  # fmt: skip
    ran = json.loads(capsys.readouterr().out)
    code, out, _ = run(capsys, *system, "--algorithm", name, "--sizes", "64MiB", "--json")
    assert code == 0
    assert ran["makespan_s"] * 1e6 == pytest.approx(json.loads(out)["rows"][0]["time_us"], rel=1e-12)


def test_run_fast_memoizes_a_non_ring_allreduce_within_one_percent(capsys):
    """`hcsim run --fast --algorithm hierarchical` runs the rounds fast path (no fold: only rings stand for groups)."""
    base = ["run", "--system", "cxl", "--xpus", "64", "--workload", "allreduce", "--bytes", "64MiB",
            "--algorithm", "hierarchical", "--iterations", "2", "--json"]  # fmt: skip
    assert main(base) == 0
    exact = json.loads(capsys.readouterr().out)
    assert main([*base, "--fast"]) == 0
    fast = json.loads(capsys.readouterr().out)
    assert fast["makespan_s"] == pytest.approx(exact["makespan_s"], rel=0.01)
    assert fast["xpus"] == 64 and fast["memoized_flows"] > 0
