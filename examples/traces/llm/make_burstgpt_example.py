"""Regenerate burstgpt_format_example.csv: hcsim's own requests written in BurstGPT's columns.

No row comes from BurstGPT (its data is not shipped here); only the column layout does.
Run from the repository root: ``python examples/traces/llm/make_burstgpt_example.py``.
"""

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    rng = np.random.default_rng(2026)
    n = 300
    gaps = rng.gamma(0.25, 4.0, n)  # mean 1 s, coefficient of variation 2: bursty
    times = np.round(np.cumsum(gaps), 3)
    request = np.clip(np.rint(rng.lognormal(np.log(600), 1.0, n)), 1, 16000).astype(int)
    response = np.clip(np.rint(rng.lognormal(np.log(200), 0.8, n)), 1, 4000).astype(int)
    response[rng.random(n) < 0.02] = 0  # BurstGPT keeps failed requests with 0 response tokens
    model = np.where(rng.random(n) < 0.8, "ChatGPT", "GPT-4")
    log = np.where(rng.random(n) < 0.6, "Conversation log", "API log")
    lines = ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"]
    for t, m, q, r, g in zip(times, model, request, response, log, strict=True):
        lines.append(f"{t:.3f},{m},{q},{r},{q + r},{g}")
    with open(os.path.join(HERE, "burstgpt_format_example.csv"), "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
