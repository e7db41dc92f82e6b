"""The scheduler's view of a platform: nodes with GPUs, switches, and partitions.

AnalySIM models a cluster twice: physically (nodes under switches, from Slurm's
topology.conf) and logically (partitions, each with its own pool, queue and policy).
Here both come from a platform :class:`~hcsim.platform.Topology`, so the jobs the
scheduler places run on the very XPUs and links SimGrid simulates:

* a **node** is a server: the XPUs sharing the deepest zone (``r03/s07``), in rank
  order (a topology without zones is one node per XPU);
* its **switch** is the parent zone (the rack's ToR in the paper systems; ``""`` for a
  single-level topology);
* **partitions** take whole nodes, in node order: ``{"train": 96, "dev": 32}`` or
  explicit node lists. Without partitions all nodes form one, named ``""``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hcsim.errors import HcsimError
from hcsim.platform.builders import XPUS_PER_SERVER
from hcsim.platform.topology import Topology

__all__ = ["Cluster", "Node", "default_cluster_size", "parse_partitions"]


@dataclass
class Node:
    """A server: its XPUs (SimGrid host names) and where it sits."""

    index: int
    name: str
    gpus: list[str]
    switch: str = ""
    partition: str = ""


@dataclass
class Cluster:
    """Nodes in order, GPU ids global (node-major), and partitions as lists of node indices."""

    nodes: list[Node]
    partitions: dict[str, list[int]] = field(default_factory=dict)
    pcie_bandwidth: float = 64e9  # bytes/s, for migration cost (the topology's PCIe link, if it has one)
    gpu_memory: float = 80e9  # bytes a GPU holds, moved when a job migrates (the XPUs' memory attribute)

    def __post_init__(self) -> None:
        if not self.nodes:
            raise HcsimError("a cluster needs at least one node with a GPU (valid: a topology with XPUs)")
        if not self.partitions:
            self.partitions = {"": [n.index for n in self.nodes]}
        self.gpu_names: list[str] = [g for n in self.nodes for g in n.gpus]
        self.gpu_node: list[int] = [n.index for n in self.nodes for _ in n.gpus]
        first, self.node_first_gpu = 0, []
        for n in self.nodes:
            self.node_first_gpu.append(first)
            first += len(n.gpus)

    @property
    def gpu_count(self) -> int:
        return len(self.gpu_names)

    def partition_gpus(self, partition: str) -> int:
        return sum(len(self.nodes[i].gpus) for i in self.partitions[partition])

    @classmethod
    def from_topology(cls, topology: Topology, partitions: Mapping[str, int | Sequence[str]] | None = None) -> Cluster:
        """Group a topology's XPUs into nodes by zone; split the nodes into ``partitions``."""
        by_zone: dict[str, list[tuple[float, str]]] = {}
        for x in topology.xpus():
            d = topology.nodes[x]
            zone = d.get("zone", "") or x
            by_zone.setdefault(zone, []).append((float(d.get("rank", 0)), x))
        ordered = sorted(by_zone.items(), key=lambda kv: (min(kv[1]), kv[0]))
        nodes = []
        for i, (zone, members) in enumerate(ordered):
            switch = zone.rpartition("/")[0] if "/" in zone else ""
            nodes.append(Node(i, zone, [x for _, x in sorted(members)], switch))
        pcie = [d["bandwidth"] * d.get("lanes", 1) for _, _, d in topology.iter_links() if d.get("link_kind") == "pcie"]
        mem = [topology.nodes[x].get("memory", 0.0) for x in topology.xpus()]
        cluster = cls(
            nodes,
            _partition(nodes, partitions),
            pcie_bandwidth=min(pcie) if pcie else 64e9,
            gpu_memory=max(mem) if mem and max(mem) > 0 else 80e9,
        )
        return cluster


def _partition(nodes: list[Node], spec: Mapping[str, int | Sequence[str]] | None) -> dict[str, list[int]]:
    if not spec:
        return {"": [n.index for n in nodes]}
    by_name = {n.name: n.index for n in nodes}
    out: dict[str, list[int]] = {}
    taken: set[int] = set()
    cursor = 0
    for name, what in spec.items():
        if isinstance(what, bool) or not isinstance(what, int | list | tuple):
            raise HcsimError(f"partition {name!r}: {what!r} is invalid (valid: a node count or a list of node names)")
        if isinstance(what, int):
            if what < 1 or cursor + what > len(nodes):
                left = len(nodes) - cursor
                valid = f"1..{left}" if left else f"no more partitions: the cluster's {len(nodes)} nodes are all given"
                raise HcsimError(f"partition {name!r} asks for {what} nodes but only {left} are left (valid: {valid})")
            idx = list(range(cursor, cursor + what))
            cursor += what
        else:
            unknown = [n for n in what if n not in by_name]
            if unknown:
                raise HcsimError(f"partition {name!r} names node {unknown[0]!r}, which the cluster does not have")
            idx = [by_name[n] for n in what]
        clash = taken.intersection(idx)
        if clash:
            raise HcsimError(f"partition {name!r} reuses node '{nodes[min(clash)].name}' (valid: disjoint partitions)")
        taken.update(idx)
        out[str(name)] = idx
        for i in idx:
            nodes[i].partition = str(name)
    return out


def parse_partitions(text: str, what: str = "partitions") -> dict[str, int]:
    """Nodes per partition from their command-line form, e.g. ``hcsim cluster --partitions``.

    ``what`` names the text in error messages.

    >>> parse_partitions("train=96,dev=32")
    {'train': 96, 'dev': 32}
    """
    partitions: dict[str, int] = {}
    for item in text.split(","):
        name, _, count = item.partition("=")
        name = name.strip()
        if not name or not count.strip().isdigit():
            raise HcsimError(f"{what} item {item!r} is invalid (valid: name=nodes, e.g. train=96,dev=32)")
        if name in partitions:
            raise HcsimError(
                f"{what} names partition {name!r} twice (valid: each partition once, e.g. train=96,dev=32)"
            )
        partitions[name] = int(count)
    return partitions


def default_cluster_size(gpus_per_job: Sequence[int]) -> int:
    """GPUs of the smallest paper system that holds the largest job: its GPUs rounded up to whole servers.

    >>> default_cluster_size([1, 4, 12])
    16
    """
    if not gpus_per_job:
        raise HcsimError("no jobs to size a cluster for (valid: at least one job)")
    return max(XPUS_PER_SERVER, -(-max(gpus_per_job) // XPUS_PER_SERVER) * XPUS_PER_SERVER)
