"""experiments/validate_serving.py: its calibration variants load and differ only in ``serving_host``, its
commands are the documented ones, and its page's errors follow from the results it is given."""

from __future__ import annotations

import os

import pytest

from hcsim.calibration import load_calibration

EXPERIMENTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "experiments")


@pytest.fixture
def vs(monkeypatch):
    monkeypatch.syspath_prepend(EXPERIMENTS)
    import validate_serving

    return validate_serving


def test_variants_change_only_the_host_section(vs, tmp_path):
    gpu, serial, shipped = (vs.calibration_file("dgx-h100", v, str(tmp_path)) for v in vs.VARIANTS)
    assert shipped == "dgx-h100"
    a, b, c = (load_calibration(x) for x in (gpu, serial, shipped))
    assert a.serving_host is None and b.serving_host[3] is False and c.serving_host[3] is True
    assert b.serving_host[:3] == c.serving_host[:3] and a.peak == c.peak and a.hbm_achieved == c.hbm_achieved


def test_command_is_the_documented_serve(vs):
    argv = vs.command(vs.POINTS[1], "dgx-h100")
    text = " ".join(argv[argv.index("serve") :])
    assert text == (
        "serve --model llama3-70b --system dgx-h100 --xpus 4 --tp 4 --scheduler continuous --prompt-tokens 32 "
        "--output-tokens 128 --requests 8 --rate 1e6/s --calibration dgx-h100 --json"
    )


def test_page_errors_follow_from_the_results(vs):
    results = {(p.name, v): (p.median_s * (1 + 0.01 * (i + 1)), 0.005, 1.0)
               for p in vs.POINTS for i, v in enumerate(vs.VARIANTS)}  # fmt: skip
    page = vs.render(results)
    assert page.count("| +1.0% |") == 3 and page.count("| +3.0% |") == 3
    assert "| host, outputs overlapped (shipped) | 3.0% | 3.0% |" in page
