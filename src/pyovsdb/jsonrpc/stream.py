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
  message above `max_size` bytes, nesting deeper than `max_depth`, invalid JSON)
  raises `FramingError`; the caller closes that connection. Nothing is buffered
  without limit. The error carries the messages completed before the bad input in the
  same feed: the real server answers those before it drops the connection.
- Bytes that are not UTF-8 inside a string are no framing error: the real parser
  keeps them, and the server refuses them only where a column value is parsed (a
  "constraint violation" for that transaction; the session goes on). Such a message
  is parsed a second, slower way (`util.utf8.loads_raw`) into strings that hold each bad
  byte as a lone surrogate (see util/utf8.py), a `\\u` escape of an unpaired trailing
  surrogate becoming its three bytes as in the real parser (an unpaired leading one
  stays an error, as there). `dumps` writes such strings back as the same bytes.
- A message of `LARGE_MESSAGE` bytes or more calls the stream's `on_large` (a server's
  sessions give memory back after it).
- Values the real JSON parser refuses are refused here too, although orjson would take
  them: a NUL character in a string (`\\u0000`) and a number that is not zero but
  below the smallest normal double (strtod's ERANGE). Accepted and stored, they would
  make the database file unreadable by the real tools. Finding them costs one C-speed
  search per message; only a message that may hold one is walked.
- `dumps` writes any value `feed` can return, including one nested deeper than
  orjson's limit of 255 levels (the real server echoes such values) and strings
  holding bytes that are not UTF-8.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

import orjson

from ..util.utf8 import has_escaped_bytes, loads_raw, to_bytes

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
# _SHALLOW[k] consumes containers nested at most k deep: near `max_depth` the scan never
# lets a container deeper than the limit through unseen, so the limit is exact however
# the input is split.
_SHALLOW = [_skip_pattern(k).match for k in range(_INNER_DEPTH)]
# The rest of a string whose opening quote was already seen: stops before the closing
# quote, or at the end of the data (possibly before a lone trailing backslash).
_STR_REST = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)
_WS = re.compile(rb"[ \t\r\n]*+")
# Text that may hold a value the real parser refuses: an escaped NUL, or a number small
# enough to be subnormal (an exponent of -100 or below, or 200 zeros after the point).
# The exponent must end where a number can end, so that UUIDs ("...1e-4128-...") do not
# match. Three searches cost less than one alternation.
_NUL = b"\\u0000"
_ZEROS = b"." + b"0" * 200
_EXPONENT = re.compile(rb"[eE]-\d{3,}+(?![0-9A-Za-z-])")
_DBL_MIN = sys.float_info.min

DEFAULT_MAX_SIZE = 1 << 30
# orjson refuses JSON nested deeper than 1024 levels. The same limit here keeps the fast
# path (orjson alone) and the scan in agreement; the real server's limit is 1000.
ORJSON_MAX_DEPTH = 1024
DEFAULT_MAX_DEPTH = ORJSON_MAX_DEPTH


# A received message at least this large calls the stream's `on_large`.
LARGE_MESSAGE = 1 << 20


class FramingError(Exception):
    """Input that is not a stream of JSON-RPC messages. `messages` are the messages that
    were complete before the bad input, in the same `feed` call."""

    def __init__(self, reason: str, messages: list[Any] | None = None) -> None:
        super().__init__(reason)
        self.messages: list[Any] = messages if messages is not None else []


class JsonStream:
    """Accumulates bytes and yields complete JSON values."""

    __slots__ = ("_buf", "_depth", "_in_string", "_pos", "max_depth", "max_size", "on_large")

    def __init__(self, max_size: int = DEFAULT_MAX_SIZE,
                 max_depth: int = DEFAULT_MAX_DEPTH,
                 on_large: Callable[[int], None] | None = None) -> None:
        self._buf = bytearray()
        self._pos = 0  # bytes of _buf already scanned
        self._depth = 0  # open containers of the current message at _pos
        self._in_string = False
        self.max_size = max_size
        self.max_depth = max_depth
        self.on_large = on_large

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[Any]:
        """Add received bytes; return the messages they complete, in order."""
        buf = self._buf
        if (not buf and data and data[-1] == 0x7D and data[0] == 0x7B
                and len(data) <= self.max_size and self.max_depth >= ORJSON_MAX_DEPTH):
            # Fast path: most reads hold exactly one whole message. A failed attempt
            # costs one pass over bytes that are new, so the total stays O(n). (A read
            # above the size limit takes the scan, which finds where a message ends; so
            # does every read under a depth limit tighter than orjson's own.)
            try:
                msg = orjson.loads(data)
            except orjson.JSONDecodeError:
                pass
            else:
                if _suspect(data, 0, len(data)):
                    _check_values(msg)
                if len(data) >= LARGE_MESSAGE and self.on_large is not None:
                    self.on_large(len(data))
                return [msg]
        buf += data
        out: list[Any] = []
        pos = self._pos
        depth = self._depth
        end = len(buf)
        start = 0  # start of the current message in buf
        skip = _SKIP.match
        max_depth = self.max_depth
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
                room = max_depth - depth
                pos = (skip if room >= _INNER_DEPTH else _SHALLOW[room])(  # type: ignore[union-attr]
                    buf, pos).end()
                if pos >= end:
                    break
                c = buf[pos]
                if c == 0x22:  # a string cut by the end of the data
                    self._in_string = True
                    pos += 1
                elif c == 0x7B or c == 0x5B:
                    depth += 1
                    if depth > max_depth:
                        raise FramingError(f"JSON nested more than {max_depth} deep")
                    pos += 1
                else:
                    depth -= 1
                    pos += 1
                    if depth == 0:
                        if pos - start > self.max_size:
                            raise self._too_big()
                        out.append(_parse(buf, start, pos))
                        if pos - start >= LARGE_MESSAGE and self.on_large is not None:
                            self.on_large(pos - start)
                        start = pos
            if pos - start > self.max_size:
                raise self._too_big()
        except FramingError as e:
            self._reset()
            e.messages = out
            raise
        if start:
            del buf[:start]  # (a bytearray that shrinks by half gives its memory back)
            pos -= start
        self._pos = pos
        self._depth = depth
        return out

    def _too_big(self) -> FramingError:
        return FramingError(f"message exceeds the size limit of {self.max_size} bytes")

    def _reset(self) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._depth = 0
        self._in_string = False


def _parse(buf: bytearray, start: int, end: int) -> Any:
    try:
        msg = orjson.loads(memoryview(buf)[start:end])
    except orjson.JSONDecodeError as e:
        try:
            msg = loads_raw(bytes(memoryview(buf)[start:end]))
        except ValueError:
            raise FramingError(f"invalid JSON: {e.msg}") from None
        _check_values(msg)
        return msg
    if _suspect(buf, start, end):
        _check_values(msg)
    return msg


def _suspect(data: bytes | bytearray, start: int, end: int) -> bool:
    return (data.find(_NUL, start, end) >= 0 or data.find(_ZEROS, start, end) >= 0
            or _EXPONENT.search(data, start, end) is not None)


def _check_values(value: Any) -> None:
    """Refuse what the real parser refuses and orjson does not (see the module rules)."""
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is str:
            if "\0" in v:
                raise FramingError("invalid JSON: null bytes not supported in quoted strings")
        elif t is float:
            if v != 0.0 and -_DBL_MIN < v < _DBL_MIN:
                raise FramingError("invalid JSON: number outside valid range")
        elif t is list:
            stack.extend(v)
        elif t is dict:
            stack.extend(v)  # the member names
            stack.extend(v.values())


def dumps(obj: Any, sort_keys: bool = False) -> bytes:
    """Compact JSON, as orjson writes it, for any value `feed` returns."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except TypeError:
        # orjson stops at 255 levels of nesting; received messages may nest deeper.
        # It also refuses strings with bytes that are not UTF-8.
        return _dumps_deep(obj, sort_keys)


def _dumps_str(s: str) -> bytes:
    """A JSON string as orjson writes it; one holding bytes that are not UTF-8 is
    written with those bytes, as the real server writes it back."""
    if has_escaped_bytes(s):
        return to_bytes(json.dumps(s, ensure_ascii=False))
    return orjson.dumps(s)


def _dumps_deep(obj: Any, sort_keys: bool) -> bytes:
    """The same text as `orjson.dumps`, with an explicit stack instead of recursion.
    Entries of type bytes on the stack are punctuation to copy out (decoded JSON never
    holds bytes)."""
    out: list[bytes] = []
    stack: list[Any] = [obj]
    while stack:
        v = stack.pop()
        if type(v) is bytes:
            out.append(v)
        elif isinstance(v, dict):
            items = sorted(v.items(), key=lambda kv: kv[0]) if sort_keys else list(v.items())
            stack.append(b"}")
            for i in range(len(items) - 1, -1, -1):
                key, value = items[i]
                if type(key) is not str:
                    raise TypeError("Dict key must be str")
                stack.append(value)
                stack.append((b"," if i else b"") + _dumps_str(key) + b":")
            stack.append(b"{")
        elif isinstance(v, (list, tuple)):
            stack.append(b"]")
            for i in range(len(v) - 1, -1, -1):
                stack.append(v[i])
                if i:
                    stack.append(b",")
            stack.append(b"[")
        elif type(v) is int and not -(1 << 63) <= v < 1 << 64:
            out.append(str(v).encode())
        elif type(v) is str:
            out.append(_dumps_str(v))
        else:
            out.append(orjson.dumps(v))
    return b"".join(out)
