"""JSON text exactly as Open vSwitch writes it (lib/json.c): the form the real tools
print and the real server quotes in the "syntax" member of errors.

Rules kept here:
- Compact by default; `pretty` indents by two spaces with closing brackets hugging the
  last element, as OVS does.
- Object members sorted (JSSF_SORT), or in the real hash-table order (`shash_order`),
  which list-tables, list-columns and monitor rows follow.
- Reals are printed with `%.15g`; a float that holds an integral value within int64 is
  printed as an integer (OVS parses `1.0` as an integer), unless wrapped in `Real`.
- Strings escape `"`, `\\` and control characters; other UTF-8 is written raw.
- Imports nothing above `util`: the OVSDB layers build on this module, never the reverse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from . import ovshash


class Real(float):
    """A real atom: always `%.15g`, even when integral (OVS's JSON_REAL)."""

    __slots__ = ()


_ESCAPE_RE = re.compile(r'[\x00-\x1f"\\]')
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
            "\t": "\\t"}
_INT64 = 1 << 63


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _ESCAPES.get(c) or f"\\u{ord(c):04x}"


def json_string(s: str) -> str:
    return '"' + _ESCAPE_RE.sub(_escape, s) + '"'


def format_real(value: float) -> str:
    """Reals as OVS prints them (in JSON and in messages): `%.15g`."""
    return f"{value:.15g}"


def _number(value: float) -> str:
    if type(value) is not Real and value.is_integer() and -_INT64 <= value < _INT64:
        return str(int(value))
    return format_real(value)


def json_to_string(value: Any, pretty: bool = False, sort: bool = True) -> str:
    """OVS's `json_to_string(value, [JSSF_SORT] [| JSSF_PRETTY])`. Without sorting,
    object members come in the real tool's hash-table order (see `shash_order`)."""
    out: list[str] = []
    _serialize(value, out, 0 if pretty else -1, sort)
    return "".join(out)


def _serialize(value: Any, out: list[str], depth: int, sort: bool = True) -> None:
    """`depth` < 0 means compact output. An explicit stack instead of recursion: error
    messages quote whatever a client sent, nested up to the parser's limit of 1000."""
    stack: list[tuple[bool, Any, int]] = [(False, value, depth)]
    while stack:
        literal, value, depth = stack.pop()
        if literal:
            out.append(value)
        elif value is None:
            out.append("null")
        elif value is True:
            out.append("true")
        elif value is False:
            out.append("false")
        elif isinstance(value, str):
            out.append(json_string(value))
        elif isinstance(value, int):
            out.append(str(value))
        elif isinstance(value, float):
            out.append(_number(value))
        elif isinstance(value, (dict, list, tuple)):
            inner = depth + 1 if depth >= 0 else -1
            newline = "\n" + "  " * inner if inner >= 0 else ""
            comma = "," + newline
            if isinstance(value, dict):
                colon = ": " if depth >= 0 else ":"
                keys = sorted(value) if sort else shash_order(value)
                stack.append((True, "}", 0))
                for i in range(len(keys) - 1, -1, -1):
                    stack.append((False, value[keys[i]], inner))
                    stack.append((True, (comma if i else "") + json_string(keys[i]) + colon, 0))
                stack.append((True, "{" + newline, 0))
            else:
                stack.append((True, "]", 0))
                for i in range(len(value) - 1, -1, -1):
                    stack.append((False, value[i], inner))
                    if i:
                        stack.append((True, comma, 0))
                stack.append((True, "[" + newline if value else "[", 0))
        else:
            raise TypeError(f"cannot serialize {type(value).__name__} as JSON")


# --------------------------------------------------------------------------------------
# The iteration order of OVS hash tables (lib/hash.c, lib/hmap.c, lib/shash.c)

def shash_order(keys: Iterable[str]) -> list[str]:
    """The order in which OVS iterates a `shash` (or a JSON object) whose distinct `keys`
    were inserted in the given order: buckets in index order, each newest first; the
    table doubles as it fills, re-inserting old buckets in iteration order."""
    return list(ovshash.shash_order(keys))


