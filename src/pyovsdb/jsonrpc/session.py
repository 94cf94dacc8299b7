"""The client side of a JSON-RPC connection under asyncio: requests answered through
futures, notifications handed to a callback, liveness probes, and table-updates
streamed row by row.

Rules kept here:
- `request()` returns the reply's result or raises `RpcError` carrying the error value;
  requests may be pipelined, replies are matched by id. A request's `on_reply` runs as
  its reply is framed, before any later message is handled, so a monitor reply can be
  applied before the updates that follow it.
- Notifications are delivered to `on_notify` in arrival order, on the loop's thread,
  before any later reply is resolved: an update the server sent before a transaction's
  reply is always applied before the awaiting code resumes.
- When the connection closes, every pending request fails with `ConnectionLost`.
- `connect()` understands `unix:PATH` (a relative PATH is in the run directory, as
  for the real tools: `client.unix_path`), `tcp:IP:PORT` and `ssl:IP:PORT` (with the
  process's client PKI, `tls.set_client_pki`), for any `Connection` factory.
- Streaming (`ClientConnection` only): a request may name a `RowSink`; the table-updates
  in its reply are then not built as one JSON tree but handed to the sink one row at a
  time, as the bytes arrive, and the bytes of rows already handed over are dropped. The
  same holds for update notifications if `notify_sink` gives a sink. So a client's
  memory peak for a large monitor reply is its replica, not the reply's text plus its
  parsed tree plus the replica. Where the table-updates sit is fixed by the protocol
  (the sink says which element of the result or params array holds them); a message
  whose "result"/"params" arrives before its "id"/"method" (no server writes that
  order) is parsed whole and delivered as is, so consumers accept both forms.
- Framing costs O(n) in the bytes received: every byte is scanned once, except the
  inside of one row (or other small value) cut by the end of a read, rescanned once
  per read that ends inside it, and a message of at most `WHOLE_AT_MOST` bytes cut by
  the end of a read, parsed again whole on each read until it ends (a few reads).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import re
import ssl
from collections.abc import Callable, Generator
from typing import Any, Protocol

import orjson

from ..util import batch
from ..util.unixsock import aconnect_unix
from . import tls
from .client import unix_path
from .connection import Connection
from .message import ERROR, NOTIFY, REPLY, REQUEST, notification
from .stream import FramingError

log = logging.getLogger("jsonrpc")


class RpcError(Exception):
    def __init__(self, method: str, error: Any) -> None:
        super().__init__(f"{method}: {error!r}")
        self.method = method
        self.error = error


class ConnectionLost(Exception):
    pass


class RowSink(Protocol):
    """Receives the rows of one table-updates object as they are framed.

    `index` is the position of the table-updates in the result/params array, or None
    if the result itself is the table-updates object. `start(header)` gets the array's
    elements before it and returns False to have the message parsed normally instead.
    The framed message holds the sink itself in place of the table-updates."""

    index: int | None

    def start(self, header: list[Any]) -> bool: ...

    def row(self, table: str, uuid: str, update: Any) -> None: ...

    # Optional: `add_rows(table, {uuid: update, ...})`, several rows of a table at once.


# -- framing -------------------------------------------------------------------------------

_WS = re.compile(rb"[ \t\r\n]*+")
_STR = rb'"(?:[^"\\]++|\\.)*+"'
_PLAIN = rb'[^"\[\]{}]++'
_STRING = re.compile(_STR)
_STR_REST = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)
_SCALAR = re.compile(rb"[^,:\]}\s\[{\"]++")


def _nested(depth: int) -> bytes:
    run = rb"(?:" + _PLAIN + rb"|" + _STR + rb")*+"
    for _ in range(depth - 1):
        run = rb"(?:" + _PLAIN + rb"|" + _STR + rb"|[\[{]" + run + rb"[\]}])*+"
    return rb"[\[{]" + run + rb"[\]}]"


# A whole container nested up to 7 deep (a row update: {"modify": {col: ["map", [[k,
# v]]]}} is 5), in one match of the regular expression engine.
_CONTAINER = re.compile(_nested(7), re.DOTALL)
# One member of a table's rows object: its key, its value (a container), what follows.
_ROW = re.compile(rb'[ \t\r\n]*+(' + _STR + rb')[ \t\r\n]*+:[ \t\r\n]*+('
                  + _nested(7) + rb')[ \t\r\n]*+([,}])', re.DOTALL)
_SKIP_RUN = re.compile(rb"(?:" + _PLAIN + rb"|" + _STR + rb")*+", re.DOTALL)

_OPEN = frozenset(b"[{")
_UPDATE_METHODS = ("update", "update2", "update3")

_More = Generator[None, None, Any]


# A message cut by the end of a read is kept and parsed whole when it ends, while it
# is no longer than this (each read tries it again: a few reads of up to 256 KiB, a
# few milliseconds at most, where framing it piece by piece costs tens); a longer one
# is framed as it comes, its rows streamed (`RowSink`).
WHOLE_AT_MOST = 1 << 20


class Framer:
    """Turns the bytes a server sends into messages (see the module rules).

    A generator holds the parsing state: it runs until the data runs out, then waits
    for `feed` to append more. Positions in `buf` stay valid across waits, except at
    the points marked safe, where consumed bytes are dropped."""

    def __init__(self, deliver: Callable[[dict[str, Any]], None],
                 reply_sink: Callable[[Any], RowSink | None],
                 notify_sink: Callable[[str], RowSink | None],
                 max_size: int = 1 << 30, max_depth: int = 1000,
                 whole_at_most: int = WHOLE_AT_MOST) -> None:
        self.deliver = deliver
        self.reply_sink = reply_sink
        self.notify_sink = notify_sink
        self.max_size = max_size
        self.max_depth = max_depth
        self.whole_at_most = whole_at_most
        self.buf = bytearray()
        self.pos = 0
        self._idle = False  # waiting for a message to begin, nothing buffered
        self._held: bytes | None = None  # a message begun, kept to be parsed whole
        self._gen = self._messages()
        next(self._gen)

    def feed(self, data: bytes) -> None:
        bound = min(self.whole_at_most, self.max_size)
        if self._held is not None:  # (a message begun in an earlier read, kept whole)
            data, self._held = self._held + data, None
        elif not self._idle:
            self.buf += data
            self._gen.send(None)
            return
        if len(data) <= bound:
            data, cut = self._whole_messages(data)
            if not data:
                return
            if cut:  # (what remains is no longer than what came)
                self._held = data
                return
        self.buf += data
        self._gen.send(None)

    def _whole_messages(self, data: bytes) -> tuple[bytes, bool]:
        """Most reads hold whole small messages: one, or a few back to back (an update
        and the reply after it). Those at the front are parsed by one call each and
        delivered; what remains (a message cut by the end of the read, or anything
        unusual) is returned for the framer, with whether it is a message cut by the
        end of the read (its text so far valid JSON)."""
        while data[:1] == b"{":
            try:
                msg = orjson.loads(data)
                rest = b""
            except orjson.JSONDecodeError as e:
                if e.msg.startswith("unexpected end of data"):
                    return data, True
                # A whole first message with more after it: `pos` (a character index)
                # is where it ended, a byte index in ASCII text.
                if not e.msg.startswith("unexpected content") or not data.isascii():
                    return data, False
                try:
                    msg = orjson.loads(data[:e.pos])
                except orjson.JSONDecodeError:
                    return data, False
                rest = data[e.pos:].lstrip(b" \t\r\n")
            if type(msg) is not dict:
                return data, False
            self.deliver(msg)
            data = rest
        return data, False

    # -- primitives: each waits (yields) until the bytes it needs are there ------------

    def _ws(self) -> Generator[None, None, int]:
        """Skip whitespace; the position of the next byte."""
        while True:
            pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            self.pos = pos
            if pos < len(self.buf):
                return pos
            yield

    def _expect(self, chars: bytes) -> Generator[None, None, int]:
        pos = yield from self._ws()
        c = self.buf[pos]
        if c not in chars:
            raise FramingError(f"invalid JSON: expected one of {chars.decode()!r} at "
                               f"{bytes(self.buf[pos:pos + 20])!r}")
        self.pos = pos + 1
        return c

    def _value_end(self, start: int) -> Generator[None, None, int]:
        """The end of the JSON value beginning at `start` (not consumed)."""
        buf = self.buf
        c = buf[start]
        if c in _OPEN:
            m = _CONTAINER.match(buf, start)
            if m is not None:
                return m.end()
            return (yield from self._container_end(start))
        if c == 0x22:  # '"'
            pos = start + 1
            while True:
                buf = self.buf
                pos = _STR_REST.match(buf, pos).end()  # type: ignore[union-attr]
                if pos < len(buf) and buf[pos] == 0x22:
                    return pos + 1
                if pos - start > self.max_size:
                    raise FramingError(f"message exceeds the size limit of {self.max_size} "
                                       "bytes")
                yield
        while True:  # number, true, false, null: ends at a delimiter
            buf = self.buf
            end = _SCALAR.match(buf, start)
            if end is None:
                raise FramingError("invalid JSON: unexpected character")
            if end.end() < len(buf):
                return end.end()
            yield

    def _container_end(self, start: int) -> Generator[None, None, int]:
        """Depth-counting scan of a container too deep or too long for one match."""
        pos = start + 1
        depth = 1
        while True:
            buf = self.buf
            end = len(buf)
            while pos < end:
                pos = _SKIP_RUN.match(buf, pos).end()  # type: ignore[union-attr]
                if pos >= end:
                    break
                c = buf[pos]
                if c == 0x22:  # a string cut by the end of the data
                    m = _STRING.match(buf, pos)
                    if m is None:
                        break
                    pos = m.end()
                elif c == 0x5B or c == 0x7B:
                    m = _CONTAINER.match(buf, pos)
                    if m is not None:
                        pos = m.end()
                        continue
                    depth += 1
                    if depth > self.max_depth:
                        raise FramingError(f"JSON nested more than {self.max_depth} deep")
                    pos += 1
                else:
                    depth -= 1
                    pos += 1
                    if depth == 0:
                        return pos
            if pos - start > self.max_size:
                raise FramingError(f"message exceeds the size limit of {self.max_size} bytes")
            yield

    def _value(self) -> Generator[None, None, Any]:
        start = yield from self._ws()
        end = yield from self._value_end(start)
        self.pos = end
        return _loads(self.buf, start, end)

    def _string(self) -> Generator[None, None, str]:
        start = yield from self._ws()
        if self.buf[start] != 0x22:
            raise FramingError("invalid JSON: expected a member name")
        value = yield from self._value()
        return value

    def _compact(self) -> None:
        """A safe point: drop the bytes already consumed, if there are many (all but the
        last, which `_rows` may overwrite)."""
        if self.pos > 1 << 20:
            del self.buf[:self.pos - 1]
            self.pos = 1

    def _compacted(self) -> int:
        """`_compact`; how far positions moved back."""
        before = self.pos
        self._compact()
        return before - self.pos

    # -- structure -------------------------------------------------------------------

    def _messages(self) -> Generator[None, None, None]:
        while True:
            pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if pos >= len(self.buf):
                self.buf.clear()
                self.pos = 0
                self._idle = True
                yield
                self._idle = False
                continue
            self.pos = pos
            self._compact()
            pos = self.pos
            c = self.buf[pos]
            if c == 0x7B:
                msg = yield from self._message()
            elif c == 0x5B:
                msg = yield from self._value()
            else:
                raise FramingError("JSON-RPC message must be an object or array")
            self.deliver(msg)

    def _message(self) -> Generator[None, None, dict[str, Any]]:
        self.pos += 1  # '{'
        msg: dict[str, Any] = {}
        pos = yield from self._ws()
        if self.buf[pos] == 0x7D:
            self.pos = pos + 1
            return msg
        while True:
            key = yield from self._string()
            yield from self._expect(b":")
            sink = None
            if key == "result" and "id" in msg:
                sink = self.reply_sink(msg["id"])
            elif key == "params" and msg.get("method") in _UPDATE_METHODS:
                sink = self.notify_sink(msg["method"])
            if sink is not None:
                msg[key] = yield from self._payload(sink)
            else:
                msg[key] = yield from self._value()
            if (yield from self._expect(b",}")) == 0x7D:
                return msg

    def _payload(self, sink: RowSink) -> Generator[None, None, Any]:
        pos = yield from self._ws()
        c = self.buf[pos]
        if c == 0x7B and sink.index is None:
            if not sink.start([]):
                return (yield from self._value())
            yield from self._table_updates(sink)
            return sink
        if c != 0x5B or sink.index is None:
            return (yield from self._value())
        self.pos = pos + 1
        elems: list[Any] = []
        pos = yield from self._ws()
        if self.buf[pos] == 0x5D:
            self.pos = pos + 1
            return elems
        while True:
            pos = yield from self._ws()
            if (len(elems) == sink.index and self.buf[pos] == 0x7B
                    and sink.start(list(elems))):
                yield from self._table_updates(sink)
                elems.append(sink)
            else:
                elems.append((yield from self._value()))
            if (yield from self._expect(b",]")) == 0x5D:
                return elems

    def _table_updates(self, sink: RowSink) -> _More:
        yield from self._expect(b"{")
        pos = yield from self._ws()
        if self.buf[pos] == 0x7D:
            self.pos = pos + 1
            return
        while True:
            table = yield from self._string()
            yield from self._expect(b":")
            yield from self._rows(sink, table)
            if (yield from self._expect(b",}")) == 0x7D:
                return

    def _rows(self, sink: RowSink, table: str) -> _More:
        yield from self._expect(b"{")
        pos = yield from self._ws()
        if self.buf[pos] == 0x7D:
            self.pos = pos + 1
            return
        row = sink.row
        many = getattr(sink, "add_rows", None)
        match = _ROW.match
        # After a bulk parse failed, rows are taken one by one up to the boundary it
        # tried (often in the next table's rows: the current table ends before it), not
        # tried again at every row: each failure costs a parse, and an error holding
        # the text, of everything up to it.
        skip = 0
        while True:
            buf = self.buf
            pos = self.pos
            b = _last_boundary(buf, pos) if pos >= skip else -1
            if b > 0:
                # Many whole rows: parse them with one call, in place, as the members
                # of an object: the byte before them (consumed) becomes '{', the comma
                # after them '}'. If the boundary was a lookalike inside a string, the
                # text is not valid JSON and the rows are taken one by one below.
                saved = buf[pos - 1]
                buf[pos - 1] = 0x7B
                buf[b] = 0x7D
                try:
                    rows = orjson.loads(memoryview(buf)[pos - 1:b + 1])
                except orjson.JSONDecodeError:
                    rows = None
                buf[b] = 0x2C
                buf[pos - 1] = saved
                if type(rows) is dict:
                    if many is not None:
                        many(table, rows)
                    else:
                        for key, update in rows.items():
                            row(table, key, update)
                    self.pos = b + 1
                    self._compact()
                    continue
                skip = b + 1
            m = match(buf, pos)
            if m is not None:  # the usual case: a whole row in the buffer
                k0, k1 = m.span(1)
                key = buf[k0 + 1:k1 - 1].decode() if buf.find(b"\\", k0, k1) < 0 \
                    else _loads(buf, k0, k1)
                v0, v1 = m.span(2)
                row(table, key, _loads(buf, v0, v1))
                self.pos = m.end()
                if buf[m.end() - 1] == 0x7D:
                    return
                skip -= self._compacted()
                continue
            # A row cut by the end of the data, or written unusually: step by step.
            key = yield from self._string()
            yield from self._expect(b":")
            row(table, key, (yield from self._value()))
            if (yield from self._expect(b",}")) == 0x7D:
                return
            skip -= self._compacted()


_UUID_KEY = re.compile(rb',[ \t\r\n]*+"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
                       rb'[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"[ \t\r\n]*+:[ \t\r\n]*+\{')


def _last_boundary(buf: bytearray, pos: int) -> int:
    """The position of the last comma after `pos` that looks like the one between two
    members of a rows object (`,"<uuid>":{`), or -1. Rows are keyed by uuids and their
    updates are objects, so nothing else looks like that outside strings."""
    end = len(buf)
    while True:
        k = buf.rfind(b'":{', pos, end)
        if k < 0:
            return -1
        start = buf.rfind(b",", pos, k)
        if start >= 0 and k - start < 64:
            m = _UUID_KEY.match(buf, start)
            if m is not None:
                return start
        end = k


def _loads(buf: bytearray, start: int, end: int) -> Any:
    try:
        return orjson.loads(memoryview(buf)[start:end])
    except orjson.JSONDecodeError as e:
        raise FramingError(f"invalid JSON: {e.msg}") from None


# -- the connection ------------------------------------------------------------------------


class _Pending:
    __slots__ = ("future", "method", "on_reply", "sink")

    def __init__(self, method: str, future: asyncio.Future[Any], sink: RowSink | None,
                 on_reply: Callable[[Any], Any] | None) -> None:
        self.method = method
        self.future = future
        self.sink = sink
        self.on_reply = on_reply


class ClientConnection(Connection):
    def __init__(self, name: str, on_notify: Callable[[str, list[Any]], None] | None = None,
                 probe_interval: float = 0.0) -> None:
        super().__init__(name, probe_interval=probe_interval)
        self.on_notify = on_notify
        # Sinks for the rows of update notifications, by method (see `RowSink`).
        self.notify_sink: Callable[[str], RowSink | None] = _no_sink
        self.pending: dict[int, _Pending] = {}
        self.next_id = 0
        self.last_request_size = 0
        self.lost = asyncio.get_event_loop().create_future()
        self.framer = Framer(self._framed, self._reply_sink,
                             lambda method: self.notify_sink(method))

    # -- input -------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self._received = True
        self.bytes_in += len(data)
        batch.begin()
        try:
            self.framer.feed(data)
        except FramingError as e:
            log.warning("%s: input error: %s, closing connection", self.name, e)
            self.close()
        except Exception:
            log.exception("%s: processing input failed, closing connection", self.name)
            self.close()
        finally:
            batch.end()

    def _framed(self, msg: Any) -> None:
        if not self.closed:
            self._handle([msg])

    def _reply_sink(self, msg_id: Any) -> RowSink | None:
        entry = self.pending.get(msg_id) if type(msg_id) is int else None
        return entry.sink if entry is not None else None

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
        fut = entry.future
        if fut.done():
            return
        if kind == REPLY:
            result = msg["result"]
            if entry.on_reply is not None:
                try:
                    result = entry.on_reply(result)
                except Exception as e:
                    fut.set_exception(e)
                    return
            fut.set_result(result)
        elif kind == ERROR:
            fut.set_exception(RpcError(entry.method, msg["error"]))

    # -- output ------------------------------------------------------------------------

    def send_request(self, method: str, params: list[Any], sink: RowSink | None = None,
                     on_reply: Callable[[Any], Any] | None = None) -> asyncio.Future[Any]:
        """Send a request; the future gets its result. `on_reply(result)`, if given,
        runs as the reply is framed, before any later message is handled, and its
        return value becomes the future's result."""
        if self.closed:
            raise ConnectionLost(self.name)
        self.next_id += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = _Pending(method, fut, sink, on_reply)
        data = orjson.dumps({"method": method, "params": params, "id": self.next_id})
        self.last_request_size = len(data)
        self.send_bytes(data)
        return fut

    async def request(self, method: str, params: list[Any], sink: RowSink | None = None,
                      on_reply: Callable[[Any], Any] | None = None) -> Any:
        return await self.send_request(method, params, sink, on_reply)

    def notify(self, method: str, params: list[Any]) -> None:
        self.send(notification(method, params))

    def on_close(self) -> None:
        pending, self.pending = self.pending, {}
        for entry in pending.values():
            if not entry.future.done():
                entry.future.set_exception(ConnectionLost(
                    f"{self.name}: connection closed during {entry.method}"))
        if not self.lost.done():
            self.lost.set_result(None)


def _no_sink(method: str) -> RowSink | None:
    return None


async def connect(remote: str, factory: Callable[[], Any], timeout: float | None = None,
                  ssl_context: ssl.SSLContext | None = None) -> Any:
    """Open `remote` with the protocol `factory` makes; returns that protocol. An
    `ssl:` remote uses `ssl_context`, by default the process's client PKI."""
    loop = asyncio.get_running_loop()
    kind, _, addr = remote.partition(":")
    if kind == "unix":
        async def open_unix() -> Any:
            sock = await aconnect_unix(unix_path(addr))  # a long path too
            return await loop.create_unix_connection(factory, sock=sock)

        coro = open_unix()
    elif kind == "tcp":
        host, _, port = addr.rpartition(":")
        coro = loop.create_connection(factory, host.strip("[]"), int(port))
    elif kind == "ssl":
        ctx = ssl_context or tls.client_context()
        if ctx is None:
            raise OSError(errno.ENOPROTOOPT, os.strerror(errno.ENOPROTOOPT))
        host, port_n = tls.ssl_address(remote)
        coro = loop.create_connection(factory, host, port_n, ssl=ctx, server_hostname=host)
    else:
        raise ValueError(f"{remote}: unsupported remote (expected unix:, tcp: or ssl:)")
    transport, conn = await asyncio.wait_for(coro, timeout)  # (TCP_NODELAY set)
    if kind == "ssl":
        try:
            tls.after_handshake(transport.get_extra_info("ssl_object"), ctx)
        except OSError:
            transport.close()
            raise
    return conn
