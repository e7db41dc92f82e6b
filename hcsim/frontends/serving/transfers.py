"""KV copies outside an iteration's forward pass, each timed by one SimGrid run and memoized.

:class:`SwapTimer`: swap preemption's copies on one TP group, ``out`` blocks to host DRAM
then ``in`` blocks back, every rank its share at once, one zero-compute vertex per copy
whose data the placement puts in the rank's host DRAM, run non-coherent (the engine's
copy over the route between them, PCIe on the paper's systems; the link is symmetric, so
a copy out takes what a copy in does). :class:`KVTransferTimer`: a disaggregated
request's prompt KV from its prefill group to its decode group, rank i to rank i, one
point-to-point flow each, at once. Invariant: a time is a function of its memo key alone
(the graph is), so memoized == simulated each time.
"""

from __future__ import annotations

import os
from typing import Any

from hcsim.errors import HcsimError
from hcsim.workload.graph import Workload

__all__ = ["SwapTimer", "KVTransferTimer"]


def _host_dram(xpu: Any, vertices: list[tuple[str, dict]], coherent: bool) -> dict[str, str | None]:
    if xpu.host_memory is None:
        raise HcsimError(f"XPU '{xpu.name}' has no host_memory to swap KV blocks to "
                         "(valid: --preemption recompute, or a system whose XPUs have one)")  # fmt: skip
    return {name: xpu.host_memory for name, _ in vertices}


class SwapTimer:
    """Seconds to copy ``out`` KV blocks to host DRAM and ``in`` back, on a TP group; ``block_bytes`` per rank."""

    def __init__(self, platform: str | os.PathLike[str], group: list[str], block_bytes: float) -> None:
        self.platform, self.group, self.block_bytes = os.fspath(platform), list(group), float(block_bytes)
        self.memo: dict[tuple[int, int], float] = {}
        self.simulations = 0

    def __call__(self, out: int, into: int) -> float:
        key = (out, into)
        t = self.memo.get(key)
        if t is None:
            t = self.memo[key] = self.simulate(out, into)
        return t

    def graph(self, out: int, into: int) -> Workload:
        w = Workload()
        w.graph.update(name="kv-swap", phase="swap")
        for x in self.group:
            last = None
            for what, blocks in (("out", out), ("in", into)):
                if not blocks:
                    continue
                v = f"{x}.swap_{what}"
                w.add_compute(v, 0.0, x, precision="fp16", mem_bytes=blocks * self.block_bytes, footprint=0.0,
                              is_start=last is None, seconds=0.0)  # fmt: skip
                if last is not None:
                    w.add_dependency(last, v)
                last = v
        return w

    def simulate(self, out: int, into: int) -> float:
        from hcsim.engine import simulate

        if not out and not into:
            return 0.0
        self.simulations += 1
        run = simulate(self.platform, self.graph(out, into), 1, coherent=False, placement=_host_dram,
                       record_flows=False, record_trace=False, progress=False)  # fmt: skip
        return run.makespan


class KVTransferTimer:
    """Seconds to move ``tokens`` tokens of KV (``token_bytes`` per rank each) from one TP group to another."""

    def __init__(self, platform: str | os.PathLike[str], token_bytes: float) -> None:
        self.platform, self.token_bytes = os.fspath(platform), float(token_bytes)
        self.memo: dict[tuple[tuple[str, ...], tuple[str, ...], int], float] = {}
        self.simulations = 0

    def seconds(self, src: list[str], dst: list[str], tokens: int) -> float:
        key = (tuple(src), tuple(dst), tokens)
        t = self.memo.get(key)
        if t is None:
            t = self.memo[key] = self.simulate(src, dst, tokens)
        return t

    def graph(self, src: list[str], dst: list[str], tokens: int) -> Workload:
        if len(src) != len(dst):
            raise HcsimError(f"a KV transfer needs groups of equal size (got {len(src)} and {len(dst)} XPUs)")
        w = Workload()
        w.graph.update(name="kv-transfer", phase="transfer")
        for i, (a, b) in enumerate(zip(src, dst, strict=True)):
            w.add_comm(f"kv{i}", tokens * self.token_bytes, "p2p", [a, b], is_start=True)
        return w

    def simulate(self, src: list[str], dst: list[str], tokens: int) -> float:
        from hcsim.engine import simulate

        self.simulations += 1
        run = simulate(self.platform, self.graph(src, dst, tokens), 1,
                       record_flows=False, record_trace=False, progress=False)  # fmt: skip
        return run.makespan
