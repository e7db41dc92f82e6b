"""Broken collective plug-ins: every failure is one line naming the plug-in; built-in names are guarded.

A plug-in is a user's module: it can fail at import (a SyntaxError, a raise, ``sys.exit``),
when called (any exception, RecursionError, SystemExit), by its signature, or by what it
returns. Each must end as one :class:`HcsimError` (CLI: exit 2, one line) naming the
plug-in and what went wrong; Ctrl-C stays Ctrl-C.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from clitools import CLI, assert_one_line_error

from hcsim.collectives import Schedule, build_plan, build_schedule, register
from hcsim.collectives.registry import algorithm, check_coherent, plugin_guard
from hcsim.collectives.table import TABLE
from hcsim.errors import HcsimError

ROOT = Path(__file__).parents[2]
RANKS = ["a", "b", "c", "d"]

PLUGINS = {
    "calls": """
        import sys

        def recurse(ranks, nbytes, view):
            return recurse(ranks, nbytes, view)

        def leave(ranks, nbytes, view):
            sys.exit(3)

        def divide(ranks, nbytes, view):
            return 1 / 0

        def narrow(ranks):
            return None

        def garbage(ranks, nbytes, view):
            return {"flows": 42}

        def wrong_kind(ranks, nbytes, view):
            return __import__("hcsim.collectives", fromlist=["Schedule"]).Schedule("allgather", ranks)

        def bad_flows(ranks, nbytes, view):
            s = __import__("hcsim.collectives", fromlist=["Schedule"]).Schedule("allreduce", ranks)
            s.flows.append("not a flow")
            return s

        def interrupt(ranks, nbytes, view):
            raise KeyboardInterrupt

        def bad_plan(ranks, nbytes, view):
            Schedule = __import__("hcsim.collectives", fromlist=["Schedule"]).Schedule

            class Broken(Schedule):
                def to_plan(self):
                    raise ValueError("no plan today")

            s = Broken("allreduce", ranks)
            s.add(ranks[0], ranks[1], nbytes)
            return s

        not_a_function = 5
    """,
    "broken_syntax": "def f(:\n    pass\n",
    "raises_on_import": "raise RuntimeError('no GPU here')\n",
    "exits_on_import": "import sys\nsys.exit(4)\n",
}


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The plug-in modules above, importable (a fresh name per test: no module cache across tests)."""
    tag = tmp_path.name.replace("-", "_").replace("[", "_").replace("]", "_")
    for name, text in PLUGINS.items():
        (tmp_path / f"{name}_{tag}.py").write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("hcsim.collectives.registry._CHECKED", set())
    return tmp_path


def _name(plugins: Path, module: str, fn: str) -> str:
    return f"{module}_{plugins.name.replace('-', '_').replace('[', '_').replace(']', '_')}:{fn}"


@pytest.mark.parametrize(
    "module, fn, needle",
    [
        ("calls", "recurse", "failed when called: RecursionError"),
        ("calls", "leave", "failed when called: SystemExit: exit status 3"),
        ("calls", "divide", "failed when called: ZeroDivisionError: division by zero"),
        ("calls", "narrow", "takes (ranks) (valid: fn(ranks, nbytes, view) -> Schedule)"),
        ("calls", "garbage", "returned dict (valid: a Schedule)"),
        ("calls", "wrong_kind", "made a 'allgather' schedule where a allreduce was asked for"),
        ("calls", "bad_flows", "in the schedule it returned: "),
        ("calls", "not_a_function", "is not a function (valid: fn(ranks, nbytes, view) -> Schedule)"),
        ("calls", "missing", "has no 'missing'"),
        ("broken_syntax", "f", "cannot be imported: SyntaxError: "),
        ("raises_on_import", "f", "cannot be imported: RuntimeError: no GPU here"),
        ("exits_on_import", "f", "cannot be imported: SystemExit: exit status 4"),
        ("no_such_module", "f", "cannot be imported: ModuleNotFoundError"),
    ],
)
def test_a_broken_plugin_is_one_line_naming_it(plugins: Path, module: str, fn: str, needle: str) -> None:
    name = _name(plugins, module, fn)
    with pytest.raises(HcsimError) as e:
        build_schedule("allreduce", name, RANKS, 1e6)
    text = str(e.value)
    assert "\n" not in text and len(text) < 500
    assert f"plug-in {name!r} (allreduce)" in text, text
    assert needle in text, text


def test_a_schedule_that_cannot_become_a_plan_is_one_line(plugins: Path) -> None:
    name = _name(plugins, "calls", "bad_plan")
    with pytest.raises(HcsimError, match=r"failed in the schedule it returned: ValueError: no plan today") as e:
        build_plan("allreduce", name, RANKS, 1e6)
    assert f"plug-in {name!r} (allreduce)" in str(e.value)


def test_a_syntax_error_names_file_and_line(plugins: Path) -> None:
    with pytest.raises(HcsimError, match=r"SyntaxError: .*\(broken_syntax_\w+\.py, line 1\)"):
        algorithm("allreduce", _name(plugins, "broken_syntax", "f"))


def test_ctrl_c_stays_ctrl_c() -> None:
    """In this (main) process a KeyboardInterrupt is the user's: it goes on, never an error line."""

    def interrupt() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), plugin_guard("collective plug-in 'x' (allreduce)", "failed when called"):
        interrupt()


def test_ctrl_c_inside_a_simulation_process_is_the_plugins_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A simulation process ignores SIGINT (its parent handles Ctrl-C): a KeyboardInterrupt there is raised
    by the plug-in itself, and is reported as its failure."""
    monkeypatch.setattr("hcsim.simgrid_runtime._IGNORE_INTERRUPTS", True)
    with pytest.raises(HcsimError, match="failed when called: it raised KeyboardInterrupt"):
        with plugin_guard("collective plug-in 'x' (allreduce)", "failed when called"):
            raise KeyboardInterrupt


def test_register_refuses_a_builtin_name_unless_replace() -> None:
    def ring(ranks: list[str], nbytes: float, view: object) -> Schedule:
        """Everyone sends everything to the next rank (not hcsim's ring)."""
        s = Schedule("allgather", ranks)
        for a, b in zip(ranks, ranks[1:] + ranks[:1], strict=True):
            s.add(a, b, nbytes)
        return s

    before = TABLE["allgather"]["ring"]
    with pytest.raises(HcsimError, match=r"'ring' \(allgather\) is one of hcsim's own .*replace=True"):
        register("allgather", "ring")(ring)
    with pytest.raises(HcsimError, match=r"'ring' \(allgather\) is one of hcsim's own"):
        register("allgather")(ring)  # the function's own name
    assert TABLE["allgather"]["ring"] is before
    try:
        register("allgather", "ring", replace=True)(ring)
        assert TABLE["allgather"]["ring"].build is ring
    finally:
        TABLE["allgather"].register("ring", before, default=True)
    # a plug-in's own name may be registered again (a module imported twice)
    register("allgather", "plugin_twice_test")(ring)
    register("allgather", "plugin_twice_test")(ring)


@pytest.mark.parametrize(
    ("kind", "function"),
    [("allreduce", "ring_allreduce"), ("reduce_scatter", "ring_reduce_scatter"), ("allgather", "ring_allgather")],
)
def test_a_library_function_named_as_a_plugin_is_the_library_algorithm(kind: str, function: str) -> None:
    """``module:function`` naming one of hcsim's own functions is that algorithm (its plan, its fast path),
    whatever its Python name (the ring allreduce's is ``ring_allreduce``: ``hcsim.ring`` is the topology)."""
    found = algorithm(kind, f"hcsim.collectives.algorithms.ring:{function}")
    assert found is algorithm(kind, "ring") and found.ring and found.plan is not None


def test_register_refuses_a_wrong_signature() -> None:
    def two(ranks: list[str], nbytes: float) -> None: ...

    with pytest.raises(HcsimError, match=r"'two_args' \(allreduce\) takes \(ranks: 'list\[str\]', nbytes: 'float'\)"):
        register("allreduce", "two_args")(two)
    assert "two_args" not in TABLE["allreduce"]


@pytest.mark.parametrize("name", ["coherent_ring", "cxl_shared_memory"])
def test_a_coherent_algorithm_needs_coherent_memory(name: str) -> None:
    vertices = [("c0", {"type": "compute"}), ("ar", {"type": "comm", "kind": "allreduce", "algorithm": name})]
    check_coherent(vertices, True)  # coherent memory: fine
    with pytest.raises(HcsimError, match=rf"vertex 'ar': algorithm '{name}' relies on coherent memory"):
        check_coherent(vertices, False)
    check_coherent([("ar", {"type": "comm", "kind": "allreduce", "algorithm": "ring"})], False)


def _cli(plugins: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(plugins)])}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=plugins, env=env, timeout=600)


@pytest.mark.parametrize(
    "module, fn, needle",
    [
        ("calls", "recurse", "failed when called: RecursionError"),
        ("calls", "interrupt", "failed when called: it raised KeyboardInterrupt"),
        ("broken_syntax", "f", "cannot be imported: SyntaxError"),
        ("exits_on_import", "f", "cannot be imported: SystemExit"),
    ],
)
def test_cli_broken_plugin_exit_2_one_line(plugins: Path, module: str, fn: str, needle: str) -> None:
    name = _name(plugins, module, fn)
    ranks = ", ".join(f'"r00s00.xpu{i}"' for i in range(4))
    (plugins / "w.json").write_text(
        '{"directed": true, "multigraph": false, "graph": {}, "edges": [], "nodes": [{"id": "ar", "type": "comm", '
        f'"kind": "allreduce", "bytes": 64e6, "is_start": true, "scope": [{ranks}], "algorithm": "{name}"}}]}}'
    )
    r = _cli(plugins, "run", "--system", "cxl", "--xpus", "8", "--workload", "w.json", "--iterations", "1")
    assert_one_line_error(r, f"plug-in {name!r}", needle)


def test_cli_coherent_algorithm_on_a_noncoherent_system(tmp_path: Path) -> None:
    r = _cli(tmp_path, "run", "--system", "noncoherent", "--xpus", "8", "--workload", "coherent-allreduce",
             "--iterations", "1")  # fmt: skip
    assert_one_line_error(r, "'coherent_ring' relies on coherent memory", "--system cxl")
