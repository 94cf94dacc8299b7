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
  byte is written in its three-byte form. `valid` replaces each byte that is not
  UTF-8 by U+FFFD, for a string that must be written where only UTF-8 may go.
- Pure: no I/O.
"""

from __future__ import annotations

import re

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


def valid(s: str) -> str:
    """`s` with every byte that is not UTF-8 replaced by U+FFFD."""
    return to_bytes(s).decode("utf-8", "replace") if has_escaped_bytes(s) else s


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
