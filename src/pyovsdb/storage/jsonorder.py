"""The member order of the JSON objects that the real server writes to database files.

The real server serializes a JSON object by walking its hash table (lib/shash.c), so the
members come out in `hashorder.shash_order` of the order they were inserted. Its readers
do not care, but tools and scripts that compare files, or that strip `"_is_diff":true,`
by text, do; so we write the same bytes.

Rules kept here:
- Only the order of members changes, never the JSON value.
- Standalone transaction records: inserted as the real server builds them (the tables in
  the order the transaction touched them, then `_comment`, `_is_diff`, `_date`; each
  table's rows in the order of the transaction's row hash map (`uuid_hmap_order` of the
  order touched); each row's columns in the real server's hash order
  of the table's columns), then written in hash order at every level.
- Snapshot records (compaction, conversion, `tool compact`): tables in the order of the
  database's table hash, rows in the order of the table's row hash map (replayed from
  the order the rows went into the table), then as above.
- Schema records: the normalized schema, inserted in the real server's order (name,
  version, cksum, tables; a table's isRoot, columns, maxRows, indexes; a column's
  mutable, ephemeral, type), every object in hash order.
- Clustered records: the record's members in hash order; the database contents they
  carry (`data`, `prev_data`) with every object's members sorted by name, because the
  real server serializes entry data sorted before it reaches the log; a joiner's
  `remote_addresses` in the hash order of the set the real tool keeps them in.
- Hash collisions inside a bucket depend on insertion order; where ours is not the real
  server's (rows a transaction touched only through references, a table that lost rows
  and got new ones), the bytes may differ in the order of colliding members only.
"""

from __future__ import annotations

import functools
from typing import Any

import orjson

from ..ovsdb.hashorder import hmap_order, shash_order, shash_walk, table_columns_order
from ..ovsdb.schema import DatabaseSchema, TableSchema

_ANNOTATIONS = ("_comment", "_is_diff", "_date")


def hash_ordered(value: Any) -> Any:
    """`value` with every object's members in hash order of their current order."""
    if isinstance(value, dict):
        if len(value) <= 1:
            return {k: hash_ordered(v) for k, v in value.items()}
        return {k: hash_ordered(value[k]) for k in shash_order(value)}
    if isinstance(value, list):
        return [hash_ordered(v) for v in value]
    return value


def sorted_fragment(value: Any) -> orjson.Fragment:
    """`value` serialized with members sorted, to embed in a record."""
    return orjson.Fragment(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


@functools.lru_cache(maxsize=4096)
def _row_member_order(ts: TableSchema, present: frozenset[str]) -> tuple[str, ...]:
    return shash_order([c for c in table_columns_order(ts) if c in present])


def uuid_hmap_order(uuids: list[str]) -> list[str]:
    """The order the real server walks a hash map of rows in (lib/hmap.c keyed by
    `uuid_hash`, the UUID's first 32 bits), given the order the rows went in: a
    transaction's rows in the order it touched them, a table's in the order they
    were inserted."""
    return hmap_order((int(u[:8], 16), u) for u in uuids)


def _ordered_rows(ts: TableSchema | None, rows: dict[str, Any]) -> dict[str, Any]:
    # The rows went into the table's JSON object in the order of the transaction's (or
    # the table's) row hash map, and come out in that object's hash order.
    order = rows if len(rows) <= 1 else shash_walk(uuid_hmap_order(list(rows)))
    out: dict[str, Any] = {}
    for uuid in order:
        row = rows[uuid]
        if isinstance(row, dict) and len(row) > 1 and ts is not None:
            keys = _row_member_order(ts, frozenset(row))
            if len(keys) == len(row):
                row = {c: row[c] for c in keys}
            else:  # a member that is not a column: keep it, in plain hash order
                row = {c: row[c] for c in shash_order(row)}
        out[uuid] = row
    return out


def txn_record(record: dict[str, Any], schema: DatabaseSchema | None) -> dict[str, Any]:
    """A transaction (or snapshot) record with its members in the real server's order."""
    tables = schema.tables if schema is not None else {}
    inserted = [k for k in record if k not in _ANNOTATIONS]
    inserted += [k for k in _ANNOTATIONS if k in record]
    out: dict[str, Any] = {}
    for key in shash_order(inserted):
        value = record[key]
        if key not in _ANNOTATIONS and isinstance(value, dict):
            value = _ordered_rows(tables.get(key), value)
        out[key] = value
    return out


def _schema_tables(schema: DatabaseSchema) -> tuple[str, ...]:
    # The schema's table hash, filled in the hash order of the schema's JSON object.
    return shash_order(shash_order(schema.tables))


def snapshot_tables(schema: DatabaseSchema) -> tuple[str, ...]:
    """The order the real server walks a database's tables in: its table hash, filled
    in the order of the schema's table hash."""
    return shash_order(_schema_tables(schema))


def schema_record(schema: DatabaseSchema) -> dict[str, Any]:
    """The normalized schema as the real server writes it to a file."""
    norm = schema.to_json()
    out: dict[str, Any] = {}
    for key in ("name", "version", "cksum"):
        if key in norm:
            out[key] = norm[key]
    tables: dict[str, Any] = {}
    for tname in _schema_tables(schema):
        tjson = norm["tables"][tname]
        ts = schema.tables[tname]
        t: dict[str, Any] = {}
        if "isRoot" in tjson:
            t["isRoot"] = tjson["isRoot"]
        cols = tjson["columns"]
        t["columns"] = {
            c: {k: cols[c][k] for k in ("mutable", "ephemeral", "type") if k in cols[c]}
            for c in table_columns_order(ts) if c in cols
        }
        for key in ("maxRows", "indexes"):
            if key in tjson:
                t[key] = tjson[key]
        tables[tname] = t
    out["tables"] = tables
    return hash_ordered(out)


_DATA_MEMBERS = ("data", "prev_data")


def clustered_record(record: dict[str, Any]) -> dict[str, Any]:
    """A clustered file's record (header or Raft record) in the real server's order."""
    out: dict[str, Any] = {}
    for key in shash_order(record):
        value = record[key]
        if key in _DATA_MEMBERS:
            out[key] = sorted_fragment(value)
        elif key == "remote_addresses" and isinstance(value, list):
            # A set of strings (lib/sset.c), listed in its hash order.
            out[key] = list(shash_order(dict.fromkeys(value)))
        else:
            out[key] = hash_ordered(value)
    return out
