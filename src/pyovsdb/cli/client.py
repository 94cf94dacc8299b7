"""`pyovsdb client`: a drop-in for `ovsdb-client`, the command-line OVSDB client.

Rules kept here:
- Same commands, arguments, options, defaults and output as ovsdb-client 3.1. SERVER
  and DATABASE are optional leading arguments: the first argument is a SERVER when
  there are more arguments than the command needs and it starts with a letter and
  holds a ':'; DATABASE is taken from the next argument only if the server has a
  database of that name, else it is Open_vSwitch if served, else the server's only
  database whose name does not start with '_'.
- Output is what the real tool prints for the same replies, including the order of
  rows and columns: `dump` sorts, the rest follow the real tool's hash-table order
  (see `table`), so scripts and tests can compare the two tools' output verbatim.
- `query` runs the transaction with an "abort" operation appended, so the server
  refuses to commit anything, and drops the "aborted" result, as the real tool does.
- Monitors print each update as soon as it arrives (stdout is flushed after each) and
  run until killed or until the connection closes.
- Every failure is one line `pyovsdb client: ...` on stderr and exit status 1; a
  malformed part of an update is reported the same way but the monitor goes on, as
  the real tool's does. `-t SECS` ends the process by SIGALRM, as the real tool's.
- Where the real tool would crash or hang (an assertion on a bad argument, a monitor
  request the server rejects), we fail with one line instead.
- The commands that manage a database as a whole (`convert`, `needs-conversion`,
  `wait`, `backup`, `restore`) live in `client_admin`, the lock commands in
  `client_lock`; they are imported only when run.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
from typing import Any, NoReturn

import orjson

from .. import __version__
from ..jsonrpc import tls
from ..jsonrpc.client import Client, RpcError
from ..ovsdb.condition import parse_monitor_where
from ..ovsdb.datum import is_uuid_string
from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema, TableSchema
from ..util import daemon, vlog
from ..util.ovsjson import json_to_string, shash_order
from . import options as opt
from .errortext import error_to_string
from .table import (
    CELL_FORMATS,
    FORMATS,
    Cell,
    Printer,
    Style,
    Table,
    datum_sort_key,
    datum_to_json,
    relaxed_type,
    type_to_json,
)

PROGRAM = "pyovsdb client"

USAGE = """\
{prog}: Open vSwitch database JSON-RPC client
usage: {prog} [OPTIONS] COMMAND [ARG...]

Valid commands are:

  list-dbs [SERVER]
    list databases available on SERVER

  get-schema [SERVER] [DATABASE]
    retrieve schema for DATABASE from SERVER

  get-schema-version [SERVER] [DATABASE]
    retrieve schema for DATABASE from SERVER and report only its
    version number on stdout

  get-schema-cksum [SERVER] [DATABASE]
    retrieve schema for DATABASE from SERVER and report only its
    checksum on stdout

  list-tables [SERVER] [DATABASE]
    list tables for DATABASE on SERVER

  list-columns [SERVER] [DATABASE] [TABLE]
    list columns in TABLE (or all tables) in DATABASE on SERVER

  transact [SERVER] TRANSACTION
    run TRANSACTION (params for "transact" request) on SERVER
    and print the results as JSON on stdout

  query [SERVER] TRANSACTION
    run TRANSACTION (params for "transact" request) on SERVER,
    as read-only, and print the results as JSON on stdout

  monitor [SERVER] [DATABASE] TABLE [COLUMN,...]...
    monitor contents of COLUMNs in TABLE in DATABASE on SERVER.
    COLUMNs may include !initial, !insert, !delete, !modify
    to avoid seeing the specified kinds of changes.

  monitor-cond [SERVER] [DATABASE] CONDITION TABLE [COLUMN,...]...
    monitor contents that match CONDITION of COLUMNs in TABLE in
    DATABASE on SERVER.
    COLUMNs may include !initial, !insert, !delete, !modify
    to avoid seeing the specified kinds of changes.

  monitor-cond-since [SERVER] [DATABASE] [LASTID] CONDITION TABLE [COLUMN,...]...
    monitor contents that match CONDITION of COLUMNs in TABLE in
    DATABASE on SERVER, since change after LASTID.
    LASTID specifies transaction ID after which the monitoring
    starts, which works only for cluster mode. If ignored, it
    defaults to an all-zero uuid.
    Other arguments are the same as in monitor-cond.

  convert [SERVER] SCHEMA
    convert database on SERVER named in SCHEMA to SCHEMA.

  needs-conversion [SERVER] SCHEMA
    tests whether SCHEMA's db on SERVER needs conversion.

  monitor [SERVER] [DATABASE] ALL
    monitor all changes to all columns in all tables

  wait [SERVER] DATABASE STATE
    wait until DATABASE reaches STATE ("added" or "connected" or "removed")
    in DATBASE on SERVER.

  dump [SERVER] [DATABASE] [TABLE [COLUMN]...]
    dump contents of COLUMNs, TABLE (or all tables) in DATABASE
    on SERVER to stdout

  backup [SERVER] [DATABASE] > SNAPSHOT
    dump database contents in the form of a database file

  [--force] restore [SERVER] [DATABASE] < SNAPSHOT
    restore database contents from a database file

  lock [SERVER] LOCK
    create or wait for LOCK in SERVER

  steal [SERVER] LOCK
    steal LOCK from SERVER

  unlock [SERVER] LOCK
    unlock LOCK from SERVER

The default SERVER is unix:{rundir}/db.sock.
The default DATABASE is Open_vSwitch.

Active SERVER connection methods:
  tcp:HOST:PORT           PORT at remote HOST
  unix:FILE               Unix domain socket named FILE

Output formatting options:
  -f, --format=FORMAT         set output formatting to FORMAT
                              ("table", "list", "html", "csv", or "json")
  -d, --data=FORMAT           set table cell output formatting to
                              FORMAT ("string", "bare", or "json")
  --no-headings               omit table heading row
  --pretty                    pretty-print JSON in output
  --bare                      equivalent to "--format=list --data=bare --no-headings"
  --timestamp                 timestamp "monitor" output
Daemon options (lock, steal, unlock):
  --detach                run in background as daemon
  --no-chdir              do not chdir to '/'
  --pidfile[=FILE]        create pidfile (default: {rundir}/ovsdb-client.pid)
  --overwrite-pidfile     with --pidfile, start even if already running

Logging options:
  -vSPEC, --verbose=SPEC   set logging levels
  -v, --verbose            set maximum verbosity level

Other options:
  -t, --timeout=SECS          limits {prog} runtime to
                              approximately SECS seconds.
  -h, --help                  display this help message
  -V, --version               display version information
"""

LONG = {
    "help": opt.NONE,
    "version": opt.NONE,
    "timestamp": opt.NONE,
    "force": opt.NONE,
    "timeout": opt.REQUIRED,
    "db-change-aware": opt.NONE,
    "no-db-change-aware": opt.NONE,
    "leader-only": opt.NONE,
    "no-leader-only": opt.NONE,
    "verbose": opt.OPTIONAL,
    "log-file": opt.OPTIONAL,
    "syslog-target": opt.REQUIRED,
    "syslog-method": opt.REQUIRED,
    "detach": opt.NONE,
    "no-chdir": opt.NONE,
    "no-self-confinement": opt.NONE,
    "pidfile": opt.OPTIONAL,
    "overwrite-pidfile": opt.NONE,
    "monitor": opt.NONE,
    "user": opt.REQUIRED,
    "bootstrap-ca-cert": opt.REQUIRED,
    "private-key": opt.REQUIRED,
    "certificate": opt.REQUIRED,
    "ca-cert": opt.REQUIRED,
    "ssl-protocols": opt.REQUIRED,
    "ssl-ciphers": opt.REQUIRED,
    "format": opt.REQUIRED,
    "data": opt.REQUIRED,
    "no-headings": opt.NONE,
    "pretty": opt.NONE,
    "bare": opt.NONE,
    "record": opt.OPTIONAL,
    "replay": opt.OPTIONAL,
}
SHORT = {
    "h": ("help", opt.NONE),
    "V": ("version", opt.NONE),
    "t": ("timeout", opt.REQUIRED),
    "v": ("verbose", opt.OPTIONAL),
    "f": ("format", opt.REQUIRED),
    "d": ("data", opt.REQUIRED),
    "p": ("private-key", opt.REQUIRED),
    "c": ("certificate", opt.REQUIRED),
    "C": ("ca-cert", opt.REQUIRED),
}
# Options that need machinery we do not have; accepted by the real tool.
UNSUPPORTED = ("monitor", "record", "replay", "user")
# Commands that run as a daemon with --detach (the real monitors do too).
DETACHABLE = ("lock", "steal", "unlock")

NEED_NONE, NEED_RPC, NEED_DATABASE = "none", "rpc", "database"
UUID_ZERO = "00000000-0000-0000-0000-000000000000"


class Fatal(Exception):
    """Ends the command: the message is printed as one line on stderr."""


def fatal(message: str) -> NoReturn:
    raise Fatal(message)


def warn(message: str) -> None:
    """A non-fatal complaint (the real tool's `ovs_error`)."""
    sys.stdout.flush()
    print(f"{PROGRAM}: {message}", file=sys.stderr, flush=True)


class Context:
    """Options of this run, and the printer shared by every table it prints."""

    def __init__(self, parsed: opt.Parsed) -> None:
        self.parsed = parsed
        self.style = Style()
        self.timestamp = False
        self.force = False
        self.db_change_aware = -1
        self.timeout = 0
        for name, value in parsed.options:
            if name == "format":
                if value not in FORMATS:
                    fatal(f'unknown output format "{value}"')
                self.style.format = value
            elif name == "data":
                if value not in CELL_FORMATS:
                    fatal(f'unknown data format "{value}"')
                self.style.cell_format = value
            elif name == "no-headings":
                self.style.headings = False
            elif name == "pretty":
                self.style.pretty = True
            elif name == "bare":
                self.style.format, self.style.cell_format = "list", "bare"
                self.style.headings = False
            elif name == "timestamp":
                self.timestamp = True
            elif name == "force":
                self.force = True
            elif name == "verbose":
                try:
                    vlog.current().set_verbosity(value)
                except ValueError as e:
                    fatal(str(e))
            elif name == "db-change-aware":
                self.db_change_aware = 1
            elif name == "no-db-change-aware":
                self.db_change_aware = 0
            elif name == "timeout":
                if not re.fullmatch(r"[0-9]+", value) or int(value) == 0 \
                        or int(value) > 0xFFFFFFFF:
                    fatal(f"value {value} on -t or --timeout is invalid")
                self.timeout = int(value)
            elif name in UNSUPPORTED:
                fatal(f"--{name} is not supported")
        self.printer = Printer(self.style)

    def json(self, value: Any) -> str:
        return json_to_string(value, self.style.pretty)


# --------------------------------------------------------------------------------------
# Connections


def default_remote() -> str:
    return f"unix:{daemon.rundir()}/db.sock"


def looks_like_remote(arg: str) -> bool:
    return bool(arg) and arg[0].isascii() and arg[0].isalpha() and ":" in arg


def with_default_port(remote: str) -> str:
    """`tcp:HOST` (and `ssl:HOST`) means OVSDB's port 6640, as for the real tools."""
    kind, _, rest = remote.partition(":")
    if kind not in ("tcp", "ssl"):
        return remote
    host_end = rest.find("]") + 1 if rest.startswith("[") else 0
    return remote if ":" in rest[host_end:] else f"{remote}:6640"


def open_client(remote: str) -> Client:
    try:
        return Client(with_default_port(remote))
    except RpcError as e:
        m = re.search(r"\(([^()]*)\)$", str(e))
        reason = m.group(1) if m else str(e)
        fatal(f'failed to connect to "{remote}" ({reason})')
    except (OSError, ValueError) as e:
        fatal(f'failed to connect to "{remote}" ({getattr(e, "strerror", None) or e})')


def transact_block(client: Client, method: str, params: list[Any]) -> dict[str, Any]:
    """Send one request and wait for its reply message (a result or an error)."""
    try:
        return client.wait(client.send(method, params))
    except OSError as e:
        fatal(f"transaction failed ({e.strerror or e})")


def check_txn(ctx: Context, reply: dict[str, Any]) -> Any:
    if reply.get("error") is not None:
        fatal(f"transaction returned error: {ctx.json(reply['error'])}")
    return reply.get("result")


def fetch_dbs(ctx: Context, client: Client) -> list[str]:
    result = check_txn(ctx, transact_block(client, "list_dbs", []))
    if type(result) is not list:
        fatal("list_dbs response is not array")
    for i, name in enumerate(result):
        if type(name) is not str:
            fatal(f"list_dbs response {i} is not string")
    return sorted(result, key=lambda s: s.encode())


class Schema:
    """A schema fetched from the server, with the raw JSON it came from: the real tool's
    iteration orders are those of the JSON text."""

    def __init__(self, json: Any) -> None:
        try:
            self.schema = DatabaseSchema.from_json(json, allow_reserved=True)
        except OvsdbError as e:
            fatal(error_to_string(e))
        self.json = json
        # The real tool puts the tables into its schema in the order it walks the JSON
        # object, then walks the schema in its own hash order.
        self.table_order = shash_order(shash_order(json["tables"]))

    @property
    def name(self) -> str:
        return self.schema.name

    def table(self, name: str) -> TableSchema | None:
        return self.schema.tables.get(name)

    def column_order(self, table: str) -> list[str]:
        cols = self.json["tables"][table]["columns"]
        return shash_order(["_uuid", "_version", *shash_order(cols)])


def fetch_schema(ctx: Context, client: Client, database: str) -> Schema:
    return Schema(check_txn(ctx, transact_block(client, "get_schema", [database])))


def database_row_ok(ctx: Context, client: Client, database: str, leader_only: bool) -> bool:
    """Whether this server hosts `database` in a state a command can use (standalone,
    or a connected cluster member, the leader unless --no-leader-only)."""
    op = {"op": "select", "table": "Database", "where": [["name", "==", database]]}
    reply = transact_block(client, "transact", ["_Server", op])
    result = reply.get("result")
    if type(result) is not list or len(result) != 1 or type(result[0]) is not dict:
        return False
    for row in result[0].get("rows") or []:
        if type(row) is not dict or row.get("name") != database:
            continue
        if row.get("model") == "standalone":
            return True
        if row.get("connected") is not True:
            return False
        return not leader_only or row.get("leader") is True
    return False


def open_rpc(ctx: Context, parsed: opt.Parsed, min_args: int, need: str, args: list[str],
             database: str | None) -> tuple[Client, str | None, int]:
    """Connect as the real tool does; returns the client, the database and how many
    leading arguments named the server and the database."""
    idx = 0
    if len(args) > min_args and looks_like_remote(args[0]):
        remote = args[0]
        idx = 1
    else:
        remote = default_remote()
    remotes = [r for r in remote.split(",") if r]
    if len(remotes) <= 1:
        client = open_client(remotes[0] if remotes else remote)
        if need == NEED_DATABASE and database is None:
            dbs = fetch_dbs(ctx, client)
            if len(args) - idx > min_args and args[idx] in dbs:
                database = args[idx]
                idx += 1
            elif "Open_vSwitch" in dbs:
                database = "Open_vSwitch"
            else:
                candidates = [d for d in dbs if not d.startswith("_")]
                if len(candidates) != 1:
                    client.close()
                    fatal("could not find a default database, please specify a database name")
                database = candidates[0]
        return client, database, idx

    if database is None and need == NEED_DATABASE:
        if len(args) - idx > min_args:
            database = args[idx]
            idx += 1
        else:
            fatal("database name is required with multiple remotes")
    leader_only = True
    for name, _ in parsed.options:
        if name in ("leader-only", "no-leader-only"):
            leader_only = name == "leader-only"
    for r in remotes:
        try:
            client = Client(with_default_port(r))
        except (RpcError, OSError, ValueError):
            continue
        if database is None or database_row_ok(ctx, client, database, leader_only):
            return client, database, idx
        client.close()
    fatal("no servers were available")


# --------------------------------------------------------------------------------------
# Commands


def cmd_list_dbs(ctx: Context, client: Client, database: str | None, args: list[str]) -> None:
    for name in fetch_dbs(ctx, client):
        print(name)


def schema_to_json(schema: DatabaseSchema) -> dict[str, Any]:
    """`ovsdb_schema_to_json`: the normalized schema, defaults left out."""
    all_root = all(t.is_root for t in schema.tables.values())
    out: dict[str, Any] = {"name": schema.name}
    if schema.version:
        out["version"] = schema.version
    if schema.cksum:
        out["cksum"] = schema.cksum
    tables: dict[str, Any] = {}
    for name, ts in schema.tables.items():
        columns: dict[str, Any] = {}
        for cname, col in ts.columns.items():
            cj: dict[str, Any] = {"type": type_to_json(col.type)}
            if not col.mutable:
                cj["mutable"] = False
            if col.ephemeral:
                cj["ephemeral"] = True
            columns[cname] = cj
        tj: dict[str, Any] = {"columns": columns}
        if ts.is_root != all_root:
            tj["isRoot"] = ts.is_root
        if ts.max_rows != float("inf"):
            tj["maxRows"] = ts.max_rows
        if ts.indexes:
            tj["indexes"] = [list(i) for i in ts.indexes]
        tables[name] = tj
    out["tables"] = tables
    return out


def cmd_get_schema(ctx: Context, client: Client, database: str | None,
                   args: list[str]) -> None:
    assert database is not None
    print(ctx.json(schema_to_json(fetch_schema(ctx, client, database).schema)))


def cmd_get_schema_version(ctx: Context, client: Client, database: str | None,
                           args: list[str]) -> None:
    assert database is not None
    print(fetch_schema(ctx, client, database).schema.version or "")


def cmd_get_schema_cksum(ctx: Context, client: Client, database: str | None,
                         args: list[str]) -> None:
    assert database is not None
    print(fetch_schema(ctx, client, database).schema.cksum or "")


def cmd_list_tables(ctx: Context, client: Client, database: str | None,
                    args: list[str]) -> None:
    assert database is not None
    schema = fetch_schema(ctx, client, database)
    t = Table(["Table"])
    for name in schema.table_order:
        t.add_row(Cell(text=name))
    ctx.printer.print(t)


def cmd_list_columns(ctx: Context, client: Client, database: str | None,
                     args: list[str]) -> None:
    assert database is not None
    table_name = args[0] if args else None
    schema = fetch_schema(ctx, client, database)
    t = Table((["Table"] if table_name is None else []) + ["Column", "Type"])
    for tname in schema.table_order:
        if table_name is not None and tname != table_name:
            continue
        ts = schema.table(tname)
        assert ts is not None
        for cname in schema.column_order(tname):
            cells = [] if table_name is not None else [Cell(text=tname)]
            cells += [Cell(text=cname), Cell(json=type_to_json(ts.all_columns[cname].type))]
            t.add_row(*cells)
    ctx.printer.print(t)


def _ends_in_string(text: str) -> bool:
    in_string = escaped = False
    for c in text:
        if escaped:
            escaped = False
        elif in_string and c == "\\":
            escaped = True
        elif c == '"':
            in_string = not in_string
    return in_string


def parse_json_arg(text: str) -> Any:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        if e.msg == "unexpected end of data":
            # OVS reports the position after the last byte read, counting the end of
            # the input as one more byte when it ends a number or a keyword.
            in_string = _ends_in_string(text)
            extra = 1 if not in_string and re.search(r"[0-9A-Za-z.+\-]\Z", text) else 0
            line = text.count("\n")
            column = len(text.rpartition("\n")[2].encode()) + extra
            where = f"line {line}, column {column}, byte {len(text.encode()) + extra}"
            what = " in quoted string" if in_string else ""
            fatal(f'"{text}": {where}: unexpected end of input{what}')
        fatal(f'"{text}": line {e.lineno - 1}, column {e.colno - 1}, byte {e.pos}: '
              f"{e.msg}")
    if isinstance(value, str):
        fatal(f'"{text}": syntax error at beginning of input')
    return value


def transact(ctx: Context, parsed: opt.Parsed, args: list[str], txn: Any) -> Any:
    if type(txn) is not list or not txn or type(txn[0]) is not str:
        fatal("not a valid OVSDB query")
    client, _, _ = open_rpc(ctx, parsed, 1, NEED_DATABASE, args, txn[0])
    try:
        if ctx.db_change_aware == 1:
            send_db_change_aware(ctx, client)
        return check_txn(ctx, transact_block(client, "transact", txn))
    finally:
        client.close()


def cmd_transact(ctx: Context, parsed: opt.Parsed, args: list[str]) -> None:
    print(ctx.json(transact(ctx, parsed, args, parse_json_arg(args[-1]))))


def cmd_query(ctx: Context, parsed: opt.Parsed, args: list[str]) -> None:
    txn = parse_json_arg(args[-1])
    if type(txn) is not list:
        fatal("not a valid OVSDB query")
    # The appended "abort" makes the server roll back whatever the query changed.
    txn.append({"op": "abort"})
    abort_idx = len(txn) - 2
    result = transact(ctx, parsed, args, txn)
    if (type(result) is list and len(result) == abort_idx + 1
            and type(result[abort_idx]) is dict
            and result[abort_idx].get("error") == "aborted"):
        result.pop()
    print(ctx.json(result))


# -- dump ------------------------------------------------------------------------------


def dump_table(ctx: Context, ts: TableSchema, names: list[str], rows: list[Any]) -> None:
    columns = sorted((n for n in names if n != "_version"), key=lambda s: s.encode())
    types = [ts.all_columns[n].type for n in columns]
    relaxed = [relaxed_type(t) for t in types]
    data: list[list[Any]] = []
    for y, row in enumerate(rows):
        if type(row) is not dict:
            fatal(f"row {y} in table {ts.name} response is not a JSON object: "
                  f"{json_to_string(row, sort=False)}")
        values = []
        for name, rt in zip(columns, relaxed, strict=True):
            if name not in row:
                fatal(f"row {y} in table {ts.name} response lacks {name} column")
            try:
                values.append(rt.codec.from_json(row[name]))
            except OvsdbError as e:
                fatal(error_to_string(e))
        data.append(values)

    # Rows sort by their values, uuid columns last: their values are random.
    plain = [x for x, t in enumerate(types) if t.key.type != "uuid"]
    uuids = [x for x, t in enumerate(types) if t.key.type == "uuid"]
    order = plain + uuids

    def key(values: list[Any]) -> tuple[Any, ...]:
        return tuple(datum_sort_key(relaxed[x], values[x]) for x in order)

    data.sort(key=key)
    t = Table(columns, caption=f"{ts.name} table")
    for values in data:
        t.add_row(*(Cell(json=datum_to_json(rt, v), type=ct)
                    for v, rt, ct in zip(values, relaxed, types, strict=True)))
    ctx.printer.print(t)


def cmd_dump(ctx: Context, client: Client, database: str | None, args: list[str]) -> None:
    assert database is not None
    schema = fetch_schema(ctx, client, database)
    custom: list[str] = []
    if args:
        ts = schema.table(args[0])
        if ts is None:
            fatal(f'No table "{args[0]}" found.')
        for cname in args[1:]:
            if cname not in ts.all_columns:
                fatal(f'Table "{args[0]}" has no column {cname}.')
            custom.append(cname)
        tables = [ts]
    else:
        tables = [schema.schema.tables[n]
                  for n in sorted(schema.schema.tables, key=lambda s: s.encode())]

    txn: list[Any] = [database]
    names_of: list[list[str]] = []
    for ts in tables:
        # Columns go in the real tool's order, which the server echoes in its errors.
        names = shash_order(custom) if len(args) > 1 else schema.column_order(ts.name)
        names_of.append(names)
        txn.append({"op": "select", "table": ts.name, "where": [],
                    "columns": [n for n in names if n != "_version"]})
    result = check_txn(ctx, transact_block(client, "transact", txn))
    if type(result) is not list or len(result) != len(tables):
        fatal(f"reply is not array of {len(tables)} elements: "
              f"{json_to_string(result, sort=False)}")
    for ts, names, op_result in zip(tables, names_of, result, strict=True):
        rows = op_result.get("rows") if type(op_result) is dict else None
        if type(rows) is not list:
            fatal(f'{ts.name} table reply is not an object with a "rows" member array: '
                  f"{json_to_string(op_result, sort=False)}")
        dump_table(ctx, ts, names, rows)


# -- monitor ---------------------------------------------------------------------------


class Monitored:
    """One monitored table: the columns shown, in the order they were asked for."""

    def __init__(self, ts: TableSchema) -> None:
        self.ts = ts
        self.columns: list[str] = []


def parse_monitor_columns(server: str, database: str, mt: Monitored,
                          arg: str) -> dict[str, Any]:
    select = {"initial": True, "insert": True, "delete": True, "modify": True}
    names: list[str] = []

    def add(name: str) -> None:
        if name in mt.columns:
            fatal(f'{server}: column "{name}" mentioned multiple times')
        mt.columns.append(name)
        names.append(name)

    for token in (t for t in arg.split(",") if t):
        if token.startswith("!") and token[1:] in select:
            select[token[1:]] = False
        elif token in mt.ts.all_columns:
            add(token)
        else:
            fatal(f'{server}: table "{mt.ts.name}" in {database} does not have a column '
                  f'named "{token}"')
    if not names:
        for name in sorted(mt.ts.all_columns, key=lambda s: s.encode()):
            if name not in ("_uuid", "_version"):
                add(name)
        add("_version")
    request: dict[str, Any] = {"columns": names}
    if not all(select.values()):
        request["select"] = select
    return request


def add_monitored_table(server: str, database: str, ts: TableSchema, args: list[str],
                        condition: Any, requests: dict[str, Any]) -> Monitored:
    mt = Monitored(ts)
    array = []
    for i, arg in enumerate(args[1:] or [""]):
        mr = parse_monitor_columns(server, database, mt, arg)
        if i == 0 and condition is not None:
            mr["where"] = condition
        array.append(mr)
    requests[ts.name] = array
    return mt


def send_db_change_aware(ctx: Context, client: Client) -> None:
    if ctx.db_change_aware == 0:
        return
    reply = transact_block(client, "set_db_change_aware", [True])
    if reply.get("error") is not None and ctx.db_change_aware == 1:
        fatal(f"{client.remote}: set_db_change_aware failed "
              f"({json_to_string(reply['error'], sort=False)})")


_MISSING: Any = object()


class MonitorPrinter:
    """Turns table updates into the real tool's tables: a row per change, its uuid and
    what happened to it, then the monitored columns."""

    def __init__(self, ctx: Context, mts: list[Monitored]) -> None:
        self.ctx = ctx
        self.mts = mts

    def _table(self, mt: Monitored) -> Table:
        return Table(["row", "action", *mt.columns],
                     caption=mt.ts.name if len(self.mts) > 1 else None,
                     timestamp=self.ctx.timestamp)

    def _row(self, t: Table, mt: Monitored, row: Any, action: str, uuid: str) -> None:
        if row is _MISSING:
            warn(f"missing {action} row")
            return
        if type(row) is not dict:
            warn("<row> is not object")
            return
        cells = [Cell(text=uuid), Cell(text=action)]
        for name in mt.columns:
            value = row.get(name, _MISSING)
            if value is _MISSING:
                cells.append(Cell())
            else:
                cells.append(Cell(json=value, type=mt.ts.all_columns[name].type))
        t.add_row(*cells)

    def updates(self, table_updates: Any, initial: bool) -> None:
        """`update` notifications and the reply to `monitor`."""
        if type(table_updates) is not dict:
            warn("<table-updates> is not object")
            return
        for mt in self.mts:
            tu = table_updates.get(mt.ts.name, _MISSING)
            if tu is _MISSING:
                continue
            if type(tu) is not dict:
                warn(f"<table-update> for table {mt.ts.name} is not object")
                continue
            t = self._table(mt)
            for uuid in shash_order(tu):
                ru = tu[uuid]
                if type(ru) is not dict:
                    warn("<row-update> is not object")
                    continue
                old = ru.get("old", _MISSING)
                new = ru.get("new", _MISSING)
                if initial:
                    self._row(t, mt, new, "initial", uuid)
                elif old is _MISSING:
                    self._row(t, mt, new, "insert", uuid)
                elif new is _MISSING:
                    self._row(t, mt, old, "delete", uuid)
                else:
                    self._row(t, mt, old, "old", uuid)
                    self._row(t, mt, new, "new", "")
            self.ctx.printer.print(t)

    def updates2(self, table_updates: Any) -> None:
        """`update2`/`update3` notifications and the replies to the conditional monitors."""
        if type(table_updates) is not dict:
            warn("<table-updates2> is not object")
            return
        for mt in self.mts:
            tu = table_updates.get(mt.ts.name, _MISSING)
            if tu is _MISSING:
                continue
            if type(tu) is not dict:
                warn(f"<table-update> for table {mt.ts.name} is not object")
                continue
            t = self._table(mt)
            for uuid in shash_order(tu):
                ru = tu[uuid]
                if type(ru) is not dict:
                    warn("<row-update2> is not object")
                    continue
                for action in ("delete", "initial", "modify", "insert"):
                    if action not in ru:
                        continue
                    row = ru[action]
                    if action == "delete":
                        if row is not None:
                            warn("delete method does not expect <row>")
                        else:
                            t.add_row(Cell(text=uuid), Cell(text="delete"))
                    elif type(row) is not dict:
                        warn("<row> is not object")
                    else:
                        self._row(t, mt, row, action, uuid)
                    break
            self.ctx.printer.print(t)

    def since_reply(self, result: Any) -> None:
        if type(result) is not list or len(result) != 3:
            n = len(result) if type(result) is list else 0
            warn("<result> is not array" if type(result) is not list else
                 f"<result> should have 3 elements, but has {n}.")
            return
        found = "true" if result[0] is True else "false"
        last_id = result[1] if type(result[1]) is str else ""
        sys.stdout.write(f"found: {found}, last_id: {last_id}\n")
        self.updates2(result[2])


def monitor(ctx: Context, client: Client, database: str, version: int, args: list[str],
            condition: Any = None, last_id: str | None = None) -> None:
    server = client.remote
    schema = fetch_schema(ctx, client, database)
    requests: dict[str, Any] = {}
    mts: list[Monitored] = []
    if args[0] != "ALL":
        ts = schema.table(args[0])
        if ts is None:
            fatal(f'{server}: {database} does not have a table named "{args[0]}"')
        mts.append(add_monitored_table(server, database, ts, args, condition, requests))
    else:
        if condition is not None:
            fatal("ALL tables are not allowed with condition")
        for name in sorted(schema.schema.tables, key=lambda s: s.encode()):
            mts.append(add_monitored_table(server, database, schema.schema.tables[name], args,
                                           None, requests))
    send_db_change_aware(ctx, client)

    params: list[Any] = [database, None, requests]
    method = {1: "monitor", 2: "monitor_cond", 3: "monitor_cond_since"}[version]
    if version == 3:
        params.append(last_id or UUID_ZERO)
    request_id = client.send(method, params)
    out = MonitorPrinter(ctx, mts)

    reply = client.wait(request_id)
    if reply.get("error") is not None:
        fatal(f"{server}: {method} failed: {json_to_string(reply['error'])}")
    result = reply.get("result")
    if version == 1:
        out.updates(result, True)
    elif version == 2:
        out.updates2(result)
    else:
        out.since_reply(result)
    sys.stdout.flush()

    while True:
        try:
            msg = client.next_notification()
        except RpcError as e:
            fatal(str(e))
        method_name = msg.get("method")
        p = msg.get("params")
        if method_name == "update":
            if type(p) is list and len(p) == 2 and p[0] is None:
                out.updates(p[1], False)
                sys.stdout.flush()
        elif method_name == "update2" and version == 2:
            if type(p) is list and len(p) == 2 and p[0] is None:
                out.updates2(p[1])
                sys.stdout.flush()
        elif method_name == "update3" and version == 3:
            if type(p) is list and len(p) == 3 and p[0] is None:
                last = p[1] if type(p[1]) is str else ""
                sys.stdout.write(f"\nlast_id: {last}")
                out.updates2(p[2])
                sys.stdout.flush()
        elif method_name == "monitor_canceled":
            fatal(f"{server}: {database} database was removed")


def cmd_monitor(ctx: Context, client: Client, database: str | None, args: list[str]) -> None:
    assert database is not None
    monitor(ctx, client, database, 1, args)


def monitor_cond(ctx: Context, client: Client, database: str, version: int, args: list[str],
                 last_id: str | None) -> None:
    if len(args) < 2:
        fatal("invalid syntax for 'monitor-cond-since' (use --help for help)")
    schema = fetch_schema(ctx, client, database)
    ts = schema.table(args[1])
    if ts is None:
        fatal(f'{database} does not have a table named "{args[1]}"')
    condition = parse_json_arg(args[0])
    try:
        parse_monitor_where(ts, condition)
    except OvsdbError as e:
        fatal(error_to_string(e))
    monitor(ctx, client, database, version, args[1:], condition, last_id)


def cmd_monitor_cond(ctx: Context, client: Client, database: str | None,
                     args: list[str]) -> None:
    assert database is not None
    monitor_cond(ctx, client, database, 2, args, None)


def cmd_monitor_cond_since(ctx: Context, client: Client, database: str | None,
                           args: list[str]) -> None:
    assert database is not None
    last_id = UUID_ZERO
    if is_uuid_string(args[0]):
        last_id = args[0].lower()
        args = args[1:]
    monitor_cond(ctx, client, database, 3, args, last_id)


def cmd_help(ctx: Context, parsed: opt.Parsed, args: list[str]) -> None:
    print(USAGE.format(prog=PROGRAM, rundir=daemon.rundir()), end="")


INT_MAX = 2**31 - 1

# name -> (what it needs, min args, max args, handler); the server and database
# arguments are not counted.
COMMANDS: dict[str, tuple[str, int, int, Any]] = {
    "list-dbs": (NEED_RPC, 0, 0, cmd_list_dbs),
    "get-schema": (NEED_DATABASE, 0, 0, cmd_get_schema),
    "get-schema-version": (NEED_DATABASE, 0, 0, cmd_get_schema_version),
    "get-schema-cksum": (NEED_DATABASE, 0, 0, cmd_get_schema_cksum),
    "list-tables": (NEED_DATABASE, 0, 0, cmd_list_tables),
    "list-columns": (NEED_DATABASE, 0, 1, cmd_list_columns),
    "transact": (NEED_NONE, 1, 2, cmd_transact),
    "query": (NEED_NONE, 1, 2, cmd_query),
    "monitor": (NEED_DATABASE, 1, INT_MAX, cmd_monitor),
    "monitor-cond": (NEED_DATABASE, 2, 3, cmd_monitor_cond),
    "monitor-cond-since": (NEED_DATABASE, 2, 4, cmd_monitor_cond_since),
    "dump": (NEED_DATABASE, 0, INT_MAX, cmd_dump),
    "help": (NEED_NONE, 0, INT_MAX, cmd_help),
}


# Commands kept in modules of their own (they build on this one), imported only when
# run: name -> (what it needs, min args, max args, module, handler).
MORE_COMMANDS: dict[str, tuple[str, int, int, str, str]] = {
    "wait": (NEED_NONE, 2, 3, "client_admin", "cmd_wait"),
    "convert": (NEED_NONE, 1, 2, "client_admin", "cmd_convert"),
    "needs-conversion": (NEED_NONE, 1, 2, "client_admin", "cmd_needs_conversion"),
    "backup": (NEED_DATABASE, 0, 0, "client_admin", "cmd_backup"),
    "restore": (NEED_DATABASE, 0, 0, "client_admin", "cmd_restore"),
    "lock": (NEED_RPC, 1, 1, "client_lock", "cmd_lock"),
    "steal": (NEED_RPC, 1, 1, "client_lock", "cmd_steal"),
    "unlock": (NEED_RPC, 1, 1, "client_lock", "cmd_unlock"),
}


def command(name: str) -> tuple[str, int, int, Any] | None:
    if name in COMMANDS:
        return COMMANDS[name]
    if name not in MORE_COMMANDS:
        return None
    import importlib

    need, lo, hi, module, handler = MORE_COMMANDS[name]
    return need, lo, hi, getattr(importlib.import_module(f"{__package__}.{module}"), handler)


# --------------------------------------------------------------------------------------


FATAL_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM)


def logger(module: str) -> logging.Logger:
    """A module's log, written as the real tool's (on the console at info and above
    unless -v says otherwise)."""
    vlog.current().program = "ovsdb-client"
    return logging.getLogger(module)


def log_fatal_signal(signum: int) -> None:
    """What the real tool's fatal_signal module logs before it dies of a signal (on the
    console unless -vconsole:off)."""
    try:
        sys.stdout.flush()
    except Exception:
        pass
    logger("fatal_signal").warning("terminating with signal %d (%s)", signum,
                                              signal.strsignal(signum))


def _on_fatal_signal(signum: int, frame: Any) -> None:
    # The real tool dies of the signal (SIGALRM for -t), after saying so.
    log_fatal_signal(signum)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def run(argv: list[str]) -> int:
    # Values are UTF-8 on the wire and the real tool writes their bytes as they are.
    encoding = getattr(sys.stdout, "encoding", None)
    if encoding and encoding.lower().replace("-", "") != "utf8" \
            and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")
    try:
        parsed = opt.parse(argv, LONG, SHORT)
    except opt.UsageError as e:
        fatal(str(e))
    if parsed.has("help"):
        cmd_help(Context(opt.Parsed()), parsed, [])
        return 0
    if parsed.has("version"):
        print(f"{PROGRAM} (pyovsdb) {__version__}")
        return 0
    ctx = Context(parsed)
    bootstrap = parsed.get("bootstrap-ca-cert")
    tls.set_client_pki(tls.PkiFiles(
        parsed.get("private-key"), parsed.get("certificate"),
        parsed.get("ca-cert") or bootstrap, parsed.get("ssl-protocols"),
        parsed.get("ssl-ciphers"),
        bootstrap=bool(bootstrap) and not parsed.get("ca-cert")))
    if not ctx.timeout:
        # `ctl_timeout_setup`: the environment's default.
        env = os.environ.get("OVS_CTL_TIMEOUT", "")
        ctx.timeout = int(env) if re.fullmatch(r"[0-9]+", env) and int(env) < 2**32 else 0
    for signum in FATAL_SIGNALS:
        signal.signal(signum, _on_fatal_signal)
    if ctx.timeout:
        signal.alarm(ctx.timeout)
    if not parsed.args:
        fatal("missing command name; use --help for help")
    name, args = parsed.args[0], parsed.args[1:]
    entry = command(name)
    if entry is None:
        fatal(f"unknown command '{name}'; use --help for help")
    need, lo, hi, handler = entry
    if parsed.has("detach") and name not in DETACHABLE:
        fatal("--detach is not supported")

    client: Client | None = None
    database: str | None = None
    if need != NEED_NONE:
        client, database, used = open_rpc(ctx, parsed, lo, need, args, None)
        args = args[used:]
    try:
        if not lo <= len(args) <= hi:
            fatal(f"invalid syntax for '{name}' (use --help for help)")
        if need == NEED_NONE:
            handler(ctx, parsed, args)
        else:
            assert client is not None
            handler(ctx, client, database, args)
        sys.stdout.flush()
    finally:
        if client is not None:
            client.close()
    return 0


def main(argv: list[str]) -> int:
    # Run in a test's process, leave it as it was: signal handlers, no alarm.
    handlers = {signum: signal.getsignal(signum) for signum in FATAL_SIGNALS}
    try:
        return _main(argv)
    finally:
        signal.alarm(0)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def _main(argv: list[str]) -> int:
    try:
        return run(argv)
    except Fatal as e:
        message = str(e)
    except RpcError as e:
        message = str(e)
    except OvsdbError as e:
        message = error_to_string(e)
    except OSError as e:
        if isinstance(e, BrokenPipeError):
            raise
        message = f"{e.strerror or e}"
    except Exception as e:  # a protocol violation by the server, never a traceback
        message = f"unexpected error: {type(e).__name__}: {e}"
    try:
        sys.stdout.flush()
    except OSError:
        pass
    print(f"{PROGRAM}: {message}", file=sys.stderr)
    return 1
