"""NCCL's rings as flows on DGX-H100 nodes: simulated bus bandwidth beside NCCL's model and nccl-tests.

For 1, 2 and 4 DGX-H100 nodes (8, 16, 32 GPUs; NVLinks at NCCL's rate,
:func:`hcsim.calibration.machine.calibrated_dgx_spec`) and a large allreduce, one row each:
the bus bandwidth of ``nccl@dgx-h100`` simulated in SimGrid (memoized ring steps, the
``--fast`` path), of NCCL's own model for its ring (:func:`hcsim.calibration.nccl.nccl_time`,
the protocol of least time) and for the algorithm NCCL's model selects (``nccl_select``:
NVLS on one node, NVLSTree on two), and the nccl-tests measurement of the calibration's
check table (docs/calibration.md, "CHECK: NCCL model vs nccl-tests"). The simulated flows
are NCCL's rings: where NCCL selects NVLS or NVLSTree the flow model stays a ring (that is
left to the analytical model), so the ring row with NVLS off is the one to compare.

``python experiments/nccl_flows.py`` prints the markdown table docs/calibration.md embeds
(``tests/collectives/test_nccl_rings.py`` recomputes it and compares).
"""

from __future__ import annotations

from dataclasses import dataclass

from hcsim.calibration import load_calibration
from hcsim.calibration.machine import calibrated_dgx_spec
from hcsim.calibration.nccl import bus_factor, nccl_select, nccl_time
from hcsim.fast import simulate_system
from hcsim.platform.dgx import dgx_system
from hcsim.workload import Workload

SIZE = 8 << 30  # 8 GiB: the size of the check table's large-message rows
# (nodes, measured busbw GB/s, what the measurement is) from the calibration's check table
MEASURED = (
    (1, 367.5, "8x H100, NVLS off (nccl #1455, nccl-tests #212: 365-370); with NVLS ~480"),
    (2, 380.0, "GTC24 S62129, multi-node (node count not recorded)"),
    (4, 370.0, "GTC25, 32 GPUs, 8x400G NDR per node"),
)


@dataclass(frozen=True)
class Row:
    """One node count: simulated, NCCL-model and measured bus bandwidths (GB/s)."""

    nodes: int
    size: int
    simulated: float
    model_ring: float
    ring_protocol: str
    model_selected: float
    selected: str
    measured: float
    source: str


def simulated_busbw(gpus: int, nbytes: int = SIZE, algorithm: str = "nccl@dgx-h100", fast: bool = True) -> float:
    """Bus bandwidth (GB/s) of one ``algorithm`` allreduce over ``gpus`` calibrated DGX-H100 GPUs, in SimGrid."""
    calib = load_calibration("dgx-h100")
    topo = dgx_system(gpus, spec=calibrated_dgx_spec("h100", calib))

    def factory(ranks: list[str], group: int | None = None) -> Workload:
        w = Workload(name="allreduce", ranks=list(ranks))
        w.graph["samples_per_iteration"] = w.graph["batches_per_iteration"] = 1
        w.add_comm("ar", nbytes, "allreduce", list(ranks), algorithm=algorithm, is_start=True)
        return w

    r = simulate_system(topo, factory, 1, fast=fast, fold=False, record_flows=False, progress=False)
    return nbytes / r.makespan * bus_factor("allreduce", gpus) / 1e9


def rows(nbytes: int = SIZE) -> list[Row]:
    """The table's rows (simulated on the fast path: memoized ring steps)."""
    calib = load_calibration("dgx-h100")
    out = []
    for nodes, measured, source in MEASURED:
        n = 8 * nodes
        ring = {p: nccl_time("allreduce", nbytes, n, nodes, "ring", p, calib)[0] for p in ("LL", "LL128", "Simple")}
        proto = min(ring, key=lambda p: ring[p])
        algo, sproto = nccl_select("allreduce", nbytes, n, nodes, calib)
        selected = nccl_time("allreduce", nbytes, n, nodes, algo, sproto, calib)[0]
        factor = bus_factor("allreduce", n) / 1e9
        out.append(
            Row(
                nodes,
                nbytes,
                simulated_busbw(n, nbytes),
                nbytes / ring[proto] * factor,
                proto,
                nbytes / selected * factor,
                f"{algo}/{sproto}",
                measured,
                source,
            )
        )
    return out


def markdown(table: list[Row]) -> str:
    """The rows as docs/calibration.md embeds them."""
    lines = [
        "| size | nodes (GPUs) | simulated busbw (GB/s) | NCCL model, ring | NCCL model, its choice | measured | "
        "sim / measured | source |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        lines.append(
            f"| {r.size >> 30} GiB | {r.nodes} ({8 * r.nodes}) | {r.simulated:.1f} | {r.model_ring:.1f} "
            f"({r.ring_protocol}) | {r.model_selected:.1f} ({r.selected}) | {r.measured:g} | "
            f"{r.simulated / r.measured - 1:+.1%} | {r.source} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(markdown(rows()))
