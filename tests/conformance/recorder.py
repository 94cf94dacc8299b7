"""A recording proxy: a unix socket in front of a real ovsdb-server's unix socket that
passes every byte through unchanged and records each connection's JSON-RPC messages in
both directions, in the order the proxy saw them.

Rules kept here:
- The proxy never alters, delays on purpose, or reorders traffic: bytes read from one
  side are written to the other before anything else is read, so the clients see the
  real server as it is.
- One thread runs every connection (a selector loop), so the record is a single total
  order: `seq` numbers every message across connections, `t` is the monotonic time at
  which its last byte arrived.
- Messages are split and parsed as the harness parses them (`Framer`, the standard
  library's parser); bytes that are not JSON stop the recording of that direction of
  that connection (it is still relayed) and are noted as such.
- Connections are numbered in the order the proxy accepted them; a close by either side
  (or by the proxy itself, `drop()`, to make a client reconnect) is recorded as an event
  of that connection.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from conformance_harness import Framer


@dataclass
class Event:
    seq: int
    t: float
    conn: int  # 1, 2, ... in order of acceptance
    dir: str  # "c2s" (client to server), "s2c", or "close" (msg: who closed)
    msg: Any

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "t": round(self.t, 6), "conn": self.conn, "dir": self.dir,
                "msg": self.msg}


@dataclass
class _Pipe:
    conn: int
    client: socket.socket
    server: socket.socket
    framers: dict[str, Framer] = field(default_factory=lambda: {"c2s": Framer(),
                                                                "s2c": Framer()})
    broken: set[str] = field(default_factory=set)
    open: bool = True
    unanswered: set[str] = field(default_factory=set)  # ids of the client's requests


class Recorder:
    """`Recorder(listen_path, server_path).start()`; clients connect to `listen_path`;
    `events` grows as they talk; `stop()` closes everything."""

    def __init__(self, listen_path: str, server_path: str, label: str = "") -> None:
        self.listen_path = listen_path
        self.server_path = server_path
        self.label = label
        self.events: list[Event] = []
        self.n_conns = 0
        self._lock = threading.Lock()
        self._sel = selectors.DefaultSelector()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pipes: list[_Pipe] = []
        self._t0 = time.monotonic()
        self._listener: socket.socket | None = None
        # (pipe, deadline): closed by the loop thread once idle or at the deadline
        self._pending_drops: list[tuple[_Pipe, float]] = []

    def start(self) -> Recorder:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.listen_path)
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(self.listen_path)
        ls.listen(64)
        ls.setblocking(False)
        self._listener = ls
        self._sel.register(ls, selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._loop, name=f"recorder {self.label}",
                                        daemon=True)
        self._thread.start()
        return self

    @property
    def remote(self) -> str:
        return f"unix:{self.listen_path}"

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for p in self._pipes:
            self._close(p, None)
        if self._listener is not None:
            self._listener.close()
        self._sel.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.listen_path)

    def drop(self, conn: int, grace: float = 2.0) -> None:
        """Close connection `conn` on both sides, as a network failure would (recorded
        as closed by the proxy); the client may reconnect. The cut waits (up to `grace`
        seconds) until the client's requests are answered: a request cut in flight may
        or may not have been executed, which a replay could not know."""
        with self._lock:
            pipes = [p for p in self._pipes if p.conn == conn]
        deadline = time.monotonic() + grace
        self._pending_drops.extend((p, deadline) for p in pipes)

    def open_connections(self) -> list[int]:
        with self._lock:
            return [p.conn for p in self._pipes if p.open]

    def snapshot(self) -> list[Event]:
        with self._lock:
            return list(self.events)

    # -- the loop ----------------------------------------------------------------------

    def _record(self, conn: int, direction: str, msg: Any) -> None:
        with self._lock:
            self.events.append(Event(len(self.events) + 1, time.monotonic() - self._t0,
                                     conn, direction, msg))

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            for item in list(self._pending_drops):
                pipe, deadline = item
                if not pipe.unanswered or now > deadline:
                    self._pending_drops.remove(item)
                    self._close(pipe, "proxy")
            for key, _ in self._sel.select(timeout=0.05):
                if key.data is None:
                    self._accept()
                else:
                    pipe, direction = key.data
                    self._relay(pipe, direction)

    def _accept(self) -> None:
        assert self._listener is not None
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.connect(self.server_path)
        except OSError:
            client.close()
            server.close()
            return
        self.n_conns += 1
        pipe = _Pipe(self.n_conns, client, server)
        with self._lock:
            self._pipes.append(pipe)
        for s in (client, server):
            s.setblocking(True)
        self._sel.register(client, selectors.EVENT_READ, (pipe, "c2s"))
        self._sel.register(server, selectors.EVENT_READ, (pipe, "s2c"))

    def _relay(self, pipe: _Pipe, direction: str) -> None:
        src, dst = ((pipe.client, pipe.server) if direction == "c2s"
                    else (pipe.server, pipe.client))
        try:
            data = src.recv(1 << 20)
        except OSError:
            data = b""
        if not data:
            self._close(pipe, "client" if direction == "c2s" else "server")
            return
        try:
            dst.sendall(data)
        except OSError:
            self._close(pipe, "server" if direction == "c2s" else "client")
            return
        if direction in pipe.broken:
            return
        try:
            msgs = pipe.framers[direction].feed(data)
        except ValueError:
            pipe.broken.add(direction)
            self._record(pipe.conn, direction, {"__not_json__": True})
            return
        for m in msgs:
            if isinstance(m, dict) and m.get("id") is not None:
                key = json.dumps(m["id"], sort_keys=True)
                if direction == "c2s" and "method" in m:
                    pipe.unanswered.add(key)
                elif direction == "s2c" and "method" not in m:
                    pipe.unanswered.discard(key)
            self._record(pipe.conn, direction, m)

    def _close(self, pipe: _Pipe, who: str | None) -> None:
        if not pipe.open:
            return
        pipe.open = False
        for s in (pipe.client, pipe.server):
            with contextlib.suppress(KeyError, ValueError):
                self._sel.unregister(s)
            with contextlib.suppress(OSError):
                s.close()
        if who is not None:
            self._record(pipe.conn, "close", who)
