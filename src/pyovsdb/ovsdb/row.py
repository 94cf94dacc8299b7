"""Rows: immutable snapshots of one database row.

Rules kept here:
- A Row never changes after it is built. A transaction that modifies a row builds a new
  Row with a new `_version`; readers holding the old one keep a consistent view.
- The version is always given by the caller (from its database's `new_version`): a row
  never invents one, so where versions come from is the database owner's choice.
- `data` maps every column of the table (implicit ones excluded) to its canonical datum,
  defaults included, so lookups never need the schema.
- Rendered JSON forms are cached on the row (`cache`), keyed by whoever renders them,
  because a row is sent to many monitors and dumps but changes rarely.
"""

from __future__ import annotations

from typing import Any


class Row:
    __slots__ = ("cache", "data", "uuid", "version")

    def __init__(self, uuid: str, data: dict[str, Any], version: str) -> None:
        self.uuid = uuid
        self.data = data
        self.version = version
        self.cache: dict[Any, Any] | None = None

    def get(self, column: str) -> Any:
        if column == "_uuid":
            return self.uuid
        if column == "_version":
            return self.version
        return self.data[column]

    def __repr__(self) -> str:
        return f"Row({self.uuid!r}, {self.data!r})"
