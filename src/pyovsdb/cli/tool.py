"""`pyovsdb tool`: a drop-in for `ovsdb-tool` on database files.

Rules kept here:
- Same commands, arguments, defaults and output as the real tool, for the file
  formats we share with it.
- A command that writes a file takes the same lock as the real server and tool, and
  never leaves a partial file behind (see `storage.log`).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import orjson

from .. import __version__
from ..ovsdb.changeset import Changeset
from ..ovsdb.datum import is_uuid_string
from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema
from ..ovsdb.transaction import Blocked, Committed, execute
from ..raft.core import initial_snapshot
from ..raft.records import Header
from ..storage import clustered, jsonorder, standalone
from ..storage import log as ovslog
from ..storage.schemafile import load_schema
from ..util import daemon
from ..util.ovsjson import json_to_string
from ..util.uuidgen import new_uuid
from . import options as opt

USAGE = """\
pyovsdb tool: Open vSwitch compatible database management utility
usage: pyovsdb tool [OPTIONS] COMMAND [ARG...]
  create [DB [SCHEMA]]    create DB with the given SCHEMA
  compact [DB [DST]]      compact DB in-place (or to DST)
  db-name [DB]            report name of schema used by DB
  db-version [DB]         report version of schema used by DB
  db-cksum [DB]           report checksum of schema used by DB
  schema-name [SCHEMA]    report SCHEMA's name
  schema-version [SCHEMA] report SCHEMA's schema version
  schema-cksum [SCHEMA]   report SCHEMA's checksum
  needs-conversion [DB [SCHEMA]]  report whether DB's schema differs from SCHEMA
  query [DB] TRNS         execute read-only transaction on DB
  transact [DB] TRNS      execute read/write transaction on DB
  show-log [DB]           prints information about DB's log entries
  db-is-standalone [DB]   exit 0 if DB is a standalone database
  db-is-clustered [DB]    exit 0 if DB is a clustered database
  create-cluster DB CONTENTS LOCAL
                          create clustered DB with given CONTENTS and LOCAL address
  join-cluster DB NAME LOCAL REMOTE...
                          prepare DB to join a cluster of NAME at REMOTE (--cid=CID)
  db-cid DB               report cluster ID of clustered DB
  db-sid DB               report server ID of clustered DB
  db-local-address DB     report local address of clustered DB
  cluster-to-standalone DB CLUSTERED_DB
                          convert clustered DB to standalone DB
The default DB is {dbdir}/conf.db.
The default SCHEMA is the packaged vswitch.ovsschema.
Options:
  -m, --more              increase show-log verbosity
  -h, --help              display this help message
  -V, --version           display version information
"""

LONG = {"more": opt.NONE, "help": opt.NONE, "version": opt.NONE, "verbose": opt.OPTIONAL,
        "rbac-role": opt.REQUIRED, "timeout": opt.REQUIRED, "election-timer": opt.REQUIRED,
        "cid": opt.REQUIRED}
SHORT = {"m": ("more", opt.NONE), "h": ("help", opt.NONE), "V": ("version", opt.NONE),
         "v": ("verbose", opt.OPTIONAL), "t": ("timeout", opt.REQUIRED)}


class ToolError(Exception):
    pass


def default_db() -> str:
    return os.path.join(daemon.dbdir(), "conf.db")


def default_schema() -> str:
    from importlib.resources import files

    return str(files("pyovsdb.schemas").joinpath("vswitch.ovsschema"))


def main(argv: list[str]) -> int:
    try:
        parsed = opt.parse(argv, LONG, SHORT)
    except opt.UsageError as e:
        print(f"pyovsdb tool: {e}", file=sys.stderr)
        return 1
    if parsed.has("help"):
        print(USAGE.format(dbdir=daemon.dbdir()), end="")
        return 0
    if parsed.has("version"):
        print(f"pyovsdb tool {__version__}")
        return 0
    if not parsed.args:
        print("pyovsdb tool: missing command name; use --help for help", file=sys.stderr)
        return 1
    cmd, args = parsed.args[0], parsed.args[1:]
    entry = COMMANDS.get(cmd)
    if entry is None:
        print(f"pyovsdb tool: unknown command '{cmd}'; use --help for help", file=sys.stderr)
        return 1
    fn, lo, hi = entry
    if len(args) < lo:
        print(f"pyovsdb tool: '{cmd}' command requires at least {lo} arguments",
              file=sys.stderr)
        return 1
    if len(args) > hi:
        print(f"pyovsdb tool: '{cmd}' command takes at most {hi} arguments", file=sys.stderr)
        return 1
    try:
        return fn(args, parsed) or 0
    except (ToolError, OvsdbError, OSError) as e:
        print(f"pyovsdb tool: {_message(e)}", file=sys.stderr)
        return 1


def _message(e: Exception) -> str:
    if isinstance(e, OvsdbError):
        return str(e)
    if isinstance(e, OSError) and e.filename:
        return f"{e.filename}: {e.strerror}"
    return str(e)


# -- commands ------------------------------------------------------------------------------


def cmd_create(args: list[str], parsed: opt.Parsed) -> int:
    db = args[0] if args else default_db()
    schema_path = args[1] if len(args) > 1 else default_schema()
    try:
        with open(schema_path, "rb") as f:
            raw = orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError) as e:
        raise ToolError(f'failed to read schema: "{schema_path}" could not be read as JSON '
                        f"({e})") from None
    standalone.create(db, raw)
    return 0


def cmd_compact(args: list[str], parsed: opt.Parsed) -> int:
    db = args[0] if args else default_db()
    dst = args[1] if len(args) > 1 else None
    database, res = _load_whole(db)
    comment = f"compacted by pyovsdb tool {__version__}"
    records = [jsonorder.schema_record(database.schema),
               standalone.snapshot_record(database, comment)]
    if dst is None:
        writer = ovslog.LogWriter(db, res.end)
        try:
            writer.replace(records)
        finally:
            writer.close()
    else:
        ovslog.write_new_file(dst, records)
    return 0


def _load_whole(path: str) -> tuple[Any, ovslog.ReadResult]:
    """A database the command needs all of: as in the real tool, a record it cannot
    read or apply is fatal (the server, in contrast, goes on without it)."""
    database, res, _ = standalone.load(path)
    if res.problem is not None:
        raise res.problem
    return database, res


def _schema_of_db(args: list[str]) -> DatabaseSchema:
    db = args[0] if args else default_db()
    if clustered.is_clustered(db):
        header, records, _, _ = clustered.read(db)
        return clustered.build_database(header, records).schema
    res = ovslog.read_file(db)
    if not res.records:
        raise res.problem or ToolError(f"{db}: file is empty")
    return DatabaseSchema.from_json(res.records[0])


def _schema_file(args: list[str]) -> DatabaseSchema:
    return load_schema(args[0] if args else default_schema())


def cmd_db_name(args: list[str], parsed: opt.Parsed) -> int:
    print(_schema_of_db(args).name)
    return 0


def cmd_db_version(args: list[str], parsed: opt.Parsed) -> int:
    print(_schema_of_db(args).version or "")
    return 0


def cmd_db_cksum(args: list[str], parsed: opt.Parsed) -> int:
    print(_schema_of_db(args).cksum or "")
    return 0


def cmd_schema_name(args: list[str], parsed: opt.Parsed) -> int:
    print(_schema_file(args).name)
    return 0


def cmd_schema_version(args: list[str], parsed: opt.Parsed) -> int:
    print(_schema_file(args).version or "")
    return 0


def cmd_schema_cksum(args: list[str], parsed: opt.Parsed) -> int:
    print(_schema_file(args).cksum or "")
    return 0


def cmd_needs_conversion(args: list[str], parsed: opt.Parsed) -> int:
    db_schema = _schema_of_db(args[:1])
    schema = _schema_file(args[1:2])
    same = db_schema.to_json() == schema.to_json()
    print("no" if same else "yes")
    return 0


def cmd_db_is_standalone(args: list[str], parsed: opt.Parsed) -> int:
    res = ovslog.read_file(args[0] if args else default_db())
    return 0 if res.magic == ovslog.MAGIC_STANDALONE else 2
def cmd_db_is_clustered(args: list[str], parsed: opt.Parsed) -> int:
    res = ovslog.read_file(args[0] if args else default_db())
    return 0 if res.magic == ovslog.MAGIC_CLUSTERED else 2


def _header(path: str) -> Header:
    if not clustered.is_clustered(path):
        ovslog.read_file(path)  # raises the real I/O error for a missing file
        raise ToolError(f"{path}: not a clustered database")
    return clustered.read(path)[0]


def cmd_db_cid(args: list[str], parsed: opt.Parsed) -> int:
    h = _header(args[0])
    if h.cid is None:
        print(f"{args[0]}: cluster ID not yet known", file=sys.stderr)
        return 2
    print(h.cid)
    return 0


def cmd_db_sid(args: list[str], parsed: opt.Parsed) -> int:
    print(_header(args[0]).sid)
    return 0


def cmd_db_local_address(args: list[str], parsed: opt.Parsed) -> int:
    print(_header(args[0]).local_address)
    return 0


def _looks_like_db(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(6) == b"OVSDB "
    except OSError:
        return False


def check_raft_address(address: str) -> None:
    """`raft_address_validate`, with its texts."""
    kind, _, rest = address.partition(":")
    if kind == "unix":
        return
    if kind not in ("tcp", "ssl"):
        raise ToolError(f'ovsdb error: {address}: expected "tcp" or "ssl" address')
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise ToolError(f"ovsdb error: {address}: syntax error in address")


def cmd_create_cluster(args: list[str], parsed: opt.Parsed) -> int:
    db, contents, local = args
    if clustered.is_clustered(contents):
        raise ToolError(f"{contents}: cannot create a cluster from a clustered database")
    data: dict[str, Any] = {}
    if _looks_like_db(contents):
        database, _ = _load_whole(contents)
        schema_json = database.schema.json or database.schema.to_json()
        snap = standalone.snapshot_record(database, "", date_ms=0)
        data = {k: v for k, v in snap.items() if not k.startswith("_")}
    else:
        try:
            with open(contents, "rb") as f:
                schema_json = orjson.loads(f.read())
        except (OSError, orjson.JSONDecodeError) as e:
            raise ToolError(f'failed to read schema: "{contents}" could not be read as JSON '
                            f"({e})") from None
        DatabaseSchema.from_json(schema_json)
    schema_json, changed = clustered.schema_for_cluster(schema_json)
    # The file holds the normalized schema, as the real tool writes it.
    schema_json = DatabaseSchema.from_json(schema_json).to_json()
    if changed:
        # A warning in the real tool's console log format (`VLOG_WARN`).
        table, _, column = changed[-1].partition(".")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        print(f"{stamp}|00001|ovsdb|WARN|{contents}: changed {len(changed)} columns in "
              f"'{schema_json.get('name')}' database from ephemeral to persistent, "
              f"including '{column}' column in '{table}' table, because clusters do not "
              "support ephemeral columns", file=sys.stderr)
    check_raft_address(local)
    timer = parsed.get("election-timer")
    records = []
    if timer is not None:
        try:
            ms = int(timer)
        except ValueError:
            raise ToolError(f"{timer}: election timer must be an integer") from None
        if not 100 <= ms <= 600000:
            raise ToolError(f"election timer must be between 100 and 600000 ms, not {ms}")
        records.append({"term": 1, "index": 2, "election_timer": ms})
    sid = new_uuid()
    header = Header(sid=sid, name=schema_json["name"], local_address=local, cid=new_uuid(),
                    snapshot=initial_snapshot(sid, local, [schema_json, data], new_uuid()))
    clustered.create(db, header, records)
    return 0


def cmd_join_cluster(args: list[str], parsed: opt.Parsed) -> int:
    db, name, local, *remotes = args
    check_raft_address(local)
    for r in remotes:
        check_raft_address(r)
    if local in remotes:
        raise ToolError("ovsdb error: remote addresses cannot be the same as the local address")
    cid = parsed.get("cid")
    if cid is not None and not is_uuid_string(cid):
        raise ToolError(f"{cid}: not a valid UUID")
    header = Header(sid=new_uuid(), name=name, local_address=local, cid=cid,
                    remote_addresses=remotes)
    clustered.create(db, header)
    return 0


def cmd_cluster_to_standalone(args: list[str], parsed: opt.Parsed) -> int:
    dst, src = args
    header, records, _, _ = clustered.read(src)
    database = clustered.build_database(header, records)
    schema_json = jsonorder.schema_record(database.schema)
    ovslog.write_new_file(dst, [schema_json, standalone.snapshot_record(
        database, f"converted from clustered database by pyovsdb tool {__version__}")])
    return 0


def _txn_args(args: list[str]) -> tuple[str, Any]:
    if len(args) == 1:
        db, text = default_db(), args[0]
    else:
        db, text = args[0], args[1]
    try:
        return db, orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise ToolError(f"syntax error in transaction: {e}") from None


def _run_txn(db_path: str, txn: Any, write: bool) -> int:
    if type(txn) is not list or not txn or type(txn[0]) is not str:
        raise ToolError('transaction must be an array whose first element is the database '
                        'name')
    database, res = _load_whole(db_path)
    if txn[0] != database.name:
        raise ToolError(f"{db_path}: database name {database.name} does not match transaction "
                        f"database {txn[0]}")
    lock = ovslog.FileLock(db_path) if write else None
    try:
        now = time.monotonic() * 1000
        outcome = execute(database, txn[1:], now=now, started=now)
        if isinstance(outcome, Blocked):
            results = [{"error": "timed out", "details": "\"wait\" would block"}]
            print(json_to_string(results))
            return 0
        if not write and isinstance(outcome, Committed) and outcome.changeset:
            print(json_to_string([*outcome.results, {
                "error": "not allowed",
                "details": "read-only transaction attempted to modify the database"}]))
            return 0
        if write and isinstance(outcome, Committed) and outcome.changeset:
            writer = ovslog.LogWriter(db_path, res.end, lock=False)
            try:
                cs: Changeset = outcome.changeset
                cs.date = int(time.time() * 1000)
                writer.append(jsonorder.txn_record(cs.to_record(database.schema),
                                                   database.schema))
                writer.sync()
            finally:
                writer.close()
        print(json_to_string(outcome.results))
        return 0
    finally:
        if lock is not None:
            lock.release()


def cmd_query(args: list[str], parsed: opt.Parsed) -> int:
    db, txn = _txn_args(args)
    return _run_txn(db, txn, write=False)


def cmd_transact(args: list[str], parsed: opt.Parsed) -> int:
    db, txn = _txn_args(args)
    return _run_txn(db, txn, write=True)


def cmd_show_log(args: list[str], parsed: opt.Parsed) -> int:
    from .showlog import show_log

    more = sum(1 for n, _ in parsed.options if n == "more")
    sys.stdout.write(show_log(args[0] if args else default_db(), more))
    return 0


COMMANDS = {
    "create": (cmd_create, 0, 2),
    "compact": (cmd_compact, 0, 2),
    "db-name": (cmd_db_name, 0, 1),
    "db-version": (cmd_db_version, 0, 1),
    "db-cksum": (cmd_db_cksum, 0, 1),
    "schema-name": (cmd_schema_name, 0, 1),
    "schema-version": (cmd_schema_version, 0, 1),
    "schema-cksum": (cmd_schema_cksum, 0, 1),
    "needs-conversion": (cmd_needs_conversion, 0, 2),
    "db-is-standalone": (cmd_db_is_standalone, 0, 1),
    "db-is-clustered": (cmd_db_is_clustered, 0, 1),
    "db-cid": (cmd_db_cid, 1, 1),
    "db-sid": (cmd_db_sid, 1, 1),
    "db-local-address": (cmd_db_local_address, 1, 1),
    "create-cluster": (cmd_create_cluster, 3, 3),
    "join-cluster": (cmd_join_cluster, 4, 2**31),
    "cluster-to-standalone": (cmd_cluster_to_standalone, 2, 2),
    "query": (cmd_query, 1, 2),
    "transact": (cmd_transact, 1, 2),
    "show-log": (cmd_show_log, 0, 1),
}

