import math

import networkx as nx
import pytest

from hcsim.errors import HcsimError
from hcsim.platform import Device, Topology, cxl_system, device
from hcsim.platform.compiler import compile_platform


def small():
    t = Topology()
    t.add_xpu("a", "H100")
    t.add_xpu("b", fp16="40TFLOPS", fp32="10TFLOPS", memory="16GiB", memory_bandwidth="460GBps", device="fpga")
    t.add_memory("m", "inf", "cxl_type3")
    t.add_switch("s", "cxl")
    for n in "abm":
        t.add_link(n, "s", "128GBps", "200ns", link_kind="cxl")
    return t


def test_presets_are_datasheet_values():
    h = device("H100")
    assert (h.fp32_flops, h.fp16_flops, h.memory) == (67e12, 989.4e12, 80 * 2**30)
    assert device("a100").fp32_flops == 19.5e12 and device("V100").fp16_flops == 125e12
    assert "datasheet" in h.source


def test_custom_devices_by_attributes():
    t = small()
    assert t.nodes["b"]["device"] == "fpga" and t.nodes["b"]["fp32_flops"] == 10e12
    asic = Device("asic", fp16="400TFLOPS", fp32="100TFLOPS", memory="64GiB", memory_bandwidth="2TBps")
    t.add_xpu("c", asic)
    t.add_link("c", "s", "64GBps", "300ns")
    assert t.nodes["c"]["device"] == "asic"
    assert t.validate() is t


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda t: t.add_xpu("a", "H100"), "duplicate"),
        (lambda t: t.add_xpu("z", "B200"), "preset 'B200' is unknown"),
        (lambda t: t.add_xpu("z"), "has no fp16 FLOPS"),
        (lambda t: t.add_switch("z", "nvlink"), "switch_kind 'nvlink' is unknown"),
        (lambda t: t.add_memory("z", "1GB", "flash"), "memory_kind 'flash' is unknown"),
        (lambda t: t.add_link("a", "b", "0GBps", "1ns"), "bandwidth must be a finite rate > 0"),
        (lambda t: t.add_link("a", "b", "-5GBps", "1ns"), "bandwidth must be a finite rate > 0"),
        (lambda t: t.add_link("a", "b", "5GBps", "-1ns"), "latency must be a finite time >= 0"),
        (lambda t: t.add_link("a", "s", "5GBps", "1ns"), "duplicate"),
        (lambda t: t.add_link("a", "nowhere", "5GBps", "1ns"), "'nowhere' does not exist"),
        (lambda t: t.add_link("a", "b", "5 furlongs", "1ns"), "cannot parse|unknown unit"),
    ],
)
def test_bad_input_is_refused_with_the_item_named(build, message):
    with pytest.raises(HcsimError, match=message):
        build(small())


def test_validate_catches_graphs_edited_by_plain_networkx():
    t = small()
    t.add_node("x", kind="gpu")
    t.add_edge("x", "s", bandwidth=1e9, latency=0.0)
    with pytest.raises(HcsimError, match="kind 'gpu' is unknown"):
        t.validate()
    t = small()
    t.add_edge("a", "m")  # no bandwidth
    with pytest.raises(HcsimError, match="has no bandwidth"):
        t.validate()


def test_xpu_without_flops_is_refused_at_validation():
    t = small()
    del t.nodes["a"]["fp32_flops"]
    with pytest.raises(HcsimError, match="XPU 'a' has no valid fp32_flops"):
        t.validate()


def test_graphml_round_trip_keeps_everything(tmp_path):
    topo = cxl_system(32, mix="H100+A100")
    path = tmp_path / "t.graphml"
    topo.write_graphml(path)
    back = Topology.read_graphml(path)
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
        Topology.read_graphml(p)
