"""The IDL: a live replica of (part of) a database, kept through a monitor, with change
tracking and transactions, over one connection chosen from a list of remotes.

Rules kept here:
- Remotes are tried in order (shuffled each round unless told otherwise); a failed
  round waits with exponential backoff and jitter, reset once a session has synced.
- Before monitoring data, the server's `_Server` row for the database is checked, and
  monitored for as long as the session lasts: a server is skipped (or left) if the
  database is missing, a clustered member is not connected, it is not the leader in
  leader-only mode, or its index is behind one already seen (stale data).
- Data is monitored with `monitor_cond_since`, falling back to `monitor_cond` then
  `monitor` on "unknown method". After a reconnection the last transaction id is sent,
  so only missed changes are transferred; the changes recorded for the application are
  exactly what changed while away, either way.
- Every applied batch bumps `seqno`, is recorded (bounded) for `changes_since`, merged
  into `tracked` until `track_clear`, and passed to callbacks. Callbacks get immutable
  rows (old and new), never copies.
- A transaction's reply is processed after the updates the server sent before it, so
  a successful commit is visible in the replica when `commit()` returns.
- `NoServerError` is raised when no remote is usable within the timeout asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from ..jsonrpc.session import ClientConnection, ConnectionLost, RpcError, connect
from ..ovsdb.changeset import Changeset, merge
from ..ovsdb.schema import DatabaseSchema, load_schema_file
from ..util import gctune
from .replica import Replica, ReplicaTable
from .txn import NewRow, Result, Status, Transaction

log = logging.getLogger("ovsdb_idl")

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
SERVER_COLUMNS = ["name", "model", "connected", "leader", "schema", "cid", "sid", "index"]

# Column modes, as in the C IDL: replicate and alert (default), replicate without
# alerting (write-only: unchanged writes are dropped), or fetch on demand only.
ALERT, MONITOR, ON_DEMAND = "alert", "monitor", "on-demand"

ChangeCallback = Callable[[Changeset], None]


class NoServerError(Exception):
    """No remote could be used (unreachable, or not suitable: not leader, stale...)."""


class _Unsuitable(Exception):
    pass


class Idl:
    def __init__(
        self,
        remotes: str | Iterable[str],
        database: str,
        *,
        schema: DatabaseSchema | dict[str, Any] | str | None = None,
        tables: dict[str, Iterable[str] | None] | Iterable[str] | None = None,
        modes: dict[str, dict[str, str]] | None = None,
        conditions: dict[str, list[Any]] | None = None,
        leader_only: bool = True,
        shuffle: bool = True,
        write_changed_only: bool | Iterable[tuple[str, str]] = False,
        probe_interval: float = 5.0,
        min_backoff: float = 0.1,
        max_backoff: float = 8.0,
        history: int = 1000,
    ) -> None:
        self.remotes = [remotes] if isinstance(remotes, str) else list(remotes)
        if len(self.remotes) == 1 and "," in self.remotes[0]:
            self.remotes = self.remotes[0].split(",")
        self.database = database
        self._schema_arg = schema
        self._tables_arg = tables
        self.modes = modes or {}
        self.conditions: dict[str, list[Any]] = dict(conditions or {})
        self.leader_only = leader_only
        self.shuffle = shuffle
        if isinstance(write_changed_only, bool):
            self._wco_all = write_changed_only
            self._wco: set[tuple[str, str]] = set()
        else:
            self._wco_all = False
            self._wco = set(write_changed_only)
        self.probe_interval = probe_interval
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.lock_name: str | None = None

        self.schema: DatabaseSchema | None = None
        self.replica: Replica = None  # type: ignore[assignment]
        self.seqno = 0
        self.history: deque[tuple[int, Changeset]] = deque(maxlen=history)
        self.tracked = Changeset()
        self.callbacks: list[ChangeCallback] = []
        self.last_txn_id = ZERO_UUID
        self.min_index = 0
        self.remote: str | None = None
        self.monitor_method: str | None = None

        self._conn: ClientConnection | None = None
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._server_row: dict[str, Any] | None = None
        self._cond_changed_offline = False
        self.n_connects = 0
        # Held while the replica changes; a threaded facade sets a real lock here.
        self.apply_guard: Any = contextlib.nullcontext()

    # -- lifetime ----------------------------------------------------------------------

    async def __aenter__(self) -> Idl:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self, timeout: float | None = 30.0) -> None:
        """Connect and wait for the initial replica."""
        gctune.tune()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        await self.wait_synced(timeout)

    async def wait_synced(self, timeout: float | None = None) -> None:
        try:
            await asyncio.wait_for(self._synced.wait(), timeout)
        except TimeoutError:
            raise NoServerError(
                f"no usable server for {self.database} among {', '.join(self.remotes)}"
            ) from None

    async def close(self) -> None:
        self._closing = True
        if self._conn is not None:
            self._conn.close()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.closed and self._synced.is_set()

    def force_reconnect(self) -> None:
        if self._conn is not None:
            self._conn.close()

    # -- the connection loop -----------------------------------------------------------

    async def _run(self) -> None:
        backoff = self.min_backoff
        while not self._closing:
            order = list(self.remotes)
            if self.shuffle:
                random.shuffle(order)
            for remote in order:
                if self._closing:
                    return
                synced = await self._try(remote)
                if synced:
                    backoff = self.min_backoff
            if self._closing:
                return
            await asyncio.sleep(backoff * random.uniform(0.5, 1.0))
            backoff = min(self.max_backoff, backoff * 2)

    async def _try(self, remote: str) -> bool:
        """One session with `remote`; returns whether it got as far as syncing."""
        conn: ClientConnection | None = None
        synced = False
        try:
            conn = await connect(remote, lambda: ClientConnection(
                remote, self._on_notify, self._probe(remote)), timeout=10)
            self._conn = conn
            self.remote = remote
            await self._session(conn)
            synced = True
            self.n_connects += 1
            await conn.lost
        except _Unsuitable as e:
            log.info("%s: %s", remote, e)
        except (OSError, ConnectionLost, TimeoutError, ValueError) as e:
            log.info("%s: connection failed: %s", remote, e)
        except RpcError as e:
            log.warning("%s: %s", remote, e)
        finally:
            self._synced.clear()
            if conn is not None:
                conn.close()
            self._conn = None
        return synced

    def _probe(self, remote: str) -> float:
        return self.probe_interval if remote.startswith("tcp:") else 0.0

    async def _session(self, conn: ClientConnection) -> None:
        row = await self._check_server(conn)
        if self.schema is None:
            self._load_schema(row)
        if self.schema is None:
            schema_json = await conn.request("get_schema", [self.database])
            self._set_schema(DatabaseSchema.from_json(schema_json))
        try:
            await conn.request("set_db_change_aware", [True])
        except RpcError:
            pass
        await self._monitor(conn)
        self._synced.set()

    async def _check_server(self, conn: ClientConnection) -> dict[str, Any] | None:
        try:
            reply = await conn.request("monitor_cond", [
                "_Server", ["monid", "_Server"],
                {"Database": [{"columns": SERVER_COLUMNS,
                               "where": [["name", "==", self.database]]}]}])
        except RpcError:
            return None  # an old server without _Server: nothing to check
        rows = reply.get("Database", {})
        self._server_row = next((r.get("initial", {}) for r in rows.values()), None)
        problem = self._server_problem(self._server_row)
        if problem:
            raise _Unsuitable(problem)
        return self._server_row

    def _server_problem(self, row: dict[str, Any] | None) -> str | None:
        if row is None:
            return f"server has no database {self.database}"
        clustered = row.get("model") == "clustered"
        if clustered and not row.get("schema"):
            return "clustered database has not joined its cluster yet"
        if clustered and not row.get("connected", False):
            return "clustered database is not connected to its cluster"
        if self.leader_only and not row.get("leader", False):
            return "server is not the cluster leader"
        index = row.get("index")
        if type(index) is int:
            if index < self.min_index:
                return f"stale data (index {index} < {self.min_index} already seen)"
            self.min_index = index
        return None

    def _load_schema(self, row: dict[str, Any] | None) -> None:
        arg = self._schema_arg
        if isinstance(arg, DatabaseSchema):
            self._set_schema(arg)
        elif isinstance(arg, dict):
            self._set_schema(DatabaseSchema.from_json(arg))
        elif isinstance(arg, str):
            self._set_schema(load_schema_file(arg))
        elif row is not None and isinstance(row.get("schema"), str) and row["schema"]:
            self._set_schema(DatabaseSchema.from_json(orjson.loads(row["schema"])))

    def _set_schema(self, schema: DatabaseSchema) -> None:
        self.schema = schema
        arg = self._tables_arg
        tables: dict[str, Iterable[str] | None]
        if arg is None:
            tables = {t: None for t in schema.tables}
        elif isinstance(arg, dict):
            tables = arg
        else:
            tables = {t: None for t in arg}
        # on-demand columns are not replicated
        resolved: dict[str, list[str] | None] = {}
        for t, cols in tables.items():
            ts = schema.tables[t]
            names = list(ts.columns) if cols is None else list(cols)
            modes = self.modes.get(t, {})
            resolved[t] = [c for c in names if modes.get(c, ALERT) != ON_DEMAND]
        self.replica = Replica(schema, resolved)  # type: ignore[arg-type]

    def _requests(self, version: int) -> dict[str, Any]:
        reqs: dict[str, Any] = {}
        for tname, table in self.replica.tables.items():
            req: dict[str, Any] = {"columns": table.columns}
            if version >= 2 and tname in self.conditions:
                req["where"] = self.conditions[tname]
            reqs[tname] = [req] if version >= 2 else req
        return reqs

    async def _monitor(self, conn: ClientConnection) -> None:
        db = self.database
        monid = ["monid", db]
        last = self.last_txn_id
        if self._cond_changed_offline:
            last = ZERO_UUID
        try:
            found, last_id, updates = await conn.request(
                "monitor_cond_since", [db, monid, self._requests(3), last])
            self.monitor_method = "monitor_cond_since"
            self.last_txn_id = last_id
            self._cond_changed_offline = False
            with self.apply_guard:
                if found:
                    self._record(self.replica.apply_update2(updates))
                else:
                    self._record(self.replica.replace_all(updates, 2))
            return
        except RpcError as e:
            if e.error != "unknown method":
                raise
        try:
            updates = await conn.request("monitor_cond", [db, monid, self._requests(2)])
            self.monitor_method = "monitor_cond"
            with self.apply_guard:
                self._record(self.replica.replace_all(updates, 2))
            return
        except RpcError as e:
            if e.error != "unknown method":
                raise
        updates = await conn.request("monitor", [db, monid, self._requests(1)])
        self.monitor_method = "monitor"
        with self.apply_guard:
            self._record(self.replica.replace_all(updates, 1))

    # -- notifications -----------------------------------------------------------------

    def _on_notify(self, method: str, params: list[Any]) -> None:
        with self.apply_guard:
            self._notified(method, params)

    def _notified(self, method: str, params: list[Any]) -> None:
        try:
            if method in ("update2", "update3", "update") and params:
                mon_id = params[0]
                if mon_id == ["monid", "_Server"]:
                    self._server_update(params[1])
                    return
                if method == "update3":
                    self.last_txn_id = params[1]
                    self._record(self.replica.apply_update2(params[2]))
                elif method == "update2":
                    self._record(self.replica.apply_update2(params[1]))
                else:
                    self._record(self.replica.apply_update1(params[1]))
            elif method == "monitor_canceled":
                self.force_reconnect()
        except Exception:
            log.exception("processing %s failed; reconnecting", method)
            self.force_reconnect()

    def _server_update(self, updates: dict[str, Any]) -> None:
        for upd in updates.get("Database", {}).values():
            if "delete" in upd:
                self._server_row = None
            elif "modify" in upd and self._server_row is not None:
                row = dict(self._server_row)
                row.update(upd["modify"])
                self._server_row = row
            else:
                self._server_row = upd.get("insert") or upd.get("initial")
        problem = self._server_problem(self._server_row)
        if problem:
            log.info("%s: %s; reconnecting", self.remote, problem)
            self.force_reconnect()

    def _record(self, cs: Changeset) -> None:
        if not cs:
            return
        if not self._alerts(cs):
            return
        self.seqno += 1
        self.history.append((self.seqno, cs))
        self.tracked = merge([self.tracked, cs]) if self.tracked else cs
        for cb in list(self.callbacks):
            try:
                cb(cs)
            except Exception:
                log.exception("change callback failed")

    def _alerts(self, cs: Changeset) -> bool:
        """False if every change is to write-only columns (no alert, as in the C IDL)."""
        if not self.modes:
            return True
        for tname, changes in cs.tables.items():
            modes = self.modes.get(tname)
            if not modes:
                return True
            table = self.replica.tables[tname]
            for ch in changes.values():
                if ch.old is None or ch.new is None:
                    return True
                for c in table.columns:
                    if modes.get(c, ALERT) == ALERT and ch.old.data[c] != ch.new.data[c]:
                        return True
        return False

    # -- change tracking API -----------------------------------------------------------

    def on_change(self, callback: ChangeCallback) -> ChangeCallback:
        self.callbacks.append(callback)
        return callback

    def changes_since(self, seqno: int) -> Changeset | None:
        """Everything applied after batch `seqno`, merged; None if no longer known."""
        if seqno >= self.seqno:
            return Changeset()
        batches = [cs for s, cs in self.history if s > seqno]
        if not batches or self.history[0][0] > seqno + 1:
            return None
        return merge(batches)

    def track_clear(self) -> None:
        self.tracked = Changeset()

    # -- reading -----------------------------------------------------------------------

    @property
    def tables(self) -> dict[str, ReplicaTable]:
        return self.replica.tables

    def __getitem__(self, table: str) -> ReplicaTable:
        return self.replica.tables[table]

    async def fetch(self, table: str, uuid: str, *columns: str) -> dict[str, Any]:
        """Read columns (on-demand ones included) of one row from the server."""
        conn = await self._connection()
        res = await conn.request("transact", [self.database, {
            "op": "select", "table": table, "where": [["_uuid", "==", ["uuid", str(uuid)]]],
            "columns": list(columns)}])
        rows = res[0].get("rows", [])
        return rows[0] if rows else {}

    # -- conditions --------------------------------------------------------------------

    async def set_condition(self, table: str, where: list[Any]) -> None:
        """Change which rows of `table` are replicated; returns once the replica holds
        exactly the rows matching `where`."""
        self.conditions[table] = where
        conn = self._conn
        if conn is None or conn.closed or not self._synced.is_set():
            self._cond_changed_offline = True
            return
        if self.monitor_method == "monitor":
            self.force_reconnect()  # v1 monitors cannot change conditions
            return
        await conn.request("monitor_cond_change", [
            ["monid", self.database], ["monid", self.database],
            {table: [{"where": where}]}])

    # -- transactions ------------------------------------------------------------------

    def transaction(self) -> Transaction:
        return Transaction(self)

    def skips_unchanged(self, table: str, column: str) -> bool:
        if self._wco_all or (table, column) in self._wco:
            return True
        return self.modes.get(table, {}).get(column, ALERT) == MONITOR

    def set_write_changed_only(self, enable: bool = True, table: str | None = None,
                               column: str | None = None) -> None:
        if table is None:
            self._wco_all = enable
        elif enable:
            self._wco.add((table, column or ""))
        else:
            self._wco.discard((table, column or ""))

    async def _connection(self) -> ClientConnection:
        await self._synced.wait()
        conn = self._conn
        if conn is None or conn.closed:
            raise ConnectionLost("not connected")
        return conn

    async def commit_txn(self, txn: Transaction) -> Result:
        ops, selects = txn.ops()
        if not ops:
            return Result(Status.UNCHANGED)
        try:
            conn = await self._connection()
            results = await conn.request("transact", [self.database, *ops])
        except ConnectionLost as e:
            return Result(Status.TRY_AGAIN, error=str(e))
        except RpcError as e:
            return Result(Status.ERROR, error=e.error)
        return _interpret(ops, selects, results)

    async def run(self, fn: Callable[[Transaction], Any], *, attempts: int = 50) -> Result:
        """Build and commit a transaction with `fn`, again on TRY_AGAIN (after the
        replica has caught up), up to `attempts` times."""
        result = Result(Status.TRY_AGAIN)
        for _ in range(attempts):
            txn = self.transaction()
            ret = fn(txn)
            if asyncio.iscoroutine(ret):
                await ret
            seqno = self.seqno
            result = await txn.commit()
            if result.status is not Status.TRY_AGAIN:
                return result
            await self._changed_after(seqno, 1.0)
        return result

    async def _changed_after(self, seqno: int, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.seqno == seqno and loop.time() < deadline:
            await asyncio.sleep(0.01)


def _interpret(ops: list[Any], selects: list[int],
               results: list[Any]) -> Result:
    for i, r in enumerate(results):
        if isinstance(r, dict) and "error" in r:
            op = ops[i] if i < len(ops) else None
            if r["error"] == "timed out" and op is not None and op.get("op") == "wait":
                return Result(Status.TRY_AGAIN, error=r, results=results)
            if r["error"] == "not owner":
                return Result(Status.NOT_LOCKED, error=r, results=results)
            return Result(Status.ERROR, error=r, results=results)
    uuids: dict[str, str] = {}
    for op, r in zip(ops, results, strict=False):
        if op.get("op") == "insert" and isinstance(r, dict) and "uuid" in r:
            uuids[op["uuid-name"]] = r["uuid"][1]
    increments: dict[int, int] = {}
    for n, pos in enumerate(selects):
        rows = results[pos].get("rows", []) if pos < len(results) else []
        if rows:
            ((_, value),) = rows[0].items()
            increments[n] = value
    return Result(Status.SUCCESS, results=results, uuids=uuids, increments=increments)


__all__ = ["ALERT", "MONITOR", "ON_DEMAND", "Idl", "NewRow", "NoServerError"]
