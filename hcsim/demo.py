"""``hcsim demo``: the paper's two systems at a small scale, timed by SimGrid.

Builds Fig. 6(b) (CXL) and Fig. 6(a) (non-coherent) with the same XPUs, compiles both,
draws the CXL system, and lets SimGrid time four things on each: an XPU-to-XPU
transfer to another server, an XPU reaching its expansion memory, eight XPUs of one
server sending to the next server at once (they share its uplink), and a computation.
Each SimGrid time is printed beside its closed form (latency + size / bandwidth, with
the shared uplink split evenly among the eight flows, or FLOPs / FLOPS).
"""

from __future__ import annotations

import os
from itertools import pairwise

from hcsim.platform import builders
from hcsim.platform.compiler import compile_platform
from hcsim.platform.probe import simulate_compute, simulate_transfers
from hcsim.platform.routing import Router, path_bandwidth, path_latency
from hcsim.platform.topology import Topology

GIB = 2**30


def equal_share_time(topo: Topology, router: Router, flows: list[tuple[str, str]], size: float) -> list[float]:
    """Closed form for flows that all get the same share: each link direction is split evenly.

    Exact for max-min sharing when every flow's bottleneck is a link they all share with
    the same count (the demo's symmetric cases); a lone flow is latency + size / bandwidth.
    """
    load: dict[tuple[str, str], int] = {}
    paths = [router.path(s, d) for s, d in flows]
    for p in paths:
        for u, v in pairwise(p):
            load[(u, v)] = load.get((u, v), 0) + 1
    out = []
    for p in paths:
        rate = min(
            topo.edges[u, v]["bandwidth"] * topo.edges[u, v].get("lanes", 1) / load[(u, v)] for u, v in pairwise(p)
        )
        out.append(path_latency(topo, p) + size / rate)
    return out


def run_demo(xpus: int = 32, out: str = "results/demo") -> int:
    os.makedirs(out, exist_ok=True)
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
        path = os.path.join(out, f"{name}-{xpus}.xml")
        compile_platform(topo, path)
        router = Router(topo)
        memory = "r00s00.t3_0" if name == "cxl" else "r00s00.dram0"
        for label, flows in scenarios:
            flows = flows or [(a, memory)]
            sim = simulate_transfers(path, [(s, d, size) for s, d in flows])
            exact = equal_share_time(topo, router, flows, size)
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
    picture = os.path.join(out, f"cxl-{xpus}.png")
    systems["cxl"].draw(picture, title=f"Fig. 6(b) CXL system, {xpus} XPUs")

    print(f"\nhcsim demo: paper Fig. 6 systems with {xpus} H100, timed by SimGrid (CM02, TCP-gamma 0)\n")
    print(f"{'system':<12} {'scenario':<42} {'SimGrid (s)':>13} {'closed form (s)':>16} {'rel. err':>9}  path")
    for name, label, sim_t, exact_t, err, via in rows:
        print(f"{name:<12} {label:<42} {sim_t:>13.6g} {exact_t:>16.6g} {err:>9.1e}  {via}")
    speed = rows[0][2] and rows[len(rows) // 2][2] / rows[0][2]
    print(f"\nXPU -> XPU across servers: the CXL fabric is {speed:.1f}x faster than Ethernet here.")
    print(f"worst relative error vs closed form: {worst:.1e}")
    print(f"wrote {out}/cxl-{xpus}.xml, {out}/noncoherent-{xpus}.xml and {picture}")
    return 0 if worst <= 1e-9 else 1
