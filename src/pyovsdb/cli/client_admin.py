"""`pyovsdb client` commands that manage a live database as a whole: `convert`,
`needs-conversion`, `wait`, `backup` and `restore` (ovsdb-client 3.1's).

Rules kept here:
- `convert [SERVER] SCHEMA` and `needs-conversion [SERVER] SCHEMA` act on the database
  the schema names; on a clustered database the schema's ephemeral columns are made
  persistent first (with the real warning), as the server stores them. A database the
  server lacks gets the server's own error (the real tool crashes there).
- `wait [SERVER] DATABASE STATE` watches `_Server` until DATABASE is `added`,
  `connected` or `removed`; it keeps trying to connect, and reconnects, with the real
  session's backoff and `reconnect` log lines, until `-t` ends it.
- `backup` writes a standalone database file (schema record, then every row in one
  record) to standard output, never to a terminal; `restore` reads one from standard
  input and replaces the database's contents in one transaction: every table emptied,
  every row inserted again. Rows get new UUIDs, as with the real tool (references
  between restored rows follow them); ephemeral columns are not restored. A backup
  whose schema differs is refused unless `--force`.
- Errors are the real tool's texts, one line on stderr, exit status 1.
"""

from __future__ import annotations

import sys
import time
from typing import Any, NoReturn

from ..jsonrpc.client import Client, RpcError, connect
from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema, TableSchema
from ..storage import jsonorder, standalone
from ..storage import log as ovslog
from ..storage.schemafile import read_schema_file
from ..util.ovsjson import json_to_string, shash_order
from ..util.reconnect import ReconnectLog
from . import options as opt
from .client import (
    NEED_DATABASE,
    Context,
    check_txn,
    default_remote,
    error_to_string,
    fatal,
    fetch_schema,
    logger,
    open_rpc,
    send_db_change_aware,
    transact_block,
    warn,
    with_default_port,
)

# -- convert, needs-conversion -----------------------------------------------------------


def _schema_arg(args: list[str]) -> DatabaseSchema:
    try:
        return read_schema_file(args[-1])
    except OvsdbError as e:
        fatal(error_to_string(e))


def _is_clustered(ctx: Context, client: Client, database: str) -> bool:
    op = {"op": "select", "table": "Database", "where": [["name", "==", database]]}
    result = check_txn(ctx, transact_block(client, "transact", ["_Server", op]))
    if type(result) is not list or len(result) != 1 or type(result[0]) is not dict:
        logger("ovsdb_client").warning("%s: unexpected reply to _Server request for %s",
                                       client.remote, database)
        return False
    rows = result[0].get("rows")
    if type(rows) is not list:
        logger("ovsdb_client").warning('%s: missing "rows" member in  _Server reply for %s',
                                       client.remote, database)
        return False
    for row in rows:
        if type(row) is dict and row.get("name") == database:
            return row.get("model") == "clustered"
    return False


def _as_clustered(schema: DatabaseSchema, path: str) -> DatabaseSchema:
    """`ovsdb_schema_persist_ephemeral_columns`, with its warning."""
    from ..storage import clustered

    raw = schema.raw_json if schema.raw_json is not None else schema.to_json()
    persisted, changed = clustered.schema_for_cluster(raw)
    warning = clustered.persist_ephemeral_warning(path, raw, changed)
    if warning is None:
        return schema
    logger("ovsdb").warning("%s", warning)
    out = DatabaseSchema.from_json(persisted)
    out.json = persisted
    return out


def _open_for_schema(ctx: Context, parsed: opt.Parsed, args: list[str]
                     ) -> tuple[Client, DatabaseSchema]:
    schema = _schema_arg(args)
    client, _, _ = open_rpc(ctx, parsed, 1, NEED_DATABASE, args, schema.name)
    if _is_clustered(ctx, client, schema.name):
        schema = _as_clustered(schema, args[-1])
    return client, schema


def cmd_convert(ctx: Context, parsed: opt.Parsed, args: list[str]) -> None:
    client, schema = _open_for_schema(ctx, parsed, args)
    try:
        send_db_change_aware(ctx, client)
        check_txn(ctx, transact_block(client, "convert", [schema.name, schema.to_json()]))
    finally:
        client.close()


def cmd_needs_conversion(ctx: Context, parsed: opt.Parsed, args: list[str]) -> None:
    client, schema = _open_for_schema(ctx, parsed, args)
    try:
        online = fetch_schema(ctx, client, schema.name).schema
    finally:
        client.close()
    print("no" if online.to_json() == schema.to_json() else "yes")


# -- wait --------------------------------------------------------------------------------


def wait_transaction(state: str, database: str) -> list[Any]:
    op: dict[str, Any] = {"op": "wait", "table": "Database",
                          "where": [["name", "==", database]]}
    if state == "connected":
        op.update(columns=["connected"], until="==", rows=[{"connected": True}])
    else:
        op.update(columns=[], until="==", rows=[{}] if state == "added" else [])
    return ["_Server", op]


def check_transaction_reply(result: Any) -> None:
    if type(result) is not list:
        fatal("result is not array")
    for op in result:
        if type(op) is not dict:
            fatal("result array element is not object")
        if "error" in op:
            fatal(f"server returned error reply: {json_to_string(op, sort=True)}")


def cmd_wait(ctx: Context, parsed: opt.Parsed, args: list[str]) -> None:
    database, state = args[-2], args[-1]
    if state not in ("connected", "added", "removed"):
        fatal(f"{state}: unknown state")
    remote = args[0] if len(args) > 2 else default_remote()
    logger("reconnect")  # ReconnectLog's lines go to the real tool's log
    fsm = ReconnectLog()
    txn = wait_transaction(state, database)
    while True:
        fsm.connecting(remote)
        try:
            sock = connect(with_default_port(remote))
        except (OSError, RpcError, ValueError) as e:
            fsm.failed(getattr(e, "strerror", None) or str(e))
            time.sleep(fsm.backoff_ms / 1000)
            continue
        fsm.connected()
        since = time.monotonic()
        client = Client(with_default_port(remote), sock=sock)
        try:
            _wait_on(client, remote, txn)  # exits once the state is reached
        except (OSError, RpcError):
            pass
        finally:
            client.close()
        # Used if it lasted the backoff (`reconnect_disconnected` asks it of the last
        # activity).
        fsm.disconnected(None, used=(time.monotonic() - since) * 1000 >= fsm.backoff_ms)
        time.sleep(fsm.backoff_ms / 1000)


def _wait_on(client: Client, remote: str, txn: list[Any]) -> NoReturn:
    aware = client.send("set_db_change_aware", [True])
    done = client.send("transact", txn)
    msg = client.wait(aware)
    if msg.get("error") is not None:
        warn(f"{remote}: set_db_change_aware failed "
             f"({json_to_string(msg.get('error'), sort=False)})")
        sys.exit(1)
    check_transaction_reply(client.wait(done).get("result"))
    sys.exit(0)


# -- backup ------------------------------------------------------------------------------


def _backup_columns(ts: TableSchema, order: list[str]) -> list[str]:
    """The columns a backup selects: `_uuid` and every persistent column, in the order
    the real tool walks them."""
    return [c for c in order
            if c == "_uuid" or (c in ts.columns and not ts.columns[c].ephemeral)]


def cmd_backup(ctx: Context, client: Client, database: str | None, args: list[str]) -> None:
    assert database is not None
    if sys.stdout.isatty():
        fatal("not writing backup to a terminal; please redirect stdout to a file")
    schema = fetch_schema(ctx, client, database)
    tables = [(name, schema.schema.tables[name]) for name in schema.table_order]
    txn: list[Any] = [database]
    for name, ts in tables:
        txn.append({"op": "select", "table": name, "where": [],
                    "columns": _backup_columns(ts, schema.column_order(name))})
    result = check_txn(ctx, transact_block(client, "transact", txn))
    if type(result) is not list or len(result) != len(tables):
        fatal(f"reply is not array of {len(tables)} elements: "
              f"{json_to_string(result, sort=False)}")
    # The members come out in the real tool's order: it builds each object in the order
    # it reads its parts (a row is the reply's own object) and writes it in hash order.
    record: dict[str, Any] = {}
    for (name, _), op_result in zip(tables, result, strict=True):
        rows = op_result.get("rows") if type(op_result) is dict else None
        if type(rows) is not list:
            fatal(f'{name} table reply is not an object with a "rows" member array: '
                  f"{json_to_string(op_result, sort=False)}")
        out: dict[str, Any] = {}
        for row in rows:
            if type(row) is not dict:
                fatal(f"{name} table reply row is not an object: "
                      f"{json_to_string(row, sort=False)}")
            if "_uuid" not in row:
                fatal(f"{name} table reply row lacks _uuid member: "
                      f"{json_to_string(row, sort=False)}")
            uuid = row["_uuid"]
            if not (type(uuid) is list and len(uuid) == 2 and uuid[0] == "uuid"
                    and type(uuid[1]) is str):
                fatal(f'syntax "{json_to_string(uuid, sort=False)}": syntax error: '
                      "expected [\"uuid\", <string>]")
            # The row is the reply's object itself, `_uuid` taken out.
            out[uuid[1]] = {k: row[k] for k in shash_order(row) if k != "_uuid"}
        if out:
            record[name] = {u: out[u] for u in shash_order(out)}
    record["_comment"] = 'produced by "ovsdb-client backup"'
    record["_is_diff"] = True
    record["_date"] = int(time.time() * 1000)
    data = ovslog.frame(jsonorder.schema_record(schema.schema)) \
        + ovslog.frame({k: record[k] for k in shash_order(record)})
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


# -- restore -----------------------------------------------------------------------------


def row_name(uuid: str) -> str:
    """`ovsdb_data_row_name`: the uuid-name a restored row is inserted under."""
    return "row" + uuid.replace("-", "_")


def _with_row_names(ts: TableSchema, cname: str, value: Any) -> Any:
    """A column's JSON value with references to rows (a `refTable`) written as the
    named-uuids of the restored rows (`ovsdb_datum_to_json_with_row_names`)."""
    ctype = ts.columns[cname].type
    key_ref = ctype.key.ref_table is not None
    value_ref = ctype.value is not None and ctype.value.ref_table is not None
    if not (key_ref or value_ref):
        return value

    def atom(a: Any, ref: bool) -> Any:
        if ref and type(a) is list and len(a) == 2 and a[0] == "uuid":
            return ["named-uuid", row_name(a[1])]
        return a

    if type(value) is list and value and value[0] == "map":
        return ["map", [[atom(k, key_ref), atom(v, value_ref)] for k, v in value[1]]]
    if type(value) is list and value and value[0] == "set":
        return ["set", [atom(a, key_ref) for a in value[1]]]
    return atom(value, key_ref)


def restore_transaction(db: Any) -> list[Any]:
    """The real tool's restore transaction for the database read from a backup."""
    schema = db.schema
    txn: list[Any] = [schema.name]
    for tname in jsonorder.snapshot_tables(schema):
        ts = schema.tables[tname]
        txn.append({"op": "delete", "table": tname, "where": []})
        rows = db.tables[tname].rows
        columns = [(c, ts.columns[c].type.codec) for c in ts.columns
                   if not ts.columns[c].ephemeral]
        for uuid in jsonorder.uuid_hmap_order(list(rows)):
            data = rows[uuid].data
            row = {c: _with_row_names(ts, c, codec.to_json(data[c]))
                   for c, codec in columns if data[c] != codec.default}
            txn.append({"op": "insert", "table": tname, "uuid-name": row_name(uuid),
                        "row": row})
    return txn


def cmd_restore(ctx: Context, client: Client, database: str | None, args: list[str]) -> None:
    assert database is not None
    if sys.stdin.isatty():
        fatal("not reading backup from a terminal; please redirect stdin from a file")
    data = sys.stdin.buffer.read()
    try:
        backup = standalone.load_data(data, "/dev/stdin")
    except OvsdbError as e:
        fatal(error_to_string(e))
    online = fetch_schema(ctx, client, database).schema
    if backup.schema.to_json() != online.to_json():
        if backup.schema.version != online.version:
            why = (f'backup schema has version "{backup.schema.version or ""}" but database '
                   f'schema has version "{online.version or ""}"')
        else:
            why = (f"backup schema and database schema are both version "
                   f"{backup.schema.version or ''} but still differ")
        if not ctx.force:
            fatal(f'{why} (use --force to override differences, or "ovsdb-client convert" '
                  "to change the schema)")
        logger("ovsdb_client").info("%s", why)
    result = check_txn(ctx, transact_block(client, "transact", restore_transaction(backup)))
    check_transaction_reply(result)
