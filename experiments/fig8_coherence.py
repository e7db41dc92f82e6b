"""Paper Fig. 8: LLaMA2-13B throughput, coherent (CXL) vs non-coherent, across scales and mixes.

H100 only, H100+A100 and H100+V100 (XPU type per ToR of 128 XPUs, racks alternating), CXL
128 GB/s and 200 ns. Runs through the sweep layer (resumable; ``--executor dask``).
Writes ``results/fig8_coherence[_quick].{jsonl,csv,png}``.

    .venv/bin/python experiments/fig8_coherence.py --quick                     # 8..32 XPUs, H100 only
    .venv/bin/python experiments/fig8_coherence.py -j 2                        # 8..1024 XPUs, three mixes
    .venv/bin/python experiments/fig8_coherence.py -j 2 --scales 2048,4096     # larger scales (slow: non-coherent)

Prints batches/s per scale and series and plots them on a log y axis.
"""

from _study import paired_style, parser, run_study

p = parser(__doc__)
p.add_argument("--scales", help="comma-separated XPU counts (default: 8..1024)")
args = p.parse_args()
if args.quick:
    scales, mixes = [8, 16, 32], ["H100"]
else:
    scales = [int(x) for x in (args.scales or "8,16,32,64,128,256,512,1024").split(",")]
    mixes = ["H100", "H100+A100", "H100+V100"]
run_study(
    args,
    "fig8_coherence",
    [
        {"system": system, "xpus": n, "mix": mix}
        for mix in mixes
        for system in ("cxl", "noncoherent")
        for n in scales
        if mix == "H100" or n > 128  # up to 128 XPUs (one ToR) every mix is H100 only
    ],
    series=lambda t: f"{t['mix']}, {t['system']}",
    x=lambda t: t["xpus"],
    y="batches_per_s",
    xlabel="XPUs",
    title="LLaMA2-13B: coherent (solid) vs non-coherent (dashed), one hue per mix",
    log_y=True,  # 8 XPUs and 1024 differ 100-fold: a linear axis flattens the small systems
    style=paired_style(group=lambda label: label.split(",")[0], first=lambda label: label.endswith("cxl")),
    xname="XPUs",
)
