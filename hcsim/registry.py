"""One registry helper: named things users choose from, with the house's one-line error.

Collective algorithms, trace formats, scheduling policies, placements, queue-selection
rules, pipeline schedules and the XPU and model presets are each a :class:`Registry`: a
read-only mapping (registration order) that grows by :meth:`Registry.register`. A
default is said explicitly (``register(..., default=True)``), never "the first
registered"; :meth:`Registry.names` lists it first. An unknown name is one line::

    XPU preset 'H200' is unknown (valid: H100, A100, V100, H100-SXM, A100-SXM; or build a Device)

Where the registries live: ``docs/architecture.md``.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Generic, TypeVar

from hcsim.errors import HcsimError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Name -> thing. ``what`` names the thing in errors (``"placement"``); ``scope`` follows
    "is unknown" (``"for allreduce"``); ``valid`` frames the list of names (``"{}; or build a
    Device"``); ``sort`` lists them sorted; ``show`` prints the bad name (``repr``)."""

    def __init__(
        self,
        what: str,
        items: Mapping[str, T] | None = None,
        *,
        scope: str = "",
        valid: str = "{}",
        sort: bool = False,
        show: Callable[[object], str] = repr,
    ) -> None:
        self.what, self.scope, self.valid, self.sort, self.show = what, scope, valid, sort, show
        self._items: dict[str, T] = dict(items or {})
        self._default: str | None = None
        self._names: tuple[str, ...] | None = None  # names(), kept until the next register

    def register(self, name: str, item: T, *, default: bool = False) -> T:
        """Add (or replace) ``name``; ``default=True`` makes it the default. Returns ``item``."""
        self._items[name] = item
        if default:
            self._default = name
        self._names = None
        return item

    @property
    def default(self) -> str | None:
        """The name registered with ``default=True`` (the last such), or None."""
        return self._default

    def names(self) -> tuple[str, ...]:
        """Every name, the default first, then in registration order."""
        if self._names is None:
            rest = tuple(n for n in self._items if n != self._default)
            self._names = rest if self._default is None else (self._default, *rest)
        return self._names

    def lookup(self, name: str) -> T:
        """The thing called ``name``, or :meth:`unknown`'s error."""
        try:
            return self._items[name]
        except KeyError:
            raise self.unknown(name) from None

    def unknown(self, name: object) -> HcsimError:
        """The one-line error for ``name``: ``what 'name' is unknown[ scope] (valid: ...)``."""
        listed = ", ".join(sorted(self._items) if self.sort else self.names())
        scope = f" {self.scope}" if self.scope else ""
        return HcsimError(f"{self.what} {self.show(name)} is unknown{scope} (valid: {self.valid.format(listed)})")

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def get(self, name: str, default: T | None = None) -> T | None:  # the dict's own: on hot paths
        return self._items.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def keys(self) -> KeysView[str]:  # the dict's own views: ordered, reversible
        return self._items.keys()

    def values(self) -> ValuesView[T]:
        return self._items.values()

    def items(self) -> ItemsView[str, T]:
        return self._items.items()

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {', '.join(self.names())})"
