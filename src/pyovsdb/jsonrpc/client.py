"""A small blocking JSON-RPC client, for command-line tools, tests and benchmarks.

Rules kept here:
- Remotes are `unix:PATH` or `tcp:IP:PORT` (IPv6 literal in brackets). A relative
  unix PATH is in the run directory ($OVS_RUNDIR, default /var/run/openvswitch), as
  the real tools resolve it (`unix_path`), not in the working directory.
- `call` sends a request and returns its reply, answering the server's `echo` probes
  and queueing notifications (updates, locked, stolen) for `next_notification()`.
- Many requests may be in flight (`send` then `wait`), as pipelining clients do.
- `read` reads once and hands back what came, in order (echo probes answered), for a
  caller that dispatches messages itself; `wait` and `next_notification` queue them.
- A closed connection (`receive failed (End of file)`, the real tools' words) or a
  JSON-RPC error reply raises `RpcError`.
"""

from __future__ import annotations

import errno
import os
import socket
import ssl
from collections import deque
from typing import Any

import orjson

from ..util.daemon import rundir
from ..util.unixsock import connect_unix
from . import tls
from .message import ERROR, NOTIFY, REPLY, REQUEST, classify, reply
from .stream import JsonStream


class RpcError(Exception):
    def __init__(self, message: str, error: Any = None) -> None:
        super().__init__(message)
        self.error = error


def unix_path(path: str) -> str:
    """Where a `unix:`/`punix:` socket named `path` is: a relative name is in the run
    directory, as lib/stream-unix.c resolves it."""
    return os.path.join(rundir(), path)


def connect(remote: str, timeout: float | None = None) -> socket.socket:
    kind, _, addr = remote.partition(":")
    if kind == "unix":
        s = connect_unix(unix_path(addr), timeout)
    elif kind in ("tcp", "ssl"):
        host, _, port = addr.rpartition(":")
        host = host.strip("[]")
        ctx = tls.client_context() if kind == "ssl" else None
        if kind == "ssl" and ctx is None:
            raise OSError(errno.ENOPROTOOPT, os.strerror(errno.ENOPROTOOPT))
        s = socket.create_connection((host, int(port)), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ctx is not None:
            try:
                s = ctx.wrap_socket(s, server_hostname=host)
            except ssl.SSLError as e:
                s.close()
                tls.log.warning("SSL_connect: %s", tls.failure_text(e))
                raise OSError(errno.EPROTO, os.strerror(errno.EPROTO)) from None
            try:
                tls.after_handshake(s, ctx)
            except OSError:
                s.close()
                raise
    else:
        raise RpcError(f"{remote}: unsupported remote (expected unix:, tcp: or ssl:)")
    s.settimeout(None)
    return s


class Client:
    """A connection to `remote`; `sock`: one already connected to it."""

    def __init__(self, remote: str, timeout: float | None = None,
                 sock: socket.socket | None = None) -> None:
        self.remote = remote
        if sock is None:
            try:
                sock = connect(remote, timeout)
            except OSError as e:
                raise RpcError(f"{remote}: connection failed ({e.strerror or e})") from None
        self.sock = sock
        self._inbuf = memoryview(bytearray(1 << 20))  # reused: see `read`
        self.timeout = timeout
        self.stream = JsonStream()
        self.next_id = 0
        self.replies: dict[Any, dict[str, Any]] = {}
        self.notes: deque[dict[str, Any]] = deque()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, method: str, params: list[Any]) -> int:
        self.next_id += 1
        self.sock.sendall(orjson.dumps({"method": method, "params": params,
                                        "id": self.next_id}))
        return self.next_id

    def wait(self, msg_id: Any) -> dict[str, Any]:
        """The reply message (result or error) for `msg_id`."""
        while msg_id not in self.replies:
            self._read()
        return self.replies.pop(msg_id)

    def call(self, method: str, params: list[Any]) -> Any:
        msg = self.wait(self.send(method, params))
        if msg.get("error") is not None:
            raise RpcError(f"{method} failed: {orjson.dumps(msg['error']).decode()}",
                           msg["error"])
        return msg.get("result")

    def next_notification(self) -> dict[str, Any]:
        while not self.notes:
            self._read()
        return self.notes.popleft()

    def read(self) -> list[dict[str, Any]]:
        """Read once (blocking until the server sends something, within the timeout):
        its `echo` requests are answered, and its other messages returned in the order
        they came, not queued."""
        self.sock.settimeout(self.timeout)
        try:
            # (into a buffer kept for every read: a `recv` of 1 MiB allocates 1 MiB
            # each time, which costs more than reading a small reply)
            n = self.sock.recv_into(self._inbuf)
        except TimeoutError:
            raise RpcError(f"{self.remote}: timed out waiting for the server") from None
        except OSError as e:
            raise RpcError(f"{self.remote}: receive failed ({e.strerror})") from None
        if not n:
            raise RpcError(f"{self.remote}: receive failed (End of file)")
        out = []
        for msg in self.stream.feed(bytes(self._inbuf[:n])):
            if classify(msg) == REQUEST and msg["method"] == "echo":
                self.sock.sendall(orjson.dumps(reply(msg["params"], msg["id"])))
            else:
                out.append(msg)
        return out

    def _read(self) -> None:
        """Read once, queueing replies (by id) and notifications."""
        for msg in self.read():
            kind = classify(msg)
            if kind == NOTIFY:
                self.notes.append(msg)
            elif kind in (REPLY, ERROR):
                self.replies[msg.get("id")] = msg
