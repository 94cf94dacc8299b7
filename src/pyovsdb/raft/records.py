"""What a Raft server keeps on disk, in OVS's clustered-file forms (`raft_header_*`,
`raft_record_*` in `ovsdb/raft-private.c`): the header with its snapshot, and the
records that follow it (term, vote, entry, commit index, leader, note).

Rules kept here:
- `to_json()` gives exactly the JSON object OVS writes for a record, and
  `record_from_json()` parses one with OVS's precedence (note, then commit_index, then
  term with leader, vote or index, else a bare term) and strictness.
- The core hands records out in the order they must reach the disk, each with a
  `ticket`; the host reports durability by ticket (`RaftCore.persisted`), always a
  prefix. A `SnapshotRecord` is not a record in the file: it asks the host to replace
  the whole file with a new header plus `file_records()` (compaction, or a snapshot
  installed from the leader), as `raft_save_snapshot` does.
- Record framing (the `OVSDB CLUSTER <len> <sha1>` lines), file locking and fsync
  belong to `storage/`; this module does no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .rpc import Entry, RpcError, _Parser, _u64_to_json, parse_servers, validate_address

__all__ = [
    "CommitIndexRecord",
    "EntryRecord",
    "Header",
    "LeaderRecord",
    "NoteRecord",
    "Record",
    "RpcError",
    "Snapshot",
    "SnapshotRecord",
    "TermRecord",
    "VoteRecord",
    "record_from_json",
]


@dataclass(slots=True)
class Snapshot:
    """The state as of log index `index` (the header's `prev_*` members): everything
    up to it is folded into `data`; `eid` is the id of its newest data entry, and
    `servers`/`election_timer` the configuration in force there (0: not recorded,
    which means the default)."""

    index: int
    term: int
    data: Any
    eid: str | None
    servers: dict[str, str]
    election_timer: int = 0


@dataclass(slots=True, kw_only=True)
class Header:
    """The first record of a clustered database file. A server that has not joined
    yet has `remote_addresses` and no snapshot."""

    sid: str
    name: str
    local_address: str
    cid: str | None = None
    snapshot: Snapshot | None = None
    remote_addresses: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"server_id": self.sid}
        if self.cid is not None:
            out["cluster_id"] = self.cid
        out["local_address"] = self.local_address
        out["name"] = self.name
        if self.remote_addresses:
            out["remote_addresses"] = list(self.remote_addresses)
        snap = self.snapshot
        if snap is not None:
            out["prev_servers"] = dict(snap.servers)
            if snap.index:
                out["prev_index"] = _u64_to_json(snap.index)
                out["prev_term"] = _u64_to_json(snap.term)
                if snap.data is not None:
                    out["prev_data"] = snap.data
                out["prev_eid"] = snap.eid
                if snap.election_timer:
                    out["prev_election_timer"] = _u64_to_json(snap.election_timer)
        return out

    @classmethod
    def from_json(cls, obj: object) -> Header:
        p = _Parser(obj, "raft header")
        sid = p.uuid("server_id")
        name = p.string("name")
        local_address = p.string("local_address")
        remotes = p.member("remote_addresses", (list,), optional=True)
        snapshot = None
        if remotes is not None:
            if not remotes:
                raise p.error("at least one remote address is required")
            for a in remotes:
                err = validate_address(a)
                if err:
                    raise p.error(err)
            remotes = [a for a in dict.fromkeys(remotes) if a != local_address]
            if not remotes:
                raise p.error("at least one remote address (other than the local "
                              "address) is required")
        else:
            servers = parse_servers(p.member("prev_servers", (dict,), optional=False))
            index = p.uint64("prev_index", optional=True)
            if index:
                if "prev_data" not in p.obj:
                    raise p.error("Required 'prev_data' member is missing.")
                p.used.add("prev_data")
                eid = p.uuid("prev_eid")
                term = p.uint64("prev_term")
                timer = p.uint64("prev_election_timer", optional=True)
                snapshot = Snapshot(index, term, p.obj["prev_data"], eid, servers, timer)
            else:
                snapshot = Snapshot(0, 0, None, None, servers)
        cid = p.uuid("cluster_id", optional=remotes is not None)
        p.finish()
        assert sid is not None and name is not None and local_address is not None
        return cls(sid=sid, name=name, local_address=local_address, cid=cid,
                   snapshot=snapshot, remote_addresses=remotes)


@dataclass(slots=True, kw_only=True)
class Record:
    """A record to write after the header. `ticket` orders it for `persisted()`."""

    ticket: int = field(default=0, compare=False)

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(slots=True, kw_only=True)
class TermRecord(Record):
    term: int

    def to_json(self) -> dict[str, Any]:
        return {"term": _u64_to_json(self.term)}


@dataclass(slots=True, kw_only=True)
class VoteRecord(Record):
    term: int
    vote: str

    def to_json(self) -> dict[str, Any]:
        return {"term": _u64_to_json(self.term), "vote": self.vote}


@dataclass(slots=True, kw_only=True)
class EntryRecord(Record):
    """Entry `index`; an index below the current log end truncates the log there on
    replay (that is how OVS records a truncation: by appending)."""

    index: int
    entry: Entry
    comment: str | None = None

    def to_json(self) -> dict[str, Any]:
        e = self.entry
        out: dict[str, Any] = {}
        if self.comment:
            out["comment"] = self.comment
        out["term"] = _u64_to_json(e.term)
        out["index"] = _u64_to_json(self.index)
        if e.data is not None:
            out["data"] = e.data
        if e.servers is not None:
            out["servers"] = dict(e.servers)
        if e.election_timer:
            out["election_timer"] = _u64_to_json(e.election_timer)
        if e.eid is not None:
            out["eid"] = e.eid
        return out


@dataclass(slots=True, kw_only=True)
class CommitIndexRecord(Record):
    commit_index: int

    def to_json(self) -> dict[str, Any]:
        return {"commit_index": _u64_to_json(self.commit_index)}


@dataclass(slots=True, kw_only=True)
class LeaderRecord(Record):
    """Informational: lets `ovsdb-tool check-cluster` verify election safety."""

    term: int
    leader: str

    def to_json(self) -> dict[str, Any]:
        return {"term": _u64_to_json(self.term), "leader": self.leader}


@dataclass(slots=True, kw_only=True)
class NoteRecord(Record):
    """`note` is "transfer leadership" or "left" (a server that left never restarts)."""

    note: str
    comment: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.comment:
            out["comment"] = self.comment
        out["note"] = self.note
        return out


@dataclass(slots=True, kw_only=True)
class SnapshotRecord(Record):
    """Replace the file: header with `snapshot`, then `file_records()`.

    `installed` tells a snapshot received from the leader (the whole log was
    discarded) from a local compaction (`entries` are the ones kept after it)."""

    snapshot: Snapshot
    entries: list[tuple[int, Entry]]
    term: int
    vote: str | None
    commit_index: int
    installed: bool

    def file_records(self) -> list[Record]:
        """The records after the header, as `raft_write_snapshot` writes them."""
        out: list[Record] = [EntryRecord(index=i, entry=e) for i, e in self.entries]
        if self.vote is not None:
            out.append(VoteRecord(term=self.term, vote=self.vote))
        else:
            out.append(TermRecord(term=self.term))
        if self.commit_index > self.snapshot.index:
            out.append(CommitIndexRecord(commit_index=self.commit_index))
        return out

    def to_json(self) -> dict[str, Any]:
        raise TypeError("a SnapshotRecord replaces the file; write its header and "
                        "file_records() instead")


def record_from_json(obj: object) -> Record:
    """Parse one record after the header (`raft_record_from_json`)."""
    p = _Parser(obj, "raft log record")
    comment = p.string("comment", optional=True)
    note = p.string("note", optional=True)
    if note is not None:
        p.finish()
        return NoteRecord(note=note, comment=comment)
    commit_index = p.uint64("commit_index", optional=True)
    if commit_index:
        p.finish()
        return CommitIndexRecord(commit_index=commit_index)
    term = p.uint64("term")
    leader = p.uuid("leader", optional=True)
    if leader is not None:
        if leader == "00000000-0000-0000-0000-000000000000":
            raise p.error("record says leader is all-zeros SID")
        p.finish()
        return LeaderRecord(term=term, leader=leader)
    vote = p.uuid("vote", optional=True)
    if vote is not None:
        if vote == "00000000-0000-0000-0000-000000000000":
            raise p.error("record votes for all-zeros SID")
        p.finish()
        return VoteRecord(term=term, vote=vote)
    index = p.uint64("index", optional=True)
    if not index:
        p.finish()
        return TermRecord(term=term)
    servers_json = p.member("servers", (dict,), optional=True)
    servers = parse_servers(servers_json) if servers_json is not None else None
    election_timer = p.uint64("election_timer", optional=True)
    data = p.json("data", optional=True)
    eid = p.uuid("eid") if data is not None else None
    p.finish()
    return EntryRecord(index=index, entry=Entry(term, data, eid, servers, election_timer),
                       comment=comment)

