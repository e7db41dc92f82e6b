"""The paper's Fig. 6 systems: build, inspect with NetworkX, compile, draw.

python topologies/paper_systems.py [--xpus 256] [--mix H100+A100]
"""

import argparse
import os

import networkx as nx

from hcsim.platform import Router, compile_platform, cxl_system, noncoherent_system, path_bandwidth, path_latency

parser = argparse.ArgumentParser()
parser.add_argument("--xpus", type=int, default=256)
parser.add_argument("--mix", default="H100+A100")
parser.add_argument("--out", default="results/topologies")
args = parser.parse_args()
os.makedirs(args.out, exist_ok=True)

for build in (noncoherent_system, cxl_system):
    topo = build(args.xpus, mix=args.mix)
    name = topo.graph["name"]
    # a Topology is a networkx.Graph: every NetworkX tool applies
    print(
        f"{name}: {topo.number_of_nodes()} nodes, {topo.number_of_edges()} links, "
        f"diameter {nx.diameter(topo)} hops, devices {sorted({topo.nodes[x]['device'] for x in topo.xpus()})}"
    )
    router = Router(topo)
    a, b = topo.xpus()[0], topo.xpus()[-1]
    p = router.path(a, b)
    print(
        f"  {a} -> {b}: {len(p) - 1} links, {path_latency(topo, p) * 1e6:.2f} us, "
        f"{path_bandwidth(topo, p) / 1e9:.1f} GB/s bottleneck"
    )
    stats = compile_platform(topo, f"{args.out}/{name}.xml")
    topo.draw(f"{args.out}/{name}.png")
    print(f"  wrote {args.out}/{name}.xml ({stats.routes} routes) and {name}.png")
