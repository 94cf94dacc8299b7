"""`pyovsdb tool show-log`: a readable listing of the records of a database file, as
`ovsdb-tool show-log` prints it, for standalone and clustered files.

Rules kept here:
- The output is the real tool's, byte for byte: the same headings, the same names for
  rows (the row's "name" column if it ever had one, else the first 8 characters of its
  uuid), and the same order of tables, rows and columns, which is the order the real
  tool walks the record's JSON objects in (`table.shash_order`).
- `more` is the number of -m options: 0 lists records with their date and comment,
  1 adds the rows each transaction touched, 2 adds the columns it wrote, shown as
  `ovsdb_datum_to_string` shows them (JSON where a value does not fit its column type,
  as in diffs).
- A file whose tail is torn or corrupt is listed up to its last good record; the
  listing so far is written out before the error is raised, as the real tool prints
  it before failing.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any

from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema
from ..storage import log as ovslog
from .table import datum_to_string, json_to_string, shash_order

_INT32_MAX = 2**31 - 1


def _schema(json: Any) -> DatabaseSchema:
    return DatabaseSchema.from_json(json, allow_reserved=True)


class _Lister:
    """The state the real tool carries from record to record: the schema in force and
    the names it has given to rows."""

    def __init__(self, more: int) -> None:
        self.more = more
        self.out: list[str] = []
        self.schema: DatabaseSchema | None = None
        self.names: dict[str, str] = {}

    def w(self, text: str) -> None:
        self.out.append(text)

    def change_record(self, json: Any) -> None:
        if type(json) is not dict:
            return
        date = json.get("_date")
        if type(date) is float and date.is_integer():
            date = int(date)
        if type(date) is int:
            ms = date * 1000 if date < _INT32_MAX else date
            self.w(" " + _format_msec(ms))
        comment = json.get("_comment")
        if type(comment) is str:
            self.w(f' "{comment}"')
        if self.more > 0:
            self.db_changes(json)

    def db_changes(self, tables: dict[str, Any]) -> None:
        diff = tables.get("_is_diff") is True
        first = True
        for table in shash_order(tables):
            rows = tables[table]
            if table.startswith("_") or type(rows) is not dict:
                continue
            if first:
                self.w("\n")
                first = False
            ts = self.schema.tables.get(table) if self.schema is not None else None
            for uuid in shash_order(rows):
                columns = rows[uuid]
                old_name = self.names.get(uuid)
                new_name = None
                if type(columns) is dict and "name" in columns:
                    new_name = json_to_string(columns["name"])
                self.w(f"  table {table}")
                if old_name is None:
                    if new_name is not None:
                        self.w(f" insert row {new_name} ({uuid[:8]}):\n")
                    else:
                        self.w(f" insert row {uuid[:8]}:\n")
                else:
                    self.w(f" row {old_name} ({uuid[:8]}){' diff' if diff else ''}:\n")
                if type(columns) is dict:
                    if self.more > 1:
                        for column in shash_order(columns):
                            self.w(f"    {column}={self.value(ts, column, columns[column])}\n")
                    if new_name is not None and old_name != new_name:
                        self.names[uuid] = new_name
                    elif old_name is None:
                        self.names[uuid] = uuid[:8]
                elif columns is None:
                    self.w("    delete row\n")
                    self.names.pop(uuid, None)

    @staticmethod
    def value(ts: Any, column: str, value: Any) -> str:
        col = ts.all_columns.get(column) if ts is not None else None
        if col is not None:
            try:
                return datum_to_string(col.type, col.type.codec.from_json(value))
            except Exception:  # not a value of the column's type: show the JSON
                pass
        return json_to_string(value)

    # -- standalone ------------------------------------------------------------------

    def standalone(self, records: list[Any]) -> None:
        for i, json in enumerate(records):
            self.w(f"record {i}:")
            if i == 0:
                self.schema = _schema(json)
                s = self.schema
                self.w(f' "{s.name}" schema, version="{s.version or ""}", '
                       f'cksum="{s.cksum or ""}"\n')
            else:
                self.change_record(json)
            self.w("\n")

    # -- clustered -------------------------------------------------------------------

    def servers(self, name: str, servers: Any) -> None:
        if servers is None:
            return
        parts = []
        if type(servers) is dict:
            for sid in sorted(servers, key=lambda s: s.encode()):
                parts.append(f"{sid[:4]}({json_to_string(servers[sid])})")
        self.w(f" {name}: {', '.join(parts)}\n")

    def data(self, prefix: str, data: Any) -> None:
        if data is None:
            return
        if type(data) is not list or len(data) != 2:
            self.w(" ***invalid data***\n")
            return
        if data[0] is not None:
            s = _schema(data[0])
            self.w(f' {prefix}schema: "{s.name}", version="{s.version or ""}", '
                   f'cksum="{s.cksum or ""}"\n')
            self.schema = s
        self.change_record(data[1])

    def raft_header(self, h: dict[str, Any]) -> None:
        for member in ("server_id", "name", "local_address"):
            if member not in h:
                raise _RecordError(f"Required '{member}' member is missing.")
        self.w(f" name: \"{h['name']}'\n")
        self.w(f' local address: "{h["local_address"]}"\n')
        self.w(f" server_id: {str(h['server_id'])[:4]}\n")
        cid = h.get("cluster_id")
        if isinstance(cid, str) and cid.strip("0-"):
            self.w(f" cluster_id: {cid[:4]}\n")
        remotes = h.get("remote_addresses")
        if isinstance(remotes, list) and remotes:
            unique = list(dict.fromkeys(r for r in remotes if isinstance(r, str)))
            self.w(" remote_addresses:" + "".join(f" {r}" for r in shash_order(unique))
                   + "\n")
        snap_index = h.get("prev_index")
        if snap_index:
            self.w(f" prev_index: {snap_index}\n")
            self.w(f" prev_term: {h.get('prev_term', 0)}\n")
            self.servers("prev_servers", h.get("prev_servers"))
            eid = h.get("prev_eid")
            if isinstance(eid, str) and eid.strip("0-"):
                self.w(f" prev_eid: {eid[:4]}\n")
            self.data("prev_", h.get("prev_data"))

    def raft_record(self, r: dict[str, Any]) -> None:
        comment = r.get("comment")
        if isinstance(comment, str):
            self.w(f' comment: "{comment}"\n')
        note = r.get("note")
        if isinstance(note, str):
            self.w(f' note: "{note}"\n')
            return
        commit_index = r.get("commit_index")
        if commit_index:
            self.w(f" commit_index: {commit_index}\n")
            return
        if "term" not in r:
            raise _RecordError("Required 'term' member is missing.")
        if r["term"]:
            self.w(f" term: {r['term']}\n")
        for kind in ("leader", "vote"):
            if kind in r:
                self.w(f" {kind}: {str(r[kind])[:4]}\n")
                return
        if r.get("index"):
            self.w(f" index: {r['index']}\n")
            self.servers("servers", r.get("servers"))
            eid = r.get("eid")
            if isinstance(eid, str) and eid.strip("0-") and r.get("data") is not None:
                self.w(f" eid: {eid[:4]}\n")
            self.data("", r.get("data"))

    def clustered(self, records: list[Any]) -> None:
        for i, json in enumerate(records):
            self.w(f"record {i}:\n")
            try:
                if type(json) is not dict:
                    raise _RecordError("Object expected.")
                if i == 0:
                    self.raft_header(json)
                else:
                    self.raft_record(json)
            except _RecordError as e:
                self.w(f"syntax error: {e}\n")
            self.w("\n")


class _RecordError(Exception):
    pass


def _format_msec(ms: int) -> str:
    try:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms // 1000))
    except (OverflowError, OSError, ValueError):
        stamp = "????-??-?? ??:??:??"
    return f"{stamp}.{ms % 1000:03d}"


def show_log(path: str, more: int) -> str:
    """The listing of `path`; raises OvsdbError (after writing the listing of the good
    records to stdout) if the file cannot be read to its end."""
    res = ovslog.read_file(path)
    lister = _Lister(more)
    if res.magic == ovslog.MAGIC_CLUSTERED:
        lister.clustered(res.records)
    else:
        lister.standalone(res.records)
    text = "".join(lister.out)
    if res.error is not None:
        sys.stdout.write(text)
        sys.stdout.flush()
        raise OvsdbError("I/O error", _read_error(path, res))
    return text


_HEADER_RE = re.compile(rb"OVSDB (?:JSON|CLUSTER) (\d+) [0-9a-f]{40}\n")


def _read_error(path: str, res: ovslog.ReadResult) -> str:
    """The real tool's words for the two common failures: a file that is not a
    database, and a last record cut short by a crash."""
    if not res.records:
        return f"{path}: unexpected file format"
    try:
        with open(path, "rb") as f:
            f.seek(res.end)
            head = f.read(100)
    except OSError:
        head = b""
    m = _HEADER_RE.match(head)
    if m is not None and res.end + m.end() + int(m.group(1)) > res.size:
        return (f"{path}: error reading {m.group(1).decode()} bytes starting at offset "
                f"{res.end + m.end()} (End of file)")
    return f"{path}: {res.error}"
