"""NCCL's cost model against hand-computed closed forms from the tuning.cc constants (notes 6.3)."""

from __future__ import annotations

import dataclasses

import pytest

from hcsim.calibration import bus_factor, load_calibration, nccl_select, nccl_time
from hcsim.errors import HcsimError

H100 = load_calibration("dgx-h100")
A100 = load_calibration("dgx-a100")
GIB = 1 << 30


def lat_us(kind, ranks, nodes, algo, proto, calib=H100, nbytes=8):
    return nccl_time(kind, nbytes, ranks, nodes, algo, proto, calib)[1] * 1e6


def test_single_node_latencies_are_the_worked_examples():
    # research notes 6.3, 8 x H100 one node, allreduce
    assert lat_us("allreduce", 8, 1, "ring", "LL") == pytest.approx(6.6 + 14 * 0.6)  # 15.0
    assert lat_us("allreduce", 8, 1, "tree", "LL") == pytest.approx(6.8 + 2 * 7 * 0.6)  # 15.2
    assert lat_us("allreduce", 8, 1, "ring", "LL128") == pytest.approx(14 + 14 * 1.9)  # 40.6
    assert lat_us("allreduce", 8, 1, "tree", "LL128") == pytest.approx(14 + 2 * 7 * 1.25)  # 31.5
    assert lat_us("allreduce", 8, 1, "ring", "Simple") == pytest.approx(8.4 + 14 * 3.4)  # 56.0
    assert lat_us("allreduce", 8, 1, "nvls", "Simple") == pytest.approx(25.0)
    assert lat_us("allgather", 8, 1, "ring", "LL") == pytest.approx(6.6 + 7 * 0.6)
    assert lat_us("broadcast", 8, 1, "ring", "Simple") == pytest.approx(8.4 + 3.4)  # same channels: one hop
    other = dataclasses.replace(H100, same_channels=False)
    assert lat_us("broadcast", 8, 1, "ring", "Simple", other) == pytest.approx(8.4 + 8 * 4.0)  # Tree's hwLat


def test_two_node_latencies():
    # 2 x 8 H100 on Intel: intra hop = max(0.6, netOverhead 1.0); 2 inter steps at NET ring LL 2.7
    assert lat_us("allreduce", 16, 2, "ring", "LL") == pytest.approx(6.6 + 28 * 1.0 + 2 * 2.7)  # 40.0
    assert lat_us("allreduce", 16, 2, "tree", "LL") == pytest.approx(6.8 + 2 * (7 * 0.6 + 1 * 5.0))  # 25.2
    # Simple: netOverhead x3 = 3.0 < 3.4; the ring plateau x1.4 once bytes/(channels x ranks) >= 64
    simple = 8.4 + 28 * 3.4 + 2 * 14.0
    assert lat_us("allreduce", 16, 2, "ring", "Simple", nbytes=8) == pytest.approx(simple)
    assert lat_us("allreduce", 16, 2, "ring", "Simple", nbytes=16 * 16 * 64) == pytest.approx(1.4 * simple)
    # AMD host (A100): netOverhead 2.0 (x3 = 6.0 for Simple)
    assert lat_us("allgather", 16, 2, "ring", "Simple", A100) == pytest.approx(8.4 + 14 * 6.0 + 1 * 14.0)
    # one GPU per node uses Tree's NET latency
    assert lat_us("allreduce", 4, 4, "ring", "LL") == pytest.approx(6.6 + 0 * 1.0 + 6 * 5.0)
    assert lat_us("allreduce", 32, 4, "nvls_tree", "Simple") == pytest.approx(0 + 25 + 2 * 2 * 20.9)


def test_bus_bandwidths_closed_form():
    intra = 18 * 20.6  # 370.8 GB/s
    big = 1 << 40  # latency negligible

    def bus(kind, ranks, nodes, algo, proto, calib=H100):
        return nccl_time(kind, big, ranks, nodes, algo, proto, calib)[2] / 1e9

    assert bus("allreduce", 8, 1, "ring", "Simple") == pytest.approx(intra)
    assert bus("allreduce", 8, 1, "ring", "LL") == pytest.approx(141.0)  # min(llMaxBw, 0.5 x 370.8)
    assert bus("allreduce", 8, 1, "ring", "LL128") == pytest.approx(0.92 * intra)
    # tree: algbw = 0.5 x min(0.92 x bus, 16 x 38.7); nccl-tests busbw = algbw x 2(n-1)/n
    assert bus("allreduce", 8, 1, "tree", "Simple") == pytest.approx(0.5 * 0.92 * intra * 14 / 8)
    assert bus("allgather", 8, 1, "ring", "Simple") == pytest.approx(intra)
    # NVLS: one channel per GPU, 0.85 efficiency, x2 for allreduce
    assert bus("allreduce", 8, 1, "nvls", "Simple") == pytest.approx(intra * 0.85 * 7 / 8 * 2)
    assert bus("allgather", 8, 1, "nvls", "Simple") == pytest.approx(intra * 0.85 * 7 / 8 * 7 / 8 * 7 / 8)
    # across nodes: min(NVLink bus, NICs x line rate); ppn = 1 uses the NICs only
    assert bus("allreduce", 32, 4, "ring", "Simple") == pytest.approx(min(intra, 8 * 50.0))
    assert bus("allreduce", 32, 4, "ring", "Simple", A100) == pytest.approx(8 * 25.0)
    assert bus("allreduce", 2, 2, "ring", "Simple") == pytest.approx(50.0)
    assert bus("allreduce", 32, 4, "nvls_tree", "Simple") == pytest.approx(8 * 45.5)  # per-channel cap
    assert bus("allreduce", 16, 2, "nvls_tree", "Simple") == pytest.approx(8 * 57.7)


def test_time_is_latency_plus_bytes_over_algbw():
    nbytes = 256 << 20
    t, lat, bus = nccl_time("allreduce", nbytes, 8, 1, "ring", "Simple", H100)
    assert t == pytest.approx(lat + nbytes / (bus / bus_factor("allreduce", 8)), rel=1e-12)
    # tree correction factor at 1 MiB: log2(2^20 / 64) = 14 -> Simple 0.5
    t, lat, bus = nccl_time("allreduce", 1 << 20, 8, 1, "tree", "Simple", H100)
    assert bus == pytest.approx(0.5 * 0.5 * 0.92 * 370.8e9 * 14 / 8)
    assert nccl_time("allreduce", 1 << 20, 1, 1, "ring", "Simple", H100) == (0.0, 0.0, 0.0)


def test_selection_follows_nccl_rules():
    assert nccl_select("allreduce", 8, 8, 1, H100) == ("ring", "LL")
    assert nccl_select("allreduce", 4 * GIB, 8, 1, H100) == ("nvls", "Simple")
    assert nccl_select("allreduce", 4 * GIB, 8, 1, A100) == ("ring", "Simple")  # no NVLS on A100
    assert nccl_select("broadcast", 4 * GIB, 8, 1, H100)[0] == "ring"
    assert nccl_select("alltoall", GIB, 16, 2, H100) == ("p2p", "Simple")
    # NVLSTree is off on one node; multi-node NVLS needs CollNet
    for proto in ("LL", "LL128", "Simple"):
        with pytest.raises(HcsimError):
            nccl_time("allreduce", GIB, 8, 1, "nvls_tree", proto, H100)
    with pytest.raises(HcsimError, match="nvls/Simple is not available"):
        nccl_time("allreduce", GIB, 16, 2, "nvls", "Simple", H100)
    with pytest.raises(HcsimError, match="nvls/LL is not available"):
        nccl_time("allreduce", GIB, 8, 1, "nvls", "LL", H100)
    with pytest.raises(HcsimError, match="tree/Simple is not available for allgather"):
        nccl_time("allgather", GIB, 8, 1, "tree", "Simple", H100)
    no_ll128 = dataclasses.replace(H100, ll128_enabled=False)
    sizes = [1 << s for s in range(3, 34)]
    assert any(nccl_select("allreduce", s, 16, 2, H100)[1] == "LL128" for s in sizes)
    assert all(nccl_select("allreduce", s, 16, 2, no_ll128)[1] != "LL128" for s in sizes)
    # the choice is the argmin of nccl_time over the available pairs
    for s in sizes:
        algo, proto = nccl_select("allreduce", s, 16, 2, H100)
        best = nccl_time("allreduce", s, 16, 2, algo, proto, H100)[0]
        for a in ("ring", "tree", "nvls_tree"):
            for p in ("LL", "LL128", "Simple"):
                try:
                    assert nccl_time("allreduce", s, 16, 2, a, p, H100)[0] >= best
                except HcsimError:
                    pass


def test_pat_only_with_one_gpu_per_node():
    assert nccl_time("allgather", GIB, 4, 4, "pat", "Simple", H100)[1] * 1e6 == pytest.approx(
        8.0 + 2 * 14.0 / 3.5 + 4 * 2.8
    )
    with pytest.raises(HcsimError):
        nccl_time("allgather", GIB, 16, 2, "pat", "Simple", H100)


def test_alltoall_splits_nvlink_and_nic_traffic():
    t, lat, bus = nccl_time("alltoall", GIB, 16, 2, "p2p", "Simple", H100)
    # 8 of 16 peers off-node: half the buffer over 8 NICs shared by 8 GPUs (50 GB/s each)
    algbw = 1 / max((7 / 16) / 370.8e9, (8 / 16) / 50e9)
    assert t == pytest.approx(lat + GIB / algbw, rel=1e-12)
    assert lat == pytest.approx((8.4 + 14.0) * 1e-6)


def test_bad_input_is_one_line():
    cases = [
        (lambda: nccl_time("gather", 8, 8, 1, "ring", "LL", H100), "collective 'gather' is unknown"),
        (lambda: nccl_time("allreduce", 8, 8, 1, "star", "LL", H100), "algorithm 'star' is unknown"),
        (lambda: nccl_time("allreduce", 8, 8, 1, "ring", "LL64", H100), "protocol 'LL64' is unknown"),
        (lambda: nccl_select("allreduce", 8, 9, 2, H100), "9 ranks do not split evenly over 2 nodes"),
        (lambda: nccl_select("allreduce", 8, 16, 1, H100), "16 ranks per node exceed the 8 GPUs"),
        (lambda: nccl_select("allreduce", -1, 8, 1, H100), "collective size -1 is invalid"),
        (lambda: nccl_select("allreduce", 8, 0, 1, H100), "ranks 0 is invalid"),
    ]
    for call, message in cases:
        with pytest.raises(HcsimError) as err:
            call()
        assert message in str(err.value) and "\n" not in str(err.value)
