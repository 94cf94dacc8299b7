"""The server's listening sockets: configured remotes, remotes read from the database
(`db:DB,TABLE,COLUMN`), their options, and the status the real server reports for the
latter.

Rules kept here:
- Every remote, configured or read from a row, is one listener per target: a target
  named twice (on the command line and in a Connection row, or in two databases) is
  served once, with the row's options.
- `db:` remotes are re-read after every commit to the database they name: listeners
  appear and disappear with the rows ("TARGET: remote deconfigured"), and a removed
  listener's sessions are closed, as in the real server.
- A `db:` remote must name a database, table and column that exist (`db_problems`,
  with the real server's texts: `"db:...": no database named DB`, `no table named
  TABLE`, `table "TABLE" has no column "COLUMN"`, `invalid syntax`). At startup that
  is fatal (cli/server.py); `ovsdb-server/add-remote` refuses it with that text; one
  that goes bad at run time (its database removed) is logged once, as the real server
  does, each time the set of problems changes (ovsdb_server, WARN, one line per
  remote in the real server's walk order), and comes back when its database does. A
  column of another type than string or reference is no error and names no remote. A
  clustered database that has not joined yet is no error either.
- A row's options (see `remotes.row_options`) apply to the listener and at once to the
  sessions it already has: read-only, role and probe interval. (The real 3.1 server
  keeps a listener's first read_only and role until the listener goes away; a row
  turned read-only must not leave writable sessions, so we apply it.) A new dscp
  reopens the listener, as in the real server; the TOS byte is set on TCP listeners.
- A TCP listener on port 0 logs `PORT:IP: listening on port N` (module socket_util,
  INFO): scripts read the kernel-chosen port from it.
- A listener that cannot be opened (port in use, socket directory missing), configured
  or added at run time or read from a row, never stops the server: as the real server,
  it logs `REMOTE: listen failed: REASON` (ovsdb_jsonrpc_server, ERR; before it the
  cause in the real server's words, socket_util `bind` or stream_unix `binding
  failed`), stays in the configuration (`ovsdb-server/add-remote` succeeds, and
  `list-remotes` shows it) and is retried every `RETRY_INTERVAL`, so it listens soon
  after the port frees up. Those lines are rate-limited per module as the real
  server's (a burst of 5, then one a minute, with OVS's "Dropped N log messages" line;
  `util.ratelimit`).
- For a `db:` remote whose values are references to rows with a `target` column
  (OVN's Connection, Open vSwitch's Manager), the server writes `is_connected` and
  `status` (`bound_port`, `n_connections` when more than one, `sec_since_connect` and
  `sec_since_disconnect` as 0, as the real server does for a listener) into those rows
  when the first `db:` remote is added and every few seconds after, except in
  clustered databases (the real server skips them too).
  A target we do not serve (an active remote, or a name that is no remote, which the
  real server takes for an active one) shows `state=BACKOFF`, as a real active remote
  that cannot connect.
  Those columns are ephemeral: nothing reaches the file.
- A `pssl:` listener is a TCP one whose connections make their TLS handshake first
  (`jsonrpc.tls.TlsAcceptor`), with the context the server's PKI options give at that
  moment: a connection accepted while they are incomplete is refused, its reasons
  logged.
- An active remote (`tcp:`, `unix:`, `ssl:`) is served like a listener: the server
  connects out and reconnects (`server.active`), its status written as a listener's.
- A listener's unix socket file is removed when it closes.
- The listen queue is long (`LISTEN_BACKLOG`), so that a burst of clients connecting at
  once (all of a deployment reconnecting after a restart) queues instead of being
  refused with EAGAIN.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..jsonrpc.tls import TlsAcceptor
from ..ovsdb.errors import OvsdbError
from ..util import ratelimit
from ..util.ratelimit import RateLimit
from ..util.unixsock import listen_unix
from .active import ActiveRemote
from .appctl import CommandError
from .remotes import (
    Remote,
    RemoteOptions,
    db_column,
    default_options,
    parse_remote,
    row_options,
    row_target,
    walk_order,
)

if TYPE_CHECKING:
    from .hosted import HostedDb

log = logging.getLogger("ovsdb_jsonrpc_server")
server_log = logging.getLogger("ovsdb_server")
socket_log = logging.getLogger("socket_util")
unix_log = logging.getLogger("stream_unix")

STATUS_INTERVAL = 2.5
RETRY_INTERVAL = 0.5
LISTEN_BACKLOG = 1024


# Each call site's VLOG_RATE_LIMIT_INIT(1, 5): a burst of 5, then one a minute.
_RL_JSONRPC = RateLimit(1, 5)
_RL_SOCKET = RateLimit(1, 5)
_RL_UNIX = RateLimit(1, 5)


_INET = ("ptcp", "pssl")
_ACTIVE = ("unix", "tcp", "ssl")  # (`server.active`)


def _no_tls() -> ssl.SSLContext | None:
    log.error("%s", "SSL is not configured")
    return None


class Listener:
    def __init__(self, remote: Remote, options: RemoteOptions,
                 tls: Callable[[], ssl.SSLContext | None] = _no_tls) -> None:
        self.remote = remote
        self.options = options
        self.tls = tls  # (pssl:) the context for a connection accepted now
        self.sock: socket.socket | None = None
        self.server: asyncio.AbstractServer | None = None
        self.sessions: set[Any] = set()
        self.closed = False

    # -- opening -----------------------------------------------------------------------

    def open(self) -> None:
        """Bind and listen now (so the port is known and connections queue at once);
        `serve` starts accepting. Raises OSError, after logging it as the real server."""
        r = self.remote
        try:
            if r.kind == "punix":
                self.sock = self._open_unix(r.path)
            else:
                self.sock = self._open_tcp(r)
        except OSError as e:
            ratelimit.log(log.name, logging.ERROR, _RL_JSONRPC,
                          f"{r.name}: listen failed: {e.strerror or e}")
            raise

    @staticmethod
    def _open_unix(path: str) -> socket.socket:
        try:
            return listen_unix(path, LISTEN_BACKLOG)
        except OSError as e:
            ratelimit.log(unix_log.name, logging.ERROR, _RL_UNIX,
                          f"{path}: binding failed: {e.strerror or e}")
            raise

    def _open_tcp(self, r: Remote) -> socket.socket:
        target = r.name.partition(":")[2]
        family, _, _, _, addr = socket.getaddrinfo(r.host, r.port, type=socket.SOCK_STREAM,
                                                   flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, self.options.dscp << 2)
            else:
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, self.options.dscp << 2)
            try:
                sock.bind(addr)
            except OSError as e:
                ratelimit.log(socket_log.name, logging.ERROR, _RL_SOCKET,
                              f"{target}: bind: {e.strerror or e}")
                raise
            sock.listen(LISTEN_BACKLOG)
        except OSError:
            sock.close()
            raise
        if r.port == 0:
            socket_log.info("%s: listening on port %d", target, sock.getsockname()[1])
        return sock

    async def serve(self, factory: Callable[[], Any]) -> None:
        sock = self.sock
        if sock is None or self.closed:
            return
        loop = asyncio.get_running_loop()
        if self.remote.kind == "punix":
            server = await loop.create_unix_server(factory, sock=sock, backlog=LISTEN_BACKLOG)
        elif self.remote.kind == "pssl":
            tls = self.tls

            name = self.bound

            def accept() -> TlsAcceptor:
                return TlsAcceptor(factory, tls, name)

            server = await loop.create_server(accept, sock=sock, backlog=LISTEN_BACKLOG)
        else:
            server = await loop.create_server(factory, sock=sock, backlog=LISTEN_BACKLOG)
        if self.closed:
            server.close()
        else:
            self.server = server

    # -- state -------------------------------------------------------------------------

    def apply(self, options: RemoteOptions) -> None:
        """New options for this listener and its sessions (re-read after every commit
        to the database, so the common case, nothing changed, costs nothing per
        session)."""
        if options == self.options:
            return
        self.options = options
        for s in list(self.sessions):
            s.set_options(options)

    @property
    def port(self) -> int | None:
        if self.remote.kind in _INET and self.sock is not None and not self.closed:
            return int(self.sock.getsockname()[1])
        return None

    @property
    def bound(self) -> str:
        """The address actually bound (resolves port 0)."""
        r = self.remote
        if r.kind in _INET and self.sock is not None and not self.closed:
            host, port = self.sock.getsockname()[:2]
            return f"{r.kind}:{port}:{host}"
        return r.name

    def status(self) -> tuple[bool, dict[str, str]]:
        """(is_connected, status map) as the real server reports a listener."""
        status = {"sec_since_connect": "0", "sec_since_disconnect": "0"}
        if len(self.sessions) > 1:
            status["n_connections"] = str(len(self.sessions))
        port = self.port
        if port:
            status["bound_port"] = str(port)
        return bool(self.sessions), status

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.server is not None:
            self.server.close()
            self.server = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        for s in list(self.sessions):
            s.close()
        if self.remote.kind == "punix":
            try:
                os.unlink(self.remote.path)
            except FileNotFoundError:
                pass


class Listeners:
    def __init__(self, session_factory: Callable[[Listener | ActiveRemote], Any],
                 dbs: dict[str, HostedDb], status_writer: Callable[[str, list[Any]], None],
                 joining: Callable[[str], bool] = lambda name: False,
                 tls: Callable[[], ssl.SSLContext | None] = _no_tls,
                 tls_out: Callable[[], ssl.SSLContext | None] = _no_tls) -> None:
        self.session_factory = session_factory
        self.tls = tls  # the TLS context for a connection to a pssl: listener
        self.tls_out = tls_out  # and for one an ssl: remote makes
        self.dbs = dbs
        self.status_writer = status_writer
        self.joining = joining  # a clustered database with no contents yet
        # As configured, in the order given: targets and db:DB,TABLE,COLUMN.
        self.remotes: dict[str, None] = {}
        self._last_problems = ""  # the db: remotes' problems last logged
        self.active: dict[str, Listener | ActiveRemote] = {}  # target -> its listener
        self._warned: set[str] = set()  # targets we cannot serve, already logged
        self._starting: set[asyncio.Task[None]] = set()
        self._status_task: asyncio.Task[None] | None = None
        self._retry_task: asyncio.Task[None] | None = None
        self._failed: set[str] = set()  # targets wanted whose listener could not open

    @property
    def from_db(self) -> list[str]:
        return [n for n in self.remotes if n.startswith("db:")]

    # -- configuration -----------------------------------------------------------------

    async def add(self, name: str) -> None:
        remote = parse_remote(name)
        if name in self.remotes:
            return
        self.remotes[name] = None
        self.reconfigure()  # one that cannot listen yet is logged and retried
        if remote.kind == "db" and self._status_task is None:
            self._status_task = asyncio.get_running_loop().create_task(self._status_loop())
        while self._starting:
            await asyncio.gather(*list(self._starting), return_exceptions=True)

    def check(self, name: str) -> Remote:
        """Validate a remote for `ovsdb-server/add-remote`, with the real wording."""
        try:
            remote = parse_remote(name)
        except OvsdbError as e:
            raise CommandError(e.details or e.tag) from None
        if remote.kind == "db":
            problem = self.db_problem(name)
            if problem is not None:
                raise CommandError(problem)
        return remote

    def db_problem(self, name: str) -> str | None:
        """Why the `db:` remote `name` names no column, in the real server's words."""
        parts = db_column(name)
        if parts is None:
            return f'"{name}": invalid syntax'
        db_name, table, column = parts
        hosted = self.dbs.get(db_name)
        if hosted is None:
            return f'"{name}": no database named {db_name}'
        t = hosted.db.tables.get(table)
        if t is None:
            return f'"{name}": no table named {table}'
        if column not in t.schema.columns:
            return f'"{name}": table "{table}" has no column "{column}"'
        return None

    def db_problems(self, names: Iterable[str] | None = None) -> list[str]:
        """The problems of the `db:` remotes among `names` (default: those configured),
        in the real server's order; a clustered database that has not joined yet is
        none."""
        out = []
        for name in walk_order(self.remotes if names is None else dict.fromkeys(names)):
            if name.startswith("db:"):
                problem = self.db_problem(name)
                parts = db_column(name)
                if problem is not None and not (parts and self.joining(parts[0])):
                    out.append(problem)
        return out

    def remove(self, name: str) -> None:
        if name not in self.remotes:
            raise CommandError("no such remote")
        del self.remotes[name]
        self.reconfigure()

    def names(self) -> list[str]:
        return sorted(self.remotes)

    def bound(self) -> list[str]:
        return [self.active[n].bound for n in sorted(self.remotes) if n in self.active]

    def close(self) -> None:
        if self._status_task is not None:
            self._status_task.cancel()
            self._status_task = None
        if self._retry_task is not None:
            self._retry_task.cancel()
            self._retry_task = None
        self._failed.clear()
        for lst in self.active.values():
            lst.close()
        self.active.clear()
        self.remotes.clear()

    # -- reconciling the listeners with the configuration ----------------------------

    def refresh(self, changed_db: str | None) -> None:
        """A commit to `changed_db` may have changed the remotes read from it; None: a
        database came, went or changed its schema. (A commit cannot change what a `db:`
        remote's names refer to, so their problems are checked only then.)"""
        if any(changed_db is None or (db_column(n) or ("",))[0] == changed_db
               for n in self.from_db):
            self.reconfigure(check_names=changed_db is None)

    def wanted(self) -> dict[str, RemoteOptions]:
        """Every target to serve with its options: configured targets with their kind's
        defaults, then the rows' targets with the rows' options."""
        out: dict[str, RemoteOptions] = {}
        for name in sorted(self.remotes):
            if not name.startswith("db:"):
                out[name] = default_options(parse_remote(name))
        for name in sorted(self.from_db):
            parts = db_column(name)
            if parts is None:
                continue
            for target, ts, data in self._target_rows(*parts):
                base = out.get(target)
                if base is None:
                    try:
                        base = default_options(parse_remote(target))
                    except OvsdbError:
                        base = RemoteOptions(probe_interval_ms=0)
                out[target] = base if ts is None else row_options(ts, data, base)
        return out

    def reconfigure(self, check_names: bool = True) -> None:
        if check_names:
            self._report_problems()
        wanted = self.wanted()
        self._failed.intersection_update(wanted)
        for target, lst in list(self.active.items()):
            options = wanted.get(target)
            if options is None:
                log.info("%s: remote deconfigured", target)
            elif options.dscp == lst.options.dscp:
                continue
            del self.active[target]
            lst.close()
        for target, options in wanted.items():
            current = self.active.get(target)
            if current is not None:
                current.apply(options)
                continue
            remote = self._servable(target)
            if remote is None:
                continue
            made: Listener | ActiveRemote = ActiveRemote(remote, options, self.tls_out) \
                if remote.kind in _ACTIVE else Listener(remote, options, self.tls)
            try:
                made.open()
            except OSError:
                self._failed.add(target)  # logged; tried again soon
                continue
            self._failed.discard(target)
            self.active[target] = made
            self._start(made)
        if self._failed and self._retry_task is None:
            self._retry_task = asyncio.get_running_loop().create_task(self._retry_loop())

    def _report_problems(self) -> None:
        """The real server's `report_error_if_changed`: the db: remotes' problems are
        logged when they differ from those last logged."""
        problems = "\n".join(self.db_problems()) if self.from_db else ""
        if problems and problems != self._last_problems:
            server_log.warning("%s", problems)
        self._last_problems = problems

    async def _retry_loop(self) -> None:
        """Reopen the listeners that failed until none is left, as the real server
        does in every iteration of its main loop."""
        try:
            while self._failed:
                await asyncio.sleep(RETRY_INTERVAL)
                try:
                    self.reconfigure()
                except Exception:  # a retry must never take the server down
                    log.exception("retrying remotes failed")
        finally:
            self._retry_task = None

    def _servable(self, target: str) -> Remote | None:
        try:
            remote = parse_remote(target)
        except OvsdbError as e:
            problem = e.details or e.tag
        else:
            if remote.kind in ("punix", *_INET, *_ACTIVE):
                return remote
            problem = f"{target}: only punix:, ptcp:, pssl:, unix:, tcp: and ssl: remotes " \
                "are served"
        if target not in self._warned:
            self._warned.add(target)
            log.warning("%s", problem)
        return None

    def _start(self, lst: Listener | ActiveRemote) -> None:
        def factory() -> Any:
            session = self.session_factory(lst)
            session.set_options(lst.options)
            return session

        task = asyncio.get_running_loop().create_task(lst.serve(factory))
        self._starting.add(task)

        def done(t: asyncio.Task[None]) -> None:
            self._starting.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("%s: listen failed: %s", lst.remote.name, t.exception())

        task.add_done_callback(done)

    def _target_rows(self, db_name: str, table: str, column: str
                     ) -> list[tuple[str, Any, Any]]:
        """(target, schema, row values) for each value of the column; schema and values
        are None for a plain string (a target without options)."""
        hosted = self.dbs.get(db_name)
        if hosted is None:
            return []
        t = hosted.db.tables.get(table)
        if t is None or column not in t.schema.columns:
            return []
        ctype = t.schema.columns[column].type
        base = ctype.key
        if ctype.value is not None:
            return []
        out: list[tuple[str, Any, Any]] = []
        for row in t.rows.values():
            v = row.data[column]
            for x in v if type(v) is tuple else (v,):
                if base.type == "string":
                    out.append((x, None, None))
                elif base.type == "uuid" and base.ref_table is not None:
                    ref = hosted.db.tables.get(base.ref_table)
                    target_row = ref.rows.get(x) if ref is not None else None
                    if ref is None or target_row is None:
                        continue
                    target = row_target(ref.schema, target_row.data)
                    if target is not None:
                        out.append((target, ref.schema, target_row.data))
        return out

    # -- status written back into the rows --------------------------------------------

    async def _status_loop(self) -> None:
        """Status at once (the real server writes it in its first loop iteration), then
        every few seconds. Each time, the remotes are also re-read: a database removed
        or replaced takes its rows' listeners with it, and failed ones are retried."""
        while True:
            await asyncio.sleep(0)
            try:
                self.reconfigure()
                self.write_status()
            except Exception:  # status is best effort; never take the server down
                log.exception("updating remote status failed")
            await asyncio.sleep(STATUS_INTERVAL)

    def write_status(self) -> None:
        for db_name, hosted in list(self.dbs.items()):
            if hosted.cluster is not None:
                continue
            ops: list[Any] = []
            for name in sorted(self.from_db):
                parts = db_column(name)
                if parts is not None and parts[0] == db_name:
                    ops.extend(self._status_ops(hosted, parts[1], parts[2]))
            if ops:
                self.status_writer(db_name, ops)

    def _unserved_status(self, target: str) -> dict[str, str]:
        """The real server's status for a target it has no listener for: an active
        remote (or a name it cannot parse, which it takes for one) that never connects
        is backing off; a passive one that failed to open has an all-zero status."""
        if target in self._warned and not target.startswith("p"):
            return {"state": "BACKOFF"}
        return {"sec_since_connect": "0", "sec_since_disconnect": "0"}

    def _status_ops(self, hosted: HostedDb, table: str, column: str) -> list[Any]:
        t = hosted.db.tables.get(table)
        if t is None or column not in t.schema.columns:
            return []
        ctype = t.schema.columns[column].type
        ref_name = ctype.key.ref_table
        if ctype.key.type != "uuid" or ref_name is None or ctype.value is not None:
            return []
        ref = hosted.db.tables[ref_name]
        cols = ref.schema.columns
        ops: list[Any] = []
        seen: set[str] = set()
        for row in t.rows.values():
            v = row.data[column]
            for uuid in v if type(v) is tuple else (v,):
                target_row = ref.rows.get(uuid)
                if target_row is None or uuid in seen:
                    continue
                seen.add(uuid)
                target = row_target(ref.schema, target_row.data)
                if target is None:
                    continue
                lst = self.active.get(target)
                connected, status = (lst.status() if lst is not None
                                     else (False, self._unserved_status(target)))
                new: dict[str, Any] = {}
                if "is_connected" in cols and target_row.data["is_connected"] != connected:
                    new["is_connected"] = connected
                if "status" in cols:
                    datum = tuple(sorted(status.items()))
                    if target_row.data["status"] != datum:
                        new["status"] = ["map", [list(kv) for kv in datum]]
                if new:
                    ops.append({"op": "update", "table": ref_name,
                                "where": [["_uuid", "==", ["uuid", uuid]]], "row": new})
        return ops
