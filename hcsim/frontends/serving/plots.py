"""Figures of LLM serving runs: latency CDFs of one run, goodput and SLO attainment against the rate.

:func:`latency_cdf_figure` draws the empirical CDFs of TTFT, TPOT and end-to-end latency
(one panel each, log-scaled time, the SLO's bound as a dashed line when given);
:func:`goodput_figure` draws a sweep's goodput (requests/s meeting the SLO) and
attainment against the offered rate, with the offered rate as the ideal. Both are saved
atomically by :func:`hcsim.outputs.save_figure`; matplotlib is imported only here (Agg).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from hcsim.outputs import save_figure

__all__ = ["goodput_figure", "latency_cdf_figure"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def latency_cdf_figure(
    curves: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    path: str | os.PathLike[str],
    slo: Any = None,
) -> None:
    """``curves``: label -> (TTFT, TPOT, e2e) arrays in seconds; one line per label in each panel."""
    plt = _pyplot()
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    names = ("TTFT", "TPOT", "end to end")
    bounds = (getattr(slo, "ttft", math.inf), getattr(slo, "tpot", math.inf), math.inf)
    for j, ax in enumerate(axes):
        for label, values in curves.items():
            v = np.sort(np.asarray(values[j], dtype=float))
            v = v[np.isfinite(v)]
            if len(v):
                ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=label)
        if math.isfinite(bounds[j]):
            ax.axvline(bounds[j], color="k", linestyle="--", linewidth=1, label="SLO")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # a narrow range would print overlapping minor labels
        ax.set_xlabel(f"{names[j]} (s)")
        ax.set_ylim(0, 1.01)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("fraction of requests")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def goodput_figure(
    sweeps: dict[str, tuple[list[float], list[float], list[float]]],
    path: str | os.PathLike[str],
    title: str = "",
) -> None:
    """``sweeps``: label -> (rates, goodput requests/s, attainment); goodput (left) and attainment (right)."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    top = 0.0
    for label, (rates, goodput, attainment) in sweeps.items():
        left.plot(rates, goodput, marker="o", label=label)
        right.plot(rates, attainment, marker="o", label=label)
        top = max(top, max(rates, default=0.0))
    left.plot([0, top], [0, top], color="grey", linestyle=":", linewidth=1, label="offered rate")
    left.set_xlabel("offered rate (requests/s)")
    left.set_ylabel("goodput (requests/s meeting the SLO)")
    right.set_xlabel("offered rate (requests/s)")
    right.set_ylabel("SLO attainment")
    right.set_ylim(0, 1.02)
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
    left.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
