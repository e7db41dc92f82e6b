"""Placing a trace's ranks on a platform's XPUs: the rank map Chakra traces and AICB files share.

Holds :func:`load_rank_map` (``--rank-map``: rank i on ``xpus[i]`` by default, else a JSON
file ``{"0": "xpu3", ...}``, a mapping or a list) and :func:`read_json_file` (the small
JSON side files: rank maps, communicator groups).

Invariant: a rank map gives every rank 0..N-1 exactly one XPU of the platform, no XPU
twice; anything else is a one-line :class:`~hcsim.errors.HcsimError` naming the file.
See docs/formats.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from hcsim.errors import HcsimError

__all__ = ["RankMap", "load_rank_map", "read_json_file"]

RankMap = str | os.PathLike[str] | Mapping[int, str] | Sequence[str]
"""A rank map: a JSON file, a mapping {rank: XPU} or a list of XPU names in rank order."""


def read_json_file(path: str | os.PathLike[str], where: str) -> Any:
    """A small JSON side file (rank map, communicator groups); one-line errors naming ``where``."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise HcsimError(f"{where} does not exist") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise HcsimError(f"{where} is not valid JSON: {exc}") from None


def load_rank_map(rank_map: RankMap | None, n: int, xpus: Sequence[str]) -> list[str]:
    """XPU of each of ``n`` ranks: ``xpus`` in order, or a mapping (JSON file ``{"0": "xpu3", ...}`` or a list)."""
    if rank_map is None:
        if len(xpus) < n:
            raise HcsimError(f"the Chakra trace has {n} ranks but the platform has {len(xpus)} XPUs (valid: >= {n})")
        return list(xpus[:n])
    where = "rank map"
    data: Any = rank_map
    if isinstance(rank_map, (str, os.PathLike)):
        where = f"rank map '{os.fspath(rank_map)}'"
        data = read_json_file(rank_map, where)
    if isinstance(data, Mapping):
        try:
            table = {int(k): v for k, v in data.items()}
        except (TypeError, ValueError):
            raise HcsimError(f"{where}: keys must be ranks 0..{n - 1}") from None
    elif isinstance(data, Sequence) and not isinstance(data, str):
        table = dict(enumerate(data))
    else:
        raise HcsimError(f"{where} must be a JSON object {{rank: XPU}} or a list of XPU names")
    known = set(xpus)
    out = []
    for r in range(n):
        x = table.get(r)
        if not isinstance(x, str):
            raise HcsimError(f"{where}: rank {r} has no XPU (valid: an XPU name for every rank 0..{n - 1})")
        if known and x not in known:
            raise HcsimError(f"{where}: rank {r} maps to '{x}', which is not an XPU of the platform")
        out.append(x)
    if len(set(out)) != n:
        raise HcsimError(f"{where}: two ranks map to the same XPU (valid: one XPU per rank)")
    return out
