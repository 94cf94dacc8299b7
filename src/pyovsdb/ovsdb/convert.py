"""Schema conversion: the contents of a database re-expressed in a new schema (the
`convert` method and `ovsdb-tool convert`).

Rules kept here (those of the real server's ovsdb_convert):
- Tables and columns the new schema drops are dropped; new ones start with defaults.
- A kept column's value is converted through its JSON form, so it must satisfy the new
  type (constraints, sizes) or the conversion fails with that error.
- Every row keeps its uuid (rows get new versions from the source database's
  sources, which the new database keeps), and the result passes the same commit checks as any
  transaction (references, garbage collection, maxRows, indexes).
- The source database is not touched.
"""

from __future__ import annotations

from .database import Database
from .errors import OvsdbError
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
