"""The OVSDB server process: hosted databases, sessions, locks, blocked transactions,
compaction, conversion, and its lifetime.

Rules kept here:
- One asyncio loop, one thread: a transaction executes, commits and notifies without
  interruption, like the real server's poll loop.
- Blocked transactions are re-run after each request that committed something and when
  the earliest wait deadline passes.
- Standalone files are compacted when due (checked after commits) or on request.
- When a database goes away or changes schema (remove-db, convert), sessions that asked
  for `set_db_change_aware` get `monitor_canceled` for its monitors and the error
  "canceled" for their pending transactions on it; all the others are disconnected
  (monitors or not), as the real server does (logged as it does: `disconnecting
  (committed DB database schema conversion)`).
- Once closing, no connection is served: one accepted in the same loop pass as the
  shutdown is dropped before it can reach a database whose file is closed.
- Memory goes back to the system (util/memtrim.py) after a compaction, as the real
  server's `memory-trim-on-compaction` (on by default) does, and after a received
  message of `stream.LARGE_MESSAGE` bytes or more: cycles are collected and the heap
  trimmed once the request is handled and no client has that much output still to
  send (a large reply, freed as it goes out), checked every `RECLAIM_DELAY`; at most
  once per `RECLAIM_INTERVAL`, so a stream of large messages costs one collection per
  interval, and a client that does not read delays it by at most that long.
The `_Server` database, listeners and control commands live in their own modules.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from typing import Any

from ..jsonrpc import stream
from ..jsonrpc.message import error_reply, notification
from ..ovsdb.convert import convert
from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema
from ..ovsdb.transaction import Committed, execute
from ..storage import clustered
from ..storage.standalone import StandaloneStorage
from ..util import batch, memtrim
from ..util.uuidgen import new_uuid
from .active import ActiveRemote
from .cluster import ClusteredDb
from .hosted import HostedDb
from .listeners import Listener, Listeners
from .locks import LockManager
from .metrics import ServerMetrics
from .pki import ServerPki
from .relay import RelayDb
from .replication import Replication
from .server_db import SERVER_DB, ServerDatabase
from .session import Session

log = logging.getLogger("ovsdb_server")
jsonrpc_log = logging.getLogger("ovsdb_jsonrpc_server")

RECLAIM_DELAY = 0.5
RECLAIM_INTERVAL = 10.0


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0


class Server:
    def __init__(self, *, max_backlog: int = 512 * 1024 * 1024,
                 max_message: int | None = None,
                 compaction: dict[str, Any] | None = None,
                 raft_sync_commit: bool = True, update_delay_ms: float = 0.0) -> None:
        self.dbs: dict[str, HostedDb] = {}
        # --update-delay-ms, in seconds: a session's monitor updates leave no sooner
        # than this after its previous ones (see `session`); 0 sends them as they come.
        self.update_delay = update_delay_ms / 1000.0
        self._release_shared: tuple[dict[Any, Any], list[Any]] | None = None
        self._window_ends: dict[float, list[Session]] = {}  # `end_window_at`
        self.clusters: dict[str, ClusteredDb] = {}
        self.raft_sync_commit = raft_sync_commit
        self.sessions: set[Session] = set()
        self.locks = LockManager()
        self.server_id = new_uuid()
        self.max_backlog = max_backlog
        self.max_message = max_message  # bytes in one received message; None: the default
        self.compaction = compaction or {}
        self.unixctl: Any = None
        self.exiting: asyncio.Future[None] | None = None
        self.exit_status = 0
        self.closing = False  # set by close(): connections made later are refused
        self._trigger_timer: asyncio.TimerHandle | None = None
        self._running_triggers = False
        self._dirty = False
        self.server_db = ServerDatabase(monotonic_ms)
        self.metrics: ServerMetrics | None = None  # (`--metrics`: `enable_metrics`)
        self.dbs[SERVER_DB] = self.server_db.hosted
        self.trim_memory = True  # ovsdb-server/memory-trim-on-compaction
        self._reclaim: asyncio.TimerHandle | None = None
        self._reclaim_by = 0.0  # loop time by which to reclaim whatever clients read
        self._last_reclaim = -RECLAIM_INTERVAL
        self.pki = ServerPki(self.dbs)  # `--private-key` and the rest (`pki`)
        # Active-backup replication (`replication`): the active server to follow, the
        # tables not to, and whether this server is a backup now (its clients may not
        # write).
        self.sync_from: str | None = None
        self.sync_exclude = ""
        self.backup = False
        self.replication: Replication | None = None
        self.replication_probe_ms = 60_000  # (REPLICATION_DEFAULT_PROBE_INTERVAL)
        self.relays: dict[str, RelayDb] = {}  # relay databases, by name (`relay`)
        self.clock = monotonic_ms
        self.listeners = Listeners(self._new_session, self.dbs, self._write_status,
                                   lambda name: name in self.clusters
                                   and name not in self.dbs, self.pki.server_context,
                                   self.pki.client_context)

    def end_window_at(self, session: Session, at: float) -> float:
        """File `session`'s update window (--update-delay-ms) to end at loop time
        `at`, rounded up to the millisecond: the sessions whose windows end in the same
        millisecond share one timer (a change sent to every client opens as many
        windows as there are clients). Returns the time it is filed under."""
        when = math.ceil(at * 1000) / 1000
        due = self._window_ends.get(when)
        if due is None:
            due = self._window_ends[when] = []
            asyncio.get_running_loop().call_at(when, self._end_windows, when)
        due.append(session)
        return when

    def _end_windows(self, when: float) -> None:
        for session in self._window_ends.pop(when, ()):
            if session.window_end == when:  # (else closed, or filed again since)
                session.window_ends()

    def release_cache(self, changesets: list[Any]) -> dict[Any, Any]:
        """The rendering cache (`Monitor.updates`' `shared`) of the held updates sent
        in this pass of the loop: the sessions whose update windows end together share
        it, so a change they all hold is rendered once. It keeps the `changesets` it
        was used for alive until the pass is over (its keys are row identities)."""
        if self._release_shared is None:
            self._release_shared = ({}, [])
            asyncio.get_running_loop().call_soon(self._clear_release_cache)
        shared, keep = self._release_shared
        keep.extend(changesets)
        return shared

    def _clear_release_cache(self) -> None:
        self._release_shared = None

    def _new_session(self, listener: Listener | ActiveRemote) -> Session:
        session = Session(self, probe_interval=listener.remote.probe_interval)
        listener.sessions.add(session)
        session.on_closed.append(lambda: listener.sessions.discard(session))
        return session

    # -- databases ---------------------------------------------------------------------

    def db_names(self) -> list[str]:
        return [n for n in self.dbs if n != SERVER_DB] + [SERVER_DB]

    async def add_db(self, path: str, name: str | None = None) -> None:
        """Open a database file, standalone or clustered."""
        c = self.open_db(path, name)
        if c is not None:
            await c.start()

    def open_db(self, path: str, name: str | None = None) -> ClusteredDb | None:
        """Open a database file; a clustered one is returned, to be started. Errors name
        the file as given (`name`, default `path`), as the real server's do."""
        name = path if name is None else name
        path = os.path.abspath(path)
        if not clustered.is_clustered(path):
            self.add_db_file(path, name)
            return None
        for c in self.clusters.values():
            if c.path == path:
                raise OvsdbError("ovsdb error", f"{name}: already open")
        c = ClusteredDb(self, path, sync_commit=self.raft_sync_commit, name=name)
        if c.name in self.dbs or c.name in self.clusters:
            c.close(graceful=False)
            raise OvsdbError("ovsdb error", f"{c.name}: duplicate database name")
        self.clusters[c.name] = c
        return c

    def attach_cluster_db(self, c: ClusteredDb) -> None:
        """A clustered database has its first contents: clients may use it now."""
        assert c.hosted is not None
        self.dbs[c.name] = c.hosted
        self._databases_changed()

    def _disconnect_unaware(self, why: str) -> None:
        """Every client that did not ask to be told of databases coming and going
        (`set_db_change_aware`) is disconnected, as the real server does when a
        database is added or removed at run time: it reconnects and finds them."""
        for s in list(self.sessions):
            if not s.db_change_aware and not s.closed:
                jsonrpc_log.info("%s: disconnecting (%s)", s.name, why)
                s.close()

    def _databases_changed(self) -> None:
        """A database came or went: the `db:` remotes that name it are read again (and
        their problems logged), as the real server does in its next loop iteration."""
        if self.listeners.from_db:
            self.listeners.refresh(None)

    def replace_db_contents(self, hosted: HostedDb, db: Any, why: str) -> None:
        """New contents for a database (a snapshot installed from the leader, or a
        schema change): monitors do not carry over, and every transaction still
        waiting is answered "canceled", as the real server's `ovsdb_replace` does.
        (`_drop_monitors` answers db-change-aware clients and disconnects the others
        that monitor the database; the remaining ones are answered here.)"""
        for t in list(hosted.triggers):
            s = t.session
            if not s.db_change_aware and not any(m.db_name == hosted.name
                                                 for m in s.monitors.values()):
                hosted.cancel_triggers(s, t.request_id)
                s.send(error_reply("canceled", t.request_id))
        self._drop_monitors(hosted.name, why)
        hosted.replace_db(db)

    def cluster_left(self, c: ClusteredDb) -> None:
        if c.name in self.dbs:
            self.remove_db(c.name, "{} database left its cluster")
        else:
            self.server_db.remove_row(c.name)
        self.clusters.pop(c.name, None)
        c.close(graceful=False)

    def add_relay(self, spec: str) -> RelayDb:
        """A relay database (`relay:DB:REMOTE[,REMOTE...]`): served once its upstream's
        schema is known (`attach_relay`)."""
        relay = RelayDb(self, spec)
        if relay.name in self.dbs or relay.name in self.clusters or relay.name in self.relays:
            raise OvsdbError("ovsdb error", f"{relay.name}: duplicate database name")
        self.relays[relay.name] = relay
        relay.start()
        return relay

    def attach_relay(self, hosted: HostedDb) -> None:
        hosted.on_trigger_deadline = lambda _h: self._schedule_trigger_timer()
        self._disconnect_unaware(f"database {hosted.name} connected to storage")
        self.dbs[hosted.name] = hosted
        self.server_db.set_row(hosted, leader=False)
        self._databases_changed()

    def add_db_file(self, path: str, name: str | None = None) -> HostedDb:
        name = path if name is None else name
        path = os.path.abspath(path)
        for hosted in self.dbs.values():
            if hosted.storage is not None and hosted.storage.path == path:
                raise OvsdbError("ovsdb error", f"{name}: already open")
        storage, problems = StandaloneStorage.open(path, name, **self.compaction)
        storage.on_write_error = self._storage_failed
        for problem in problems:
            log.error("%s", problem)
        if storage.db.name in self.dbs or storage.db.name in self.clusters:
            storage.close()
            raise OvsdbError("ovsdb error", f"{storage.db.name}: duplicate database name")
        name = storage.db.name
        hosted = HostedDb(storage.db, storage=storage, clock=monotonic_ms)
        hosted.on_trigger_deadline = lambda _h: self._schedule_trigger_timer()
        self._disconnect_unaware(f"adding {name} database")
        self.dbs[name] = hosted
        self.server_db.set_row(hosted)
        self._databases_changed()
        return hosted

    def remove_db(self, name: str, why: str) -> None:
        why = why.format(name)
        self._drop_monitors(name, why)
        # As the real server does, every client that is not db-change-aware is
        # disconnected, whatever it was doing (a pending transaction on the removed
        # database would otherwise never be answered).
        self._disconnect_unaware(why)
        hosted = self.dbs.pop(name)
        if hosted.storage is not None:
            hosted.storage.close()
        c = self.clusters.pop(name, None)
        if c is not None:
            c.close()
        self.server_db.remove_row(name)
        self._databases_changed()

    def _drop_monitors(self, name: str, why: str) -> None:
        """Cancel monitors and pending transactions on database `name`."""
        for s in list(self.sessions):
            keys = [k for k, m in s.monitors.items() if m.db_name == name]
            hosted = self.dbs.get(name)
            gone = hosted.cancel_triggers(s) if hosted is not None else []
            if not s.db_change_aware:
                if keys:
                    jsonrpc_log.info("%s: disconnecting (%s)", s.name, why)
                    s.close()
                continue
            for k in keys:
                mon = s.remove_monitor(k)
                if mon is not None:
                    s.send(notification("monitor_canceled", [mon.id]))
            # A db-change-aware client's pending transactions fail (the real server's
            # JSON-RPC error "canceled"), after its monitors are canceled.
            for t in gone:
                s.send(error_reply("canceled", t.request_id))

    def _storage_failed(self, path: str, error: OSError) -> None:
        """The file no longer matches memory: stop, so that a restart reloads the file
        (the real server aborts the transaction; we have already applied it). Every
        connection is dropped at once, before this batch's replies and updates go out:
        none of them may acknowledge what is not in the file. The storage refuses any
        later write, and no new connection is served."""
        log.critical("%s: write failed (%s); exiting so that the database is reloaded",
                     path, error.strerror)
        self.closing = True
        for s in list(self.sessions):
            s.close(abort=True)
        self.request_exit(1)

    def convert_db(self, hosted: HostedDb, schema_json: Any, requester: Any = None) -> None:
        """Online schema conversion (the `convert` method)."""
        schema = DatabaseSchema.from_json(schema_json)
        if schema.name != hosted.name:
            raise OvsdbError("syntax error", f"database name {schema.name} does not match "
                                             f"{hosted.name}")
        new_db = convert(hosted.db, schema)
        if hosted.storage is not None:
            hosted.storage.replace_db(new_db)
        why = f"committed {hosted.name} database schema conversion"
        self._drop_monitors(hosted.name, why)
        # As the real server does on a conversion, every session that is not
        # db-change-aware is dropped, monitors or not (the requester after its reply).
        for s in list(self.sessions):
            if not s.db_change_aware and not s.closed:
                jsonrpc_log.info("%s: disconnecting (%s)", s.name, why)
                if s is requester:
                    s.close_after_reply = True
                else:
                    s.close()
        hosted.replace_db(new_db)
        self.server_db.set_row(hosted)
        self._databases_changed()  # a db: remote may name a table or column now gone

    def _write_status(self, db_name: str, ops: list[Any]) -> None:
        hosted = self.dbs.get(db_name)
        if hosted is None:
            return
        outcome = execute(hosted.db, ops)
        if isinstance(outcome, Committed) and outcome.changeset:
            self.commit_local(hosted, outcome.changeset)

    def commit_local(self, hosted: HostedDb, cs: Any) -> None:
        """A change the server makes itself (status columns, a replicated or relayed
        change) committed and sent as a client's would be."""
        batch.begin()
        try:
            hosted.commit(cs)
            self.note_commit(hosted)
            self.after_request()
        finally:
            batch.end()

    # -- commits, triggers, compaction -------------------------------------------------

    def connect_active(self) -> str | None:
        """Become (or stay) a backup of `sync_from`, replication started afresh; the
        real reply when no active server is set."""
        if not self.sync_from:
            return "Unable to connect: active server is not specified.\n"
        if self.replication is not None:
            self.replication.stop()
        self.replication = Replication(self, self.sync_from, self.sync_exclude)
        self.replication.start()
        self.backup = True
        return None

    def disconnect_active(self) -> None:
        """Stop following the active server: this server is active (writable) now."""
        if self.replication is not None:
            self.replication.stop()
            self.replication = None
        self.backup = False

    def sync_status(self) -> str:
        text = f"state: {'backup' if self.backup else 'active'}\n"
        if self.backup and self.replication is not None:
            text += self.replication.status()
        return text

    def note_commit(self, hosted: HostedDb) -> None:
        self._dirty = True
        storage = hosted.storage
        if storage is not None and storage.should_compact(time.monotonic()):
            try:
                self.compact(hosted)
            except (OSError, OvsdbError) as e:
                # The transaction is committed whatever happens to the snapshot; the
                # old file is intact and the storage retries later.
                log.error("%s: compaction failed (%s)", hosted.name, e)
        if self.listeners.from_db:
            self.listeners.refresh(hosted.name)

    def after_request(self) -> None:
        if not self._dirty or self._running_triggers:
            return
        if not any(h.triggers for h in self.dbs.values()):
            self._dirty = False
            return
        self._running_triggers = True
        try:
            while self._dirty:
                self._dirty = False
                for hosted in list(self.dbs.values()):
                    if hosted.triggers:
                        hosted.run_triggers()
        finally:
            self._running_triggers = False
        self._schedule_trigger_timer()

    def _schedule_trigger_timer(self) -> None:
        deadlines = [d for h in self.dbs.values() if (d := h.next_deadline()) is not None]
        if self._trigger_timer is not None:
            self._trigger_timer.cancel()
            self._trigger_timer = None
        if not deadlines:
            return
        delay = max(0.0, (min(deadlines) - monotonic_ms()) / 1000.0)
        loop = asyncio.get_running_loop()
        self._trigger_timer = loop.call_later(delay + 0.001, self._on_trigger_timer)

    def _on_trigger_timer(self) -> None:
        self._trigger_timer = None
        self._dirty = True
        batch.begin()
        try:
            self.after_request()
        finally:
            batch.end()

    def compact(self, hosted: HostedDb) -> None:
        cluster = getattr(hosted, "cluster", None)
        if cluster is not None:
            problem = cluster.compact()
            if problem:
                raise OvsdbError("not supported", f"{hosted.name}: {problem}")
            return
        if hosted.storage is None:
            raise OvsdbError("not supported", f"{hosted.name}: cannot compact a database "
                                              "without storage")
        t0 = time.monotonic()
        hosted.storage.compact(time.monotonic())
        self.after_compaction()
        ms = int((time.monotonic() - t0) * 1000)
        # The real server's line, at info level only when it took over a second.
        log.log(logging.INFO if ms > 1000 else logging.DEBUG,
                "%s: Database compaction took %dms (init: 0ms, write: %dms, thread: 0ms)",
                hosted.name, ms, ms)

    def after_compaction(self) -> None:
        if self.trim_memory:
            memtrim.trim()

    # -- giving memory back after large messages ---------------------------------------

    def large_message(self, size: int) -> None:
        """A session received a message of `size` bytes (at least stream.LARGE_MESSAGE):
        give memory back once it is handled and the large replies have gone out."""
        if self._reclaim is not None or self.closing:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        now = loop.time()
        at = max(now + RECLAIM_DELAY, self._last_reclaim + RECLAIM_INTERVAL)
        self._reclaim_by = at + RECLAIM_INTERVAL
        self._reclaim = loop.call_at(at, self._give_back)

    def _give_back(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        if now < self._reclaim_by and any(s.backlog() >= stream.LARGE_MESSAGE
                                          for s in self.sessions):
            self._reclaim = loop.call_at(now + RECLAIM_DELAY, self._give_back)
            return
        self._reclaim = None
        self._last_reclaim = now
        memtrim.give_back()

    def memory_report(self) -> str:
        user = [h for n, h in self.dbs.items() if n != SERVER_DB]
        # As the real server: atoms and cells of every database, _Server included, and
        # cells of every column, _uuid and _version included.
        counts = {
            "atoms": sum(h.atoms() for h in self.dbs.values()),
            "cells": sum(len(t.rows) * (len(t.schema.columns) + 2)
                         for h in self.dbs.values() for t in h.db.tables.values()),
            "monitors": sum(len(h.monitors) for h in self.dbs.values()),
            "n-weak-refs": sum(len(t.weak_refs_in) for h in user
                               for t in h.db.tables.values()),
            "txn-history": sum(len(h.history) for h in user),
            "txn-history-atoms": sum(h.history_atoms for h in user),
            "triggers": sum(len(h.triggers) for h in user),
            "backlog": sum(s.backlog() for s in self.sessions),
            "sessions": len(self.sessions),
        }
        if self.clusters:
            counts["raft-log"] = sum(c.core.log_end - c.core.log_start
                                     for c in self.clusters.values())
            counts["raft-connections"] = sum(len([x for x in c.net.conns if not x.closed])
                                             for c in self.clusters.values())
        always = ("atoms", "cells", "monitors", "n-weak-refs")
        return " ".join(f"{k}:{v}" for k, v in sorted(counts.items()) if v or k in always) + "\n"

    # -- lifetime ----------------------------------------------------------------------

    async def start_unixctl(self, path: str) -> None:
        from .commands import register

        self.unixctl = register(self, path)
        await self.unixctl.start()

    def request_exit(self, status: int) -> None:
        if self.exiting is not None and not self.exiting.done():
            self.exit_status = status
            asyncio.get_running_loop().call_soon(self._exit_now)

    def _exit_now(self) -> None:
        if self.exiting is not None and not self.exiting.done():
            self.exiting.set_result(None)

    def close(self) -> None:
        self.closing = True
        if self._reclaim is not None:
            self._reclaim.cancel()
            self._reclaim = None
        for c in list(self.clusters.values()):
            c.close()
        for relay in self.relays.values():
            relay.close()
        if self.replication is not None:
            self.replication.stop()
        self.listeners.close()
        for s in list(self.sessions):
            s.close()
        for hosted in self.dbs.values():
            if hosted.storage is not None:
                hosted.storage.close()
        if self.unixctl is not None:
            self.unixctl.close()
