"""LLaMA2-13B data-parallel training (paper Table 4) as a workload graph file.

The model lives in :mod:`hcsim.workload.llama2` (the table, parameter counts, memory
footprint); ``hcsim run --workload llama2-13b`` builds it for the chosen platform. This
script writes it as JSON for other platforms or for editing:

    python workloads/llama2_13b.py --ranks r00s00.xpu0,r00s00.xpu1 -o llama.json
    python workloads/llama2_13b.py --system cxl --xpus 16 --algorithm coherent_ring -o llama.json
"""

import argparse

from hcsim.platform import paper_system
from hcsim.workload.llama2 import llama2_13b

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--ranks", help="comma-separated XPU names")
parser.add_argument("--system", choices=("cxl", "noncoherent"), default="cxl")
parser.add_argument("--xpus", type=int, default=8)
parser.add_argument("--batch", type=int, default=1, help="per-XPU batch size b")
parser.add_argument("--algorithm", choices=("ring", "coherent_ring"), default="ring")
parser.add_argument("--sync", choices=("decoder", "operator"), default="decoder", help="gradient sync granularity")
parser.add_argument("-o", "--output", required=True)
args = parser.parse_args()
ranks = args.ranks.split(",") if args.ranks else paper_system(args.xpus, coherent=args.system == "cxl").xpus()
w = llama2_13b(ranks, args.batch, args.algorithm, args.sync)
w.to_json(args.output)
print(f"wrote {args.output}: {w.number_of_nodes()} vertices, {w.number_of_edges()} edges over {len(ranks)} ranks")
