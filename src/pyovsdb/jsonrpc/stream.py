"""Framing of a byte stream of concatenated JSON texts (OVSDB's JSON-RPC has no other
delimiter) into messages, sans I/O.

Rules kept here:
- Total cost is O(n) in the bytes received, however a message is split across reads:
  the scanner never re-reads bytes it has already accounted for, except the inside of a
  small, shallow value that was cut by the end of a read.
- The scan runs at C speed: one regular expression consumes, in a single call, runs of
  scalars, complete strings and complete containers nested up to `_INNER_DEPTH` deep
  (an OVSDB atom, set, map or row). Python only steps over the brackets of the outer
  levels and those cut by a read boundary.
- Each complete message is parsed once, by orjson.
- Input that cannot be JSON-RPC (top-level text that is not an object or array, a
  message above `max_size` bytes, nesting deeper than `max_depth`, invalid JSON or
  UTF-8) raises `FramingError`; the caller closes that connection. Nothing is buffered
  without limit.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_INNER_DEPTH = 5
_STR = rb'"(?:[^"\\]++|\\.)*+"'
_PLAIN = rb'[^"\[\]{}]++'


def _skip_pattern(depth: int) -> re.Pattern[bytes]:
    run = rb"(?:" + _PLAIN + rb"|" + _STR + rb")*+"
    for _ in range(depth):
        container = rb"[\[{]" + run + rb"[\]}]"
        run = rb"(?:" + _PLAIN + rb"|" + _STR + rb"|" + container + rb")*+"
    return re.compile(run, re.DOTALL)


_SKIP = _skip_pattern(_INNER_DEPTH)
# The rest of a string whose opening quote was already seen: stops before the closing
# quote, or at the end of the data (possibly before a lone trailing backslash).
_STR_REST = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)
_WS = re.compile(rb"[ \t\r\n]*+")

DEFAULT_MAX_SIZE = 1 << 30


class FramingError(Exception):
    pass


class JsonStream:
    """Accumulates bytes and yields complete JSON values."""

    __slots__ = ("_buf", "_depth", "_in_string", "_pos", "max_depth", "max_size")

    def __init__(self, max_size: int = DEFAULT_MAX_SIZE, max_depth: int = 1000) -> None:
        self._buf = bytearray()
        self._pos = 0  # bytes of _buf already scanned
        self._depth = 0  # open containers of the current message at _pos
        self._in_string = False
        self.max_size = max_size
        self.max_depth = max_depth

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[Any]:
        """Add received bytes; return the messages they complete, in order."""
        buf = self._buf
        if not buf and data and data[-1] == 0x7D and data[0] == 0x7B:
            # Fast path: most reads hold exactly one whole message. A failed attempt
            # costs one pass over bytes that are new, so the total stays O(n).
            if len(data) > self.max_size:
                raise FramingError(f"message exceeds the size limit of {self.max_size} bytes")
            try:
                return [orjson.loads(data)]
            except orjson.JSONDecodeError:
                pass
        buf += data
        out: list[Any] = []
        pos = self._pos
        depth = self._depth
        end = len(buf)
        start = 0  # start of the current message in buf
        skip = _SKIP.match
        try:
            while pos < end:
                if self._in_string:
                    pos = _STR_REST.match(buf, pos).end()  # type: ignore[union-attr]
                    if pos >= end or buf[pos] != 0x22:  # not closed yet
                        break
                    pos += 1
                    self._in_string = False
                    continue
                if depth == 0:
                    pos = _WS.match(buf, pos).end()  # type: ignore[union-attr]
                    if pos >= end:
                        start = pos
                        break
                    c = buf[pos]
                    if c != 0x7B and c != 0x5B:  # '{' '['
                        raise FramingError("JSON-RPC message must be an object or array")
                    start = pos
                    depth = 1
                    pos += 1
                    continue
                pos = skip(buf, pos).end()  # type: ignore[union-attr]
                if pos >= end:
                    break
                c = buf[pos]
                if c == 0x22:  # a string cut by the end of the data
                    self._in_string = True
                    pos += 1
                elif c == 0x7B or c == 0x5B:
                    depth += 1
                    if depth > self.max_depth:
                        raise FramingError(f"JSON nested more than {self.max_depth} deep")
                    pos += 1
                else:
                    depth -= 1
                    pos += 1
                    if depth == 0:
                        out.append(_parse(buf, start, pos))
                        start = pos
            if pos - start > self.max_size:
                raise FramingError(f"message exceeds the size limit of {self.max_size} bytes")
        except FramingError:
            self._reset()
            raise
        if start:
            del buf[:start]
            pos -= start
        self._pos = pos
        self._depth = depth
        return out

    def _reset(self) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._depth = 0
        self._in_string = False


def _parse(buf: bytearray, start: int, end: int) -> Any:
    try:
        return orjson.loads(memoryview(buf)[start:end])
    except orjson.JSONDecodeError as e:
        raise FramingError(f"invalid JSON: {e.msg}") from None


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)
