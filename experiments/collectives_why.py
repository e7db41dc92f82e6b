"""Why an allreduce algorithm wins where it does, read from its flow trace; and the coherent algorithms' gain.

Part 1 (``why``) runs every registered allreduce algorithm once per system at 64 XPUs
(exact, every flow recorded) at a latency-bound size (1 KiB) and a bandwidth-bound one
(1 GiB), and decomposes each time from the trace:

* **chain**: the longest chain of dependent flows in the algorithm's plan (its rounds);
* **latency floor**: the 1 KiB time, where bytes cost nothing (chain x route latency,
  plus the waits for the slowest route of each round);
* **busiest link**: the link direction that carries the most bytes per unit of bandwidth
  (its class from the topology: xpu, pcie, cxl, ethernet, ...), and its **bandwidth
  floor** = bytes / bandwidth: no schedule can finish before its busiest link has
  carried its bytes;
* **mean utilization** of that link over the run.

A time close to latency floor + bandwidth floor means the algorithm keeps its busiest
link busy from start to end; far above it, the link idles (waits between rounds).

Part 2 (``gain``) measures how much the coherent algorithms save against their
non-coherent counterparts (``coherent_ring`` vs ``ring``, ``coherent_halving_doubling``
vs ``halving_doubling``, ``cxl_shared_memory`` vs ``direct``) on the CXL system over
scales 8..1024 and CXL latencies 200 ns..200 us, at 1 MiB and 1 GiB. The rings fold and
memoize from 256 XPUs (within 1% of exact); the other pairs run exact where the engine
accepts them (``direct`` and ``cxl_shared_memory`` up to 128 ranks).

    .venv/bin/python experiments/collectives_why.py --out results          # both parts
    .venv/bin/python experiments/collectives_why.py --part why --xpus 16   # smaller

Writes ``collectives_why.csv`` and ``collectives_gain.csv`` and prints both tables as
Markdown.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from hcsim.outputs import write_csv

PAIRS = (("coherent_ring", "ring"), ("coherent_halving_doubling", "halving_doubling"), ("cxl_shared_memory", "direct"))


def _link_kinds(topo: Any) -> dict[str, str]:
    from hcsim.platform.compiler import link_id

    return {link_id(a, b): d.get("link_kind", "?") for a, b, d in topo.edges(data=True)}


def _chain(fp: Any) -> int:
    """Longest chain of dependent flows (joins cost nothing) in a flow plan."""
    depth = [0] * len(fp)
    waits = list(fp.waits)
    ready = [i for i, w in enumerate(waits) if w == 0]
    for i in ready:
        depth[i] = 1 if fp.size[i] else 0
    while ready:
        i = ready.pop()
        for j in fp.releases[i]:
            depth[j] = max(depth[j], depth[i] + (1 if fp.size[j] else 0))
            waits[j] -= 1
            if not waits[j]:
                ready.append(j)
    return max(depth, default=0)


def why(systems: list[str], xpus: int, sizes: list[str]) -> list[dict[str, Any]]:
    """Part 1: each algorithm's time against its latency floor and its busiest link's bandwidth floor."""
    from hcsim.collectives import TopologyView, build_plan, names
    from hcsim.collectives import algorithm as lookup
    from hcsim.engine import simulate
    from hcsim.fast import is_coherent
    from hcsim.platform import compile_platform
    from hcsim.sweep.experiments import _collective_topology
    from hcsim.units import parse_bytes
    from hcsim.workload import Workload

    rows = []
    for system in systems:
        topo = _collective_topology(system, xpus, "H100", "128GBps", "200ns")
        coherent = is_coherent(topo)
        kinds = _link_kinds(topo)
        ranks = topo.xpus()[:xpus]
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"hcsim-why-{system}-{xpus}.xml")
        compile_platform(topo, path)
        view = TopologyView.of_topology(topo)
        for name in names("allreduce"):
            if lookup("allreduce", name).coherent and not coherent:
                continue
            chain = _chain(build_plan("allreduce", name, ranks, 2**20, view))
            floor_us = None
            for size in sizes:
                nbytes = int(parse_bytes(size))
                w = Workload(name=name, ranks=list(ranks))
                w.add_comm("ar", nbytes, "allreduce", list(ranks), algorithm=name, is_start=True)
                r = simulate(path, w, coherent=coherent, progress=False)
                load: dict[str, float] = {}
                for src, dst, b, _, _ in r.flows:
                    for link in r.routes.get((src, dst), ()):
                        load[link] = load.get(link, 0.0) + b
                busiest = max(load, key=lambda k: (load[k] / r.link_bandwidth[k], k))
                bw_floor = load[busiest] / r.link_bandwidth[busiest]
                t_us = r.makespan * 1e6
                floor_us = t_us if floor_us is None else floor_us
                base = busiest.rsplit("_", 1)[0] if busiest not in kinds else busiest
                rows.append(
                    {
                        "system": system,
                        "xpus": xpus,
                        "algorithm": name,
                        "size": size,
                        "time_us": t_us,
                        "chain": chain,
                        "latency_floor_us": floor_us,
                        "busiest_link_kind": kinds.get(base, "?"),
                        "busiest_link_GB": load[busiest] / 1e9,
                        "bandwidth_floor_us": bw_floor * 1e6,
                        "busiest_mean_utilization": load[busiest] / (r.link_bandwidth[busiest] * r.makespan),
                        "flows": len(r.flows),
                    }
                )
    return rows


def gain(scales: list[int], latencies: list[str], sizes: list[str]) -> list[dict[str, Any]]:
    """Part 2: coherent algorithm time / its non-coherent counterpart's, by scale, CXL latency and size."""
    from hcsim.errors import HcsimError
    from hcsim.sweep.experiments import collective

    rows = []
    refused: dict[tuple[str, int], str] = {}  # the engine's refusal depends on the plan's width, not size or latency
    for latency in latencies:
        for xpus in scales:
            for size in sizes:
                for coh, base in PAIRS:
                    times = {}
                    for name in (coh, base):
                        if (name, xpus) in refused:
                            times[name] = (None, refused[name, xpus])
                            continue
                        try:
                            out = collective("cxl", xpus, "allreduce", name, size, cxl_latency=latency, fast=True)
                            times[name] = (out["time_us"], out["exact"])
                        except HcsimError as exc:
                            refused[name, xpus] = "refused: " + str(exc).split(",")[0]
                            times[name] = (None, refused[name, xpus])
                    (tc, ec), (tb, eb) = times[coh], times[base]
                    rows.append(
                        {
                            "cxl_latency": latency,
                            "xpus": xpus,
                            "size": size,
                            "coherent": coh,
                            "counterpart": base,
                            "coherent_us": tc,
                            "counterpart_us": tb,
                            "speedup": tb / tc if tc and tb else None,
                            "saved_us": tb - tc if tc and tb else None,
                            "exact": ec if ec == eb else f"{ec}/{eb}",
                        }
                    )
                    print(
                        f"gain {latency} {xpus} {size} {coh}: "
                        + (f"{rows[-1]['speedup']:.3f}x" if rows[-1]["speedup"] else "n/a"),
                        flush=True,
                    )
    return rows


def _markdown(rows: list[dict[str, Any]], keys: list[str]) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1e4 else f"{v:.0f}"
        return "n/a" if v is None else str(v)

    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(fmt(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("why", "gain", "both"), default="both")
    parser.add_argument("--xpus", type=int, default=64, help="part 1: XPUs (default 64)")
    parser.add_argument("--scales", default="8,64,256,1024", help="part 2: XPU counts")
    parser.add_argument("--latencies", default="200ns,2us,20us,200us", help="part 2: CXL link latencies")
    parser.add_argument("--out", default="results")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.part in ("why", "both"):
        rows = why(["cxl", "noncoherent", "fattree"], args.xpus, ["1KiB", "1GiB"])
        write_csv(os.path.join(args.out, "collectives_why.csv"), rows, list(rows[0]))
        keys = ["system", "algorithm", "size", "time_us", "chain", "latency_floor_us", "busiest_link_kind",
                "busiest_link_GB", "bandwidth_floor_us", "busiest_mean_utilization"]  # fmt: skip
        print(_markdown(rows, keys))
    if args.part in ("gain", "both"):
        scales = [int(x) for x in args.scales.split(",")]
        rows = gain(scales, args.latencies.split(","), ["1MiB", "1GiB"])
        write_csv(os.path.join(args.out, "collectives_gain.csv"), rows, list(rows[0]))
        print(_markdown(rows, list(rows[0])))


if __name__ == "__main__":
    main()
