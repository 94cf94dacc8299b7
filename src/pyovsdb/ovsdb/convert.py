"""Schema conversion: the contents of a database re-expressed in a new schema (the
`convert` method, and `ovsdb-tool convert`'s replay of a file's records).

Rules kept here for `convert` (those of the real server's ovsdb_convert):
- Tables and columns the new schema drops are dropped; new ones start with defaults.
- A kept column's value is converted through its JSON form, so it must satisfy the new
  type (constraints, sizes) or the conversion fails with that error.
- Every row keeps its uuid (rows get new versions from the source database's
  sources, which the new database keeps), and the result passes the same commit checks as any
  transaction (references, garbage collection, maxRows, indexes).
- The source database is not touched.

Rules kept here for `replay` (those of the real tool's ovsdb_file_read_as_schema):
- Each transaction record of the file is applied in turn to a database of the new
  schema; tables and columns the new schema lacks are ignored, a kept column's value
  must be valid for its new type (else the error ends the conversion).
- Each record is then committed with the checks of any transaction (references,
  garbage collection, maxRows, weak references, indexes); a record that fails them ends
  the replay there, keeping what the records before it made, as the real tool does.
"""

from __future__ import annotations

from typing import Any

from .changeset import Changeset
from .database import Database
from .errors import OvsdbError
from .hashorder import shash_order, shash_walk
from .ids import UuidSource
from .row import Row
from .schema import DatabaseSchema
from .transaction import Transaction, TxnRow


def convert(src: Database, schema: DatabaseSchema) -> Database:
    """A new database with `schema` holding `src`'s rows, or OvsdbError."""
    dst = Database(schema, uuids=src.new_uuid, versions=src.new_version)
    new_version = src.new_version
    txn = Transaction(dst, [])
    for tname, ts in schema.tables.items():
        old_table = src.tables.get(tname)
        if old_table is None:
            continue
        old_cols = old_table.schema.columns
        kept = [(c, old_cols[c].type.codec, col.type.codec)
                for c, col in ts.columns.items() if c in old_cols]
        rows: dict[str, TxnRow] = {}
        for uuid, row in old_table.rows.items():
            data = ts.defaults()
            for cname, old_codec, new_codec in kept:
                value = row.data[cname]
                if old_codec.type.to_json() == new_codec.type.to_json():
                    data[cname] = value
                    continue
                try:
                    data[cname] = new_codec.from_json(old_codec.to_json(value))
                except OvsdbError as e:
                    raise OvsdbError(
                        e.tag, f"Table {tname} column {cname} row {uuid}: {e.details}"
                    ) from None
            rows[uuid] = TxnRow(None, Row(uuid, data, new_version()))
        if rows:
            txn.rows[tname] = rows
    changeset = txn.precommit()
    dst.apply(changeset)
    return dst


def replay(schema: DatabaseSchema, records: list[Any], *, uuids: UuidSource | None = None,
           versions: UuidSource | None = None) -> Database:
    """A database of `schema` made by replaying transaction `records` (a standalone
    file's, after its schema record) as the real tool's `convert` reads them; raises
    OvsdbError for a record the new schema cannot parse."""
    db = Database(schema, uuids=uuids, versions=versions)
    for rec in records:
        cs = Changeset.from_record(schema, _known_only(schema, rec),
                                   lambda t: db.tables[t].rows, versions=db.new_version)
        txn = Transaction(db, [])
        for tname, changes in cs.tables.items():
            txn.rows[tname] = {u: TxnRow(ch.old, ch.new) for u, ch in changes.items()}
        try:
            checked = txn.precommit()
        except OvsdbError:
            break
        db.apply(checked)
    return db


def _known_only(schema: DatabaseSchema, rec: Any) -> Any:
    """The record without the tables and columns `schema` lacks, its tables, rows and
    columns in the order the real tool reads them (the hash order of the JSON objects),
    so that the first value the new schema refuses is the one it names."""
    if not isinstance(rec, dict):
        return rec
    out: dict[str, Any] = {}
    for tname in shash_order(rec):
        rows = rec[tname]
        ts = schema.tables.get(tname)
        if ts is None:
            if tname.startswith("_"):
                out[tname] = rows
            continue
        if isinstance(rows, dict):
            rows = {u: {c: rows[u][c] for c in shash_order(rows[u]) if c in ts.columns}
                    if isinstance(rows[u], dict) else rows[u] for u in shash_walk(list(rows))}
        out[tname] = rows
    return out
