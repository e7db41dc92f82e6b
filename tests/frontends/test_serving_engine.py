"""The serving engine's later parts: routers, disaggregated prefill/decode, swap, three tiers, prefix caching.

Hand-worked cases time every iteration from the operator formulas written out here (the
roofline of docs/models.md, per XPU type), the KV transfers and swaps from the links'
bandwidth and latency; the rest checks the promises: least-outstanding-tokens routing,
swap preemption keeping a victim's KV, the third tier copied in, prefix blocks reused
and evicted least recently released first, and the CLI's one-line errors.
"""

import json

import numpy as np
import pytest
from clitools import assert_one_line_error, assert_refused, run, run_here

from hcsim.cli.serve_continuous import _props
from hcsim.errors import HcsimError
from hcsim.frontends.serving import continuous as fc
from hcsim.frontends.serving.disaggregated import serve_disaggregated
from hcsim.frontends.serving.iteration import IterationShape, IterationTimer, iteration_graph, kv_bytes_per_token
from hcsim.frontends.serving.kvcache import KVCache, shared_prefix
from hcsim.frontends.serving.replica import State
from hcsim.frontends.serving.transfers import KVTransferTimer, SwapTimer
from hcsim.platform import builders, compile_platform, star
from hcsim.workload.models.spec import TransformerSpec

TINY = TransformerSpec("tiny", 2, 256, 4, 2, 512, 1000, 1024)  # fp16, SwiGLU, untied, rotary


@pytest.fixture(scope="module")
def star2(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("p") / "star2.xml")
    topo = star(2, "H100")
    compile_platform(topo, path)
    return path, topo.xpus()


@pytest.fixture(scope="module")
def cxl8(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("p") / "cxl8.xml")
    topo = builders.paper_system(8, coherent=True, mix="H100")
    compile_platform(topo, path)
    return path, topo.xpus()


@pytest.fixture(scope="module")
def hetero(tmp_path_factory):
    """Two racks of one server: eight H100, then eight A100, on the CXL fabric."""
    path = str(tmp_path_factory.mktemp("p") / "hetero.xml")
    topo = builders.paper_system(16, coherent=True, mix="H100+A100", servers_per_rack=1)
    compile_platform(topo, path)
    return path, topo.xpus()


def hand_time(shape, rate=989.4e12, bw=3.35e12):
    """The iteration on one rank of ``rate`` FLOP/s and ``bw`` B/s, every operator's roofline added up."""
    h, i, v, layers, b = 256, 512, 1000, 2, 2
    d = h // 4
    q, kv = 4 * d, 2 * d
    t, n_seq = shape.tokens, shape.sequences

    def roof(flops, nbytes):
        return max(flops / rate, nbytes / bw)

    def gemm(m, k, n):
        return roof(2.0 * m * k * n, b * (k * n + m * k + m * n))

    block = [
        roof(4.0 * t * h, 2.0 * t * h * b),
        gemm(t, h, q + 2 * kv),
        gemm(t, q, h),
        roof(1.0 * t * h, 3.0 * t * h * b),
        roof(4.0 * t * h, 2.0 * t * h * b),
        gemm(t, h, 2 * i),
        roof(4.0 * t * i, 3.0 * i * t * b),
        gemm(t, i, h),
        roof(1.0 * t * h, 3.0 * t * h * b),
    ]
    if shape.decodes:
        s, n = shape.kv_hbm, shape.decodes
        block.append(roof(4.0 * s * q, 2.0 * s * kv * b + b * n * (2 * q + 2 * kv)))
    for tokens, prior, *_ in shape.chunks:
        block.append(roof(4.0 * tokens * (prior + tokens) * q, 2.0 * prior * kv * b + b * tokens * (2 * q + 2 * kv)))
    embed = roof(0.0, 2.0 * t * h * b)
    head = roof(4.0 * n_seq * h, 2.0 * n_seq * h * b) + gemm(n_seq, h, v)
    return embed + layers * sum(block) + head


def timers(path, groups, coherent=False, **kw):
    return [IterationTimer(TINY, path, g, coherent=coherent, **kw) for g in groups]


# ------------------------------------------------------------------ routers
def test_least_outstanding_tokens_sends_a_request_to_the_idle_replica(star2):
    """R0 decodes 400 tokens on replica 0; R1 (2 tokens) is done on replica 1 when R2 comes."""
    path, xpus = star2
    reqs = [fc.Request(0.0, 16, 400), fc.Request(0.0, 16, 2), fc.Request(2e-4, 8, 3)]

    def pair():  # replica 0's long decode bucketed (few SimGrid runs), replica 1 exact (hand-worked)
        return [IterationTimer(TINY, path, xpus[:1], coherent=False, kv_bucket=4096), *timers(path, [xpus[1:]])]

    rr = fc.serve_continuous(pair(), reqs, (1000, 0))
    lot = fc.serve_continuous(pair(), reqs, (1000, 0), router="least_tokens")
    assert list(rr.replica) == [0, 1, 0] and list(lot.replica) == [0, 1, 1]
    assert rr.finish[1] < 2e-4 < rr.finish[0]  # the case is what it says
    t_prefill = hand_time(IterationShape(0, 0, 0, ((8, 0, 0),)))
    assert lot.ttft()[2] == pytest.approx(t_prefill, rel=1e-9)  # alone on an idle replica
    assert rr.ttft()[2] > t_prefill  # behind R0's decode iteration in flight, then shares one
    assert lot.e2e()[2] == pytest.approx(
        t_prefill + hand_time(IterationShape(1, 9, 0)) + hand_time(IterationShape(1, 10, 0)), rel=1e-9
    )
    assert lot.summary()["router"] == "least_tokens" and "router" not in rr.summary()
    assert lot.finish[1] == rr.finish[1] and lot.finish[0] < rr.finish[0]  # round robin slowed R0 down


def test_one_replica_is_the_same_run_whatever_the_router(star2):
    path, xpus = star2
    reqs = fc.synthetic_requests(12, 1e5, (8, 64), (1, 40), seed=4)
    a = fc.serve_continuous(timers(path, [xpus[:1]], kv_bucket=256), reqs, (14, 0), block_tokens=8)
    b = fc.serve_continuous(
        timers(path, [xpus[:1]], kv_bucket=256), reqs, (14, 0), block_tokens=8, router="least_tokens"
    )
    assert a.summary()["preemptions"] > 0
    assert np.array_equal(a.finish, b.finish) and np.array_equal(a.first_token, b.first_token)
    assert a.summary() == {k: v for k, v in b.summary().items() if k != "router"}


def test_the_least_tokens_router_cut_at_arrivals_equals_iteration_by_iteration(star2):
    path, xpus = star2
    reqs = fc.synthetic_requests(16, 2e5, (8, 64), (1, 50), seed=6)
    groups = [[x] for x in xpus]
    kw = dict(block_tokens=8, router="least_tokens")
    a = fc.serve_continuous(timers(path, groups, kv_bucket=256), reqs, (30, 0), **kw)
    b = fc.serve_continuous(timers(path, groups, kv_bucket=256), reqs, (30, 0), fast=False, **kw)
    assert set(a.replica) == {0, 1}
    assert np.array_equal(a.finish, b.finish) and np.array_equal(a.replica, b.replica)
    assert a.summary() == b.summary()


def test_a_bad_router_is_one_line(star2):
    path, xpus = star2
    with pytest.raises(HcsimError, match=r"--router 'random' is invalid \(valid: round_robin, least_tokens\)"):
        fc.serve_continuous(timers(path, [xpus]), [fc.Request(0.0, 4, 2)], (10, 0), router="random")


# ------------------------------------------------------------------ disaggregation
def test_kv_transfer_is_latency_plus_bytes_over_the_link(star2):
    path, xpus = star2
    per_token = kv_bytes_per_token(TINY, 1)
    kv = KVTransferTimer(path, per_token)
    t1, t2, t3 = (kv.seconds([xpus[0]], [xpus[1]], n) for n in (1000, 2000, 3000))
    assert t2 - t1 == pytest.approx(t3 - t2, rel=1e-9)  # affine in the bytes
    assert t2 - t1 == pytest.approx(1000 * per_token / 128e9, rel=0.1)  # the star link's 128 GB/s
    assert kv.seconds([xpus[0]], [xpus[1]], 1000) == t1 and kv.simulations == 3  # memoized


def test_disaggregated_h100_prefill_a100_decode_in_closed_form(hetero):
    """One request: prefill on an H100, its KV to an A100 over the fabric, decode there."""
    path, xpus = hetero
    props = _props(path)
    a100 = props[xpus[8]]
    assert props[xpus[0]]["device"] == "H100" and a100["device"] == "A100"
    rate, bw = float(a100["fp16_flops"]), float(a100["memory_bandwidth"])
    transfer = KVTransferTimer(path, kv_bytes_per_token(TINY, 1))
    reqs = [fc.Request(0.0, 40, 3)]
    r = serve_disaggregated(timers(path, [[xpus[0]]], True), timers(path, [[xpus[8]]], True), transfer, reqs,
                            (100, 0), (100, 0))  # fmt: skip
    t_pre = hand_time(IterationShape(0, 0, 0, ((40, 0, 0),)))
    t_kv = transfer.seconds([xpus[0]], [xpus[8]], 40)
    t_dec = hand_time(IterationShape(1, 41, 0), rate, bw) + hand_time(IterationShape(1, 42, 0), rate, bw)
    assert r.ttft()[0] == pytest.approx(t_pre, rel=1e-9)
    assert r.e2e()[0] == pytest.approx(t_pre + t_kv + t_dec, rel=1e-9)
    s = r.summary()
    assert s["kv_transfers"] == 1 and s["kv_transfer_mean_s"] == pytest.approx(t_kv)
    assert s["iterations"] == 3 and s["prefill_replicas"] == s["decode_replicas"] == 1


def test_transfers_leave_a_prefill_replica_one_after_another(star2):
    path, xpus = star2
    transfer = KVTransferTimer(path, 1e6)  # a large KV per token: transfers far longer than the prefill
    reqs = [fc.Request(0.0, 16, 2), fc.Request(0.0, 16, 2), fc.Request(0.0, 16, 1)]
    r = serve_disaggregated(timers(path, [xpus[:1]]), timers(path, [xpus[1:]]), transfer, reqs, (100, 0), (100, 0))
    t_kv = transfer.seconds(xpus[:1], xpus[1:], 16)
    t_pre = hand_time(IterationShape(0, 0, 0, ((16, 0, 0), (16, 0, 0), (16, 0, 0))))
    s = r.summary()
    assert s["kv_transfers"] == 2 and s["kv_transfers_waited"] == 1 and s["kv_transfers_overlapping"] == 0
    # request 2 (one output token) ends with its prefill; 0 and 1 decode after their transfers, 1 after 0's
    assert r.finish[2] == pytest.approx(t_pre, rel=1e-9)
    assert r.finish[0] == pytest.approx(t_pre + t_kv + hand_time(IterationShape(1, 17, 0)), rel=1e-9)
    assert r.finish[1] == pytest.approx(t_pre + 2 * t_kv + hand_time(IterationShape(1, 17, 0)), rel=1e-9)


# ------------------------------------------------------------------ swap preemption
def test_a_swap_copies_blocks_over_the_host_link_and_back(cxl8):
    path, xpus = cxl8
    swap = SwapTimer(path, xpus[:1], 4096.0)
    one, two, three = swap(100, 0), swap(200, 0), swap(300, 0)
    assert two - one == pytest.approx(three - two, rel=1e-9) and two - one > 0  # latency + bytes / bandwidth
    assert swap(0, 100) == pytest.approx(one, rel=1e-12)  # the link is symmetric
    assert swap(100, 200) == pytest.approx(one + two, rel=1e-9)  # out, then in
    assert swap(0, 0) == 0.0


def test_swap_preemption_keeps_the_victims_kv_and_times_the_copies(cxl8):
    path, xpus = cxl8
    reqs = [fc.Request(0.0, 4, 10), fc.Request(0.0, 4, 10), fc.Request(0.0, 4, 10)]
    block_bytes = kv_bytes_per_token(TINY, 1) * 4
    swaps = [SwapTimer(path, xpus[:1], block_bytes)]
    log = []
    kw = dict(block_tokens=4, fast=False)
    r = fc.serve_continuous(timers(path, [xpus[:1]]), reqs, (9, 0), swaps=swaps, log=log, **kw)
    rc = fc.serve_continuous(timers(path, [xpus[:1]]), reqs, (9, 0), **kw)
    s = r.summary()
    assert list(r.preemptions) == list(rc.preemptions) == [0, 0, 1]
    assert s["preemption"] == "swap" and s["swap_out_blocks"] == s["swap_in_blocks"] > 0
    assert not [sh for _, _, _, sh, _ in log if sh.chunks and sh.chunks[0][0] > 4]  # nothing recomputed
    t = timers(path, [xpus[:1]])[0]
    copied = [(dt, sh) for _, _, dt, sh, _ in log if dt != t.seconds(sh)]
    assert len(copied) == 2  # the iteration swapping out, the one swapping in
    for dt, sh in copied:
        assert dt == pytest.approx(t.seconds(sh) + swaps[0](s["swap_out_blocks"], 0), rel=1e-9)
    assert s["swap_seconds"] == pytest.approx(2 * swaps[0](s["swap_out_blocks"], 0), rel=1e-9)
    assert np.all(np.isfinite(r.finish))


# ------------------------------------------------------------------ three tiers
def test_the_third_tier_is_host_dram_copied_in_on_a_coherent_system(cxl8):
    path, xpus = cxl8
    t = IterationTimer(TINY, path, xpus[:1], coherent=True)
    hbm, cxl = t.seconds(IterationShape(2, 6000, 0)), t.seconds(IterationShape(2, 3000, 3000))
    host = t.seconds(IterationShape(2, 3000, 0, (), 3000))
    assert hbm < cxl < host  # HBM, then CXL read in place, then host DRAM copied in first
    w = iteration_graph(TINY, xpus[:1], IterationShape(2, 3000, 1000, ((8, 16, 16, 16),), 2000))
    tiers = [(d.get("kv_tier"), d.get("coherent")) for _, d in w.nodes(data=True) if d.get("kv_tier")]
    assert sorted(set(tiers), key=str) == [("host", False), ("remote", None)] and len(tiers) == 2 * TINY.layers
    host_v = next(d for _, d in w.nodes(data=True) if d.get("kv_tier") == "host")
    assert host_v["flops"] == 4.0 * 256 * (2000 + 8 * 16)  # decode reads + the chunk's prior host KV


def test_the_third_tiers_bucket_is_bounded_by_its_measured_gap(cxl8):
    path, xpus = cxl8
    exact = IterationTimer(TINY, path, xpus[:1], coherent=True)
    bucketed = IterationTimer(TINY, path, xpus[:1], coherent=True, kv_bucket=4096)
    bound = bucketed.bucket_bound(989.4e12, 3.35e12)
    for shape in (IterationShape(4, 5000, 3000, (), 100), IterationShape(4, 5000, 0, (), 8000)):
        t, tb = exact.seconds(shape), bucketed.seconds(shape)
        assert t < tb <= t + bound + bucketed.remote_gap
    assert set(bucketed.host_gaps) == {IterationShape(4, 8192, 4096, (), 4096), IterationShape(4, 8192, 0, (), 8192)}
    assert 0 < max(bucketed.host_gaps.values()) < bucketed.remote_gap


def test_three_tiers_fill_in_order_and_hold_what_two_cannot(cxl8):
    path, xpus = cxl8
    reqs = [fc.Request(0.0, 16, 5) for _ in range(4)]
    kw = dict(block_tokens=4, fast=False)
    two = fc.serve_continuous(timers(path, [xpus[:1]], True), reqs, (10, 6), tiers=("hbm", "cxl"), **kw)
    log = []
    tiers = ("hbm", "cxl", "host")
    three = fc.serve_continuous(timers(path, [xpus[:1]], True), reqs, (10, 6, 40), tiers=tiers, log=log, **kw)
    s = three.summary()
    assert two.summary()["preemptions"] > 0 and s["preemptions"] == 0  # 4 x 5 blocks: 16 too few, 56 enough
    assert (s["kv_hbm_peak_blocks"], s["kv_cxl_peak_blocks"], s["kv_host_peak_blocks"]) == (10, 6, 4)
    assert any(sh.kv_host for _, _, _, sh, _ in log) and all(len(c) == 4 for _, _, _, sh, _ in log for c in sh.chunks)


# ------------------------------------------------------------------ prefix caching
def test_a_cached_prefix_is_not_prefilled_again(star2):
    """B shares A's 32-token prefix (two blocks of 16) and comes after A is done: it prefills 8 tokens on 32."""
    path, xpus = star2
    reqs = [fc.Request(0.0, 40, 2, 7, 32), fc.Request(1.0, 40, 2, 7, 32), fc.Request(2.0, 40, 2, 8, 32)]
    r = fc.serve_continuous(timers(path, [xpus[:1]]), reqs, (100, 0))
    full = hand_time(IterationShape(0, 0, 0, ((40, 0, 0),)))
    assert r.ttft()[0] == pytest.approx(full, rel=1e-9)
    assert r.ttft()[1] == pytest.approx(hand_time(IterationShape(0, 0, 0, ((8, 32, 0),))), rel=1e-9)
    assert r.ttft()[2] == pytest.approx(full, rel=1e-9)  # another prefix: no hit
    assert r.summary()["prefix_hit_blocks"] == 2
    pair = [fc.Request(0.0, 32, 2, 1, 32), fc.Request(1.0, 32, 2, 1, 32)]
    whole = fc.serve_continuous(timers(path, [xpus[:1]]), pair, (100, 0))
    assert whole.summary()["prefix_hit_blocks"] == 1  # at least one prompt token is computed: 31 // 16


def test_evictable_prefix_blocks_go_least_recently_released_first():
    cache = KVCache(16, 4)
    a, b, c = (State(i, fc.Request(0.0, 40, 1, i, 16), target=40) for i in range(3))
    for s in (a, b):
        cache.allocate(s, 1)
        s.computed = 16
        cache.publish(s)
    cache.release(b)
    cache.release(a)  # b released first: evicted first
    assert cache.free == 4 and cache.free_hbm == 2
    cache.allocate(c, 3)
    assert (1, 0) not in cache.cached and (0, 0) in cache.cached and cache.free == 1
    d = State(3, fc.Request(0.0, 40, 1, 0, 16), target=40)
    assert cache.reuse(d) == 16 and cache.free == 0 and d.hbm_blocks == 1
    cache.release(d)
    cache.release(c)
    assert cache.free == 4 and cache.free_hbm == 3


def test_shared_prefix_groups_requests():
    reqs = shared_prefix([fc.Request(0.0, 20, 1), fc.Request(1.0, 100, 1), fc.Request(2.0, 50, 1)], 64, 2)
    assert [(r.prefix_id, r.prefix_tokens) for r in reqs] == [(0, 20), (1, 64), (0, 50)]


# ------------------------------------------------------------------ CLI
CLI = ["serve", "--model", "llama3-8b", "--system", "cxl", "--xpus", "16", "--tp", "8", "--scheduler", "continuous",
       "--rate", "50/s", "--requests", "40", "--prompt-tokens", "256", "--output-tokens", "16", "--json"]  # fmt: skip


@pytest.mark.slow
def test_the_cli_runs_every_engine_option_byte_identically(tmp_path):
    args = [*CLI, "--disaggregate", "prefill=8,decode=8", "--router", "least_tokens", "--preemption", "swap",
            "--kv-cache", "hbm,cxl,host", "--shared-prefix", "128:4"]  # fmt: skip
    a, b = run(*args), run(*args)
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout
    s = json.loads(a.stdout)
    assert s["disaggregate"] == "prefill=8,decode=8" and s["kv_transfers"] == 40 and s["prefix_hit_blocks"] > 0
    assert s["kv_cache"] == "hbm,cxl,host" and s["router"] == "least_tokens" and s["preemption"] == "swap"


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--router", "random"], "--router 'random' is invalid (valid: round_robin, least_tokens)"),
        (["--preemption", "drop"], "--preemption 'drop' is invalid (valid: recompute, swap)"),
        (["--disaggregate", "prefill=8"], "--disaggregate 'prefill=8' is invalid"),
        (["--disaggregate", "prefill=4,decode=12"], "multiples of --tp 8"),
        (["--disaggregate", "prefill=8,decode=16"], "N + M = --xpus 16"),
        (["--shared-prefix", "0"], "--shared-prefix '0' is invalid"),
        (["--shared-prefix", "16:x"], "--shared-prefix '16:x' is invalid"),
        (["--kv-cache", "hbm,host,cxl"], "--kv-cache 'hbm,host,cxl' is invalid"),
        (["--kv-cache", "hbm,cxl", "--kv-tier-capacity", "1GiB,2GiB"], "gives 2 capacities for 1 tier(s)"),
    ],
)
def test_bad_engine_input_is_one_line_and_writes_nothing(tmp_path, extra, needle):
    out = tmp_path / "out"
    assert_refused(run_here(*CLI, *extra, "--out", str(out)), needle)
    assert not out.exists()


def test_dynamic_mode_refuses_the_engine_flags():
    for flag, value in (("--router", "least_tokens"), ("--disaggregate", "prefill=1,decode=1")):
        assert_refused(run_here("serve", "--gpu", "v100", "--rho", "0.5", flag, value), f"{flag} applies to")
    assert_one_line_error(run("serve", "--gpu", "v100", "--rho", "0.5", "--preemption", "swap"), "--preemption")


# ------------------------------------------------------------------ replicas on one platform
def test_whole_server_replicas_share_no_link_and_smaller_ones_may():
    from hcsim.frontends.serving.sharing import shared_links

    topo = builders.paper_system(16, coherent=True, mix="H100")
    xpus = topo.xpus()
    assert shared_links(topo, [xpus[:8], xpus[8:]], ("cxl_memory", "host_memory")) == []
    plain = builders.paper_system(16, coherent=False, mix="H100").xpus()
    assert shared_links(builders.paper_system(16, coherent=False), [plain[:8], plain[8:]], ("host_memory",)) == []
    assert shared_links(topo, [[x] for x in xpus[:8]], ("cxl_memory",)) == []  # a private CXL expander each
    shared = shared_links(topo, [[x] for x in xpus[:8]], ("host_memory",))  # a CPU's DRAM behind its PCIe
    assert shared and all(any("cpu" in n or "dram" in n or "mem" in n for n in e) for e in shared), shared
