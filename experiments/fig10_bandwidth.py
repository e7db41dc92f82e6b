"""Paper Fig. 10: LLaMA2-13B throughput against CXL bandwidth (latency 200 ns), across scales.

.venv/bin/python experiments/fig10_bandwidth.py --quick
.venv/bin/python experiments/fig10_bandwidth.py -j 2 --executor dask
"""

from _study import add_scales_argument, chosen_scales, parser, run_study

from hcsim.units import parse_bandwidth

p = parser(__doc__)
add_scales_argument(p)
args = p.parse_args()
scales = chosen_scales(args)
bandwidths = [16, 64, 256] if args.quick else [16, 32, 64, 128, 256, 512, 1024]
run_study(
    args,
    "fig10_bandwidth",
    [{"system": "cxl", "xpus": n, "mix": m, "cxl_bandwidth": f"{b}GBps"} for n, m in scales for b in bandwidths],
    series=lambda t: f"{t['xpus']} XPUs {t['mix']}",
    x=lambda t: parse_bandwidth(t["cxl_bandwidth"]) / 1e9,
    y="batches_per_s",
    xlabel="CXL link bandwidth (GB/s)",
    log_y=True,  # 8 XPUs and 1024 differ 100-fold: a linear axis flattens the small systems
    xname="GB/s",
    title="LLaMA2-13B vs CXL bandwidth (CXL system, 200 ns)",
)
