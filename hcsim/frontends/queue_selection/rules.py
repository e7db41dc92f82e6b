"""The queue-selection rules (the paper's section 3), behind a registry.

A rule is a function ``rule(method, state, now, u, offset_ties, offset_rule) -> queue``
(0-based) that sees what the job manager knows (:class:`~.model.QueueState`) at the
arrival instant ``now`` and one uniform ``u`` in [0, 1) of the arriving job; it is
registered under the method's ``kind`` with :func:`register_rule`. Built in:

* ``random`` - a uniformly random queue;
* ``mql`` (minimum queue length) - the queue holding the fewest jobs (running + waiting)
  at the arrival instant; ties broken at random;
* ``maql`` (minimum average queue length) - the queue whose time-averaged length over
  [0, now] is smallest (compared as areas, which share the divisor now); ties to the
  lowest queue id (at time 0 every average is 0);
* ``offset(M)`` - the queue that completed the fewest (``offset_rule="most"``: most)
  jobs during the last M minutes, the window (now - M, now]; ties to the lowest queue id
  (``offset_ties="random"``: at random); jobs arriving before time M go to a random queue.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from hcsim.errors import HcsimError
from hcsim.frontends.queue_selection.model import OFFSETS, QueueState
from hcsim.registry import Registry

__all__ = ["METHODS", "RULES", "Method", "Rule", "paper_methods", "parse_method", "register_rule", "select_queue"]


@dataclass(frozen=True)
class Method:
    """A selection method: ``kind`` in :data:`METHODS`, and the window M [min] of ``offset``."""

    kind: str
    window: float | None = None

    @property
    def label(self) -> str:
        return f"offset({self.window:g})" if self.kind == "offset" else self.kind


Rule = Callable[[Method, QueueState, float, float, str, str], int]

#: kind -> rule, in registration order.
RULES: Registry[Rule] = Registry("method")


def register_rule(kind: str) -> Callable[[Rule], Rule]:
    """Register the decorated function as the rule of methods of ``kind``."""

    def add(rule: Rule) -> Rule:
        return RULES.register(kind, rule)

    return add


@register_rule("random")
def _random(method: Method, state: QueueState, now: float, u: float, offset_ties: str, offset_rule: str) -> int:
    return int(u * len(state.lengths))


@register_rule("mql")
def _mql(method: Method, state: QueueState, now: float, u: float, offset_ties: str, offset_rule: str) -> int:
    low = min(state.lengths)
    ties = [k for k, v in enumerate(state.lengths) if v == low]
    return ties[int(u * len(ties))]


@register_rule("maql")
def _maql(method: Method, state: QueueState, now: float, u: float, offset_ties: str, offset_rule: str) -> int:
    areas = state.areas(now)
    return areas.index(min(areas))  # the first minimum: the lowest id


@register_rule("offset")
def _offset(method: Method, state: QueueState, now: float, u: float, offset_ties: str, offset_rule: str) -> int:
    horizon = now - method.window
    for d in state.done:
        while d and d[0] <= horizon:
            d.popleft()
    if now < method.window:
        return int(u * len(state.lengths))
    counts = [len(d) for d in state.done]
    best = min(counts) if offset_rule == "fewest" else max(counts)
    if offset_ties == "lowest":
        return counts.index(best)
    ties = [k for k, v in enumerate(counts) if v == best]
    return ties[int(u * len(ties))]


#: The built-in methods' kinds.
METHODS = tuple(RULES)


def select_queue(
    method: Method, state: QueueState, now: float, u: float, offset_ties: str = "lowest", offset_rule: str = "fewest"
) -> int:
    """The queue (0-based) ``method`` picks at ``now``, given ``state`` and a uniform ``u`` in [0, 1)."""
    return RULES.lookup(method.kind)(method, state, now, u, offset_ties, offset_rule)


def _check_window(window: float) -> float:
    try:
        w = float(window)
    except (TypeError, ValueError):
        w = math.nan
    if not (w > 0 and math.isfinite(w)):
        raise HcsimError(f"--offset {window} is invalid (valid: minutes > 0, e.g. 150, 1500, 3000, 5000)")
    return w


def parse_method(text: str | Method, offset: float = 150.0) -> Method:
    """``random``, ``mql``, ``maql``, ``offset`` (window ``offset``) or ``offset(M)``."""
    if isinstance(text, Method):
        return text
    t = str(text).strip().lower()
    if t.startswith("offset(") and t.endswith(")"):
        return Method("offset", _check_window(t[7:-1]))
    if t not in RULES:
        raise RULES.unknown(text)
    return Method(t, _check_window(offset) if t == "offset" else None)


def paper_methods() -> list[Method]:
    """Random, MQL, MAQL and offset with M = 150, 1500, 3000, 5000 (the paper's runs)."""
    return [Method("random"), Method("mql"), Method("maql")] + [Method("offset", m) for m in OFFSETS]
