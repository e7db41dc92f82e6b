"""The figures of docs/ are drawn so they can be read: the study scripts' grouping of equal lines."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _study():
    spec = importlib.util.spec_from_file_location("collectives_study", ROOT / "experiments" / "collectives_study.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_llama_figure_draws_algorithms_within_half_a_percent_as_one_line(tmp_path):
    study = _study()
    rows = [("ring", 8, 1.415), ("ring", 16, 2.796), ("ring_topo", 8, 1.415), ("ring_topo", 16, 2.796),
            ("tree", 8, 1.417), ("tree", 16, 2.790), ("direct", 8, 1.415), ("direct", 16, 0.453),
            ("hier", 8, 1.415), ("hier", 16, 2.830)]  # fmt: skip
    table = [{"system": "s", "algorithm": a, "xpus": x, "batches_per_s": v} for a, x, v in rows]
    table.append({"system": "t", "algorithm": "ring", "xpus": 8, "batches_per_s": 1.0})
    groups = study.llama_groups(table, "s")
    assert [names for names, _ in groups] == [["direct"], ["hier"], ["ring", "ring_topo", "tree"]]  # 2.790 vs 2.796
    assert groups[2][1] == {8: 1.415, 16: 2.796}  # the line is the first member's
    assert study.llama_groups(table, "t") == [(["ring"], {8: 1.0})]
    study._plot_llama(table, str(tmp_path / "llama.png"))
    assert (tmp_path / "llama.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
