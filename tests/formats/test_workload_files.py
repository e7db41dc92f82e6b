"""``--workload NAME|FILE``: each kind of workload found by its content, and options that do not apply refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hcsim.errors import HcsimError
from hcsim.formats.chakra import write_chakra
from hcsim.formats.workload_files import load_workload, workload_format, xpu_rates_from_platform
from hcsim.platform import Topology, compile_platform, star
from hcsim.workload import Workload
from hcsim.workload.builders import fig3_example
from hcsim.workload.catalog import WORKLOADS, workload_by_name

SAMPLE = Path(__file__).parents[1] / "data" / "aicb_tp2_pp2_ga2.txt"
RANKS = ["a", "b", "c", "d"]


def test_formats_are_functions_not_methods() -> None:
    """The workload and platform layers know no other tool's format (issue 23)."""
    assert not hasattr(Workload, "to_chakra")
    assert not hasattr(Topology, "read_graphml") and not hasattr(Topology, "write_graphml")


def test_each_kind_is_recognised(tmp_path: Path) -> None:
    fig3 = fig3_example(["a", "b"])
    write_chakra(fig3, tmp_path, "fig3")
    fig3.to_json(tmp_path / "fig3.json")
    assert [workload_format(n) for n in (*WORKLOADS, str(tmp_path / "fig3.json"))] == [None] * 5
    assert workload_format(str(tmp_path / "fig3")) == "chakra"
    assert workload_format(str(tmp_path / "fig3.1.et")) == "chakra"
    assert workload_format(str(SAMPLE)) == "aicb"
    named = load_workload("fig3", ["a", "b"])
    assert sorted(named.nodes) == sorted(fig3.nodes)
    assert sorted(load_workload(str(tmp_path / "fig3"), ["a", "b"]).nodes) == sorted(fig3.nodes)
    assert sorted(load_workload(str(tmp_path / "fig3.json"), ["a", "b"]).nodes) == sorted(fig3.nodes)
    aicb = load_workload(str(SAMPLE), [f"x{i}" for i in range(8)], xpu_flops=1e12)
    assert aicb.graph["source"] == "aicb"


def test_a_named_workload_is_the_catalogs(tmp_path: Path) -> None:
    a = load_workload("coherent-allreduce", RANKS, 16, size="16MiB")
    b = workload_by_name("coherent-allreduce", RANKS, 16, size="16MiB")
    assert dict(a.nodes(data=True)) == dict(b.nodes(data=True))


@pytest.mark.parametrize(
    "name, options, message",
    [
        ("allreduce", {"rank_map": "m.json"}, "--rank-map applies to Chakra traces and AICB files, not 'allreduce'"),
        ("allreduce", {"comm_groups": "g.json"}, "--comm-groups applies to Chakra traces, not 'allreduce'"),
        ("AICB", {"comm_groups": "g.json"}, "--comm-groups applies to Chakra traces, not '.*aicb"),
        ("fig3", {"algorithm": "tree"}, "--algorithm applies to the llama2-13b and allreduce workloads, not 'fig3'"),
        ("JSON", {"algorithm": "tree"}, "--algorithm applies to the llama2-13b and allreduce workloads, not '.*w.js"),
        ("bert", {}, "workload 'bert' is unknown .*a JSON file, a Chakra trace PATH/PREFIX"),
        ("EMPTY", {}, "Chakra trace directory '.*empty' must hold one trace"),
    ],
)
def test_options_that_do_not_apply_are_refused(tmp_path: Path, name: str, options: dict, message: str) -> None:
    json_file = tmp_path / "w.json"
    json_file.write_text(json.dumps({"nodes": []}))
    (tmp_path / "empty").mkdir()
    name = {"AICB": str(SAMPLE), "JSON": str(json_file), "EMPTY": str(tmp_path / "empty")}.get(name, name)
    with pytest.raises(HcsimError, match=message):
        load_workload(name, RANKS, **options)


def test_the_catalog_knows_only_names() -> None:
    with pytest.raises(HcsimError, match=r"workload 'w.json' is unknown \(valid: allreduce, coherent-allreduce"):
        workload_by_name("w.json", RANKS)


def test_xpu_rates_come_from_the_compiled_platform(tmp_path: Path) -> None:
    topo = star(4, "H100")
    compile_platform(topo, tmp_path / "p.xml")
    assert xpu_rates_from_platform(tmp_path / "p.xml") == {x: topo.nodes[x]["fp32_flops"] for x in topo.xpus()}
    (tmp_path / "bad.xml").write_text("<platform")
    with pytest.raises(HcsimError, match="platform file '.*bad.xml' cannot be read for XPU rates"):
        xpu_rates_from_platform(tmp_path / "bad.xml")
