"""Every builder from the command line, with the flagship workload (issue 25, item 11).

``--system`` offers the fat tree; LLaMA2-13B data-parallel training runs on the generic
builders (leaf-spine, star, fat tree), whose XPUs name no host memory: ``--placement
auto`` keeps the data in XPU memory there and says so, ``--placement spill`` refuses
what does not fit, in one line, as before; ``--placement local`` is the benchmarks'
setting (``experiments/bench_scale.py``) and gives the same numbers as the Python API.
"""

import json

import pytest
from clitools import assert_one_line_error, run

from hcsim.engine import report
from hcsim.engine.memory import all_local
from hcsim.fast import simulate_system
from hcsim.platform import leaf_spine, star
from hcsim.platform.builders import fat_tree
from hcsim.workload.llama2 import llama2_13b

NOTE = "name no host memory, so each operator's data stays in its XPU's memory, its capacity not checked"


@pytest.mark.parametrize(
    ("system", "xpus", "topology"),
    [
        ("leafspine", 32, lambda: leaf_spine(2, 4, 16)),
        ("star", 16, lambda: star(16)),
        ("fattree", 16, lambda: fat_tree(4)),
    ],
)
def test_llama2_13b_runs_on_every_generic_builder_as_from_python(system, xpus, topology):
    common = ("run", "--system", system, "--xpus", xpus, "--workload", "llama2-13b", "--iterations", 1, "--fast")
    auto = run(*common, "--json")
    assert auto.returncode == 0, auto.stderr
    assert NOTE in auto.stderr and "--placement local" in auto.stderr
    local = run(*common, "--json", "--placement", "local")
    assert local.returncode == 0 and NOTE not in local.stderr
    cli = json.loads(auto.stdout)
    assert json.loads(local.stdout)["makespan_s"] == cli["makespan_s"]
    python = report.summarize(simulate_system(topology(), llama2_13b, 1, fast=True, placement=all_local))
    assert cli["makespan_s"] == python["makespan_s"] and cli["xpus"] == xpus
    spill = run(*common, "--placement", "spill")
    assert_one_line_error(spill, "does not fit in the memory of XPU", "has no host_memory")


def test_the_fat_tree_is_a_system_of_every_command(tmp_path):
    xml = tmp_path / "f.xml"
    built = run("platform", "build", "fattree", "--xpus", 16, "-o", xml)
    assert built.returncode == 0 and built.stdout.startswith(f"wrote {xml}: 16 hosts, 20 routers"), built.stdout
    bad = run("run", "--system", "fattree", "--xpus", 64, "--workload", "allreduce", "--iterations", 1)
    assert_one_line_error(bad, "--xpus 64 is invalid for 'fattree'", "k^3/4", "16, 54, 128")
    big = run("run", "--system", "fattree", "--xpus", 4394, "--workload", "allreduce", "--iterations", 1)
    assert_one_line_error(big, "--xpus 4394 is invalid for 'fattree'", "at most 3456")
    on_file = run("run", "--platform", xml, "--workload", "allreduce", "--iterations", 1, "--placement", "local")
    assert_one_line_error(on_file, "--placement local applies to --system, not --platform")


def test_the_paper_systems_still_spill_to_their_memory():
    r = run("run", "--system", "cxl", "--xpus", 16, "--workload", "llama2-13b", "--iterations", 1, "--fast", "--json")
    assert r.returncode == 0 and NOTE not in r.stderr
    assert json.loads(r.stdout)["remote_vertices"] > 0
