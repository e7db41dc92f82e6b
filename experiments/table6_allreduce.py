"""Paper Table 6: ring vs coherent-ring allreduce for LLaMA2-13B (batch/s).

The paper's configurations are 64 H100, 256 H100, 128 H100 + 128 A100 and 128 H100 +
128 V100 on the CXL system at 128 GB/s and, as its Sec. 5 states for this experiment,
200 us of CXL latency (the default here); ``--cxl-latency 200ns`` runs the CXL system's
default latency instead (files get the latency in their name). ``--quick`` uses 16 and
32 H100.

    python experiments/table6_allreduce.py --quick
    python experiments/table6_allreduce.py -j 2                      # 200 us, the paper's setting
    python experiments/table6_allreduce.py -j 2 --cxl-latency 200ns
"""

from _study import parser, run_study

from hcsim.units import parse_time

p = parser(__doc__)
p.add_argument("--cxl-latency", default="200us", help="CXL link latency (default 200us, the paper's for Table 6)")
args = p.parse_args()
latency = parse_time(args.cxl_latency, "--cxl-latency")
tag = "" if args.cxl_latency == "200us" else "_" + args.cxl_latency.replace(" ", "")
configs = (
    [(16, "H100"), (32, "H100")]
    if args.quick
    else [(64, "H100"), (256, "H100"), (256, "H100+A100"), (256, "H100+V100")]
)
table = run_study(
    args,
    "table6_allreduce" + tag,
    [
        {"system": "cxl", "xpus": n, "mix": mix, "algorithm": a, "cxl_latency": args.cxl_latency}
        for n, mix in configs
        for a in ("ring", "coherent_ring")
    ],
    series=lambda t: t["algorithm"],
    x=lambda t: t["xpus"],
    y="batches_per_s",
    xlabel="XPUs",
    title=f"LLaMA2-13B: ring vs coherent ring allreduce (CXL latency {args.cxl_latency})",
)
print(f"CXL 128 GB/s, latency {args.cxl_latency} ({latency:g} s)")
for n, mix in configs:
    by = {t["algorithm"]: t["batches_per_s"] for t in table if t["xpus"] == n and t["mix"] == mix}
    print(
        f"{n:4} XPUs {mix:10}  ring {by['ring']:.4f}  coherent ring {by['coherent_ring']:.4f} batch/s "
        f"({100 * (by['coherent_ring'] / by['ring'] - 1):+.2f}%)"
    )
