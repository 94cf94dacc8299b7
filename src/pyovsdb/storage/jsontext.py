"""JSON texts as the real tools read them (lib/json.c): what a file or an argument holds,
or the first thing wrong with it, in the real parser's words.

Rules kept here:
- A text must hold one object or array; anything after it but white space is an error
  ("trailing garbage at end of input"), as is a bare string, number or keyword ("syntax
  error at beginning of input").
- An error reads `line L, column C, byte B: MESSAGE`, counted as the real parser counts
  them: from 0, over the bytes it had consumed when it found the problem (a keyword or
  a number is judged at the byte after it, which is not yet counted).
- Valid texts are parsed by orjson; the real parser's checks run first only where the
  two could disagree, so a good file costs one orjson parse.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_KEYWORDS = {b"false", b"true", b"null"}
_NUMBER_CHARS = b".0123456789eE-+"
_MAX_HEIGHT = 1000
_LLONG_MAX = 2**63 - 1
_ULLONG_MAX = 2**64 - 1
_INT_MAX = 2**31 - 1
_INT_MIN = -(2**31)

# Parser states (lib/json.c's json_parse_state).
_START, _END, _OBJ_INIT, _OBJ_NAME, _OBJ_COLON, _OBJ_VALUE, _OBJ_NEXT = range(7)
_ARR_INIT, _ARR_VALUE, _ARR_NEXT = range(7, 10)
_STRING, _NUMBER, _OTHER = "string", "number", "other"


class JsonTextError(ValueError):
    """The real parser's message for a text it refuses."""


def parse(data: bytes | str) -> Any:
    """The object or array in `data`, or JsonTextError with the real message."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = _MISSING
    else:
        if type(value) in (dict, list) and _MAY_DISAGREE.search(raw) is None:
            return value
    error = first_error(raw)
    if error is not None:
        raise JsonTextError(error)
    if value is _MISSING:  # taken by the real parser, not by orjson (huge integers)
        value = json.loads(raw.decode("utf-8", "surrogateescape"))
    return value


_MISSING: Any = object()
# What orjson takes and the real parser may not: reals out of range, escaped NULs.
_MAY_DISAGREE = re.compile(rb"[eE][+-]?[0-9]{3}|\\u0000")


class _Parser:
    def __init__(self) -> None:
        self.line = self.column = self.byte = 0
        self.error: str | None = None
        self.state = _START
        self.stack: list[str] = []  # "object" or "array"

    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = f"line {self.line}, column {self.column}, byte {self.byte}: {message}"

    def account(self, c: int) -> None:
        self.byte += 1
        if c == 0x0A:
            self.column = 0
            self.line += 1
        else:
            self.column += 1

    # -- parser ------------------------------------------------------------------------

    def push(self, kind: str) -> None:
        if len(self.stack) >= _MAX_HEIGHT:
            self.fail(f"input exceeds maximum nesting depth {_MAX_HEIGHT}")
            return
        self.stack.append(kind)
        self.state = _OBJ_INIT if kind == "object" else _ARR_INIT

    def pop(self) -> None:
        self.stack.pop()
        if not self.stack:
            self.state = _END
        else:
            self.state = _ARR_NEXT if self.stack[-1] == "array" else _OBJ_NEXT

    def value(self, token: str, next_state: int) -> None:
        if token == "{":
            self.push("object")
        elif token == "[":
            self.push("array")
        elif token in (_STRING, _NUMBER, _OTHER):
            self.state = next_state
        else:
            self.fail("syntax error expecting value")

    def token(self, token: str) -> None:
        s = self.state
        if s == _START:
            if token in "{[" and len(token) == 1:
                self.push("object" if token == "{" else "array")
            else:
                self.fail("syntax error at beginning of input")
        elif s == _END:
            self.fail("trailing garbage at end of input")
        elif s in (_OBJ_INIT, _OBJ_NAME):
            if s == _OBJ_INIT and token == "}":
                self.pop()
            elif token == _STRING:
                self.state = _OBJ_COLON
            else:
                self.fail("syntax error parsing object expecting string")
        elif s == _OBJ_COLON:
            if token == ":":
                self.state = _OBJ_VALUE
            else:
                self.fail("syntax error parsing object expecting ':'")
        elif s == _OBJ_VALUE:
            self.value(token, _OBJ_NEXT)
        elif s == _OBJ_NEXT:
            if token == ",":
                self.state = _OBJ_NAME
            elif token == "}":
                self.pop()
            else:
                self.fail("syntax error expecting '}' or ','")
        elif s in (_ARR_INIT, _ARR_VALUE):
            if s == _ARR_INIT and token == "]":
                self.pop()
            else:
                self.value(token, _ARR_NEXT)
        elif s == _ARR_NEXT:
            if token == ",":
                self.state = _ARR_VALUE
            elif token == "]":
                self.pop()
            else:
                self.fail("syntax error expecting ']' or ','")

    # -- lexer -------------------------------------------------------------------------

    def keyword(self, word: bytes) -> None:
        if word in _KEYWORDS:
            self.token(_OTHER)
        else:
            self.fail(f"invalid keyword '{word.decode('latin-1')}'")

    def number(self, text: bytes) -> None:
        error = _number_error(text)
        if error is not None:
            self.fail(error)
        else:
            self.token(_NUMBER)

    def string(self, raw: bytes) -> None:
        error = _unescape_error(raw) if b"\\" in raw else None
        if error is not None:
            self.fail(error)
        else:
            self.token(_STRING)


def first_error(raw: bytes) -> str | None:
    """The real parser's message for the first problem in `raw`, or None if it takes
    the text (lib/json.c, json_parser_feed and json_parser_finish)."""
    p = _Parser()
    lex = "start"
    start = 0
    i = 0
    n = len(raw)
    while i < n and p.error is None:
        c = raw[i]
        consumed = True
        if lex == "start":
            if c in b" \t\n\r":
                start = i + 1
            elif 0x61 <= c <= 0x7A:
                lex, start = "keyword", i
            elif c in b"[{]}:,":
                p.token(chr(c))
                start = i + 1
            elif c == 0x2D or 0x30 <= c <= 0x39:
                lex, start = "number", i
            elif c == 0x22:
                lex, start = "string", i + 1
            elif 0x20 <= c < 0x7F:
                p.fail(f"invalid character '{chr(c)}'")
            else:
                p.fail(f"invalid character U+{c:04x}")
        elif lex == "keyword":
            if not (0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A):
                p.keyword(raw[start:i])
                lex, consumed = "start", False
        elif lex == "number":
            if c not in _NUMBER_CHARS:
                p.number(raw[start:i])
                lex, consumed = "start", False
        elif lex == "string":
            if c == 0x5C:
                lex = "escape"
            elif c == 0x22:
                p.string(raw[start:i])
                lex = "start"
            elif c < 0x20:
                p.fail(f"U+{c:04X} must be escaped in quoted string")
        else:  # escape
            lex = "string"
        if consumed:
            p.account(c)
            i += 1
    if p.error is None:
        if lex in ("string", "escape"):
            p.fail("unexpected end of input in quoted string")
        elif lex == "keyword":
            p.keyword(raw[start:])
            p.account(0x20)
        elif lex == "number":
            p.number(raw[start:])
            p.account(0x20)
    if p.state == _START:
        p.fail("empty input stream")
    elif p.state != _END:
        p.fail("unexpected end of input")
    return p.error


def _number_error(text: bytes) -> str | None:
    """json_lex_number's verdict on a number's text."""
    i = 0
    n = len(text)
    negative = text[:1] == b"-"
    i += negative
    significand = 0
    pow10 = 0

    def digit(k: int) -> bool:
        return k < n and 0x30 <= text[k] <= 0x39

    if i < n and text[i] == 0x30:
        i += 1
        if digit(i):
            return "leading zeros not allowed"
    elif digit(i):
        while digit(i):
            if significand <= _ULLONG_MAX // 10:
                significand = significand * 10 + text[i] - 0x30
            else:
                pow10 += 1
            i += 1
    else:
        return "'-' must be followed by digit"
    if i < n and text[i] == 0x2E:
        i += 1
        if not digit(i):
            return "decimal point must be followed by digit"
        while digit(i):
            if significand <= _ULLONG_MAX // 10:
                significand = significand * 10 + text[i] - 0x30
                pow10 -= 1
            i += 1
    if i < n and text[i] in b"eE":
        i += 1
        negative_exponent = False
        if i < n and text[i] in b"+-":
            negative_exponent = text[i] == 0x2D
            i += 1
        if not digit(i):
            return "exponent must contain at least one digit"
        exponent = 0
        while digit(i):
            if exponent >= _INT_MAX // 10:
                return "exponent outside valid range"
            exponent = exponent * 10 + text[i] - 0x30
            i += 1
        if negative_exponent:
            if pow10 < _INT_MIN + exponent:
                return "exponent outside valid range"
            pow10 -= exponent
        else:
            if pow10 > _INT_MAX - exponent:
                return "exponent outside valid range"
            pow10 += exponent
    if i != n:
        return "syntax error in number"
    if not significand:
        return None
    try:
        value = float(text)
    except (ValueError, OverflowError):
        return "number outside valid range"
    if value in (float("inf"), float("-inf")):
        return "number outside valid range"
    return None


def _unescape_error(raw: bytes) -> str | None:
    """json_string_unescape's complaint about a string's raw text, if any."""
    i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        i += 1
        if c != 0x5C:
            continue
        e = raw[i]
        i += 1
        if e in b'"\\/bfnrt':
            continue
        if e != 0x75:
            return f"bad escape \\{chr(e)}"
        c0, error = _hex4(raw, i)
        if error:
            return error
        i += 4
        if not 0xD800 <= c0 < 0xDC00:
            continue
        if i + 2 > n or raw[i:i + 2] != b"\\u":
            return "malformed escaped surrogate pair"
        i += 2
        c1, error = _hex4(raw, i)
        if error:
            return error
        i += 4
        if not 0xDC00 <= c1 < 0xE000:
            return "second half of escaped surrogate pair is not trailing surrogate"
    return None


def _hex4(raw: bytes, i: int) -> tuple[int, str | None]:
    if i + 4 > len(raw):
        return 0, "quoted string ends within \\u escape"
    try:
        value = int(raw[i:i + 4], 16)
    except ValueError:
        return 0, "malformed \\u escape"
    if not all(chr(c) in "0123456789abcdefABCDEF" for c in raw[i:i + 4]):
        return 0, "malformed \\u escape"
    if not value:
        return 0, "null bytes not supported in quoted strings"
    return value, None
