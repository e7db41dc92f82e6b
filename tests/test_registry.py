"""The registry helper: explicit defaults, registration order, the one-line unknown error.

And the registries built on it keep their messages (the CLI's bad-input tests check them
end to end: tests/cli/bad_inputs/).
"""

from __future__ import annotations

import pytest

from hcsim.errors import HcsimError
from hcsim.registry import Registry


def test_the_default_is_explicit_and_listed_first():
    r = Registry("colour")
    r.register("red", 1)
    assert r.default is None and r.names() == ("red",)
    r.register("green", 2, default=True)
    r.register("blue", 3)
    assert r.default == "green"
    assert r.names() == ("green", "red", "blue")
    assert list(r) == ["red", "green", "blue"]  # the mapping keeps registration order
    r.register("red", 4, default=True)  # replacing keeps the place; the last default wins
    assert r["red"] == 4 and r.names() == ("red", "green", "blue")


def test_lookup_and_the_one_line_error():
    r = Registry("placement", {"first-fit": 1, "best-fit": 2})
    assert r.lookup("best-fit") == 2 and r.get("nope") is None and "first-fit" in r and len(r) == 2
    with pytest.raises(HcsimError) as e:
        r.lookup("worst-fit")
    assert str(e.value) == "placement 'worst-fit' is unknown (valid: first-fit, best-fit)"
    framed = Registry("algorithm", {"ring": 1, "tree": 2}, scope="for allreduce", valid="{}, or a file", sort=True)
    assert str(framed.unknown("x")) == "algorithm 'x' is unknown for allreduce (valid: ring, tree, or a file)"
    shown = Registry("format", {"b": 1, "a": 2}, sort=True, show=lambda v: f"<{v}>")
    assert str(shown.unknown(7)) == "format <7> is unknown (valid: a, b)"
    with pytest.raises(KeyError):
        r["worst-fit"]  # the mapping protocol stays a mapping's


def test_the_registries_keep_their_messages():
    from hcsim.collectives import algorithm, names
    from hcsim.frontends.cluster.policies import policy
    from hcsim.frontends.queue_selection.rules import parse_method
    from hcsim.platform.devices import device
    from hcsim.workload.models import load_model
    from hcsim.workload.parallel.schedules import schedule

    assert [names(k)[0] for k in ("allreduce", "broadcast", "alltoall", "p2p")] == ["ring", "chain", "direct", "direct"]
    cases = [
        (
            lambda: device("H200"),
            "XPU preset 'H200' is unknown (valid: H100, A100, V100, H100-SXM, A100-SXM; or build a Device)",
        ),
        (lambda: schedule("zb"), "pipeline schedule 'zb' is unknown (valid: 1f1b, gpipe)"),
        (lambda: parse_method("best"), "method 'best' is unknown (valid: random, mql, maql, offset)"),
        (lambda: policy("lifo"), "policy 'lifo' is unknown (valid: easy, fcfs, las, las-mlfq, mlfq, rr, sjf)"),
        (lambda: load_model("gpt5"), "model 'gpt5' is unknown (valid: a config.json file or one of llama2-7b, "),
        (lambda: algorithm("reduce", "ring"), "algorithm 'ring' is unknown for reduce (valid: chain, binary_tree, a "),
    ]
    for call, message in cases:
        with pytest.raises(HcsimError) as e:
            call()
        assert str(e.value).startswith(message), str(e.value)
