"""The client side of a JSON-RPC connection under asyncio: requests answered through
futures, notifications handed to a callback, liveness probes.

Rules kept here:
- `request()` returns the reply's result or raises `RpcError` carrying the error value;
  requests may be pipelined, replies are matched by id.
- Notifications are delivered to `on_notify` in arrival order, on the loop's thread,
  before any later reply is resolved: an update the server sent before a transaction's
  reply is always applied before the awaiting code resumes.
- When the connection closes, every pending request fails with `ConnectionLost`.
- `connect()` understands `unix:PATH` and `tcp:IP:PORT`.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

from .connection import Connection
from .message import ERROR, NOTIFY, REPLY, REQUEST, notification


class RpcError(Exception):
    def __init__(self, method: str, error: Any) -> None:
        super().__init__(f"{method}: {error!r}")
        self.method = method
        self.error = error


class ConnectionLost(Exception):
    pass


class ClientConnection(Connection):
    def __init__(self, name: str, on_notify: Callable[[str, list[Any]], None] | None = None,
                 probe_interval: float = 0.0) -> None:
        super().__init__(name, probe_interval=probe_interval)
        self.on_notify = on_notify
        self.pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self.next_id = 0
        self.lost = asyncio.get_event_loop().create_future()

    def on_message(self, kind: str, msg: dict[str, Any]) -> None:
        if kind == NOTIFY:
            if self.on_notify is not None:
                self.on_notify(msg["method"], msg["params"])
            return
        if kind == REQUEST:  # servers only ask "echo", answered below us
            return
        entry = self.pending.pop(msg.get("id"), None)  # type: ignore[arg-type]
        if entry is None:
            return
        method, fut = entry
        if fut.done():
            return
        if kind == REPLY:
            fut.set_result(msg["result"])
        elif kind == ERROR:
            fut.set_exception(RpcError(method, msg["error"]))

    def send_request(self, method: str, params: list[Any]) -> asyncio.Future[Any]:
        if self.closed:
            raise ConnectionLost(self.name)
        self.next_id += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = (method, fut)
        self.send({"method": method, "params": params, "id": self.next_id})
        return fut

    async def request(self, method: str, params: list[Any]) -> Any:
        return await self.send_request(method, params)

    def notify(self, method: str, params: list[Any]) -> None:
        self.send(notification(method, params))

    def on_close(self) -> None:
        pending, self.pending = self.pending, {}
        for method, fut in pending.values():
            if not fut.done():
                fut.set_exception(ConnectionLost(f"{self.name}: connection closed during "
                                                 f"{method}"))
        if not self.lost.done():
            self.lost.set_result(None)


async def connect(remote: str, factory: Callable[[], ClientConnection],
                  timeout: float | None = None) -> ClientConnection:
    loop = asyncio.get_running_loop()
    kind, _, addr = remote.partition(":")
    if kind == "unix":
        coro = loop.create_unix_connection(factory, addr)
    elif kind == "tcp":
        host, _, port = addr.rpartition(":")
        coro = loop.create_connection(factory, host.strip("[]"), int(port))
    else:
        raise ValueError(f"{remote}: unsupported remote (expected unix: or tcp:)")
    transport, conn = await asyncio.wait_for(coro, timeout)
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn
