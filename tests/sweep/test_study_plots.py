"""The Fig. 8/10/11 scripts print their table and plot on scales that show the small systems.

Each script runs for real (``runpy``, its own argument parsing and study definition);
only the sweep is replaced by a stand-in whose throughput grows 100-fold with scale, as
LLaMA2-13B's does, so the test checks the script's table and figure, not the engine.
"""

from __future__ import annotations

import os
import runpy
import sys

import matplotlib
import pytest

matplotlib.use("Agg")
from matplotlib.colors import rgb_to_hsv, to_rgb  # noqa: E402

EXPERIMENTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "experiments")


@pytest.fixture
def study(monkeypatch, tmp_path):
    """Run an experiment script with a stand-in sweep; return (stdout, the figure it saved)."""
    monkeypatch.syspath_prepend(EXPERIMENTS)
    import _study

    def fake_sweep(spec, args, out):
        rows = []
        for p in spec.points:
            scale = p["xpus"] * (2.0 if p["system"] == "cxl" else 1.0)
            rows.append({"params": p, "result": {"batches_per_s": 0.17 * scale, "wall_s": 1.0}})
        return rows

    saved = {}

    def keep(fig, path, **kw):
        saved["fig"], saved["path"] = fig, path

    monkeypatch.setattr(_study, "sweep_from_arguments", fake_sweep)
    monkeypatch.setattr(_study, "save_figure", keep)

    def run(script, *argv, capsys):
        monkeypatch.setattr(sys, "argv", [script, "--out", str(tmp_path), *argv])
        runpy.run_path(os.path.join(EXPERIMENTS, script), run_name="__main__")
        return capsys.readouterr().out, saved["fig"]

    return run


def _hue(colour) -> float:
    return float(rgb_to_hsv(to_rgb(colour))[0])


def test_fig8_table_log_axis_and_paired_colours(study, capsys):
    out, fig = study("fig8_coherence.py", capsys=capsys)
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.strip().startswith("XPUs"))
    assert "H100, cxl" in lines[header] and "H100+V100, noncoherent" in lines[header]
    rows = [line.split() for line in lines[header + 1 : header + 9]]
    assert [int(r[0]) for r in rows] == [8, 16, 32, 64, 128, 256, 512, 1024]
    assert lines[header].split(None, 1)[1].split("  ")[0].strip() == "H100, cxl"  # the study's order
    assert float(rows[0][1]) == pytest.approx(0.17 * 16, rel=1e-3)  # 8 XPUs, H100, cxl (stand-in: 2 x 8 x 0.17)
    assert rows[0][3] == "-"  # mixes differ from H100 only above 128 XPUs
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    lines_by_label = {line.get_label(): line for line in ax.get_lines()}
    for mix in ("H100", "H100+A100", "H100+V100"):
        coherent, other = lines_by_label[f"{mix}, cxl"], lines_by_label[f"{mix}, noncoherent"]
        assert _hue(coherent.get_color()) == pytest.approx(_hue(other.get_color()), abs=0.03)  # one hue family
        assert coherent.get_color() != other.get_color()
        assert coherent.get_linestyle() == "-" and other.get_linestyle() == "--"
    hues = {round(_hue(lines_by_label[f"{m}, cxl"].get_color()), 2) for m in ("H100", "H100+A100", "H100+V100")}
    assert len(hues) == 3  # mixes differ


@pytest.mark.parametrize("script", ["fig10_bandwidth.py", "fig11_latency.py"])
def test_fig10_fig11_print_a_table_on_a_log_axis(study, capsys, script):
    out, fig = study(script, capsys=capsys)
    assert "batches_per_s by " in out
    assert "1024 XPUs H100" in out and "8 XPUs H100" in out
    assert fig.axes[0].get_yscale() == "log"
