"""The server's listening sockets: configured remotes, remotes read from the database
(`db:DB,TABLE,COLUMN`), and the status the real server reports for the latter.

Rules kept here:
- Each configured remote name maps to at most one listener; adding it twice is a no-op.
- `db:` remotes are re-read after every commit to the database they name: listeners
  appear and disappear with the rows.
- For a `db:` remote whose values are references to rows with `target`, `status` and
  `is_connected` columns (OVN's and Open vSwitch's Connection/Manager tables), the
  server writes the listener's state into those rows every few seconds, as the real
  server does (those columns are ephemeral: nothing reaches the file).
- A listener's unix socket file is removed when it closes.
- The listen queue is long (`LISTEN_BACKLOG`), so that a burst of clients connecting at
  once (all of a deployment reconnecting after a restart) queues instead of being
  refused with EAGAIN.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ovsdb.errors import OvsdbError
from .appctl import CommandError
from .remotes import Remote, parse_remote

if TYPE_CHECKING:
    from .hosted import HostedDb

log = logging.getLogger("ovsdb_jsonrpc_server")

STATUS_INTERVAL = 2.5
LISTEN_BACKLOG = 1024


class Listener:
    def __init__(self, remote: Remote, server: asyncio.AbstractServer | None) -> None:
        self.remote = remote
        self.server = server
        self.sessions: set[Any] = set()

    @property
    def port(self) -> int | None:
        if self.remote.kind == "ptcp" and self.server is not None and self.server.sockets:
            return int(self.server.sockets[0].getsockname()[1])
        return None

    @property
    def bound(self) -> str:
        """The address actually bound (resolves port 0)."""
        r = self.remote
        if r.kind == "ptcp" and self.server is not None and self.server.sockets:
            host, port = self.server.sockets[0].getsockname()[:2]
            return f"ptcp:{port}:{host}"
        return r.name

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        if self.remote.kind == "punix":
            try:
                os.unlink(self.remote.path)
            except FileNotFoundError:
                pass


class Listeners:
    def __init__(self, session_factory: Callable[[Listener], Any],
                 dbs: dict[str, HostedDb], status_writer: Callable[[str, list[Any]], None]
                 ) -> None:
        self.session_factory = session_factory
        self.dbs = dbs
        self.status_writer = status_writer
        self.configured: dict[str, Listener] = {}
        self.from_db: dict[str, dict[str, Listener]] = {}  # "db:..." -> target -> listener
        self._status_task: asyncio.Task[None] | None = None
        self._last_status: dict[str, Any] = {}

    # -- configuration -----------------------------------------------------------------

    async def add(self, name: str) -> None:
        remote = parse_remote(name)
        if name in self.configured or name in self.from_db:
            return
        if remote.kind == "db":
            self.from_db[name] = {}
            self.refresh(None)
            if self._status_task is None:
                self._status_task = asyncio.get_running_loop().create_task(self._status_loop())
            return
        self.configured[name] = await self.listen(remote)

    def check(self, name: str) -> Remote:
        """Validate a remote for `ovsdb-server/add-remote`, with the real wording."""
        try:
            remote = parse_remote(name)
        except OvsdbError as e:
            raise CommandError(e.details or e.tag) from None
        if remote.kind == "db":
            db_name, table, column = name[3:].split(",")
            hosted = self.dbs.get(db_name)
            if hosted is None:
                raise CommandError(f'"{name}": no database named {db_name}')
            t = hosted.db.tables.get(table)
            if t is None:
                raise CommandError(f'"{name}": no table named {table}')
            if column not in t.schema.columns:
                raise CommandError(f'"{name}": table "{table}" has no column "{column}"')
        return remote

    async def listen(self, remote: Remote) -> Listener:
        loop = asyncio.get_running_loop()
        listener = Listener(remote, None)

        def factory() -> Any:
            return self.session_factory(listener)

        if remote.kind == "punix":
            if os.path.exists(remote.path):
                os.unlink(remote.path)
            listener.server = await loop.create_unix_server(factory, remote.path,
                                                            backlog=LISTEN_BACKLOG)
        else:
            listener.server = await loop.create_server(factory, remote.host, remote.port,
                                                       reuse_address=True,
                                                       backlog=LISTEN_BACKLOG)
        return listener

    def remove(self, name: str) -> None:
        if name in self.from_db:
            for lst in self.from_db.pop(name).values():
                lst.close()
            return
        lst = self.configured.pop(name, None)
        if lst is None:
            raise CommandError("no such remote")
        log.info("%s: remote deconfigured", name)
        lst.close()

    def names(self) -> list[str]:
        return sorted([*self.configured, *self.from_db])

    def bound(self) -> list[str]:
        return [lst.bound for lst in self.configured.values()]

    def close(self) -> None:
        if self._status_task is not None:
            self._status_task.cancel()
            self._status_task = None
        for lst in self.configured.values():
            lst.close()
        self.configured.clear()
        for current in self.from_db.values():
            for lst in current.values():
                lst.close()
        self.from_db.clear()

    # -- remotes read from the database --------------------------------------------------

    def refresh(self, changed_db: str | None) -> None:
        for name, current in self.from_db.items():
            db_name, table, column = name[3:].split(",")
            if changed_db is not None and changed_db != db_name:
                continue
            wanted = {t for t, _ in self._targets(db_name, table, column)}
            for r in list(current):
                if r not in wanted:
                    current.pop(r).close()
            for r in wanted - set(current):
                try:
                    remote = parse_remote(r)
                except OvsdbError as e:
                    log.warning("%s: %s", name, e.details)
                    continue
                if remote.kind not in ("punix", "ptcp"):
                    continue
                current[r] = Listener(remote, None)
                asyncio.get_running_loop().create_task(self._open(current, r, remote))

    async def _open(self, current: dict[str, Listener], r: str, remote: Remote) -> None:
        try:
            lst = await self.listen(remote)
        except OSError as e:
            log.warning("%s: listen failed: %s", r, e.strerror)
            current.pop(r, None)
            return
        if r in current:
            current[r] = lst
        else:
            lst.close()

    def _targets(self, db_name: str, table: str, column: str) -> list[tuple[str, Any]]:
        """(remote, row holding its status or None) for each value of the column."""
        hosted = self.dbs.get(db_name)
        if hosted is None:
            return []
        t = hosted.db.tables.get(table)
        if t is None or column not in t.schema.columns:
            return []
        base = t.schema.columns[column].type.key
        out: list[tuple[str, Any]] = []
        for row in t.rows.values():
            v = row.data[column]
            for x in v if type(v) is tuple else (v,):
                if base.type == "string":
                    out.append((x, None))
                elif base.ref_table is not None:
                    target = hosted.db.tables[base.ref_table].rows.get(x)
                    if target is not None and "target" in target.data:
                        out.append((target.data["target"], (base.ref_table, target.uuid)))
        return out

    async def _status_loop(self) -> None:
        while True:
            await asyncio.sleep(STATUS_INTERVAL)
            try:
                self.write_status()
            except Exception:  # status is best effort; never take the server down
                log.exception("updating remote status failed")

    def write_status(self) -> None:
        for name, current in self.from_db.items():
            db_name, table, column = name[3:].split(",")
            ops: list[Any] = []
            for target, where in self._targets(db_name, table, column):
                lst = current.get(target)
                if where is None or lst is None:
                    continue
                ref_table, uuid = where
                cols = self.dbs[db_name].db.tables[ref_table].schema.columns
                row: dict[str, Any] = {}
                if "is_connected" in cols:
                    row["is_connected"] = bool(lst.sessions)
                if "status" in cols:
                    status = {"sec_since_connect": "0", "sec_since_disconnect": "0"}
                    if lst.port is not None:
                        status["bound_port"] = str(lst.port)
                    if len(lst.sessions) > 1:
                        status["n_connections"] = str(len(lst.sessions))
                    row["status"] = ["map", sorted([k, v] for k, v in status.items())]
                if not row:
                    continue
                key = f"{db_name}/{uuid}"
                if self._last_status.get(key) == row:
                    continue
                self._last_status[key] = row
                ops.append({"op": "update", "table": ref_table,
                            "where": [["_uuid", "==", ["uuid", uuid]]], "row": row})
            if ops:
                self.status_writer(db_name, ops)
