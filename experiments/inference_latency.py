"""Inoue 2021, Figs. 3-8: dynamic batching latency, utilization and energy, V100 and P4.

Each figure is a PNG and a CSV in ``results/``:

* fig3 - the linear fit of tau[b] = b / throughput to NVIDIA's ResNet-50 tables;
* fig4 - E[W] against rho: exact (batch-size chain), the bounds phi0 and phi1, and
  SimGrid simulations of the served queue (with 95% batch-means intervals);
* fig5 - utilization (exact and simulated) against its bound min(1, lambda (alpha + tau0));
* fig6 - energy efficiency eta (jobs per joule) and its lower bound;
* fig7 - the energy-latency trade-off (E[W] against eta as the load grows);
* fig8 - finite maximum batch sizes b_max = 1..128 (exact, M/G/1-type chain) against phi.

    python experiments/inference_latency.py --quick   # 1e5 jobs per simulated point
    python experiments/inference_latency.py           # 1e6 jobs per simulated point
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile

import numpy as np

from hcsim import outputs
from hcsim.analysis import queueing as q
from hcsim.frontends.serving.batching import arrival_times, confidence_interval, linear_time, serve
from hcsim.outputs import save_figure
from hcsim.platform import compile_platform, star

GPUS = {"V100": q.V100_RESNET50, "P4": q.P4_RESNET50}


def write_csv(path: str, rows: list[dict]) -> None:
    outputs.write_csv(path, rows, list(rows[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1e5 jobs per simulated point")
    parser.add_argument("--out", default="results")
    args = parser.parse_args()
    jobs = 100_000 if args.quick else 1_000_000
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fits = {g: q.fit_linear(t) for g, t in GPUS.items()}
    dense = np.linspace(0.02, 0.97, 60)
    sim_rhos = [0.1, 0.3, 0.5, 0.7, 0.8, 0.9]
    topo = star(1, "V100")
    tmp = tempfile.mkdtemp()
    platform = os.path.join(tmp, "p.xml")
    compile_platform(topo, platform)

    # fig 3: fits
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=110)
    rows = []
    for ax, (gpu, table) in zip(axes, GPUS.items(), strict=True):
        f = fits[gpu]
        b = np.array(sorted(table), dtype=float)
        tau = np.array([k / table[int(k)][0] for k in b])
        ax.plot(b, tau * 1e3, "o", label="measured b / throughput")
        ax.plot(b, (f.alpha * b + f.tau0) * 1e3, "-", label=f"alpha={f.alpha * 1e3:.4f} ms, tau0={f.tau0 * 1e3:.4f} ms")
        ax.set(title=f"{gpu} ResNet-50 (R^2 = {f.r2:.5f})", xlabel="batch size b", ylabel="tau[b] (ms)")
        ax.legend(fontsize=7)
        rows += [
            {"gpu": gpu, "batch": int(k), "tau_measured_s": t, "tau_fit_s": f.alpha * k + f.tau0}
            for k, t in zip(b, tau, strict=True)
        ]
    fig.tight_layout()
    save_figure(fig, f"{args.out}/inference_fig3_fit.png")
    write_csv(f"{args.out}/inference_fig3_fit.csv", rows)

    # exact curves and simulations, per GPU
    curves, sims = [], []
    for gpu, f in fits.items():
        for rho in dense:
            lam = rho / f.alpha
            ex = q.exact_infinite(lam, f.alpha, f.tau0)
            curves.append(
                {
                    "gpu": gpu,
                    "rho": rho,
                    "exact_w_s": ex.mean_latency,
                    "phi0_s": q.phi0(lam, f.alpha, f.tau0),
                    "phi1_s": q.phi1(lam, f.alpha, f.tau0),
                    "utilization": ex.utilization,
                    "utilization_bound": min(1.0, lam * (f.alpha + f.tau0)),
                    "eta_jobs_per_j": q.energy_efficiency(f.beta, f.c0, ex.mean_batch),
                    "eta_bound_jobs_per_j": q.energy_efficiency_bound(lam, f.alpha, f.tau0, f.beta, f.c0),
                }
            )
        for rho in sim_rhos:
            lam = rho / f.alpha
            r = serve(platform, topo.xpus(), arrival_times("poisson", lam, jobs, 7), linear_time(f.alpha, f.tau0))
            mean, half = confidence_interval(r.latency)
            sims.append(
                {
                    "gpu": gpu,
                    "rho": rho,
                    "jobs": jobs,
                    "sim_w_s": mean,
                    "ci95_s": half,
                    "exact_w_s": q.exact_infinite(lam, f.alpha, f.tau0).mean_latency,
                    "sim_utilization": r.utilization(),
                    "sim_eta_jobs_per_j": float(r.batch_size.sum() / (f.beta * r.batch_size + f.c0).sum()),
                }
            )
            print(
                f"{gpu} rho {rho}: simulated {mean * 1e3:.4f} +- {half * 1e3:.4f} ms, "
                f"exact {sims[-1]['exact_w_s'] * 1e3:.4f} ms",
                flush=True,
            )
    write_csv(f"{args.out}/inference_curves.csv", curves)
    write_csv(f"{args.out}/inference_fig4_simulated.csv", sims)

    def per_gpu(key: str, gpu: str, source: list[dict]) -> np.ndarray:
        return np.array([c[key] for c in source if c["gpu"] == gpu])

    # fig 4: latency
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), dpi=110)
    for ax, gpu in zip(axes, fits, strict=True):
        x = per_gpu("rho", gpu, curves)
        ax.plot(x, per_gpu("exact_w_s", gpu, curves) * 1e3, "k-", label="exact")
        ax.plot(x, per_gpu("phi0_s", gpu, curves) * 1e3, "--", label="phi0")
        ax.plot(x, per_gpu("phi1_s", gpu, curves) * 1e3, ":", label="phi1")
        ax.errorbar(
            per_gpu("rho", gpu, sims),
            per_gpu("sim_w_s", gpu, sims) * 1e3,
            yerr=per_gpu("ci95_s", gpu, sims) * 1e3,
            fmt="o",
            label=f"SimGrid, {jobs:.0e} jobs",
        )
        ax.set(title=f"{gpu}: mean latency", xlabel="rho = lambda alpha", ylabel="E[W] (ms)", yscale="log")
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, f"{args.out}/inference_fig4_latency.png")

    # fig 5 and 6: utilization and energy efficiency
    for name, key, bound, sim_key, label in (
        ("fig5_utilization", "utilization", "utilization_bound", "sim_utilization", "utilization"),
        ("fig6_energy", "eta_jobs_per_j", "eta_bound_jobs_per_j", "sim_eta_jobs_per_j", "energy efficiency (jobs/J)"),
    ):
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=110)
        for ax, gpu in zip(axes, fits, strict=True):
            x = per_gpu("rho", gpu, curves)
            ax.plot(x, per_gpu(key, gpu, curves), "k-", label="exact")
            ax.plot(x, per_gpu(bound, gpu, curves), "--", label="bound")
            ax.plot(per_gpu("rho", gpu, sims), per_gpu(sim_key, gpu, sims), "o", label="SimGrid")
            ax.set(title=gpu, xlabel="rho", ylabel=label)
            ax.legend(fontsize=7)
        fig.tight_layout()
        save_figure(fig, f"{args.out}/inference_{name}.png")

    # fig 7: energy-latency trade-off
    fig, ax = plt.subplots(figsize=(5, 3.8), dpi=110)
    for gpu in fits:
        ax.plot(per_gpu("eta_jobs_per_j", gpu, curves), per_gpu("exact_w_s", gpu, curves) * 1e3, label=gpu)
    ax.set(
        xlabel="energy efficiency (jobs/J)",
        ylabel="E[W] (ms)",
        yscale="log",
        title="Energy-latency trade-off (load grows rightwards)",
    )
    ax.legend()
    fig.tight_layout()
    save_figure(fig, f"{args.out}/inference_fig7_tradeoff.png")

    # fig 8: finite maximum batch size
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), dpi=110)
    finite = []
    for ax, (gpu, f) in zip(axes, fits.items(), strict=True):
        for m in (1, 2, 4, 8, 16, 32, 64, 128):
            cap = q.capacity(f.alpha, f.tau0, m)
            xs = [rho for rho in dense if rho / f.alpha < cap * 0.97]
            ws = [q.exact_finite(rho / f.alpha, f.alpha, f.tau0, m).mean_latency for rho in xs]
            finite += [{"gpu": gpu, "b_max": m, "rho": x, "exact_w_s": w} for x, w in zip(xs, ws, strict=True)]
            ax.plot(xs, np.array(ws) * 1e3, label=f"b_max={m}")
        x = per_gpu("rho", gpu, curves)
        ax.plot(
            x,
            np.minimum(per_gpu("phi0_s", gpu, curves), per_gpu("phi1_s", gpu, curves)) * 1e3,
            "k--",
            label="phi (b_max = inf)",
        )
        ax.set(title=f"{gpu}: finite b_max", xlabel="rho", ylabel="E[W] (ms)", yscale="log")
        ax.legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, f"{args.out}/inference_fig8_finite.png")
    write_csv(f"{args.out}/inference_fig8_finite.csv", finite)
    worst = max(abs(s["sim_w_s"] - s["exact_w_s"]) / s["exact_w_s"] for s in sims)
    print(f"wrote {args.out}/inference_fig3..8 (.png, .csv); worst simulated vs exact E[W]: {worst:.2%}")
    assert not math.isnan(worst)


if __name__ == "__main__":
    main()
