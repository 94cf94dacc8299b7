"""Clustered database files in the real server's format ("OVSDB CLUSTER" records).

Rules kept here (ovsdb.5, ovsdb/raft-private.c):
- Record 1 is the header: `server_id`, `name`, `local_address`; a joined server adds
  `cluster_id`, `prev_servers` and, when its snapshot is not empty, `prev_index`,
  `prev_term`, `prev_eid`, `prev_data` ([schema, data]) and `prev_election_timer`.
  A server that has not joined yet has `remote_addresses` instead (and maybe
  `cluster_id`).
- Every later record is one of: an entry (`term`, `index`, optional `servers`,
  `election_timer`, `data`+`eid`, `comment`), a term (`term`), a vote (`term`, `vote`),
  a leader (`term`, `leader`), a commit index (`commit_index`), a note (`note`).
- Replaying records rebuilds the persistent Raft state, and refuses what the real
  server refuses: an entry that skips an index, a term that goes backwards, two votes
  in one term, truncation below the commit index, a commit index that goes backwards.
  Truncation is expressed by an entry whose index is below the current end of the log.
- Snapshots rewrite the whole file atomically (`storage.log`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..ovsdb.datum import is_uuid_string
from ..ovsdb.errors import OvsdbError
from .log import MAGIC_CLUSTERED, LogWriter, read_file, write_new_file


def _err(details: str) -> OvsdbError:
    return OvsdbError("syntax error", details)


@dataclass
class Header:
    server_id: str
    name: str
    local_address: str
    cluster_id: str | None = None
    remote_addresses: list[str] | None = None  # set while joining
    prev_index: int = 0
    prev_term: int = 0
    prev_eid: str | None = None
    prev_servers: dict[str, str] = field(default_factory=dict)
    prev_data: Any = None
    prev_election_timer: int | None = None

    @property
    def joining(self) -> bool:
        return self.remote_addresses is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"server_id": self.server_id, "name": self.name,
                               "local_address": self.local_address}
        if self.cluster_id is not None:
            out["cluster_id"] = self.cluster_id
        if self.remote_addresses is not None:
            out["remote_addresses"] = list(self.remote_addresses)
            return out
        out["prev_servers"] = dict(self.prev_servers)
        if self.prev_index:
            out["prev_index"] = self.prev_index
            out["prev_term"] = self.prev_term
            out["prev_eid"] = self.prev_eid
            out["prev_data"] = self.prev_data
        if self.prev_election_timer is not None:
            out["prev_election_timer"] = self.prev_election_timer
        return out

    @classmethod
    def from_json(cls, j: Any) -> Header:
        if not isinstance(j, dict):
            raise _err("raft header is not a JSON object")
        for key in ("server_id", "name", "local_address"):
            if not isinstance(j.get(key), str):
                raise _err(f"raft header: missing or bad \"{key}\"")
        if not is_uuid_string(j["server_id"]):
            raise _err("raft header: bad server_id")
        h = cls(j["server_id"], j["name"], j["local_address"])
        cid = j.get("cluster_id")
        if cid is not None:
            if not is_uuid_string(cid):
                raise _err("raft header: bad cluster_id")
            h.cluster_id = cid
        if "remote_addresses" in j:
            ra = j["remote_addresses"]
            if not isinstance(ra, list) or not all(isinstance(a, str) for a in ra):
                raise _err("raft header: remote_addresses must be an array of strings")
            h.remote_addresses = ra
            return h
        if h.cluster_id is None:
            raise _err("raft header: missing cluster_id")
        servers = j.get("prev_servers")
        if not isinstance(servers, dict):
            raise _err("raft header: missing prev_servers")
        h.prev_servers = _servers(servers)
        if j.get("prev_index"):
            h.prev_index = _uint(j, "prev_index")
            h.prev_term = _uint(j, "prev_term")
            eid = j.get("prev_eid")
            if not is_uuid_string(eid):
                raise _err("raft header: bad prev_eid")
            h.prev_eid = eid
            if "prev_data" not in j:
                raise _err("raft header: missing prev_data")
            h.prev_data = j["prev_data"]
        if "prev_election_timer" in j:
            h.prev_election_timer = _uint(j, "prev_election_timer")
        return h


def _uint(j: dict[str, Any], key: str) -> int:
    v = j.get(key)
    if type(v) is not int:
        raise _err(f'"{key}" must be an integer')
    return v if v >= 0 else v + 2**64


def _servers(j: Any) -> dict[str, str]:
    if not isinstance(j, dict) or not all(
            is_uuid_string(k) and isinstance(v, str) for k, v in j.items()):
        raise _err("servers must be an object from server ids to addresses")
    return dict(j)


@dataclass
class Entry:
    term: int
    data: Any = None
    eid: str | None = None
    servers: dict[str, str] | None = None
    election_timer: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"term": self.term}
        if self.servers is not None:
            out["servers"] = dict(self.servers)
        if self.election_timer is not None:
            out["election_timer"] = self.election_timer
        if self.eid is not None:
            out["eid"] = self.eid
            out["data"] = self.data
        return out

    @classmethod
    def from_json(cls, j: dict[str, Any]) -> Entry:
        e = cls(_uint(j, "term"))
        if "servers" in j:
            e.servers = _servers(j["servers"])
        if "election_timer" in j:
            e.election_timer = _uint(j, "election_timer")
        if ("eid" in j) != ("data" in j):
            raise _err("entry must have both eid and data, or neither")
        if "eid" in j:
            if not is_uuid_string(j["eid"]):
                raise _err("entry: bad eid")
            e.eid = j["eid"]
            e.data = j["data"]
        return e


@dataclass
class RaftState:
    """The persistent state a clustered file holds, after replaying its records."""

    header: Header
    term: int = 0
    vote: str | None = None
    entries: list[Entry] = field(default_factory=list)  # index header.prev_index + 1 + i
    commit_index: int = 0
    leaders: dict[int, str] = field(default_factory=dict)
    left: bool = False

    @property
    def log_start(self) -> int:
        return self.header.prev_index + 1

    @property
    def log_end(self) -> int:
        return self.log_start + len(self.entries)

    def apply(self, rec: Any) -> None:
        """Replay one record, with the real server's consistency checks."""
        if not isinstance(rec, dict):
            raise _err("raft record is not a JSON object")
        if "note" in rec:
            if rec["note"] == "left":
                self.left = True
            return
        if "commit_index" in rec:
            ci = _uint(rec, "commit_index")
            if ci < self.commit_index:
                raise _err(f"commit index {ci} is less than previous commit index "
                           f"{self.commit_index}")
            self.commit_index = ci
            return
        term = _uint(rec, "term")
        if term < self.term:
            raise _err(f"record {rec} has term {term}, less than current term {self.term}")
        if term > self.term:
            self.term = term
            self.vote = None
        if "leader" in rec:
            leader = rec["leader"]
            if not is_uuid_string(leader):
                raise _err("bad leader")
            prev = self.leaders.get(term)
            if prev is not None and prev != leader:
                raise _err(f"term {term} has two leaders {prev} and {leader}")
            self.leaders[term] = leader
            return
        if "vote" in rec:
            vote = rec["vote"]
            if not is_uuid_string(vote):
                raise _err("bad vote")
            if self.vote is not None and self.vote != vote:
                raise _err(f"term {term} has two votes {self.vote} and {vote}")
            self.vote = vote
            return
        if "index" in rec:
            index = _uint(rec, "index")
            if index > self.log_end:
                raise _err(f"entry index {index} skips past end of log {self.log_end}")
            if index < self.log_start:
                raise _err(f"entry index {index} is before start of log {self.log_start}")
            if index < self.log_end:
                if index <= self.commit_index:
                    raise _err(f"entry index {index} would truncate committed entries "
                               f"(commit index {self.commit_index})")
                del self.entries[index - self.log_start:]
            entry = Entry.from_json(rec)
            if self.entries and entry.term < self.entries[-1].term:
                raise _err(f"entry {index} term {entry.term} is less than the previous "
                           f"entry's term")
            self.entries.append(entry)

    def servers(self) -> dict[str, str]:
        """The newest configuration in the log (in effect as soon as appended)."""
        for e in reversed(self.entries):
            if e.servers is not None:
                return e.servers
        return self.header.prev_servers

    def election_timer(self) -> int:
        for e in reversed(self.entries):
            if e.election_timer is not None:
                return e.election_timer
        return self.header.prev_election_timer or 1000

    def entry(self, index: int) -> Entry | None:
        i = index - self.log_start
        return self.entries[i] if 0 <= i < len(self.entries) else None

    def term_at(self, index: int) -> int:
        if index == self.header.prev_index:
            return self.header.prev_term
        e = self.entry(index)
        return e.term if e is not None else 0


def read_state(path: str) -> tuple[RaftState, str | None]:
    """Replay a clustered file: its state, and the problem that ended the read early."""
    res = read_file(path, MAGIC_CLUSTERED)
    if res.magic is not None and res.magic != MAGIC_CLUSTERED:
        raise OvsdbError("syntax error", f"{path}: not a clustered database")
    if not res.records:
        raise OvsdbError("syntax error", f"{path}: {res.error or 'empty file'}")
    state = RaftState(Header.from_json(res.records[0]))
    for i, rec in enumerate(res.records[1:], start=2):
        try:
            state.apply(rec)
        except OvsdbError as e:
            raise OvsdbError(e.tag, f"{path}: record {i}: {e.details}") from None
    return state, res.error


class ClusteredLog:
    """An open clustered file: records are appended, snapshots replace the file."""

    def __init__(self, path: str, state: RaftState, end_offset: int) -> None:
        self.path = path
        self.state = state
        self.writer = LogWriter(path, end_offset, MAGIC_CLUSTERED)

    @classmethod
    def open(cls, path: str) -> tuple[ClusteredLog, str | None]:
        state, problem = read_state(path)
        res = read_file(path, MAGIC_CLUSTERED)
        return cls(path, state, res.end), problem

    def append(self, records: list[dict[str, Any]], sync: bool = True) -> None:
        """Write records, keeping the replayed state in step; fsync unless told not to."""
        from .log import frame

        for rec in records:
            self.state.apply(rec)
        self.writer.append_framed(b"".join(frame(r, MAGIC_CLUSTERED) for r in records))
        if sync:
            self.writer.sync()

    def replace(self, header: Header, records: list[dict[str, Any]]) -> None:
        """Snapshot: a new header and the records still needed, atomically."""
        state = RaftState(header)
        for rec in records:
            state.apply(rec)
        self.writer.replace([header.to_json(), *records])
        self.state = state

    @property
    def size(self) -> int:
        return self.writer.offset

    def close(self) -> None:
        self.writer.close()


def create(path: str, header: Header, records: list[dict[str, Any]] | None = None) -> None:
    write_new_file(path, [header.to_json(), *(records or [])], MAGIC_CLUSTERED)


def is_clustered(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(14) == b"OVSDB CLUSTER "
    except OSError:
        return False


def exists(path: str) -> bool:
    return os.path.exists(path)


def schema_for_cluster(schema_json: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The schema as a cluster stores it: clusters have no ephemeral columns, so they are
    made persistent (the real tool warns about it). Returns (schema, changed columns)."""
    import copy

    out = copy.deepcopy(schema_json)
    changed = []
    for tname, t in out.get("tables", {}).items():
        for cname, c in t.get("columns", {}).items():
            if isinstance(c, dict) and c.pop("ephemeral", False):
                changed.append(f"{tname}.{cname}")
    return out, changed


def build_database(state: RaftState, upto: int | None = None) -> Any:
    """The database a clustered file describes: its snapshot plus the data of the
    entries up to `upto` (default: the commit index)."""
    from ..ovsdb.changeset import Changeset
    from ..ovsdb.database import Database
    from ..ovsdb.schema import DatabaseSchema

    h = state.header
    if h.prev_data is None:
        raise OvsdbError("syntax error", "database has no snapshot yet (not joined)")
    schema_json, data = h.prev_data
    db = Database(DatabaseSchema.from_json(schema_json))
    db.schema.json = schema_json
    if data:
        db.apply(Changeset.from_record(db.schema, data, _rows_of(db)))
    last = state.commit_index if upto is None else upto
    for index in range(state.log_start, min(last, state.log_end - 1) + 1):
        e = state.entry(index)
        if e is None or e.data is None:
            continue
        new_schema, txn = e.data
        if new_schema is not None:
            db = Database(DatabaseSchema.from_json(new_schema))
            db.schema.json = new_schema
        if txn is not None:
            db.apply(Changeset.from_record(db.schema, txn, _rows_of(db)))
    return db


def _rows_of(db: Any) -> Any:
    return lambda t: db.tables[t].rows
