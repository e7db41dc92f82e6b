"""Paper Table 6: ring vs coherent-ring allreduce for LLaMA2-13B (batch/s).

The paper's configurations are 64 H100, 256 H100, 128 H100 + 128 A100 and 128 H100 +
128 V100 on the CXL system; ``--quick`` uses 16 and 32 H100.

    python experiments/table6_allreduce.py --quick
    python experiments/table6_allreduce.py -j 2
"""

from _study import parser, run_study

args = parser(__doc__).parse_args()
configs = (
    [(16, "H100"), (32, "H100")]
    if args.quick
    else [(64, "H100"), (256, "H100"), (256, "H100+A100"), (256, "H100+V100")]
)
table = run_study(
    args,
    "table6_allreduce",
    [{"system": "cxl", "xpus": n, "mix": mix, "algorithm": a} for n, mix in configs for a in ("ring", "coherent_ring")],
    series=lambda t: t["algorithm"],
    x=lambda t: t["xpus"],
    y="batches_per_s",
    xlabel="XPUs",
    title="LLaMA2-13B: ring vs coherent ring allreduce",
)
for n, mix in configs:
    by = {t["algorithm"]: t["batches_per_s"] for t in table if t["xpus"] == n and t["mix"] == mix}
    print(
        f"{n:4} XPUs {mix:10}  ring {by['ring']:.4f}  coherent ring {by['coherent_ring']:.4f} batch/s "
        f"({100 * (by['coherent_ring'] / by['ring'] - 1):+.2f}%)"
    )
