"""Platforms and topologies written by others, as a new user brings them to hcsim.

Platforms in the shape of SimGrid's examples (tests/data/simgrid_platforms, see its README)
carry no hcsim properties (GraphML written back by igraph: tests/formats/test_graphml.py). Each
choice hcsim makes for such files must work and be said. Also here: the flags of ``hcsim run``
that used to disagree (coherence, ``--trace``) and the warnings for silent narrowing.
"""

import json
import os

import pytest
from clitools import assert_one_line_error, run
from lxml import etree

from hcsim.platform import builders
from hcsim.platform.drawing import NODE_LABELS_UP_TO, _si, draw_topology, link_classes
from hcsim.platform.probe import simgrid_route
from hcsim.workload import Workload

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "simgrid_platforms")
SMALL = os.path.join(DATA, "foreign_full.xml")
CLUSTER = os.path.join(DATA, "foreign_cluster.xml")


def _declared_links(path: str) -> int:
    """Links the file declares: <link> elements, plus a <cluster>'s private links and backbone."""
    root = etree.parse(path, etree.XMLParser(load_dtd=False, no_network=True)).getroot()
    count = len(root.findall(".//link"))
    for cluster in root.iter("cluster"):
        first, last = cluster.get("radical").split("-")
        count += int(last) - int(first) + 1 + (1 if cluster.get("bb_bw") else 0)
    return count


def _hosts(path: str) -> list[str]:
    root = etree.parse(path, etree.XMLParser(load_dtd=False, no_network=True)).getroot()
    return [h.get("id") for h in root.iter("host")]


# ---------------------------------------------------------------- platform check


@pytest.mark.parametrize("path", [SMALL, CLUSTER])
def test_check_counts_every_declared_link_and_says_the_model(path):
    r = run("platform", "check", path)
    assert r.returncode == 0, r.stderr
    assert f" {_declared_links(path)} links" in r.stdout, r.stdout
    assert "network model LV08 (SimGrid's default" in r.stdout
    # no host carries kind=xpu: by default every host is an XPU, and check says how it decided
    hosts = int(r.stdout.split(" hosts (")[0].rsplit(" ", 1)[1])
    assert f"({hosts} XPUs [every host: none has the property kind=xpu]" in r.stdout
    assert f"warning: {hosts} of {hosts} XPUs have no 'memory' property" in r.stderr


def test_a_full_platform_declares_24_links_where_the_old_count_said_0():
    assert _declared_links(SMALL) == 24  # 23 links and a FATPIPE loopback; SimGrid adds __loopback__ itself


def test_check_with_xpus_from_property_refuses_a_platform_without_kind_xpu():
    assert_one_line_error(run("platform", "check", SMALL, "--xpus-from", "property"), "kind=xpu", "all-hosts")


def test_check_of_a_built_platform_reports_its_coherence(tmp_path):
    xml = tmp_path / "c.xml"
    assert run("platform", "build", "cxl", "--xpus", 8, "-o", xml).returncode == 0
    r = run("platform", "check", xml)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "8 XPUs [hosts with kind=xpu]" in r.stdout
    assert "network model raw (set by the file)" in r.stdout and "memory semantics coherent" in r.stdout


# ---------------------------------------------------------------- run on a foreign platform


def _run_json(*args):
    r = run("run", "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def test_run_uses_every_host_of_a_foreign_platform_and_says_the_model():
    summary, err = _run_json("--platform", SMALL, "--workload", "allreduce", "--bytes", "64MiB", "--iterations", 1)
    n = len(_hosts(SMALL))
    assert summary["xpus"] == n
    assert f"{n} XPUs (every host: none has the property kind=xpu" in err
    assert "network model LV08 (SimGrid's default" in err and "non-coherent memory (default" in err
    assert "have no 'memory' property: their memory is taken as unlimited" in err
    raw, err_raw = _run_json(
        "--platform", SMALL, "--workload", "allreduce", "--bytes", "64MiB", "--iterations", 1, "--network-model", "raw"
    )
    assert "network model raw (forced by --network-model raw)" in err_raw
    # LV08's correction factors (latency x13.01, bandwidth x0.97) make the same run slower
    assert summary["makespan_s"] > raw["makespan_s"] * 1.01


def test_run_with_raw_model_gives_the_closed_form_of_a_lone_transfer(tmp_path):
    src, dst = "alpha", "delta"
    size = 10_000_000
    w = Workload()
    w.add_comm("send", size, "p2p", [src, dst], is_start=True)
    path = tmp_path / "p2p.json"
    w.to_json(path)
    summary, _ = _run_json("--platform", SMALL, "--workload", path, "--iterations", 1, "--network-model", "raw")
    links, latency = simgrid_route(SMALL, src, dst)
    root = etree.parse(SMALL, etree.XMLParser(load_dtd=False, no_network=True)).getroot()
    bandwidth = {lk.get("id"): lk.get("bandwidth") for lk in root.iter("link")}
    from hcsim.units import parse_bandwidth

    slowest = min(parse_bandwidth(bandwidth[name]) for name in links)
    assert summary["makespan_s"] == pytest.approx(latency + size / slowest, rel=1e-9)


def test_run_with_xpus_from_property_names_the_flag():
    r = run("run", "--platform", SMALL, "--workload", "allreduce", "--iterations", 1, "--xpus-from", "property")
    assert_one_line_error(r, "kind=xpu", "--xpus-from all-hosts")


def test_xpus_from_all_hosts_includes_memory_hosts_of_a_built_platform(tmp_path):
    xml = tmp_path / "n.xml"
    assert run("platform", "build", "noncoherent", "--xpus", 8, "-o", xml).returncode == 0
    prop, _ = _run_json("--platform", xml, "--workload", "allreduce", "--bytes", "1MiB", "--iterations", 1)
    every, err = _run_json(
        "--platform", xml, "--workload", "allreduce", "--bytes", "1MiB", "--iterations", 1, "--xpus-from", "all-hosts"
    )
    assert prop["xpus"] == 8 and every["xpus"] == len(_hosts(str(xml))) > 8
    assert f"{every['xpus']} XPUs (every host" in err


def test_system_flags_refuse_platform_only_options():
    base = ("run", "--system", "cxl", "--xpus", 8, "--workload", "allreduce", "--iterations", 1)
    assert_one_line_error(run(*base, "--xpus-from", "all-hosts"), "--xpus-from", "--platform")
    assert_one_line_error(run(*base, "--network-model", "file"), "--network-model", "raw")


# ---------------------------------------------------------------- coherence


@pytest.mark.parametrize("system, coherent", [("cxl", True), ("noncoherent", False)])
def test_platform_default_coherence_is_the_platforms_own(tmp_path, system, coherent):
    xml = tmp_path / "p.xml"
    assert run("platform", "build", system, "--xpus", 8, "-o", xml).returncode == 0
    args = ("--platform", xml, "--workload", "allreduce", "--bytes", "1MiB", "--iterations", 1)
    summary, err = _run_json(*args)
    assert summary["coherent"] is coherent
    assert f"{'coherent' if coherent else 'non-coherent'} memory (the platform's 'coherent' property)" in err
    flipped, err = _run_json(*args, "--no-coherent" if coherent else "--coherent")
    assert flipped["coherent"] is not coherent
    assert ("--no-coherent" if coherent else "--coherent") in err
    # the same as --system with the same choice
    built, err = _run_json(
        "--system", system, "--xpus", 8, "--workload", "allreduce", "--bytes", "1MiB", "--iterations", 1
    )
    assert built["coherent"] is coherent and f"(--system {system})" in err


# ---------------------------------------------------------------- --chrome-trace and the old --trace


def test_trace_is_a_deprecated_alias_of_chrome_trace(tmp_path):
    args = ("run", "--system", "cxl", "--xpus", 8, "--workload", "fig3", "--iterations", 2)
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    r_new = run(*args, "--chrome-trace", new)
    r_old = run(*args, "--trace", old)
    assert r_new.returncode == 0 and r_old.returncode == 0, r_old.stderr
    assert new.read_bytes() == old.read_bytes()
    assert "--trace is deprecated, use --chrome-trace" in r_old.stderr and "--trace" not in r_new.stderr
    assert "--chrome-trace" in run("run", "--help").stdout


# ---------------------------------------------------------------- silent narrowing


def test_fig3_on_a_larger_system_warns_that_it_uses_two_xpus():
    r = run("run", "--system", "cxl", "--xpus", 16, "--workload", "fig3", "--iterations", 1)
    assert r.returncode == 0, r.stderr
    assert "warning: --workload fig3 uses 2 of the 16 XPUs" in r.stderr


def test_a_workload_file_on_part_of_the_platform_warns(tmp_path):
    xml = tmp_path / "p.xml"
    assert run("platform", "build", "noncoherent", "--xpus", 8, "-o", xml).returncode == 0
    w = Workload()
    w.add_compute("c", 1e9, "r00s00.xpu0", is_start=True)
    w.add_comm("s", 1e6, "p2p", ["r00s00.xpu0", "r00s00.xpu3"])
    w.add_edge("c", "s")
    path = tmp_path / "w.json"
    w.to_json(path)
    r = run("run", "--platform", xml, "--workload", path, "--iterations", 1)
    assert r.returncode == 0, r.stderr
    assert "uses 2 of the platform's 8 XPUs" in r.stderr
    r = run("run", "--platform", xml, "--workload", "allreduce", "--bytes", "1MiB", "--iterations", 1)
    assert "warning" not in r.stderr, r.stderr


@pytest.mark.parametrize("xpus, warned", [(64, True), (256, False)])
def test_mix_below_a_second_rack_warns(tmp_path, xpus, warned):
    r = run("platform", "build", "cxl", "--xpus", xpus, "--mix", "H100+A100", "-o", tmp_path / "p.xml")
    assert r.returncode == 0, r.stderr
    assert ("--mix H100+A100: A100 unused" in r.stderr) is warned, r.stderr


# ---------------------------------------------------------------- drawings


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts] + [t.get_text() for t in ax.get_legend().get_texts()]


@pytest.mark.parametrize("xpus", [8, 256])
def test_drawing_labels_every_link_class_with_its_bandwidth(xpus):
    import matplotlib

    matplotlib.use("Agg")
    topo = builders.paper_system(xpus, coherent=True, mix="H100+A100")
    ax = draw_topology(topo)
    texts = _texts(ax)
    for (kind, bw, lat), edges in link_classes(topo).items():
        assert f"{kind} {_si(bw, 'B/s')}, {_si(lat, 's')} (x{len(edges)})" in texts
    # each layer says what it holds; the counts add up to every node
    annotations = [t.get_text() for t in ax.texts]
    layer_counts = [t for t in annotations if " XPU: " in t or " switch" in t or " memory: " in t]
    total = sum(int(part.split(" ", 1)[0]) for t in layer_counts for part in t.split(", "))
    assert total == topo.number_of_nodes()
    named = sum(1 for n in topo if n in texts)
    if topo.number_of_nodes() <= NODE_LABELS_UP_TO:
        assert named == topo.number_of_nodes()
    else:
        assert named == 0  # large systems are labelled by class, not node by node
    matplotlib.pyplot.close(ax.figure)


def test_si_labels():
    assert (_si(128e9, "B/s"), _si(12.5e9, "B/s"), _si(2e-7, "s"), _si(5e-6, "s")) == (
        "128 GB/s",
        "12.5 GB/s",
        "200 ns",
        "5 us",
    )


def test_run_warns_of_an_unused_mix_after_its_result():
    r = run(
        "run",
        "--system",
        "cxl",
        "--xpus",
        16,
        "--mix",
        "H100+A100",
        "--workload",
        "allreduce",
        "--bytes",
        "1MiB",
        "--iterations",
        1,
    )
    assert r.returncode == 0, r.stderr
    assert "warning: --mix H100+A100: A100 unused: cxl with 16 XPUs has 1 rack" in r.stderr
