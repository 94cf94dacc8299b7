"""`Placed`: a dict that knows each key's place in its order, so that a few keys are put
in that order without walking every entry (a change to a few ports or datapaths of a
large topology).

Rules kept here:
- The order is a dict's: insertion order, a key put in again after it was taken out
  going last, a key assigned again keeping its place.
- Every way of putting or taking keys keeps the places (`update` and `clear`
  included); `setdefault` and `popitem` are refused rather than left to bypass them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Placed(dict[K, V], Generic[K, V]):
    __slots__ = ("_next", "_places")

    def __init__(self) -> None:
        super().__init__()
        self._places: dict[K, int] = {}
        self._next = 0

    def __setitem__(self, key: K, value: V) -> None:
        if key not in self._places:
            self._places[key] = self._next
            self._next += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: K) -> None:
        super().__delitem__(key)
        del self._places[key]

    def pop(self, key: K, *default: Any) -> Any:
        self._places.pop(key, None)
        return super().pop(key, *default)

    def clear(self) -> None:
        super().clear()
        self._places.clear()

    def update(self, *args: Any, **kw: Any) -> None:
        if kw or len(args) != 1:
            raise TypeError("Placed.update takes one mapping or iterable of pairs")
        other = args[0]
        pairs = other.items() if isinstance(other, Mapping) else other
        for key, value in pairs:
            self[key] = value

    def setdefault(self, key: K, default: Any = None) -> V:
        raise TypeError("Placed.setdefault: put keys with [] to keep their places")

    def popitem(self) -> tuple[K, V]:
        raise TypeError("Placed.popitem: take keys with pop or del to keep their places")

    def in_order(self, keys: Iterable[K]) -> list[V]:
        """The values of those of `keys` that are here, in this dict's order."""
        places = self._places
        return [self[k] for k in sorted((k for k in keys if k in places),
                                        key=places.__getitem__)]
