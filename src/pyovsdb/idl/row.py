"""Rows of the replica, readable as Python objects.

Rules kept here:
- An `IdlRow` is an immutable `ovsdb.row.Row` (a change makes a new one), so holding on
  to a row gives a consistent snapshot of it, and change tracking shares rows instead
  of copying them.
- `row.col` (or `row["col"]`, for names that clash with Row's own attributes) gives the
  typed value: str, int, float or bool; uuid.UUID, or the referenced row when its table
  is replicated; None for an empty optional value; a list for a set; a dict for a map.
  `row.data[col]` gives the canonical stored form (atoms, sorted tuples) without copying.
- Reading a column that is not replicated is an AttributeError/KeyError, not a guess.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import TYPE_CHECKING, Any

from ..ovsdb.row import Row
from ..ovsdb.types import UUID

if TYPE_CHECKING:
    from .replica import ReplicaTable


class IdlRow(Row):
    __slots__ = ("_table",)

    def __init__(self, uuid: str, data: dict[str, Any], version: str,
                 table: ReplicaTable) -> None:
        Row.__init__(self, uuid, data, version)
        self._table = table

    @property
    def table(self) -> ReplicaTable:
        return self._table

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(
                f"{self._table.name} row has no replicated column {name!r}") from None

    def __getitem__(self, name: str) -> Any:
        if name == "_uuid":
            return uuidlib.UUID(self.uuid)
        value = self.data[name]
        return _typed(self._table, name, value)

    def __repr__(self) -> str:
        return f"<{self._table.name} {self.uuid}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdlRow) and other.uuid == self.uuid and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.uuid)


def _typed(table: ReplicaTable, name: str, value: Any) -> Any:
    codec = table.codecs[name]
    key = _atom_converter(table, codec.key)
    if codec.is_scalar:
        return key(value) if key is not None else value
    if codec.is_map:
        val = _atom_converter(table, codec.value)  # type: ignore[arg-type]
        return {(key(k) if key else k): (val(v) if val else v) for k, v in value}
    if codec.max == 1:
        if not value:
            return None
        return key(value[0]) if key is not None else value[0]
    return [key(a) for a in value] if key is not None else list(value)


def _atom_converter(table: ReplicaTable, base: Any) -> Any:
    if base.type != UUID:
        return None
    replica = table.replica
    if base.ref_table is not None and replica is not None:
        target = replica.tables.get(base.ref_table)
        if target is not None:
            rows = target.rows
            return lambda u: rows.get(u) or uuidlib.UUID(u)
    return uuidlib.UUID
