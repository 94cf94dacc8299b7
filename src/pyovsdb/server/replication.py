"""Active-backup replication: a backup server (`--sync-from=SERVER`) follows an active one,
as OVS 3.1's `ovsdb/replication.c` does.

Rules kept here:
- A backup connects to its active server, reconnecting as OVS's reconnect state machine
  says (`util.reconnect.ReconnectLog`). On each connection it asks `get_server_id` and
  refuses to follow itself ("Server ID check failed: Self replicating is not allowed",
  logged as an unexpected ovsdb error). A replication that fails so ends: the server is
  the active one from then on, as the real one's main loop decides. Then `list_dbs`,
  then the schema of each database both servers host (not `_Server`). A database the
  local schema cannot hold (a table or column of the active one missing here) is not
  replicated, logged as the real server logs it; if none is left, "Nothing to
  replicate." fails the replication.
- Each replicated database gets one `monitor` (version 1, the monitor id its name) of
  every table of the active schema not excluded (`--sync-exclude-tables=DB:TABLE,...`),
  every column. Its reply replaces the contents of those tables here in one local
  transaction (every row deleted, the active's rows inserted with their UUIDs); each
  `update` notification is applied as one local transaction (rows inserted with their
  UUIDs, modified to their new values, deleted).
- The connection to the active server is probed every 60 s (the real
  `REPLICATION_DEFAULT_PROBE_INTERVAL`), or as `set-active-ovsdb-server-probe-interval`
  says (milliseconds; 0 turns probes off), applied at once.
- While a server is a backup, its clients may not write (`Server.backup`: every session
  is read-only, as `ovsdb_jsonrpc_server_set_read_only`); `stop()` (the
  `disconnect-active-ovsdb-server` command) ends the replication and makes it active.
- `status()` is `replication_status()`'s text: "connecting: SERVER", "replicating:
  SERVER" with the databases (and the excluded tables), "Replication to (SERVER)
  failed", or "not connected to SERVER".
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..jsonrpc.session import ClientConnection, ConnectionLost, RpcError
from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema
from ..ovsdb.transaction import Committed, execute
from ..util.ovshash import shash_order
from ..util.reconnect import ReconnectLog
from .active import attempt

if TYPE_CHECKING:
    from .hosted import HostedDb
    from .server import Server

log = logging.getLogger("replication")
error_log = logging.getLogger("ovsdb_error")

SERVER_DB = "_Server"


class ReplicationFailed(Exception):
    pass


def parse_excluded(text: str) -> dict[str, set[str]]:
    """`DB:TABLE,...` (commas or spaces) as `set_excluded_tables` reads it: db -> its
    tables (an item without a colon names a table "", as C's `strtok_r` leaves it)."""
    out: dict[str, set[str]] = {}
    for item in text.replace(" ", ",").split(","):
        if item:
            db, _, table = item.partition(":")
            out.setdefault(db, set()).add(table)
    return out


def excluded_text(excluded: dict[str, set[str]]) -> str:
    """`get_excluded_tables`: `DB:TABLE` sorted, comma-separated."""
    return ",".join(sorted(f"{db}:{t}" for db, ts in excluded.items() for t in ts))


class Replication:
    def __init__(self, server: Server, sync_from: str, exclude: str = "") -> None:
        self.server = server
        self.sync_from = sync_from
        self.excluded = parse_excluded(exclude)
        self.exclude_text = exclude
        self.state = "connecting"  # connecting | replicating | failed
        self.connected = False
        self.dbs: list[str] = []
        self._task: asyncio.Task[None] | None = None
        self._conn: ClientConnection | None = None
        self._fsm: ReconnectLog | None = None
        self._probe_failed = False  # (the last connection ended by a probe)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def status(self) -> str:
        if not self.connected:
            return f"not connected to {self.sync_from}"
        if self.state == "failed":
            return f"Replication to ({self.sync_from}) failed\n"
        if self.state == "connecting":
            return f"connecting: {self.sync_from}"
        text = f"replicating: {self.sync_from}\ndatabase: " + ", ".join(self.dbs)
        if self.excluded:
            text += "\nexclude: " + excluded_text(self.excluded)
        return text

    # -- the connection ---------------------------------------------------------------

    async def _run(self) -> None:
        fsm = self._fsm = ReconnectLog()
        while True:
            self.state = "connecting"
            conn = await attempt(fsm, self.sync_from, self._make_conn,
                                 self.server.pki.client_context)
            if conn is None:
                await asyncio.sleep(fsm.backoff_ms / 1000.0)
                continue
            fsm.connected()
            self._conn = conn
            self.connected = True
            try:
                await self._follow(conn)
                await conn.lost
            except ReplicationFailed as e:
                # (the real server's main loop: replication no longer alive, so it
                # disconnects and is the active server)
                if str(e):
                    error_log.error("unexpected ovsdb error: %s", e)
                self.state = "failed"
                conn.close()
                self.connected = False
                self._conn = None
                self._task = None
                self.server.backup = False
                self.server.replication = None
                return
            except (ConnectionLost, RpcError, OSError):
                pass
            self.connected = False
            self._conn = None
            if not self._probe_failed:
                fsm.disconnected(None)
            self._probe_failed = False
            await asyncio.sleep(fsm.backoff_ms / 1000.0)

    def _make_conn(self) -> ClientConnection:
        conn = ClientConnection(self.sync_from, on_notify=self._on_notify,
                                probe_interval=self.server.replication_probe_ms / 1000.0)

        def probe_failed() -> None:  # (a client's reconnect FSM words it, not a server's)
            self._probe_failed = True
            if self._fsm is not None:
                self._fsm.probe_failed(conn.probe_interval)
            conn.close()

        conn.probe_failed = probe_failed  # type: ignore[method-assign]
        return conn

    def set_probe_interval(self, ms: int) -> None:
        """`set-active-ovsdb-server-probe-interval`: the connection's probes, now."""
        if self._conn is not None:
            self._conn.set_probe_interval(ms / 1000.0)

    async def _follow(self, conn: ClientConnection) -> None:
        server_id = await conn.request("get_server_id", [])
        if server_id == self.server.server_id:
            raise ReplicationFailed("Server ID check failed: Self replicating is not "
                                    "allowed")
        names = await conn.request("list_dbs", [])
        dbs = []
        for name in names:
            hosted = self.server.dbs.get(name)
            if name == SERVER_DB or hosted is None:
                continue
            schema = await conn.request("get_schema", [name])
            if not _can_hold(hosted.db.schema, schema, name):
                continue
            dbs.append((name, schema))
        if not dbs:
            log.warning("Nothing to replicate.")
            raise ReplicationFailed("")  # (logged)
        self.dbs = [name for name, _ in dbs]
        for name, schema in dbs:
            excluded = self.excluded.get(name, set())
            tables = {t: {"columns": sorted(ts["columns"])}
                      for t, ts in sorted(schema["tables"].items()) if t not in excluded}
            initial = await conn.request("monitor", [name, name, tables])
            log.info("Monitor request received. Resetting the database")
            self._apply(name, initial, reset=set(tables))
        self.state = "replicating"

    def _on_notify(self, method: str, params: list[Any]) -> None:
        if method == "update" and len(params) == 2 and params[0] in self.dbs:
            self._apply(str(params[0]), params[1])

    # -- applying ------------------------------------------------------------------------

    def _apply(self, name: str, updates: dict[str, Any], reset: set[str] | None = None
               ) -> None:
        hosted = self.server.dbs.get(name)
        if hosted is not None:
            apply_updates(self.server, hosted, updates, reset)


def apply_updates(server: Server, hosted: HostedDb, updates: dict[str, Any],
                  reset: set[str] | None = None) -> None:
    """Version-1 table-updates of another server applied here as one transaction;
    `reset`: the tables whose every row not in `updates` goes (a monitor's initial
    reply)."""
    name = hosted.name
    schema = hosted.db.schema
    ops: list[dict[str, Any]] = []
    if reset is not None:
        # (the local rows made what the active server has: a row deleted and inserted
        # again with its UUID in one transaction would be a duplicate UUID)
        for table in sorted(reset):
            local = hosted.db.tables.get(table)
            theirs = updates.get(table, {})
            for uuid in list(local.rows) if local is not None else ():
                if uuid not in theirs:
                    ops.append({"op": "delete", "table": table,
                                "where": [["_uuid", "==", ["uuid", uuid]]]})
    for table, rows in updates.items():
        ts = schema.tables.get(table)
        local = hosted.db.tables.get(table)
        for uuid, change in rows.items():
            new = change.get("new")
            where = [["_uuid", "==", ["uuid", uuid]]]
            exists = local is not None and uuid in local.rows
            if new is None:
                ops.append({"op": "delete", "table": table, "where": where})
            elif not exists:
                ops.append({"op": "insert", "table": table, "uuid": uuid, "row": new})
            else:
                # (the columns that changed, or all if unknown; never an immutable
                # one, which cannot change)
                changed = change.get("old") if reset is None else None
                row = {c: v for c, v in new.items()
                       if (changed is None or c in changed) and ts is not None
                       and c in ts.columns and ts.columns[c].mutable}
                if row:
                    ops.append({"op": "update", "table": table, "where": where,
                                "row": row})
    outcome = execute(hosted.db, ops)
    if not isinstance(outcome, Committed):
        log.error("%s: applying the active server's changes failed: %s", name,
                  getattr(outcome, "results", outcome))
        return
    if outcome.changeset:
        server.commit_local(hosted, outcome.changeset)


def _can_hold(local: DatabaseSchema, active_json: dict[str, Any], name: str) -> bool:
    """Whether this server can replicate `name` from the active server's schema: equal,
    or every table and column of the active one here with the same definition
    (`is_replication_possible`, walked in the real server's order, with its lines)."""
    try:
        active = DatabaseSchema.from_json(active_json)
    except OvsdbError:
        return False
    if active.to_json() == local.to_json():
        return True
    log.info("Schema version mismatch, checking if %s can still be replicated or not.",
             name)
    ok = _compatible(local, active, active_json)
    log.info("%s %s be replicated.", name, "can" if ok else "cannot")
    return ok


def _walk(obj: dict[str, Any]) -> tuple[str, ...]:
    """The order the real server walks a schema's shash of tables (or columns): filled
    by walking the parsed JSON object (itself a shash filled in text order)."""
    return shash_order(shash_order(obj))


def _compatible(local: DatabaseSchema, active: DatabaseSchema,
                active_json: dict[str, Any]) -> bool:
    tables_json = active_json.get("tables", {})
    for table in _walk(tables_json):
        mine = local.tables.get(table)
        if mine is None:
            log.info("Table %s not present in the local db schema", table)
            return False
        theirs = active.tables[table]
        for column in _walk(tables_json[table].get("columns", {})):
            mine_col = mine.columns.get(column)
            if mine_col is None:
                log.info("Column %s not present in the local db schema table %s.",
                         column, table)
                return False
            if mine_col.to_json() != theirs.columns[column].to_json():
                log.info("Column %s mismatch in local db schema table %s.", column, table)
                return False
    return True
