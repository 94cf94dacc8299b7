"""Reading changesets the way an application asks about changes, and row events.

Rules kept here:
- The currency is `ovsdb.changeset.Changeset`: per table, per row, the row before
  (`old`, None if inserted) and after (`new`, None if deleted). Both are the replica's
  immutable rows, so a deleted row keeps its last values and a modified row its old
  ones, without any copy.
- "Changed columns" are computed from the two rows, over the columns the replica holds
  (a replica may hold a subset of a table's columns).
- Events are derived from changesets as they are applied: insert (row), update (row,
  old row), delete (last row). A watcher may restrict itself to some columns: updates
  that change none of them are not reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..ovsdb.changeset import Changeset, RowChange
from .row import IdlRow

INSERT, UPDATE, DELETE = "insert", "update", "delete"
EVENTS = (INSERT, UPDATE, DELETE)

EventCallback = Callable[[str, IdlRow, IdlRow | None], None]


def changed_columns(change: RowChange[IdlRow]) -> list[str]:
    """Columns whose value differs between `old` and `new`; every replicated column for
    an insert or a delete."""
    old, new = change.old, change.new
    row = new if new is not None else old
    if row is None:
        return []
    columns = row.table.columns
    if old is None or new is None:
        return list(columns)
    return [c for c, o, n in zip(columns, old._values, new._values, strict=True)
            if o is not n and o != n]


class ChangeView:
    """Questions about one changeset: what was inserted, deleted, modified where."""

    __slots__ = ("changeset",)

    def __init__(self, changeset: Changeset[IdlRow]) -> None:
        self.changeset = changeset

    def __bool__(self) -> bool:
        return bool(self.changeset)

    def tables(self) -> list[str]:
        return [t for t, ch in self.changeset.tables.items() if ch]

    def _changes(self, table: str) -> Iterable[RowChange[IdlRow]]:
        return self.changeset.tables.get(table, {}).values()

    def inserted(self, table: str) -> list[IdlRow]:
        return [ch.new for ch in self._changes(table)
                if ch.old is None and ch.new is not None]

    def deleted(self, table: str) -> list[IdlRow]:
        """Deleted rows, with their last values."""
        return [ch.old for ch in self._changes(table)
                if ch.new is None and ch.old is not None]

    def modified(self, table: str, column: str | None = None) -> list[RowChange[IdlRow]]:
        """Rows present before and after (optionally: whose `column` changed)."""
        out = []
        for ch in self._changes(table):
            if ch.old is None or ch.new is None:
                continue
            if column is not None:
                o, n = ch.old.value(column), ch.new.value(column)
                if o is n or o == n:
                    continue
            out.append(ch)
        return out

    def columns(self, table: str) -> dict[str, list[RowChange[IdlRow]]]:
        """Modified rows by changed column."""
        out: dict[str, list[RowChange[IdlRow]]] = {}
        for ch in self.modified(table):
            for c in changed_columns(ch):
                out.setdefault(c, []).append(ch)
        return out

    def get(self, table: str, uuid: Any) -> RowChange[IdlRow] | None:
        return self.changeset.tables.get(table, {}).get(str(uuid))


class Watch:
    """A registered event callback (`Idl.watch`); `cancel()` unregisters it."""

    __slots__ = ("_owner", "callback", "columns", "events", "table")

    def __init__(self, owner: list[Watch], table: str, callback: EventCallback,
                 events: Iterable[str], columns: Iterable[str] | None) -> None:
        self._owner = owner
        self.table = table
        self.callback = callback
        self.events = frozenset(events)
        for e in self.events:
            if e not in EVENTS:
                raise ValueError(f"unknown event {e!r} (expected one of {EVENTS})")
        self.columns = tuple(columns) if columns is not None else None

    def cancel(self) -> None:
        if self in self._owner:
            self._owner.remove(self)

    def dispatch(self, changes: dict[str, RowChange[IdlRow]]) -> None:
        events, cb, cols = self.events, self.callback, self.columns
        for ch in list(changes.values()):
            old, new = ch.old, ch.new
            if old is None:
                if INSERT in events and new is not None:
                    cb(INSERT, new, None)
            elif new is None:
                if DELETE in events:
                    cb(DELETE, old, None)
            elif UPDATE in events:
                if cols is not None and all(old.value(c) == new.value(c) for c in cols):
                    continue
                cb(UPDATE, new, old)
