"""The IDL: a live replica of (part of) a database, kept through a monitor, with change
tracking and transactions, over one connection chosen from a list of remotes.

Rules kept here:
- Remotes are tried in order (shuffled each round unless told otherwise); a round in
  which no remote could be used waits with exponential backoff and jitter (`Backoff`),
  reset once a session has synced.
- Before monitoring data, the server's `_Server` row for the database is checked, and
  monitored for as long as the session lasts, with the real IDLs' rules: a server is
  skipped (or left) if it lacks the database; a clustered member that has not joined,
  is not connected, is not the leader (in leader-only mode) or whose index is behind
  one already seen (stale data); a relay that is not connected, or any relay in
  leader-only mode.
- Data is monitored with `monitor_cond_since`, falling back to `monitor_cond` then
  `monitor` on "unknown method". After a reconnection the last transaction id is sent,
  so only missed changes are transferred; if the server cannot (no history, or
  restarted), its full reply is recorded as the difference from the replica held, so
  the changes recorded for the application are exactly what changed while away,
  either way. Conditions changed while disconnected, or an inconsistency found in an
  update, make the next monitor start from scratch (transaction id zero).
- Replies and updates are applied as they are framed, in the order the server sent
  them, rows streamed into a batch (`replica.Batch`) so a large reply is never held
  whole; a transaction's reply is processed after the updates the server sent before
  it, so a successful commit is visible in the replica when `commit()` returns.
- Every applied batch that changes an alerting column bumps `seqno`, is recorded
  (bounded by batches and rows) for `changes_since`, merged into `tracked` until
  `track_clear`, and passed to callbacks and watchers. Changes to write-only
  ("monitor" mode) columns alone do not alert, as in the C IDL.
- Conditions: `set_condition` returns once the replica holds exactly the rows matching
  the new condition (after the server's reply to `monitor_cond_change`, which follows
  its update), or, when disconnected, once a later session has applied it.
- Locks: the lock is requested again on every session; transactions of an IDL that
  wants a lock assert it, and are not sent (NOT_LOCKED) while it is not held.
- `NoServerError` is raised when no remote is usable within the timeout asked for; it
  lists why each remote was not. `connect_timeout`, when given, bounds both one
  connection attempt and how long `start()` (so `async with`) waits for a usable
  server and the initial replica; otherwise an attempt may take `ATTEMPT_TIMEOUT` and
  `start()` waits `START_TIMEOUT`.
- Garbage collection is paused while a monitor reply streams in, and a batch of many
  rows is frozen out of the collector's sight once applied (see `_gc_paused`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import random
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from types import EllipsisType
from typing import Any, NamedTuple

import orjson

from ..jsonrpc.session import ClientConnection, ConnectionLost, RpcError, connect
from ..ovsdb.changeset import Changeset, RowChange, merge, merge_rows
from ..ovsdb.schema import DatabaseSchema
from ..storage.schemafile import load_schema
from ..util import gctune
from ..util.reconnect import ReconnectLog
from .replica import Batch, Index, Replica, ReplicaTable
from .row import IdlRow, typed
from .tracking import EVENTS, EventCallback, Watch
from .txn import NewRow, Result, Status, Transaction

log = logging.getLogger("ovsdb_idl")

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
SERVER_COLUMNS = ["name", "model", "connected", "leader", "schema", "cid", "sid", "index"]
SERVER_MONID = ["monid", "_Server"]

# Column modes, as in the C IDL: replicate and alert (default), replicate without
# alerting (write-only: unchanged writes are dropped), or fetch on demand only.
ALERT, MONITOR, ON_DEMAND = "alert", "monitor", "on-demand"
MODES = (ALERT, MONITOR, ON_DEMAND)

ChangeCallback = Callable[[Changeset[IdlRow]], None]


_gc_pauses = 0
_gc_was_enabled = False
BIG_BATCH = 10_000  # rows: after applying that many at once, freeze them out of the GC


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a monitor reply streams in: it allocates
    millions of acyclic objects, and each collection would rescan them (a third of the
    time of a large initial load). Nested pauses (several IDLs) are counted."""
    global _gc_pauses, _gc_was_enabled
    if _gc_pauses == 0:
        _gc_was_enabled = gc.isenabled()
        gc.disable()
    _gc_pauses += 1
    try:
        yield
    finally:
        _gc_pauses -= 1
        if _gc_pauses == 0 and _gc_was_enabled:
            gc.enable()


class NoServerError(Exception):
    """No remote could be used (unreachable, or not suitable: not leader, stale...)."""

    def __init__(self, message: str, reasons: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.reasons = reasons or {}


class IdlConfigError(Exception):
    """The registration does not fit the server's schema (unknown table, column...)."""


class _Unsuitable(Exception):
    pass


class Backoff:
    """Delays between rounds of connection attempts: the base doubles from `minimum` up
    to `maximum`; each delay is drawn in [base/2, base] (jitter, so clients that lost
    the same server do not come back in step)."""

    def __init__(self, minimum: float, maximum: float,
                 rng: random.Random | None = None) -> None:
        if minimum <= 0 or maximum < minimum:
            raise ValueError("backoff needs 0 < minimum <= maximum")
        self.minimum = minimum
        self.maximum = maximum
        self.base = minimum
        self.rng = rng or random.Random()

    def next(self) -> float:
        delay = self.base * self.rng.uniform(0.5, 1.0)
        self.base = min(self.maximum, self.base * 2)
        return delay

    def reset(self) -> None:
        self.base = self.minimum


def server_value(json: Any) -> Any:
    """A `_Server` column value: the atom, or None for an empty optional."""
    if type(json) is list and len(json) == 2:
        if json[0] == "set":
            return server_value(json[1][0]) if json[1] else None
        if json[0] == "uuid":
            return json[1]
    return json


ATTEMPT_TIMEOUT = 10.0  # one connection attempt, unless connect_timeout is given
START_TIMEOUT = 30.0  # start()'s wait for a usable server, unless connect_timeout is given


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
        connect_timeout: float | None = None,
        commit_timeout: float = 30.0,
        history: int = 1000,
        history_rows: int = 500_000,
        lock: str | None = None,
        reconnect_log: bool = False,
    ) -> None:
        self.remotes = [remotes] if isinstance(remotes, str) else list(remotes)
        if len(self.remotes) == 1 and "," in self.remotes[0]:
            self.remotes = self.remotes[0].split(",")
        if not self.remotes:
            raise ValueError("no remote given")
        self.database = database
        self._schema_arg = schema
        self._tables_arg = tables
        self.modes = modes or {}
        for tmodes in self.modes.values():
            for c, m in tmodes.items():
                if m not in MODES:
                    raise ValueError(f"column {c}: unknown mode {m!r} (expected {MODES})")
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
        self.backoff = Backoff(min_backoff, max_backoff)
        # With `reconnect_log`, connections are logged and backed off as the C IDL's
        # (lib/reconnect.c) instead.
        self.reconnect = ReconnectLog(free_tries=len(self.remotes)) if reconnect_log \
            else None
        self.connect_timeout = connect_timeout
        self._attempt_timeout = ATTEMPT_TIMEOUT if connect_timeout is None else connect_timeout
        self._start_timeout = START_TIMEOUT if connect_timeout is None else connect_timeout
        self.commit_timeout = commit_timeout

        self.schema: DatabaseSchema | None = None
        self.replica: Replica = None  # type: ignore[assignment]
        self.seqno = 0
        self.history: deque[tuple[int, Changeset[IdlRow]]] = deque()
        self.max_history = history
        self.max_history_rows = history_rows
        self._history_rows = 0
        self.tracked: Changeset[IdlRow] = Changeset()
        self._tracked_shared: set[str] = set()
        self.callbacks: list[ChangeCallback] = []
        self.lock_callbacks: list[Callable[[], None]] = []
        self.watches: list[Watch] = []
        self.last_txn_id = ZERO_UUID
        self.min_index = 0
        self.remote: str | None = None
        self.monitor_method: str | None = None
        # Whether the last monitor_cond_since found our transaction id (only missed
        # changes were sent), or None before the first.
        self.resync_found: bool | None = None
        self.last_errors: dict[str, str] = {}
        self.reconnect_delays: deque[float] = deque(maxlen=100)
        self.n_connects = 0  # sessions that synced
        self.n_attempts = 0  # connections tried

        # Locks.
        self.lock_name: str | None = lock
        self.has_lock = False
        self.is_lock_contended = False
        self._lock_changed = asyncio.Event()

        self._conn: ClientConnection | None = None
        self._synced = asyncio.Event()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._fatal: BaseException | None = None
        self._server_row: dict[str, Any] | None = None
        self._full_resync = False
        self._schema_stale = False
        self._cond_version = 0
        self._cond_applied = 0
        self._index_defs: dict[str, dict[str, tuple[str, ...]]] = {}
        # Held while the replica changes; a threaded facade sets a real lock here.
        self.apply_guard: Any = contextlib.nullcontext()
        if schema is not None:
            self._load_schema(None)  # registration errors show up here, at once

    # -- lifetime ----------------------------------------------------------------------

    async def __aenter__(self) -> Idl:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self, timeout: float | EllipsisType | None = ...) -> None:
        """Connect and wait for the initial replica (at most `timeout` seconds, by
        default the IDL's connect timeout; None: no limit); on failure nothing keeps
        running."""
        if timeout is ...:
            timeout = self._start_timeout
        gctune.tune()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        try:
            await self.wait_synced(timeout)
        except BaseException:
            await self.close()
            raise

    async def wait_synced(self, timeout: float | None = None) -> None:
        """Wait until a session holds the replica; `NoServerError` after `timeout`."""
        task = self._task
        waiter = asyncio.ensure_future(self._synced.wait())
        waits: set[asyncio.Future[Any]] = {waiter}
        if task is not None:
            waits.add(task)
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if self._fatal is not None:
            raise self._fatal
        if not self._synced.is_set():
            reasons = dict(self.last_errors)
            detail = "; ".join(f"{r}: {e}" for r, e in reasons.items()) or "no attempt"
            raise NoServerError(
                f"no usable server for {self.database} among {', '.join(self.remotes)} "
                f"({detail})", reasons)

    async def close(self) -> None:
        self._closing = True
        if self._conn is not None:
            self._conn.close()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.closed and self._synced.is_set()

    def force_reconnect(self, full_resync: bool = False) -> None:
        if full_resync:
            self._full_resync = True
        if self.reconnect is not None:
            self.reconnect.force_reconnect(monitoring=self._synced.is_set(),
                                           n_remotes=len(self.remotes))
        if self._conn is not None:
            self._conn.close()

    # -- the connection loop -----------------------------------------------------------

    async def _run(self) -> None:
        while not self._closing:
            order = list(self.remotes)
            if self.shuffle:
                random.shuffle(order)
            rc = self.reconnect
            for remote in order:
                if self._closing:
                    return
                if await self._try(remote):
                    self.backoff.reset()
                if self._fatal is not None:
                    return
                if rc is not None and not self._closing:  # reconnect.c: between attempts
                    self.reconnect_delays.append(rc.backoff_ms / 1000)
                    await asyncio.sleep(rc.backoff_ms / 1000)
            if self._closing or rc is not None:
                continue
            delay = self.backoff.next()
            self.reconnect_delays.append(delay)
            await asyncio.sleep(delay)

    async def _try(self, remote: str) -> bool:
        """One session with `remote`; returns whether it got as far as syncing."""
        conn: ClientConnection | None = None
        synced = False
        self.n_attempts += 1
        rc = self.reconnect
        if rc is not None:
            rc.connecting(remote)
        try:
            conn = await connect(remote, lambda: ClientConnection(
                remote, self._on_notify, self._probe(remote)), timeout=self._attempt_timeout)
            assert conn is not None
            if rc is not None:
                rc.connected()
            conn.notify_sink = self._notify_sink
            self._conn = conn
            self.remote = remote
            await self._session(conn)
            synced = True
            self.n_connects += 1
            self.last_errors.pop(remote, None)
            self._synced.set()
            await conn.lost
        except asyncio.CancelledError:
            raise
        except IdlConfigError as e:
            self._fatal = e
            self.last_errors[remote] = str(e)
        except _Unsuitable as e:
            log.info("%s: %s", remote, e)
            self.last_errors[remote] = str(e)
            if rc is not None:
                rc.force_reconnect()
        except (OSError, ConnectionLost, TimeoutError, ValueError) as e:
            if rc is not None and conn is None:
                rc.failed(None if isinstance(e, TimeoutError) else
                          getattr(e, "strerror", None) or str(e))
            elif rc is None:
                log.info("%s: connection failed: %s", remote, e or type(e).__name__)
            self.last_errors[remote] = f"connection failed: {e or type(e).__name__}"
        except RpcError as e:
            log.warning("%s: %s", remote, e)
            self.last_errors[remote] = str(e)
        except Exception as e:
            log.exception("%s: session failed", remote)
            self.last_errors[remote] = f"session failed: {e!r}"
        finally:
            self._synced.clear()
            self.has_lock = False
            if conn is not None:
                if rc is not None and not self._closing:
                    rc.disconnected(None, used=synced)
                conn.close()
            self._conn = None
        return synced

    def _probe(self, remote: str) -> float:
        """Inactivity probes on TCP only, as the real jsonrpc_session (unix sockets
        report a dead peer by themselves)."""
        return self.probe_interval if remote.startswith("tcp:") else 0.0

    async def _session(self, conn: ClientConnection) -> None:
        row = await self._check_server(conn)
        if self.schema is None or self._schema_stale:
            self._load_schema(row)
            if self.schema is None or self._schema_stale:
                schema_json = await conn.request("get_schema", [self.database])
                self._adopt_schema(DatabaseSchema.from_json(schema_json))
        with contextlib.suppress(RpcError):
            await conn.request("set_db_change_aware", [True])
        await self._monitor(conn)
        if self._cond_applied < self._cond_version:
            # Conditions changed while the monitor request was in flight.
            version = self._cond_version
            await self._send_conditions(conn, dict(self.conditions))
            self._cond_applied = max(self._cond_applied, version)
        if self.lock_name is not None:
            await self._request_lock(conn, "lock")

    async def _check_server(self, conn: ClientConnection) -> dict[str, Any] | None:
        def got(reply: Any) -> None:
            rows = reply.get("Database", {}) if type(reply) is dict else {}
            row = next((r.get("initial") for r in rows.values()), None)
            self._server_row = ({k: server_value(v) for k, v in row.items()}
                                if row is not None else None)

        try:
            await conn.request("monitor_cond", [
                "_Server", SERVER_MONID,
                {"Database": [{"columns": SERVER_COLUMNS,
                               "where": [["name", "==", self.database]]}]}], on_reply=got)
        except RpcError:
            self._server_row = None
            return None  # an old server without _Server: nothing to check
        problem = self.server_problem(self._server_row)
        if problem:
            raise _Unsuitable(problem)
        return self._server_row

    def server_problem(self, row: dict[str, Any] | None) -> str | None:
        """Why the server whose `_Server` row for our database is `row` (values as
        `server_value` gives them) is not suitable, or None; remembers the index."""
        if row is None:
            return f"server does not have the {self.database} database"
        model = row.get("model")
        if model == "clustered":
            if not row.get("schema"):
                return "clustered database server has not yet joined its cluster"
            if not row.get("connected"):
                return "clustered database server is disconnected from its cluster"
            if self.leader_only and not row.get("leader"):
                return "clustered database server is not the cluster leader"
            index = row.get("index")
            if type(index) is int:
                if index < self.min_index:
                    return (f"clustered database server has stale data (index {index} < "
                            f"{self.min_index} already seen)")
                self.min_index = index
        elif model == "relay":
            if not row.get("schema"):
                return "relay database server has not yet connected to its source"
            if not row.get("connected"):
                return "relay database server is disconnected from its source"
            if self.leader_only:
                return "relay database server cannot be a leader"
        return None

    _server_problem = server_problem

    def _load_schema(self, row: dict[str, Any] | None) -> None:
        """The schema given, else the one in the `_Server` row (if any)."""
        arg = self._schema_arg
        if arg is not None and self.schema is not None:
            self._schema_stale = False  # given by the application: it stays
            return
        if isinstance(arg, DatabaseSchema):
            schema: DatabaseSchema = arg
        elif isinstance(arg, dict):
            schema = DatabaseSchema.from_json(arg)
        elif isinstance(arg, str):
            schema = load_schema(arg)
        elif row is not None and isinstance(row.get("schema"), str) and row["schema"]:
            schema = DatabaseSchema.from_json(orjson.loads(row["schema"]))
        else:
            return
        self._adopt_schema(schema)

    def _adopt_schema(self, schema: DatabaseSchema) -> None:
        if self.schema is not None and schema.to_json() == self.schema.to_json():
            self._schema_stale = False
            return
        self._set_schema(schema)

    def _set_schema(self, schema: DatabaseSchema) -> None:
        """Build the replica for `schema` (again, if the database was converted: the
        old contents are recorded as deleted, index definitions carry over)."""
        arg = self._tables_arg
        tables: dict[str, Iterable[str] | None]
        if arg is None:
            tables = {t: None for t in schema.tables}
        elif isinstance(arg, dict):
            tables = arg
        else:
            tables = {t: None for t in arg}
        resolved: dict[str, list[str]] = {}
        on_demand: dict[str, list[str]] = {}
        try:
            for t, cols in tables.items():
                ts = schema.tables.get(t)
                if ts is None:
                    raise IdlConfigError(f"database {schema.name} has no table {t}")
                names = list(ts.columns) if cols is None else list(cols)
                modes = self.modes.get(t, {})
                for c in [*names, *modes]:
                    if c not in ts.columns:
                        raise IdlConfigError(f"table {t} has no column {c}")
                resolved[t] = [c for c in names if modes.get(c, ALERT) != ON_DEMAND]
                on_demand[t] = [c for c, m in modes.items() if m == ON_DEMAND]
            for t in self.modes:
                if t not in resolved:
                    raise IdlConfigError(f"modes given for table {t}, which is not registered")
            replica = Replica(schema, resolved, on_demand)  # type: ignore[arg-type]
        except KeyError as e:
            raise IdlConfigError(str(e)) from None
        if self.replica is not None:
            with self.apply_guard:
                self._record(self.replica.clear())
            self.last_txn_id = ZERO_UUID
        self.schema = schema
        self.replica = replica
        self._schema_stale = False
        for tname, defs in self._index_defs.items():
            table = replica.tables.get(tname)
            for name, cols in defs.items():
                if table is not None and all(c in table.defaults for c in cols):
                    table.add_index(name, *cols)

    def _requests(self, version: int) -> dict[str, Any]:
        reqs: dict[str, Any] = {}
        for tname, table in self.replica.tables.items():
            req: dict[str, Any] = {"columns": table.columns}
            if version >= 2 and tname in self.conditions:
                req["where"] = self.conditions[tname]
            reqs[tname] = [req] if version >= 2 else req
        return reqs

    async def _monitor(self, conn: ClientConnection) -> None:
        # A resync from scratch is asked for once; if the reply turns out inconsistent
        # (or the request fails), the flag is set again for the next session.
        full, self._full_resync = self._full_resync, False
        try:
            await self._monitor_request(conn, ZERO_UUID if full else self.last_txn_id)
        except BaseException:
            self._full_resync = self._full_resync or full
            raise

    async def _monitor_request(self, conn: ClientConnection, last: str) -> None:
        db = self.database
        monid = ["monid", db]
        cond_version = self._cond_version

        def since_header(b: Batch, header: list[Any]) -> bool:
            b.replace = not (header and header[0] is True)
            return True

        batch = self.replica.batch(2, index=2, on_header=since_header)

        def since_reply(result: Any) -> None:
            found, last_id, updates = result
            if updates is not batch:
                batch.replace = found is not True
                batch.add_all(updates)
            self.monitor_method = "monitor_cond_since"
            self.resync_found = found is True
            self.last_txn_id = last_id
            self._applied(batch)

        try:
            with _gc_paused():
                await conn.request("monitor_cond_since",
                                   [db, monid, self._requests(3), last],
                                   sink=batch, on_reply=since_reply)
            self._monitored(cond_version)
            return
        except RpcError as e:
            if e.error != "unknown method":
                raise
        for method, version in (("monitor_cond", 2), ("monitor", 1)):
            batch = self.replica.batch(version, replace=True)

            def reply(updates: Any, batch: Batch = batch, method: str = method) -> None:
                if updates is not batch:
                    batch.add_all(updates)
                self.monitor_method = method
                self.last_txn_id = ZERO_UUID
                self._applied(batch)

            try:
                with _gc_paused():
                    await conn.request(method, [db, monid, self._requests(version)],
                                       sink=batch, on_reply=reply)
                self._monitored(cond_version)
                return
            except RpcError as e:
                if e.error != "unknown method" or version == 1:
                    raise

    def _monitored(self, cond_version: int) -> None:
        self._cond_applied = max(self._cond_applied, cond_version)

    # -- notifications -----------------------------------------------------------------

    def _notify_sink(self, method: str) -> Batch | None:
        """A batch to stream the rows of an update notification into, if it is for the
        data monitor (the first element of params says)."""
        if self.replica is None:
            return None
        monid = ["monid", self.database]
        return self.replica.batch(
            1 if method == "update" else 2, index=2 if method == "update3" else 1,
            on_header=lambda b, header: bool(header) and header[0] == monid)

    def _on_notify(self, method: str, params: list[Any]) -> None:
        try:
            self._notified(method, params)
        except Exception:
            log.exception("processing %s failed; resyncing", method)
            self.force_reconnect(full_resync=True)

    def _notified(self, method: str, params: list[Any]) -> None:
        if method in ("update3", "update2", "update"):
            if not params:
                return
            mon_id = params[0]
            if mon_id == SERVER_MONID:
                self._server_update(params[-1])
                return
            if mon_id != ["monid", self.database] or self.replica is None:
                return
            updates = params[-1]
            if isinstance(updates, Batch):
                batch = updates
            else:
                batch = self.replica.batch(1 if method == "update" else 2)
                batch.add_all(updates)
            if method == "update3":
                self.last_txn_id = params[1]
            self._applied(batch)
        elif method == "locked":
            if params and params[0] == self.lock_name:
                self._set_lock_state(True)
        elif method == "stolen":
            if params and params[0] == self.lock_name:
                self._set_lock_state(False)
        elif method == "monitor_canceled":
            # The database was converted or removed: look at its schema again.
            self._schema_stale = True
            self.force_reconnect(full_resync=True)

    def _applied(self, batch: Batch) -> None:
        with self.apply_guard:
            cs = batch.commit()
            self._record(cs)
        if cs.n_rows() >= BIG_BATCH:
            # Long-lived and acyclic: keep the cyclic collector from rescanning them
            # (they are still freed by reference counting).
            gc.freeze()
        if batch.inconsistent:
            log.warning("%s: %s; resyncing", self.remote, batch.inconsistent)
            self.force_reconnect(full_resync=True)

    def _server_update(self, updates: dict[str, Any]) -> None:
        for upd in updates.get("Database", {}).values():
            ((kind, body),) = upd.items()
            if kind == "delete":
                self._server_row = None
            elif kind == "modify" and self._server_row is not None:
                row = dict(self._server_row)
                row.update({k: server_value(v) for k, v in body.items()})
                self._server_row = row
            else:
                self._server_row = {k: server_value(v) for k, v in body.items()}
        problem = self.server_problem(self._server_row)
        if problem:
            log.info("%s: %s; reconnecting", self.remote, problem)
            if self.remote is not None:
                self.last_errors[self.remote] = problem
            self.force_reconnect()

    # -- recording changes -------------------------------------------------------------

    def _record(self, cs: Changeset[IdlRow]) -> None:
        if not cs:
            return
        cs = self._alerting(cs)
        if not cs:
            return
        self.seqno += 1
        n = cs.n_rows()
        self.history.append((self.seqno, cs))
        self._history_rows += n
        while len(self.history) > 1 and (len(self.history) > self.max_history
                                         or self._history_rows > self.max_history_rows):
            self._history_rows -= self.history.popleft()[1].n_rows()
        self._track(cs)
        self._changed.set()
        self._changed = asyncio.Event()
        for cb in list(self.callbacks):
            try:
                cb(cs)
            except Exception:
                log.exception("change callback failed")
        if self.watches:
            for w in list(self.watches):
                changes = cs.tables.get(w.table)
                if changes:
                    try:
                        w.dispatch(changes)
                    except Exception:
                        log.exception("watch callback failed")

    def _track(self, cs: Changeset[IdlRow]) -> None:
        """Merge `cs` into `tracked` in place: cost proportional to `cs` only. A table's
        changes are shared with `cs` until they must differ (copy on write): an initial
        load is not held twice."""
        tracked = self.tracked.tables
        shared = self._tracked_shared
        for tname, changes in cs.tables.items():
            t = tracked.get(tname)
            if t is None:
                tracked[tname] = changes
                shared.add(tname)
                continue
            if tname in shared:
                t = tracked[tname] = dict(t)
                shared.discard(tname)
            merge_rows(t, changes)

    def _alerting(self, cs: Changeset[IdlRow]) -> Changeset[IdlRow]:
        """`cs` without the row changes that touch only write-only ("monitor") columns."""
        quiet = {t: {c for c, m in modes.items() if m == MONITOR}
                 for t, modes in self.modes.items()}
        if not any(quiet.values()):
            return cs
        out: dict[str, dict[str, RowChange[IdlRow]]] = {}
        dropped = False
        for tname, changes in cs.tables.items():
            q = quiet.get(tname)
            if not q:
                out[tname] = changes
                continue
            kept = {}
            for uuid, ch in changes.items():
                old, new = ch.old, ch.new
                if old is not None and new is not None and all(
                        c in q for c, o, n in zip(new.table.columns, old._values,
                                                  new._values, strict=True)
                        if o is not n and o != n):
                    dropped = True
                    continue
                kept[uuid] = ch
            if kept:
                out[tname] = kept
        return Changeset(out) if dropped else cs

    # -- change tracking API -----------------------------------------------------------

    def on_change(self, callback: ChangeCallback) -> ChangeCallback:
        """Call `callback(changeset)` after every applied batch."""
        self.callbacks.append(callback)
        return callback

    def on_lock_change(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback()` whenever the lock is granted, or lost (stolen, released)."""
        self.lock_callbacks.append(callback)
        return callback

    def watch(self, table: str, callback: EventCallback, *,
              events: Iterable[str] = EVENTS, columns: Iterable[str] | None = None) -> Watch:
        """Call `callback(event, row, old)` for each row event of `table`: ("insert",
        row, None), ("update", row, old row), ("delete", last row, None). With
        `columns`, only updates that change one of them."""
        if self.replica is not None and table not in self.replica.tables:
            raise KeyError(f"table {table} is not replicated")
        w = Watch(self.watches, table, callback, events, columns)
        self.watches.append(w)
        return w

    def changes_since(self, seqno: int) -> Changeset[IdlRow] | None:
        """Everything applied after batch `seqno`, merged; None if no longer known."""
        if seqno >= self.seqno:
            return Changeset()
        if not self.history or self.history[0][0] > seqno + 1:
            return None
        return merge(cs for s, cs in self.history if s > seqno)

    def track_clear(self) -> None:
        self.tracked = Changeset()
        self._tracked_shared = set()

    def track_take(self) -> Changeset[IdlRow]:
        """The tracked changes, clearing them (changesets are read-only)."""
        tracked = self.tracked
        self.track_clear()
        return tracked

    async def wait_for_change(self, seqno: int, timeout: float | None = None) -> bool:
        """Wait until a batch after `seqno` is applied; False on timeout."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self.seqno <= seqno:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return self.seqno > seqno
        return True

    # -- reading -----------------------------------------------------------------------

    @property
    def tables(self) -> dict[str, ReplicaTable]:
        return self.replica.tables

    def __getitem__(self, table: str) -> ReplicaTable:
        return self.replica.tables[table]

    def add_index(self, table: str, name: str, *columns: str) -> Index:
        """A secondary index on `columns` of `table`, kept up to date (and rebuilt if
        the replica is rebuilt)."""
        if self.replica is None:
            raise RuntimeError("the replica exists once the schema is known: give schema= "
                               "or add indexes after start()")
        self._index_defs.setdefault(table, {})[name] = tuple(columns)
        return self.replica.tables[table].add_index(name, *columns)

    async def fetch(self, row: IdlRow, *columns: str) -> dict[str, Any]:
        """Read on-demand columns (all of the table's by default) of one row from the
        server; the values are kept, so `row.column` reads them afterwards."""
        table = row.table
        cols = self._demand_columns(table, columns)
        rows = await self._select(table.name, [["_uuid", "==", ["uuid", row.uuid]]], cols)
        self._store_fetched(table, rows, cols)
        values = table.fetched.get(row.uuid, {})
        return {c: typed(table, c, values[c]) for c in cols if c in values}

    async def fetch_table(self, table: str, *columns: str) -> int:
        """Read on-demand columns of every replicated row of `table`; how many rows."""
        t = self.replica.tables[table]
        cols = self._demand_columns(t, columns)
        rows = await self._select(table, [], cols)
        return self._store_fetched(t, rows, cols)

    def _demand_columns(self, table: ReplicaTable, columns: tuple[str, ...]) -> list[str]:
        cols = list(columns) or sorted(table.on_demand)
        for c in cols:
            if c not in table.on_demand:
                raise KeyError(f"column {c} of {table.name} is not read on demand")
        return cols

    async def _select(self, table: str, where: list[Any], cols: list[str]) -> list[Any]:
        conn = await self._connection(self.commit_timeout)
        res = await conn.request("transact", [self.database, {
            "op": "select", "table": table, "where": where, "columns": ["_uuid", *cols]}])
        if res and isinstance(res[0], dict) and "error" in res[0]:
            raise RpcError("transact", res[0])
        return list(res[0].get("rows", []))

    def _store_fetched(self, table: ReplicaTable, rows: list[Any], cols: list[str]) -> int:
        n = 0
        parsers = table.demand_parsers
        with self.apply_guard:
            for r in rows:
                uuid = r["_uuid"][1]
                if uuid not in table.rows:
                    continue
                values = table.fetched.setdefault(uuid, {})
                for c in cols:
                    if c in r:
                        values[c] = parsers[c](r[c])
                n += 1
        return n

    # -- conditions --------------------------------------------------------------------

    async def set_condition(self, table: str, where: list[Any]) -> None:
        """Change which rows of `table` are replicated; returns once the replica holds
        exactly the rows matching `where` (see the module rules)."""
        if self.replica is not None and table not in self.replica.tables:
            raise KeyError(f"table {table} is not replicated")
        self.conditions[table] = where
        self._cond_version += 1
        version = self._cond_version
        while self._cond_applied < version:
            conn = self._conn
            if conn is not None and not conn.closed and self._synced.is_set():
                if self.monitor_method == "monitor":
                    log.warning("%s: the server has no conditional monitors: condition on "
                                "%s not applied", self.remote, table)
                    self._cond_applied = max(self._cond_applied, version)
                    break
                try:
                    await self._send_conditions(conn, {table: where})
                except (ConnectionLost, RpcError) as e:
                    log.info("condition change failed (%s); applied on reconnection", e)
                    self._full_resync = True
                    continue
                self._cond_applied = max(self._cond_applied, version)
            else:
                self._full_resync = True
                await self.wait_synced(self.commit_timeout)

    async def _send_conditions(self, conn: ClientConnection,
                               conditions: dict[str, list[Any]]) -> None:
        if not conditions:
            return
        monid = ["monid", self.database]
        await conn.request("monitor_cond_change", [
            monid, monid, {t: [{"where": w}] for t, w in conditions.items()}])

    # -- locks -------------------------------------------------------------------------

    async def set_lock(self, name: str | None) -> None:
        """Want lock `name` (None: no lock). Returns once the server answered; whether
        the lock is held is `has_lock` (`wait_for_lock` waits for it)."""
        old = self.lock_name
        if old == name:
            return
        conn = self._conn if self.connected else None
        self.lock_name = name
        self._set_lock_state(False)
        self.is_lock_contended = False
        if conn is not None:
            if old is not None:
                with contextlib.suppress(RpcError, ConnectionLost):
                    await conn.request("unlock", [old])
            if name is not None:
                await self._request_lock(conn, "lock")

    async def steal_lock(self) -> None:
        """Take the lock from its holder (which is told it was stolen)."""
        if self.lock_name is None:
            raise RuntimeError("no lock set (set_lock first)")
        conn = await self._connection(self.commit_timeout)
        if self.has_lock:
            return
        # A session may have one request per lock: the pending "lock" goes first.
        with contextlib.suppress(RpcError):
            await conn.request("unlock", [self.lock_name])
        await self._request_lock(conn, "steal")

    async def wait_for_lock(self, timeout: float | None = None) -> bool:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not self.has_lock:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            event = self._lock_changed
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except TimeoutError:
                return self.has_lock
        return True

    async def _request_lock(self, conn: ClientConnection, method: str) -> None:
        name = self.lock_name
        reply = await conn.request(method, [name])
        if name == self.lock_name:
            locked = bool(reply.get("locked")) if isinstance(reply, dict) else False
            self.is_lock_contended = not locked
            self._set_lock_state(locked)

    def _set_lock_state(self, locked: bool) -> None:
        if locked:
            self.is_lock_contended = False
        elif self.has_lock:
            self.is_lock_contended = True
        moved = self.has_lock != locked
        self.has_lock = locked
        self._lock_changed.set()
        self._lock_changed = asyncio.Event()
        for callback in self.lock_callbacks if moved else ():
            callback()

    # -- transactions ------------------------------------------------------------------

    def transaction(self) -> Transaction:
        return Transaction(self)

    def skips_unchanged(self, table: str, column: str) -> bool:
        if self._wco_all or (table, column) in self._wco or (table, "") in self._wco:
            return True
        return self.modes.get(table, {}).get(column, ALERT) == MONITOR

    def set_write_changed_only(self, enable: bool = True, table: str | None = None,
                               column: str | None = None) -> None:
        """Drop writes of unchanged values for every column, a table's, or one column."""
        if table is None:
            self._wco_all = enable
        elif enable:
            self._wco.add((table, column or ""))
        else:
            self._wco.discard((table, column or ""))

    async def _connection(self, timeout: float | None) -> ClientConnection:
        if not self._synced.is_set():
            try:
                await asyncio.wait_for(self._synced.wait(), timeout)
            except TimeoutError:
                raise ConnectionLost("not connected") from None
        conn = self._conn
        if conn is None or conn.closed:
            raise ConnectionLost("not connected")
        return conn

    async def commit_txn(self, txn: Transaction) -> Result:
        if self.lock_name is not None and not self.has_lock:
            return Result(Status.NOT_LOCKED, error=f"lock {self.lock_name} is not held")
        try:
            conn = await self._connection(self.commit_timeout)
        except ConnectionLost as e:
            return Result(Status.TRY_AGAIN, error=str(e))
        ops, selects = txn.ops()
        if not ops:
            return Result(Status.UNCHANGED)
        # What the reply is read against, and nothing more, is kept while it comes: a
        # large transaction's rows, encoded or not, are no longer needed once sent (a
        # northd's first commit would otherwise hold three copies of the whole SB
        # while the server's echo of it is parsed). Read before sending, so that
        # nothing can fail between the request and the wait for its reply.
        sent = [_Sent.of(op) for op in ops]
        try:
            fut = conn.send_request("transact", [self.database, *ops])
        except ConnectionLost as e:
            return Result(Status.TRY_AGAIN, error=str(e))
        txn.request_bytes = conn.last_request_size
        del ops
        txn.forget_changes()
        try:
            results = await fut
        except ConnectionLost as e:
            return Result(Status.TRY_AGAIN, error=str(e))
        except RpcError as e:
            return Result(Status.ERROR, error=e.error)
        return _interpret(sent, selects, results)

    async def run(self, fn: Callable[[Transaction], Any], *, attempts: int = 50) -> Result:
        """Build and commit a transaction with `fn`, again on TRY_AGAIN (after the
        replica has caught up, or a short wait), up to `attempts` times."""
        result = Result(Status.TRY_AGAIN)
        for _ in range(attempts):
            seqno = self.seqno
            txn = self.transaction()
            ret = fn(txn)
            if asyncio.iscoroutine(ret):
                await ret
            result = await txn.commit()
            if result.status is not Status.TRY_AGAIN:
                return result
            await self.wait_for_change(seqno, 1.0)
        return result


class _Sent(NamedTuple):
    """What `_interpret` reads of one operation sent."""

    op: str
    uuid_name: str | None
    by_uuid: bool  # an update, mutate or delete of one row named by its UUID

    @classmethod
    def of(cls, op: dict[str, Any]) -> _Sent:
        kind = op.get("op", "")
        where = op.get("where")
        first = where[0] if isinstance(where, list) and where else None
        by_uuid = kind in ("update", "mutate", "delete") \
            and isinstance(first, list) and first[:1] == ["_uuid"]
        return cls(kind, op.get("uuid-name"), by_uuid)


def _interpret(ops: list[_Sent], selects: list[int], results: list[Any]) -> Result:
    for i, r in enumerate(results):
        if isinstance(r, dict) and "error" in r:
            op = ops[i] if i < len(ops) else None
            if r["error"] == "timed out" and op is not None and op.op == "wait":
                return Result(Status.TRY_AGAIN, error=r, results=results)
            if r["error"] == "not owner":
                return Result(Status.NOT_LOCKED, error=r, results=results)
            return Result(Status.ERROR, error=r, results=results)
    if len(results) < len(ops):
        return Result(Status.ERROR, error="server replied with fewer results than operations",
                      results=results)
    for op, r in zip(ops, results, strict=False):
        # A row written by uuid that the server no longer has: deleted meanwhile. The
        # replica learns it with the transaction's updates; building it again will do.
        if op.by_uuid and isinstance(r, dict) and r.get("count") == 0:
            return Result(Status.TRY_AGAIN, error="row no longer exists", results=results)
    uuids: dict[str, str] = {}
    for op, r in zip(ops, results, strict=False):
        if op.op == "insert" and op.uuid_name is not None and isinstance(r, dict) \
                and "uuid" in r:
            uuids[op.uuid_name] = r["uuid"][1]
    increments: dict[int, int] = {}
    for n, pos in enumerate(selects):
        rows = results[pos].get("rows", []) if pos < len(results) else []
        if rows:
            ((_, value),) = rows[0].items()
            increments[n] = value
    return Result(Status.SUCCESS, results=results, uuids=uuids, increments=increments)


__all__ = ["ALERT", "MONITOR", "ON_DEMAND", "Backoff", "Idl", "IdlConfigError", "NewRow",
           "NoServerError"]
