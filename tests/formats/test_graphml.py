"""GraphML topologies: round trips, units in attributes, bad files, and files igraph wrote back."""

import math

import networkx as nx
import pytest
from lxml import etree

from hcsim.cli import main
from hcsim.errors import HcsimError
from hcsim.formats.graphml import read_graphml, write_graphml
from hcsim.platform import Topology, builders, cxl_system
from hcsim.platform.compiler import compile_platform


def compile_cli(capsys, path, out) -> tuple[int, str]:
    """``hcsim platform compile PATH -o OUT`` in this process: its exit status and stderr."""
    capsys.readouterr()
    rc = main(["platform", "compile", str(path), "-o", str(out)])
    return rc, capsys.readouterr().err


def assert_one_line_error(rc: int, err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_graphml_round_trip_keeps_everything(tmp_path):
    topo = cxl_system(32, mix="H100+A100")
    path = tmp_path / "t.graphml"
    write_graphml(topo, path)
    back = read_graphml(path)
    assert nx.utils.graphs_equal(nx.Graph(topo), nx.Graph(back)) or (
        dict(topo.nodes(data=True)) == dict(back.nodes(data=True))
        and {frozenset(e): d for *e, d in topo.edges(data=True)} == {frozenset(e): d for *e, d in back.edges(data=True)}
    )
    assert back.gateways() == topo.gateways()
    assert math.isinf(back.nodes["r00s00.t3_0"]["capacity"])
    # the same platform comes out, byte for byte
    compile_platform(topo, tmp_path / "a.xml")
    compile_platform(back, tmp_path / "b.xml")
    assert (tmp_path / "a.xml").read_bytes() == (tmp_path / "b.xml").read_bytes()


def test_bad_graphml_is_one_clear_error(tmp_path):
    p = tmp_path / "bad.graphml"
    p.write_text("<graphml><oops")
    with pytest.raises(HcsimError, match="cannot be read"):
        read_graphml(p)


def test_graphml_attributes_may_carry_units(tmp_path):
    """A GraphML written by another tool may store rates and sizes as text: they mean what add_* would."""
    t = Topology()
    t.add_xpu("a", "H100", rank=1)
    t.add_xpu("b", "H100", rank=0)
    t.add_switch("s")
    t.add_link("a", "s", "128GBps", "200ns", lanes=4)
    t.add_link("b", "s", "128GBps", "200ns")
    path = tmp_path / "t.graphml"
    write_graphml(t, path)
    text = path.read_text()
    text = text.replace('attr.type="double"', 'attr.type="string"').replace('attr.type="long"', 'attr.type="string"')
    text = text.replace(">128000000000.0<", ">128GBps<").replace(">2e-07<", ">200ns<")
    text = text.replace(f">{67e12!r}<", ">67TFLOPS<").replace(f">{80 * 2.0**30!r}<", ">80GiB<")
    assert "128GBps" in text and "200ns" in text and "67TFLOPS" in text and "80GiB" in text
    path.write_text(text)
    back = read_graphml(path)
    assert back.edges["a", "s"] == t.edges["a", "s"]
    assert back.edges["a", "s"]["lanes"] == 4 and back.nodes["a"]["rank"] == 1
    assert back.nodes["a"]["fp32_flops"] == 67e12 and back.nodes["a"]["memory"] == 80 * 2**30
    assert back.xpus() == ["b", "a"]


# ---------------------------------------------------------------- GraphML written back by igraph


def _igraph_roundtrip(topo: Topology, tmp_path) -> str:
    igraph = pytest.importorskip("igraph")
    original = tmp_path / "hcsim.graphml"
    write_graphml(topo, original)
    g = igraph.Graph.Read_GraphML(str(original))
    out = tmp_path / "igraph.graphml"
    g.write_graphml(str(out))
    return str(out)


@pytest.mark.parametrize("system", ["cxl", "noncoherent"])
def test_graphml_written_back_by_igraph_compiles_to_the_same_platform(tmp_path, capsys, system):
    topo = builders.paper_system(16, coherent=system == "cxl")
    path = _igraph_roundtrip(topo, tmp_path)
    text = open(path).read()
    assert '<node id="n0">' in text and "Created by igraph" in text  # really igraph's shape
    back = read_graphml(path)
    assert sorted(back.nodes) == sorted(topo.nodes)
    assert {frozenset(e) for e in back.edges} == {frozenset(e) for e in topo.edges}
    direct, via = tmp_path / "direct.xml", tmp_path / "via.xml"
    write_graphml(topo, tmp_path / "direct.graphml")
    assert compile_cli(capsys, tmp_path / "direct.graphml", direct)[0] == 0
    rc, err = compile_cli(capsys, path, via)
    assert rc == 0, err
    assert direct.read_bytes() == via.read_bytes()


def test_graphml_with_names_lost_says_so(tmp_path, capsys):
    path = _igraph_roundtrip(builders.paper_system(8, coherent=True), tmp_path)
    root = etree.parse(path)
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    for data in root.findall(".//g:node/g:data[@key='v_id']", ns):
        data.getparent().remove(data)
    lost = tmp_path / "lost.graphml"
    root.write(str(lost))
    assert_one_line_error(*compile_cli(capsys, lost, tmp_path / "x.xml"), "renamed", "'id' or 'name'")
    assert not (tmp_path / "x.xml").exists()


def test_graphml_with_names_in_a_name_attribute_as_igraph_builds_them(tmp_path):
    """Hand-written in the shape igraph writes for a graph built in igraph: ids n<k>, names in 'name'."""
    path = tmp_path / "built.graphml"
    path.write_text(
        """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="v_name" for="node" attr.name="name" attr.type="string"/>
  <key id="v_kind" for="node" attr.name="kind" attr.type="string"/>
  <key id="v_device" for="node" attr.name="device" attr.type="string"/>
  <key id="v_switch_kind" for="node" attr.name="switch_kind" attr.type="string"/>
  <key id="v_fp16_flops" for="node" attr.name="fp16_flops" attr.type="double"/>
  <key id="v_fp32_flops" for="node" attr.name="fp32_flops" attr.type="double"/>
  <key id="e_bandwidth" for="edge" attr.name="bandwidth" attr.type="double"/>
  <key id="e_latency" for="edge" attr.name="latency" attr.type="double"/>
  <graph id="G" edgedefault="undirected">
    <node id="n0"><data key="v_name">gpu-a</data><data key="v_kind">xpu</data><data key="v_device">custom</data>
      <data key="v_switch_kind"></data><data key="v_fp16_flops">1e12</data><data key="v_fp32_flops">5e11</data></node>
    <node id="n1"><data key="v_name">gpu-b</data><data key="v_kind">xpu</data><data key="v_device">custom</data>
      <data key="v_switch_kind"></data><data key="v_fp16_flops">1e12</data><data key="v_fp32_flops">5e11</data></node>
    <node id="n2"><data key="v_name">sw</data><data key="v_kind">switch</data><data key="v_device"></data>
      <data key="v_switch_kind">generic</data></node>
    <edge source="n0" target="n2"><data key="e_bandwidth">1e9</data><data key="e_latency">1e-6</data></edge>
    <edge source="n1" target="n2"><data key="e_bandwidth">1e9</data><data key="e_latency">1e-6</data></edge>
  </graph>
</graphml>
"""
    )
    topo = read_graphml(path)
    assert sorted(topo.nodes) == ["gpu-a", "gpu-b", "sw"]
    assert "switch_kind" not in topo.nodes["gpu-a"] and "device" not in topo.nodes["sw"]


def test_graphml_with_duplicate_kept_names_is_refused(tmp_path, capsys):
    path = tmp_path / "dup.graphml"
    path.write_text(
        """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="v_id" for="node" attr.name="id" attr.type="string"/>
  <graph id="G" edgedefault="undirected">
    <node id="n0"><data key="v_id">a</data></node><node id="n1"><data key="v_id">a</data></node>
    <edge source="n0" target="n1"/>
  </graph>
</graphml>
"""
    )
    assert_one_line_error(*compile_cli(capsys, path, tmp_path / "x.xml"), "'a'", "unique")
