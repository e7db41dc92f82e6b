"""The two-shot allreduce plug-in of docs/collectives.md ("Your own algorithm"), as the page writes it.

Use it with PYTHONPATH=examples/collectives and the name my_algos:two_shot (tests/docs keep it equal to the page).
"""

from hcsim.collectives import Schedule, register


@register("allreduce", "two_shot")
def two_shot(ranks, nbytes, view):
    """Two-shot allreduce: rank j reduces shard j (all-to-all), then sends it to all."""
    n = len(ranks)
    s = Schedule("allreduce", ranks, shards=n, steps=2)
    arrived = {j: [] for j in range(n)}  # the flows bringing shard j to rank j
    for a in ranks:
        for j, b in enumerate(ranks):
            if a != b:
                arrived[j].append(s.add(a, b, nbytes / n, shards=[j]))
    for j, b in enumerate(ranks):
        reduced = s.join(arrived[j])  # all of shard j has arrived at rank j
        for c in ranks:
            if c != b:  # send the reduced shard to everyone
                s.add(b, c, nbytes / n, after=[reduced], shards=[j])
    return s
