import pytest

from hcsim.errors import HcsimError
from hcsim.platform import Device, Topology, device
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
        (lambda t: t.add_link("a", "b", "0GBps", "1ns"), "bandwidth must be a finite rate >= 1 B/s"),
        (lambda t: t.add_link("a", "b", "-5GBps", "1ns"), "bandwidth must be a finite rate >= 1 B/s"),
        (lambda t: t.add_link("a", "b", "5GBps", "-1ns"), "latency must be a time >= 0"),
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


@pytest.mark.parametrize(
    "bandwidth, latency, lanes, message",
    [
        (5e-300, "1us", 1, "bandwidth must be a finite rate >= 1 B/s"),  # 1/bandwidth overflowed in routing
        ("0.5Bps", "1us", 1, "bandwidth must be a finite rate >= 1 B/s"),
        ("1GBps", 1e300, 1, "latency must be a time >= 0 and at most 1e\\+06 s"),
        ("1GBps", "1us", 0, "lanes 0 is invalid"),
        ("1GBps", "1us", 2.5, "lanes 2.5 is invalid"),
        ("1GBps", "1us", 1 << 20, "at most 65536"),
    ],
)
def test_link_parameters_out_of_range_are_refused_and_not_added(bandwidth, latency, lanes, message):
    t = small()
    with pytest.raises(HcsimError, match=message):
        t.add_link("a", "b", bandwidth, latency, lanes=lanes)
    assert not t.has_edge("a", "b")


def test_self_loop_is_refused_by_add_link_and_validate():
    t = small()
    with pytest.raises(HcsimError, match="'s'--'s' joins a node to itself"):
        t.add_link("s", "s", "1GBps", "1us")
    assert not t.has_edge("s", "s")
    t.add_edge("s", "s", bandwidth=1e9, latency=1e-6)  # plain NetworkX lets it in
    with pytest.raises(HcsimError, match="joins a node to itself"):
        t.validate()


def test_routes_at_the_extreme_link_parameters_are_weighed():
    from hcsim.platform.routing import Router, path_latency

    t = Topology()
    for n in ("a", "b"):
        t.add_xpu(n, "H100")
    t.add_switch("slow")
    t.add_switch("fast")
    t.add_link("a", "slow", "1Bps", "1us")  # the slowest link accepted
    t.add_link("slow", "b", "1Bps", "1us")
    t.add_link("a", "fast", "1GBps", 1e6)  # the longest latency accepted
    t.add_link("fast", "b", "1GBps", 1e6)
    assert Router(t.validate()).path("a", "b") == ("a", "slow", "b")
    assert path_latency(t, ["a", "fast", "b"]) == 2e6


def test_link_names_that_would_collide_in_simgrid_are_refused(tmp_path):
    t = Topology()
    for n in ("a", "b--c", "a--b", "c"):
        t.add_xpu(n, "H100")
    t.add_link("a", "b--c", "1GBps", "1us")
    t.add_link("a--b", "c", "1GBps", "1us")
    t.add_link("a", "c", "1GBps", "1us")
    with pytest.raises(HcsimError, match="both get the SimGrid link name 'a--b--c'"):
        compile_platform(t, tmp_path / "p.xml")
    assert list(tmp_path.iterdir()) == []


def test_xpus_are_in_rank_order_with_ties_and_unranked_in_insertion_order():
    t = Topology()
    for name, rank in (("u1", None), ("c", 2), ("t1", 1), ("a", 0), ("t0", 1), ("u0", None), ("z", 5)):
        t.add_xpu(name, "H100", **({} if rank is None else {"rank": rank}))
    assert t.xpus() == ["a", "t1", "t0", "c", "z", "u1", "u0"]
