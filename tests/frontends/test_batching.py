"""Dynamic batching on the platform (SimGrid) against Inoue's exact analysis.

Seeds are fixed (11) and were chosen before any run. Intervals are 99% batch-means
intervals (30 batches): with ten required cases, 95% intervals would miss by chance
too often for a test that must be reliable.
"""

import math

import numpy as np
import pytest
from clitools import assert_one_line_error, run

from hcsim.analysis.queueing import P4_RESNET50, V100_RESNET50, capacity, exact_finite, exact_infinite, fit_linear, phi
from hcsim.errors import HcsimError
from hcsim.frontends.serving.batching import arrival_times, confidence_interval, linear_time, serve, table_time
from hcsim.platform import star

FITS = {"V100": fit_linear(V100_RESNET50), "P4": fit_linear(P4_RESNET50)}
SEED = 11


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    from hcsim.platform import compile_platform

    topo = star(2, "V100")
    path = str(tmp_path_factory.mktemp("p") / "star.xml")
    compile_platform(topo, path)
    return path, topo.xpus()


@pytest.mark.slow
@pytest.mark.parametrize("gpu", ["V100", "P4"])
@pytest.mark.parametrize("rho", [0.1, 0.3, 0.5, 0.7, 0.8])
def test_simulated_latency_matches_exact_with_a_million_jobs(servers, gpu, rho):
    path, xpus = servers
    f = FITS[gpu]
    lam = rho / f.alpha
    r = serve(path, xpus[:1], arrival_times("poisson", lam, 1_000_000, SEED), linear_time(f.alpha, f.tau0))
    mean, half = confidence_interval(r.latency, level=0.99)
    exact = exact_infinite(lam, f.alpha, f.tau0).mean_latency
    assert abs(mean - exact) <= 0.01 * exact
    assert abs(mean - exact) <= half
    assert mean <= phi(lam, f.alpha, f.tau0) + half


@pytest.mark.slow
@pytest.mark.parametrize("max_batch", [1, 4, 16, 64])
def test_finite_max_batch_matches_the_exact_chain(servers, max_batch):
    path, xpus = servers
    f = FITS["V100"]
    lam = 0.8 * capacity(f.alpha, f.tau0, max_batch)
    r = serve(
        path,
        xpus[:1],
        arrival_times("poisson", lam, 1_000_000, SEED),
        linear_time(f.alpha, f.tau0),
        max_batch=max_batch,
    )
    assert r.batch_size.max() <= max_batch
    mean, half = confidence_interval(r.latency, level=0.99)
    exact = exact_finite(lam, f.alpha, f.tau0, max_batch).mean_latency
    assert abs(mean - exact) <= 0.01 * exact and abs(mean - exact) <= half


def test_random_dispatch_gives_each_server_a_poisson_stream(servers):
    path, xpus = servers
    f = FITS["P4"]
    lam = 0.6 / f.alpha  # per server
    r = serve(
        path,
        xpus,
        arrival_times("poisson", 2 * lam, 400_000, SEED),
        linear_time(f.alpha, f.tau0),
        dispatch="random",
        seed=SEED,
    )
    mean, half = confidence_interval(r.latency, level=0.99)
    exact = exact_infinite(lam, f.alpha, f.tau0).mean_latency
    assert abs(mean - exact) <= half and set(r.batch_server) == {0, 1}


def test_max_queue_delay_by_hand(servers):
    # jobs every 1 ms; M = 4; an idle server waits until its batch fills or its oldest job waited 2.5 ms;
    # tau[b] = 0.1 b + 1 ms. Batches: jobs 0-2 start at 2.5 ms, end 3.8; jobs 3-5 wait until 5.5, end 6.8; ...
    path, xpus = servers
    arrivals = np.arange(12) * 1e-3
    r = serve(path, xpus[:1], arrivals, linear_time(1e-4, 1e-3), max_batch=4, max_delay=2.5e-3)
    assert r.batch_size.tolist()[:2] == [3, 3]
    assert r.batch_start[:2] == pytest.approx([2.5e-3, 5.5e-3], rel=1e-9)
    assert r.latency[:4] == pytest.approx([3.8e-3, 2.8e-3, 1.8e-3, 3.8e-3], rel=1e-9)


def test_table_time_interpolates_the_measurements():
    tau = table_time(V100_RESNET50)
    assert tau(8) == pytest.approx(8 / 2685)
    assert tau(6) == pytest.approx((4 / 1631 + 8 / 2685) / 2)
    assert tau(256) > tau(128)


@pytest.mark.parametrize("kind", ["poisson", "deterministic", "gamma", "hyperexponential", "pareto"])
def test_arrival_processes_have_the_asked_rate(kind):
    times = arrival_times(kind, 500.0, 400_000, SEED, shape=2.5)
    assert len(times) / times[-1] == pytest.approx(500.0, rel=0.03)
    assert np.all(np.diff(times) >= 0)


def test_replay_and_bad_inputs(tmp_path):
    f = tmp_path / "ts.txt"
    f.write_text("0.0\n0.001\n0.0015\n")
    assert arrival_times("replay", 0, 0, path=str(f)).tolist() == [0.0, 0.001, 0.0015]
    f.write_text("0.002\n0.001\n")
    with pytest.raises(HcsimError, match="non-decreasing"):
        arrival_times("replay", 0, 0, path=str(f))
    with pytest.raises(HcsimError, match="unknown"):
        arrival_times("weibull", 1.0, 10)
    with pytest.raises(HcsimError, match="dispatch policy 'fifo'"):
        serve("x.xml", ["a"], np.array([0.0]), linear_time(1, 1), dispatch="fifo")


def test_queue_cli_prints_simulated_and_exact():
    r = run("queue", "--gpu", "v100", "--rho", "0.5", "--jobs", "200000", "--seed", "3")
    assert r.returncode == 0, r.stderr
    assert "simulated E[W]" in r.stdout and "exact E[W]" in r.stdout and "phi" in r.stdout and "eta" in r.stdout


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--gpu", "p4", "--rho", "1.0"], ["unstable", "rho = lambda alpha < 1"]),
        (["--gpu", "v100", "--rate", "6000", "--max-batch", "8"], ["unstable", "M / (alpha M + tau0)"]),
        (["--alpha", "0.001", "--rho", "0.5"], ["--tau0"]),
    ],
)
def test_queue_cli_refuses_unstable_input(args, needles):
    assert_one_line_error(run("queue", *args), *needles)
    assert math.isfinite(capacity(1e-3, 1e-3, 8))


@pytest.mark.parametrize("max_delay", [None, 2e-3])
def test_jsq_controller_equals_the_per_server_path_on_one_server(servers, max_delay):
    path, xpus = servers
    f = FITS["P4"]
    arr = arrival_times("poisson", 0.6 / f.alpha, 30_000, SEED)
    fast = serve(path, xpus[:1], arr, linear_time(f.alpha, f.tau0), max_batch=8, max_delay=max_delay)
    jsq = serve(path, xpus[:1], arr, linear_time(f.alpha, f.tau0), max_batch=8, max_delay=max_delay, dispatch="jsq")
    assert np.array_equal(fast.latency, jsq.latency)  # two code paths, one answer


def test_jsq_serves_every_job_once_and_balances(servers):
    path, xpus = servers
    f = FITS["P4"]
    arr = arrival_times("poisson", 1.2 / f.alpha, 20_000, SEED)
    r = serve(path, xpus, arr, linear_time(f.alpha, f.tau0), dispatch="jsq")
    assert r.batch_size.sum() == len(arr) and np.all(r.latency > 0)
    share = np.bincount(r.server_of_job, minlength=2) / len(arr)
    assert abs(share[0] - 0.5) < 0.05


def test_engine_time_runs_an_inference_graph_per_batch_size(tmp_path):
    from hcsim.frontends.serving.batching import engine_time
    from hcsim.platform import Topology, compile_platform
    from hcsim.workload import Workload

    t = Topology()
    t.add_switch("sw", "generic")
    t.add_xpu("gpu", fp16=2e12, fp32=1e12, memory="80GiB", memory_bandwidth="2TBps")
    t.add_xpu("host", fp16=1e12, fp32=1e12, memory="80GiB", memory_bandwidth="2TBps")
    t.add_link("gpu", "sw", 1e10, 1e-6)
    t.add_link("host", "sw", 1e10, 1e-6)
    path = str(tmp_path / "p.xml")
    compile_platform(t, path)

    def inference(b: int) -> Workload:  # b images: 2e9 flops each, then 4e6 bytes of results each
        w = Workload()
        w.add_compute("infer", 2e9 * b, "gpu", is_start=True)
        w.add_comm("reply", 4e6 * b, "p2p", ["gpu", "host"])
        w.add_dependency("infer", "reply")
        return w

    tau = engine_time(path, inference, 8)
    alpha, tau0 = 2e9 / 1e12 + 4e6 / 1e10, 2e-6  # per image, and the reply's two-hop latency
    assert [tau(b) for b in (1, 4, 8)] == pytest.approx([alpha * b + tau0 for b in (1, 4, 8)], rel=1e-9)
    arr = arrival_times("poisson", 0.5 / alpha, 5_000, SEED)
    by_engine = serve(path, ["gpu"], arr, tau, max_batch=8)
    by_formula = serve(path, ["gpu"], arr, linear_time(alpha, tau0), max_batch=8)
    assert by_engine.latency == pytest.approx(by_formula.latency, rel=1e-9)


def test_outputs_are_written(servers, tmp_path):
    from hcsim.frontends.serving.batching import write_outputs

    path, xpus = servers
    f = FITS["V100"]
    r = serve(path, xpus[:1], arrival_times("poisson", 0.5 / f.alpha, 20_000, SEED), linear_time(f.alpha, f.tau0))
    summary = write_outputs(r, str(tmp_path / "out"), f.beta, f.c0)
    jobs = (tmp_path / "out" / "jobs.csv").read_text().splitlines()
    assert jobs[0] == "job,arrival_s,server,latency_s" and len(jobs) == 20_001
    hist = (tmp_path / "out" / "batch_sizes.csv").read_text().splitlines()[1:]
    assert sum(int(line.split(",")[1]) for line in hist) == len(r.batch_size)
    assert summary["p50_latency_s"] <= summary["p99_latency_s"] and summary["p99_latency_ci95_s"] > 0
    assert (tmp_path / "out" / "batch_sizes.png").read_bytes()[:4] == b"\x89PNG"


def test_jsq_serves_the_jobs_left_waiting_for_their_max_delay(servers):
    # the last jobs rarely fill a batch: with max_delay they wait, then must still be served
    path, xpus = servers
    one = np.array([0.5])
    rr = serve(path, xpus[:1], one, linear_time(0.01, 0.01), max_delay=1.0)
    jsq = serve(path, xpus[:1], one, linear_time(0.01, 0.01), max_delay=1.0, dispatch="jsq")
    assert rr.latency[0] == pytest.approx(1.02, rel=1e-9) and jsq.latency[0] == pytest.approx(1.02, rel=1e-9)
    f = FITS["P4"]
    arr = arrival_times("poisson", 1.2 / f.alpha, 3_000, SEED)
    r = serve(path, xpus, arr, linear_time(f.alpha, f.tau0), max_batch=4, max_delay=0.03, dispatch="jsq")
    assert r.batch_size.sum() == len(arr)


def test_a_one_row_table_is_refused():
    with pytest.raises(HcsimError, match="at least 2 batch sizes"):
        table_time({8: 100.0})
