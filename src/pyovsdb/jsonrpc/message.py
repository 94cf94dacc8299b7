"""JSON-RPC 1.0 messages as OVSDB uses them.

Rules kept here (those of the real implementation, lib/jsonrpc.c):
- A message is a JSON object with only the members method, params, result, error, id;
  a member that is null counts as absent.
- Its kind is a reply if "result" is present, else an error reply if "error" is, else a
  request if "id" is, else a notification. Requests and notifications need "method"
  and an array "params"; replies need an id and must not have "method" or "params".
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
    """Return the message kind, or raise ProtocolError with the real server's wording.
    A member whose value is null counts as absent."""
    if type(msg) is not dict:
        raise ProtocolError("message is not a JSON object")
    for key in msg:
        if key not in _MEMBERS:
            raise ProtocolError(f'message has unexpected member "{key}"')
    method = msg.get("method")
    params = msg.get("params")
    if method is not None and type(method) is not str:
        raise ProtocolError("method is not a JSON string")
    if params is not None and type(params) is not list:
        raise ProtocolError('"params" must be JSON array')
    if msg.get("result") is not None:
        kind, name = REPLY, "reply"
    elif msg.get("error") is not None:
        kind, name = ERROR, "error"
    elif msg.get("id") is not None:
        kind, name = REQUEST, "request"
    else:
        kind, name = NOTIFY, "notification"
    if kind in (REQUEST, NOTIFY):
        if method is None:
            raise ProtocolError(f'{name} must have "method"')
        if params is None:
            raise ProtocolError(f'{name} must have "params"')
    else:
        if method is not None:
            raise ProtocolError(f'{name} must not have "method"')
        if params is not None:
            raise ProtocolError(f'{name} must not have "params"')
        if kind == REPLY and msg.get("error") is not None:
            raise ProtocolError('reply must not have "error"')
        if msg.get("id") is None:
            raise ProtocolError(f'{name} must have "id"')
    return kind


def request(method: str, params: list[Any], msg_id: Any) -> dict[str, Any]:
    return {"method": method, "params": params, "id": msg_id}


def notification(method: str, params: list[Any]) -> dict[str, Any]:
    return {"method": method, "params": params, "id": None}


def reply(result: Any, msg_id: Any) -> dict[str, Any]:
    return {"id": msg_id, "result": result, "error": None}


def error_reply(error: Any, msg_id: Any) -> dict[str, Any]:
    return {"id": msg_id, "error": error}
