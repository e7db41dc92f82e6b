"""Continuous batching: iterations timed in SimGrid against hand-worked rooflines; the scheduler's rules.

The hand-worked case times every iteration from the operator formulas of docs/models.md
written out here (not through hcsim's operator lists), on one H100 with the ideal
roofline max(F / R, M / W) per operator, and checks TTFT and TPOT of three requests in
closed form. The rest checks what the scheduler promises: the token budget, preemption by
recompute of the newest request, memoization that changes nothing, the bucket's bound,
the KV tiers' semantics, and the CLI's one-line errors.
"""

import json
import math

import numpy as np
import pytest
from clitools import assert_one_line_error, run

from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.frontends.serving import continuous as fc
from hcsim.frontends.serving.iteration import IterationShape, IterationTimer, iteration_graph, kv_bytes_per_token
from hcsim.platform import builders, compile_platform, star
from hcsim.workload.models.inference import inference_step
from hcsim.workload.models.spec import TransformerSpec

TINY = TransformerSpec("tiny", 2, 256, 4, 2, 512, 1000, 1024)  # fp16, SwiGLU, untied, rotary
H100_FP16, H100_BW = 989.4e12, 3.35e12


@pytest.fixture(scope="module")
def one_h100(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("p") / "star1.xml")
    topo = star(1, "H100")
    compile_platform(topo, path)
    return path, topo.xpus()


@pytest.fixture(scope="module")
def cxl8(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("p") / "cxl8.xml")
    topo = builders.paper_system(8, coherent=True, mix="H100")
    compile_platform(topo, path)
    return path, topo.xpus()


def roofline(flops, nbytes):
    return max(flops / H100_FP16, nbytes / H100_BW)


def hand_time(shape):
    """The iteration on one rank, every operator's roofline added up (docs/models.md, "Operator formulas")."""
    h, i, v, layers, b = 256, 512, 1000, 2, 2
    d = h // 4
    q, kv = 4 * d, 2 * d
    t, n_seq = shape.tokens, shape.sequences

    def gemm(m, k, n):
        return roofline(2.0 * m * k * n, b * (k * n + m * k + m * n))

    block = [
        roofline(4.0 * t * h, 2.0 * t * h * b),  # norm1
        gemm(t, h, q + 2 * kv),  # QKV
        gemm(t, q, h),  # out
        roofline(1.0 * t * h, 3.0 * t * h * b),  # residual add
        roofline(4.0 * t * h, 2.0 * t * h * b),  # norm2
        gemm(t, h, 2 * i),  # gate + up
        roofline(4.0 * t * i, 3.0 * i * t * b),  # SiLU x up
        gemm(t, i, h),  # down
        roofline(1.0 * t * h, 3.0 * t * h * b),  # residual add
    ]
    if shape.decodes:  # decode attention: read the KV of every request, Q, write O and the new K, V
        s, n = shape.kv_hbm, shape.decodes
        block.append(roofline(4.0 * s * q, 2.0 * s * kv * b + b * n * (2 * q + 2 * kv)))
    for tokens, prior, _ in shape.chunks:  # a chunk attends to its prior KV and itself, causally counted whole
        block.append(
            roofline(4.0 * tokens * (prior + tokens) * q, 2.0 * prior * kv * b + b * tokens * (2 * q + 2 * kv))
        )
    embed = roofline(0.0, 2.0 * t * h * b)
    head = roofline(4.0 * n_seq * h, 2.0 * n_seq * h * b) + gemm(n_seq, h, v)
    return embed + layers * sum(block) + head


def test_iteration_time_is_the_hand_worked_roofline(one_h100):
    path, xpus = one_h100
    timer = IterationTimer(TINY, path, xpus, coherent=False)
    for shape in (
        IterationShape(0, 0, 0, ((16, 0, 0), (32, 0, 0))),
        IterationShape(2, 50, 0),
        IterationShape(3, 3000, 0, ((700, 40, 0),)),
    ):
        assert timer.seconds(shape) == pytest.approx(hand_time(shape), rel=1e-9)


def test_three_requests_ttft_and_tpot_in_closed_form(one_h100):
    """A (t=0, 32 prompt, 3 out) and B (t=0, 16 prompt, 2 out) prefill together; C arrives alone at 10 s."""
    path, xpus = one_h100
    timer = IterationTimer(TINY, path, xpus, coherent=False)
    reqs = [fc.Request(0.0, 32, 3), fc.Request(0.0, 16, 2), fc.Request(10.0, 8, 1)]
    r = fc.serve_continuous([timer], reqs, (1000, 0), block_tokens=16, max_tokens=64)
    t1 = hand_time(IterationShape(0, 0, 0, ((16, 0, 0), (32, 0, 0))))
    t2 = hand_time(IterationShape(2, 33 + 17, 0))  # A's KV 32 + its new token, B's 16 + 1
    t3 = hand_time(IterationShape(1, 34, 0))
    t4 = hand_time(IterationShape(0, 0, 0, ((8, 0, 0),)))
    assert r.ttft() == pytest.approx([t1, t1, t4], rel=1e-9)
    assert r.tpot() == pytest.approx([(t2 + t3) / 2, t2], rel=1e-9)  # C has no second token
    assert r.e2e() == pytest.approx([t1 + t2 + t3, t1 + t2, t4], rel=1e-9)
    s = r.summary()
    assert s["iterations"] == 4 and s["preemptions"] == 0
    assert s["throughput_tokens_per_s"] == pytest.approx(6 / (10 + t4), rel=1e-12)


def test_chunked_prefill_respects_the_token_budget(one_h100):
    path, xpus = one_h100
    timer = IterationTimer(TINY, path, xpus, coherent=False)
    reqs = [fc.Request(0.0, 100, 4), fc.Request(0.0, 30, 3), fc.Request(0.001, 50, 2)]
    log = []
    r = fc.serve_continuous([timer], reqs, (1000, 0), max_tokens=40, log=log, fast=False)
    assert all(shape.tokens <= 40 for _, _, _, shape, _ in log)
    # request 0 alone: chunks of 40, 40, 20 (the last leaves 20 tokens for request 1's first chunk)
    first = [shape.chunks for _, _, _, shape, _ in log[:3]]
    assert first == [((40, 0, 0),), ((40, 40, 0),), ((20, 0, 0), (20, 80, 0))]
    assert r.ttft()[0] == pytest.approx(sum(dt for _, _, dt, _, _ in log[:3]), rel=1e-12)
    assert np.all(np.isfinite(r.finish))


def test_a_full_cache_preempts_the_newest_request_by_recompute(one_h100):
    path, xpus = one_h100
    timer = IterationTimer(TINY, path, xpus, coherent=False)
    reqs = [fc.Request(0.0, 16, 40), fc.Request(0.0, 16, 40), fc.Request(0.0, 16, 40)]
    log = []
    r = fc.serve_continuous([timer], reqs, (9, 0), block_tokens=16, log=log, fast=False)
    # 3 x 1 block to start; each needs 4 blocks by its end (16 + 39 tokens): 12 > 9, so someone is preempted
    assert list(r.preemptions) == [0, 0, 1]  # the newest, once; the two older ones never
    assert np.all(np.isfinite(r.finish)) and r.summary()["kv_hbm_peak_blocks"] <= 9
    # recompute: request 2 prefills its prompt and the tokens it had generated again
    recompute = [shape for _, _, _, shape, _ in log if shape.chunks and shape.chunks[0][0] > 16]
    assert recompute and all(c[1] == 0 for s in recompute for c in s.chunks)
    assert r.finish[2] > max(r.finish[0], r.finish[1])


def test_a_request_larger_than_the_cache_is_one_line(one_h100):
    path, xpus = one_h100
    timer = IterationTimer(TINY, path, xpus, coherent=False)
    with pytest.raises(HcsimError, match=r"request 0 \(100 prompt \+ 30 output tokens\) needs 9 KV blocks"):
        fc.serve_continuous([timer], [fc.Request(0.0, 100, 30)], (8, 0))


def _run(path, xpus, reqs, cache, **kw):
    memoize, fast = kw.pop("memoize", True), kw.pop("fast", True)
    timer = IterationTimer(TINY, path, xpus, coherent=False, memoize=memoize, kv_bucket=kw.pop("kv_bucket", 1))
    return fc.serve_continuous([timer], reqs, cache, fast=fast, **kw), timer


def test_memoized_equals_unmemoized(one_h100):
    path, xpus = one_h100
    reqs = fc.synthetic_requests(6, 400.0, (8, 40), (1, 12), seed=3)
    a, ta = _run(path, xpus, reqs, (12, 0), block_tokens=8, max_tokens=48)
    b, tb = _run(path, xpus, reqs, (12, 0), block_tokens=8, max_tokens=48, memoize=False, fast=False)
    assert tb.simulations == b.iterations > ta.simulations  # every iteration simulated vs each shape once
    for name in ("first_token", "finish", "preemptions"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert a.summary() | {"simulations": 0} == b.summary() | {"simulations": 0}


def test_repeated_decode_iterations_advance_together_identically(one_h100):
    path, xpus = one_h100
    reqs = fc.synthetic_requests(40, 1e5, (8, 64), (1, 60), seed=5)
    log = []
    a, _ = _run(path, xpus, reqs, (30, 0), block_tokens=8, kv_bucket=64, log=log)
    b, _ = _run(path, xpus, reqs, (30, 0), block_tokens=8, kv_bucket=64, fast=False)
    assert b.summary()["preemptions"] > 0  # the case exercises preemption too
    assert len(log) < a.iterations  # and runs of repeated iterations
    assert a.summary() == b.summary()
    assert np.array_equal(a.finish, b.finish) and np.array_equal(a.first_token, b.first_token)


def test_the_bucket_never_shortens_an_iteration_and_stays_within_its_bound(cxl8):
    path, xpus = cxl8
    exact = IterationTimer(TINY, path, xpus[:2], coherent=True)
    bucketed = IterationTimer(TINY, path, xpus[:2], coherent=True, kv_bucket=512)
    bound = bucketed.bucket_bound(H100_FP16, H100_BW)
    assert bound == pytest.approx(TINY.layers * 511 * (2 * 1 * 64 * 2) / H100_BW)  # memory-bound per token
    for shape in (IterationShape(3, 1, 0), IterationShape(5, 1000, 0, ((64, 0, 0),)), IterationShape(9, 4097, 0)):
        t, tb = exact.seconds(shape), bucketed.seconds(shape)
        assert t <= tb <= t + bound * (1 + 1e-9)
        assert bucketed.key(shape).kv_hbm % 512 == 0


def test_the_remote_bucket_is_bounded_by_its_measured_gap(cxl8):
    path, xpus = cxl8
    exact = IterationTimer(TINY, path, xpus[:2], coherent=True)
    bucketed = IterationTimer(TINY, path, xpus[:2], coherent=True, kv_bucket=4096)
    bound = bucketed.bucket_bound(H100_FP16, H100_BW)
    for shape in (IterationShape(4, 5000, 3000), IterationShape(4, 5000, 6000), IterationShape(2, 100, 8191)):
        t, tb = exact.seconds(shape), bucketed.seconds(shape)
        assert t < tb <= t + bound + bucketed.remote_gap
    assert set(bucketed.gaps) == {
        IterationShape(4, 8192, 4096),
        IterationShape(4, 8192, 8192),
        IterationShape(2, 4096, 8192),
    }
    assert 0 < bucketed.remote_gap < 0.5 * tb


def test_a_pure_decode_iteration_is_the_engines_decode_step(cxl8):
    path, xpus = cxl8
    timer = IterationTimer(TINY, path, xpus[:2], coherent=True)
    step = inference_step(TINY, xpus[:2], batch=3, context=70, phase="decode", tp=2)
    assert timer.seconds(IterationShape(3, 210, 0)) == simulate(path, step, 1, record_flows=False).makespan
    prefill = inference_step(TINY, xpus[:2], batch=1, context=90, phase="prefill", tp=2)
    assert timer.seconds(IterationShape(0, 0, 0, ((90, 0, 0),))) == simulate(path, prefill, 1).makespan


def test_remote_kv_is_read_in_place_when_coherent_and_copied_in_when_not(cxl8):
    path, xpus = cxl8
    coherent = IterationTimer(TINY, path, xpus[:1], coherent=True)
    copied = IterationTimer(TINY, path, xpus[:1], coherent=False)
    local = coherent.seconds(IterationShape(4, 40000, 0))
    remote = IterationShape(4, 20000, 20000)
    in_place, swap = coherent.seconds(remote), copied.seconds(remote)
    assert local < in_place < swap  # the CXL link is slower than HBM; a copy then compute is slower still
    w = iteration_graph(TINY, xpus[:1], remote)
    assert sum(d.get("kv_tier") == "remote" for _, d in w.nodes(data=True)) == TINY.layers
    # the copy: per layer, 20000 tokens x 2 (K, V) x 2 KV heads x 64 x 2 bytes over the XPU's PCIe, then compute
    per_layer = 20000 * kv_bytes_per_token(TINY, 1) / TINY.layers
    assert swap - coherent.seconds(IterationShape(4, 20000, 0)) > TINY.layers * per_layer / 128e9


def test_a_second_tier_holds_what_hbm_cannot(cxl8):
    path, xpus = cxl8
    reqs = [fc.Request(0.0, 64, 20) for _ in range(4)]
    only_hbm = fc.serve_continuous([IterationTimer(TINY, path, xpus[:1], coherent=True)], reqs, (12, 0))
    tiered = fc.serve_continuous(
        [IterationTimer(TINY, path, xpus[:1], coherent=True)], reqs, (12, 40), tiers=("hbm", "cxl")
    )
    assert only_hbm.summary()["preemptions"] > 0 and tiered.summary()["preemptions"] == 0
    s = tiered.summary()
    assert s["kv_cxl_peak_blocks"] > 0 and s["kv_hbm_peak_blocks"] == 12


# ------------------------------------------------------------------ CLI
CLI = ["serve", "--model", "llama3-8b", "--system", "cxl", "--xpus", "8", "--tp", "8", "--scheduler", "continuous"]


@pytest.mark.slow
def test_the_issue_example_prints_the_metrics_and_is_byte_identical(tmp_path):
    args = [*CLI, "--kv-cache", "hbm,cxl", "--rate", "20/s", "--requests", "60", "--prompt-tokens", "512",
            "--output-tokens", "128", "--json"]  # fmt: skip
    a, b = run(*args, "--out", str(tmp_path / "a")), run(*args)
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout
    s = json.loads(a.stdout)
    assert json.loads((tmp_path / "a" / "summary.json").read_text()) == s
    rows = (tmp_path / "a" / "requests.csv").read_text().splitlines()
    assert rows[0].startswith("request,arrival_s,prompt_tokens,output_tokens,replica,first_token_s") and len(rows) == 61
    for key in (
        "ttft_p50_s",
        "ttft_p99_s",
        "tpot_p50_s",
        "throughput_tokens_per_s",
        "e2e_p90_s",
        "kv_hbm_occupancy_mean",
    ):
        assert math.isfinite(s[key]) and s[key] > 0, key
    assert s["requests"] == 60 and s["output_tokens"] == 60 * 128
    assert s["ttft_p50_s"] <= s["ttft_p99_s"] and s["tpot_p50_s"] < s["ttft_p50_s"]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--rate", "0/s"], "--rate 0.0 is invalid"),
        (["--rate", "-3"], "--rate -3.0 is invalid"),
        (["--rate", "1/s", "--prompt-tokens", "0"], "--prompt-tokens '0' is invalid"),
        (["--rate", "1/s", "--prompt-tokens", "9:3"], "--prompt-tokens '9:3' is invalid"),
        (["--rate", "1/s", "--output-tokens", "-1"], "--output-tokens '-1' is invalid"),
        (["--rate", "1/s", "--kv-cache", "hbm,ssd"], "--kv-cache 'hbm,ssd' is invalid"),
        (["--rate", "1/s", "--block-tokens", "0"], "--block-tokens 0 is invalid"),
        (["--rate", "1/s", "--max-tokens", "0"], "--max-tokens 0 is invalid"),
        (["--rate", "1/s", "--kv-bucket", "0"], "--kv-bucket 0 is invalid"),
        (["--rate", "1/s", "--kv-hbm", "inf"], "--kv-hbm 'inf' is invalid"),
        (["--rate", "1/s", "--kv-hbm", "1MiB"], "request 0 (512 prompt + 128 output tokens) needs 40 KV blocks"),
        (["--rate", "1/s", "--kv-tier-capacity", "1GiB"], "--kv-tier-capacity applies to a second tier"),
        (["--rate", "1/s", "--requests", "0"], "--requests 0 is invalid"),
        (["--rho", "0.5"], "--rho applies to --scheduler dynamic only"),
        (["--rate", "1/s", "--prompt-tokens", "2000000"], "--prompt-tokens '2000000' is invalid"),
        (["--rate", "1/s", "--tp", "0"], "--tp 0 is invalid"),
        (["--rate", "1/s", "--tp", "3"], "--tp 3 does not divide the 8 XPUs"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, extra, needle):
    out = tmp_path / "out"
    r = run(*CLI, "--requests", "5", *extra, "--out", str(out))
    assert_one_line_error(r, needle)
    assert not out.exists()


def test_a_cxl_tier_needs_a_coherent_system_and_dynamic_refuses_continuous_flags():
    r = run(*[a if a != "cxl" else "noncoherent" for a in CLI], "--rate", "1/s", "--kv-cache", "hbm,cxl")
    assert_one_line_error(r, "--kv-cache hbm,cxl needs a coherent CXL system")
    assert_one_line_error(run("serve", "--gpu", "v100", "--rho", "0.5", "--kv-cache", "hbm"), "--kv-cache applies to")
    assert_one_line_error(run("serve", "--gpu", "v100", "--rho", "0.5", "--json"), "--json applies to")


def test_a_calibration_times_every_operator_on_the_calibrated_gpu(one_h100):
    from hcsim.calibration import load_calibration
    from hcsim.calibration.host import serving_host_seconds

    path, xpus = one_h100
    calib = load_calibration("dgx-h100")
    shape = IterationShape(3, 300, 0, ((40, 8, 0),))
    calibrated = IterationTimer(TINY, path, xpus, coherent=False, calibration=calib).seconds(shape)
    graph = iteration_graph(TINY, xpus, shape, calibration=calib)
    chain = sum(d["seconds"] for _, d in graph.nodes(data=True) if d["type"] == "compute")
    # one XPU: the operators run one after another; then vLLM's host time for 4 sequences (docs/serving.md)
    host = serving_host_seconds(calib, 4, 1, chain)
    assert host > 0 and calibrated == pytest.approx(chain + host, rel=1e-12)
    assert calibrated > hand_time(shape)  # kernel launches and achieved ceilings, not the ideal roofline
    with pytest.raises(HcsimError, match="--kv-bucket 2 applies to the roofline model only"):
        IterationTimer(TINY, path, xpus, coherent=False, calibration=calib, kv_bucket=2)
