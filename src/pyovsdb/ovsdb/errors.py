"""OVSDB errors: the one exception type every layer raises for protocol-visible failures.

Rules kept here:
- An error is a *tag* (one of the RFC 7047 error strings or an OVS extension such as
  "syntax error", "unknown column", "ovsdb error") plus optional free-form *details* and,
  for syntax errors, the offending JSON text (*syntax*), exactly the members the real
  server puts in its error objects.
- Errors are values: they carry no traceback meaning and are cheap to create, because the
  transaction engine raises them on hot paths (a failed `wait` is a normal outcome).
"""

from __future__ import annotations

from typing import Any

from ..util.ovsjson import json_to_string

NO_SYNTAX: Any = object()


class OvsdbError(Exception):
    """A failure that is reported to the client as `{"error": tag, "details": ...}`."""

    __slots__ = ("details", "syntax", "tag")

    def __init__(self, tag: str, details: str | None = None, syntax: Any = NO_SYNTAX) -> None:
        super().__init__(tag if details is None else f"{tag}: {details}")
        self.tag = tag
        self.details = details
        self.syntax = syntax

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.tag}
        if self.details is not None:
            out["details"] = self.details
        if self.syntax is not NO_SYNTAX:
            out["syntax"] = ovs_json_string(self.syntax)
        return out

    def __repr__(self) -> str:
        return f"OvsdbError({self.tag!r}, {self.details!r})"


def ovs_json_string(value: Any) -> str:
    """How the real server quotes offending input in the "syntax" member: compact JSON,
    keys sorted, reals with `%.15g`."""
    return json_to_string(value, sort=True)


def syntax_error(json: Any, details: str) -> OvsdbError:
    """An error about malformed input; the real server names the offending text."""
    return OvsdbError("syntax error", details, syntax=json)


def constraint_violation(details: str) -> OvsdbError:
    return OvsdbError("constraint violation", details)


class RpcStringError(Exception):
    """An error reply whose error is a bare string (the real server's "unknown method",
    "unknown monitor", "invalid parameters")."""
