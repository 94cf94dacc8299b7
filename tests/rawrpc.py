"""A raw JSON-RPC client for tests that look at the exact messages a server sends."""

from __future__ import annotations

import json
import socket
import time
from typing import Any


class Rpc:
    """A raw JSON-RPC client: requests, and whatever the server sends, read by hand (a
    test can see that nothing has come). `target`: a TCP port on 127.0.0.1, or
    "unix:PATH"."""

    def __init__(self, target: int | str) -> None:
        if isinstance(target, int):
            self.sock = socket.create_connection(("127.0.0.1", target), timeout=10)
        else:
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.settimeout(10)
            self.sock.connect(target.removeprefix("unix:"))
        self.buf = ""
        self.n = 0
        self.eof = False  # the server closed the connection

    def send(self, msg: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(msg).encode())

    def receive(self, timeout: float = 10) -> dict[str, Any] | None:
        """The next message, None if none comes within `timeout` (or the server closed)."""
        deadline = time.monotonic() + timeout
        decoder = json.JSONDecoder()
        while True:
            self.buf = self.buf.lstrip()
            if self.buf:
                try:
                    msg, end = decoder.raw_decode(self.buf)
                    self.buf = self.buf[end:]
                    return dict(msg)
                except ValueError:
                    pass
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return None
            if not data:
                self.eof = True
                return None
            self.buf += data.decode()

    def call(self, method: str, params: Any) -> dict[str, Any]:
        """The reply (or error) to one request; notifications on the way are dropped."""
        self.n += 1
        self.send({"method": method, "params": params, "id": self.n})
        while True:
            msg = self.receive()
            assert msg is not None, f"no reply to {method}"
            if msg.get("method") == "echo":
                self.send({"result": msg["params"], "error": None, "id": msg["id"]})
            elif msg.get("id") == self.n:
                return msg

    def close(self) -> None:
        self.sock.close()
