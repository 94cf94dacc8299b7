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
- A client that does not read (what the session sent is not all written) is handled as
  the real server handles it (`ovsdb_jsonrpc_session_run`): no update is composed for
  it and none of its requests is read; its monitors hold their changes, merged per row
  (`Monitor.hold`), and once everything sent is written each monitor sends what it
  holds as one update (update3 with the database's last transaction id). Held updates
  go out before any other message, as the real server flushes its monitors before each
  message (`ovsdb_jsonrpc_session_send`): a reply never overtakes the update of its own
  transaction. "Not all written" is asyncio's write buffer not being empty (the
  threshold 0), the equivalent of the real server's non-empty backlog: both mean the
  kernel did not take everything. So memory per slow client is bounded by the rows
  that changed; `--max-backlog` stays the last resort for other output.
- With `--update-delay-ms=N` (off by default), a session's monitor updates leave no
  sooner than N ms after its previous ones, and at once after an idle gap: the first
  update after a quiet spell is sent, then its monitors hold what comes for N ms (the
  same merge per row as for a client that does not read), and at the end of the window
  what they hold leaves as one update per monitor and the next window opens; a window
  in which nothing came ends the holding. This is seed 004's delayed wake applied to
  the server's output (`util.seq.DelayedWake` decides each flush): a burst of
  transactions gives each client a few merged updates, not one per transaction. The
  held updates go out before any other message, so a client still gets the updates of
  its own transaction before the reply.
- Inside an output batch (one burst of input), a commit's updates are not rendered at
  once: each monitor collects the batch's changesets (`Monitor.pending`) and gets one
  merged update at the batch's end (`HostedDb.render_pending`), as the real server
  composes one update from what a pass of its loop committed. Before the session sends
  anything else, its monitors' pending updates go first, as the held ones do.
- A request whose handling raises anything but an OVSDB error (a bug) is answered with
  an "internal error" reply, logged with its traceback, and its connection is closed,
  since that session's state is no longer known; the server and every other session go
  on.
Method semantics live in `methods`; this module keeps the per-connection bookkeeping.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import TYPE_CHECKING, Any

from ..jsonrpc.connection import Connection
from ..jsonrpc.message import ERROR, NOTIFY, REPLY, error_reply, notification, reply
from ..jsonrpc.stream import dumps
from ..jsonrpc.tls import peer_common_name
from ..ovsdb.errors import OvsdbError, RpcStringError
from ..ovsdb.rbac import Access
from ..util import batch
from ..util.seq import DelayedWake
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


def _update(mon: Monitor, txn_id: str, updates: dict[str, Any]) -> dict[str, Any]:
    if mon.version == 3:
        return notification("update3", [mon.id, txn_id, updates])
    return notification(_UPDATE_METHOD[mon.version], [mon.id, updates])


class Session(Connection):
    def __init__(self, server: Server, name: str = "", probe_interval: float = 0.0,
                 read_only: bool = False, role: str | None = None,
                 client_id: str | None = None) -> None:
        super().__init__(name, probe_interval=probe_interval, max_backlog=server.max_backlog,
                         max_message=server.max_message, backlog_threshold=0)
        self.stream.on_large = server.large_message
        self.server = server
        self.read_only = read_only
        self.role = role
        self.client_id = client_id
        self.monitors: dict[bytes, Monitor] = {}
        self.pending: dict[bytes, Any] = {}  # transact request ids awaiting a reply
        self.db_change_aware = False
        self.close_after_reply = False  # set when a request ends this session (convert)
        self._holding = False  # monitors hold their changes (the client is not reading)
        # --update-delay-ms: the end of the window in which the monitors hold their
        # changes after a flush, as `Server.end_window_at` filed it (None: no window,
        # updates leave as they come), and the rule of the next flush (not before a
        # delay after the last one).
        self.window_end: float | None = None
        self._flushed = DelayedWake(0, 0.0)
        self._drain_scheduled = False
        self.n_requests = 0

    def connection_made(self, transport: Any) -> None:
        if not self.name:
            self.name = peer_name(transport)
        if self.client_id is None:  # (TLS: the certificate's CN)
            self.client_id = peer_common_name(transport.get_extra_info("peercert"))
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
        return Access(lambda name: locks.holds(self, name),
                      read_only=self.read_only or self.server.backup,
                      role=self.role, client_id=self.client_id)

    def set_options(self, options: RemoteOptions) -> None:
        self.read_only = options.read_only
        self.role = options.role
        self.set_probe_interval(options.probe_interval)

    # -- monitors ----------------------------------------------------------------------

    def send(self, msg: Any, counted: bool = True) -> None:
        self._before_sending()
        super().send(msg, counted)

    def send_update(self, mon: Monitor, txn_id: str, updates: dict[str, Any],
                    shared: dict[Any, Any] | None = None) -> None:
        """Send `mon` its `updates`. With `shared` (the commit's rendering cache), the
        message is encoded once for every session whose monitor has the same id and
        the same row updates (the same dicts: `Monitor.updates` shares them)."""
        if shared is None:
            self.send(_update(mon, txn_id, updates))
        else:
            key = ("message", mon.version, txn_id, dumps(mon.id), tuple(updates),
                   tuple(map(id, updates.values())))
            hit = shared.get(key)
            if hit is None:  # (the value keeps the dicts whose ids are in the key alive)
                hit = shared[key] = (dumps(_update(mon, txn_id, updates)), updates)
            self._before_sending()
            self.send_bytes(hit[0])
        if self.server.update_delay > 0:
            self._flushed_now()

    def _before_sending(self) -> None:
        for mon in self.monitors.values():
            if mon.pending:  # this batch's updates first: a reply never overtakes them
                self._render_pending(mon)
        if (self._holding or self.window_end is not None) and \
                self._release(list(self.monitors.values())) and self.window_end is not None:
            # a flush inside the window: the next may come a delay after it
            self._flushed = DelayedWake(0, asyncio.get_running_loop().time()
                                        + self.server.update_delay)

    def release_held(self, mon: Monitor) -> None:
        """Send what `mon` holds now (before its conditions change, so that what it
        held is judged by the conditions it was held under)."""
        if mon.pending:
            self._render_pending(mon)
        if mon.held:
            self._release([mon])

    def _render_pending(self, mon: Monitor) -> None:
        hosted = self.server.dbs.get(mon.db_name)
        if hosted is not None:
            hosted.render_pending(mon)
        mon.pending = []

    # -- coalesced updates (--update-delay-ms) -------------------------------------------

    def _flushed_now(self) -> None:
        """Updates just left: until the delay has passed, the monitors hold."""
        delay = self.server.update_delay
        loop = asyncio.get_running_loop()
        now = loop.time()
        self._flushed = DelayedWake(0, now + delay)
        for mon in self.monitors.values():
            if mon.held is None:
                mon.held = {}
        if self.window_end is None and not self.closed:
            self.window_end = self.server.end_window_at(self, now + delay)

    def window_ends(self) -> None:
        """(Called by the server at the end of this session's update window.)"""
        self.window_end = None
        if self.closed:
            return
        now = asyncio.get_running_loop().time()
        held = any(mon.held for mon in self.monitors.values())
        at = self._flushed.wake_at(1 if held else 0, now)
        if at is None:  # nothing came in the window: updates leave as they come again
            if not self._holding:
                for mon in self.monitors.values():
                    mon.held = None
            return
        if at > now:  # (a flush since the window opened moved its end)
            self.window_end = self.server.end_window_at(self, at)
            return
        self._release(list(self.monitors.values()), keep_holding=True)
        self._flushed_now()

    def remove_monitor(self, key: bytes) -> Monitor | None:
        mon = self.monitors.get(key)
        if mon is not None and mon.held and self.db_change_aware and not self.closed:
            # Canceled by the server: the real server sends what it holds first, as it
            # flushes its monitors before the monitor_canceled notification.
            self._release([mon])
        mon = self.monitors.pop(key, None)
        if mon is not None:
            hosted = self.server.dbs.get(mon.db_name)
            if hosted is not None:
                hosted.remove_monitor(mon)
        return mon

    # -- a client that does not read ---------------------------------------------------

    def on_backlog(self, backlogged: bool) -> None:
        t = self.transport
        assert t is not None
        if backlogged:
            self._holding = True
            for mon in self.monitors.values():
                if mon.held is None:
                    mon.held = {}
            t.pause_reading()
        elif not self._drain_scheduled:
            # Not from inside the transport's write callback: what it sends may fill
            # the backlog again (or exceed the limit and abort the connection).
            self._drain_scheduled = True
            asyncio.get_running_loop().call_soon(self._drained)

    def _drained(self) -> None:
        self._drain_scheduled = False
        if self.closed or self.backlogged:
            return
        self._holding = False
        self._release(list(self.monitors.values()))
        t = self.transport
        if not self._holding and t is not None and not self.closed:
            t.resume_reading()

    def _release(self, monitors: list[Monitor], keep_holding: bool = False) -> bool:
        """Send what `monitors` hold, each monitor's changes as one update (not counted
        against --max-backlog: it is bounded by the rows); they go on holding while the
        session is held up or its update window is open."""
        held = []
        keep = keep_holding or self._holding or self.window_end is not None
        for mon in monitors:
            if mon.held is not None:
                cs = mon.take_held(keep)
                if cs is not None:
                    held.append((mon, cs))
        if not held:
            return False
        shared = self.server.release_cache([cs for _, cs in held])
        batch.begin()
        try:
            for mon, cs in held:
                updates = mon.updates(cs, shared)
                hosted = self.server.dbs.get(mon.db_name)
                if updates is not None and hosted is not None:
                    Connection.send(self, _update(mon, hosted.last_txn_id, updates), False)
        finally:
            batch.end()
        return True

    # -- teardown ----------------------------------------------------------------------

    def on_close(self) -> None:
        server = self.server
        self.window_end = None  # (the server skips it when the window ends)
        for key in list(self.monitors):
            self.remove_monitor(key)
        for hosted in server.dbs.values():
            hosted.cancel_triggers(self)
        for name, owner in server.locks.release_all(self):
            owner.send(notification("locked", [name]))
        server.sessions.discard(self)
        log.debug("%s: connection closed", self.name)
