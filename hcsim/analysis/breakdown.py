"""Where a rank's training iteration goes, by parallelism, read from the run's trace.

For one XPU and one iteration: the time it computes, the time each kind of
communication it takes part in (``tp``, ``pp``, ``ep``, ``dp``; ``edp``, the expert
gradients, counts as ``dp``) is *exposed* (not hidden behind its compute), and the time
it is idle (the pipeline bubble and waits on other ranks). Exposed times of different
kinds may overlap each other, so they need not add up to the iteration with the rest.
Comm vertices carry ``phase`` and ``scope`` in the graph
(:mod:`hcsim.workload.parallel.builder`); the trace gives their start and end. Also
:func:`remote_operators`, what the run placed on remote memory.
"""

from __future__ import annotations

from typing import Any

from hcsim.engine.report import minus_length, union_length

__all__ = ["PHASES", "rank_breakdown", "breakdown", "remote_operators"]

PHASES = ("tp", "pp", "ep", "dp")


def rank_breakdown(result: Any, graph: Any, xpu: str, iteration: int = 0) -> dict[str, float]:
    """Seconds of ``xpu``'s ``iteration``: compute, exposed communication by kind, idle."""
    return _breakdowns(result, graph, [xpu], iteration)[0]


def breakdown(result: Any, graph: Any, xpus: list[str], iteration: int = 0) -> dict[str, float]:
    """The mean of :func:`rank_breakdown` over ``xpus`` (e.g. the first rank of every stage)."""
    rows = _breakdowns(result, graph, xpus, iteration)
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}


def remote_operators(result: Any, graph: Any, weights: dict[str, int] | None = None) -> int:
    """Operators the run placed on remote memory; one on XPU x counts ``weights[x]`` (default 1),
    e.g. the replicas a folded run's kept XPU stands for."""
    weights = weights or {}
    nodes = graph.nodes
    return sum(weights.get(nodes[v]["location"], 1) for v, memory in result.placement.items() if memory is not None)


def _breakdowns(result: Any, graph: Any, xpus: list[str], iteration: int) -> list[dict[str, float]]:
    nodes = graph.nodes
    wanted = set(xpus)
    compute: dict[str, list[tuple[float, float]]] = {x: [] for x in xpus}
    comm: dict[str, dict[str, list[tuple[float, float]]]] = {x: {p: [] for p in PHASES} for x in xpus}
    for r in result.trace:  # one pass: the trace of a large run has millions of records
        if r.iteration != iteration:
            continue
        if r.host in wanted:
            compute[r.host].append((r.start, r.end))
            continue
        if r.host != "collective":
            continue
        d = nodes[r.vertex]
        phase = "dp" if d.get("phase") in ("edp", None) else d["phase"]
        for x in wanted.intersection(d["scope"]):
            comm[x][phase].append((r.start, r.end))
    begin = result.iteration_end[iteration - 1] if iteration else 0.0
    length = result.iteration_end[iteration] - begin
    rows = []
    for x in xpus:
        everything = compute[x] + [iv for ivs in comm[x].values() for iv in ivs]
        out = {"compute_s": union_length(compute[x])}
        for phase in PHASES:
            out[f"exposed_{phase}_s"] = minus_length(comm[x][phase], compute[x])
        out["idle_s"] = max(0.0, length - union_length(everything))
        rows.append(out)
    return rows
