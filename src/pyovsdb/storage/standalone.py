"""Standalone database files, in the real ovsdb-server's format.

Rules kept here:
- Record 0 is the schema; every later record is one committed transaction in OVS's
  transaction-record form (see `ovsdb.changeset`). A compacted file holds the schema and
  a single record with every row in full (no `_is_diff`), as the real tools write it.
- Reading keeps what can be read, as the real server does: a record the schema cannot
  take (an unknown table or column) is reported and dropped and the later ones are
  read; a torn or corrupt record ends the read (`storage.log`). Problems are worded as
  the real server's (`syntax error: NAME: parse error at offset N in header line
  "..."`, `syntax "{...}": unknown table: No table named X.`). Unlike the real server,
  the next write goes after the last good record, not over the record after a dropped
  one.
- A transaction is acknowledged only after its record is written; with `durable` (or
  when the storage was opened with `sync_always`) only after it is fsynced.
- After a failed write or fsync the storage refuses every later commit: the file may
  end in a torn record, and memory holds a transaction the file lacks, so appending
  anything more would store diffs against a state the file cannot rebuild.
- A failed compaction leaves the old file as it was and is retried after a tenth of
  the minimum interval, as the real server does.
- Records are written with the real server's member order, byte for byte
  (`jsonorder`): a schema record is the normalized schema.
- Compaction rewrites the file atomically (see `storage.log`). The policy is the real
  server's: no sooner than `min_interval` (randomized 10-20 minutes) after the previous
  one; then due if at least 100 records were written and the file is over `min_growth`
  (10 MB) and `ratio` (2) times its size after the last compaction; and due anyway, if
  anything was written, once `max_interval` (24 hours) has passed. The caller owns the
  clock and asks `should_compact(now)`.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from typing import Any

from ..ovsdb.changeset import Changeset
from ..ovsdb.database import Database
from ..ovsdb.errors import OvsdbError, ovs_json_string
from ..ovsdb.schema import DatabaseSchema
from ..util import batch
from ..util.uuidgen import new_uuid, sequential_uuid
from . import jsonorder
from .log import (
    MAGIC_STANDALONE,
    LogWriter,
    ReadResult,
    frame,
    parse_records,
    read_file,
    write_new_file,
)


def snapshot_record(db: Database, comment: str, date_ms: int | None = None,
                    is_diff: bool = False) -> dict[str, Any]:
    """All rows of `db` as one transaction record of inserts, members in the real
    server's order (`jsonorder`). The real server marks its online snapshots `_is_diff`
    (harmless: every row is new), ovsdb-tool does not."""
    rec: dict[str, Any] = {}
    for tname in jsonorder.snapshot_tables(db.schema):
        table = db.tables[tname]
        if not table.rows:
            continue
        cols = [
            (cname, col.type.codec)
            for cname, col in table.schema.columns.items()
            if not col.ephemeral
        ]
        rows: dict[str, Any] = {}
        for uuid, row in table.rows.items():
            data = row.data
            out: dict[str, Any] = {}
            for cname, codec in cols:
                v = data[cname]
                if v != codec.default:
                    out[cname] = codec.to_json(v)
            rows[uuid] = out
        rec[tname] = rows
    rec["_comment"] = comment
    if is_diff:
        rec["_is_diff"] = True
    rec["_date"] = int(time.time() * 1000) if date_ms is None else date_ms
    return jsonorder.txn_record(rec, db.schema)


def create(path: str, schema_json: dict[str, Any]) -> None:
    schema = DatabaseSchema.from_json(schema_json)  # validate before writing anything
    write_new_file(path, [jsonorder.schema_record(schema)])


def _read_standalone(path: str, name: str, data: bytes | None = None) -> ReadResult:
    """A standalone file's records (ovsdb_storage_open_standalone): a clustered file
    is refused, a file without a schema record is an error. `data`, if given, is the
    file's contents (read from a stream)."""
    if data is None:
        res = read_file(path, name=name)
    elif not data:
        raise OvsdbError("ovsdb error", f"{name}: cannot identify file type")
    else:
        res = parse_records(data, None, name)
    if res.magic is not None and res.magic != MAGIC_STANDALONE:
        raise OvsdbError("ovsdb error", f"{name}: cannot apply this operation to "
                                        "clustered database file")
    if not res.records:
        raise res.problem or OvsdbError("syntax error", f"{name}: database file is empty")
    return res


def read_schema(path: str) -> DatabaseSchema:
    """The schema of a standalone file (its first record)."""
    return DatabaseSchema.from_json(_read_standalone(path, path).records[0])


def load_as_schema(path: str, schema: DatabaseSchema) -> Database:
    """A standalone file read as `schema` (`ovsdb-tool convert`): its own schema record
    is checked and then ignored, its transactions replayed (`ovsdb.convert.replay`).
    Anything unreadable is fatal, as in the real tool."""
    from ..ovsdb.convert import replay

    res = _read_standalone(path, path)
    DatabaseSchema.from_json(res.records[0])
    if res.problem is not None:
        raise res.problem
    return replay(schema, res.records[1:], uuids=new_uuid, versions=sequential_uuid)


def load(path: str, name: str | None = None, *, skip_bad: bool = False
         ) -> tuple[Database, ReadResult, list[str]]:
    """Read a standalone file: the database, the raw read result, and the problems met,
    each in the real server's words. `name` is how messages name the file (as the user
    gave it; default `path`).

    A record that is not a valid transaction for the schema (say, it names a table the
    schema lacks) is dropped and reported with `skip_bad`, as the real server does, and
    the later records are still read; otherwise it is fatal, as in the real tool."""
    name = path if name is None else name
    return _load(_read_standalone(path, name), skip_bad)


def load_data(data: bytes, name: str) -> Database:
    """The database in a standalone file's contents (read from a stream: `ovsdb-client
    restore`); anything unreadable is fatal."""
    db, res, _ = _load(_read_standalone(name, name, data), False)
    if res.problem is not None:
        raise res.problem
    return db


def _load(res: ReadResult, skip_bad: bool) -> tuple[Database, ReadResult, list[str]]:
    schema = DatabaseSchema.from_json(res.records[0])
    schema.json = res.records[0]
    db = Database(schema, uuids=new_uuid, versions=sequential_uuid)
    problems: list[str] = []
    for rec in res.records[1:]:
        try:
            cs = Changeset.from_record(schema, rec, lambda t: db.tables[t].rows,
                                       versions=db.new_version)
        except OvsdbError as e:
            error = record_error(rec, e)
            if not skip_bad:
                raise error from None
            problems.append(str(error))
            continue
        db.apply(cs)
    if res.problem is not None:
        problems.append(str(res.problem))
    return db, res, problems


class _RecordError(OvsdbError):
    """A record the schema cannot take, worded as the real server's syntax errors that
    quote the JSON they are about."""

    def __str__(self) -> str:
        return f'syntax "{ovs_json_string(self.syntax)}": {self.tag}: {self.details}'


def record_error(rec: Any, e: OvsdbError) -> OvsdbError:
    details = e.details or ""
    tag = e.tag
    if details.startswith("No table named "):
        tag = "unknown table"
    elif details.startswith("No column "):
        tag = "unknown column"
    return _RecordError(tag, details, syntax=rec)


class StandaloneStorage:
    """An open standalone file that transactions are appended to."""

    def __init__(
        self,
        path: str,
        db: Database,
        end_offset: int,
        *,
        n_records: int,
        sync_always: bool = False,
        min_growth: int = 10 * 1024 * 1024,
        ratio: float = 2.0,
        min_interval: float | None = None,
        max_interval: float = 24 * 3600.0,
        min_records: int = 100,
        now: float | None = None,
    ) -> None:
        self.path = path
        self.db = db
        self.writer = LogWriter(path, end_offset)
        self.compactions = 0  # since the start (metrics)
        self.sync_always = sync_always
        self.min_growth = min_growth
        self.ratio = ratio
        self.min_interval = (
            min_interval if min_interval is not None else random.uniform(600.0, 1200.0)
        )
        self.max_interval = max_interval
        self.min_records = min_records
        self.snapshot_size = end_offset if n_records <= 2 else 0
        self.last_compaction = time.monotonic() if now is None else now
        self.n_records = n_records
        self.records_since = 0
        self.pending: list[bytes] = []
        self.need_sync = False
        self.failed: OSError | None = None
        self.on_write_error: Callable[[str, OSError], None] | None = None

    @classmethod
    def open(cls, path: str, name: str | None = None, **kwargs: Any
             ) -> tuple[StandaloneStorage, list[str]]:
        """The open storage and the problems met reading it, in the real server's words
        (it logs each as an error and goes on with what it could read)."""
        db, res, problems = load(path, name, skip_bad=True)
        st = cls(path, db, res.end, n_records=len(res.records), **kwargs)
        return st, problems

    @property
    def size(self) -> int:
        return self.writer.offset

    def commit(self, cs: Changeset, durable: bool = False, date_ms: int | None = None) -> None:
        """Write one transaction record (fsynced if durable). Inside an output batch the
        write is deferred to the batch's end, before any reply or update leaves."""
        if self.writer.fd < 0 or self.failed is not None:
            # Refused before anything is applied: the caller's transaction fails whole.
            why = "is closed" if self.failed is None else f"failed ({self.failed.strerror})"
            raise OvsdbError("I/O error", f"{self.path}: writing the database file {why}")
        if cs.date is None:
            cs.date = int(time.time() * 1000) if date_ms is None else date_ms
        record = cs.to_record(self.db.schema)
        if not any(not k.startswith("_") for k in record):
            return  # only ephemeral columns changed: nothing to store
        data = frame(jsonorder.txn_record(record, self.db.schema))
        self.n_records += 1
        self.records_since += 1
        self.need_sync = self.need_sync or durable or self.sync_always
        if batch.active():
            if not self.pending:
                batch.defer_storage(self, self.flush)
            self.pending.append(data)
        else:
            self.pending.append(data)
            self.flush()

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        try:
            if pending:
                self.writer.append_framed(
                    pending[0] if len(pending) == 1 else b"".join(pending))
            if self.need_sync:
                self.need_sync = False
                self.writer.sync()
        except OSError as e:
            self.failed = e
            if self.on_write_error is None:
                raise
            self.on_write_error(self.path, e)

    def sync(self) -> None:
        self.flush()
        self.writer.sync()

    def should_compact(self, now: float) -> bool:
        elapsed = now - self.last_compaction
        if elapsed < self.min_interval or not self.records_since:
            return False
        if elapsed >= self.max_interval:
            return True
        size = self.writer.offset
        return (self.records_since >= self.min_records and size >= self.min_growth
                and size >= self.ratio * max(self.snapshot_size, 1))

    def compact(self, now: float | None = None, comment: str = "compacting database online"
                ) -> None:
        self.flush()
        if self.failed is not None:
            raise OvsdbError("I/O error", f"{self.path}: writing the database file failed "
                                          f"({self.failed.strerror})")
        now = time.monotonic() if now is None else now
        schema_json = jsonorder.schema_record(self.db.schema)
        try:
            self.writer.replace([schema_json, snapshot_record(self.db, comment,
                                                              is_diff=True)])
        except OSError:
            self.last_compaction = now - self.min_interval * 0.9  # retry in a tenth
            raise
        self.snapshot_size = self.writer.offset
        self.n_records = 2
        self.records_since = 0
        self.last_compaction = now
        self.compactions += 1

    def replace_db(self, db: Database) -> None:
        """Rewrite the file for a new database (schema conversion), atomically."""
        self.flush()
        schema_json = jsonorder.schema_record(db.schema)
        self.writer.replace([schema_json, snapshot_record(db, "converted by ovsdb-server",
                                                          is_diff=True)])
        self.db = db
        self.snapshot_size = self.writer.offset
        self.n_records = 2
        self.records_since = 0

    def close(self) -> None:
        self.flush()
        self.writer.close()


def file_size(path: str) -> int:
    return os.stat(path).st_size
