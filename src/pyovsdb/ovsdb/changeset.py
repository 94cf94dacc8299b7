"""The changeset: what one committed transaction did, table by table, row by row.

Rules kept here:
- A changeset is the single currency between layers: the transaction engine produces it,
  storage serializes it (the OVS transaction record), monitors render it, replicas apply it.
- For each changed row it holds the committed row before (`old`, None for an insert) and
  after (`new`, None for a delete). Rows are immutable, so holding them costs nothing.
- A row that a transaction touched without changing any value is not in the changeset.
- The record form (`to_record`/`from_record`) is OVS's on-disk transaction format:
  `{"table": {"uuid": row-or-diff | null}, "_date": ms, "_comment": text, "_is_diff": true}`.
  Inserted rows list their non-default columns, modified rows the per-column diffs
  (see `datum.Codec.diff`), deleted rows null. Ephemeral columns are not written.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic

from .errors import OvsdbError
from .ids import SeededUuids, UuidSource
from .row import Row

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    from .schema import DatabaseSchema, TableSchema

    # The row type: the database's `Row`s, or a replica's rows (a subclass) in the IDL.
    R = TypeVar("R", bound=Row, default=Row)
else:
    from typing import TypeVar

    R = TypeVar("R", bound=Row)


class RowChange(Generic[R]):
    __slots__ = ("new", "old", "uuid")

    def __init__(self, uuid: str, old: R | None, new: R | None) -> None:
        self.uuid = uuid
        self.old = old
        self.new = new

    def changed_columns(self, schema: TableSchema) -> list[str]:
        """Columns whose value differs between old and new (all, for insert/delete)."""
        if self.old is None or self.new is None:
            return list(schema.columns)
        o, n = self.old.data, self.new.data
        return [c for c in schema.columns if o[c] is not n[c] and o[c] != n[c]]


class Changeset(Generic[R]):
    """Changes of one transaction, keyed by table name then row uuid."""

    __slots__ = ("comment", "date", "tables", "txn_id")

    def __init__(
        self,
        tables: dict[str, dict[str, RowChange[R]]] | None = None,
        *,
        comment: str | None = None,
        date: int | None = None,
        txn_id: str | None = None,
    ) -> None:
        self.tables: dict[str, dict[str, RowChange[R]]] = tables if tables is not None else {}
        self.comment = comment
        self.date = date
        self.txn_id = txn_id

    def __bool__(self) -> bool:
        return any(self.tables.values())

    def __iter__(self) -> Iterator[tuple[str, dict[str, RowChange[R]]]]:
        return iter(self.tables.items())

    def n_rows(self) -> int:
        return sum(len(t) for t in self.tables.values())

    def n_cells(self, schema: DatabaseSchema) -> int:
        """Rough size (rows times columns), to bound history memory."""
        tables = schema.tables
        return sum(len(ch) * len(tables[t].columns) for t, ch in self.tables.items())

    # -- OVS transaction record --------------------------------------------------------

    def to_record(self, schema: DatabaseSchema) -> dict[str, Any]:
        rec: dict[str, Any] = {}
        for tname, changes in self.tables.items():
            persistent = schema.tables[tname].persistent
            out: dict[str, Any] = {}
            for uuid, ch in changes.items():
                if ch.new is None:
                    out[uuid] = None
                    continue
                cols: dict[str, Any] = {}
                new = ch.new.data
                if ch.old is None:
                    for cname, codec, default in persistent:
                        v = new[cname]
                        if v != default:
                            cols[cname] = codec.to_json(v)
                else:
                    old = ch.old.data
                    for cname, codec, _ in persistent:
                        o, v = old[cname], new[cname]
                        if o is v or o == v:
                            continue
                        cols[cname] = codec.to_json(codec.diff(o, v))
                    if not cols:
                        continue
                out[uuid] = cols
            if out:
                rec[tname] = out
        if self.date is not None:
            rec["_date"] = self.date
        if self.comment:
            rec["_comment"] = self.comment
        rec["_is_diff"] = True
        return rec

    @staticmethod
    def from_record(
        schema: DatabaseSchema,
        rec: dict[str, Any],
        rows_of: Any,
        *,
        versions: UuidSource | None = None,
    ) -> Changeset:
        """Rebuild a changeset from a record, given `rows_of(table) -> {uuid: Row}` for the
        state the record applies to. Handles both diff records and old full-row records.
        New and modified rows get their `_version` from `versions`: pass the target
        database's `new_version` (left out, a fresh seeded stream, which is only right
        for a single record)."""
        new_version = versions if versions is not None else SeededUuids(1)
        if not isinstance(rec, dict):
            raise OvsdbError("syntax error", "transaction record must be an object")
        is_diff = rec.get("_is_diff") is True
        cs = Changeset(comment=rec.get("_comment"), date=rec.get("_date"))
        for tname, rows in rec.items():
            if tname.startswith("_"):
                continue
            ts = schema.tables.get(tname)
            if ts is None:
                raise OvsdbError("syntax error", f"No table named {tname}.")
            if not isinstance(rows, dict):
                raise OvsdbError("syntax error", f"table {tname} record must be an object")
            current = rows_of(tname)
            changes: dict[str, RowChange] = {}
            for uuid, rjson in rows.items():
                old = current.get(uuid)
                if rjson is None:
                    if old is None:
                        raise OvsdbError(
                            "syntax error", f"transaction deletes row {uuid} that does not exist"
                        )
                    changes[uuid] = RowChange(uuid, old, None)
                    continue
                if not isinstance(rjson, dict):
                    raise OvsdbError("syntax error", f"row {uuid} must be an object or null")
                data = dict(old.data) if old is not None else default_data(ts)
                for cname, vjson in rjson.items():
                    col = ts.columns.get(cname)
                    if col is None:
                        if cname in ("_uuid", "_version"):
                            continue
                        raise OvsdbError("syntax error", f"No column {cname} in table {tname}.")
                    codec = col.type.codec
                    if is_diff and old is not None:
                        data[cname] = codec.apply_diff(data[cname], codec.diff_from_json(vjson))
                    else:
                        data[cname] = codec.from_json(vjson)
                changes[uuid] = RowChange(uuid, old, Row(uuid, data, new_version()))
            if changes:
                cs.tables[tname] = changes
        return cs


def default_data(ts: TableSchema) -> dict[str, Any]:
    return ts.defaults()


def merge(changesets: Iterable[Changeset[R]]) -> Changeset[R]:
    """Compose consecutive changesets into one: per row, the first `old` and the last
    `new`; a row inserted and then deleted disappears."""
    merged: dict[str, dict[str, RowChange[R]]] = {}
    for cs in changesets:
        merge_into(merged, cs)
    return Changeset({tname: t for tname, t in merged.items() if t})


def merge_into(acc: dict[str, dict[str, RowChange[R]]], cs: Changeset[R],
               tables: Container[str] | None = None) -> None:
    """`merge`, one changeset at a time, into `acc` (table -> row changes; a table may
    be left empty), keeping only `tables` if given."""
    for tname, changes in cs.tables.items():
        if tables is not None and tname not in tables:
            continue
        t = acc.get(tname)
        if t is None:
            acc[tname] = dict(changes)
        else:
            merge_rows(t, changes)


def merge_rows(acc: dict[str, RowChange[R]], later: Mapping[str, RowChange[R]]) -> None:
    """The row changes `later` of one table composed into `acc` in place: per row the
    first `old` and the last `new`; a row inserted and then deleted disappears."""
    for uuid, ch in later.items():
        prev = acc.get(uuid)
        if prev is None:
            acc[uuid] = ch
        elif prev.old is None and ch.new is None:
            del acc[uuid]  # inserted, then deleted: nothing happened
        else:
            acc[uuid] = RowChange(uuid, prev.old, ch.new)
