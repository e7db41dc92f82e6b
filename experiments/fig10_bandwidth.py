"""Paper Fig. 10: LLaMA2-13B throughput against CXL bandwidth (latency 200 ns), across scales.

python experiments/fig10_bandwidth.py --quick
python experiments/fig10_bandwidth.py -j 2 --executor dask
"""

from _study import parser, run_study

from hcsim.units import parse_bandwidth

p = parser(__doc__)
p.add_argument("--scales", help="XPUs:mix list, e.g. 1024:H100,1024:H100+V100 (default 8, 64, 256 H100, 256 H100+V100)")
args = p.parse_args()
p_scales = args.scales.split(",") if args.scales else None
scales = [(8, "H100"), (16, "H100")] if args.quick else [
    (8, "H100"), (64, "H100"), (256, "H100"), (256, "H100+V100")
]  # fmt: skip
if p_scales:  # e.g. --scales 1024:H100,1024:H100+V100 (about 2 min per point)
    scales = [(int(x.split(":")[0]), x.split(":")[1] if ":" in x else "H100") for x in p_scales]
bandwidths = [16, 64, 256] if args.quick else [16, 32, 64, 128, 256, 512, 1024]
run_study(
    args,
    "fig10_bandwidth",
    [{"system": "cxl", "xpus": n, "mix": m, "cxl_bandwidth": f"{b}GBps"} for n, m in scales for b in bandwidths],
    series=lambda t: f"{t['xpus']} XPUs {t['mix']}",
    x=lambda t: parse_bandwidth(t["cxl_bandwidth"]) / 1e9,
    y="batches_per_s",
    xlabel="CXL link bandwidth (GB/s)",
    title="LLaMA2-13B vs CXL bandwidth (CXL system, 200 ns)",
)
