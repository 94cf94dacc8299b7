"""One client connection of the OVSDB server and the state the protocol attaches to it:
monitors, pending transactions, locks, change awareness.

Rules kept here:
- Requests are handled in arrival order; a reply may be delayed (a blocked `wait`), and
  later requests do not wait for it.
- A transact id may not be reused while that transaction is still pending.
- Monitor ids are arbitrary JSON, compared by value.
- Closing the session cancels its monitors and pending transactions and releases its
  locks (handing them to the next waiter).
- What the session may write comes from the remote it came in through (read-only flag,
  role) and its peer's identity (`client_id`: the TLS certificate's CN, None without
  TLS); a remote's new options apply to its sessions at once, probe interval included.
  A transaction keeps the permissions it started with, also while it waits.
- A session is named in logs as the real server names its streams: `tcp:IP:PORT` of
  the peer, `unix#N` (a counter) for an unnamed unix peer.
- A request whose handling raises anything but an OVSDB error (a bug) is answered with
  an "internal error" reply, logged with its traceback, and its connection is closed,
  since that session's state is no longer known; the server and every other session go
  on.
Method semantics live in `methods`; this module keeps the per-connection bookkeeping.
"""

from __future__ import annotations

import itertools
import logging
from typing import TYPE_CHECKING, Any

from ..jsonrpc.connection import Connection
from ..jsonrpc.message import ERROR, NOTIFY, REPLY, error_reply, notification, reply
from ..jsonrpc.stream import dumps
from ..ovsdb.errors import OvsdbError, RpcStringError
from ..ovsdb.rbac import Access
from .monitor import V1, V2, Monitor

if TYPE_CHECKING:
    from .remotes import RemoteOptions
    from .server import Server

log = logging.getLogger("ovsdb_jsonrpc_server")

_UPDATE_METHOD = {V1: "update", V2: "update2", 3: "update3"}


_METHODS: Any = None


def _methods() -> Any:
    """The method table (imported on first use: methods imports this module)."""
    global _METHODS
    if _METHODS is None:
        from . import methods

        _METHODS = methods
    return _METHODS


_UNIX_PEERS = itertools.count()


def peer_name(transport: Any) -> str:
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = f"[{peer[0]}]" if ":" in str(peer[0]) else peer[0]
        return f"tcp:{host}:{peer[1]}"
    if peer:
        return f"unix:{peer}"
    return f"unix#{next(_UNIX_PEERS)}"


def json_key(value: Any) -> bytes:
    return dumps(value, sort_keys=True)


class Session(Connection):
    def __init__(self, server: Server, name: str = "", probe_interval: float = 0.0,
                 read_only: bool = False, role: str | None = None,
                 client_id: str | None = None) -> None:
        super().__init__(name, probe_interval=probe_interval, max_backlog=server.max_backlog,
                         max_message=server.max_message)
        self.server = server
        self.read_only = read_only
        self.role = role
        self.client_id = client_id
        self.monitors: dict[bytes, Monitor] = {}
        self.pending: dict[bytes, Any] = {}  # transact request ids awaiting a reply
        self.db_change_aware = False
        self.close_after_reply = False  # set when a request ends this session (convert)
        self.n_requests = 0

    def connection_made(self, transport: Any) -> None:
        if not self.name:
            self.name = peer_name(transport)
        super().connection_made(transport)
        if self.server.closing:
            # Accepted in the same loop pass as the shutdown: it must not run requests
            # against databases whose files are already closed.
            self.close(abort=True)
            return
        self.server.sessions.add(self)
        if self.closed:  # closed before it was made (server shutting down)
            self.server.sessions.discard(self)

    def on_message(self, kind: str, msg: dict[str, Any]) -> None:
        try:
            self._dispatch(kind, msg)
        except Exception:
            method = msg.get("method")
            log.exception("%s: internal error handling %s %s, closing connection",
                          self.name, kind, method if type(method) is str else "")
            if kind not in (NOTIFY, REPLY, ERROR):
                self.send(error_reply({"error": "internal error",
                                       "details": f"{method} request failed"}, msg["id"]))
            self.close()

    def _dispatch(self, kind: str, msg: dict[str, Any]) -> None:
        methods = _methods()
        if kind == NOTIFY:
            if msg["method"] == "cancel":
                methods.cancel(self, msg["params"])
            return
        if kind in (REPLY, ERROR):
            # The server only ever asks "echo" (answered by the connection layer).
            log.warning("%s: received unexpected %s message", self.name, kind)
            self.close()
            return
        self.n_requests += 1
        handler = methods.HANDLERS.get(msg["method"])
        msg_id = msg["id"]
        if handler is None:
            self.send(error_reply("unknown method", msg_id))
            return
        try:
            result = handler(self, msg["params"], msg_id)
        except OvsdbError as e:
            self.send(error_reply(e.to_json(), msg_id))
            return
        except RpcStringError as e:
            self.send(error_reply(str(e), msg_id))
            return
        if result is not methods.PENDING:
            self.send(reply(result, msg_id))
        if self.close_after_reply:
            self.close()
        self.server.after_request()

    # -- permissions and options of the remote -----------------------------------------

    def access(self) -> Access:
        """This session's permissions now, for one transaction."""
        locks = self.server.locks
        return Access(lambda name: locks.holds(self, name), read_only=self.read_only,
                      role=self.role, client_id=self.client_id)

    def set_options(self, options: RemoteOptions) -> None:
        self.read_only = options.read_only
        self.role = options.role
        interval = options.probe_interval
        if interval == self.probe_interval:
            return
        self.probe_interval = interval
        if self._probe_handle is not None:
            self._probe_handle.cancel()
            self._probe_handle = None
        if interval > 0 and self.transport is not None and not self.closed:
            self._schedule_probe()

    # -- monitors ----------------------------------------------------------------------

    def send_update(self, mon: Monitor, txn_id: str, updates: dict[str, Any]) -> None:
        if mon.version == 3:
            self.send(notification("update3", [mon.id, txn_id, updates]))
        else:
            self.send(notification(_UPDATE_METHOD[mon.version], [mon.id, updates]))

    def remove_monitor(self, key: bytes) -> Monitor | None:
        mon = self.monitors.pop(key, None)
        if mon is not None:
            hosted = self.server.dbs.get(mon.db_name)
            if hosted is not None:
                hosted.remove_monitor(mon)
        return mon

    # -- teardown ----------------------------------------------------------------------

    def on_close(self) -> None:
        server = self.server
        for key in list(self.monitors):
            self.remove_monitor(key)
        for hosted in server.dbs.values():
            hosted.cancel_triggers(self)
        for name, owner in server.locks.release_all(self):
            owner.send(notification("locked", [name]))
        server.sessions.discard(self)
        log.debug("%s: connection closed", self.name)
