"""JSON-RPC 1.0 messages as OVSDB uses them.

Rules kept here (those of the real implementation, lib/jsonrpc.c):
- A message is a JSON object with only the members method, params, result, error, id.
- With "method" it is a request, or a notification if "id" is null or missing;
  "params" must be present and an array.
- Without "method" it is a reply: an error reply if "error" is non-null, a successful
  reply if "result" is non-null; either needs an id.
- Anything else is a protocol error: the receiver drops the connection.
Replies are built here so every sender writes them the same way: a success carries
`"error": null`, an error reply carries no "result" (as the real server writes it).
"""

from __future__ import annotations

from typing import Any

REQUEST, NOTIFY, REPLY, ERROR = "request", "notify", "reply", "error"
_MEMBERS = frozenset(("method", "params", "result", "error", "id"))


class ProtocolError(Exception):
    pass


def classify(msg: Any) -> str:
    """Return the message kind, or raise ProtocolError with the real server's wording."""
    if type(msg) is not dict:
        raise ProtocolError("message is not a JSON object")
    for key in msg:
        if key not in _MEMBERS:
            raise ProtocolError(f'message has unexpected member "{key}"')
    if "method" in msg:
        if type(msg["method"]) is not str:
            raise ProtocolError('"method" is not a JSON string')
        if "params" not in msg:
            raise ProtocolError('request must have "params"')
        if type(msg["params"]) is not list:
            raise ProtocolError('"params" must be JSON array')
        return REQUEST if msg.get("id") is not None else NOTIFY
    if msg.get("error") is not None:
        if "id" not in msg:
            raise ProtocolError('error reply must have "id"')
        return ERROR
    if msg.get("result") is not None:
        if "id" not in msg:
            raise ProtocolError('reply must have "id"')
        return REPLY
    raise ProtocolError('request must have "method"')


def request(method: str, params: list[Any], msg_id: Any) -> dict[str, Any]:
    return {"method": method, "params": params, "id": msg_id}


def notification(method: str, params: list[Any]) -> dict[str, Any]:
    return {"method": method, "params": params, "id": None}


def reply(result: Any, msg_id: Any) -> dict[str, Any]:
    return {"id": msg_id, "result": result, "error": None}


def error_reply(error: Any, msg_id: Any) -> dict[str, Any]:
    return {"id": msg_id, "error": error}
