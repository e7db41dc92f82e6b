"""``hcsim demo``: the paper's two systems at a small scale, timed by SimGrid.

Builds Fig. 6(b) (CXL) and Fig. 6(a) (non-coherent) with the same XPUs, compiles both,
draws the CXL system, and lets SimGrid time four things on each: an XPU-to-XPU
transfer to another server, an XPU reaching its expansion memory, eight XPUs of one
server sending to the next server at once (they share its uplink), and a computation.
Each SimGrid time is printed beside its closed form: latency + size / bandwidth for a
lone flow, FLOPs / FLOPS for a computation, and for the eight flows the shared uplink
split by SimGrid's weighted max-min rule (weight 1 / path latency; see
:mod:`hcsim.platform.compiler`).
"""

from __future__ import annotations

import os
import shutil
from contextlib import ExitStack
from itertools import pairwise
from typing import Any

from hcsim.errors import HcsimError
from hcsim.files import anonymous_file, atomic_path, check_output_dir, check_output_path
from hcsim.platform import builders
from hcsim.platform.compiler import compile_platform
from hcsim.platform.probe import simulate_compute, simulate_transfers
from hcsim.platform.routing import Router, path_bandwidth, path_latency
from hcsim.platform.topology import Topology

GIB = 2**30


def shared_link_times(latencies: list[float], size: float, capacity: float) -> list[float]:
    """Exact completion times of equal-size flows whose only bottleneck is one shared link.

    SimGrid's rule (weighted max-min): flow i pays its path latency l_i, then sends at
    capacity * (1/l_i) / sum(1/l_j) over the flows sending at that moment. Computed
    event by event (a start or a finish), so it is exact, not an approximation.
    """
    n = len(latencies)
    remaining = [float(size)] * n
    done: list[float | None] = [None] * n
    t = min(latencies)
    while any(d is None for d in done):
        active = [i for i in range(n) if done[i] is None and latencies[i] <= t]
        weight = sum(1 / latencies[i] for i in active)
        rate = {i: capacity / latencies[i] / weight for i in active}
        finish = {i: t + remaining[i] / rate[i] for i in active}
        t_next = min([min(finish.values())] + [lat for lat in latencies if lat > t])
        for i in active:
            if finish[i] <= t_next * (1 + 1e-12):
                done[i], remaining[i] = finish[i], 0.0
            else:
                remaining[i] -= rate[i] * (t_next - t)
        t = t_next
    return [float(d) for d in done]


def reference_times(topo: Topology, router: Router, flows: list[tuple[str, str]], size: float) -> list[float]:
    """Closed form: a lone flow takes latency + size / bandwidth; several flows here share one bottleneck."""
    paths = [router.path(s, d) for s, d in flows]
    latencies = [path_latency(topo, p) for p in paths]
    if len(flows) == 1:
        return [latencies[0] + size / path_bandwidth(topo, paths[0])]
    shared = set.intersection(*(set(pairwise(p)) for p in paths))
    capacity = min(topo.edges[u, v]["bandwidth"] * topo.edges[u, v].get("lanes", 1) for u, v in shared)
    return shared_link_times(latencies, size, capacity)


MAX_DEMO_XPUS = 256
"""Largest demo system: the demo is a quick look (two systems compiled, drawn and timed)."""


def check_demo_xpus(xpus: int) -> None:
    """The demo times transfers between servers 0 and 1, so it needs at least two 8-XPU servers."""
    if isinstance(xpus, bool) or not isinstance(xpus, int) or xpus % 8 or not 16 <= xpus <= MAX_DEMO_XPUS:
        raise HcsimError(
            f"--xpus {xpus!r} is invalid for the demo (valid: a multiple of 8 from 16: 16, 24, 32, ..., at most "
            f"{MAX_DEMO_XPUS}; it times transfers between two 8-XPU servers)"
        )


def _remove(files: list[str], directories: list[str]) -> None:
    """Undo a failed demo: its files, then the directories it created (if they are empty)."""
    for path in files:
        if os.path.exists(path):
            os.unlink(path)
    for path in directories:
        try:
            os.rmdir(path)
        except OSError:
            pass


def run_demo(xpus: int = 32, out: str = "results/demo") -> int:
    """Build, compile, draw and time the demo systems; the files appear in ``out`` only once all is done.

    The work writes its files into anonymous files (:func:`hcsim.files.anonymous_file`: on
    no disk, so a SIGTERM or SIGKILL during it leaves nothing behind); they are then copied
    into ``out`` (created with its parents if missing), each atomically. If that fails,
    what was copied and the directories made are removed again.
    """
    check_demo_xpus(xpus)
    check_output_dir(out, "--out")
    with ExitStack() as stack:
        files: dict[str, str] = {}

        def scratch(name: str) -> tuple[Any, str]:
            f, files[name] = stack.enter_context(anonymous_file(name))
            return f, files[name]

        status = _run_demo(xpus, scratch)
        _publish(files, out)
    print(f"wrote {out}/cxl-{xpus}.xml, {out}/noncoherent-{xpus}.xml and {os.path.join(out, f'cxl-{xpus}.png')}")
    return status


def _publish(files: dict[str, str], out: str) -> None:
    """Copy ``files`` (name -> a path that reads it) into ``out``: all of them, or (on failure) none and no new
    directory."""
    names = sorted(files)
    for name in names:
        check_output_path(os.path.join(out, name), "--out")
    created = []
    path = os.path.abspath(out)
    while not os.path.exists(path):
        created.append(path)
        path = os.path.dirname(path)
    written: list[str] = []
    try:
        os.makedirs(out, exist_ok=True)
        for name in names:
            target = os.path.join(out, name)
            with atomic_path(target, os.path.splitext(name)[1] or ".tmp") as tmp:
                shutil.copyfile(files[name], tmp)
            written.append(target)
    except BaseException:
        _remove(written, created)
        raise


def _draw(topo: Topology, f: Any, title: str) -> None:
    """Draw ``topo`` as :meth:`~hcsim.platform.topology.Topology.draw` saves it, as a PNG into the open file ``f``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = topo.draw(title=title)
    ax.figure.tight_layout()
    ax.figure.savefig(f, format="png")
    f.flush()
    plt.close(ax.figure)


def _run_demo(xpus: int, scratch: Any) -> int:
    """The demo's work, each file written into ``scratch(name) -> (binary file, its path)``; the exit status."""
    systems = {
        "cxl": builders.cxl_system(xpus, mix="H100"),
        "noncoherent": builders.noncoherent_system(xpus, mix="H100"),
    }
    size = 1 * GIB
    a, b = "r00s00.xpu0", "r00s01.xpu0"
    scenarios = [
        ("1 GiB XPU -> XPU in the next server", [(a, b)]),
        ("1 GiB XPU -> its expansion memory", None),
        ("8 x 1 GiB, server 0 -> server 1 at once", [(f"r00s00.xpu{i}", f"r00s01.xpu{i}") for i in range(8)]),
    ]
    rows = []
    worst = 0.0
    for name, topo in systems.items():
        f, path = scratch(f"{name}-{xpus}.xml")
        compile_platform(topo, f)
        router = Router(topo)
        memory = "r00s00.t3_0" if name == "cxl" else "r00s00.dram0"
        for label, flows in scenarios:
            flows = flows or [(a, memory)]
            sim = simulate_transfers(path, [(s, d, size) for s, d in flows])
            exact = reference_times(topo, router, flows, size)
            err = max(abs(x - y) / y for x, y in zip(sim, exact, strict=True))
            worst = max(worst, err)
            via = "CXL fabric" if "cxl" in "".join(router.path(*flows[0])[1:-1]) else "PCIe/UPI/Ethernet"
            rows.append((name, label, max(sim), max(exact), err, via))
        flops = 1e15
        t = simulate_compute(path, a, flops)
        exact_t = flops / topo.nodes[a]["fp32_flops"]
        worst = max(worst, abs(t - exact_t) / exact_t)
        rows.append((name, "1 PFLOP fp32 on one H100", t, exact_t, abs(t - exact_t) / exact_t, "compute"))
        if name == "cxl":
            bw = path_bandwidth(topo, router.path(a, b))
            print(f"[demo] {name}: route {a} -> {b}: {' -> '.join(router.path(a, b))} ({bw / 1e9:.0f} GB/s)")
    _draw(systems["cxl"], scratch(f"cxl-{xpus}.png")[0], f"Fig. 6(b) CXL system, {xpus} XPUs")

    print(f"\nhcsim demo: paper Fig. 6 systems with {xpus} H100, timed by SimGrid (raw network model)\n")
    print(f"{'system':<12} {'scenario':<42} {'SimGrid (s)':>13} {'closed form (s)':>16} {'rel. err':>9}  path")
    for name, label, sim_t, exact_t, err, via in rows:
        print(f"{name:<12} {label:<42} {sim_t:>13.6g} {exact_t:>16.6g} {err:>9.1e}  {via}")
    first = {name: sim_t for name, label, sim_t, *_ in rows if label == scenarios[0][0]}
    print(f"\nXPU -> XPU across servers: the CXL fabric is {first['noncoherent'] / first['cxl']:.1f}x faster here.")
    print(f"worst relative error vs closed form: {worst:.1e}")
    return 0 if worst <= 1e-9 else 1
