"""A JSON-RPC connection over an asyncio transport: framing in, serialized messages out,
liveness probes, and a bound on unsent output.

Rules kept here:
- Incoming bytes go through one `JsonStream`; each complete message is handed to
  `on_message` in order. A framing or protocol error closes this connection only; the
  messages that were complete before bad input are still handled first, as the real
  server does.
- Output is written at the end of the burst of input being handled (`util.batch`), in
  one write; if the bytes queued in the transport exceed `max_backlog`, the peer is not
  reading, and the connection is closed rather than letting memory grow without limit.
  Output the owner bounds by other means (sent as not `counted`: the server's held
  monitor updates, at most one per monitor at a time) is allowed on top, until the
  queue has drained.
- The transport's flow control is passed on: `on_backlog(True)` when it starts queueing
  output it cannot write (above `backlog_threshold` bytes), `on_backlog(False)` once
  that is written. A subclass may stop producing output meanwhile (the server holds
  monitor updates back).
- Closing is graceful (what was sent still goes out) but bounded: a peer that has not
  read it all within `CLOSE_GRACE` seconds is cut off, so a client that misbehaves and
  then never reads cannot keep its socket and its unsent output alive forever.
- Inactivity probe (as the real `jsonrpc_session`): after `probe_interval` seconds
  without receiving anything, send an `echo` request; if another interval passes in
  silence, close. Output that was queued and got written counts as activity, as there.
  Zero disables probes (the real server does not probe unix sockets).
- Echo requests from the peer are answered here, whoever owns the connection.
- Input is read into one buffer per thread, reused for every read of every connection
  (asyncio's buffered protocol; the bytes read are copied out before the next read): a
  plain protocol gets a fresh 256 KiB bytes object per read, whose allocation costs
  more than the read of a small request itself, and a buffer per connection would
  hold 256 KiB for each of a server's thousand sessions.
- Every TCP stream has `TCP_NODELAY`, whichever side opened it (as the real server's
  streams): a message is written whole, so Nagle's algorithm can only delay it, for a
  delayed ACK's 40 ms when the peer has not yet answered the previous segment.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

from ..util import batch
from .message import ERROR, REPLY, REQUEST, ProtocolError, classify, reply
from .stream import FramingError, JsonStream, dumps

log = logging.getLogger("jsonrpc")

DEFAULT_MAX_BACKLOG = 512 * 1024 * 1024
READ_SIZE = 256 * 1024  # as asyncio's own reads
_reads = threading.local()  # .buffer: this thread's read buffer
CLOSE_GRACE = 2.0


def set_nodelay(transport: asyncio.BaseTransport) -> None:
    """TCP_NODELAY on the transport's socket, if it is a TCP one. (asyncio sets it only
    on sockets created with proto IPPROTO_TCP, which a listening socket made by hand and
    then accepted from is not.)"""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Connection(asyncio.BufferedProtocol):
    """Subclasses implement `on_message(kind, msg)` and optionally `on_close()`."""

    def __init__(
        self,
        name: str = "",
        *,
        probe_interval: float = 0.0,
        max_backlog: int = DEFAULT_MAX_BACKLOG,
        max_message: int | None = None,
        backlog_threshold: int | None = None,
    ) -> None:
        self.name = name
        self.transport: asyncio.Transport | None = None
        self.stream = JsonStream() if max_message is None else JsonStream(max_size=max_message)
        self.probe_interval = probe_interval
        self.max_backlog = max_backlog
        self.backlog_threshold = backlog_threshold  # None: asyncio's default limits
        self.backlogged = False
        self.closed = False
        self._received = False
        self._probe_backlog = 0  # the unwritten output at the last probe
        self._probe_sent = False
        self._probe_handle: asyncio.TimerHandle | None = None
        self.on_closed: list[Callable[[], None]] = []
        self.bytes_in = 0
        self.bytes_out = 0
        self._out: list[bytes] = []
        self._allowance = 0  # output not counted against max_backlog, until drained

    # -- asyncio.BufferedProtocol --------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        set_nodelay(transport)
        t = self.transport
        if self.backlog_threshold is not None and t is not None:
            # (asyncio's TLS transport pauses its protocol at a backlog of at least its
            # high-water mark, the plain one above it: 0 would pause a TLS stream for
            # good, so it gets 1, the same rule)
            high = self.backlog_threshold
            if high == 0 and transport.get_extra_info("sslcontext") is not None:
                high = 1
            t.set_write_buffer_limits(high=high)
        if not self.name:
            peer = transport.get_extra_info("peername")
            self.name = str(peer) if peer else "unix"
        if self.probe_interval > 0:
            self._schedule_probe()

    def get_buffer(self, sizehint: int) -> memoryview:
        try:
            return _reads.buffer
        except AttributeError:
            _reads.buffer = memoryview(bytearray(READ_SIZE))
            return _reads.buffer

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(bytes(_reads.buffer[:nbytes]))

    def data_received(self, data: bytes) -> None:
        self._received = True
        self.bytes_in += len(data)
        error: FramingError | None = None
        try:
            msgs = self.stream.feed(data)
        except FramingError as e:
            error, msgs = e, e.messages
        if msgs:
            batch.begin()
            try:
                self._handle(msgs)
            finally:
                batch.end()
        if error is not None and not self.closed:
            log.warning("%s: input error: %s, closing connection", self.name, error)
            self.close()

    def _handle(self, msgs: list[Any]) -> None:
        for msg in msgs:
            if self.closed:
                return
            try:
                kind = classify(msg)
            except ProtocolError as e:
                log.warning("%s: received bad JSON-RPC message: %s", self.name, e)
                log.warning("%s: connection dropped (Protocol error)", self.name)
                self.close()
                return
            if kind == REQUEST and msg["method"] == "echo":
                self.send(reply(msg["params"], msg["id"]))
                continue
            if kind in (REPLY, ERROR) and msg.get("id") == "echo":
                continue
            self.on_message(kind, msg)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed()

    def pause_writing(self) -> None:
        self.backlogged = True
        if not self.closed:
            self.on_backlog(True)

    def resume_writing(self) -> None:
        self.backlogged = False
        if self.backlog_threshold == 0:
            self._allowance = 0  # (else some may be left)
        self._received = True  # queued output got written: the peer is alive
        if not self.closed:
            self.on_backlog(False)

    def on_backlog(self, backlogged: bool) -> None:
        pass

    # -- API -------------------------------------------------------------------------

    def on_message(self, kind: str, msg: dict[str, Any]) -> None:
        raise NotImplementedError

    def send(self, msg: Any, counted: bool = True) -> None:
        self.send_bytes(dumps(msg), counted)

    def send_bytes(self, data: bytes, counted: bool = True) -> None:
        """Write `data` (at the end of the current batch). Output that is not `counted`
        is allowed on top of `max_backlog` (its owner bounds it otherwise) until the
        backlog has drained."""
        t = self.transport
        if self.closed or t is None:
            return
        self.bytes_out += len(data)
        if not counted:
            self._allowance += len(data)
        if batch.active():
            if not self._out:
                batch.defer_output(self, self._flush)
            self._out.append(data)
            return
        t.write(data)
        self._check_backlog()

    def _flush(self) -> None:
        out, self._out = self._out, []
        t = self.transport
        if self.closed or t is None or not out:
            return
        t.write(out[0] if len(out) == 1 else b"".join(out))
        self._check_backlog()

    def _check_backlog(self) -> None:
        t = self.transport
        assert t is not None
        size = t.get_write_buffer_size()
        if not size:
            self._allowance = 0
        elif size > self.max_backlog + self._allowance:
            log.warning(
                "%s: backlog of %d bytes exceeds the limit of %d, closing connection",
                self.name, size, self.max_backlog,
            )
            self.close(abort=True)

    def backlog(self) -> int:
        t = self.transport
        return t.get_write_buffer_size() if t is not None and not self.closed else 0

    def close(self, abort: bool = False) -> None:
        """Close; unless aborting, what was sent before (an error reply, say) still goes
        out first. Output queued in the current batch is flushed with the rest of the
        batch, so the records it depends on are still written before it."""
        if self.closed:
            return
        t = self.transport
        if t is not None:
            if abort:
                t.abort()
            else:
                if self._out and batch.active():
                    batch.flush()
                t.close()
                if t.get_write_buffer_size():
                    asyncio.get_running_loop().call_later(CLOSE_GRACE, t.abort)
        self._closed()

    def _closed(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._probe_handle is not None:
            self._probe_handle.cancel()
        callbacks, self.on_closed = self.on_closed, []
        for cb in callbacks:
            cb()
        self.on_close()

    def on_close(self) -> None:
        pass

    # -- inactivity probe --------------------------------------------------------------

    def set_probe_interval(self, interval: float) -> None:
        """A new inactivity probe interval in seconds (0: none), from now on."""
        if interval == self.probe_interval:
            return
        self.probe_interval = interval
        if self._probe_handle is not None:
            self._probe_handle.cancel()
            self._probe_handle = None
        if interval > 0 and self.transport is not None and not self.closed:
            self._schedule_probe()

    def _schedule_probe(self) -> None:
        loop = asyncio.get_running_loop()
        self._probe_handle = loop.call_later(self.probe_interval, self._probe)

    def _probe(self) -> None:
        if self.closed:
            return
        size = self.backlog()
        drained, self._probe_backlog = size < self._probe_backlog, size
        if self._received or drained:
            self._received = False
            self._probe_sent = False
        elif not self._probe_sent:
            self.send({"method": "echo", "params": [], "id": "echo"})
            self._probe_sent = True
        else:
            self.probe_failed()
            return
        self._schedule_probe()

    def probe_failed(self) -> None:
        """No answer to a probe: logged as the real server logs its sessions'."""
        log.warning("%s: no response to inactivity probe after %.3g seconds, "
                    "disconnecting", self.name, 2 * self.probe_interval)
        self.close()

