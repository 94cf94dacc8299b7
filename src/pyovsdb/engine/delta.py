"""Delta: which keys of a node's keyed data were added, removed or updated in a run.

Rules kept here:
- A key is in at most one of the three sets: a delta says what happened to each key
  overall, not the steps. Recording steps composes them: added then removed is nothing,
  removed then added is updated, added then updated stays added, updated then removed
  is removed. `merge()` composes two deltas the same way, so deltas of runs that were
  skipped (backoff) can be folded into one.
- Steps that make no sense in sequence (adding a key twice, updating a removed key)
  resolve to the answer that makes successors look at the key again, never to nothing:
  a delta may overstate a change, it must not hide one.
- Keys only; the data itself stays in the node. Iteration order of the sets is not
  meant to be relied on: whoever produces output from a delta sorts it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["Delta"]

K = TypeVar("K", bound=Hashable)


class Delta(Generic[K]):
    """Added, removed and updated keys; three disjoint sets."""

    __slots__ = ("added", "removed", "updated")

    def __init__(
        self,
        added: Iterable[K] = (),
        removed: Iterable[K] = (),
        updated: Iterable[K] = (),
    ) -> None:
        self.added: set[K] = set(added)
        self.removed: set[K] = set(removed)
        self.updated: set[K] = set(updated)
        if self.added & self.removed or self.added & self.updated or self.removed & self.updated:
            raise ValueError("a key can be in only one of added, removed, updated")

    @classmethod
    def diff(cls, old: Mapping[K, Any], new: Mapping[K, Any]) -> Delta[K]:
        """The delta that turns `old` into `new` (values compared with `==`)."""
        delta: Delta[K] = cls()
        for key, value in new.items():
            if key not in old:
                delta.added.add(key)
            elif old[key] != value:
                delta.updated.add(key)
        delta.removed.update(key for key in old if key not in new)
        return delta

    def add(self, key: K) -> None:
        """Record that `key` came into existence."""
        if key in self.removed:
            self.removed.discard(key)
            self.updated.add(key)
        elif key not in self.updated:
            self.added.add(key)

    def remove(self, key: K) -> None:
        """Record that `key` went away."""
        if key in self.added:
            self.added.discard(key)
            return
        self.updated.discard(key)
        self.removed.add(key)

    def update(self, key: K) -> None:
        """Record that the value at `key` changed."""
        if key in self.added:
            return
        self.removed.discard(key)
        self.updated.add(key)

    def merge(self, later: Delta[K]) -> None:
        """Fold in a delta that happened after this one."""
        for key in later.removed:
            self.remove(key)
        for key in later.added:
            self.add(key)
        for key in later.updated:
            self.update(key)

    @classmethod
    def merged(cls, *deltas: Delta[K]) -> Delta[K]:
        """The composition of `deltas`, earliest first."""
        result: Delta[K] = cls()
        for delta in deltas:
            result.merge(delta)
        return result

    def copy(self) -> Delta[K]:
        return Delta(self.added, self.removed, self.updated)

    def keys(self) -> set[K]:
        """Every key the delta touches."""
        return self.added | self.removed | self.updated

    def __contains__(self, key: object) -> bool:
        return key in self.added or key in self.removed or key in self.updated

    def __iter__(self) -> Iterator[K]:
        yield from self.added
        yield from self.removed
        yield from self.updated

    def __len__(self) -> int:
        return len(self.added) + len(self.removed) + len(self.updated)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.updated)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Delta):
            return NotImplemented
        return (
            self.added == other.added
            and self.removed == other.removed
            and self.updated == other.updated
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        def show(keys: set[K]) -> str:
            return "{" + ", ".join(sorted(map(repr, keys))) + "}"

        return (
            f"Delta(added={show(self.added)}, removed={show(self.removed)}, "
            f"updated={show(self.updated)})"
        )
