"""The client's replica of a database: the rows a monitor delivers, kept up to date from
update notifications, with every batch of changes recorded as a changeset.

Rules kept here:
- Pure: no sockets, no clock. Input is the JSON of monitor replies and notifications
  (update for v1, update2/update3 for v2/v3); output is a `Changeset` per batch, whose
  rows are the replica's own immutable rows, so tracking changes copies nothing.
- Only registered tables and columns are held; a row's unmonitored columns are absent.
- Values from the server are trusted: they are converted to the canonical forms of
  `ovsdb.datum` without re-validating constraints, which is the expensive part of
  parsing and the server already did it.
- Secondary indexes, on one or more columns, are kept consistent with every batch.
- A full resync (a monitor reply that replaces everything) is recorded as the
  difference between the old and the new contents, so tracked changes after a
  reconnection are exactly what changed while the client was away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..ovsdb.changeset import Changeset, RowChange
from ..ovsdb.datum import Codec
from ..ovsdb.schema import DatabaseSchema, TableSchema
from ..ovsdb.types import REAL, UUID
from .row import IdlRow

Parser = Callable[[Any], Any]


def _atom_parser(atype: str) -> Parser | None:
    if atype == UUID:
        return lambda j: j[1]
    if atype == REAL:
        return float
    return None  # strings, integers and booleans are their JSON values


def wire_parser(codec: Codec) -> Parser:
    """A converter from the server's JSON for a column to its canonical datum."""
    kp = _atom_parser(codec.key_type)
    if codec.is_scalar:
        return kp if kp is not None else _identity
    if codec.is_map:
        vp = _atom_parser(codec.value_type)  # type: ignore[arg-type]

        def parse_map(j: Any) -> Any:
            pairs = j[1]
            if not pairs:
                return ()
            if kp is None and vp is None:
                out = [(k, v) for k, v in pairs]
            else:
                out = [(kp(k) if kp else k, vp(v) if vp else v) for k, v in pairs]
            out.sort()
            return tuple(out)

        return parse_map

    def parse_set(j: Any) -> Any:
        if type(j) is list and j and j[0] == "set":
            elems = j[1]
            if not elems:
                return ()
            if kp is None:
                return tuple(sorted(elems))
            return tuple(sorted(kp(e) for e in elems))
        if kp is not None and type(j) is list and j and j[0] == "uuid":
            return (j[1],)
        return (kp(j) if kp is not None else j,)

    return parse_set


def _identity(j: Any) -> Any:
    return j


class Index:
    """Rows by the values of one or more columns (not unique: a key maps to rows)."""

    __slots__ = ("columns", "entries")

    def __init__(self, columns: tuple[str, ...]) -> None:
        self.columns = columns
        self.entries: dict[tuple[Any, ...], dict[str, IdlRow]] = {}

    def key(self, row: IdlRow) -> tuple[Any, ...]:
        data = row.data
        return tuple(data[c] for c in self.columns)

    def add(self, row: IdlRow) -> None:
        self.entries.setdefault(self.key(row), {})[row.uuid] = row

    def remove(self, row: IdlRow) -> None:
        k = self.key(row)
        rows = self.entries.get(k)
        if rows is not None:
            rows.pop(row.uuid, None)
            if not rows:
                del self.entries[k]

    def find(self, *values: Any) -> list[IdlRow]:
        return list(self.entries.get(tuple(values), {}).values())


class ReplicaTable:
    def __init__(self, schema: TableSchema, columns: Iterable[str] | None) -> None:
        self.schema = schema
        self.name = schema.name
        cols = list(schema.columns) if columns is None else list(columns)
        for c in cols:
            if c not in schema.columns:
                raise KeyError(f"table {self.name} has no column {c}")
        self.columns = cols
        self.codecs = {c: schema.columns[c].type.codec for c in cols}
        self.parsers = {c: wire_parser(codec) for c, codec in self.codecs.items()}
        self.defaults = {c: codec.default for c, codec in self.codecs.items()}
        self.rows: dict[str, IdlRow] = {}
        self.indexes: dict[str, Index] = {}
        self.replica: Replica | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def get(self, uuid: str) -> IdlRow | None:
        return self.rows.get(str(uuid))

    def add_index(self, name: str, *columns: str) -> Index:
        for c in columns:
            if c not in self.codecs:
                raise KeyError(f"column {c} of {self.name} is not replicated")
        idx = self.indexes[name] = Index(tuple(columns))
        for row in self.rows.values():
            idx.add(row)
        return idx

    def index(self, name: str) -> Index:
        return self.indexes[name]

    # -- building rows from the wire ---------------------------------------------------

    def row_from_json(self, uuid: str, json: dict[str, Any]) -> IdlRow:
        data = self.defaults.copy()
        parsers = self.parsers
        version = None
        for c, v in json.items():
            p = parsers.get(c)
            if p is not None:
                data[c] = p(v)
            elif c == "_version":
                version = v[1]
        return IdlRow(uuid, data, version or "", self)

    def modified(self, old: IdlRow, diff: dict[str, Any]) -> IdlRow:
        data = old.data.copy()
        parsers = self.parsers
        codecs = self.codecs
        version = old.version
        for c, v in diff.items():
            p = parsers.get(c)
            if p is None:
                if c == "_version":
                    version = v[1]
                continue
            codec = codecs[c]
            if codec.max == 1:
                data[c] = p(v)
            else:
                data[c] = codec.apply_diff(data[c], p(v))
        return IdlRow(old.uuid, data, version, self)

    def replaced(self, old: IdlRow, new_json: dict[str, Any]) -> IdlRow:
        """update (v1) "new": the changed columns in full."""
        data = old.data.copy()
        version = old.version
        for c, v in new_json.items():
            p = self.parsers.get(c)
            if p is not None:
                data[c] = p(v)
            elif c == "_version":
                version = v[1]
        return IdlRow(old.uuid, data, version, self)

    # -- keeping rows and indexes ------------------------------------------------------

    def put(self, row: IdlRow, old: IdlRow | None) -> None:
        if old is not None:
            for idx in self.indexes.values():
                idx.remove(old)
        self.rows[row.uuid] = row
        for idx in self.indexes.values():
            idx.add(row)

    def drop(self, uuid: str) -> IdlRow | None:
        old = self.rows.pop(uuid, None)
        if old is not None:
            for idx in self.indexes.values():
                idx.remove(old)
        return old


class Replica:
    def __init__(self, schema: DatabaseSchema,
                 tables: dict[str, Iterable[str] | None] | None = None) -> None:
        self.schema = schema
        wanted = tables if tables is not None else {t: None for t in schema.tables}
        self.tables: dict[str, ReplicaTable] = {}
        for tname, cols in wanted.items():
            ts = schema.tables.get(tname)
            if ts is None:
                raise KeyError(f"database {schema.name} has no table {tname}")
            t = self.tables[tname] = ReplicaTable(ts, cols)
            t.replica = self

    def __getitem__(self, name: str) -> ReplicaTable:
        return self.tables[name]

    def n_rows(self) -> int:
        return sum(len(t.rows) for t in self.tables.values())

    # -- applying updates --------------------------------------------------------------

    def apply_update2(self, updates: dict[str, Any]) -> Changeset:
        """Apply table-updates2 (update2/update3, monitor_cond replies)."""
        out: dict[str, dict[str, RowChange]] = {}
        for tname, rows in updates.items():
            table = self.tables.get(tname)
            if table is None:
                continue
            changes: dict[str, RowChange] = {}
            trows = table.rows
            for uuid, upd in rows.items():
                ((kind, body),) = upd.items()
                old = trows.get(uuid)
                if kind == "modify":
                    if old is None:
                        continue
                    new = table.modified(old, body)
                elif kind == "delete":
                    if old is None:
                        continue
                    table.drop(uuid)
                    changes[uuid] = RowChange(uuid, old, None)
                    continue
                else:  # "initial" / "insert"
                    new = table.row_from_json(uuid, body)
                table.put(new, old)
                changes[uuid] = RowChange(uuid, old, new)
            if changes:
                out[tname] = changes
        return Changeset(out)

    def apply_update1(self, updates: dict[str, Any]) -> Changeset:
        """Apply table-updates of the original `monitor` (rows with "old"/"new")."""
        out: dict[str, dict[str, RowChange]] = {}
        for tname, rows in updates.items():
            table = self.tables.get(tname)
            if table is None:
                continue
            changes: dict[str, RowChange] = {}
            for uuid, upd in rows.items():
                old = table.rows.get(uuid)
                new_json = upd.get("new")
                if new_json is None:
                    if old is not None:
                        table.drop(uuid)
                        changes[uuid] = RowChange(uuid, old, None)
                    continue
                new = (table.replaced(old, new_json) if old is not None
                       else table.row_from_json(uuid, new_json))
                table.put(new, old)
                changes[uuid] = RowChange(uuid, old, new)
            if changes:
                out[tname] = changes
        return Changeset(out)

    def replace_all(self, initial: dict[str, Any], version: int) -> Changeset:
        """Replace the whole contents with a monitor reply; the changeset records only
        what differs from before."""
        old_rows = {t: table.rows for t, table in self.tables.items()}
        for table in self.tables.values():
            table.rows = {}
            for idx in table.indexes.values():
                idx.entries.clear()
        if version == 1:
            self.apply_update1(initial)
        else:
            self.apply_update2(initial)
        out: dict[str, dict[str, RowChange]] = {}
        for tname, table in self.tables.items():
            before = old_rows[tname]
            after = table.rows
            changes: dict[str, RowChange] = {}
            for uuid, new in after.items():
                old = before.get(uuid)
                if old is None or old.data != new.data:
                    changes[uuid] = RowChange(uuid, old, new)
            for uuid, old in before.items():
                if uuid not in after:
                    changes[uuid] = RowChange(uuid, old, None)
            if changes:
                out[tname] = changes
        return Changeset(out)

    def clear(self) -> Changeset:
        out: dict[str, dict[str, RowChange]] = {}
        for tname, table in self.tables.items():
            if table.rows:
                out[tname] = {u: RowChange(u, r, None) for u, r in table.rows.items()}
            table.rows = {}
            for idx in table.indexes.values():
                idx.entries.clear()
        return Changeset(out)
