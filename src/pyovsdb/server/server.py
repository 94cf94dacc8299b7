"""The OVSDB server process: hosted databases, the `_Server` database, listeners,
sessions, locks and the control socket.

Rules kept here:
- One asyncio loop, one thread: a transaction executes, commits and notifies without
  interruption, like the real server's poll loop.
- `_Server` is an ordinary read-only database whose rows the server itself maintains,
  so clients monitor it like any other.
- Blocked transactions are re-run after each request that committed something and when
  the earliest wait deadline passes.
- Standalone files are compacted when due (checked after commits) or on request.
- Listeners can be added and removed at run time; `db:` remotes are re-resolved after
  each commit to the database they name.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

import orjson

from .. import __version__
from ..ovsdb.database import Database
from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema
from ..ovsdb.transaction import Committed, execute
from ..storage.standalone import StandaloneStorage
from ..util import batch
from ..util.uuidgen import new_uuid
from .appctl import CommandError, UnixctlServer
from .hosted import HostedDb
from .locks import LockManager
from .remotes import Remote, parse_remote
from .session import Session

log = logging.getLogger("ovsdb_server")

SERVER_DB = "_Server"


def _server_schema() -> DatabaseSchema:
    from importlib.resources import files

    data = files("pyovsdb.schemas").joinpath("_server.ovsschema").read_bytes()
    return DatabaseSchema.from_json(orjson.loads(data), allow_reserved=True)


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0


class Listener:
    def __init__(self, remote: Remote, server: asyncio.AbstractServer | None) -> None:
        self.remote = remote
        self.server = server

    @property
    def bound(self) -> str:
        """The address actually bound (resolves port 0)."""
        r = self.remote
        if r.kind == "ptcp" and self.server is not None and self.server.sockets:
            host, port = self.server.sockets[0].getsockname()[:2]
            return f"ptcp:{port}:{host}"
        return r.name


class Server:
    def __init__(self, *, max_backlog: int = 512 * 1024 * 1024,
                 compaction: dict[str, Any] | None = None) -> None:
        self.dbs: dict[str, HostedDb] = {}
        self.sessions: set[Session] = set()
        self.locks = LockManager()
        self.server_id = new_uuid()
        self.max_backlog = max_backlog
        self.compaction = compaction or {}
        self.listeners: dict[str, Listener] = {}
        self.db_remotes: dict[str, dict[str, Listener]] = {}  # "db:..." -> resolved
        self.unixctl: UnixctlServer | None = None
        self.exiting: asyncio.Future[None] | None = None
        self.exit_status = 0
        self._trigger_timer: asyncio.TimerHandle | None = None
        self._running_triggers = False
        self._dirty = False
        self.server_db = HostedDb(
            Database(_server_schema()),
            model="standalone",
            read_only_reason=f"on table in reserved database {SERVER_DB}",
            max_history=0,
            clock=monotonic_ms,
        )
        self.dbs[SERVER_DB] = self.server_db
        self._server_rows: dict[str, str] = {}  # db name -> _Server row uuid

    # -- databases ---------------------------------------------------------------------

    def db_names(self) -> list[str]:
        return [n for n in self.dbs if n != SERVER_DB] + [SERVER_DB]

    def add_db_file(self, path: str) -> HostedDb:
        storage, problem = StandaloneStorage.open(path, **self.compaction)
        storage.on_write_error = self._storage_failed
        if problem:
            log.warning("%s: %s; the rest of the file will be truncated on the next write",
                        path, problem)
        name = storage.db.name
        if name in self.dbs:
            storage.close()
            raise OvsdbError("I/O error", f"{path}: database {name} is already open")
        hosted = HostedDb(storage.db, storage=storage, clock=monotonic_ms)
        hosted.on_trigger_deadline = lambda _h: self._schedule_trigger_timer()
        self.dbs[name] = hosted
        self._update_server_row(hosted)
        return hosted

    def _storage_failed(self, path: str, error: OSError) -> None:
        """The file no longer matches memory: stop, so that a restart reloads the file
        (the real server aborts the transaction; we have already applied it)."""
        log.critical("%s: write failed (%s); exiting so that the database is reloaded",
                     path, error.strerror)
        if self.exiting is not None and not self.exiting.done():
            self.exit_status = 1
            self.exiting.set_result(None)

    def remove_db(self, name: str) -> None:
        hosted = self.dbs.pop(name)
        for s in list(self.sessions):
            keys = [k for k, m in s.monitors.items() if m.db_name == name]
            if not s.db_change_aware:
                if keys:
                    s.close()
                continue
            for k in keys:
                mon = s.remove_monitor(k)
                if mon is not None:
                    from ..jsonrpc.message import notification

                    s.send(notification("monitor_canceled", [mon.id]))
        if hosted.storage is not None:
            hosted.storage.close()
        uuid = self._server_rows.pop(name, None)
        if uuid is not None:
            self._server_txn([{"op": "delete", "table": "Database",
                               "where": [["_uuid", "==", ["uuid", uuid]]]}])

    def _update_server_row(self, hosted: HostedDb) -> None:
        schema_json = hosted.db.schema.json or hosted.db.schema.to_json()
        row = {
            "name": hosted.name,
            "model": hosted.model,
            "connected": True,
            "leader": True,
            "schema": orjson.dumps(schema_json, option=orjson.OPT_SORT_KEYS).decode(),
        }
        uuid = self._server_rows.get(hosted.name)
        if uuid is None:
            res = self._server_txn([{"op": "insert", "table": "Database", "row": row}])
            self._server_rows[hosted.name] = res[0]["uuid"][1]
        else:
            self._server_txn([{"op": "update", "table": "Database",
                               "where": [["_uuid", "==", ["uuid", uuid]]], "row": row}])

    def _server_txn(self, ops: list[Any]) -> list[Any]:
        outcome = execute(self.server_db.db, ops)
        if not isinstance(outcome, Committed):
            raise RuntimeError(f"_Server update failed: {outcome.results}")
        if outcome.changeset:
            self.server_db.commit(outcome.changeset)
        return outcome.results

    # -- commits, triggers, compaction -------------------------------------------------

    def note_commit(self, hosted: HostedDb) -> None:
        self._dirty = True
        storage = hosted.storage
        if storage is not None and storage.should_compact(time.monotonic()):
            self.compact(hosted)
        if self.db_remotes:
            self._refresh_db_remotes(hosted.name)

    def after_request(self) -> None:
        if not self._dirty or self._running_triggers:
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
        if hosted.storage is None:
            raise OvsdbError("not supported", f"{hosted.name}: cannot compact a database "
                                              "without storage")
        t0 = time.monotonic()
        hosted.storage.compact(time.monotonic())
        log.info("%s: compacted in %.0f ms", hosted.name, (time.monotonic() - t0) * 1000)

    # -- listeners ---------------------------------------------------------------------

    async def add_remote(self, name: str) -> None:
        remote = parse_remote(name)
        if name in self.listeners or name in self.db_remotes:
            return
        if remote.kind == "db":
            self.db_remotes[name] = {}
            self._refresh_db_remotes(None)
            return
        self.listeners[name] = await self._listen(remote)

    async def _listen(self, remote: Remote) -> Listener:
        loop = asyncio.get_running_loop()
        probe = remote.probe_interval

        def factory() -> Session:
            return Session(self, probe_interval=probe)

        if remote.kind == "punix":
            path = remote.path
            if os.path.exists(path):
                os.unlink(path)
            srv = await loop.create_unix_server(factory, path)
        else:
            srv = await loop.create_server(factory, remote.host, remote.port, reuse_address=True)
        return Listener(remote, srv)

    def remove_remote(self, name: str) -> None:
        if name in self.db_remotes:
            for lst in self.db_remotes.pop(name).values():
                self._close_listener(lst)
            return
        lst = self.listeners.pop(name, None)
        if lst is None:
            raise CommandError("no such remote")
        log.info("%s: remote deconfigured", name)
        self._close_listener(lst)

    def _close_listener(self, lst: Listener) -> None:
        if lst.server is not None:
            lst.server.close()
        if lst.remote.kind == "punix":
            try:
                os.unlink(lst.remote.path)
            except FileNotFoundError:
                pass

    def _refresh_db_remotes(self, changed_db: str | None) -> None:
        for name, current in self.db_remotes.items():
            db_name, table, column = name[3:].split(",")
            if changed_db is not None and changed_db != db_name:
                continue
            wanted = set(self._remotes_from_db(db_name, table, column))
            for r in list(current):
                if r not in wanted:
                    self._close_listener(current.pop(r))
            for r in wanted - set(current):
                try:
                    remote = parse_remote(r)
                except OvsdbError as e:
                    log.warning("%s: %s", name, e.details)
                    continue
                if remote.kind not in ("punix", "ptcp"):
                    continue
                current[r] = Listener(remote, None)
                asyncio.get_running_loop().create_task(self._open_db_remote(current, r, remote))

    async def _open_db_remote(self, current: dict[str, Listener], r: str, remote: Remote
                              ) -> None:
        try:
            lst = await self._listen(remote)
        except OSError as e:
            log.warning("%s: listen failed: %s", r, e.strerror)
            current.pop(r, None)
            return
        if r in current:
            current[r] = lst
        else:
            self._close_listener(lst)

    def _remotes_from_db(self, db_name: str, table: str, column: str) -> list[str]:
        hosted = self.dbs.get(db_name)
        if hosted is None:
            return []
        t = hosted.db.tables.get(table)
        if t is None or column not in t.schema.columns:
            return []
        base = t.schema.columns[column].type.key
        out: list[str] = []
        for row in t.rows.values():
            v = row.data[column]
            vals = v if type(v) is tuple else (v,)
            for x in vals:
                if base.type == "string":
                    out.append(x)
                elif base.ref_table is not None:
                    target = hosted.db.tables[base.ref_table].rows.get(x)
                    if target is not None and "target" in target.data:
                        out.append(target.data["target"])
        return out

    def _check_db_remote(self, name: str) -> None:
        db_name, table, column = name[3:].split(",")
        hosted = self.dbs.get(db_name)
        if hosted is None:
            raise CommandError(f'"{name}": no database named {db_name}')
        t = hosted.db.tables.get(table)
        if t is None:
            raise CommandError(f'"{name}": no table named {table}')
        if column not in t.schema.columns:
            raise CommandError(f'"{name}": table "{table}" has no column "{column}"')

    def remote_names(self) -> list[str]:
        return sorted(list(self.listeners) + list(self.db_remotes))

    def bound_addresses(self) -> list[str]:
        return [lst.bound for lst in self.listeners.values()]

    # -- control socket ----------------------------------------------------------------

    async def start_unixctl(self, path: str) -> None:
        uc = self.unixctl = UnixctlServer(path, f"ovsdb-server (pyovsdb) {__version__}")
        uc.register("exit", "", 0, 0, self._cmd_exit)
        uc.register("memory/show", "", 0, 0, self._cmd_memory)
        uc.register("ovsdb-server/compact", "[DB]", 0, 1, self._cmd_compact)
        uc.register("ovsdb-server/list-dbs", "", 0, 0,
                    lambda a: "".join(f"{n}\n" for n in sorted(self.db_names())))
        uc.register("ovsdb-server/add-remote", "REMOTE", 1, 1, self._cmd_add_remote)
        uc.register("ovsdb-server/remove-remote", "REMOTE", 1, 1, self._cmd_remove_remote)
        uc.register("ovsdb-server/list-remotes", "", 0, 0,
                    lambda a: "".join(f"{r}\n" for r in self.remote_names()))
        uc.register("ovsdb-server/reconnect", "", 0, 0, self._cmd_reconnect)
        await uc.start()

    def _cmd_exit(self, args: list[str]) -> str:
        if self.exiting is not None and not self.exiting.done():
            asyncio.get_running_loop().call_soon(self.exiting.set_result, None)
        return ""

    def _cmd_memory(self, args: list[str]) -> str:
        user = [h for n, h in self.dbs.items() if n != SERVER_DB]
        counts = {
            "atoms": sum(h.db.n_atoms() for h in user),
            "cells": sum(len(t.rows) * len(t.schema.columns)
                         for h in user for t in h.db.tables.values()),
            "monitors": sum(len(h.monitors) for h in self.dbs.values()),
            "n-weak-refs": sum(len(t.weak_refs_in) for h in user
                               for t in h.db.tables.values()),
            "txn-history": sum(len(h.history) for h in user),
            "triggers": sum(len(h.triggers) for h in user),
            "backlog": sum(s.backlog() for s in self.sessions),
        }
        if self.sessions:
            counts["sessions"] = len(self.sessions)
        return " ".join(f"{k}:{v}" for k, v in sorted(counts.items()) if v or k in (
            "atoms", "cells", "monitors", "n-weak-refs")) + "\n"

    def _cmd_compact(self, args: list[str]) -> str:
        if args:
            if args[0].startswith("_"):
                raise CommandError("cannot compact built-in databases")
            hosted = self.dbs.get(args[0])
            if hosted is None:
                raise CommandError("no database by that name")
            targets = [hosted]
        else:
            targets = [h for n, h in self.dbs.items() if not n.startswith("_")]
        errors = []
        for hosted in targets:
            log.info("compacting %s database by user request", hosted.name)
            try:
                self.compact(hosted)
            except (OSError, OvsdbError) as e:
                errors.append(f"{hosted.name}: compaction failed ({e})")
        if errors:
            raise CommandError("\n".join(errors))
        return ""

    def _cmd_add_remote(self, args: list[str]) -> str:
        try:
            remote = parse_remote(args[0])
        except OvsdbError as e:
            raise CommandError(e.details or e.tag) from None
        if remote.kind == "db":
            self._check_db_remote(args[0])
        task = asyncio.get_running_loop().create_task(self.add_remote(args[0]))
        task.add_done_callback(_log_task_error)
        return ""

    def _cmd_remove_remote(self, args: list[str]) -> str:
        self.remove_remote(args[0])
        return ""

    def _cmd_reconnect(self, args: list[str]) -> str:
        for s in list(self.sessions):
            s.close()
        return ""

    # -- lifetime ----------------------------------------------------------------------

    async def serve_forever(self) -> None:
        self.exiting = asyncio.get_running_loop().create_future()
        await self.exiting

    def close(self) -> None:
        for lst in list(self.listeners.values()):
            self._close_listener(lst)
        self.listeners.clear()
        for current in self.db_remotes.values():
            for lst in current.values():
                self._close_listener(lst)
        self.db_remotes.clear()
        for s in list(self.sessions):
            s.close()
        for hosted in self.dbs.values():
            if hosted.storage is not None:
                hosted.storage.close()
        if self.unixctl is not None:
            self.unixctl.close()


def _log_task_error(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("%s", task.exception())
