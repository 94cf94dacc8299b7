"""How the real command-line tools print an OVSDB error (`ovsdb_error_to_string`):
`syntax "JSON": tag: details`, the offending JSON with its members sorted (as
`ovsdb_syntax_error` keeps it), each part only if present."""

from __future__ import annotations

from ..ovsdb.errors import NO_SYNTAX, OvsdbError
from ..util.ovsjson import json_to_string


def error_to_string(e: OvsdbError) -> str:
    out = ""
    if e.syntax is not NO_SYNTAX:
        out = f'syntax "{json_to_string(e.syntax)}": '
    out += e.tag
    if e.details:
        out += f": {e.details}"
    return out
