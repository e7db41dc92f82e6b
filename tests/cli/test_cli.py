"""The hcsim command as a user runs it: results, and one-line errors with exit 2."""

import os

import pytest
from clitools import assert_one_line_error, run

from hcsim.formats.graphml import write_graphml
from hcsim.platform import Topology, cxl_system


def test_build_then_check(tmp_path):
    out = tmp_path / "p.xml"
    r = run("platform", "build", "cxl", "--xpus", 32, "--mix", "H100+A100", "--cxl-bandwidth", "256GBps", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "72 hosts" in r.stdout
    r = run("platform", "check", out)
    assert r.returncode == 0, r.stderr
    assert "32 XPUs" in r.stdout and "40 memory nodes" in r.stdout


@pytest.mark.parametrize("system, n", [("noncoherent", 16), ("server", 8), ("ring", 5), ("star", 3), ("leafspine", 32)])
def test_every_system_builds_and_loads(tmp_path, system, n):
    out = tmp_path / f"{system}.xml"
    assert run("platform", "build", system, "--xpus", n, "-o", out).returncode == 0
    r = run("platform", "check", out)
    assert r.returncode == 0 and f"{n} XPUs" in r.stdout, r.stderr


def test_draw_builds_a_png(tmp_path):
    png = tmp_path / "t.png"
    r = run("platform", "draw", "cxl", "--xpus", 32, "-o", png)
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_graphml_edit_and_compile(tmp_path):
    g, xml = tmp_path / "t.graphml", tmp_path / "t.xml"
    assert (
        run("platform", "build", "noncoherent", "--xpus", 8, "--save-graphml", g, "-o", tmp_path / "a.xml").returncode
        == 0
    )
    r = run("platform", "compile", g, "-o", xml)
    assert r.returncode == 0, r.stderr
    assert xml.read_bytes() == (tmp_path / "a.xml").read_bytes()
    assert run("platform", "draw", "--graphml", g, "-o", tmp_path / "g.png").returncode == 0


def test_help_on_every_command():
    for args in (
        ["--help"],
        ["platform", "--help"],
        ["platform", "build", "--help"],
        ["platform", "check", "--help"],
        ["platform", "draw", "--help"],
        ["platform", "compile", "--help"],
    ):
        r = run(*args)
        assert r.returncode == 0 and "usage" in r.stdout


def graphml(tmp_path, mutate):
    t = Topology()
    t.add_xpu("x0", "H100")
    t.add_xpu("x1", "H100")
    t.add_switch("sw", "pcie")
    t.add_link("x0", "sw", "128GBps", "250ns")
    t.add_link("x1", "sw", "128GBps", "250ns")
    mutate(t)
    path = tmp_path / "bad.graphml"
    write_graphml(t, path)
    return path


def _missing_bw(t):
    del t.edges["x0", "sw"]["bandwidth"]


def _zero_bw(t):
    t.edges["x0", "sw"]["bandwidth"] = 0.0


def _unknown_kind(t):
    t.nodes["sw"]["kind"] = "hub"


def _no_flops(t):
    del t.nodes["x1"]["fp16_flops"]


def _no_path(t):
    t.add_xpu("x2", "H100")
    t.add_switch("island", "pcie")
    t.add_link("x2", "island", "1GBps", "1us")


@pytest.mark.parametrize(
    "mutate, needles",
    [
        (_missing_bw, ["link 'x0'--'sw'", "no bandwidth"]),
        (_zero_bw, ["link 'x0'--'sw'", "bandwidth must be a finite rate >= 1 B/s"]),
        (_unknown_kind, ["node 'sw'", "kind 'hub' is unknown", "valid: xpu, memory, switch"]),
        (_no_flops, ["XPU 'x1'", "fp16_flops"]),
        (_no_path, ["no path between", "x2"]),
    ],
)
def test_bad_topology_files(tmp_path, mutate, needles):
    out = tmp_path / "out.xml"
    r = run("platform", "compile", graphml(tmp_path, mutate), "-o", out)
    assert_one_line_error(r, *needles)
    assert not out.exists() and not [p for p in os.listdir(tmp_path) if p.startswith(".hcsim-")]


def test_duplicate_names_in_graphml(tmp_path):
    path = graphml(tmp_path, lambda t: None)
    text = path.read_text()
    first = text.index('<node id="x1"')
    end = text.index("</node>", first) + len("</node>")
    path.write_text(text[:end] + text[first:end] + text[end:])
    assert_one_line_error(run("platform", "compile", path, "-o", tmp_path / "o.xml"), "node 'x1' is a duplicate")


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--cxl-bandwidth", "0GBps"], ["CXL link: bandwidth", ">= 1 B/s"]),
        (["--cxl-bandwidth=-5GBps"], ["CXL link: bandwidth", ">= 1 B/s"]),
        (["--cxl-latency=-1ns"], ["CXL link: latency", ">= 0"]),
        (["--cxl-bandwidth", "12 GBs"], ["CXL link bandwidth", "'12 GBs'"]),
        (["--cxl-latency", "fast"], ["CXL link latency", "'fast'"]),
        (["--mix", "B200"], ["preset 'B200' is unknown", "H100"]),
        (["--xpus", "12"], ["--xpus 12", "multiple of the server size 8"]),
    ],
)
def test_bad_build_options(tmp_path, args, needles):
    out = tmp_path / "p.xml"
    base = ["platform", "build", "cxl", "--xpus", "16", "-o", out]
    if "--xpus" in args:
        base = ["platform", "build", "cxl", "-o", out]
    assert_one_line_error(run(*base, *args), *needles)
    assert not out.exists()


def test_unwritable_output(tmp_path):
    # a missing parent is created (docs/cli.md, Outputs); a parent that is a file cannot be
    (tmp_path / "no").write_text("a file")
    assert_one_line_error(
        run("platform", "build", "cxl", "--xpus", 8, "-o", tmp_path / "no" / "p.xml"), "is not a directory"
    )
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if os.access(ro, os.W_OK):  # root ignores permissions; use a path under a file instead
        target = tmp_path / "afile"
        target.write_text("x")
        assert_one_line_error(run("platform", "build", "cxl", "--xpus", 8, "-o", target / "p.xml"), "p.xml")
    else:
        assert_one_line_error(run("platform", "build", "cxl", "--xpus", 8, "-o", ro / "p.xml"), "not writable")


def test_unknown_system_and_bad_check_file(tmp_path):
    assert_one_line_error(run("platform", "build", "torus", "--xpus", 8, "-o", tmp_path / "p.xml"), "torus")
    assert_one_line_error(run("platform", "check", tmp_path / "missing.xml"), "does not exist")
    junk = tmp_path / "junk.xml"
    junk.write_text("<platform><zone")
    assert_one_line_error(run("platform", "check", junk), "junk.xml", "XML")


def test_output_is_deterministic(tmp_path):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    for out in (a, b):
        assert run("platform", "build", "cxl", "--xpus", 64, "--mix", "H100+V100", "-o", out).returncode == 0
    assert a.read_bytes() == b.read_bytes()
    assert cxl_system(64).number_of_nodes() > 0
