"""Paper Fig. 11: LLaMA2-13B throughput against CXL latency (bandwidth 128 GB/s), across scales.

python experiments/fig11_latency.py --quick
python experiments/fig11_latency.py -j 2
"""

from _study import parser, run_study

from hcsim.units import parse_time

p = parser(__doc__)
p.add_argument("--scales", help="XPUs:mix list, e.g. 1024:H100,1024:H100+V100 (default 8, 64, 256 H100, 256 H100+V100)")
args = p.parse_args()
p_scales = args.scales.split(",") if args.scales else None
scales = [(8, "H100"), (16, "H100")] if args.quick else [
    (8, "H100"), (64, "H100"), (256, "H100"), (256, "H100+V100")
]  # fmt: skip
if p_scales:  # e.g. --scales 1024:H100,1024:H100+V100 (about 2 min per point)
    scales = [(int(x.split(":")[0]), x.split(":")[1] if ":" in x else "H100") for x in p_scales]
latencies = ["100ns", "10us", "100us"] if args.quick else ["100ns", "1us", "10us", "30us", "100us"]
run_study(
    args,
    "fig11_latency",
    [{"system": "cxl", "xpus": n, "mix": m, "cxl_latency": lat} for n, m in scales for lat in latencies],
    series=lambda t: f"{t['xpus']} XPUs {t['mix']}",
    x=lambda t: parse_time(t["cxl_latency"]) * 1e6,
    y="batches_per_s",
    xlabel="CXL link latency (us)",
    title="LLaMA2-13B vs CXL latency (CXL system, 128 GB/s)",
)
