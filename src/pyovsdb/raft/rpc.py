"""Raft RPC messages and log entries exactly as Open vSwitch 3.1 puts them on the wire
(`ovsdb/raft-rpc.c`, `ovsdb/raft-private.c`), as plain Python objects.

Rules kept here:
- Method names, member names and value forms are OVS's: every message carries
  "cluster", "from" and "to" as full UUID strings, except that `add_server_request` may
  omit "cluster" (the joiner does not know it yet) and "to" (it goes to an address, not
  a server), and `hello_request` may omit "to". "comment" is optional free text.
- Parsing is strict, like `ovsdb_parser_finish()`: a missing required member, a member
  of the wrong JSON type, an invalid UUID or address, or any member the message does
  not define is an `RpcError`. The real server logs and drops such a message, and an
  older peer treats an unknown member the same way, so we never emit one either (no
  `is_prevote`: OVS 3.1 does not know it).
- Integers are uint64; values above INT64_MAX travel as negative numbers (OVS's JSON
  integers are int64), and booleans are not integers.
- UUIDs are normalized to lower case, so they can be compared as strings.
- This module owns the JSON form only: it knows nothing of terms, logs or timers, and
  it does no I/O (the jsonrpc layer frames bytes; `to_jsonrpc`/`from_jsonrpc` give the
  notification object that goes inside a frame).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

__all__ = [
    "COMMAND_STATUSES",
    "AddServerReply",
    "AddServerRequest",
    "AppendReply",
    "AppendRequest",
    "BecomeLeader",
    "Entry",
    "ExecuteCommandReply",
    "ExecuteCommandRequest",
    "HelloRequest",
    "InstallSnapshotReply",
    "InstallSnapshotRequest",
    "RaftRpc",
    "RemoveServerReply",
    "RemoveServerRequest",
    "RpcError",
    "VoteReply",
    "VoteRequest",
    "from_jsonrpc",
    "from_params",
    "parse_servers",
    "validate_address",
]

_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_HOST_PORT_RE = re.compile(r"(?:\[[0-9a-fA-F:.%a-zA-Z]+\]|[^:\[\]]+):[0-9]{1,5}\Z")
_U64 = 1 << 64
_I64 = 1 << 63

#: `execute_command_reply.status` strings (`raft_command_status_to_string`).
COMMAND_STATUSES = (
    "operation still in progress",
    "success",
    "not leader",
    "prerequisite check failed",
    "lost leadership",
    "server shutdown",
    "I/O error",
    "timeout",
)
APPEND_RESULTS = ("OK", "inconsistency", "I/O error")


class RpcError(ValueError):
    """A message or entry that the real server would refuse to parse."""


def _u64_to_json(value: int) -> int:
    return value - _U64 if value >= _I64 else value


def is_uuid(s: object) -> bool:
    return isinstance(s, str) and _UUID_RE.match(s) is not None


def validate_address(address: object) -> str | None:
    """OVS's `raft_address_validate`: None if `address` is a usable Raft address,
    else the reason. `unix:` takes any path; `tcp:`/`ssl:` need HOST:PORT (a name,
    an IPv4 address or a bracketed IPv6 address)."""
    if not isinstance(address, str):
        return "server address is not string"
    if address.startswith("unix:"):
        return None
    if address.startswith(("tcp:", "ssl:")):
        if _HOST_PORT_RE.match(address[4:]):
            return None
        return f"{address}: syntax error in address"
    return f'{address}: expected "tcp" or "ssl" address'


def parse_servers(obj: object, what: str = "servers") -> dict[str, str]:
    """A configuration object `{sid: address}` (`raft_servers_from_json`)."""
    if not isinstance(obj, dict):
        raise RpcError(f"{what} must be JSON object")
    if not obj:
        raise RpcError(f"{what} must have at least one server")
    out: dict[str, str] = {}
    for sid, address in obj.items():
        if not is_uuid(sid):
            raise RpcError(f"{sid} is not a UUID")
        err = validate_address(address)
        if err:
            raise RpcError(err)
        out[sid.lower()] = address
    return out


class _Parser:
    """Member access that remembers what was used, for `finish()` to reject the rest
    (the semantics of OVS's `ovsdb_parser`)."""

    __slots__ = ("context", "obj", "used")

    def __init__(self, obj: object, context: str) -> None:
        if not isinstance(obj, dict):
            raise RpcError(f"{context}: Object expected.")
        self.obj: dict[str, Any] = obj
        self.context = context
        self.used: set[str] = set()

    def error(self, msg: str) -> RpcError:
        return RpcError(f"{self.context}: {msg}")

    def member(self, name: str, types: tuple[type, ...], optional: bool) -> Any:
        if name not in self.obj:
            if optional:
                return None
            raise self.error(f"Required '{name}' member is missing.")
        self.used.add(name)
        value = self.obj[name]
        # JSON null is of the wrong type for every member (OVS never passes OP_NULL).
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise self.error(f"Type mismatch for member '{name}'.")
        return value

    def uint64(self, name: str, optional: bool = False) -> int:
        value: int | None = self.member(name, (int,), optional)
        if value is None:
            return 0
        if not -_I64 <= value < _I64:
            raise self.error(f"Member '{name}' is out of range.")
        return value + _U64 if value < 0 else value

    def string(self, name: str, optional: bool = False) -> str | None:
        value: str | None = self.member(name, (str,), optional)
        return value

    def boolean(self, name: str, optional: bool = False) -> bool | None:
        value: bool | None = self.member(name, (bool,), optional)
        return value

    def uuid(self, name: str, optional: bool = False) -> str | None:
        value = self.string(name, optional)
        if value is None:
            return None
        if not _UUID_RE.match(value):
            raise self.error(f"{name} is not a valid UUID")
        return value.lower()

    def json(self, name: str, optional: bool = False) -> Any:
        """A member that must be a JSON object or array (OP_OBJECT | OP_ARRAY)."""
        return self.member(name, (dict, list), optional)

    def finish(self) -> None:
        for name in self.obj:
            if name not in self.used:
                raise self.error(f"Member '{name}' is present but not allowed here.")


# --- log entries ----------------------------------------------------------------------


@dataclass(slots=True)
class Entry:
    """One Raft log entry (`struct raft_entry`): a leader's no-op `{"term": T}`, a
    configuration (`servers`), an election-timer change (`election_timer`), or an
    OVSDB command (`data` = `[schema-or-null, txn-or-null]` with its entry id `eid`).
    OVS allows several of these in one entry; so do we."""

    term: int
    data: Any = None
    eid: str | None = None
    servers: dict[str, str] | None = None
    election_timer: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"term": _u64_to_json(self.term)}
        if self.data is not None:
            out["data"] = self.data
            out["eid"] = self.eid
        if self.servers is not None:
            out["servers"] = dict(self.servers)
        if self.election_timer:
            out["election_timer"] = _u64_to_json(self.election_timer)
        return out

    @classmethod
    def from_json(cls, obj: object) -> Entry:
        p = _Parser(obj, "raft log entry")
        return cls._parse(p)

    @classmethod
    def _parse(cls, p: _Parser) -> Entry:
        term = p.uint64("term")
        data = p.json("data", optional=True)
        eid = p.uuid("eid") if data is not None else None
        servers_json = p.member("servers", (dict,), optional=True)
        servers = parse_servers(servers_json) if servers_json is not None else None
        election_timer = p.uint64("election_timer", optional=True)
        p.finish()
        return cls(term, data, eid, servers, election_timer)


# --- messages -------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class RaftRpc:
    """Common envelope (`struct raft_rpc_common` plus the cluster id): `src` is the
    wire's "from", `dst` its "to". `address` is not on the wire: it tells the host where
    to deliver a message whose destination server id is not known (a joiner's
    `add_server_request`)."""

    METHOD: ClassVar[str] = ""
    HAS_TERM: ClassVar[bool] = False

    src: str
    dst: str | None = None
    cluster: str | None = None
    comment: str | None = None
    address_hint: str | None = field(default=None, compare=False, repr=False)

    @property
    def rpc_term(self) -> int:
        """The term this message carries, 0 if none (`raft_rpc_get_term`)."""
        return 0

    def to_json(self) -> dict[str, Any]:
        """The single element of the notification's "params"."""
        out: dict[str, Any] = {}
        if self.cluster is not None:
            out["cluster"] = self.cluster
        if self.dst is not None:
            out["to"] = self.dst
        out["from"] = self.src
        if self.comment is not None:
            out["comment"] = self.comment
        self._body_to_json(out)
        return out

    def to_jsonrpc(self) -> dict[str, Any]:
        """The whole JSON-RPC 1.0 notification, as `raft_rpc_to_jsonrpc` makes it."""
        return {"method": self.METHOD, "params": [self.to_json()], "id": None}

    def _body_to_json(self, out: dict[str, Any]) -> None:
        raise NotImplementedError

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(slots=True, kw_only=True)
class HelloRequest(RaftRpc):
    """Sent when a member's session (re)connects; lets the peer learn our id."""

    METHOD: ClassVar[str] = "hello_request"
    address: str

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["address"] = self.address

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        return {"address": p.string("address")}


@dataclass(slots=True, kw_only=True)
class AppendRequest(RaftRpc):
    """AppendEntries; `log == []` is a heartbeat."""

    METHOD: ClassVar[str] = "append_request"
    HAS_TERM: ClassVar[bool] = True
    term: int
    prev_log_index: int
    prev_log_term: int
    leader_commit: int
    log: list[Entry]

    @property
    def rpc_term(self) -> int:
        return self.term

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["term"] = _u64_to_json(self.term)
        out["prev_log_index"] = _u64_to_json(self.prev_log_index)
        out["prev_log_term"] = _u64_to_json(self.prev_log_term)
        out["leader_commit"] = _u64_to_json(self.leader_commit)
        out["log"] = [e.to_json() for e in self.log]

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        body: dict[str, Any] = {
            "term": p.uint64("term"),
            "prev_log_index": p.uint64("prev_log_index"),
            "prev_log_term": p.uint64("prev_log_term"),
            "leader_commit": p.uint64("leader_commit"),
        }
        entries = p.member("log", (list,), optional=False)
        body["log"] = [Entry.from_json(e) for e in entries]
        return body


@dataclass(slots=True, kw_only=True)
class AppendReply(RaftRpc):
    """`log_end` is the replier's last index + 1, so the leader can cap `next_index`
    at once instead of probing backwards one entry at a time (thesis 4.2.1)."""

    METHOD: ClassVar[str] = "append_reply"
    HAS_TERM: ClassVar[bool] = True
    term: int
    log_end: int
    prev_log_index: int
    prev_log_term: int
    n_entries: int
    result: str

    @property
    def rpc_term(self) -> int:
        return self.term

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["term"] = _u64_to_json(self.term)
        out["log_end"] = _u64_to_json(self.log_end)
        out["prev_log_index"] = _u64_to_json(self.prev_log_index)
        out["prev_log_term"] = _u64_to_json(self.prev_log_term)
        out["n_entries"] = _u64_to_json(self.n_entries)
        out["result"] = self.result

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        body: dict[str, Any] = {
            "term": p.uint64("term"),
            "log_end": p.uint64("log_end"),
            "prev_log_index": p.uint64("prev_log_index"),
            "prev_log_term": p.uint64("prev_log_term"),
            "n_entries": p.uint64("n_entries"),
            "result": p.string("result"),
        }
        if body["result"] not in APPEND_RESULTS:
            raise p.error(f'unknown result "{body["result"]}"')
        return body


@dataclass(slots=True, kw_only=True)
class VoteRequest(RaftRpc):
    """RequestVote. `leadership_transfer` marks an election the old leader asked
    for, which voters must not suppress as disruptive (thesis 4.2.3)."""

    METHOD: ClassVar[str] = "vote_request"
    HAS_TERM: ClassVar[bool] = True
    term: int
    last_log_index: int
    last_log_term: int
    leadership_transfer: bool = False

    @property
    def rpc_term(self) -> int:
        return self.term

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["term"] = _u64_to_json(self.term)
        out["last_log_index"] = _u64_to_json(self.last_log_index)
        out["last_log_term"] = _u64_to_json(self.last_log_term)
        if self.leadership_transfer:
            out["leadership_transfer"] = True

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        return {
            "term": p.uint64("term"),
            "last_log_index": p.uint64("last_log_index"),
            "last_log_term": p.uint64("last_log_term"),
            "leadership_transfer": p.boolean("leadership_transfer", optional=True) is True,
        }


@dataclass(slots=True, kw_only=True)
class VoteReply(RaftRpc):
    """`vote` is whom the replier voted for in `term`, which may be someone else."""

    METHOD: ClassVar[str] = "vote_reply"
    HAS_TERM: ClassVar[bool] = True
    term: int
    vote: str

    @property
    def rpc_term(self) -> int:
        return self.term

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["term"] = _u64_to_json(self.term)
        out["vote"] = self.vote

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        return {"term": p.uint64("term"), "vote": p.uuid("vote")}


@dataclass(slots=True, kw_only=True)
class AddServerRequest(RaftRpc):
    """A joining server asks to be added; sent to addresses, so "to" is absent."""

    METHOD: ClassVar[str] = "add_server_request"
    address: str

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["address"] = self.address

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        return {"address": p.string("address")}


@dataclass(slots=True, kw_only=True)
class AddServerReply(RaftRpc):
    """The outcome is `success`; `comment` says why ("completed", "not leader", ...)."""

    METHOD: ClassVar[str] = "add_server_reply"
    success: bool
    remote_addresses: list[str] = field(default_factory=list)

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["success"] = self.success
        if self.remote_addresses:
            out["remote_addresses"] = list(self.remote_addresses)

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        body: dict[str, Any] = {"success": p.boolean("success")}
        addresses = p.member("remote_addresses", (list,), optional=True)
        if addresses is not None:
            if not addresses:
                raise p.error("at least one remote address is required")
            for a in addresses:
                err = validate_address(a)
                if err:
                    raise p.error(err)
            body["remote_addresses"] = list(dict.fromkeys(addresses))
        return body


@dataclass(slots=True, kw_only=True)
class RemoveServerRequest(RaftRpc):
    METHOD: ClassVar[str] = "remove_server_request"
    server_id: str

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["server_id"] = self.server_id

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        return {"server_id": p.uuid("server_id")}


@dataclass(slots=True, kw_only=True)
class RemoveServerReply(RaftRpc):
    """`target_server` is omitted when it is the destination itself (OVS keeps it
    that way for compatibility with servers older than the member)."""

    METHOD: ClassVar[str] = "remove_server_reply"
    success: bool
    target_server: str | None = None

    def _body_to_json(self, out: dict[str, Any]) -> None:
        if self.target_server is not None:
            out["target_server"] = self.target_server
        out["success"] = self.success

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        return {"success": p.boolean("success"),
                "target_server": p.uuid("target_server", optional=True)}


@dataclass(slots=True, kw_only=True)
class InstallSnapshotRequest(RaftRpc):
    """The whole snapshot in one message (OVS does not chunk)."""

    METHOD: ClassVar[str] = "install_snapshot_request"
    HAS_TERM: ClassVar[bool] = True
    term: int
    last_index: int
    last_term: int
    last_eid: str
    last_servers: dict[str, str]
    election_timer: int
    data: Any

    @property
    def rpc_term(self) -> int:
        return self.term

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["term"] = _u64_to_json(self.term)
        out["last_index"] = _u64_to_json(self.last_index)
        out["last_term"] = _u64_to_json(self.last_term)
        out["last_servers"] = dict(self.last_servers)
        out["last_eid"] = self.last_eid
        out["election_timer"] = _u64_to_json(self.election_timer)
        out["data"] = self.data

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        servers = p.member("last_servers", (dict,), optional=False)
        return {
            "last_servers": parse_servers(servers),
            "term": p.uint64("term"),
            "last_index": p.uint64("last_index"),
            "last_term": p.uint64("last_term"),
            "last_eid": p.uuid("last_eid"),
            "election_timer": p.uint64("election_timer"),
            "data": p.json("data"),
        }


@dataclass(slots=True, kw_only=True)
class InstallSnapshotReply(RaftRpc):
    METHOD: ClassVar[str] = "install_snapshot_reply"
    HAS_TERM: ClassVar[bool] = True
    term: int
    last_index: int
    last_term: int

    @property
    def rpc_term(self) -> int:
        return self.term

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["term"] = _u64_to_json(self.term)
        out["last_index"] = _u64_to_json(self.last_index)
        out["last_term"] = _u64_to_json(self.last_term)

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        return {"term": p.uint64("term"), "last_index": p.uint64("last_index"),
                "last_term": p.uint64("last_term")}


@dataclass(slots=True, kw_only=True)
class BecomeLeader(RaftRpc):
    """Leadership transfer ("TimeoutNow"): the receiver starts an election at once."""

    METHOD: ClassVar[str] = "become_leader"
    HAS_TERM: ClassVar[bool] = True
    term: int

    @property
    def rpc_term(self) -> int:
        return self.term

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["term"] = _u64_to_json(self.term)

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        return {"term": p.uint64("term")}


@dataclass(slots=True, kw_only=True)
class ExecuteCommandRequest(RaftRpc):
    """A follower forwards a command: append `data` as entry `result` if the eid of
    the newest data entry in the leader's log is `prereq`."""

    METHOD: ClassVar[str] = "execute_command_request"
    data: Any
    prereq: str
    result: str

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["data"] = self.data
        out["prereq"] = self.prereq
        out["result"] = self.result

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        return {"data": p.json("data"), "prereq": p.uuid("prereq"),
                "result": p.uuid("result")}


@dataclass(slots=True, kw_only=True)
class ExecuteCommandReply(RaftRpc):
    """`commit_index` (only sent when nonzero) is where the command committed."""

    METHOD: ClassVar[str] = "execute_command_reply"
    result: str
    status: str
    commit_index: int = 0

    def _body_to_json(self, out: dict[str, Any]) -> None:
        out["result"] = self.result
        out["status"] = self.status
        if self.commit_index:
            out["commit_index"] = _u64_to_json(self.commit_index)

    @classmethod
    def _parse_body(cls, p: _Parser) -> dict[str, Any]:
        body: dict[str, Any] = {"result": p.uuid("result"), "status": p.string("status")}
        if body["status"] not in COMMAND_STATUSES:
            raise p.error(f'unknown status "{body["status"]}"')
        body["commit_index"] = p.uint64("commit_index", optional=True)
        return body


RPC_TYPES: dict[str, type[RaftRpc]] = {
    cls.METHOD: cls
    for cls in (HelloRequest, AppendRequest, AppendReply, VoteRequest, VoteReply,
                AddServerRequest, AddServerReply, RemoveServerRequest, RemoveServerReply,
                InstallSnapshotRequest, InstallSnapshotReply, BecomeLeader,
                ExecuteCommandRequest, ExecuteCommandReply)
}


def from_params(method: str, params: object, *, cluster: str | None = None,
                sid: str | None = None) -> RaftRpc:
    """Parse the params object of notification `method` (`raft_rpc_from_jsonrpc`).

    `cluster` is the cluster id we belong to, None if not known yet (the caller then
    learns it from the message's `cluster`); `sid` is our server id, to reject
    misrouted messages. Raises `RpcError`."""
    cls = RPC_TYPES.get(method)
    if cls is None:
        raise RpcError(f"unknown method {method}")
    p = _Parser(params, f"raft {method} RPC")
    is_add = cls is AddServerRequest
    msg_cluster = p.uuid("cluster", optional=is_add)
    if msg_cluster is not None and cluster is not None and msg_cluster != cluster.lower():
        raise p.error(f"wrong cluster {msg_cluster} (expected {cluster.lower()})")
    dst = p.uuid("to", optional=is_add or cls is HelloRequest)
    if dst is not None and sid is not None and dst != sid.lower():
        raise p.error(f"misrouted message (addressed to {dst} but we're {sid.lower()})")
    src = p.uuid("from")
    comment = p.string("comment", optional=True)
    body = cls._parse_body(p)
    p.finish()
    assert src is not None
    return cls(src=src, dst=dst, cluster=msg_cluster, comment=comment, **body)


def from_jsonrpc(msg: object, *, cluster: str | None = None,
                 sid: str | None = None) -> RaftRpc:
    """Parse a whole JSON-RPC message; only notifications with one param are Raft."""
    if not isinstance(msg, dict):
        raise RpcError("JSON-RPC message is not an object")
    method = msg.get("method")
    if not isinstance(method, str) or "id" not in msg or msg["id"] is not None:
        kind = ("request" if isinstance(method, str)
                else "error" if msg.get("error") is not None else "reply")
        raise RpcError(f"expecting notify RPC but received {kind}")
    extra = set(msg) - {"method", "params", "id"}
    if extra:
        raise RpcError(f"unexpected member {sorted(extra)[0]!r} in JSON-RPC message")
    params = msg.get("params")
    if not isinstance(params, list):
        raise RpcError('"params" must be JSON array')
    if method not in RPC_TYPES:
        raise RpcError(f"unknown method {method}")
    if len(params) != 1:
        raise RpcError(f"{method} RPC has {len(params)} parameters (expected 1)")
    return from_params(method, params[0], cluster=cluster, sid=sid)
