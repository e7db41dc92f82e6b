"""Sweep specifications: which function, over which parameter points.

A spec (YAML or a dict) names an importable experiment function and its points::

    function: hcsim.sweep.experiments:allreduce   # module:function
    fixed:                                        # the same for every point
      system: cxl
      iterations: 2
    grid:                                         # the cartesian product of these
      xpus: [16, 32, 64]
      nbytes: [1MiB, 64MiB]
    points:                                       # optional extra points, added as given
      - {xpus: 128, nbytes: 1GiB}
    timeout: 600                                  # seconds per point (optional)
    out: results/allreduce.jsonl                  # results file (optional; --out wins)

Every point gets a stable id (a hash of the function and its full parameters), which
is how a re-run knows what is already done.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import itertools
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hcsim.errors import HcsimError
from hcsim.files import load_yaml

__all__ = ["MAX_NODES", "MAX_POINTS", "MAX_TIMEOUT", "SweepSpec", "Point", "load_spec", "resolve_function"]

MAX_POINTS = 100_000
"""Most points one spec may expand to (grid product plus explicit points): each is a process and a results row."""
MAX_NODES = 100_000
"""Most values a spec may hold once YAML aliases are expanded: bounds anchor bombs ("billion laughs")."""
MAX_TIMEOUT = 1e7
"""Longest ``timeout`` per point, in seconds (about 116 days; far beyond it the OS timers overflow)."""


@dataclass(frozen=True)
class Point:
    """One run of the experiment function."""

    id: str
    params: dict[str, Any]


@dataclass
class SweepSpec:
    """A sweep: an importable ``function``, a ``grid`` (every combination), ``fixed`` parameters, extra ``points``."""

    function: str
    grid: dict[str, list[Any]] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)
    points: list[dict[str, Any]] = field(default_factory=list)
    timeout: float | None = None
    out: str | None = None

    @classmethod
    def from_dict(cls, data: Any, source: str = "spec") -> SweepSpec:
        if not isinstance(data, dict):
            raise HcsimError(f"{source}: a sweep spec is a mapping with 'function' and 'grid' or 'points'")
        unknown = set(data) - {"function", "grid", "fixed", "points", "timeout", "out"}
        if unknown:
            raise HcsimError(
                f"{source}: unknown key '{sorted(unknown)[0]}' (valid: function, grid, fixed, points, timeout, out)"
            )
        if not isinstance(data.get("function"), str):
            raise HcsimError(f"{source}: 'function' is required (valid: 'module:function')")
        _split_reference(data["function"])
        grid, fixed, points = data.get("grid") or {}, data.get("fixed") or {}, data.get("points") or []
        if not isinstance(grid, dict) or not isinstance(fixed, dict) or not isinstance(points, list):
            raise HcsimError(f"{source}: 'grid' and 'fixed' must be mappings and 'points' a list of mappings")
        for name, values in grid.items():
            if not isinstance(values, list) or not values:
                raise HcsimError(f"{source}: grid parameter '{name}' has no values (valid: a non-empty list)")
        if not all(isinstance(p, dict) for p in points):
            raise HcsimError(f"{source}: every entry of 'points' must be a mapping of parameters")
        count = math.prod(len(values) for values in grid.values()) if grid else 0
        if count + len(points) > MAX_POINTS:
            raise HcsimError(
                f"{source}: the grid and points make {count + len(points):,} points "
                f"(valid: at most {MAX_POINTS:,}; split the sweep into several specs)"
            )
        timeout = data.get("timeout")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT
        ):
            raise HcsimError(
                f"{source}: timeout {timeout!r} is invalid (valid: seconds > 0, at most {MAX_TIMEOUT:.0e})"
            )
        out = data.get("out")
        if out is not None and (not isinstance(out, str) or not out.strip()):
            raise HcsimError(f"{source}: out {out!r} is invalid (valid: a file path, e.g. results/sweep.jsonl)")
        return cls(data["function"], dict(grid), dict(fixed), list(points), timeout, out)

    def expand(self) -> list[Point]:
        """Every point: fixed parameters, then the grid product, then the explicit points."""
        combos: list[dict[str, Any]] = []
        if self.grid:
            names = list(self.grid)
            combos = [dict(zip(names, values, strict=True)) for values in itertools.product(*self.grid.values())]
        combos += [dict(p) for p in self.points]
        if not combos and self.fixed:
            combos = [{}]
        if not combos:
            raise HcsimError("the sweep has no points (give a non-empty 'grid' or 'points')")
        out, seen = [], set()
        for combo in combos:
            params = {**self.fixed, **combo}
            pid = point_id(self.function, params)
            if pid not in seen:
                seen.add(pid)
                out.append(Point(pid, params))
        return out

    def check_parameters(self) -> None:
        """Every parameter must be accepted by the function (unless it takes **kwargs)."""
        fn = resolve_function(self.function)
        sig = inspect.signature(fn)
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
            return
        valid = [n for n, p in sig.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        names = set(self.fixed) | set(self.grid) | {k for p in self.points for k in p}
        for name in sorted(names):
            if name not in valid:
                raise HcsimError(f"parameter '{name}' is not accepted by {self.function} (valid: {', '.join(valid)})")


def point_id(function: str, params: dict[str, Any]) -> str:
    blob = json.dumps({"function": function, "params": params}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _split_reference(ref: str) -> tuple[str, str]:
    """``module:function`` split in two; one line naming ``ref`` unless it has that form with an absolute module."""
    module, _, name = ref.partition(":")
    valid = "(valid: 'module:function' with an absolute module path, e.g. hcsim.sweep.experiments:allreduce)"
    if not module.strip() or not name.strip():
        raise HcsimError(f"function {ref!r} is invalid {valid}")
    if module.startswith("."):
        raise HcsimError(f"function {ref!r} names a relative module, which has no package to start from {valid}")
    return module, name


def resolve_function(ref: str) -> Callable[..., Any]:
    """The function named ``module:function``."""
    module, name = _split_reference(ref)
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise HcsimError(f"function {ref!r} cannot be imported: {exc}") from None
    except Exception as exc:  # the module itself fails on import: its error, in one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise HcsimError(f"function {ref!r}: importing '{module}' failed: {type(exc).__name__}: {first}") from None
    if not callable(fn):
        raise HcsimError(f"{ref!r} is not a function")
    return fn


_SHALLOW = "a few levels of mappings and lists"


def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Read a YAML (or JSON) sweep spec: UTF-8 text, of bounded size once aliases are expanded."""
    import yaml

    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise HcsimError(f"sweep spec '{path}' does not exist") from None
    except IsADirectoryError:
        raise HcsimError(f"sweep spec '{path}' is a directory (valid: a YAML file)") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise HcsimError(f"sweep spec '{path}' line {line}: not UTF-8 text (valid: a UTF-8 YAML file)") from None
    try:
        data = load_yaml(text, f"sweep spec '{path}'", max_values=MAX_NODES, noun="the spec")  # aliases expanded
    except yaml.YAMLError as exc:
        raise HcsimError(f"sweep spec '{path}' is not valid YAML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise HcsimError(f"sweep spec '{path}' is nested too deeply (valid: {_SHALLOW})") from None
    return SweepSpec.from_dict(data, source=str(path))
