"""`pyovsdb tool`: a drop-in for `ovsdb-tool` on database files.

Rules kept here:
- Same commands, arguments, defaults and output as the real tool, for the file
  formats we share with it.
- A command that writes a file takes the same lock as the real server and tool, and
  never leaves a partial file behind (see `storage.log`).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any

import orjson

from .. import __version__
from ..ovsdb.datum import is_uuid_string
from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema
from ..storage import jsonorder, standalone
from ..storage import log as ovslog
from ..storage.schemafile import read_json_file, read_schema_file
from ..util import daemon, vlog
from ..util.ovsjson import json_to_string
from ..util.uuidgen import new_uuid
from . import options as opt
from .errortext import error_to_string

if TYPE_CHECKING:
    from ..raft.records import Header

# Raft and the transaction engine are imported by the commands that use them: a tool
# run is a process of its own, most of them quick reads.

USAGE = """\
{prog}: Open vSwitch database management utility
usage: {prog} [OPTIONS] COMMAND [ARG...]
  create [DB [SCHEMA]]    create DB with the given SCHEMA
  [--election-timer=ms] create-cluster DB CONTENTS LOCAL
    create clustered DB with given CONTENTS and LOCAL address
  [--cid=UUID] join-cluster DB NAME LOCAL REMOTE...
    join clustered DB with given NAME and LOCAL and REMOTE addrs
  compact [DB [DST]]      compact DB in-place (or to DST)
  convert [DB [SCHEMA [DST]]]   convert DB to SCHEMA (to DST)
  db-name [DB]            report name of schema used by DB
  db-version [DB]         report version of schema used by DB
  db-cksum [DB]           report checksum of schema used by DB
  db-cid DB               report cluster ID of clustered DB
  db-sid DB               report server ID of clustered DB
  db-local-address DB     report local address of clustered DB
  db-is-clustered DB      test whether DB is clustered
  db-is-standalone DB     test whether DB is standalone
  schema-name [SCHEMA]    report SCHEMA's name
  schema-version [SCHEMA] report SCHEMA's schema version
  schema-cksum [SCHEMA]   report SCHEMA's checksum
  compare-versions A OP B  compare OVSDB schema version numbers
  query [DB] TRNS         execute read-only transaction on DB
  transact [DB] TRNS      execute read/write transaction on DB
  cluster-to-standalone DB DB    Convert clustered DB to
      standalone DB when cluster is down and cannot be
        revived
  [-m]... show-log [DB]   print DB's log entries
The default DB is {db}.
The default SCHEMA is {schema}.

Logging options:
  -vSPEC, --verbose=SPEC   set logging levels
  -v, --verbose            set maximum verbosity level
  --log-file[=FILE]        enable logging to specified FILE
                           (default: {logdir}/ovsdb-tool.log)
  --syslog-method=(libc|unix:file|udp:ip:port)
                           specify how to send messages to syslog daemon
  --syslog-target=HOST:PORT  also send syslog msgs to HOST:PORT via UDP

Other options:
  -m, --more                  increase show-log verbosity
  --rbac-role=ROLE            RBAC role for transact and query commands
  -h, --help                  display this help message
  -V, --version               display version information
"""
PROGRAM = "pyovsdb tool"

LONG = {"more": opt.NONE, "help": opt.NONE, "version": opt.NONE, "verbose": opt.OPTIONAL,
        "rbac-role": opt.REQUIRED, "timeout": opt.REQUIRED, "election-timer": opt.REQUIRED,
        "cid": opt.REQUIRED}
SHORT = {"m": ("more", opt.NONE), "h": ("help", opt.NONE), "V": ("version", opt.NONE),
         "v": ("verbose", opt.OPTIONAL), "t": ("timeout", opt.REQUIRED)}
ELECTION_TIMER_MIN, ELECTION_TIMER_MAX = 100, 600000


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
        _check_options(parsed)
    except (opt.UsageError, ToolError) as e:
        print(f"{PROGRAM}: {e}", file=sys.stderr)
        return 1
    if parsed.has("help"):
        print(USAGE.format(prog=PROGRAM, db=default_db(), schema=default_schema(),
                           logdir=daemon.logdir()), end="")
        return 0
    if parsed.has("version"):
        print(f"{PROGRAM} {__version__}")
        return 0
    if not parsed.args:
        print(f"{PROGRAM}: missing command name; use --help for help", file=sys.stderr)
        return 1
    cmd, args = parsed.args[0], parsed.args[1:]
    entry = COMMANDS.get(cmd)
    if entry is None:
        print(f"{PROGRAM}: unknown command '{cmd}'; use --help for help", file=sys.stderr)
        return 1
    fn, lo, hi = entry
    if cmd in WRITERS:
        _logs()  # a write that fails is logged, as by the real tool
    if len(args) < lo:
        print(f"{PROGRAM}: '{cmd}' command requires at least {lo} arguments",
              file=sys.stderr)
        return 1
    if len(args) > hi:
        print(f"{PROGRAM}: '{cmd}' command takes at most {hi} arguments", file=sys.stderr)
        return 1
    try:
        return fn(args, parsed) or 0
    except (ToolError, OvsdbError, OSError) as e:
        print(f"{PROGRAM}: {_message(e)}", file=sys.stderr)
        return 1


def _check_options(parsed: opt.Parsed) -> None:
    """What the real tool checks while it parses its options, in their order."""
    for name, value in parsed.options:
        if name == "verbose":
            try:
                _logs().set_verbosity(value)
            except ValueError as e:
                raise ToolError(str(e)) from None
        elif name == "cid":
            if not is_uuid_string(value) or value.strip("-0") == "":
                raise ToolError(f"{value}: not a valid UUID")
        elif name == "election-timer" and not (
                ELECTION_TIMER_MIN <= _atoll(value) <= ELECTION_TIMER_MAX):
            raise ToolError(f"ovsdb error: election timer must be between "
                                f"{ELECTION_TIMER_MIN} and {ELECTION_TIMER_MAX}, in msec.")


def _logs() -> vlog.Vlog:
    """The log, as the real tool's (the console at info and above unless -v says
    otherwise); set up only by a command that writes a file or logs, or a -v option."""
    logs = vlog.current()
    logs.program = "ovsdb-tool"
    return logs


def _atoll(text: str) -> int:
    """C's atoll: leading white space, a sign, digits; 0 if there are none."""
    m = re.match(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", text)
    return int(m.group(1)) if m else 0


def _message(e: Exception) -> str:
    if isinstance(e, OvsdbError):
        return error_to_string(e)
    if isinstance(e, OSError) and e.filename:
        return f"{e.filename}: {e.strerror}"
    return str(e)


# -- commands ------------------------------------------------------------------------------


def cmd_create(args: list[str], parsed: opt.Parsed) -> int:
    db = args[0] if args else default_db()
    schema = read_schema_file(args[1] if len(args) > 1 else default_schema())
    standalone.create(db, schema.to_json())
    return 0


def cmd_compact(args: list[str], parsed: opt.Parsed) -> int:
    db = args[0] if args else default_db()
    dst = args[1] if len(args) > 1 else None
    _compact_or_convert(db, dst, None, f"compacted by pyovsdb tool {__version__}")
    return 0


def cmd_convert(args: list[str], parsed: opt.Parsed) -> int:
    db = args[0] if args else default_db()
    schema = read_schema_file(args[1] if len(args) > 1 else default_schema())
    dst = args[2] if len(args) > 2 else None
    _compact_or_convert(db, dst, schema, f"converted by pyovsdb tool {__version__}")
    return 0


def _compact_or_convert(src: str, dst: str | None, schema: DatabaseSchema | None,
                        comment: str) -> None:
    """The real tool's compact_or_convert: `src` (a standalone file; read as `schema`
    if one is given) written compacted to `dst`, or in place through `SRC.tmp` and a
    rename. Symlinks are followed, so a link stays a link. The source is locked when it
    is replaced, and the file written always, as by the real tool."""
    in_place = dst is None
    src = _follow_symlinks(src)
    dst = src + ".tmp" if dst is None else _follow_symlinks(dst)
    locks = [_lock(src)] if in_place else []
    try:
        locks.append(_lock(dst))
        if schema is None:
            database, _ = _load_whole(src)
        else:
            database = standalone.load_as_schema(src, schema)
        ovslog.overwrite_file(dst, [jsonorder.schema_record(database.schema),
                                    standalone.snapshot_record(database, comment)])
        if in_place:
            try:
                ovslog.rename_over(dst, src)
            except OSError as e:
                raise ToolError(f'failed to rename "{dst}" to "{src}" ({e.strerror})'
                                ) from None
    finally:
        for lock in locks:
            lock.release()


def _follow_symlinks(path: str) -> str:
    """`follow_symlinks`: the file a chain of symlinks ends at, named relative to the
    directory of each link (the path itself if it is no link)."""
    for _ in range(10):
        try:
            target = os.readlink(path)
        except OSError:
            break
        path = target if os.path.isabs(target) else os.path.join(os.path.dirname(path),
                                                                 target)
    return path


def _lock(path: str) -> ovslog.FileLock:
    try:
        return ovslog.FileLock(path)
    except OvsdbError as e:
        reason = re.search(r"\(([^()]*)\)$", e.details or "")
        raise ToolError(f"{path}: failed to lock lockfile ({reason.group(1) if reason else e})"
                        ) from None


def _load_whole(path: str) -> tuple[Any, ovslog.ReadResult]:
    """A database the command needs all of: as in the real tool, a record it cannot
    read or apply is fatal (the server, in contrast, goes on without it)."""
    database, res, _ = standalone.load(path)
    if res.problem is not None:
        raise res.problem
    return database, res


def _schema_of_db(args: list[str]) -> DatabaseSchema:
    """The schema of a standalone or clustered database file (`db-name`)."""
    from ..storage import clustered

    db = args[0] if args else default_db()
    if clustered.is_clustered(db):
        header, records, _, _ = clustered.read(db)
        return clustered.build_database(header, records).schema
    return standalone.read_schema(db)


def _schema_file(args: list[str]) -> DatabaseSchema:
    return read_schema_file(args[0] if args else default_schema())


def cmd_db_name(args: list[str], parsed: opt.Parsed) -> int:
    print(_schema_of_db(args).name)
    return 0


def cmd_db_version(args: list[str], parsed: opt.Parsed) -> int:
    print(standalone.read_schema(args[0] if args else default_db()).version or "")
    return 0


def cmd_db_cksum(args: list[str], parsed: opt.Parsed) -> int:
    print(standalone.read_schema(args[0] if args else default_db()).cksum or "")
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
    """`yes` if the standalone DB's schema differs from SCHEMA in anything its
    normalized JSON says (version and checksum included), else `no`."""
    db_schema = standalone.read_schema(args[0] if args else default_db())
    schema = _schema_file(args[1:2])
    print("no" if db_schema.to_json() == schema.to_json() else "yes")
    return 0


def parse_version(text: str) -> tuple[int, int, int] | None:
    """`ovsdb_parse_version`: "X.Y.Z" read as `%u.%u.%u%n` by OVS's scanner: white space
    before each number, an optional sign, decimal digits taken modulo 2**32 (a negative
    number wraps), nothing after the last one."""
    parts = []
    pos = 0
    for i in range(3):
        if i:
            if text[pos:pos + 1] != ".":
                return None
            pos += 1
        m = _VERSION_PART.match(text, pos)
        if m is None:
            return None
        value = int(m.group(2)) % 2**64
        if m.group(1) == "-":
            value = -value % 2**64
        parts.append(value % 2**32)
        pos = m.end()
    if pos != len(text):
        return None
    return parts[0], parts[1], parts[2]


_VERSION_PART = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)")
_RELATIONS = {"<": lambda c: c < 0, "<=": lambda c: c <= 0, "==": lambda c: c == 0,
              ">=": lambda c: c >= 0, ">": lambda c: c > 0, "!=": lambda c: c != 0}


def cmd_compare_versions(args: list[str], parsed: opt.Parsed) -> int:
    """Exit 0 if `A OP B` holds, 2 if not."""
    versions = []
    for text in (args[0], args[2]):
        v = parse_version(text)
        if v is None:
            raise ToolError(f"{text}: not an OVSDB version number in format x.y.z")
        versions.append(v)
    a, b = versions
    relation = _RELATIONS.get(args[1])
    if relation is None:
        raise ToolError(f"{args[1]}: not a relational operator")
    return 0 if relation((a > b) - (a < b)) else 2


def cmd_db_is_standalone(args: list[str], parsed: opt.Parsed) -> int:
    res = ovslog.read_file(args[0] if args else default_db())
    return 0 if res.magic == ovslog.MAGIC_STANDALONE else 2
def cmd_db_is_clustered(args: list[str], parsed: opt.Parsed) -> int:
    res = ovslog.read_file(args[0] if args else default_db())
    return 0 if res.magic == ovslog.MAGIC_CLUSTERED else 2


def _header(path: str) -> Header:
    from ..storage import clustered

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
    from ..raft.core import initial_snapshot
    from ..raft.records import Header
    from ..storage import clustered

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
        schema_json = read_json_file(contents)
        DatabaseSchema.from_json(schema_json)
    persisted, changed = clustered.schema_for_cluster(schema_json)
    warning = clustered.persist_ephemeral_warning(contents, schema_json, changed)
    if warning is not None:
        # The real tool's VLOG_WARN (on the console unless `-vconsole:off`).
        logging.getLogger("ovsdb").warning("%s", warning)
    # The file holds the normalized schema, as the real tool writes it.
    schema_json = DatabaseSchema.from_json(persisted).to_json()
    check_raft_address(local)
    timer = parsed.get("election-timer")  # checked with the options
    records = []
    if timer is not None:
        records.append({"term": 1, "index": 2, "election_timer": _atoll(timer)})
    sid = new_uuid()
    header = Header(sid=sid, name=schema_json["name"], local_address=local, cid=new_uuid(),
                    snapshot=initial_snapshot(sid, local, [schema_json, data], new_uuid()))
    clustered.create(db, header, records)
    return 0


def cmd_join_cluster(args: list[str], parsed: opt.Parsed) -> int:
    from ..raft.records import Header
    from ..storage import clustered

    db, name, local, *remotes = args
    check_raft_address(local)
    for r in remotes:
        check_raft_address(r)
    if local in remotes:
        raise ToolError("ovsdb error: remote addresses cannot be the same as the local address")
    cid = parsed.get("cid")  # checked with the options
    header = Header(sid=new_uuid(), name=name, local_address=local, cid=cid,
                    remote_addresses=remotes)
    clustered.create(db, header)
    return 0


def cmd_cluster_to_standalone(args: list[str], parsed: opt.Parsed) -> int:
    from ..storage import clustered

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
    from ..ovsdb.changeset import Changeset
    from ..ovsdb.transaction import Blocked, Committed, execute

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


# The commands that write a whole file (`storage.log` logs a write that fails).
WRITERS = frozenset({"create", "compact", "convert", "create-cluster", "join-cluster",
                     "cluster-to-standalone"})
COMMANDS = {
    "create": (cmd_create, 0, 2),
    "compact": (cmd_compact, 0, 2),
    "db-name": (cmd_db_name, 0, 1),
    "db-version": (cmd_db_version, 0, 1),
    "db-cksum": (cmd_db_cksum, 0, 1),
    "schema-name": (cmd_schema_name, 0, 1),
    "schema-version": (cmd_schema_version, 0, 1),
    "schema-cksum": (cmd_schema_cksum, 0, 1),
    "convert": (cmd_convert, 0, 3),
    "needs-conversion": (cmd_needs_conversion, 0, 2),
    "compare-versions": (cmd_compare_versions, 3, 3),
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

