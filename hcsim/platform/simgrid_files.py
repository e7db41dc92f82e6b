"""Platforms written by others: what hcsim needs from a SimGrid file, and what it assumes without it.

hcsim's compiler writes everything the engine reads (``kind=xpu`` on the hosts that
compute, their memory and FLOPS properties, the ``raw`` network model, a ``coherent``
root-zone property); a SimGrid platform written by someone else (SimGrid's own
``examples/platforms``, a Grid'5000 description) usually has none of it. This module
makes each choice explicit and sayable: which hosts are XPUs (``--xpus-from``), the
network model in force (``--network-model``), the memory semantics (``coherent``) and
unlimited local memory for an XPU without a ``memory`` property (:func:`notes`).

Invariant: nothing is assumed silently; every gap filled is said in one line.
The facts in the file (:func:`read_declared`) are read with lxml, without SimGrid; what
SimGrid builds is counted by :mod:`hcsim.platform.probe`.

Guide: docs/platform.md, "Platforms written by others".
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

from lxml import etree

from hcsim.errors import HcsimError

__all__ = [
    "XPUS_FROM",
    "NETWORK_MODELS",
    "SIMGRID_DEFAULT_MODEL",
    "Declared",
    "HostFacts",
    "read_declared",
    "choose_xpus",
    "network_config",
    "model_in_force",
    "runs_raw",
    "count_links",
]

XPUS_FROM = ("auto", "property", "all-hosts")
"""How ``hcsim run --platform`` picks the XPUs of a platform file (docs/platform.md, "Platforms written by others")."""

NETWORK_MODELS = ("file", "raw")
"""``file``: the model the platform file names (or SimGrid's default); ``raw``: force SimGrid's raw model."""

SIMGRID_DEFAULT_MODEL = "LV08"
"""SimGrid 4.1's ``network/model`` when nothing sets it (src/simgrid/sg_config.cpp)."""

LOOPBACK = "__loopback__"
"""The link SimGrid adds by itself for a host talking to itself; not one of the file's links."""


@dataclass(frozen=True)
class Declared:
    """What a platform file declares about itself, before SimGrid loads it."""

    config: dict[str, str] = field(default_factory=dict)  # the <config> properties
    coherent: bool | None = None  # the root zone's 'coherent' property, if any

    @property
    def network_model(self) -> str | None:
        return self.config.get("network/model")


@dataclass(frozen=True)
class HostFacts:
    """The hosts SimGrid built from a platform file, as the engine will see them."""

    hosts: list[str]  # every host, in SimGrid's (name) order
    by_property: list[str]  # hosts with kind=xpu, in rank order
    without_memory: frozenset[str]  # hosts without a 'memory' property
    unrouted: tuple[tuple[str, str], ...] = ()  # ordered pairs of XPUs (or XPU and memory) SimGrid has no route for
    route_groups: dict[str, str] = field(default_factory=dict)  # XPU -> the XPU whose routes stand for its own
    route_pairs: int = 0  # ordered pairs whose route was resolved (after grouping the nodes of a <cluster>)
    route_sampled: bool = False  # too many pairs: ring neighbours and pairs with the first XPU only

    def unrouted_between(self, a: str, b: str) -> bool:
        """Whether SimGrid has no route from ``a`` to ``b`` (XPUs, or an XPU and its memory)."""
        return (self.route_groups.get(a, a), self.route_groups.get(b, b)) in self._unrouted_keys

    @cached_property
    def _unrouted_keys(self) -> frozenset[tuple[str, str]]:
        key = self.route_groups.get
        return frozenset((key(a, a), key(b, b)) for a, b in self.unrouted)


def _truth(value: str, path: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise HcsimError(f"platform file '{path}': root zone property coherent={value!r} is invalid (valid: true, false)")


def read_declared(path: str | os.PathLike[str]) -> Declared:
    """The ``<config>`` properties and the root zone's ``coherent`` property of a platform file.

    Both come before any host in SimGrid's DTD, so parsing stops at the first element
    that is neither: a 100 MB platform costs no more than a small one.
    """
    path = os.fspath(path)
    config: dict[str, str] = {}
    coherent: bool | None = None
    try:
        parser = etree.iterparse(
            path, events=("end",), load_dtd=False, no_network=True, resolve_entities=False, huge_tree=False
        )
        for _, el in parser:
            if el.tag == "prop":
                parent = el.getparent()
                if parent is not None and parent.tag == "config":
                    config[str(el.get("id", ""))] = str(el.get("value", ""))
                elif parent is not None and parent.tag == "zone" and parent.getparent() is not None:
                    if parent.getparent().tag == "platform" and el.get("id") == "coherent":
                        coherent = _truth(str(el.get("value", "")), path)
            elif el.tag != "config":
                break
    except etree.XMLSyntaxError as exc:
        raise HcsimError(f"platform file '{path}' is not valid XML: {exc}") from None
    except OSError as exc:
        raise HcsimError(f"platform file '{path}' cannot be read: {exc.strerror or exc}") from None
    return Declared(config, coherent)


def choose_xpus(facts: HostFacts, xpus_from: str, path: str) -> tuple[list[str], str]:
    """The XPUs ``xpus_from`` picks, and a few words saying how they were found."""
    if xpus_from not in XPUS_FROM:
        raise HcsimError(f"--xpus-from {xpus_from!r} is unknown (valid: {', '.join(XPUS_FROM)})")
    if xpus_from == "all-hosts" or (xpus_from == "auto" and not facts.by_property):
        how = "every host" if xpus_from == "all-hosts" else "every host: none has the property kind=xpu"
        return list(facts.hosts), how
    if not facts.by_property:
        raise HcsimError(
            f"platform file '{path}': no host has the property kind=xpu "
            f"(valid: a platform from 'hcsim platform build', or --xpus-from all-hosts to use its "
            f"{len(facts.hosts)} hosts)"
        )
    return list(facts.by_property), "hosts with kind=xpu"


def network_config(choice: str) -> tuple[str, ...]:
    """SimGrid ``--cfg`` items for ``--network-model choice`` (empty: keep the file's)."""
    if choice not in NETWORK_MODELS:
        raise HcsimError(f"--network-model {choice!r} is unknown (valid: {', '.join(NETWORK_MODELS)})")
    return ("network/model:raw", "network/crosstraffic:0") if choice == "raw" else ()


def model_in_force(declared: Declared, choice: str) -> str:
    """Which network model a run uses, and why, in a few words."""
    if choice == "raw":
        return "raw (forced by --network-model raw)"
    if declared.network_model:
        return f"{declared.network_model} (set by the file)"
    return f"{SIMGRID_DEFAULT_MODEL} (SimGrid's default: the file sets none; --network-model raw for hcsim's)"


def runs_raw(declared: Declared, config: tuple[str, ...] = ()) -> bool:
    """Whether a run uses SimGrid's raw model without cross-traffic (``config``: ``--cfg`` items, which win).

    Under it a lone flow takes its route's latency plus size over bandwidth and loads the
    links of its route only: what hcsim's compiler writes, and what memoize's symmetry
    arguments (twins, background skips) assume.
    """
    items = dict(declared.config)
    for item in config:
        key, _, value = item.partition(":")
        items[key.strip()] = value.strip()
    crosstraffic = items.get("network/crosstraffic", "").strip().lower()
    return items.get("network/model", "").strip() == "raw" and crosstraffic in ("0", "no", "false", "off")


def count_links(names: list[str]) -> int:
    """The links a file declares, from SimGrid's link names.

    SimGrid splits a ``SPLITDUPLEX`` link ``L`` into ``L_UP`` and ``L_DOWN`` (counted
    once) and adds :data:`LOOPBACK` itself (not counted); every other link is one link.
    """
    present = set(names)
    count = 0
    for name in present:
        if name == LOOPBACK:
            continue
        if name.endswith("_DOWN") and name[: -len("_DOWN")] + "_UP" in present:
            continue
        count += 1
    return count
