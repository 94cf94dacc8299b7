"""Strings that hold bytes which are not UTF-8, as the real tools see them.

The real JSON parser keeps a string's bytes as they came (and writes a `\\u` escape of
an unpaired trailing surrogate as its three-byte form); the server refuses such a
string only where a column value is parsed, with lib/unicode.c's `utf8_validate` text.
Here such a string is a Python str in which each byte that is not part of valid UTF-8
is the lone surrogate U+DC80..U+DCFF (Python's "surrogateescape"), so that it can go
through the same code as any string and be written back as the same bytes.

Rules kept here:
- `invalid_sequence(s)` is None for a string the real server takes, else its text,
  `invalid UTF-8 sequence 0x.. 0x..`: the bytes from the start of the first bad
  sequence up to the first unexpected byte, where the end of the string counts as a
  NUL byte, as in C.
- `to_bytes` gives back the bytes a string stands for; a surrogate that is no escaped
  byte is written in its three-byte form.
- `loads_raw(data)` reads a JSON text whose strings may hold such bytes (a message or
  a file record orjson refused) as the real parser does: each bad byte kept as a lone
  surrogate, a `\\u` escape of an unpaired trailing surrogate as its three bytes, an
  unpaired leading one refused.
- `with_raw_strings(value)` gives `value` with each string that holds such bytes as an
  orjson fragment of its JSON text with those bytes, so that orjson writes it as the
  real server would.
- Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_SURROGATE = re.compile("[\ud800-\udfff]")

# The first byte of each valid sequence and the ranges of the bytes that follow it
# (lib/unicode.c's table).
_SEQUENCES: list[tuple[range, tuple[range, ...]]] = [
    (range(0xC2, 0xE0), (range(0x80, 0xC0),)),
    (range(0xE0, 0xE1), (range(0xA0, 0xC0), range(0x80, 0xC0))),
    (range(0xE1, 0xED), (range(0x80, 0xC0), range(0x80, 0xC0))),
    (range(0xED, 0xEE), (range(0x80, 0xA0), range(0x80, 0xC0))),
    (range(0xEE, 0xF0), (range(0x80, 0xC0), range(0x80, 0xC0))),
    (range(0xF0, 0xF1), (range(0x90, 0xC0), range(0x80, 0xC0), range(0x80, 0xC0))),
    (range(0xF1, 0xF4), (range(0x80, 0xC0), range(0x80, 0xC0), range(0x80, 0xC0))),
    (range(0xF4, 0xF5), (range(0x80, 0x90), range(0x80, 0xC0), range(0x80, 0xC0))),
]


def has_escaped_bytes(s: str) -> bool:
    """Whether `s` holds a lone surrogate (a byte that is not UTF-8)."""
    return not s.isascii() and _SURROGATE.search(s) is not None


def to_bytes(s: str) -> bytes:
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass")


def with_raw_strings(value: Any) -> Any:
    t = type(value)
    if t is str:
        if has_escaped_bytes(value):
            return orjson.Fragment(to_bytes(json.dumps(value, ensure_ascii=False)))
        return value
    if t is list:
        return [with_raw_strings(v) for v in value]
    if t is dict:
        return {k: with_raw_strings(v) for k, v in value.items()}
    return value


def invalid_sequence(s: str) -> str | None:
    """lib/unicode.c's `utf8_validate` message for `s`, None if it is valid UTF-8."""
    if not has_escaped_bytes(s):
        return None
    b = to_bytes(s) + b"\0"
    i = 0
    while b[i]:
        c = b[i]
        if c < 0x80:
            i += 1
            continue
        follow = next((f for first, f in _SEQUENCES if c in first), None)
        if follow is None:
            return _message(b[i:i + 1])
        for k, allowed in enumerate(follow, 1):
            if b[i + k] not in allowed:
                return _message(b[i:i + k + 1])
        i += len(follow) + 1
    return None


def _message(seq: bytes) -> str:
    return "invalid UTF-8 sequence" + "".join(f" 0x{c:02x}" for c in seq)


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# In a string: an escaped backslash (skipped), a surrogate pair, or a lone surrogate.
_ESCAPES = re.compile(rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
                      rb"|\\u[dD][c-fC-F][0-9a-fA-F]{2}")


class _Unpaired(Exception):
    pass


def _escape(m: re.Match[bytes]) -> bytes:
    text = m.group(0)
    if len(text) == 2 or len(text) == 12:  # "\\" or a pair
        return text
    code = int(text[2:], 16)
    if code < 0xDC00:  # a leading surrogate with no trailing one: refused
        raise _Unpaired
    return chr(code).encode("utf-8", "surrogatepass")  # the real parser's three bytes


def _parse_int(text: str) -> int | float:
    v = int(text)
    return v if -(1 << 63) <= v < 1 << 64 else float(text)  # as orjson reads it


def _parse_float(text: str) -> float:
    v = float(text)
    if v in (float("inf"), float("-inf")):
        raise ValueError("number outside valid range")
    return v


def _no_constant(text: str) -> Any:
    raise ValueError(f"invalid literal {text}")


def loads_raw(data: bytes) -> Any:
    """A JSON text orjson refused, parsed as the real parser reads strings that are not
    UTF-8 (see the module rules); ValueError if it is no valid JSON that way either."""
    try:
        data.decode()
        utf8 = True
    except UnicodeDecodeError:
        utf8 = False
    if utf8 and _SURROGATE_ESCAPE.search(data) is None:
        raise ValueError("not JSON")  # refused for another reason
    try:
        text = _ESCAPES.sub(_escape, data).decode("utf-8", "surrogateescape")
        return json.loads(text, parse_int=_parse_int, parse_float=_parse_float,
                          parse_constant=_no_constant)
    except (_Unpaired, ValueError, RecursionError):
        raise ValueError("not JSON") from None
