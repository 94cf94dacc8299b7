"""Clustered database files ("OVSDB CLUSTER" records), as the real server keeps them.

Rules kept here:
- The file is a header record, then Raft records (term, vote, entry, commit index,
  leader, note), in the JSON forms of `raft.records`; this module frames, reads,
  appends, fsyncs and replaces, and knows nothing of Raft's rules (the core checks
  them when it restores from the records).
- Records are written in the real server's member order (`jsonorder`).
- A snapshot rewrites the whole file atomically: new header, then the records still
  needed (`storage.log`).
- A torn or corrupt tail is reported and dropped by the first write, as for standalone
  files.
- The database a file describes (for the tools) is what the core reports committed
  after restoring: the snapshot, then the data of the committed entries.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from ..ovsdb.changeset import Changeset
from ..ovsdb.database import Database
from ..ovsdb.errors import OvsdbError
from ..ovsdb.hashorder import shash_order
from ..ovsdb.schema import DatabaseSchema
from ..raft.core import RaftCore, RaftError
from ..raft.records import Header, Record, RpcError, record_from_json
from ..util.uuidgen import new_uuid, sequential_uuid
from .jsonorder import clustered_record
from .log import MAGIC_CLUSTERED, LogWriter, frame, read_file, write_new_file


def read(path: str, name: str | None = None
         ) -> tuple[Header, list[Record], int, str | None]:
    """(header, records, offset where the good part ends, problem that ended the read,
    in the real server's words). `name` is how messages name the file."""
    name = path if name is None else name
    res = read_file(path, MAGIC_CLUSTERED, name)
    if not res.records:
        raise res.problem or OvsdbError("syntax error", f"{name}: empty file")
    try:
        header = Header.from_json(res.records[0])
        records = [record_from_json(r) for r in res.records[1:]]
    except RpcError as e:
        raise OvsdbError("syntax error", f"{name}: {e}") from None
    return header, records, res.end, None if res.problem is None else str(res.problem)


class ClusteredLog:
    """An open clustered file: records are appended (and fsynced), snapshots replace it."""

    def __init__(self, path: str, end_offset: int) -> None:
        self.path = path
        self.writer = LogWriter(path, end_offset, MAGIC_CLUSTERED)

    def append(self, records: list[Record], sync: bool = True) -> None:
        data = b"".join(frame(clustered_record(r.to_json()), MAGIC_CLUSTERED)
                        for r in records)
        if data:
            self.writer.append_framed(data)
        if sync:
            self.writer.sync()

    def replace(self, header: Header, records: list[Record]) -> None:
        self.writer.replace([clustered_record(header.to_json()),
                             *(clustered_record(r.to_json()) for r in records)])

    @property
    def size(self) -> int:
        return self.writer.offset

    def close(self) -> None:
        self.writer.close()


def create(path: str, header: Header, records: list[dict[str, Any]] | None = None) -> None:
    write_new_file(path, [clustered_record(header.to_json()),
                          *(clustered_record(r) for r in records or [])], MAGIC_CLUSTERED)


def is_clustered(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(14) == b"OVSDB CLUSTER "
    except OSError:
        return False


def schema_for_cluster(schema_json: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The schema as a cluster stores it: clusters have no ephemeral columns, so they are
    made persistent (the real tool warns about it). Returns (schema, changed columns as
    "table.column"), the changed columns in the order the real tool meets them (its
    warning names the last one): tables and columns in `shash` order, each table's
    columns inserted after `_uuid` and `_version`."""
    out = copy.deepcopy(schema_json)
    changed = []
    tables = out.get("tables", {})
    for tname in shash_order(tables):
        columns = tables[tname].get("columns", {})
        for cname in shash_order(["_uuid", "_version", *shash_order(columns)]):
            c = columns.get(cname)
            if isinstance(c, dict) and c.pop("ephemeral", False):
                changed.append(f"{tname}.{cname}")
    return out, changed


def persist_ephemeral_warning(path: str, schema_json: dict[str, Any], changed: list[str]
                              ) -> str | None:
    """What the real tools warn (module "ovsdb") when `schema_for_cluster` changed the
    columns `changed` of the schema read from `path`; None if it changed none."""
    if not changed:
        return None
    table, _, column = changed[-1].partition(".")
    return (f"{path}: changed {len(changed)} columns in '{schema_json.get('name')}' "
            f"database from ephemeral to persistent, including '{column}' column in "
            f"'{table}' table, because clusters do not support ephemeral columns")


def apply_entry(db: Database | None, data: Any) -> Database:
    """Apply one entry's `[schema-or-null, txn-or-null]`; a schema starts a new database
    (conversion). Returns the database now current."""
    new_schema, txn = data
    if new_schema is not None:
        db = Database(DatabaseSchema.from_json(new_schema), uuids=new_uuid,
                      versions=sequential_uuid)
        db.schema.json = new_schema
    if db is None:
        raise OvsdbError("syntax error", "entry changes a database that has no schema yet")
    if txn:
        cur = db
        db.apply(Changeset.from_record(db.schema, txn, lambda t: cur.tables[t].rows,
                                       versions=cur.new_version))
    return db


def build_database(header: Header, records: list[Record]) -> Database:
    """The database a clustered file describes, as of its commit index."""
    if header.snapshot is None:
        raise OvsdbError("syntax error", "database has no snapshot yet (not joined)")
    try:
        core = RaftCore.restore(header.sid, header.local_address, header.cid, header.snapshot,
                                records, remote_addresses=[], rng=random.Random(0))
    except RaftError as e:
        raise OvsdbError("syntax error", str(e)) from None
    db: Database | None = None
    for c in core.ready().committed:
        if c.data is not None:
            db = apply_entry(db, c.data)
    if db is None:
        raise OvsdbError("syntax error", "database has no schema")
    return db
