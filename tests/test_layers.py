"""The layers hold: every import of hcsim, function-local ones included, against hcsim/layers.py.

* no import runs up the layers (a module imports its own layer or lower ones);
* no import circle between modules;
* every module on disk is in the layer list, and the list names no module that is gone;
* no module is over 600 lines (the generated protobuf module aside);
* docs/architecture.md and docs/api.md are what ``python scripts/gen_docs.py`` makes.

Imports are read from the source (``ast``): ``import a.b``, ``from a import b`` (an edge
to ``a`` and, if it is a module, to ``a.b``: Python runs both), relative imports, imports
under ``TYPE_CHECKING`` and ``importlib.import_module("literal")``.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

from hcsim.layers import LAYERS, modules

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 600
GENERATED = {"hcsim.formats.chakra.et_def_pb2"}  # protoc output, not edited

# Known violations, each being removed by another helper of issue 23 at the same time.
# The lead deletes what has been fixed at merge (test_known_exceptions_still_occur says
# which); nothing may be added here.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}
KNOWN_CIRCLES = {}
KNOWN_LONG: dict[str, str] = {}


@dataclass(frozen=True)
class Import:
    """``importer`` imports ``module`` at ``path:line``."""

    importer: str
    module: str
    path: str
    line: int


def find_modules(root: Path, package: str = "hcsim") -> dict[str, Path]:
    """Dotted name -> file of every module of ``package`` under ``root`` (a package's is its ``__init__``)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported_names(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".")
            base = base[: len(base) - node.level + (1 if is_package else 0)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        return [source] + [f"{source}.{alias.name}" for alias in node.names]
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "import_module" and isinstance(node.args[0].value, str):
            return [node.args[0].value]
    return []


def find_imports(root: Path, package: str = "hcsim") -> list[Import]:
    """Every import of one module of ``package`` by another (function-local ones too)."""
    mods = find_modules(root, package)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    out = set()
    for module, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            for name in _imported_names(node, module, path.name == "__init__.py"):
                if name == package or name.startswith(package + "."):
                    target = resolve(name)
                    if target is not None and target != module:
                        out.add(Import(module, target, str(path.relative_to(root)), node.lineno))
    return sorted(out, key=lambda i: (i.importer, i.module, i.line))


def upward_imports(imports: list[Import], layer: dict[str, int]) -> list[Import]:
    """The imports of a module of a higher layer than the importer's (unlisted modules aside)."""
    return [i for i in imports if i.importer in layer and i.module in layer and layer[i.module] > layer[i.importer]]


def import_circles(imports: list[Import]) -> list[set[str]]:
    """Sets of modules that import each other, directly or through others."""
    graph = nx.DiGraph((i.importer, i.module) for i in imports)
    return sorted((c for c in nx.strongly_connected_components(graph) if len(c) > 1), key=sorted)


def _layer_names() -> dict[str, str]:
    return {name: LAYERS[index].name for name, (index, _) in modules().items()}


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return find_imports(ROOT)


def test_every_module_is_in_the_layer_list():
    on_disk, listed = set(find_modules(ROOT)), set(modules())
    assert not on_disk - listed, f"add to hcsim/layers.py (layer, what it holds): {sorted(on_disk - listed)}"
    assert not listed - on_disk, f"hcsim/layers.py lists modules that are gone: {sorted(listed - on_disk)}"
    names = [name for layer in LAYERS for name, _ in layer.modules]
    assert len(names) == len(set(names)), "a module is listed twice in hcsim/layers.py"
    assert all(holds.strip() for layer in LAYERS for _, holds in layer.modules)


def test_no_import_runs_up_the_layers(imports):
    layer = {name: index for name, (index, _) in modules().items()}
    names = _layer_names()
    bad = [i for i in upward_imports(imports, layer) if (i.importer, i.module) not in KNOWN_UPWARD]
    assert not bad, "imports that run up the layers:\n" + "\n".join(
        f"  {i.path}:{i.line}: {i.importer} ({names[i.importer]}) imports {i.module} ({names[i.module]})" for i in bad
    )


def test_no_import_circle(imports):
    bad = [c for c in import_circles(imports) if frozenset(c) not in KNOWN_CIRCLES]
    where = {(i.importer, i.module): f"{i.path}:{i.line}" for i in imports}
    graph = nx.DiGraph(list(where))
    loops = [nx.find_cycle(graph.subgraph(c)) for c in bad]
    assert not bad, "import circles (one loop of each):\n" + "\n".join(
        "  " + ", ".join(f"{where[e]} {e[0]} -> {e[1]}" for e in loop) for loop in loops
    )


def test_no_module_over_600_lines():
    long = {
        name: n
        for name, path in find_modules(ROOT).items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES and name not in GENERATED
    }
    bad = {name: n for name, n in long.items() if name not in KNOWN_LONG}
    assert not bad, f"modules over {MAX_LINES} lines (split them): {bad}"


def test_known_exceptions_still_occur(imports):
    """The allow-lists shrink as the other helpers' fixes land: a fixed entry must go."""
    edges = {(i.importer, i.module) for i in imports}
    circles = {frozenset(c) for c in import_circles(imports)}
    mods = find_modules(ROOT)
    long = {n for n, p in mods.items() if len(p.read_text(encoding="utf-8").splitlines()) > MAX_LINES}
    stale = [f"KNOWN_UPWARD {e} ({who})" for e, who in KNOWN_UPWARD.items() if e not in edges]
    stale += [f"KNOWN_CIRCLES {sorted(c)} ({who})" for c, who in KNOWN_CIRCLES.items() if c not in circles]
    stale += [f"KNOWN_LONG {m} ({who})" for m, who in KNOWN_LONG.items() if m not in long]
    assert not stale, "fixed: delete from tests/test_layers.py:\n  " + "\n  ".join(stale)


def test_import_hcsim_stays_cheap_and_every_public_name_resolves():
    code = "import sys, hcsim; print(sorted(m for m in sys.modules if m.startswith('hcsim')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["['hcsim',", "'hcsim.errors']"]
    import hcsim

    assert all(getattr(hcsim, name) is not None for name in hcsim.__all__)


# ------------------------------------------------------------------ the checks can fail
def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_checks_find_an_upward_import_and_a_circle(tmp_path):
    root = _package(
        tmp_path,
        {
            "hcsim/__init__.py": "",
            "hcsim/low/__init__.py": "from hcsim.low import a\n",
            "hcsim/low/a.py": "def f():\n    from ..high import b  # function-local, relative\n",
            "hcsim/low/c.py": "import importlib\nimportlib.import_module('hcsim.low.d')\n",
            "hcsim/low/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hcsim.low.c import x\n",
            "hcsim/high/__init__.py": "",
            "hcsim/high/b.py": "import hcsim.low.a\n",
        },
    )
    imports = find_imports(root)
    assert {(i.importer, i.module) for i in imports} == {
        ("hcsim.low", "hcsim.low.a"),
        ("hcsim.low.a", "hcsim.high"),
        ("hcsim.low.a", "hcsim.high.b"),
        ("hcsim.low.c", "hcsim.low.d"),
        ("hcsim.low.d", "hcsim.low.c"),
        ("hcsim.high.b", "hcsim.low.a"),
    }
    layer = {"hcsim": 2, "hcsim.low": 0, "hcsim.low.a": 0, "hcsim.low.c": 0, "hcsim.low.d": 0}
    layer |= {"hcsim.high": 1, "hcsim.high.b": 1}
    up = upward_imports(imports, layer)
    assert [(i.importer, i.module, i.path, i.line) for i in up] == [
        ("hcsim.low.a", "hcsim.high", str(Path("hcsim/low/a.py")), 2),
        ("hcsim.low.a", "hcsim.high.b", str(Path("hcsim/low/a.py")), 2),
    ]
    assert import_circles(imports) == [{"hcsim.high.b", "hcsim.low.a"}, {"hcsim.low.c", "hcsim.low.d"}]


# ------------------------------------------------------------------ generated pages
def _generator():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_docs", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", ["architecture.md", "api.md"])
def test_generated_pages_are_up_to_date(page):
    made = _generator().pages()[page]
    assert (ROOT / "docs" / page).read_text(encoding="utf-8") == made, (
        f"docs/{page} is out of date: run python scripts/gen_docs.py"
    )
