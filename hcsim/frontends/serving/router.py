"""Routing requests to replicas: round robin, or least outstanding tokens.

:class:`Router` gives each request, in the order of the times they are ready, to a
replica. ``round_robin``: the n-th request to replica n mod R, decided up front (each
replica then runs on its own). ``least_tokens``: every replica first runs the
iterations that start before the request is ready, then the request goes to the one with
the fewest outstanding tokens (prompt tokens still to prefill, recomputes included, and
output tokens still to generate, of every request routed to it and not finished; the
lowest index on a tie), as a router that sees the replicas' queues would. Invariant: with
one replica both give that replica's run, identical.
"""

from __future__ import annotations

import math

from hcsim.errors import HcsimError
from hcsim.frontends.serving.replica import Replica, State

__all__ = ["ROUTERS", "Router"]

ROUTERS = ("round_robin", "least_tokens")


class Router:
    """Assigns states to ``replicas`` by ``kind`` (one of :data:`ROUTERS`)."""

    def __init__(self, replicas: list[Replica], kind: str = "round_robin") -> None:
        if kind not in ROUTERS:
            raise HcsimError(f"--router {kind!r} is invalid (valid: {', '.join(ROUTERS)})")
        self.replicas, self.kind, self.count = replicas, kind, 0

    def assign(self, s: State, now: float) -> int:
        """The replica ``s`` (ready at ``now``, no earlier than any before it) goes to; added to it."""
        k = self.pick(now)
        self.replicas[k].add(s)
        return k

    def pick(self, now: float) -> int:
        """The replica the next request, ready at ``now``, goes to (the caller adds it)."""
        if self.kind == "round_robin" or len(self.replicas) == 1:
            k = self.count % len(self.replicas)
        else:
            for r in self.replicas:
                r.run(now)
            loads = [r.outstanding() for r in self.replicas]
            k = loads.index(min(loads))
        self.count += 1
        return k

    def finish(self, horizon: float = math.inf) -> None:
        """Run every replica to ``horizon`` (the end by default)."""
        for r in self.replicas:
            r.run(horizon)
