"""The documentation works: the README's Python runs, and every relative link resolves.

* every ```python block of README.md runs in a fresh interpreter (the current one), and
  a block followed by "It prints `...`" prints that;
* every relative link and image in README.md and docs/**/*.md points to an existing
  file, and every #anchor to a heading of that file (GitHub's slugs);
* the README stays short (at most 200 lines): the detail lives in docs/.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]

_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
_PYTHON = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$\n*(It prints `([^`]*)`)?", re.M | re.S)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _python_blocks() -> list[tuple[str, str | None]]:
    return [(m.group(1), m.group(3)) for m in _PYTHON.finditer(README.read_text(encoding="utf-8"))]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = _CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(text):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _links(page: Path) -> list[str]:
    text = _CODE_SPAN.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    return [t for t in _LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]


def test_the_readme_has_python_examples():
    assert _python_blocks(), "README.md has no ```python block"


@pytest.mark.parametrize("index", range(len(_python_blocks())))
def test_readme_python_block_runs(index, tmp_path):
    code, expected = _python_blocks()[index]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"README python block {index} failed:\n{code}\n--- stderr ---\n{proc.stderr[-4000:]}"
    if expected is not None:
        assert expected in proc.stdout, (expected, proc.stdout)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_every_docs_page_is_one_hop_from_the_readme():
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in _links(README)}
    pages = {p.resolve() for p in PAGES[1:]}
    assert not pages - linked, sorted(str(p.relative_to(ROOT)) for p in pages - linked)


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 200, f"README.md has {lines} lines; move detail into docs/"
