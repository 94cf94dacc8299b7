"""Reading the members of a JSON object the way the real server does (lib/ovsdb-parser.c),
so that malformed input gets the same error, word for word.

Rules kept here:
- Members are read in the order the caller asks for them; the first problem (missing,
  wrong type, or a semantic error the caller raises through `error`) is the one
  reported, prefixed with "Parsing <what> failed: ".
- Members present but never read are reported by `finish`, naming the first one and
  counting the others, only if nothing else went wrong.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import OvsdbError, syntax_error

ID_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MISSING = object()

# kind -> accepted Python types ("id" is a string that matches ID_RE)
KINDS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "id": (str,),
    "array": (list,),
    "object": (dict,),
    "boolean": (bool,),
    "integer": (int, float),
    "number": (int, float),
    "any": (str, list, dict, bool, int, float, type(None)),
}


def kind_ok(value: Any, kinds: str) -> bool:
    """`kinds` may name several kinds separated by '|'."""
    t = type(value)
    for kind in kinds.split("|"):
        if t not in KINDS[kind]:
            continue
        if kind == "id" and ID_RE.match(value) is None:
            continue
        if kind == "integer" and t is float and not value.is_integer():
            continue
        return True
    return False


class MemberParser:
    __slots__ = ("failed", "json", "used", "what")

    def __init__(self, json: Any, what: str) -> None:
        self.what = what
        self.json = json
        self.used: set[str] = set()
        self.failed: OvsdbError | None = None
        if type(json) is not dict:
            self.error("Object expected.", syntax=False)

    def error(self, details: str, syntax: bool = True) -> OvsdbError:
        """Raise (and remember) an error about this object."""
        msg = f"Parsing {self.what} failed: {details}"
        err = syntax_error(self.json, msg) if syntax else OvsdbError("syntax error", msg)
        if self.failed is None:
            self.failed = err
        raise err

    def get(self, name: str, kinds: str, optional: bool = False) -> Any:
        self.used.add(name)
        value = self.json.get(name, _MISSING)
        if value is _MISSING:
            if optional:
                return None
            self.error(f"Required '{name}' member is missing.")
        if not kind_ok(value, kinds):
            self.error(f"Type mismatch for member '{name}'.")
        return value

    def finish(self) -> None:
        if self.failed is not None:
            raise self.failed
        extra = [m for m in self.json if m not in self.used]
        if len(extra) == 1:
            self.error(f"Member '{extra[0]}' is present but not allowed here.")
        if extra:
            n = len(extra) - 1
            others = "other member" if n == 1 else "other members"
            self.error(f"Member '{extra[0]}' and {n} {others} are present but not allowed "
                       "here.")
