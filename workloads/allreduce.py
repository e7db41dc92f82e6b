"""Allreduce micro-benchmark workload: size x N x algorithm, as a workload graph file.

python workloads/allreduce.py --system cxl --xpus 64 --bytes 1GiB --algorithm coherent_ring -o ar.json
hcsim run --system cxl --xpus 64 --workload ar.json --iterations 3
"""

import argparse

from hcsim.platform import paper_system
from hcsim.units import parse_bytes
from hcsim.workload import allreduce_benchmark

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--system", choices=("cxl", "noncoherent"), default="cxl")
parser.add_argument("--xpus", type=int, default=8)
parser.add_argument("--bytes", default="1GiB")
parser.add_argument("--algorithm", choices=("ring", "coherent_ring"), default="ring")
parser.add_argument("-o", "--output", required=True)
args = parser.parse_args()
ranks = paper_system(args.xpus, coherent=args.system == "cxl").xpus()
w = allreduce_benchmark(ranks, parse_bytes(args.bytes), args.algorithm)
w.to_json(args.output)
print(f"wrote {args.output}: allreduce of {args.bytes} over {len(ranks)} XPUs ({args.algorithm})")
