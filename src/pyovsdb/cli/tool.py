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
from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema, load_schema_file
from ..ovsdb.transaction import Blocked, Committed, execute
from ..storage import log as ovslog
from ..storage import standalone
from ..util import daemon
from ..util.ovsjson import json_to_string
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
The default DB is {dbdir}/conf.db.
The default SCHEMA is the packaged vswitch.ovsschema.
Options:
  -m, --more              increase show-log verbosity
  -h, --help              display this help message
  -V, --version           display version information
"""

LONG = {"more": opt.NONE, "help": opt.NONE, "version": opt.NONE, "verbose": opt.OPTIONAL,
        "rbac-role": opt.REQUIRED, "timeout": opt.REQUIRED}
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
        return f"{e.tag}: {e.details}" if e.details else e.tag
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
    database, res = standalone.load(db)
    comment = f"compacted by pyovsdb tool {__version__}"
    records = [database.schema.json or database.schema.to_json(),
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


def _schema_of_db(args: list[str]) -> DatabaseSchema:
    db = args[0] if args else default_db()
    res = ovslog.read_file(db)
    if not res.records:
        raise ToolError(f"{db}: {res.error or 'file is empty'}")
    if res.magic == ovslog.MAGIC_CLUSTERED:
        return _clustered_schema(db, res.records)
    return DatabaseSchema.from_json(res.records[0])


def _clustered_schema(db: str, records: list[Any]) -> DatabaseSchema:
    header = records[0]
    snap = header.get("prev_data") if isinstance(header, dict) else None
    schema_json = None
    if isinstance(snap, list) and snap and snap[0]:
        schema_json = snap[0]
    for rec in records[1:]:
        data = rec.get("data") if isinstance(rec, dict) else None
        if isinstance(data, list) and data and data[0]:
            schema_json = data[0]
    if schema_json is None:
        raise ToolError(f"{db}: database has no schema yet (not joined?)")
    return DatabaseSchema.from_json(schema_json)


def _schema_file(args: list[str]) -> DatabaseSchema:
    return load_schema_file(args[0] if args else default_schema())


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
    database, res = standalone.load(db_path)
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
                writer.append(cs.to_record(database.schema))
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
    "query": (cmd_query, 1, 2),
    "transact": (cmd_transact, 1, 2),
    "show-log": (cmd_show_log, 0, 1),
}

