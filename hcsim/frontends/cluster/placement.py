"""Where a job's GPUs go: first-fit, best-fit and free-GPU (AnalySIM Sec. 3.1).

A request is a *shape*: how many GPUs on each of its nodes, e.g. ``[8, 8]`` for
``--nodes 2 --gpus-per-node 8`` (:func:`shape_of` derives it). A placement maps the
shape onto nodes with enough free GPUs and returns ``[(node, count), ...]``, or
``None`` when the request does not fit now.

* **first-fit**: each demand (largest first) takes the first node, in node order, with
  enough free GPUs;
* **best-fit**: each demand takes the node whose free GPUs exceed it the least (the
  smallest sufficient one; ties to the lower node), keeping big holes for big jobs;
* **free-GPU**: the shape is ignored; the total is taken from idle GPUs anywhere, on
  the fewest nodes (nodes with the most free GPUs first), which needs the framework to
  accept an uneven layout, as the paper notes.

A placement is a function ``(shape, nodes, free) -> list[(node, count)] | None`` where
``nodes`` are the candidate node indices (the job's partition) and ``free[i]`` is the
number of free GPUs of node i; adding one is writing such a function and registering
it in :data:`PLACEMENTS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hcsim.registry import Registry

__all__ = ["PLACEMENTS", "Placement", "best_fit", "first_fit", "free_gpu", "placement", "shape_of"]

Placement = Callable[[Sequence[int], Sequence[int], Sequence[int]], list[tuple[int, int]] | None]


def shape_of(gpus: int, nodes: int | None, gpus_per_node: int | None, node_size: int) -> list[int]:
    """GPUs per node a request needs: its rigid shape, else whole nodes plus a remainder."""
    if nodes and gpus_per_node:
        return [gpus_per_node] * nodes
    full, rest = divmod(gpus, node_size)
    return [node_size] * full + ([rest] if rest else [])


def first_fit(shape: Sequence[int], nodes: Sequence[int], free: Sequence[int]) -> list[tuple[int, int]] | None:
    used: set[int] = set()
    out = []
    for need in sorted(shape, reverse=True):
        for n in nodes:
            if n not in used and free[n] >= need:
                used.add(n)
                out.append((n, need))
                break
        else:
            return None
    return out


def best_fit(shape: Sequence[int], nodes: Sequence[int], free: Sequence[int]) -> list[tuple[int, int]] | None:
    used: set[int] = set()
    out = []
    for need in sorted(shape, reverse=True):
        best, best_free = -1, 1 << 30
        for n in nodes:
            f = free[n]
            if need <= f < best_free and n not in used:
                best, best_free = n, f
                if f == need:
                    break
        if best < 0:
            return None
        used.add(best)
        out.append((best, need))
    return out


def free_gpu(shape: Sequence[int], nodes: Sequence[int], free: Sequence[int]) -> list[tuple[int, int]] | None:
    total = sum(shape)
    if sum(free[n] for n in nodes) < total:
        return None
    out = []
    for n in sorted(nodes, key=lambda n: (-free[n], n)):
        if total <= 0 or free[n] == 0:
            break
        take = min(free[n], total)
        out.append((n, take))
        total -= take
    return out


PLACEMENTS: Registry[Placement] = Registry(
    "placement", {"first-fit": first_fit, "best-fit": best_fit, "free-gpu": free_gpu}
)


def placement(name: str) -> Placement:
    """The placement registered under ``name`` (underscores and case are forgiven)."""
    key = name.lower().replace("_", "-")
    if key not in PLACEMENTS:
        raise PLACEMENTS.unknown(name)
    return PLACEMENTS[key]
