"""A k-port two-level fat tree (leaf-spine) of A100s, compiled and loaded in SimGrid.

python topologies/fat_tree.py [--radix 16]
"""

import argparse
import os

from hcsim.platform import compile_platform, leaf_spine
from hcsim.platform.probe import check_platform

parser = argparse.ArgumentParser()
parser.add_argument("--radix", type=int, default=16)
args = parser.parse_args()
k = args.radix
os.makedirs("results/topologies", exist_ok=True)
topo = leaf_spine(k, k // 2, k // 2, xpu="A100", host_link=("25GBps", "1us"), fabric_link=("25GBps", "1us"))
path = f"results/topologies/fattree-k{k}.xml"
stats = compile_platform(topo, path)
summary = check_platform(path)
print(
    f"k={k}: {len(topo.xpus())} XPUs, {stats.routes} routes; SimGrid loaded {summary.hosts} hosts, "
    f"{summary.links} links in {summary.load_seconds:.2f} s"
)
