"""The iteration timer's shortcuts (layer repeat, memoized ring steps) against its exact path.

``IterationTimer(layer_repeat=True)`` simulates three blocks of a shape and adds the third
block's period for each further block; ``memoized_rings=True`` runs the TP collectives
through hcsim.fast's memoized ring steps. Both are switches (``hcsim serve
--exact-iterations`` turns them off); here every shortcut, alone and together, is held
within 1e-12 (relative) of the exact path at the extremes of the platform (CXL 16 GB/s and
100 us beside the defaults, the non-coherent system), of TP (1, 2, 4) and of the shape (one
decode token, a 2048-token prefill, KV in the second and third tiers). Measured worst:
2.3e-14 (LLaMA3-8B TP 8 on the non-coherent system); 1e-15 or less on the tiny model.
"""

import json

import pytest
from clitools import assert_one_line_error, run

from hcsim.frontends.serving import iteration as it
from hcsim.frontends.serving.iteration import IterationShape, IterationTimer
from hcsim.platform import builders, compile_platform
from hcsim.workload.models.spec import TransformerSpec

TINY5 = TransformerSpec("tiny5", 5, 256, 4, 2, 512, 1000, 1024)  # five blocks: three run, two repeated
TOL = 1e-12
SHAPES = [
    IterationShape(1, 1, 0),
    IterationShape(0, 0, 0, ((2048, 0, 0),)),
    IterationShape(7, 3000, 0, ((100, 50, 0),)),
    IterationShape(5, 1000, 4000, ((64, 10, 500),)),
    IterationShape(3, 100, 2000, ((32, 0, 100, 300),), 5000),
]


@pytest.fixture(scope="module", params=["cxl", "cxl-16GBps-100us", "noncoherent"])
def system(request, tmp_path_factory):
    coherent = request.param != "noncoherent"
    kw = {"cxl_bandwidth": "16GBps", "cxl_latency": "100us"} if request.param.endswith("us") else {}
    topo = builders.paper_system(8, coherent=coherent, mix="H100", **kw)
    path = str(tmp_path_factory.mktemp("p") / "system.xml")
    compile_platform(topo, path)
    return path, topo.xpus(), coherent


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_layer_repeat_and_memoized_rings_equal_the_exact_path(system, tp):
    path, xpus, coherent = system
    exact = IterationTimer(TINY5, path, xpus[:tp], coherent=coherent)
    timers = {
        (rings, repeat): IterationTimer(
            TINY5, path, xpus[:tp], coherent=coherent, memoized_rings=rings, layer_repeat=repeat
        )  # fmt: skip
        for rings, repeat in ((True, False), (False, True), (True, True))
    }
    for shape in SHAPES:
        if shape.kv_host and not coherent:
            continue  # the third tier is behind CXL
        t = exact.seconds(shape)
        for key, timer in timers.items():
            assert timer.seconds(shape) == pytest.approx(t, rel=TOL, abs=0), (key, shape)
    assert all(timer.layer_fallbacks == 0 for timer in timers.values())
    assert timers[(True, True)].simulations == exact.simulations  # one (shorter) run per shape still


def test_layer_repeat_falls_back_to_every_block_when_the_periods_differ(system, monkeypatch):
    path, xpus, coherent = system
    monkeypatch.setattr(it, "LAYER_REPEAT_TOLERANCE", -1.0)  # no two periods agree: each shape runs whole
    timer = IterationTimer(TINY5, path, xpus[:2], coherent=coherent, layer_repeat=True)
    exact = IterationTimer(TINY5, path, xpus[:2], coherent=coherent)
    shape = SHAPES[2]
    assert timer.seconds(shape) == exact.seconds(shape)  # the whole graph: bit for bit
    assert timer.layer_fallbacks == 1


def test_layer_repeat_applies_only_to_alike_blocks_beyond_three(system):
    path, xpus, coherent = system
    three = TransformerSpec("tiny3", 3, 256, 4, 2, 512, 1000, 1024)
    assert not IterationTimer(three, path, xpus[:1], coherent=coherent, layer_repeat=True).layer_repeat
    assert IterationTimer(TINY5, path, xpus[:1], coherent=coherent, layer_repeat=True).layer_repeat
    moe = TransformerSpec("moe5", 5, 256, 4, 2, 512, 1000, 1024, experts=4, top_k=2, expert_intermediate=256,
                          moe_every=2)  # fmt: skip
    assert not IterationTimer(moe, path, xpus[:1], coherent=coherent, layer_repeat=True).layer_repeat


CLI = ["serve", "--model", "llama3-8b", "--system", "cxl", "--xpus", "8", "--tp", "8", "--scheduler", "continuous",
       "--kv-cache", "hbm,cxl", "--rate", "20/s", "--requests", "40", "--prompt-tokens", "512", "--output-tokens",
       "64", "--json"]  # fmt: skip


@pytest.mark.slow
def test_the_cli_default_equals_exact_iterations():
    fast, exact = run(*CLI), run(*CLI, "--exact-iterations")
    assert fast.returncode == 0 and exact.returncode == 0, fast.stderr + exact.stderr
    a, b = json.loads(fast.stdout), json.loads(exact.stdout)
    assert a.keys() == b.keys()
    for key, value in b.items():
        if isinstance(value, float):
            assert a[key] == pytest.approx(value, rel=TOL, abs=0), key
        else:
            assert a[key] == value, key


def test_exact_iterations_is_refused_in_dynamic_mode():
    r = run("serve", "--gpu", "v100", "--rho", "0.5", "--exact-iterations")
    assert_one_line_error(r, "--exact-iterations applies to --scheduler continuous only")


def test_the_cli_calibration_times_a_prefill_as_its_operators_one_after_another():
    """One request on one H100 (TP 1): its TTFT is the prefill iteration, on one XPU the chain of its operators,
    each timed by the calibrated operator model (hcsim.calibration.compute.op_seconds), summed here by hand, plus
    the calibration's host time of one iteration."""
    from hcsim.calibration import load_calibration
    from hcsim.calibration.compute import op_seconds
    from hcsim.calibration.host import serving_host_seconds
    from hcsim.frontends.serving.iteration import _attention_ops
    from hcsim.workload.models.ops import block_operators, embedding_operators, head_operators
    from hcsim.workload.models.spec import load_model

    args = ["serve", "--model", "llama3-8b", "--system", "cxl", "--xpus", "8", "--tp", "1", "--scheduler",
            "continuous", "--rate", "1/s", "--requests", "1", "--prompt-tokens", "100", "--output-tokens", "1",
            "--json"]  # fmt: skip
    calibrated, ideal = run(*args, "--calibration", "dgx-h100"), run(*args)
    assert calibrated.returncode == 0 and ideal.returncode == 0, calibrated.stderr + ideal.stderr
    a, b = json.loads(calibrated.stdout), json.loads(ideal.stdout)
    spec, calib, p = load_model("llama3-8b"), load_calibration("dgx-h100"), "fp16"
    shape = IterationShape(0, 0, 0, ((100, 0, 0),))
    chain = [*embedding_operators(spec, 100, tp=1, phase="prefill"), *head_operators(spec, 1, tp=1, phase="prefill")]
    for i in range(spec.layers):
        for op in block_operators(spec, 100, tp=1, layer=i, context=100, phase="prefill", sequences=1):
            chain += [k for k, _ in _attention_ops(spec, shape, 1)] if op.name == "attn.core" else [op]
    by_hand = sum(op_seconds(op, "fwd", p, calib) for op in chain)
    host = serving_host_seconds(calib, 1, 1, by_hand)  # vLLM's host time for one sequence (docs/serving.md)
    assert a["ttft_p50_s"] == pytest.approx(by_hand + host, rel=1e-12)
    assert a["calibration"] == calib.name and "calibration" not in b
    assert a["kv_bucket_tokens"] == 1 and b["kv_bucket_tokens"] == 256  # the bucket is roofline-only
    assert a["ttft_p50_s"] > b["ttft_p50_s"]  # launches and achieved ceilings, not datasheet peaks


def test_a_calibration_of_another_gpu_is_one_line():
    r = run("serve", "--model", "llama3-8b", "--system", "cxl", "--xpus", "8", "--tp", "8", "--scheduler",
            "continuous", "--rate", "1/s", "--requests", "1", "--calibration", "dgx-a100")  # fmt: skip
    assert_one_line_error(r, "--calibration dgx-a100 times A100 XPUs; --system cxl also has H100")
    r = run("serve", "--gpu", "v100", "--rho", "0.5", "--calibration", "dgx-h100")
    assert_one_line_error(r, "--calibration applies to --scheduler continuous only")
