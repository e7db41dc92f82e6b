"""DGX systems: nodes of 8 GPUs on NVSwitch, one InfiniBand NIC per GPU, a rail-optimised fat tree.

:func:`dgx_system` builds a DGX-H100 or DGX-A100 machine (``dgx-h100`` / ``dgx-a100`` in
:data:`DGX_SYSTEMS`) from the numbers in :data:`DGX_H100` / :data:`DGX_A100`, each with
its source (docs/dgx.md has them all, the routing rule and measured build times).

Why the leaf layer looks the way it does: SimGrid joins a zone to its siblings through one
gateway, but a DGX node leaves on 8 rails. A non-blocking leaf switch constrains nothing
but its ports, and SimGrid's raw model gives routers no capacity, so leaf ``r`` of a
scalable unit (SU) *is* its node-facing links ``n.nic{r}--n.rails``. The router
``n.rails`` (the node zone's gateway) bundles node ``n``'s 8 leaf ports; ``su.leaf``
stands for the SU's 8 leaf switches behind them. Routes stay rail-aligned (GPU ``r``
always leaves and enters on NIC ``r``), every node and SU is a zone, and 1024 GPUs
compile to about 8k routes instead of the 660k of one flat zone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from hcsim.errors import HcsimError
from hcsim.platform.devices import Device, device
from hcsim.platform.topology import Topology, check_link_parameters

__all__ = [
    "DGXSpec",
    "DGX_H100",
    "DGX_A100",
    "DGX_SYSTEMS",
    "GPUS_PER_NODE",
    "MAX_GPUS",
    "dgx_system",
    "dgx_spec",
    "with_spec",
]

GPUS_PER_NODE = 8
MAX_GPUS = 16384
"""Largest DGX system built: 2048 nodes, 64 SUs. It compiles in about 16 s, but SimGrid's load grows
faster than the file (4096 GPUs: 18 s; 16384: many minutes), so above 4096 GPUs use the fast path,
which compiles only the folded system (docs/dgx.md). A real two-level fat tree of 64-port NDR switches
ends at 2048 NIC ports (256 nodes); beyond that the pooled spine stands for a third level, on paper."""
NODES_PER_SU = 32
"""Nodes per scalable unit, as in the DGX SuperPOD reference architecture (32 DGX per SU)."""


@dataclass(frozen=True)
class DGXSpec:
    """One DGX generation: its GPU, links (bytes/s per direction, seconds) and where each number comes from."""

    generation: str
    gpu: Device
    nvlink_bandwidth: float
    nvlink_latency: float
    nvswitches: int
    nvls: bool
    nic_bandwidth: float
    nic_latency: float
    switch_latency: float
    pcie_bandwidth: float
    pcie_latency: float
    host_memory: float
    host_memory_bandwidth: float
    host_memory_latency: float
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for what, bw, lat in (
            ("nvlink", self.nvlink_bandwidth, self.nvlink_latency),
            ("nic", self.nic_bandwidth, self.nic_latency),
            ("switch", self.nic_bandwidth, self.switch_latency),
            ("pcie", self.pcie_bandwidth, self.pcie_latency),
            ("host memory", self.host_memory_bandwidth, self.host_memory_latency),
        ):
            check_link_parameters(f"DGX {self.generation} {what} link", bw, lat)
        if not self.host_memory > 0:
            raise HcsimError(f"DGX {self.generation}: host_memory must be > 0 bytes, got {self.host_memory!r}")


# Source keys as in docs/dgx.md "Sources": ML = github stas00/ml-engineering @744d01e
# (accelerator, memory, NVLink and node tables); MLC = MLCommons DGX-A100 system description; DS = NVIDIA
# datasheet / user guide. "assumed" = no public number found; stated here and in docs/dgx.md.
_ASSUMED_LATENCIES = {
    "nvlink_latency": "assumed: 100 ns per GPU-NVSwitch link (hcsim Table 5's XPU link); NCCL's per-step software "
    "latency (0.6 us LL over NVLink, NCCL tuning.cc) belongs to a collective model, not to the wire",
    "nic_latency": "assumed: 500 ns from a GPU's NIC to its leaf port (ConnectX port and cable)",
    "switch_latency": "assumed: 300 ns per InfiniBand switch traversal (third-party figures for Quantum-2 range "
    "150-330 ns port to port; no NVIDIA datasheet number found)",
    "pcie_latency": "assumed: 250 ns per PCIe link (hcsim Table 5)",
    "host_memory_latency": "assumed: 100 ns CPU-DRAM (hcsim Table 5)",
}

DGX_H100 = DGXSpec(
    generation="h100",
    gpu=device("H100-SXM"),
    nvlink_bandwidth=450e9,
    nvlink_latency=100e-9,
    nvswitches=4,
    nvls=True,
    nic_bandwidth=50e9,
    nic_latency=500e-9,
    switch_latency=300e-9,
    pcie_bandwidth=63e9,
    pcie_latency=250e-9,
    host_memory=2 * 2**40,
    host_memory_bandwidth=614.4e9,
    host_memory_latency=100e-9,
    sources={
        "gpu": "H100-SXM preset (hcsim.platform.devices.PEAK_SOURCES)",
        "nvlink_bandwidth": "450 GB/s per direction per GPU: NVLink 4, 18 links (ML NVLink table)",
        "nvswitches": "4 third-generation NVSwitch chips per DGX H100 (ML, NVIDIA NVSwitch blog); "
        "modelled as one switch",
        "nvls": "NVLink SHARP (in-switch reduction) on NVSwitch 3 (ML; NCCL transport/nvls.cc)",
        "nic_bandwidth": "400 Gb/s NDR InfiniBand = 50 GB/s, one ConnectX-7 per GPU (ML node table, DGX H100 "
        "user guide)",
        "pcie_bandwidth": "PCIe Gen5 x16: 63 GB/s per direction theoretical (ML)",
        "host_memory": "2 TB DDR5 per node (DGX H100 datasheet/user guide; MLPerf Inference v4.1 NVIDIA "
        "H200-SXM-141GBx8 system JSON lists the same host); taken as 2 TiB (32 x 64 GiB DIMMs)",
        "host_memory_bandwidth": "derived: 2 x Xeon Platinum 8480C x 8 channels DDR5-4800 x 8 B = 614.4 GB/s "
        "(Intel ARK: 8 DDR5-4800 channels per socket); above 8 x 63 GB/s of PCIe, so never the bottleneck",
        **_ASSUMED_LATENCIES,
    },
)

DGX_A100 = DGXSpec(
    generation="a100",
    gpu=device("A100-SXM"),
    nvlink_bandwidth=300e9,
    nvlink_latency=100e-9,
    nvswitches=6,
    nvls=False,
    nic_bandwidth=25e9,
    nic_latency=500e-9,
    switch_latency=300e-9,
    pcie_bandwidth=31.5e9,
    pcie_latency=250e-9,
    host_memory=2 * 2**40,
    host_memory_bandwidth=409.6e9,
    host_memory_latency=100e-9,
    sources={
        "gpu": "A100-SXM preset (hcsim.platform.devices.PEAK_SOURCES)",
        "nvlink_bandwidth": "300 GB/s per direction per GPU: NVLink 3, 12 links (ML; MLC 'NVLINK 3.0, NVSWITCH "
        "2.0 600GB/s' bidirectional)",
        "nvswitches": "6 second-generation NVSwitch chips (ML; MLC); modelled as one switch",
        "nvls": "no NVLS on A100 (sjeaugey, nccl-tests #228)",
        "nic_bandwidth": "200 Gb/s HDR InfiniBand = 25 GB/s, one ConnectX-6 per GPU (MLC)",
        "pcie_bandwidth": "derived: PCIe Gen4 x16 = 16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s per direction",
        "host_memory": "2 TB per node, 80 GB-GPU variant (MLC); taken as 2 TiB",
        "host_memory_bandwidth": "derived: 2 x AMD EPYC 7742 (MLC) x 8 channels DDR4-3200 x 8 B = 409.6 GB/s "
        "(AMD EPYC 7742 specifications); above 8 x 31.5 GB/s of PCIe, so never the bottleneck",
        **_ASSUMED_LATENCIES,
    },
)

_SPECS = {"h100": DGX_H100, "a100": DGX_A100}
DGX_SYSTEMS = {"dgx-h100": "h100", "dgx-a100": "a100"}
"""CLI-ready system names and their generation: ``dgx_system(n, DGX_SYSTEMS[name])``."""


def dgx_spec(generation: str) -> DGXSpec:
    """The spec of ``generation`` ("h100" or "a100", or a system name "dgx-h100" / "dgx-a100")."""
    key = DGX_SYSTEMS.get(str(generation).lower(), str(generation).lower())
    if key not in _SPECS:
        raise HcsimError(f"DGX generation {generation!r} is unknown (valid: {', '.join(_SPECS)})")
    return _SPECS[key]


def _check_gpus(gpus: object) -> int:
    if (
        isinstance(gpus, bool)
        or not isinstance(gpus, int)
        or not 1 <= gpus <= MAX_GPUS
        or (gpus > GPUS_PER_NODE and gpus % GPUS_PER_NODE)
    ):
        raise HcsimError(
            f"DGX GPU count {gpus!r} is invalid (valid: 1..{GPUS_PER_NODE} for one node, or a multiple of "
            f"{GPUS_PER_NODE} up to {MAX_GPUS})"
        )
    return gpus


def dgx_system(
    gpus: int,
    generation: str = "h100",
    *,
    nodes_per_leaf: int = NODES_PER_SU,
    taper: float = 1.0,
    spec: DGXSpec | None = None,
) -> Topology:
    """A DGX-H100 (or DGX-A100) system of ``gpus`` GPUs: 8 per node, ``nodes_per_leaf`` nodes per SU.

    * Node ``nXXX`` (zone ``suS/nXXX``): GPUs ``nXXX.gpu0..7`` (rank ``8 * node + r``) on one
      NVSwitch ``nXXX.nvsw``; GPU ``r`` behind PCIe switch ``nXXX.pcie{r}`` with its NIC
      ``nXXX.nic{r}``; every PCIe switch to the CPU ``nXXX.cpu`` and host memory ``nXXX.mem``
      (each GPU's ``host_memory``, where placement spills).
    * Rail ``r`` of every node of an SU goes to leaf ``r`` of that SU: the link
      ``nXXX.nic{r}--nXXX.rails`` is that leaf's port (see the module docstring);
      ``nXXX.rails--suS.leaf`` bundles the node's 8 ports (8 x NIC bandwidth, half a switch
      traversal of latency: never the bottleneck).
    * SUs join through ``spine``: ``suS.leaf--spine`` carries ``taper`` x the SU's NIC
      bandwidth (1.0 = full bisection), one switch traversal of latency each way.

    ``nodes_per_leaf`` is the SU size (one leaf per rail serves all the SU's nodes);
    ``spec`` replaces the generation's numbers (``dataclasses.replace(DGX_H100, ...)``).
    Routes: GPU to GPU in a node over NVLink; rail-aligned GPUs over their rail (leaf,
    and the spine across SUs), never over NVLink; cross-rail traffic leaves on the
    sender's rail and arrives on the receiver's (NCCL without PXN: physically via a
    spine, which within an SU is charged neither latency nor bandwidth; docs/dgx.md).
    """
    gpus = _check_gpus(gpus)
    base = spec if spec is not None else dgx_spec(generation)
    if isinstance(nodes_per_leaf, bool) or not isinstance(nodes_per_leaf, int) or nodes_per_leaf < 1:
        raise HcsimError(f"nodes_per_leaf {nodes_per_leaf!r} is invalid (valid: an integer >= 1, e.g. 32)")
    if isinstance(taper, bool) or not isinstance(taper, (int, float)) or not 0 < taper <= 1:
        raise HcsimError(f"taper {taper!r} is invalid (valid: 0 < taper <= 1; 1 = full bisection, 0.5 = 2:1)")
    per_node = min(gpus, GPUS_PER_NODE)
    nodes = math.ceil(gpus / GPUS_PER_NODE)
    sus = math.ceil(nodes / nodes_per_leaf)
    nw, sw = len(str(nodes - 1)), len(str(sus - 1))
    topo = Topology(
        name=f"dgx-{base.generation}-{gpus}",
        system=f"dgx-{base.generation}",
        generation=base.generation,
        coherent=False,
        gpus_per_node=per_node,
        nodes=nodes,
        nodes_per_leaf=nodes_per_leaf,
        scalable_units=sus,
        taper=float(taper),
        nvls=base.nvls,
        nvswitches=base.nvswitches,
        nvlink_bandwidth=base.nvlink_bandwidth,
        nic_bandwidth=base.nic_bandwidth,
        pcie_bandwidth=base.pcie_bandwidth,
    )
    half_switch = base.switch_latency / 2
    if sus > 1:
        topo.add_switch("spine", "core")
    for s in range(sus):
        su = f"su{s:0{sw}d}"
        leaf = f"{su}.leaf"
        topo.add_switch(leaf, "tor", zone=su)
        topo.set_gateway(su, leaf)
        su_nodes = range(s * nodes_per_leaf, min(nodes, (s + 1) * nodes_per_leaf))
        for a in su_nodes:
            _node(topo, base, su, f"n{a:0{nw}d}", a, per_node, half_switch)
        if sus > 1:
            uplink = taper * len(su_nodes) * per_node * base.nic_bandwidth
            topo.add_link(leaf, "spine", uplink, base.switch_latency, link_kind="infiniband")
    return topo


def _node(topo: Topology, spec: DGXSpec, su: str, p: str, index: int, gpus: int, half_switch: float) -> None:
    """One DGX node (zone ``su/p``) and its rail ports to the SU's leaf layer."""
    zone = f"{su}/{p}"
    topo.add_switch(f"{p}.nvsw", "xpu", zone=zone)
    topo.add_switch(f"{p}.cpu", "cpu", zone=zone)
    topo.add_memory(f"{p}.mem", spec.host_memory, "host_dram", zone=zone)
    topo.add_switch(f"{p}.rails", "tor", zone=zone)
    topo.set_gateway(zone, f"{p}.rails")
    topo.add_link(f"{p}.cpu", f"{p}.mem", spec.host_memory_bandwidth, spec.host_memory_latency, link_kind="memory")
    for r in range(gpus):
        gpu, pcie, nic = f"{p}.gpu{r}", f"{p}.pcie{r}", f"{p}.nic{r}"
        topo.add_xpu(gpu, spec.gpu, zone=zone, rank=index * GPUS_PER_NODE + r, host_memory=f"{p}.mem", rail=r)
        topo.add_switch(pcie, "pcie", zone=zone)
        topo.add_switch(nic, "nic", zone=zone, rail=r)
        topo.add_link(gpu, f"{p}.nvsw", spec.nvlink_bandwidth, spec.nvlink_latency, link_kind="nvlink")
        topo.add_link(gpu, pcie, spec.pcie_bandwidth, spec.pcie_latency, link_kind="pcie")
        topo.add_link(pcie, nic, spec.pcie_bandwidth, spec.pcie_latency, link_kind="pcie")
        topo.add_link(pcie, f"{p}.cpu", spec.pcie_bandwidth, spec.pcie_latency, link_kind="pcie")
        topo.add_link(nic, f"{p}.rails", spec.nic_bandwidth, spec.nic_latency, link_kind="infiniband", rail=r)
    topo.add_link(f"{p}.rails", f"{su}.leaf", gpus * spec.nic_bandwidth, half_switch, link_kind="infiniband")


def with_spec(generation: str, **changes: object) -> DGXSpec:
    """``generation``'s spec with ``changes`` (e.g. ``nic_bandwidth=25e9``), checked like the presets."""
    return replace(dgx_spec(generation), **changes)  # type: ignore[arg-type]
