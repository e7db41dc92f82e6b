"""NCCL's own collective cost model (v2.30.7 ``src/graph/tuning.cc``), on a calibrated machine.

``nccl_time`` is ``ncclTopoTuneModel`` + ``ncclTopoGetAlgoTime`` for one (algorithm, protocol);
``nccl_select`` is NCCL's argmin over the enabled pairs (``enqueue.cc`` topoGetAlgoInfo). What
NCCL learns from its topology search is taken from the calibration instead: the per-GPU bus
bandwidth is ``per_nvlink_bw x nvlink_links`` inside a node and ``min(nics, ppn) x nic_line_rate``
per node across nodes; the NVLS graph has one channel per local GPU (``search.cc``). Sizes are
nccl-tests' (allreduce: the buffer; allgather: the output; reduce_scatter: the input). Alltoall
is not in NCCL's tuning model (it is grouped send/recv); it is modeled as one step of
concurrent point-to-point transfers (docs/calibration.md).
"""

from __future__ import annotations

import math

from hcsim.calibration.schema import Calibration
from hcsim.errors import HcsimError

__all__ = ["ALGORITHMS", "KINDS", "PROTOCOLS", "bus_factor", "nccl_select", "nccl_time"]

KINDS = ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall")
ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "pat", "p2p")
PROTOCOLS = ("LL", "LL128", "Simple")
# NCCL's treeCorrectionFactor[proto][log2(bytes/64)], 64 B .. 256 MiB (tuning.cc, v2.30.7)
_TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5,
           0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6,
              0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1.0, 1.0, 1.0),
    "Simple": (0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5,
               0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9, 0.9),
}  # fmt: skip


def bus_factor(kind: str, ranks: int) -> float:
    """nccl-tests' busbw / algbw: 2(n-1)/n for allreduce, (n-1)/n for allgather, reduce_scatter and
    alltoall, 1 for broadcast and reduce (nccl-tests doc/PERFORMANCE.md)."""
    if kind == "allreduce":
        return 2.0 * (ranks - 1) / ranks
    if kind in ("allgather", "reduce_scatter", "alltoall"):
        return (ranks - 1) / ranks
    return 1.0


def _log2i(x: int) -> int:
    return x.bit_length() - 1 if x > 0 else -1


def _check(kind: str, nbytes: float, ranks: int, nodes: int, calib: Calibration) -> int:
    if kind not in KINDS:
        raise HcsimError(f"collective {kind!r} is unknown (valid: {', '.join(KINDS)})")
    for what, v in (("ranks", ranks), ("nodes", nodes)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise HcsimError(f"{what} {v!r} is invalid (valid: an integer >= 1)")
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or not nbytes >= 0 or math.isinf(nbytes):
        raise HcsimError(f"collective size {nbytes!r} is invalid (valid: bytes >= 0)")
    if ranks % nodes:
        raise HcsimError(f"{ranks} ranks do not split evenly over {nodes} nodes (valid: ranks a multiple of nodes)")
    ppn = ranks // nodes
    if ppn > calib.gpus_per_node:
        raise HcsimError(
            f"{ppn} ranks per node exceed the {calib.gpus_per_node} GPUs of a {calib.name} node "
            f"(valid: ranks / nodes <= {calib.gpus_per_node})"
        )
    return ppn


def _bandwidths(calib: Calibration, ppn: int, nodes: int) -> tuple[float, float]:
    """(intra, inter) per-GPU bus bandwidth in GB/s: NVLink to the switch; a node's NICs."""
    intra = calib.per_nvlink_bw * calib.nvlink_links / 1e9
    inter = min(calib.nics_per_node, ppn) * calib.nic_line_rate / 1e9
    return intra, inter


def _model(
    kind: str, ranks: int, nodes: int, ppn: int, algo: str, proto: str, calib: Calibration
) -> tuple[float, float] | None:
    """(latency µs, algorithm bandwidth GB/s) as NCCL tabulates them, or None when not available."""
    p = PROTOCOLS.index(proto)
    idx2 = 0 if nodes == 1 else 1 if nodes == 2 else 2
    nsteps = 2 * (ranks - 1) if kind == "allreduce" else ranks - 1 if kind in ("allgather", "reduce_scatter") else ranks
    intra_bw, inter_bw = _bandwidths(calib, ppn, nodes)
    if nodes == 1:
        total = intra_bw
    elif ppn == 1:
        total = inter_bw
    else:
        total = min(intra_bw, inter_bw)
    nch = calib.channels
    ll_max = calib.ll_max_bw[idx2] / 1e9
    table = "ring" if algo == "p2p" else algo  # p2p is not in NCCL's tables: one ring step's latency
    base = calib.base_latency[table][p] * 1e6
    intra_lat = calib.hw_latency_nvlink[table][p] * 1e6
    inter_lat = calib.hw_latency_net["tree" if ppn == 1 else table][p] * 1e6  # + graph latencyInter, taken as 0

    if algo == "ring":
        bus = total
        if proto == "LL":
            bus = min(ll_max, bus * 0.5)
        elif proto == "LL128":
            bus = min(bus * 0.92, nch * calib.per_channel_ring_ll128_bw[idx2] / 1e9)
        alg = bus * ranks / nsteps
        if kind in ("broadcast", "reduce"):
            hw = calib.hw_latency_nvlink if nodes == 1 else calib.hw_latency_net
            if calib.same_channels:
                lat = base + hw["ring"][p] * 1e6
            else:
                lat = base + nsteps * hw["tree" if proto == "Simple" else "ring"][p] * 1e6
        else:
            if nodes > 1:
                overhead = calib.net_overhead * 1e6 * (3 if proto == "Simple" else 1)
                intra_lat = max(intra_lat, overhead)
            n_inter = 0 if nodes == 1 else 2 * (nodes - 1) if kind == "allreduce" else nodes - 1
            lat = base + (nsteps - n_inter) * intra_lat + n_inter * inter_lat
        return lat, alg
    if algo == "tree":
        if kind != "allreduce":
            return None
        bus = min(total * 0.92, nch * calib.per_channel_tree_bw[idx2] / 1e9)
        if proto == "LL":
            bus = min(bus / 3.8, ll_max)
        elif proto == "LL128":
            bus = min(
                bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0), nch * calib.per_channel_tree_ll128_bw[idx2] / 1e9
            )
        # the x0.85 of the TREE pattern is not applied: balanced trees on rail-optimised nodes (assumption)
        lat = base + 2 * ((ppn - 1) * intra_lat + _log2i(nodes) * inter_lat)
        return lat, bus * 0.5
    if algo in ("nvls", "nvls_tree"):
        if proto != "Simple" or kind not in ("allreduce", "allgather", "reduce_scatter"):
            return None
        if not calib.nvls_available or ppn < 2:
            return None
        if kind != "allreduce" and ppn > 32:  # NCCL_MAX_NVLS_ARITY
            return None
        if algo == "nvls" and nodes > 1 and not calib.collnet_available:
            return None  # multi-node NVLS needs CollNet (SHARP)
        if algo == "nvls_tree" and (nodes == 1 or kind != "allreduce"):
            return None  # NVLSTree is off on one node and only reduces
        nvls_ch = min(32, ppn)  # search.cc: one NVLS head per local GPU
        per_ch_intra = intra_bw / nvls_ch * calib.nvls_efficiency * (nvls_ch - 1) / nvls_ch
        per_ch_intra *= 2.0 if kind == "allreduce" else (ppn - 1) / ppn
        bws = [per_ch_intra]
        if nodes > 1:
            bws.append(inter_bw / nvls_ch * (2 if (nodes <= 2 and algo == "nvls_tree") else 1))
        if algo == "nvls_tree":
            bws.append(calib.per_channel_nvls_tree_bw[idx2] / 1e9)
        bus = nvls_ch * min(bws)
        alg = bus * ranks / nsteps if kind == "allreduce" else bus
        if algo == "nvls":
            lat = intra_lat + (inter_lat if nodes > 1 else 0.0)
        else:
            lat = base + intra_lat + 2 * _log2i(nodes) * inter_lat
        return lat, alg
    if algo == "pat":
        if proto != "Simple" or kind not in ("allgather", "reduce_scatter") or ppn != 1 or nodes == 1:
            return None
        lat = base + _log2i(nodes) * (inter_lat / 3.5) + ranks * 2.8
        return lat, total * 0.75
    if algo == "p2p":
        if kind != "alltoall" or proto != "Simple":
            return None
        # each rank sends (n-1)/n of its buffer: (ppn-1)/n over NVLink, (n-ppn)/n over the NICs it shares
        intra_share = (ppn - 1) / ranks
        inter_share = (ranks - ppn) / ranks
        t_per_byte = 0.0
        if intra_share:
            t_per_byte = max(t_per_byte, intra_share / intra_bw)
        if inter_share:
            t_per_byte = max(t_per_byte, inter_share / (inter_bw / ppn))
        return base + (intra_lat if nodes == 1 else inter_lat), 1.0 / t_per_byte
    return None


def _enabled(algo: str, proto: str, kind: str, calib: Calibration) -> bool:
    if proto == "LL128" and not calib.ll128_enabled:
        return False
    if kind == "alltoall":
        return algo == "p2p"
    return algo != "p2p"


def nccl_time(
    kind: str, nbytes: float, ranks: int, nodes: int, algorithm: str, protocol: str, calib: Calibration
) -> tuple[float, float, float]:
    """``(seconds, latency_s, bus_bw)`` of one collective as NCCL models it.

    ``seconds = latency + nbytes / algbw`` with NCCL's size corrections (tree correction factor,
    the multi-node ring-Simple plateau x1.4); ``bus_bw`` is the nccl-tests bus bandwidth of the
    bandwidth term in bytes/s (``algbw x bus_factor``). Raises when the pair is not available.

    >>> from hcsim.calibration import load_calibration
    >>> calib = load_calibration("dgx-h100")
    >>> t, lat, bus = nccl_time("allreduce", 8 << 30, 8, 1, "ring", "Simple", calib)
    >>> round(lat * 1e6, 1), round(bus / 1e9, 1)  # 8.4 + 14 x 3.4 us; 18 x 20.6 GB/s
    (56.0, 370.8)
    """
    ppn = _check(kind, nbytes, ranks, nodes, calib)
    if algorithm not in ALGORITHMS:
        raise HcsimError(f"algorithm {algorithm!r} is unknown (valid: {', '.join(ALGORITHMS)})")
    if protocol not in PROTOCOLS:
        raise HcsimError(f"protocol {protocol!r} is unknown (valid: {', '.join(PROTOCOLS)})")
    if ranks == 1:
        return 0.0, 0.0, 0.0
    model = (
        _model(kind, ranks, nodes, ppn, algorithm, protocol, calib)
        if _enabled(algorithm, protocol, kind, calib)
        else None
    )
    if model is None:
        raise HcsimError(
            f"{algorithm}/{protocol} is not available for {kind} on {ranks} ranks over {nodes} nodes of "
            f"{calib.name} (valid: a pair from nccl_select's candidates)"
        )
    lat_us, alg = model
    log_size = _log2i(int(nbytes) >> 6)
    if algorithm == "tree" and kind == "allreduce" and 0 <= log_size < 23:
        alg *= _TREE_CORRECTION[protocol][log_size]
    if (
        algorithm == "ring"
        and protocol == "Simple"
        and nodes > 1
        and kind == "allreduce"
        and nbytes / (calib.channels * ranks) >= 64
    ):
        lat_us *= 1.4  # plateau effect of ring (SM80+)
    seconds = (lat_us + nbytes / (1000.0 * alg)) * 1e-6
    return seconds, lat_us * 1e-6, alg * 1e9 * bus_factor(kind, ranks)


def _candidates(kind: str, ranks: int, nodes: int, ppn: int, calib: Calibration) -> list[tuple[str, str]]:
    out = []
    for algo in ALGORITHMS:
        for proto in PROTOCOLS:
            if _enabled(algo, proto, kind, calib) and _model(kind, ranks, nodes, ppn, algo, proto, calib):
                out.append((algo, proto))
    return out


def nccl_select(kind: str, nbytes: float, ranks: int, nodes: int, calib: Calibration) -> tuple[str, str]:
    """NCCL's choice for this call: the enabled (algorithm, protocol) of least modeled time
    (first in NCCL's order on ties: tree, ring, nvls, nvls_tree, pat; LL, LL128, Simple).

    >>> from hcsim.calibration import load_calibration
    >>> calib = load_calibration("dgx-h100")
    >>> nccl_select("allreduce", 1024, 8, 1, calib), nccl_select("allreduce", 1 << 30, 8, 1, calib)
    (('ring', 'LL'), ('nvls', 'Simple'))
    """
    ppn = _check(kind, nbytes, ranks, nodes, calib)
    if ranks == 1:
        return ("ring", "Simple")
    best = None
    order = ("tree", "ring", "nvls", "nvls_tree", "pat", "p2p")  # NCCL's algorithm index order
    cands = sorted(
        _candidates(kind, ranks, nodes, ppn, calib), key=lambda ap: (order.index(ap[0]), PROTOCOLS.index(ap[1]))
    )
    for algo, proto in cands:
        t = nccl_time(kind, nbytes, ranks, nodes, algo, proto, calib)[0]
        if best is None or t < best[0]:
            best = (t, algo, proto)
    assert best is not None
    return best[1], best[2]
