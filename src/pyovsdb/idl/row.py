"""Rows of the replica, readable as Python objects.

Rules kept here:
- An `IdlRow` is an immutable `ovsdb.row.Row` (a change makes a new one), so holding on
  to a row gives a consistent snapshot of it, and change tracking shares rows instead
  of copying them.
- `row.col` (or `row["col"]`, for names that clash with Row's own attributes: uuid, data,
  version, cache, table, get) gives the typed value: str, int, float or bool; a
  reference is the referenced row when its table is replicated and holds it, else a
  uuid.UUID; None for an empty optional value; a list for a set; a dict for a map.
  `row.data[col]` (or `row.value(col)`) gives the canonical stored form (atoms, sorted
  tuples) without copying.
- Layout: a row holds its values in one tuple, in the order of its table's replicated
  columns; `data` is a read-only mapping view over it. A replica holds hundreds of
  thousands of rows, and a tuple costs less than half of a dict of the same values.
- Each table's rows are of a class of their own (`row_class`) with a property per
  replicated column: `row.col` costs one call, as `row["col"]` does.
- Reading a column that is not replicated is an AttributeError/KeyError, not a guess.
  An on-demand column reads as the value last fetched (`Idl.fetch`), and raises
  `NotFetchedError` before the first fetch.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..ovsdb.row import Row
from ..ovsdb.types import UUID

if TYPE_CHECKING:
    from ..ovsdb.datum import Codec
    from .replica import ReplicaTable


class NotFetchedError(KeyError):
    """An on-demand column read before it was fetched."""


class RowData(Mapping[str, Any]):
    """A row's values by column name: a read-only view, nothing copied."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: tuple[Any, ...]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, column: str) -> Any:
        return self._values[self._index[column]]

    def get(self, column: str, default: Any = None) -> Any:
        i = self._index.get(column)
        return default if i is None else self._values[i]

    def __contains__(self, column: object) -> bool:
        return column in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RowData) and other._index is self._index:
            return other._values == self._values
        if isinstance(other, Mapping):
            return len(other) == len(self._index) and all(
                c in other and other[c] == v for c, v in zip(self._index, self._values,
                                                                strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def copy(self) -> dict[str, Any]:
        return dict(zip(self._index, self._values, strict=True))

    def __repr__(self) -> str:
        return repr(self.copy())


class IdlRow(Row):
    __slots__ = ("_table", "_values")

    def __init__(self, uuid: str, values: tuple[Any, ...], version: str,
                 table: ReplicaTable) -> None:
        # Row.__init__ is not called: `data` is a view here, not a stored dict.
        self.uuid = uuid
        self._values = values
        self.version = version
        self.cache = None
        self._table = table

    # A read-only view where `Row` has a dict: ovsdb code only reads a row's data, and
    # a replica row must not be changed in place (it is shared with every reader).
    @property
    def data(self) -> RowData:  # type: ignore[override]
        return RowData(self._table.col_index, self._values)

    @property
    def table(self) -> ReplicaTable:
        return self._table

    def value(self, column: str) -> Any:
        """The canonical value of a replicated column."""
        return self._values[self._table.col_index[column]]

    def value_at(self, position: int) -> Any:
        """The canonical value of the replicated column at `position` in its table's
        `col_index` (for loops over many rows of one table)."""
        return self._values[position]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except NotFetchedError:
            raise
        except KeyError:
            raise AttributeError(
                f"{self._table.name} row has no replicated column {name!r}") from None

    def __getitem__(self, name: str) -> Any:
        table = self._table
        i = table.col_index.get(name)
        if i is not None:
            return typed(table, name, self._values[i])
        if name == "_uuid":
            return uuidlib.UUID(self.uuid)
        if name not in table.on_demand:
            raise KeyError(name)
        fetched = table.fetched.get(self.uuid)
        if fetched is None or name not in fetched:
            raise NotFetchedError(f"{table.name} column {name} is read on demand: fetch it "
                                  "first")
        return typed(table, name, fetched[name])

    def get(self, column: str) -> Any:
        """The canonical value (`Row.get`), `_uuid` and `_version` included."""
        return Row.get(self, column)

    def __repr__(self) -> str:
        return f"<{self._table.name} {self.uuid}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdlRow) and other.uuid == self.uuid and \
            other._values == self._values and other._table.col_index == self._table.col_index

    def __hash__(self) -> int:
        return hash(self.uuid)

    def to_dict(self) -> dict[str, Any]:
        """Every replicated column, typed."""
        table = self._table
        return {c: typed(table, c, v) for c, v in zip(table.columns, self._values, strict=True)}


def row_class(table: ReplicaTable) -> type[IdlRow]:
    """The class of `table`'s rows: an `IdlRow` whose replicated columns are properties,
    so that `row.col` is one descriptor call, not a failed attribute lookup and then
    `__getattr__` (a third of the time, and most of it for plain values). Names that
    `IdlRow` has itself keep their meaning (read those columns as `row["col"]`)."""
    attrs: dict[str, Any] = {"__slots__": ()}
    for name, i in table.col_index.items():
        if not name.startswith("_") and not hasattr(IdlRow, name):
            attrs[name] = property(_getter(table, name, i))
    return type(f"IdlRow_{table.name}", (IdlRow,), attrs)


def _getter(table: ReplicaTable, name: str, i: int) -> Callable[[IdlRow], Any]:
    """`typed` of column `name` (at `i`), with no conversion to look up where its atoms
    are not references."""
    codec: Codec = table.codecs[name]
    if codec.value is not None and UUID in (codec.key.type, codec.value.type):
        return lambda row: typed(table, name, row._values[i])
    if codec.key.type == UUID:
        return _ref_getter(table, codec, i)
    if codec.is_scalar:
        return lambda row: row._values[i]
    if codec.is_map:
        return lambda row: dict(row._values[i])
    if codec.max == 1:
        return lambda row: row._values[i][0] if row._values[i] else None
    return lambda row: list(row._values[i])


def _ref_getter(table: ReplicaTable, codec: Codec, i: int) -> Callable[[IdlRow], Any]:
    """`typed` of a column of references (not a map), the referenced table's rows
    looked up once per read."""
    ref_table = codec.key.ref_table
    scalar, optional = codec.is_scalar, codec.max == 1

    def get(row: IdlRow) -> Any:
        value = row._values[i]
        if not value:
            return None if optional else []
        replica = table.replica
        target = replica.tables.get(ref_table) if replica is not None and ref_table else None
        rows = target.rows if target is not None else None
        if scalar or optional:
            if not scalar:
                value = value[0]
            return (rows.get(value) if rows is not None else None) or uuidlib.UUID(value)
        if rows is None:
            return [uuidlib.UUID(u) for u in value]
        return [rows.get(u) or uuidlib.UUID(u) for u in value]
    return get


def cached(row: IdlRow, name: str, compute: Callable[[IdlRow], Any]) -> Any:
    """`compute(row)`, kept in the row's cache under `name`: a replica row never
    changes (an update makes a new one), so what is derived from it holds."""
    cache = row.cache
    if cache is None:
        cache = row.cache = {}
    elif name in cache:
        return cache[name]
    value = cache[name] = compute(row)
    return value


def typed(table: ReplicaTable, name: str, value: Any) -> Any:
    """A canonical datum of `table.name` as the application sees it (module rules)."""
    codec: Codec = table.codecs[name]
    key = _atom_converter(table, codec.key)
    if codec.is_scalar:
        return key(value) if key is not None else value
    if codec.is_map:
        val = _atom_converter(table, codec.value)
        if key is None and val is None:
            return dict(value)
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
