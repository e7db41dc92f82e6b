"""Paper Fig. 11: LLaMA2-13B throughput against CXL latency (bandwidth 128 GB/s), across scales.

.venv/bin/python experiments/fig11_latency.py --quick
.venv/bin/python experiments/fig11_latency.py -j 2
"""

from _study import add_scales_argument, chosen_scales, parser, run_study

from hcsim.units import parse_time

p = parser(__doc__)
add_scales_argument(p)
args = p.parse_args()
scales = chosen_scales(args)
latencies = ["100ns", "10us", "100us"] if args.quick else ["100ns", "1us", "10us", "30us", "100us"]
run_study(
    args,
    "fig11_latency",
    [{"system": "cxl", "xpus": n, "mix": m, "cxl_latency": lat} for n, m in scales for lat in latencies],
    series=lambda t: f"{t['xpus']} XPUs {t['mix']}",
    x=lambda t: parse_time(t["cxl_latency"]) * 1e6,
    y="batches_per_s",
    xlabel="CXL link latency (us)",
    log_y=True,  # 8 XPUs and 1024 differ 100-fold: a linear axis flattens the small systems
    xname="us",
    title="LLaMA2-13B vs CXL latency (CXL system, 128 GB/s)",
)
