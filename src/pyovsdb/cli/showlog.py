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

import sys
import time
from typing import Any

from ..ovsdb.datum import is_uuid_string
from ..ovsdb.schema import DatabaseSchema
from ..storage import log as ovslog
from ..util.ovshash import shash_walk
from ..util.ovsjson import json_to_string, shash_order
from .table import datum_to_string

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
            for uuid in shash_walk(list(rows)):
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

    def raft_header(self, json: Any) -> None:
        p = _Parser(json, "raft header")
        sid = p.uuid("server_id")
        name = p.member("name", str)
        local = p.member("local_address", str)
        remotes = p.member("remote_addresses", list, optional=True)
        joining = remotes is not None
        addresses: list[str] = []
        snap_index = snap_term = 0
        servers = data = snap_eid = None
        if joining:
            for a in remotes:
                if not isinstance(a, str):
                    p.fail("address is not a JSON string")
                elif a not in addresses:
                    addresses.append(a)
            if local in addresses:
                addresses.remove(local)
                if not addresses:
                    p.fail("at least one remote address (other than the local address) "
                           "is required")
        else:
            servers = p.member("prev_servers", dict)
            snap_index = p.member("prev_index", int, optional=True) or 0
            if snap_index:
                data = p.member("prev_data", object)
                snap_eid = p.uuid("prev_eid")
                snap_term = p.member("prev_term", int) or 0
                p.member("prev_election_timer", int, optional=True)
        cid = p.uuid("cluster_id", optional=joining)
        p.finish()

        self.w(f" name: \"{name}'\n")
        self.w(f' local address: "{local}"\n')
        self.w(f" server_id: {sid[:4] if sid else ''}\n")
        if cid and cid.strip("0-"):
            self.w(f" cluster_id: {cid[:4]}\n")
        if addresses:
            self.w(" remote_addresses:" + "".join(f" {a}" for a in shash_order(addresses))
                   + "\n")
        if snap_index:
            self.w(f" prev_index: {snap_index}\n")
            self.w(f" prev_term: {snap_term}\n")
            self.servers("prev_servers", servers)
            if snap_eid and snap_eid.strip("0-"):
                self.w(f" prev_eid: {snap_eid[:4]}\n")
            self.data("prev_", data)

    def raft_record(self, json: Any) -> None:
        p = _Parser(json, "raft log record")
        comment = p.member("comment", str, optional=True)
        note = p.member("note", str, optional=True)
        kind = "note" if note is not None else None
        commit_index = term = index = 0
        sid = None
        servers = data = eid = None
        if kind is None:
            commit_index = p.member("commit_index", int, optional=True) or 0
            if commit_index:
                kind = "commit_index"
        if kind is None:
            term = p.member("term", int) or 0
            for member in ("leader", "vote"):
                sid = p.uuid(member, optional=True)
                if sid is not None:
                    kind = member
                    if not sid.strip("0-"):
                        p.fail(f"record {'says leader is' if member == 'leader' else 'votes for'}"
                               " all-zeros SID")
                    break
        if kind is None:
            index = p.member("index", int, optional=True) or 0
            if index:
                kind = "entry"
                servers = p.member("servers", dict, optional=True)
                data = p.member("data", (dict, list), optional=True)
                eid = p.uuid("eid") if data is not None else None
                p.member("election_timer", int, optional=True)
        p.finish()

        if comment is not None:
            self.w(f' comment: "{comment}"\n')
        if term:
            self.w(f" term: {term}\n")
        if kind == "entry":
            self.w(f" index: {index}\n")
            self.servers("servers", servers)
            if eid and eid.strip("0-"):
                self.w(f" eid: {eid[:4]}\n")
            self.data("", data)
        elif kind in ("vote", "leader"):
            self.w(f" {kind}: {sid[:4] if sid else ''}\n")
        elif kind == "note":
            self.w(f' note: "{note}"\n')
        elif kind == "commit_index":
            self.w(f" commit_index: {commit_index}\n")

    def clustered(self, records: list[Any]) -> None:
        for i, json in enumerate(records):
            self.w(f"record {i}:\n")
            try:
                if i == 0:
                    self.raft_header(json)
                else:
                    self.raft_record(json)
            except _RecordError as e:
                self.w(f"{e}\n")
            self.w("\n")


class _Parser:
    """OVS's `ovsdb_parser` over one raft record: members are looked up in the order
    the real tool looks them up, the first problem wins, and members nobody looked up
    are an error, so a malformed record is reported in the real tool's words."""

    def __init__(self, json: Any, what: str) -> None:
        self.json = json
        self.what = what
        self.used: set[str] = set()
        self.error: str | None = None
        if type(json) is not dict:
            self.fail("Object expected.")

    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = message

    def member(self, name: str, kinds: Any, optional: bool = False) -> Any:
        if type(self.json) is not dict:
            return None
        if name not in self.json:
            if not optional:
                self.fail(f"Required '{name}' member is missing.")
            return None
        value = self.json[name]
        ok = value is not None if kinds is object else (
            isinstance(value, kinds) and not (kinds is int and isinstance(value, bool)))
        if not ok:
            self.fail(f"Type mismatch for member '{name}'.")
            return None
        self.used.add(name)
        return value

    def uuid(self, name: str, optional: bool = False) -> str | None:
        s = self.member(name, str, optional)
        if s is None:
            return None
        if not is_uuid_string(s):
            self.fail(f"{name} is not a valid UUID")
            return None
        return s.lower()

    def finish(self) -> None:
        if self.error is None and type(self.json) is dict:
            unused = [k for k in shash_order(self.json) if k not in self.used]
            if len(unused) > 1:
                s = "s" if len(unused) > 2 else ""
                self.fail(f"Member '{unused[0]}' and {len(unused) - 1} other member{s} "
                          "are present but not allowed here.")
            elif unused:
                self.fail(f"Member '{unused[0]}' is present but not allowed here.")
        if self.error is not None:
            raise _RecordError(f'syntax "{json_to_string(self.json)}": syntax error: '
                               f"Parsing {self.what} failed: {self.error}")


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
    records = res.records
    error = res.problem
    lister = _Lister(more)
    if res.magic == ovslog.MAGIC_CLUSTERED:
        lister.clustered(records)
    else:
        lister.standalone(records)
    text = "".join(lister.out)
    if error is not None:
        sys.stdout.write(text)
        sys.stdout.flush()
        raise error
    return text
