"""Issue 25, item 2: every input that sizes the work is bounded before anything is allocated (docs/cli.md, Limits).

For each bound: the largest accepted value passes the check, the next one is refused in
one line naming the input, quickly (nothing was built). Hypothesis draws values past the
bounds, up to absurd ones (``cxl_system(10**9)``), to show the check comes first.
"""

from __future__ import annotations

import time

import pytest
from clitools import assert_refused, run_here
from hypothesis import given, settings
from hypothesis import strategies as st

from hcsim.cli import collective, run, serve
from hcsim.errors import HcsimError
from hcsim.platform import builders, dgx

TRAIN = ["run", "--system", "cxl", "--xpus", "8", "--model", "llama2-7b"]
INFER = ["run", "--system", "cxl", "--xpus", "8", "--model", "llama2-7b", "--inference", "--context", "8"]
RUN_FLAGS = [
    ("--microbatches", TRAIN, run.MAX_MICROBATCHES),
    ("--micro-batch", TRAIN, run.MAX_MICRO_BATCH),
    ("--sequence", TRAIN, run.MAX_TOKENS),
    ("--ep", TRAIN, run.MAX_DEGREE),
    ("--context", INFER[:-2], run.MAX_TOKENS),
    ("--batch", INFER, run.MAX_BATCH),
    ("--tp", INFER, run.MAX_DEGREE),
]


@pytest.mark.parametrize("flag,argv,most", RUN_FLAGS, ids=[f[0] for f in RUN_FLAGS])
@settings(max_examples=15, deadline=None)
@given(over=st.one_of(st.integers(1, 10), st.integers(10, 10**18)))
def test_run_sizes_are_bounded_naming_the_flag(flag, argv, most, over):
    for value in (most + over, 1 - over):
        t = time.perf_counter()
        line = assert_refused(run_here(*argv, flag, value), f"{flag} {value} is invalid", f"to {most:,}")
        assert time.perf_counter() - t < 5, line  # refused before anything was built


def test_run_bounds_are_what_the_docs_say():
    text = open("docs/cli.md").read()
    for value in (run.MAX_MICROBATCHES, run.MAX_MICRO_BATCH, run.MAX_TOKENS, run.MAX_BATCH, run.MAX_DEGREE,
                  collective.MAX_SIZES, serve.MAX_TOKENS, builders.MAX_BUILD_XPUS, builders.MAX_FAT_TREE_ARITY,
                  builders.MAX_FABRIC_LINKS, builders.MAX_SPINES, dgx.MAX_GPUS):  # fmt: skip
        assert f"{value:,}" in text or str(value) in text, value


def test_the_largest_microbatch_count_passes_the_check():
    """At the bound the check passes and the run goes on to the next one (here: the layout needs pp)."""
    status, _, err = run_here(*TRAIN, "--microbatches", run.MAX_MICROBATCHES, "--sequence", run.MAX_TOKENS,
                              "--parallel", "tp=16")  # fmt: skip
    assert status == 2 and "--microbatches" not in err and "--sequence" not in err, err


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["serve", "--model", "llama2-7b", "--system", "cxl", "--xpus", "8", "--rho", "0.5", "--max-batch", "2",
          "--context", str(serve.MAX_TOKENS + 1)], "--context"),
        (["serve", "--model", "llama2-7b", "--system", "cxl", "--xpus", "8", "--rho", "0.5", "--max-batch", "2",
          "--context", "8", "--output-tokens", str(serve.MAX_TOKENS + 1)], "--output-tokens"),
        (["serve", "--model", "llama2-7b", "--system", "cxl", "--xpus", "8", "--rho", "0.5", "--max-batch", "2",
          "--context", "8", "--tp", "100000"], "--tp"),
        (["collective", "--system", "cxl", "--xpus", "8", "--sizes", ",".join(str(i) for i in range(1, 66))],
         "--sizes lists 65 sizes"),
    ],
)  # fmt: skip
def test_serve_and_collective_sizes_are_bounded(argv, needle):
    assert_refused(run_here(*argv), needle)


BUILDERS = [
    ("cxl_system", lambda n: builders.cxl_system(n), 4096, "xpus"),
    ("noncoherent_system", lambda n: builders.noncoherent_system(n), 4096, "xpus"),
    ("ring", lambda n: builders.ring(n), builders.MAX_BUILD_XPUS, "ring size"),
    ("star", lambda n: builders.star(n), builders.MAX_BUILD_XPUS, "star size"),
    ("leaf_spine leaves", lambda n: builders.leaf_spine(n, 1, 1), builders.MAX_BUILD_XPUS, "leaf"),
    ("leaf_spine hosts", lambda n: builders.leaf_spine(1, 1, n), builders.MAX_BUILD_XPUS, "hosts per leaf"),
    ("leaf_spine spines", lambda n: builders.leaf_spine(1, n, 1), builders.MAX_SPINES, "spine count"),
    ("fat_tree", lambda n: builders.fat_tree(n), builders.MAX_FAT_TREE_ARITY, "fat-tree arity"),
    ("dgx_system", lambda n: dgx.dgx_system(n), dgx.MAX_GPUS, "GPU count"),
]


@pytest.mark.parametrize("name,build,most,needle", BUILDERS, ids=[b[0] for b in BUILDERS])
@settings(max_examples=20, deadline=None)
@given(over=st.one_of(st.integers(1, 64), st.integers(64, 10**12)))
def test_python_builders_refuse_sizes_past_their_bound_before_allocating(name, build, most, needle, over):
    value = most + (over if name != "fat_tree" else 2 * over)
    t = time.perf_counter()
    with pytest.raises(HcsimError, match=needle):
        build(value)
    assert time.perf_counter() - t < 0.5  # nothing was allocated


def test_cxl_system_past_its_documented_4096_is_refused():
    with pytest.raises(HcsimError, match=r"xpus 4104 is invalid .*at most 4096"):
        builders.cxl_system(4104)
    with pytest.raises(HcsimError, match=r"xpus 1000000000 is invalid"):
        builders.cxl_system(10**9)


def test_leaf_spine_bounds_its_fabric_links():
    with pytest.raises(HcsimError, match="fabric links"):
        builders.leaf_spine(16384, 256, 1)
    with pytest.raises(HcsimError, match=r"= 16,400 XPUs"):
        builders.leaf_spine(1025, 1, 16)


@pytest.mark.slow
def test_builders_at_their_bound_build_in_seconds():
    for build in (
        lambda: builders.star(builders.MAX_BUILD_XPUS),
        lambda: builders.fat_tree(builders.MAX_FAT_TREE_ARITY),
    ):
        t = time.perf_counter()
        topo = build()
        assert len(topo.xpus()) <= builders.MAX_BUILD_XPUS
        assert time.perf_counter() - t < 30


def test_valid_lists_never_show_nonsense():
    """A 'valid:' list computed from the bad value itself (hosts per leaf 0 gave 'valid: 0, 0, ...')."""
    for h in (0, -4):
        line = assert_refused(run_here("platform", "build", "leafspine", "--xpus", "64", "--hosts-per-leaf", h,
                                       "-o", "x.xml"), f"--hosts-per-leaf {h} is invalid")  # fmt: skip
        assert "0, 0" not in line and "-4, -8" not in line
    from hcsim.cli.parsers import SYSTEMS

    for system in SYSTEMS:  # the valid sizes read as one phrase, never "an integer >= 2 from 2"
        line = assert_refused(run_here("platform", "build", system, "--xpus", 0, "-o", "x.xml"), "--xpus 0")
        assert " from 1," not in line and " from 2," not in line and " from 8," not in line, line
    line = assert_refused(run_here("collective", "--system", "star", "--xpus", 1), "has 1 XPU")
    assert "1 XPUs" not in line
    from hcsim.frontends.cluster.cluster import Node, _partition

    nodes = [Node(i, f"n{i}", []) for i in range(4)]
    with pytest.raises(HcsimError) as info:
        _partition(nodes, {"a": 4, "b": 1})
    assert "1..0" not in str(info.value) and "all given" in str(info.value)
    with pytest.raises(HcsimError, match=r"valid: 1\.\.2"):
        _partition(nodes, {"a": 2, "b": 3})
