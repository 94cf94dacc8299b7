"""Raft consensus for one server, as a pure state machine with OVS 3.1's semantics
(`ovsdb/raft.c`) and an etcd-io/raft-style interface.

Inputs: `step(msg)` (a parsed RPC from `rpc`), `tick(now)`, `propose_command()` /
`propose()`, `change_election_timer()`, `transfer_leadership()`, `leave()`,
`store_snapshot()`, `persisted(ticket)`, and the connection hints `on_connected()` /
`on_disconnected()`. Outputs are drained with `ready()`: messages to send, records to
write, committed entries to apply, finished commands, a snapshot request.

Rules kept here:
- No I/O of its own: no sockets, files, clock, threads or global randomness. Time only
  moves when a caller passes `now` (ms); randomness (election jitter, entry ids) comes
  from the injected generator (`Rng`: a `random.Random` or `util.prng.SplitMix64`,
  seeded 0 when none is given). Same inputs, same outputs.
- Durability before speech. Records come out in the order they must reach the disk,
  each with a ticket; `persisted(t)` says all records up to `t` are durable. A message
  that mentions a term, a vote or log entries is held back until they are durable
  (OVS's `raft_is_rpc_synced`): append replies until `log_end - 1`, vote requests
  until `last_log_index`, vote replies until the vote, snapshot messages until
  `last_index`. Append requests are the exception, as in OVS and the thesis (10.2.1):
  the leader sends entries while writing them, and counts itself in the majority only
  once its own write is durable.
- Commit needs a majority of the current configuration with an entry of the current
  term (Figure 3.7). Configurations take effect when appended, not when committed, one
  server at a time, and a leader changes membership only after it has committed an
  entry of its own term (the fix for the single-server-change bug).
- Seed 003: when the leader's commit index advances it sends a heartbeat at once, so
  followers learn the commit within one message delay, and any broadcast of entries
  re-arms the heartbeat timer. The review of that patch saw CPU blow up, so the
  commit heartbeats are coalesced (at most one per follower per `ready()` batch, none
  to a follower that already got the new `leader_commit` in that batch) and do not
  repeat the "operation still in progress" pings, which would cost one message per
  pending command per commit. `sync_commit=False` restores the old behaviour
  (commits reach followers with the next periodic heartbeat). With
  `commit_sync_delay` (ms, 0 by default) only the followers waiting on the commit (the
  requesters of forwarded commands committed in the batch: the seed's case) get their
  heartbeat at once; the others get theirs that much later unless an append request
  (which carries the commit index) reaches them first, so a steady stream of
  transactions pays for no commit heartbeats at all.
- Every timer that fires is re-armed: after `tick(now)`, `next_deadline()` is in the
  future or None, so a host loop can never spin on a deadline in the past.
- The core knows nothing of OVSDB: entry data is opaque JSON (`[schema, txn]` for
  OVSDB), and it does not parse or frame JSON text.

Where it departs from OVS 3.1 (same wire and file forms; each found by the simulator
or by reading raft.c, and each commented where it happens): a deposed leader does not
fail its pending commands; duplicate `execute_command_request`s run once; removal is
reported done only once committed, and a follower may report a committed removal;
a joiner counts as joined once its addition commits and never stands for election; a
leaving server may still be elected, and then removes itself; disruptive vote
requests are dropped rather than answered; a truncation lowers the synced index; a
snapshot whose last entry conflicts with our log replaces it (OVS loops); a heartbeat
to a server receiving a snapshot probes from the snapshot's index; catch-up servers
get heartbeats, and a lost snapshot is resent after two election timers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..util.prng import SplitMix64
from .records import (
    CommitIndexRecord,
    EntryRecord,
    LeaderRecord,
    NoteRecord,
    Record,
    Snapshot,
    SnapshotRecord,
    TermRecord,
    VoteRecord,
)
from .rpc import (
    AddServerReply,
    AddServerRequest,
    AppendReply,
    AppendRequest,
    BecomeLeader,
    Entry,
    ExecuteCommandReply,
    ExecuteCommandRequest,
    HelloRequest,
    InstallSnapshotReply,
    InstallSnapshotRequest,
    RaftRpc,
    RemoveServerReply,
    RemoveServerRequest,
    VoteReply,
    VoteRequest,
)

__all__ = [
    "CANDIDATE",
    "FOLLOWER",
    "LEADER",
    "Command",
    "Committed",
    "RaftConfig",
    "RaftCore",
    "RaftError",
    "Ready",
    "Server",
    "initial_snapshot",
]

ELECTION_BASE_MSEC = 1000
ELECTION_RANGE_MSEC = 1000
ELECTION_MIN_MSEC = 100
ELECTION_MAX_MSEC = 600000
JOIN_RETRY_MSEC = 1000
# How long the leader keeps a turn for a server whose forwarded command lost a race
# (see `_owed`): enough to learn the commit, apply it and execute again.
TURN_MSEC = 50
# Races a server loses in a row before it is owed a turn: one lost race is normal
# under contention and costs a retry; only a server that keeps losing needs the
# others held for it (holding has a price when it does not come back).
LOSSES_BEFORE_TURN = 3

FOLLOWER = "follower"
CANDIDATE = "candidate"
LEADER = "leader"

# Phases of a server in the leader's view (`raft_server_phase_to_string`).
STABLE = "stable"
CATCHUP = "adding: catchup"
CAUGHT_UP = "adding: caught up"
COMMITTING = "adding: committing"
REMOVE = "removing"

# Command statuses, as on the wire (`execute_command_reply.status`).
INCOMPLETE = "operation still in progress"
SUCCESS = "success"
NOT_LEADER = "not leader"
BAD_PREREQ = "prerequisite check failed"
LOST_LEADERSHIP = "lost leadership"
SHUTDOWN = "server shutdown"
TIMEOUT = "timeout"

# add/remove server comments (`raft-rpc.h`).
SERVER_NOT_LEADER = "not leader"
SERVER_ALREADY_PRESENT = "already in cluster"
SERVER_ALREADY_GONE = "already not in cluster"
SERVER_IN_PROGRESS = "in progress"
SERVER_LOST_LEADERSHIP = "lost leadership"
SERVER_CANCELED = "canceled"
SERVER_COMMITTING = "committing"
SERVER_EMPTY = "empty"
SERVER_COMPLETED = "completed"


class RaftError(Exception):
    """A request the core refuses (wrong role, bad argument, corrupt log on restore)."""


@dataclass(slots=True)
class RaftConfig:
    """Tunables. `election_timer` is only the starting value: the log and snapshot
    override it (it is cluster state, changed with `change_election_timer`)."""

    election_timer: int = ELECTION_BASE_MSEC
    election_range: int = ELECTION_RANGE_MSEC
    sync_commit: bool = True
    # ms a commit heartbeat may wait for a follower that is not waiting on the commit
    # (see the module docstring); 0 sends it at once, as seed 003 does.
    commit_sync_delay: int = 0
    suppress_disruptive: bool = True
    max_append_entries: int | None = None
    snapshot_threshold: int | None = None


@dataclass(slots=True, eq=False)
class Server:
    """A configured server, or one being added, in this server's view. The leader-only
    members are reset whenever this server becomes leader."""

    sid: str
    address: str
    phase: str = STABLE
    next_index: int = 0
    match_index: int = 0
    replied: bool = False
    vote: str | None = None
    snapshot_sent_at: int | None = None
    requester: str | None = None


@dataclass(slots=True, eq=False)
class Command:
    """A request to append a data entry (`struct raft_command`). `status` becomes
    final once; `index` is then the log index where it committed (SUCCESS only)."""

    eid: str | None
    status: str = INCOMPLETE
    index: int = 0
    timestamp: int = 0
    requester: str | None = None   # the follower that forwarded it to us (leader side)
    local: bool = True             # proposed through this core's API
    initiated_as_leader: bool = False

    @property
    def done(self) -> bool:
        return self.status != INCOMPLETE


@dataclass(slots=True)
class Committed:
    """An entry to apply, in order; or, with `is_snapshot`, the snapshot to load in
    place of everything before `index + 1` (`raft_next_entry`)."""

    index: int
    term: int
    data: Any
    eid: str | None
    servers: dict[str, str] | None = None
    election_timer: int = 0
    is_snapshot: bool = False


@dataclass(slots=True)
class Ready:
    """What the host must do after an input. Messages are already cleared for
    sending; records must be written in order, then acknowledged with `persisted()`."""

    messages: list[RaftRpc] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    committed: list[Committed] = field(default_factory=list)
    completed: list[Command] = field(default_factory=list)
    snapshot_request: bool = False
    # Indexes of the entries this server appended as leader (each also in `records`):
    # where the real server's fault injection places its append-request crashes.
    initiated: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.messages or self.records or self.committed or self.completed
                    or self.snapshot_request)


def initial_snapshot(sid: str, address: str, data: Any, eid: str,
                     election_timer: int = 0) -> Snapshot:
    """The virtual entry 1 of a new cluster (`ovsdb-tool create-cluster`)."""
    return Snapshot(1, 1, data, eid, {sid: address}, election_timer)


class Rng(Protocol):
    """The generator a core draws from (what it uses of `random.Random`)."""

    def getrandbits(self, k: int, /) -> int: ...

    def randrange(self, start: int, /) -> int: ...


def new_uuid(rng: Rng) -> str:
    h = f"{(rng.getrandbits(128) & ~(0xF << 76) & ~(0x3 << 62)) | (0x4 << 76) | (0x2 << 62):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class RaftCore:
    """One Raft server. Build it with `restore()` (a member, from its file),
    `join()` (a new server) or `create()` (first server of a new cluster)."""

    def __init__(self, sid: str, local_address: str, *, cid: str | None = None,
                 config: RaftConfig | None = None, rng: Rng | None = None,
                 now: int = 0, logger: Callable[[str], None] | None = None) -> None:
        self.sid = sid.lower()
        self.cid = cid.lower() if cid else None
        self.local_address = local_address
        self.config = config or RaftConfig()
        self.rng: Rng = rng if rng is not None else SplitMix64(0)
        self.now = now
        self._logger = logger
        self.election_delay = False

        self.servers: dict[str, Server] = {}
        self.election_timer = self.config.election_timer
        self.election_timer_new = 0

        self.term = 0
        self.vote: str | None = None
        self.synced_term = 0
        self.synced_vote: str | None = None

        self.snap = Snapshot(0, 0, None, None, {})
        self.entries: list[Entry] = []
        self.log_start = 1
        self.log_synced = 0

        self.role = FOLLOWER
        self.commit_index = 0
        self.last_applied = 0
        self.leader_sid: str | None = None

        self.election_base = now
        self.election_timeout = now
        self.ping_timeout = now
        self.command_check = now    # when pending commands are next checked for timeout

        self.joining = False
        self.remote_addresses: list[str] = []
        self.join_timeout = now
        self.leaving = False
        self.left = False
        self.leave_timeout = now
        self.failed = False

        self.add_servers: dict[str, Server] = {}
        self.remove_server: Server | None = None
        self.commands: dict[str, Command] = {}
        self.n_votes = 0
        self.candidate_retrying = False
        self.had_leader = False
        self.ever_had_leader = False
        # For cluster/status only: when this server last started an election (and
        # why) and last won one, in `now` ms; None if never.
        self.election_start: int | None = None
        self.elections = 0  # elections this server started (metrics)
        self.election_won: int | None = None
        self.leadership_transfer = False
        self.connected: dict[str, bool] = {}

        # Outputs and durability bookkeeping.
        self._messages: list[RaftRpc] = []
        self._records: list[Record] = []
        self._committed: list[Committed] = []
        self._completed: list[Command] = []
        self._initiated: list[int] = []
        self._snapshot_request = False
        self._snapshot_requested = False
        self._ticket = 0
        self._acked = 0
        self._unacked: deque[Record] = deque()
        self._stale: set[int] = set()       # tickets of entry records since truncated
        self._deferred: deque[tuple[int, RaftRpc]] = deque()
        self._commit_sync_pending = False
        self._pending_appends: dict[str, int] = {}   # sid -> first entry not yet sent
        self._commit_waiters: set[str] = set()  # requesters of commands just committed
        self._told_commit: dict[str, int] = {}  # sid -> leader_commit last sent to it
        self._commit_sync_at: int | None = None  # when deferred commit heartbeats go
        # Forwarded commands held back while the host's own transactions wait for
        # their turn (`hold_forwarded`).
        self.hold_forwarded = False
        self._held: list[ExecuteCommandRequest] = []
        # Servers whose forwarded commands failed their prerequisite
        # LOSSES_BEFORE_TURN times in a row, with the deadline of the turn they are
        # owed: until they come back (or the turn expires), other
        # servers' commands are held. Without it, under a steady load the servers
        # that learn commits last lose every race and their transactions starve.
        self._owed: dict[str, int] = {}
        self._losses: dict[str, int] = {}   # sid -> races lost in a row
        self._sent_commit: dict[str, int] = {}
        self.stats = {"dropped": 0, "deferred": 0, "heartbeats": 0, "commit_heartbeats": 0}

    # ------------------------------------------------------------------ construction

    @classmethod
    def create(cls, sid: str, local_address: str, cid: str, snapshot: Snapshot,
               **kwargs: Any) -> RaftCore:
        """The first server of a new cluster: `snapshot` is `initial_snapshot(...)`."""
        return cls.restore(sid, local_address, cid, snapshot, (), **kwargs)

    @classmethod
    def restore(cls, sid: str, local_address: str, cid: str | None, snapshot: Snapshot,
                records: Iterable[Record], *, remote_addresses: list[str] | None = None,
                config: RaftConfig | None = None, rng: Rng | None = None,
                now: int = 0, logger: Callable[[str], None] | None = None) -> RaftCore:
        """A member restarting from its file: the header's snapshot and the records
        after it, replayed with OVS's checks (`raft_apply_record`); a bad record raises
        `RaftError`. Everything restored counts as durable.

        `remote_addresses` is for a server that had not finished joining when it
        stopped (it had installed a snapshot, so its file no longer says "joining"):
        it goes on asking to be added until its addition is known committed. Without
        it, a server missing from its own configuration is an error, as in OVS."""
        self = cls(sid, local_address, cid=cid, config=config, rng=rng, now=now,
                   logger=logger)
        self.snap = snapshot
        self.log_start = snapshot.index + 1
        self.log_synced = self.commit_index = snapshot.index
        self.last_applied = snapshot.index - 1
        for n, rec in enumerate(records, 1):
            self._replay(n, rec)
        self.synced_term, self.synced_vote = self.term, self.vote
        self._servers_from_log()
        self._election_timer_from_log()
        if (remote_addresses is not None
                and self.sid not in self._servers_for_index(self.commit_index)):
            self.joining = True
            self.remote_addresses = [a for a in dict.fromkeys(remote_addresses)
                                     if a != local_address]
            self._send_add_server_requests()
            self.join_timeout = now + JOIN_RETRY_MSEC
        elif self.sid not in self.servers:
            raise RaftError("server does not belong to cluster")
        self._reset_ping_timer()
        self._reset_election_timer()
        if len(self.servers) == 1:
            self._start_election(False)
        self._finish()
        return self

    @classmethod
    def join(cls, sid: str, local_address: str, remote_addresses: list[str], *,
             cid: str | None = None, config: RaftConfig | None = None,
             rng: Rng | None = None, now: int = 0,
             logger: Callable[[str], None] | None = None) -> RaftCore:
        """A new server that asks the cluster at `remote_addresses` to add it. It
        sends `add_server_request` to each address now and every second until a
        leader adds it, and learns the cluster id from the first message it gets."""
        self = cls(sid, local_address, cid=cid, config=config, rng=rng, now=now,
                   logger=logger)
        self.joining = True
        self.remote_addresses = [a for a in dict.fromkeys(remote_addresses)
                                 if a != local_address]
        self._send_add_server_requests()
        self.join_timeout = now + JOIN_RETRY_MSEC
        self._reset_ping_timer()
        self._reset_election_timer()
        self._finish()
        return self

    def _replay(self, n: int, rec: Record) -> None:
        term = getattr(rec, "term", 0)
        if isinstance(rec, EntryRecord):
            term = rec.entry.term
        if term > self.term:
            self.term, self.vote = term, None
        if isinstance(rec, EntryRecord):
            idx = rec.index
            if idx < self.commit_index:
                raise RaftError(f"record {n} attempts to truncate log from {self.log_end} "
                                f"to {idx} entries, but commit index is already "
                                f"{self.commit_index}")
            if idx > self.log_end:
                raise RaftError(f"record {n} with index {idx} skips past expected index "
                                f"{self.log_end}")
            if idx < self.log_start:
                raise RaftError(f"record {n} with index {idx} precedes the snapshot")
            del self.entries[idx - self.log_start:]
            if rec.entry.term < self._last_term():
                raise RaftError(f"record {n} with index {idx} term {rec.entry.term} "
                                f"precedes previous entry's term {self._last_term()}")
            self.entries.append(rec.entry)
            self.log_synced = idx
        elif isinstance(rec, VoteRecord):
            if rec.term < self.term:
                raise RaftError(f"record {n} votes for term {rec.term} but current term "
                                f"is {self.term}")
            if self.vote is not None and self.vote != rec.vote:
                raise RaftError(f"record {n} votes for {rec.vote} in term {rec.term} but "
                                f"a previous record for the same term voted for "
                                f"{self.vote}")
            self.vote = rec.vote
        elif isinstance(rec, NoteRecord):
            if rec.note == "left":
                raise RaftError(f"record {n} indicates server has left the cluster; it "
                                f"cannot be added back")
        elif isinstance(rec, CommitIndexRecord):
            if rec.commit_index < self.commit_index:
                raise RaftError(f"record {n} regresses commit index from "
                                f"{self.commit_index} to {rec.commit_index}")
            if rec.commit_index >= self.log_end:
                raise RaftError(f"record {n} advances commit index to {rec.commit_index} "
                                f"but last log index is {self.log_end - 1}")
            self.commit_index = rec.commit_index
        elif isinstance(rec, SnapshotRecord):
            raise RaftError(f"record {n}: a snapshot belongs in the header")

    # ------------------------------------------------------------------ log access

    @property
    def log_end(self) -> int:
        return self.log_start + len(self.entries)

    def entry(self, index: int) -> Entry:
        return self.entries[index - self.log_start]

    def term_at(self, index: int) -> int:
        if index == self.log_start - 1:
            return self.snap.term
        return self.entries[index - self.log_start].term

    def _last_term(self) -> int:
        return self.entries[-1].term if self.entries else self.snap.term

    def eid_at(self, index: int) -> str | None:
        """The eid of the newest data entry at or before `index` (`raft_get_eid`)."""
        for i in range(index - self.log_start, -1, -1):
            e = self.entries[i]
            if e.data is not None:
                return e.eid
        return self.snap.eid

    def _has_eid(self, eid: str, depth: int = 1000) -> bool:
        return any(e.eid == eid for e in self.entries[-depth:])

    @property
    def current_eid(self) -> str | None:
        """What a command's prerequisite must match on the leader."""
        return self.eid_at(self.log_end - 1)

    def _removal_committed(self, sid: str) -> bool:
        """Did a committed configuration drop `sid` after one that had it? (Absence
        alone proves nothing: the server may have been added after our commit
        index, and a joining server knows no configuration at all.)"""
        present = sid in self.snap.servers
        last = self.snap.servers
        for i in range(self.log_start, self.commit_index + 1):
            servers = self.entry(i).servers
            if servers is not None:
                present = present or sid in servers
                last = servers
        return present and sid not in last

    def _servers_for_index(self, index: int) -> dict[str, str]:
        servers = self.snap.servers
        for i in range(self.log_start, index + 1):
            s = self.entry(i).servers
            if s is not None:
                servers = s
        return servers

    @property
    def is_leader(self) -> bool:
        return self.role == LEADER

    @property
    def is_connected(self) -> bool:
        """OVS's `raft_is_connected`: worth talking to clients through."""
        return (not self.candidate_retrying and not self.joining and not self.leaving
                and not self.left and not self.failed and self.ever_had_leader)

    # ------------------------------------------------------------------ outputs

    def ready(self) -> Ready:
        """Drain everything produced since the last call.

        Commit heartbeats (seed 003) are made here, once per batch: a follower that
        was already sent the newest commit index in this batch gets none, so a host
        that handles a burst of input before calling `ready()` pays one heartbeat
        per follower for the whole burst."""
        if self._pending_appends:
            self._send_pending_appends()
        if self._commit_sync_pending:
            self._commit_sync_pending = False
            if self.role == LEADER:
                sent = deferred = False
                delay = self.config.commit_sync_delay
                for s in self.servers.values():
                    if (s.sid != self.sid
                            and self._sent_commit.get(s.sid, -1) < self.commit_index):
                        if (delay and s.sid not in self._commit_waiters
                                and s.sid not in self._owed):
                            deferred = True
                            continue
                        self._send_append_request(s, 0, "heartbeat")
                        sent = True
                if sent:
                    self.stats["commit_heartbeats"] += 1
                    self._reset_ping_timer()
                if deferred and self._commit_sync_at is None:
                    self._commit_sync_at = self.now + delay
        self._commit_waiters.clear()
        self._sent_commit.clear()
        rd = Ready(self._messages, self._records, self._committed, self._completed,
                   self._snapshot_request, self._initiated)
        self._messages, self._records, self._committed, self._completed = [], [], [], []
        self._initiated = []
        self._snapshot_request = False
        return rd

    def _send_pending_appends(self) -> None:
        """The entries `_initiate` appended since the last `ready()`, one request per
        follower from the first of them. A reply that moved `next_index` meanwhile
        (an inconsistency, or an earlier request answered) is taken as it is: whatever
        it leaves unsent is sent by the usual reply handling."""
        pending, self._pending_appends = self._pending_appends, {}
        if self.role != LEADER:
            return
        for sid, start in pending.items():
            s = self.servers.get(sid)
            if s is None or s.next_index <= start or start < self.log_start:
                continue
            end = s.next_index
            s.next_index = start
            n = end - start
            if self.config.max_append_entries is not None:
                n = min(n, self.config.max_append_entries)
            self._send_append_request(s, n, "execute command")
            s.next_index = start + n

    def has_ready(self) -> bool:
        return bool(self._pending_appends or self._commit_sync_pending or self._messages
                    or self._records
                    or self._committed or self._completed or self._snapshot_request)

    def next_deadline(self) -> int | None:
        """When `tick()` must next be called (ms), None if never."""
        if self.left or self.failed:
            return None
        d = self.join_timeout if self.joining else self.election_timeout
        if self.leaving:
            d = min(d, self.leave_timeout)
        if self.role == LEADER:
            d = min(d, self.ping_timeout)
        if self.commands:
            d = min(d, self.command_check)
        if self._commit_sync_at is not None:
            d = min(d, self._commit_sync_at)
        if self._owed:
            d = min(d, min(self._owed.values()))
        return d

    def _log(self, msg: str) -> None:
        if self._logger is not None:
            self._logger(f"{self.sid[:4]}: {msg}")

    def _persist(self, rec: Record) -> Record:
        self._ticket += 1
        rec.ticket = self._ticket
        self._records.append(rec)
        if isinstance(rec, (TermRecord, VoteRecord, EntryRecord, SnapshotRecord)):
            self._unacked.append(rec)
        return rec

    def _is_synced(self, msg: RaftRpc) -> bool:
        """OVS's `raft_is_rpc_synced`: has all the state `msg` mentions reached disk?"""
        if msg.rpc_term > self.synced_term:
            return False
        if isinstance(msg, AppendReply):
            index = msg.log_end - 1
        elif isinstance(msg, VoteRequest):
            index = msg.last_log_index
        elif isinstance(msg, (InstallSnapshotRequest, InstallSnapshotReply)):
            index = msg.last_index
        else:
            index = 0
        if index > self.log_synced:
            return False
        return not isinstance(msg, VoteReply) or msg.vote == self.synced_vote

    def _send(self, msg: RaftRpc) -> None:
        if msg.dst == self.sid:
            return
        msg.src = self.sid
        msg.cluster = self.cid
        if isinstance(msg, AppendRequest):
            assert msg.dst is not None
            self._sent_commit[msg.dst] = msg.leader_commit
            self._told_commit[msg.dst] = msg.leader_commit
        if self._is_synced(msg):
            self._messages.append(msg)
        else:
            self.stats["deferred"] += 1
            self._deferred.append((self._ticket, msg))

    def persisted(self, ticket: int, now: int | None = None) -> None:
        """Records up to `ticket` (inclusive) are durable."""
        self._advance(now)
        if ticket <= self._acked:
            return
        if ticket > self._ticket:
            raise RaftError(f"ticket {ticket} was never issued (last is {self._ticket})")
        self._acked = ticket
        while self._unacked and self._unacked[0].ticket <= ticket:
            rec = self._unacked.popleft()
            if isinstance(rec, VoteRecord):
                self.synced_term, self.synced_vote = rec.term, rec.vote
            elif isinstance(rec, TermRecord):
                self.synced_term, self.synced_vote = rec.term, None
            elif rec.ticket in self._stale:
                self._stale.discard(rec.ticket)
            elif isinstance(rec, EntryRecord):
                self._entry_synced(rec.index)
            elif isinstance(rec, SnapshotRecord):
                last = rec.entries[-1][0] if rec.entries else rec.snapshot.index
                self._entry_synced(last)
        while self._deferred and self._deferred[0][0] <= ticket:
            _, msg = self._deferred.popleft()
            if msg.rpc_term and msg.rpc_term < self.term:
                self.stats["dropped"] += 1      # for an expired term
            elif not self._is_synced(msg):
                self.stats["dropped"] += 1      # mentions entries since truncated
            else:
                self._messages.append(msg)
        self._finish()

    def _entry_synced(self, index: int) -> None:
        if index > self.log_synced:
            self.log_synced = index
            if self.role == LEADER:
                self._update_our_match_index(index)

    # ------------------------------------------------------------------ timers

    def _advance(self, now: int | None) -> None:
        if now is not None and now > self.now:
            self.now = now

    def _reset_election_timer(self) -> None:
        span = self.config.election_range
        duration = self.election_timer + (self.rng.randrange(span) if span > 0 else 0)
        if self.election_delay:
            duration += self.election_timer
        self.election_base = self.now
        self.election_timeout = self.now + duration

    def _reset_ping_timer(self) -> None:
        self.ping_timeout = self.now + self.election_timer // 3

    def tick(self, now: int) -> None:
        """Let time pass to `now` and fire whatever timers are due."""
        self._advance(now)
        if self.left or self.failed:
            return
        now = self.now
        if not self.joining and now >= self.election_timeout:
            if self.role == LEADER:
                # Check quorum (thesis 6.2): step down unless a majority answered
                # since the last timeout.
                count = sum(1 for s in self.servers.values() if s.replied)
                if count >= len(self.servers) // 2:
                    for s in self.servers.values():
                        s.replied = False
                    self._reset_election_timer()
                else:
                    self._log("lost contact with a majority, stepping down")
                    self._become_follower()
                    self._start_election(False)
            else:
                self._start_election(False)
            if self.election_timeout <= now:
                # No election was possible (not in the configuration): try again
                # later rather than leave a deadline in the past.
                self._reset_election_timer()
        if self.leaving and now >= self.leave_timeout:
            self._send_remove_server_requests()
        if self.joining and now >= self.join_timeout:
            self.join_timeout = now + JOIN_RETRY_MSEC
            self._send_add_server_requests()
        if self._commit_sync_at is not None and now >= self._commit_sync_at:
            self._commit_sync_at = None
            if self.role == LEADER:
                self._send_deferred_commit_heartbeats()
        if now >= self.ping_timeout:
            if self.role == LEADER:
                self._send_heartbeats(pings=True)
            self._reset_ping_timer()
        self._finish()

    # ------------------------------------------------------------------ terms and roles

    def _set_term(self, term: int, vote: str | None) -> None:
        self.term, self.vote = term, vote
        if vote is not None:
            self._persist(VoteRecord(term=term, vote=vote))
        else:
            self._persist(TermRecord(term=term))

    def _receive_term(self, term: int) -> bool:
        """Section 3.3: adopt a newer term (as follower); refuse an older one."""
        if term > self.term:
            self._set_term(term, None)
            self._become_follower()
        elif term < self.term:
            return False
        return True

    def _set_leader(self, sid: str) -> None:
        self.leader_sid = sid
        self.ever_had_leader = self.had_leader = True
        self.candidate_retrying = False

    def _become_follower(self) -> None:
        self.leader_sid = None
        self._pending_appends.clear()
        self._commit_sync_at = None
        self.hold_forwarded = False
        self._owed.clear()
        self._losses.clear()
        held, self._held = self._held, []
        for rq in held:
            self._send(ExecuteCommandReply(src=self.sid, dst=rq.src, result=rq.result,
                                           status=NOT_LEADER))
        if self.role == FOLLOWER:
            return
        was_leader = self.role == LEADER
        self.role = FOLLOWER
        self._reset_election_timer()
        if not was_leader:
            return
        for s in self.add_servers.values():
            self._send_add_server_reply(s.sid, False, SERVER_LOST_LEADERSHIP)
        self.add_servers = {}
        if self.remove_server is not None:
            rs = self.remove_server
            self._send_remove_server_reply(rs.sid, rs.requester, False,
                                           SERVER_LOST_LEADERSHIP)
            self.remove_server = None
        # Pending commands are not failed here: an entry we appended may still commit
        # under the next leader, and a false "lost leadership" makes clients retry
        # and commit twice. They complete when their entry commits, when it is
        # truncated away, or when they time out.

    def _start_election(self, leadership_transfer: bool) -> None:
        # A leaving server still stands for election while it is in the
        # configuration (as OVS does since 9d15da43b; 3.1 did not): it may hold the
        # only log that can win, and then it leads until it has removed itself.
        if self.sid not in self.servers or self.joining:
            return      # a joiner is no member until its addition has committed
        self._set_term(self.term + 1, self.sid)
        self.elections += 1
        self.election_start = self.now
        self.leadership_transfer = leadership_transfer
        self.role = CANDIDATE
        self.leader_sid = None
        self.candidate_retrying = not self.had_leader
        self.had_leader = False
        self.n_votes = 0
        self._log(f"term {self.term}: starting election")
        self._reset_election_timer()
        last_index, last_term = self.log_end - 1, self._last_term()
        for peer in self.servers.values():
            peer.vote = None
            if peer.sid != self.sid:
                self._send(VoteRequest(src=self.sid, dst=peer.sid, term=self.term,
                                       last_log_index=last_index, last_log_term=last_term,
                                       leadership_transfer=leadership_transfer))
        self._accept_vote(self.servers[self.sid], self.sid)

    def _accept_vote(self, s: Server, vote: str) -> None:
        if s.vote == vote:
            return
        s.vote = vote
        if vote == self.sid:
            self.n_votes += 1
            if self.n_votes > len(self.servers) // 2 and self.role == CANDIDATE:
                self._become_leader()

    def _server_init_leader(self, s: Server) -> None:
        s.next_index = self.log_end
        s.match_index = 0
        s.phase = STABLE
        s.replied = False
        s.snapshot_sent_at = None

    def _become_leader(self) -> None:
        self._log(f"term {self.term}: elected leader by {self.n_votes}+ of "
                  f"{len(self.servers)} servers")
        self.role = LEADER
        self.election_won = self.now
        self._told_commit.clear()
        self._set_leader(self.sid)
        self._reset_election_timer()
        self._reset_ping_timer()
        for s in self.servers.values():
            self._server_init_leader(s)
        self.add_servers = {}
        self.remove_server = None
        self.election_timer_new = 0
        self._persist(LeaderRecord(term=self.term, leader=self.sid))
        self._update_our_match_index(min(self.log_synced, self.log_end - 1))
        if self.leaving and len(self.servers) > 1:
            # Elected while leaving: finish by removing ourselves (thesis 4.2.2),
            # once the no-op below has committed.
            me = self.servers[self.sid]
            me.phase, me.requester = REMOVE, self.sid
        # Thesis 6.4: commit a no-op to learn what is committed. Its append request
        # reaches every follower at once, so it also serves as the first heartbeat.
        self._initiate(Entry(self.term))

    # ------------------------------------------------------------------ replication (leader)

    def _initiate(self, entry: Entry) -> int:
        """Append `entry` to our log and send it to every caught-up follower
        (`raft_command_initiate`)."""
        index = self.log_end
        self.entries.append(entry)
        self._persist(EntryRecord(index=index, entry=entry))
        self._initiated.append(index)
        for s in self.servers.values():
            if s.sid != self.sid and s.next_index == index:
                # Sent from `ready()`: the entries appended in one batch of input go
                # to each follower in one append request.
                self._pending_appends.setdefault(s.sid, index)
                s.next_index += 1
        if self.config.sync_commit:
            self._reset_ping_timer()
        return index

    def _send_append_request(self, s: Server, n: int, comment: str | None) -> None:
        next_index = s.next_index
        if next_index < self.log_start:
            if n or not self._snapshot_in_flight(s):
                self._send_install_snapshot_request(s, comment)
                return
            # A heartbeat while the snapshot travels: keeps the server from starting
            # elections, and probes from the snapshot's index, which is valid.
            next_index = self.log_start
        start = next_index - self.log_start
        if self.config.max_append_entries is not None:
            n = min(n, self.config.max_append_entries)
        prev = next_index - 1
        self._send(AppendRequest(src=self.sid, dst=s.sid, comment=comment, term=self.term,
                                 prev_log_index=prev, prev_log_term=self.term_at(prev),
                                 leader_commit=self.commit_index,
                                 log=self.entries[start:start + n]))

    def _send_heartbeats(self, pings: bool) -> None:
        for s in self.servers.values():
            if s.sid != self.sid:
                self._send_append_request(s, 0, "heartbeat")
        for s in self.add_servers.values():
            # OVS drives a catch-up only by replies, so one lost message leaves the
            # joiner stuck "in progress" for good; a heartbeat resumes it.
            self._send_append_request(s, 0, "heartbeat")
        self.stats["heartbeats"] += 1
        if pings:
            # Tell followers waiting on forwarded commands that we are still at it.
            for cmd in self.commands.values():
                if cmd.requester is not None and cmd.eid is not None:
                    self._send(ExecuteCommandReply(src=self.sid, dst=cmd.requester,
                                                   result=cmd.eid, status=INCOMPLETE))
        self._reset_ping_timer()

    def _send_deferred_commit_heartbeats(self) -> None:
        """The commit heartbeats `ready()` held back, to the followers that no append
        request has told the newest commit index since."""
        sent = False
        for s in self.servers.values():
            if (s.sid != self.sid
                    and self._told_commit.get(s.sid, -1) < self.commit_index):
                self._send_append_request(s, 0, "heartbeat")
                sent = True
        if sent:
            self.stats["commit_heartbeats"] += 1
            self._reset_ping_timer()

    def _snapshot_in_flight(self, s: Server) -> bool:
        return (s.snapshot_sent_at is not None
                and self.now - s.snapshot_sent_at < 2 * self.election_timer)

    def _send_install_snapshot_request(self, s: Server, comment: str | None) -> None:
        if self._snapshot_in_flight(s):
            return          # one snapshot in flight per server; resend if it got lost
        s.snapshot_sent_at = self.now
        snap = self.snap
        self._send(InstallSnapshotRequest(
            src=self.sid, dst=s.sid, comment=comment, term=self.term,
            last_index=snap.index, last_term=snap.term, last_eid=snap.eid or "",
            last_servers=dict(snap.servers), election_timer=self.election_timer,
            data=snap.data))

    def _update_match_index(self, s: Server, index: int) -> None:
        if index > s.match_index:
            s.match_index = index
            self._consider_updating_commit_index()

    def _update_our_match_index(self, index: int) -> None:
        me = self.servers.get(self.sid)
        if me is not None:
            self._update_match_index(me, index)

    def _consider_updating_commit_index(self) -> None:
        """Figure 3.1: commit the newest index held by a majority, if its entry is of
        the current term (entries of older terms commit along with it)."""
        if self.role != LEADER or not self.servers:
            return
        matches = sorted((s.match_index for s in self.servers.values()), reverse=True)
        n = matches[len(matches) // 2]
        if (n > self.commit_index and n >= self.log_start and n < self.log_end
                and self.term_at(n) == self.term
                and self._update_commit_index(n) and self.config.sync_commit):
            self._commit_sync_pending = True

    def _update_commit_index(self, new_commit: int) -> bool:
        if new_commit <= self.commit_index:
            return False
        old = self.commit_index
        self.commit_index = new_commit
        reconfigure = False
        for index in range(old + 1, new_commit + 1):
            e = self.entry(index)
            if e.data is not None and e.eid is not None:
                cmd = self.commands.get(e.eid)
                if cmd is not None:
                    cmd.index = index
                    self._complete(cmd, SUCCESS)
            if e.election_timer:
                self._log(f"election timer changed from {self.election_timer} to "
                          f"{e.election_timer}")
                self.election_timer = e.election_timer
                if self.role == LEADER:
                    self.election_timer_new = 0
            if e.servers is not None:
                reconfigure = True
                if self.joining and self.sid in e.servers:
                    self._joined()
        self._persist(CommitIndexRecord(commit_index=new_commit))
        if self.role == LEADER and (reconfigure or self._reconfiguration_pending()):
            self._run_reconfigure()
        return True

    def _reconfiguration_pending(self) -> bool:
        return (bool(self.add_servers) or self.remove_server is not None
                or any(s.phase != STABLE for s in self.servers.values()))

    # ------------------------------------------------------------------ inputs: messages

    def step(self, msg: RaftRpc, now: int | None = None) -> None:
        """Handle one received message (`raft_handle_rpc`)."""
        self._advance(now)
        if self.left or self.failed:
            return
        if msg.cluster is not None:
            if self.cid is None:
                self.cid = msg.cluster
                self._log(f"learned cluster ID {msg.cluster}")
            elif msg.cluster != self.cid:
                self.stats["dropped"] += 1
                return
        if msg.dst is not None and msg.dst != self.sid:
            self.stats["dropped"] += 1
            return
        term = msg.rpc_term
        if term:
            if self._suppress_disruptive(msg):
                self.stats["dropped"] += 1
                self._finish()
                return
            if not self._receive_term(term):
                if isinstance(msg, AppendRequest):
                    self._send_append_reply(msg, "inconsistency", "stale term")
                self._finish()
                return
        handler = self._HANDLERS.get(type(msg))
        if handler is not None:
            handler(self, msg)
        self._finish()

    def _suppress_disruptive(self, msg: RaftRpc) -> bool:
        """Thesis 4.2.3: ignore a vote request while we believe a leader is alive,
        unless the old leader asked for the election. The request is dropped, not
        answered (OVS 3.1 still answered it, which the fix c34c21bb0 undid)."""
        if (not isinstance(msg, VoteRequest) or msg.leadership_transfer
                or not self.config.suppress_disruptive):
            return False
        if self.role == LEADER:
            return True
        if self.role == FOLLOWER:
            return (self.leader_sid is not None
                    and self.now < self.election_base + self.election_timer)
        return False

    def _handle_hello_request(self, msg: HelloRequest) -> None:
        pass

    def _update_leader(self, sid: str) -> bool:
        if self.role == LEADER:
            self._log(f"this server is leader but server {sid} claims to be")
            return False
        if sid != self.leader_sid:
            self._set_leader(sid)
            self._persist(LeaderRecord(term=self.term, leader=sid))
        if self.role == CANDIDATE:
            self.role = FOLLOWER
        return True

    def _handle_append_request(self, rq: AppendRequest) -> None:
        if not self._update_leader(rq.src):
            self._send_append_reply(rq, "inconsistency", "usurped leadership")
            return
        self._reset_election_timer()
        n = len(rq.log)
        first = rq.prev_log_index + 1
        nth = rq.prev_log_index + n
        if first >= self.log_start:
            self._append_entries(rq, rq.prev_log_index, rq.prev_log_term, rq.log)
            return
        # The request reaches back into what our snapshot covers.
        if nth < self.log_start - 1:
            self._send_append_reply(rq, "OK", "append before log start")
            return
        if nth == self.log_start - 1:
            last = rq.log[-1].term if n else rq.prev_log_term
            if last == self.snap.term:
                self._send_append_reply(rq, "OK", "no change")
            else:
                self._send_append_reply(rq, "inconsistency", "term mismatch")
            return
        ofs = self.log_start - first
        self._append_entries(rq, self.log_start - 1, rq.log[ofs - 1].term, rq.log[ofs:])

    def would_append(self, rq: AppendRequest) -> bool:
        """Would handling `rq` write entries to our log (past its end, or over
        conflicting ones)? The point of the real server's fault injection
        `crash-after-receiving-append-request-update`: a request it takes, from a
        leader, whose entries are not all in the log already."""
        if rq.term < self.term or (self.role == LEADER and rq.term == self.term):
            return False
        prev, prev_term, entries = rq.prev_log_index, rq.prev_log_term, rq.log
        if prev + 1 < self.log_start:
            # The part the snapshot covers is committed; compare from its end.
            ofs = self.log_start - (prev + 1)
            if len(entries) <= ofs:
                return False
            prev, prev_term, entries = self.log_start - 1, entries[ofs - 1].term, \
                entries[ofs:]
        if self._mismatch(prev, prev_term) is not None:
            return False
        return any(prev + 1 + i >= self.log_end or self.term_at(prev + 1 + i) != e.term
                   for i, e in enumerate(entries))

    def _mismatch(self, prev_index: int, prev_term: int) -> str | None:
        if prev_index < self.log_start - 1:
            return "mismatch before start of log"
        if prev_index == self.log_start - 1:
            return "prev_term mismatch" if prev_term != self.snap.term else None
        if prev_index < self.log_end:
            return "term mismatch" if self.term_at(prev_index) != prev_term else None
        return "mismatch past end of log"

    def _append_entries(self, rq: AppendRequest, prev_index: int, prev_term: int,
                        entries: list[Entry]) -> None:
        mismatch = self._mismatch(prev_index, prev_term)
        if mismatch is not None:
            self._send_append_reply(rq, "inconsistency", mismatch)
            return
        servers_changed = False
        i = 0
        while True:
            if i >= len(entries):
                self._send_append_reply(
                    rq, "OK", "heartbeat" if rq.comment == "heartbeat" else "no change")
                return
            index = prev_index + 1 + i
            if index >= self.log_end:
                break
            if self.term_at(index) != entries[i].term:
                servers_changed |= self._truncate(index)
                break
            i += 1
        for e in entries[i:]:
            index = self.log_end
            self.entries.append(e)
            self._persist(EntryRecord(index=index, entry=e))
            if e.servers is not None:
                servers_changed = True
        if servers_changed:
            self._servers_from_log()
        self._send_append_reply(rq, "OK", "log updated")

    def _truncate(self, new_end: int) -> bool:
        """Drop entries from `new_end` on; True if a configuration was among them."""
        if new_end <= self.commit_index:
            raise AssertionError(f"{self.sid}: truncating the log to {new_end} would drop "
                                 f"committed entries (commit index {self.commit_index})")
        self._log(f"truncating {self.log_end - new_end} entries from end of log")
        dropped = self.entries[new_end - self.log_start:]
        del self.entries[new_end - self.log_start:]
        if self.log_synced >= new_end:
            self.log_synced = new_end - 1
        for rec in self._unacked:
            if ((isinstance(rec, EntryRecord) and rec.index >= new_end)
                    or (isinstance(rec, SnapshotRecord) and rec.entries
                        and rec.entries[-1][0] >= new_end)):
                self._stale.add(rec.ticket)
        for cmd in list(self.commands.values()):
            if cmd.index >= new_end:
                self._complete(cmd, LOST_LEADERSHIP)
        return any(e.servers is not None for e in dropped)

    def _send_append_reply(self, rq: AppendRequest, result: str, comment: str) -> None:
        # Figure 3.1: "If leaderCommit > commitIndex, set commitIndex =
        # min(leaderCommit, index of last new entry)".
        if result == "OK" and rq.leader_commit > self.commit_index:
            self._update_commit_index(min(rq.leader_commit,
                                          rq.prev_log_index + len(rq.log)))
        self._send(AppendReply(src=self.sid, dst=rq.src, comment=comment, term=self.term,
                               log_end=self.log_end, prev_log_index=rq.prev_log_index,
                               prev_log_term=rq.prev_log_term, n_entries=len(rq.log),
                               result=result))

    def _find_peer(self, sid: str) -> Server | None:
        s = self.servers.get(sid)
        if s is not None and sid != self.sid:
            return s
        return self.add_servers.get(sid)

    def _handle_append_reply(self, rpy: AppendReply) -> None:
        if self.role != LEADER:
            return
        s = self._find_peer(rpy.src)
        if s is None:
            return
        s.replied = True
        if rpy.result == "OK":
            min_index = rpy.prev_log_index + rpy.n_entries + 1
            if s.next_index < min_index:
                s.next_index = min_index
            self._update_match_index(s, min_index - 1)
        else:
            # Thesis 4.2.1: the follower's log_end caps next_index at once.
            s.next_index = min(s.next_index - 1, rpy.log_end) if s.next_index > 0 else 0
            if rpy.result == "I/O error":
                return
        if self.role != LEADER:
            return
        if s.next_index < self.log_start:
            self._send_install_snapshot_request(s, None)
        elif s.next_index < self.log_end:
            self._send_append_request(s, self.log_end - s.next_index, None)
        elif s.phase == CATCHUP:
            s.phase = CAUGHT_UP
            self._run_reconfigure()

    def _handle_vote_request(self, rq: VoteRequest) -> None:
        if self.vote is None:
            # Section 3.6.1: deny a candidate whose log is less up to date.
            last_term = self._last_term()
            if (last_term > rq.last_log_term
                    or (last_term == rq.last_log_term
                        and self.log_end - 1 > rq.last_log_index)):
                return
            self._set_term(self.term, rq.src)
            self._reset_election_timer()
        # Re-send the vote we cast, even for another candidate (a debugging aid in
        # OVS; the candidate counts only votes for itself).
        assert self.vote is not None
        self._send(VoteReply(src=self.sid, dst=rq.src, term=self.term, vote=self.vote))

    def _handle_vote_reply(self, rpy: VoteReply) -> None:
        if self.role != CANDIDATE:
            return
        s = self.servers.get(rpy.src)
        if s is not None and rpy.src != self.sid:
            self._accept_vote(s, rpy.vote)

    def _handle_become_leader(self, rq: BecomeLeader) -> None:
        if self.role == FOLLOWER:
            self._log(f"received leadership transfer from {rq.src} in term {rq.term}")
            self._start_election(True)

    # ------------------------------------------------------------------ snapshots

    def _handle_install_snapshot_request(self, rq: InstallSnapshotRequest) -> None:
        if not self._update_leader(rq.src):
            return
        self._reset_election_timer()
        new_start = rq.last_index + 1
        keep = (new_start < self.log_start
                or (new_start < self.log_end and self.term_at(rq.last_index) == rq.last_term))
        if not keep:
            # The snapshot reaches past our log, or our entry at its last index
            # conflicts with it (which OVS ignores, and then loops resending it): the
            # snapshot replaces the whole log (Figure 5.3).
            self._install(Snapshot(rq.last_index, rq.last_term, rq.data, rq.last_eid,
                                   dict(rq.last_servers), rq.election_timer))
        self._send(InstallSnapshotReply(src=self.sid, dst=rq.src, term=self.term,
                                        last_index=rq.last_index, last_term=rq.last_term))

    def _install(self, snap: Snapshot) -> None:
        assert snap.index >= self.commit_index
        new_start = snap.index + 1
        for rec in self._unacked:
            if isinstance(rec, (EntryRecord, SnapshotRecord)):
                self._stale.add(rec.ticket)
        self.log_synced = min(self.log_synced, self.log_start - 1)
        self.entries = []
        self.log_start = new_start
        self.snap = snap
        self.commit_index = snap.index
        if self.last_applied < self.commit_index:
            self.last_applied = snap.index - 1       # load the snapshot next
        self._persist(SnapshotRecord(snapshot=snap, entries=[], term=self.term,
                                     vote=self.vote, commit_index=self.commit_index,
                                     installed=True))
        self._servers_from_log()
        self._election_timer_from_log()
        self._snapshot_requested = False
        if self.joining and self.sid in snap.servers:
            self._joined()      # committed state that already counts us in

    def _handle_install_snapshot_reply(self, rpy: InstallSnapshotReply) -> None:
        if self.role != LEADER:
            return
        s = self._find_peer(rpy.src)
        if s is None:
            return
        s.snapshot_sent_at = None
        s.replied = True
        if rpy.last_index != self.log_start - 1 or rpy.last_term != self.snap.term:
            self._send_install_snapshot_request(s, "installed obsolete snapshot")
            return
        s.next_index = self.log_start
        self._send_append_request(s, self.log_end - s.next_index, "snapshot installed")

    def set_election_delay(self, on: bool) -> None:
        """Fault injection (`cluster/failure-test delay-election`): while on, every
        election timeout is one election timer longer, so this server loses the next
        election; a follower's timer restarts at once, as in OVS."""
        self.election_delay = on
        if on and self.role == FOLLOWER:
            self._reset_election_timer()

    def may_snapshot(self) -> bool:
        """Whether `store_snapshot()` may run now. A leader of several servers may not
        (writing a big snapshot would stall heartbeats): it should transfer
        leadership first (`notify_snapshot_recommended`)."""
        return (not self.joining and not self.leaving and not self.left
                and not self.failed and (self.role != LEADER or len(self.servers) == 1)
                and self.last_applied >= self.log_start)

    @property
    def log_length(self) -> int:
        """Entries a snapshot could drop (`raft_get_log_length`)."""
        return max(0, self.last_applied - self.log_start + 1)

    def notify_snapshot_recommended(self) -> None:
        if self.role == LEADER and len(self.servers) > 1:
            self.transfer_leadership("preparing to write snapshot")
            self._become_follower()
        self._finish()

    def store_snapshot(self, data: Any, now: int | None = None) -> None:
        """Replace the log up to the last applied entry by `data`, the state as of
        `last_applied` (`raft_store_snapshot`)."""
        self._advance(now)
        if self.joining:
            raise RaftError("cannot store a snapshot while joining cluster")
        if self.leaving:
            raise RaftError("cannot store a snapshot while leaving cluster")
        if self.left:
            raise RaftError("cannot store a snapshot after leaving cluster")
        if self.failed:
            raise RaftError("cannot store a snapshot following failure")
        if self.last_applied < self.log_start:
            raise RaftError("not storing a duplicate snapshot")
        index = self.last_applied
        snap = Snapshot(index, self.term_at(index), data, self.eid_at(index),
                        dict(self._servers_for_index(index)), self.election_timer)
        new_start = index + 1
        kept = [(i, self.entry(i)) for i in range(new_start, self.log_end)]
        del self.entries[:new_start - self.log_start]
        self.log_start = new_start
        self.snap = snap
        self._persist(SnapshotRecord(snapshot=snap, entries=kept, term=self.term,
                                     vote=self.vote, commit_index=self.commit_index,
                                     installed=False))
        self._snapshot_requested = False
        self._finish()

    # ------------------------------------------------------------------ membership

    def _servers_from_log(self) -> None:
        """The newest configuration in the log is the one in force
        (`raft_get_servers_from_log`)."""
        config = self.snap.servers
        for e in reversed(self.entries):
            if e.servers is not None:
                config = e.servers
                break
        for sid in [sid for sid in self.servers if sid not in config]:
            s = self.servers.pop(sid)
            self._log(f"server {sid} removed from configuration")
            if self.remove_server is s:
                self.remove_server = None
        for sid, address in config.items():
            if sid not in self.servers:
                s = self.add_servers.pop(sid, Server(sid, address))
                self._server_init_leader(s)
                self.servers[sid] = s

    def _election_timer_from_log(self) -> None:
        if self.snap.election_timer:
            self.election_timer = self.snap.election_timer
        for index in range(self.commit_index, self.log_start - 1, -1):
            e = self.entry(index)
            if e.election_timer:
                self.election_timer = e.election_timer
                break

    def _has_uncommitted_configuration(self) -> bool:
        return any(self.entry(i).servers is not None
                   for i in range(max(self.commit_index + 1, self.log_start), self.log_end))

    def _run_reconfigure(self) -> None:
        """Advance membership changes, one at a time (`raft_run_reconfigure`)."""
        if self.role != LEADER or self._has_uncommitted_configuration():
            return
        if self.commit_index < self.log_start or self.term_at(self.commit_index) != self.term:
            return          # not before an entry of our term has committed
        for s in self.servers.values():
            if s.phase == COMMITTING:
                self._send_add_server_reply(s.sid, True, SERVER_COMPLETED)
                s.phase = STABLE
        if self.remove_server is not None:
            rs, self.remove_server = self.remove_server, None
            self._send_remove_server_reply(rs.sid, rs.requester, True, SERVER_COMPLETED)
            if self.left:
                return
        for s in list(self.add_servers.values()):
            if s.phase == CAUGHT_UP:
                del self.add_servers[s.sid]
                self.servers[s.sid] = s
                s.phase = COMMITTING
                self._log_reconfiguration()
                return
        for s in list(self.servers.values()):
            if s.phase == REMOVE:
                del self.servers[s.sid]
                self.remove_server = s
                self._log_reconfiguration()
                return

    def _log_reconfiguration(self) -> None:
        servers = {s.sid: s.address for s in self.servers.values()}
        self._initiate(Entry(self.term, servers=servers))
        if self.sid not in self.servers:
            # We removed ourselves: the majority no longer counts us.
            self._consider_updating_commit_index()

    def _send_add_server_reply(self, sid: str, success: bool, comment: str) -> None:
        remotes = ([] if self.joining else
                   [s.address for s in self.servers.values() if s.sid != self.sid])
        self._send(AddServerReply(src=self.sid, dst=sid, comment=comment, success=success,
                                  remote_addresses=remotes))

    def _send_remove_server_reply(self, target: str, requester: str | None,
                                  success: bool, comment: str) -> None:
        # To the requester, and always to the removed server, so that it knows.
        for dst in dict.fromkeys([requester, target]):
            if dst is None:
                continue
            if dst == self.sid:
                if success and target == self.sid:
                    self._finished_leaving()
                continue
            self._send(RemoveServerReply(src=self.sid, dst=dst, comment=comment,
                                         success=success,
                                         target_server=None if dst == target else target))

    def _handle_add_server_request(self, rq: AddServerRequest) -> None:
        if self.role != LEADER:
            self._send_add_server_reply(rq.src, False, SERVER_NOT_LEADER)
            return
        s = self.servers.get(rq.src)
        if s is not None:
            if s.phase == REMOVE:
                s.phase = STABLE
                self._send_add_server_reply(rq.src, False, SERVER_CANCELED)
            elif s.phase != STABLE:
                self._send_add_server_reply(rq.src, False, SERVER_IN_PROGRESS)
            else:
                self._send_add_server_reply(rq.src, True, SERVER_ALREADY_PRESENT)
            return
        if self.remove_server is not None and self.remove_server.sid == rq.src:
            self._send_add_server_reply(rq.src, False, SERVER_COMMITTING)
            return
        if rq.src in self.add_servers:
            self._send_add_server_reply(rq.src, False, SERVER_IN_PROGRESS)
            return
        s = Server(rq.src, rq.address)
        self._server_init_leader(s)
        s.phase, s.requester = CATCHUP, rq.src
        self.add_servers[s.sid] = s
        self._log(f"starting to add server {s.sid} at {rq.address}")
        # An empty append finds where the new server's log ends; the usual reply
        # handling then installs the snapshot and sends the entries.
        self._send_append_request(s, 0, "initialize new server")

    def _joined(self) -> None:
        self.joining = False
        self._log("joined the cluster")

    def _handle_add_server_reply(self, rpy: AddServerReply) -> None:
        if not self.joining:
            return
        if rpy.success:
            self._joined()
        else:
            for a in rpy.remote_addresses:
                if a not in self.remote_addresses and a != self.local_address:
                    self.remote_addresses.append(a)

    def _handle_remove_server_request(self, rq: RemoveServerRequest) -> None:
        self._remove_server(rq.server_id, rq.src)

    def _remove_server(self, target_sid: str, requester: str | None) -> None:
        committed = self._servers_for_index(self.commit_index)
        if self.role != LEADER:
            if not self.joining and self._removal_committed(target_sid):
                # OVS answers "not leader" here, so a removed server whose
                # "completed" reply was lost, and whose stale configuration lacks
                # the current leader, would ask forever.
                self._send_remove_server_reply(target_sid, requester, True,
                                               SERVER_ALREADY_GONE)
            else:
                self._send_remove_server_reply(target_sid, requester, False,
                                               SERVER_NOT_LEADER)
            return
        target = self.add_servers.pop(target_sid, None)
        if target is not None:
            self._send_add_server_reply(target.sid, False, SERVER_CANCELED)
            return
        target = self.servers.get(target_sid)
        if target is None:
            if target_sid in committed:
                # Our configuration drops it, but not yet a committed one: it could
                # still come back, so "already gone" (what OVS says) would be a lie
                # that lets the server leave a cluster that still counts it.
                self._send_remove_server_reply(target_sid, requester, False,
                                               SERVER_IN_PROGRESS)
            else:
                self._send_remove_server_reply(target_sid, requester, True,
                                               SERVER_ALREADY_GONE)
            return
        if target.phase == COMMITTING:
            self._send_remove_server_reply(target_sid, requester, False, SERVER_COMMITTING)
            return
        if target.phase == REMOVE:
            self._send_remove_server_reply(target_sid, requester, False,
                                           SERVER_IN_PROGRESS)
            return
        if not any(s is not target and s.phase != REMOVE for s in self.servers.values()):
            self._send_remove_server_reply(target_sid, requester, False, SERVER_EMPTY)
            return
        target.phase, target.requester = REMOVE, requester
        self._run_reconfigure()

    def _handle_remove_server_reply(self, rpy: RemoveServerReply) -> None:
        if rpy.success and rpy.target_server in (None, self.sid):
            self._finished_leaving()

    def _finished_leaving(self) -> None:
        if self.left:
            return
        self._log("finished leaving cluster")
        self._persist(NoteRecord(note="left", comment="this server left the cluster"))
        self.leaving = False
        self.left = True
        for cmd in list(self.commands.values()):
            self._complete(cmd, SHUTDOWN)

    def _send_remove_server_requests(self) -> None:
        for s in self.servers.values():
            if s.sid != self.sid:
                self._send(RemoveServerRequest(src=self.sid, dst=s.sid, server_id=self.sid))
        self.leave_timeout = self.now + self.election_timer

    def _send_add_server_requests(self) -> None:
        for address in self.remote_addresses:
            self._send(AddServerRequest(src=self.sid, address=self.local_address,
                                        address_hint=address))

    # ------------------------------------------------------------------ commands

    def _complete(self, cmd: Command, status: str) -> None:
        if cmd.done:
            return
        if cmd.requester is not None and cmd.eid is not None:
            self._send(ExecuteCommandReply(
                src=self.sid, dst=cmd.requester, result=cmd.eid, status=status,
                commit_index=cmd.index if status == SUCCESS else 0))
            if status == SUCCESS:
                self._commit_waiters.add(cmd.requester)
        cmd.status = status
        if status != SUCCESS:
            cmd.index = 0
        if cmd.eid is not None:
            self.commands.pop(cmd.eid, None)
        if cmd.local:
            self._completed.append(cmd)

    def _handle_execute_command_request(self, rq: ExecuteCommandRequest) -> None:
        if self.role != LEADER:
            status = NOT_LEADER
        elif rq.result in self.commands:
            return          # a duplicate of a request we are already executing
        elif rq.prereq != self.current_eid:
            if self._has_eid(rq.result):
                return      # a duplicate of one already appended (and maybe answered)
            status = BAD_PREREQ
            losses = self._losses[rq.src] = self._losses.get(rq.src, 0) + 1
            if losses >= LOSSES_BEFORE_TURN:
                self._owe_turn(rq.src)
        elif rq.src not in self._owed and (self._owed or self.hold_forwarded):
            if all(h.result != rq.result for h in self._held):
                self._held.append(rq)
            return
        else:
            self._owed.pop(rq.src, None)
            self._losses.pop(rq.src, None)
            index = self._initiate(Entry(self.term, rq.data, rq.result))
            self.commands[rq.result] = Command(rq.result, index=index, timestamp=self.now,
                                               requester=rq.src, local=False,
                                               initiated_as_leader=True)
            return
        self._send(ExecuteCommandReply(src=self.sid, dst=rq.src, result=rq.result,
                                       status=status))

    def set_hold_forwarded(self, hold: bool, now: int | None = None) -> None:
        """Fairness between the leader's own clients and the followers' (leader only).
        The leader's transactions need the newest entry applied before they can run
        (their prerequisite); under a steady stream of forwarded commands there is
        always a newer one, and they would starve. While `hold` is set, forwarded
        commands that would be appended are held back instead; releasing answers
        them as they stand then, which after the leader's own entry is "prerequisite
        check failed": their servers execute them again once they have applied it,
        as for any lost race."""
        self._advance(now)
        try:
            self.hold_forwarded = hold and self.role == LEADER
        finally:
            self._finish()

    def _owe_turn(self, sid: str) -> None:
        """`sid` keeps losing races: keep the next turn for it, and let it hear of
        every commit at once meanwhile, so that it executes again as early as it
        can."""
        if sid not in self._owed and sid in self.servers and sid != self.sid:
            self._owed[sid] = self.now + TURN_MSEC
            s = self.servers[sid]
            if self._told_commit.get(sid, -1) < self.commit_index:
                self._send_append_request(s, 0, "heartbeat")

    def turn_owed(self) -> bool:
        """Is a turn kept for a server that lost a race? The leader's own
        transactions wait for it too."""
        return bool(self._owed)

    def _release_held(self) -> None:
        """Answer the held commands as things stand now that no turn or hold keeps
        them: appended if their prerequisite still holds, refused (and owed a turn)
        if not."""
        held, self._held = self._held, []
        for rq in held:
            self._handle_execute_command_request(rq)

    def _handle_execute_command_reply(self, rpy: ExecuteCommandReply) -> None:
        cmd = self.commands.get(rpy.result)
        if cmd is None or cmd.requester is not None:
            return
        if rpy.status == INCOMPLETE:
            cmd.timestamp = self.now
        else:
            cmd.index = rpy.commit_index
            self._complete(cmd, rpy.status)

    def propose_command(self, data: Any, prereq: str | None = None,
                        now: int | None = None) -> Command:
        """Append `data` (JSON object or array) to the log, if `prereq` is None or is
        the eid of the newest data entry (`raft_command_execute`). A follower that
        knows the leader forwards commands that have a prereq; anything else needs
        the leader. Returns a `Command` whose status becomes final later (or already
        is: "not leader", "prerequisite check failed", "server shutdown")."""
        self._advance(now)
        try:
            return self._propose(Entry(self.term, data), prereq)
        finally:
            self._finish()

    def propose(self, data: Any, now: int | None = None) -> Command:
        """Append `data` without a prerequisite (leader only)."""
        return self.propose_command(data, None, now)

    def _propose(self, entry: Entry, prereq: str | None) -> Command:
        if self.joining or self.leaving or self.left or self.failed:
            return self._completed_command(SHUTDOWN)
        is_data = entry.data is not None
        if self.role != LEADER and (not is_data or entry.servers is not None
                                    or entry.election_timer or self.role != FOLLOWER
                                    or self.leader_sid is None or prereq is None):
            return self._completed_command(NOT_LEADER)
        eid = new_uuid(self.rng) if is_data else None
        if self.role != LEADER:
            assert eid is not None and prereq is not None and self.leader_sid is not None
            self._send(ExecuteCommandRequest(src=self.sid, dst=self.leader_sid,
                                             data=entry.data, prereq=prereq, result=eid))
            cmd = Command(eid, timestamp=self.now)
            self.commands[eid] = cmd
            return cmd
        if prereq is not None and prereq != self.current_eid:
            return self._completed_command(BAD_PREREQ)
        entry.eid = eid
        index = self._initiate(entry)
        cmd = Command(eid, index=index, timestamp=self.now, initiated_as_leader=True)
        if eid is not None:
            self.commands[eid] = cmd
        return cmd

    @staticmethod
    def _completed_command(status: str) -> Command:
        return Command(None, status=status)

    def change_election_timer(self, ms: int, now: int | None = None) -> str:
        """`cluster/change-election-timer`: leader only, 100..600000 ms, at most twice
        the current value, one change at a time. Takes effect when the entry commits,
        everywhere at once. Raises `RaftError` with the real server's wording."""
        self._advance(now)
        if self.role != LEADER:
            raise RaftError("election timer must be changed through leader.")
        if self.election_timer_new:
            raise RaftError("election timer change pending.")
        if ms == self.election_timer:
            return "change election timer to current value."
        if not ELECTION_MIN_MSEC <= ms <= ELECTION_MAX_MSEC:
            raise RaftError("election timer must be between 100 and 600000, in msec.")
        if ms > self.election_timer * 2:
            raise RaftError("election timer increase should not exceed the current "
                            "value x 2.")
        self.election_timer_new = ms
        self._initiate(Entry(self.term, election_timer=ms))
        self._finish()
        return "change of election timer initiated."

    # ------------------------------------------------------------------ leadership, leaving

    def transfer_leadership(self, reason: str = "requested", now: int | None = None
                            ) -> str | None:
        """Ask the most up-to-date stable follower to take over (`become_leader`);
        returns its id, or None if we are not leader or there is nobody to ask."""
        self._advance(now)
        if self.role != LEADER:
            return None
        best: Server | None = None
        for s in self.servers.values():
            if (s.sid != self.sid and s.phase == STABLE and self.connected.get(s.sid, True)
                    and (best is None or s.match_index > best.match_index)):
                best = s
        if best is None:
            return None
        self._send(BecomeLeader(src=self.sid, dst=best.sid, comment=reason, term=self.term))
        self._persist(NoteRecord(note="transfer leadership",
                                 comment=f"transferring leadership to {best.sid} "
                                         f"because {reason}"))
        self._finish()
        return best.sid

    def take_leadership(self, now: int | None = None) -> None:
        """Start an election at once that voters will not suppress."""
        self._advance(now)
        if self.role != LEADER:
            self._start_election(True)
        self._finish()

    def leave(self, now: int | None = None) -> None:
        """`cluster/leave`: hand leadership over, then ask every server to remove us,
        again every election timer until one replies that we are out."""
        self._advance(now)
        if self.joining or self.failed or self.leaving or self.left:
            return
        self._log("starting to leave cluster")
        self.leaving = True
        self.transfer_leadership("this server is leaving the cluster")
        self._become_follower()
        self._send_remove_server_requests()
        self._finish()

    def kick(self, sid: str, now: int | None = None) -> None:
        """`cluster/kick` on the leader (or forwarded to it)."""
        self._advance(now)
        if sid == self.sid:
            self.leave()
        elif self.role == LEADER:
            self._remove_server(sid, None)
        elif self.leader_sid is not None:
            self._send(RemoveServerRequest(src=self.sid, dst=self.leader_sid,
                                           comment="via unixctl", server_id=sid))
        else:
            raise RaftError("failed to send removal request")
        self._finish()

    def fail(self) -> None:
        """An unrecoverable I/O error: stop taking part until restarted."""
        self.failed = True
        for cmd in list(self.commands.values()):
            self._complete(cmd, "I/O error")

    # ------------------------------------------------------------------ connections

    def on_connected(self, sid: str | None, address: str | None = None) -> None:
        """A session to a peer (re)connected: introduce ourselves as OVS does."""
        if sid is not None:
            self.connected[sid] = True
            s = self._find_peer(sid)
            if s is not None:
                s.snapshot_sent_at = None
        if self.joining:
            self._send(AddServerRequest(src=self.sid, address=self.local_address,
                                        address_hint=address))
        elif sid is None:
            return
        elif self.leaving:
            self._send(RemoveServerRequest(src=self.sid, dst=sid, server_id=self.sid))
        else:
            self._send(HelloRequest(src=self.sid, dst=sid, address=self.local_address))
        self._finish()

    def on_disconnected(self, sid: str) -> None:
        self.connected[sid] = False
        s = self._find_peer(sid)
        if s is not None:
            s.snapshot_sent_at = None

    # ------------------------------------------------------------------ end of input

    def _finish(self) -> None:
        """Work that follows any input: held commands no longer held, coalesced
        commit heartbeats, entries to apply, the snapshot request."""
        if self._owed:
            self._owed = {sid: t for sid, t in self._owed.items() if t > self.now}
        if self._held and not self._owed and not self.hold_forwarded:
            self._release_held()
        if self.command_check <= self.now:
            # Pending commands time out on their own timer, checked after any input
            # once due. Not tied to the ping timer: a leader under load never lets
            # that fire (every broadcast of entries re-arms it), and a command
            # forwarded to a leader that died before we were elected would wait
            # forever.
            self.command_check = self.now + self.election_timer // 3
            limit = 2 * self.election_timer
            for cmd in list(self.commands.values()):
                if self.now - cmd.timestamp > limit:
                    lost = cmd.initiated_as_leader and self.role != LEADER
                    self._complete(cmd, LOST_LEADERSHIP if lost else TIMEOUT)
        if not self.joining and not self.failed:
            if self.last_applied == self.log_start - 2:
                snap = self.snap
                self._committed.append(Committed(snap.index, snap.term, snap.data, snap.eid,
                                                 dict(snap.servers), snap.election_timer,
                                                 is_snapshot=True))
                self.last_applied = snap.index
            while self.last_applied < self.commit_index:
                index = self.last_applied + 1
                e = self.entry(index)
                self._committed.append(Committed(index, e.term, e.data, e.eid, e.servers,
                                                 e.election_timer))
                self.last_applied = index
        threshold = self.config.snapshot_threshold
        if (threshold is not None and not self._snapshot_requested
                and self.log_length >= threshold and self.may_snapshot()):
            self._snapshot_requested = True
            self._snapshot_request = True

    def status(self) -> dict[str, Any]:
        """The facts `cluster/status` prints."""
        return {
            "sid": self.sid, "cid": self.cid, "address": self.local_address,
            "status": ("joining cluster" if self.joining else "leaving cluster"
                       if self.leaving else "left cluster" if self.left else "failed"
                       if self.failed else "disconnected from the cluster (election "
                       "timeout)" if self.candidate_retrying else "cluster member"),
            "role": self.role, "term": self.term, "leader": self.leader_sid,
            "vote": self.vote, "election_timer": self.election_timer,
            "election_timer_new": self.election_timer_new,
            "log": (self.log_start, self.log_end),
            "commit_index": self.commit_index, "last_applied": self.last_applied,
            "servers": {s.sid: (s.address, s.phase, s.next_index, s.match_index)
                        for s in self.servers.values()},
            "adding": {s.sid: (s.address, s.phase) for s in self.add_servers.values()},
        }

    _HANDLERS: dict[type, Callable[[RaftCore, Any], None]] = {}


RaftCore._HANDLERS = {
    HelloRequest: RaftCore._handle_hello_request,
    AppendRequest: RaftCore._handle_append_request,
    AppendReply: RaftCore._handle_append_reply,
    VoteRequest: RaftCore._handle_vote_request,
    VoteReply: RaftCore._handle_vote_reply,
    AddServerRequest: RaftCore._handle_add_server_request,
    AddServerReply: RaftCore._handle_add_server_reply,
    RemoveServerRequest: RaftCore._handle_remove_server_request,
    RemoveServerReply: RaftCore._handle_remove_server_reply,
    InstallSnapshotRequest: RaftCore._handle_install_snapshot_request,
    InstallSnapshotReply: RaftCore._handle_install_snapshot_reply,
    BecomeLeader: RaftCore._handle_become_leader,
    ExecuteCommandRequest: RaftCore._handle_execute_command_request,
    ExecuteCommandReply: RaftCore._handle_execute_command_reply,
}
