"""Relay databases (`relay:DB:REMOTE[,REMOTE...]` in place of a database file): a copy of
database DB served from an upstream server, as OVS 3.1's `ovsdb/relay.c` and
`transaction-forward.c` serve one.

Rules kept here:
- The relay connects to its remotes in turn (one at a time, the next after a failure,
  backing off as OVS's reconnect state machine says; `ssl:` ones with the server's
  PKI), asks DB's schema and monitors
  every table and column of it (`monitor`, version 1). The database appears to clients
  (`list_dbs`, `_Server`) once the schema is known, with the model `relay`, `leader`
  false and `connected` while the upstream is.
- The monitor's reply replaces the relay's contents (rows kept, changed, inserted with
  their upstream UUIDs, or deleted: `replication.apply_updates`); each update is then
  applied as one local transaction. Clients' monitors are served from this copy, so a
  relay fans the upstream's changes out to its own clients.
- A client's `transact` is forwarded to the upstream as it came and its reply is
  returned as the upstream gave it. The upstream sends the change before the reply on
  the same connection, so a client sees its own change before its reply, as from any
  server. While the upstream is not connected, transactions wait for it (as the real
  relay's triggers do; one already sent when the upstream went is answered
  `canceled`), and `_Server` goes on saying `connected` for
  `RECONNECTION_GRACE` (the real `RELAY_MAX_RECONNECTION_MS`, against flapping).
  Nothing is stored: a relay has no file.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..jsonrpc.message import error_reply, reply
from ..jsonrpc.session import ClientConnection, ConnectionLost, RpcError
from ..ovsdb.database import Database
from ..ovsdb.errors import OvsdbError
from ..ovsdb.schema import DatabaseSchema
from ..util.reconnect import ReconnectLog
from ..util.uuidgen import new_uuid, sequential_uuid
from .active import attempt
from .hosted import HostedDb
from .replication import apply_updates

if TYPE_CHECKING:
    from .server import Server
    from .session import Session

log = logging.getLogger("relay")

RECONNECTION_GRACE = 30.0  # s


def parse_relay(spec: str) -> tuple[str, list[str]]:
    """(DB, remotes) of `relay:DB:REMOTE[,REMOTE...]`."""
    _, _, rest = spec.partition(":")
    name, sep, remotes = rest.partition(":")
    targets = [r for r in remotes.split(",") if r]
    if not name or not sep or not targets:
        raise OvsdbError("syntax error", f"{spec}: invalid relay syntax")
    return name, targets


class RelayDb:
    def __init__(self, server: Server, spec: str) -> None:
        self.server = server
        self.name, self.remotes = parse_relay(spec)
        self.hosted: HostedDb | None = None
        self.conn: ClientConnection | None = None
        self._task: asyncio.Task[None] | None = None
        # transactions that came while the upstream was away: (session, params, id)
        self.waiting: list[tuple[Session, list[Any], Any]] = []
        self._grace: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def close(self) -> None:
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    # -- the upstream ---------------------------------------------------------------------

    async def _run(self) -> None:
        fsm = ReconnectLog(free_tries=len(self.remotes))
        turn = 0
        while True:
            remote = self.remotes[turn % len(self.remotes)]
            turn += 1
            conn = await attempt(fsm, remote, self._connection(remote),
                                 self.server.pki.client_context)
            if conn is None:
                await asyncio.sleep(fsm.backoff_ms / 1000.0)
                continue
            fsm.connected()
            try:
                await self._monitor(conn)
                self.conn = conn
                self._set_connected(True)
                waiting, self.waiting = self.waiting, []
                for session, params, msg_id in waiting:
                    if not session.closed:
                        self.forward(session, params, msg_id)
                await conn.lost
            except (ConnectionLost, RpcError, OSError, OvsdbError) as e:
                log.warning("%s: %s", remote, e)
                conn.close()
            self.conn = None
            if self._grace is None:
                self._grace = asyncio.get_running_loop().call_later(
                    RECONNECTION_GRACE, self._set_connected, False)
            fsm.disconnected(None)
            await asyncio.sleep(fsm.backoff_ms / 1000.0)

    def _connection(self, remote: str) -> Callable[[], ClientConnection]:
        return lambda: ClientConnection(remote, on_notify=self._on_notify)

    async def _monitor(self, conn: ClientConnection) -> None:
        schema_json = await conn.request("get_schema", [self.name])
        schema = DatabaseSchema.from_json(schema_json)
        if self.hosted is None:
            db = Database(schema, uuids=new_uuid, versions=sequential_uuid)
            self.hosted = HostedDb(db, model="relay", clock=self.server.clock)
            self.hosted.relay = self
            self.server.attach_relay(self.hosted)
        elif self.hosted.db.schema.to_json() != schema.to_json():
            # (the upstream converted it: the copy starts again in the new schema, its
            # monitors dropped as for any replaced database)
            log.info("%s: the source's schema changed", self.name)
            db = Database(schema, uuids=new_uuid, versions=sequential_uuid)
            self.server.replace_db_contents(self.hosted, db,
                                            f"database {self.name} schema changed")
            self.server.server_db.set_row(self.hosted, leader=False)
        tables = {t: {"columns": sorted(ts.columns)} for t, ts in schema.tables.items()}
        initial = await conn.request("monitor", [self.name, ["relay", self.name], tables])
        apply_updates(self.server, self.hosted, initial, reset=set(tables))

    def _on_notify(self, method: str, params: list[Any]) -> None:
        if method == "update" and self.hosted is not None and len(params) == 2:
            apply_updates(self.server, self.hosted, params[1])

    def _set_connected(self, connected: bool) -> None:
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        if self.hosted is not None and self.name in self.server.dbs:
            self.server.server_db.set_row(self.hosted, leader=False, connected=connected)

    # -- clients' transactions --------------------------------------------------------------

    def forward(self, session: Session, params: list[Any], msg_id: Any) -> None:
        conn = self.conn
        if conn is None:
            self.waiting.append((session, params, msg_id))
            return

        async def relay() -> None:
            try:
                result = await conn.request("transact", params)
            except RpcError as e:
                session.send(error_reply(e.error, msg_id))
            except ConnectionLost:
                # (sent, and the upstream went before it answered: it may or may not
                # have committed it, so it is not sent again, as the real relay cancels
                # the transactions it had sent)
                session.send(error_reply("canceled", msg_id))
            else:
                session.send(reply(result, msg_id))

        asyncio.get_running_loop().create_task(relay())
