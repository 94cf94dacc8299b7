"""Active remotes: `--remote=tcp:IP:PORT`, `unix:PATH` or `ssl:IP:PORT` (or such a target
in a Connection or Manager row). The server connects out and serves the connection as
it serves an accepted one, as ovsdb-server does for a manager.

Rules kept here:
- The first attempt is made at once. After a failed attempt or a session that ended,
  the next waits as OVS's reconnect state machine says (`util.reconnect.ReconnectLog`:
  1 s, then doubling up to the remote's `max_backoff`, 8 s by default, a row's new
  value taken from the next backoff on), with its log lines, named by the target.
- An `ssl:` target uses the server's PKI (`server.pki`) as a client's context.
- While connected, the session is an ordinary one (named by the target, with the
  remote's probe interval, read-only flag and role); `status()` reports
  `is_connected` and the state machine's `state` (`ACTIVE`, `BACKOFF`, `CONNECTING`),
  with `sec_since_connect` / `sec_since_disconnect` once there was a connection, as the
  real server writes them into a Connection row.
- `close()` stops the attempts and closes the session.
"""

from __future__ import annotations

import asyncio
import errno
import os
import ssl
import time
from collections.abc import Callable
from typing import Any

from ..jsonrpc.session import connect
from ..util.reconnect import ReconnectLog
from .remotes import Remote, RemoteOptions

ATTEMPT_TIMEOUT = 10.0  # s: one connection attempt


class ActiveRemote:
    def __init__(self, remote: Remote, options: RemoteOptions,
                 tls: Callable[[], ssl.SSLContext | None]) -> None:
        self.remote = remote
        self.options = options
        self.tls = tls  # (ssl:) the context of an attempt made now
        self.sessions: set[Any] = set()
        self.closed = False
        self.state = "BACKOFF"
        self.connected_at: float | None = None
        self.disconnected_at: float | None = None
        self._task: asyncio.Task[None] | None = None
        self._fsm: ReconnectLog | None = None

    # -- what `Listeners` asks of a listener ---------------------------------------------

    def open(self) -> None:
        pass  # (nothing to bind)

    async def serve(self, factory: Callable[[], Any]) -> None:
        """Start connecting (in the background: this returns at once)."""
        if self._task is None and not self.closed:
            self._task = asyncio.get_running_loop().create_task(self._run(factory))

    def apply(self, options: RemoteOptions) -> None:
        if options == self.options:
            return
        self.options = options
        if self._fsm is not None:  # (a row's new max_backoff: from the next backoff on)
            self._fsm.max_backoff = max(options.max_backoff_ms, self._fsm.min_backoff)
        for s in list(self.sessions):
            s.set_options(options)

    @property
    def port(self) -> int | None:
        return None

    @property
    def bound(self) -> str:
        return self.remote.name

    def status(self) -> tuple[bool, dict[str, str]]:
        now = time.monotonic()
        status = {"state": self.state}
        if self.connected_at is not None:
            status["sec_since_connect"] = str(int(now - self.connected_at))
        if self.disconnected_at is not None:
            status["sec_since_disconnect"] = str(int(now - self.disconnected_at))
        return bool(self.sessions), status

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._task is not None:
            self._task.cancel()
        for s in list(self.sessions):
            s.close()

    # -- the attempts ---------------------------------------------------------------------

    async def _run(self, factory: Callable[[], Any]) -> None:
        fsm = self._fsm = ReconnectLog(max_backoff_ms=self.options.max_backoff_ms)
        name = self.remote.name
        while not self.closed:
            self.state = "CONNECTING"
            ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def made(ended: asyncio.Future[None] = ended) -> Any:
                session = factory()
                session.name = name
                session.on_closed.append(lambda: _end(ended))
                return session

            session = await attempt(fsm, name, made, self.tls)
            if session is not None:
                fsm.connected()
                self.state = "ACTIVE"
                self.connected_at = time.monotonic()
                self.sessions.add(session)
                await ended
                self.sessions.discard(session)
                self.disconnected_at = time.monotonic()
                if self.closed:
                    return
                # (in use: as long as the backoff it would otherwise wait, as
                # reconnect.c's "last activity" rule)
                fsm.disconnected(None, used=(self.disconnected_at - self.connected_at) * 1000
                                 >= fsm.backoff_ms)
            self.state = "BACKOFF"
            await asyncio.sleep(fsm.backoff_ms / 1000.0)


async def attempt(fsm: ReconnectLog, remote: str, factory: Callable[[], Any],
                  tls: Callable[[], ssl.SSLContext | None]) -> Any:
    """One attempt of the server's at `remote` (an active remote, a relay's source, a
    backup's active server), logged by `fsm` as reconnect.c logs it, an `ssl:` one with
    the server's PKI (`tls`): the protocol made, or None after a failure (logged; the
    caller waits `fsm.backoff_ms`)."""
    fsm.connecting(remote)
    try:
        ctx = tls() if remote.startswith("ssl:") else None
        if remote.startswith("ssl:") and ctx is None:
            raise OSError(errno.ENOPROTOOPT, os.strerror(errno.ENOPROTOOPT))
        return await connect(remote, factory, ATTEMPT_TIMEOUT, ssl_context=ctx)
    except (TimeoutError, OSError) as e:
        fsm.failed(None if isinstance(e, TimeoutError) else _text(e))
        return None


def _end(ended: asyncio.Future[None]) -> None:
    if not ended.done():
        ended.set_result(None)


def _text(e: BaseException) -> str:
    if isinstance(e, OSError) and e.errno:
        return os.strerror(e.errno)
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e) or type(e).__name__
