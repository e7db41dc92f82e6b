import pytest

from hcsim.errors import HcsimError
from hcsim.platform import cxl_system, leaf_spine, noncoherent_system, ring, single_server, star
from hcsim.platform.builders import TABLE5


def count(topo, kind, sub=None, key="switch_kind"):
    return sum(1 for _, d in topo.nodes(data=True) if d["kind"] == kind and (sub is None or d.get(key) == sub))


@pytest.mark.parametrize("coherent", [False, True])
def test_paper_server_structure(coherent):
    topo = (cxl_system if coherent else noncoherent_system)(256)  # 2 racks x 16 servers
    servers = 32
    assert len(topo.xpus()) == 256
    assert count(topo, "switch", "cpu") == 2 * servers
    assert count(topo, "switch", "pcie") == 2 * servers
    assert count(topo, "switch", "xpu") == servers
    assert count(topo, "switch", "nic") == servers
    assert count(topo, "switch", "tor") == 2 and count(topo, "switch", "core") == 1
    s = "r01s05"
    assert topo.edges[f"{s}.cpu0", f"{s}.cpu1"]["bandwidth"] == TABLE5["upi"].bandwidth
    for c in range(2):
        assert topo.edges[f"{s}.cpu{c}", f"{s}.pcie{c}"]["lanes"] == 4  # four PCIe links CPU -> switch
    for i in range(8):
        x = f"{s}.xpu{i}"
        assert topo.has_edge(x, f"{s}.pcie{i // 4}") and topo.has_edge(x, f"{s}.xsw")
        assert topo.nodes[x]["rank"] == (16 + 5) * 8 + i
    assert topo.edges[f"{s}.nic", "r01.tor"]["bandwidth"] == 12.5e9
    assert topo.edges["r01.tor", "core"]["latency"] == 5e-6
    mem = count(topo, "memory", "cxl_type3", key="memory_kind")
    assert mem == (256 if coherent else 0)  # every XPU has its own Type 3 device in (b)
    assert count(topo, "memory", "host_dram", key="memory_kind") == 2 * servers


def test_cxl_fabric_is_cascaded_and_parametric():
    topo = cxl_system(512, cxl_bandwidth="256GBps", cxl_latency="1us")
    assert count(topo, "switch", "cxl") == 64 + 4 + 1  # server, rack, top
    e = topo.edges["r02s03.xpu1", "r02s03.cxl"]
    assert (e["bandwidth"], e["latency"]) == (256e9, 1e-6)
    assert topo.has_edge("r02s03.t3_1", "r02s03.cxl")
    assert topo.has_edge("r02s03.cxl", "r02.cxl") and topo.has_edge("r02.cxl", "cxl.top")
    assert topo.gateways()["r02/s03"] == "r02s03.cxl"


def test_mixes_choose_the_type_per_tor():
    topo = cxl_system(512, mix="H100+V100")
    types = [topo.nodes[f"r{r:02d}s00.xpu0"]["device"] for r in range(4)]
    assert types == ["H100", "V100", "H100", "V100"]
    per_tor = {}
    for x in topo.xpus():
        per_tor.setdefault(x[:3], set()).add(topo.nodes[x]["device"])
    assert all(len(v) == 1 for v in per_tor.values())
    small = cxl_system(128, mix="H100+A100")  # one ToR: still homogeneous, as in the paper
    assert {small.nodes[x]["device"] for x in small.xpus()} == {"H100"}


@pytest.mark.parametrize("bad", [0, 4, 12, -8, 7])
def test_scale_must_be_a_multiple_of_the_server(bad):
    with pytest.raises(HcsimError, match="multiple of the server size 8"):
        cxl_system(bad)


def test_full_scale_builds():
    topo = cxl_system(4096)
    assert len(topo.xpus()) == 4096 and count(topo, "switch", "tor") == 32
    topo.validate()


def test_generic_builders():
    assert ring(8).number_of_edges() == 8 and ring(2).number_of_edges() == 1
    assert star(5).degree("switch") == 5
    fat = leaf_spine(8, 4, 4)  # k = 8 two-level fat tree
    assert len(fat.xpus()) == 32 and fat.degree("spine0") == 8
    assert len(single_server("A100").xpus()) == 8
    with pytest.raises(HcsimError, match="ring size"):
        ring(1)
