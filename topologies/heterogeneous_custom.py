"""A custom heterogeneous node: GPUs, an FPGA and an ASIC sharing a CXL memory pool.

Shows custom devices by attributes, a pinned route, and a GraphML export that opens
in yEd / Gephi and compiles back with ``hcsim platform compile``.

    python topologies/heterogeneous_custom.py
"""

import os

from hcsim.formats.graphml import write_graphml
from hcsim.platform import Device, Router, Topology, compile_platform

out = "results/topologies"
os.makedirs(out, exist_ok=True)

asic = Device("inference-asic", fp16="400TFLOPS", fp32="50TFLOPS", memory="64GiB", memory_bandwidth="2TBps")
t = Topology(name="hetero-node")
t.add_switch("cxl0", "cxl")
t.add_switch("pcie0", "pcie")
t.add_memory("pool", "2TiB", "cxl_type3")
t.add_link("pool", "cxl0", "64GBps", "250ns", link_kind="cxl", lanes=4)
t.add_link("pcie0", "cxl0", "64GBps", "300ns", link_kind="pcie")
for i, kind in enumerate(["H100", "A100"]):
    t.add_xpu(f"gpu{i}", kind, rank=i)
    t.add_link(f"gpu{i}", "cxl0", "128GBps", "200ns", link_kind="cxl")
t.add_xpu("fpga0", fp16="40TFLOPS", fp32="10TFLOPS", memory="16GiB", memory_bandwidth="460GBps", device="fpga", rank=2)
t.add_link("fpga0", "pcie0", "32GBps", "500ns", link_kind="pcie")
t.add_xpu("asic0", asic, rank=3)
t.add_link("asic0", "pcie0", "64GBps", "250ns", link_kind="pcie")
t.validate()

r = Router(t)
for x in t.xpus():
    print(f"{x:6} ({t.nodes[x]['device']:>14}): route to pool {' -> '.join(r.path(x, 'pool'))}")
compile_platform(t, f"{out}/hetero-node.xml", precision="fp16")
write_graphml(t, f"{out}/hetero-node.graphml")
t.draw(f"{out}/hetero-node.png")
print(f"wrote {out}/hetero-node.xml, .graphml and .png")
