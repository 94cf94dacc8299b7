"""Deterministic simulation of a Raft cluster made of `RaftCore`s, with Raft's safety
properties checked after every step (`python -m pyovsdb.raft.sim --seed N -v`).

Rules kept here:
- Everything follows from the seed: one scheduling RNG, one RNG per core derived from
  it, a discrete-event queue ordered by (time, sequence), no wall clock, no set
  iteration. A failing seed replays exactly.
- Faults: message drops, duplicates, random delays (hence reordering), partitions and
  heals, crashes and restarts (a crash keeps the records reported durable plus a random
  prefix of the ones still being written, as a torn tail would), graceful leader
  shutdowns with leadership transfer, leaves and joins of new servers, election-timer
  changes, snapshots. Clients propose OVSDB-like commands whose prerequisite is the
  eid of the last entry their server applied, and follower commands are forwarded.
- Every message crosses the "wire" as JSON text (`to_jsonrpc`, orjson, `from_jsonrpc`),
  so the cores only ever see what a real peer would parse.
- Checked after every step: election safety (one leader per term), log matching (an
  (index, term) pair always names the same entry with the same predecessor term),
  leader completeness (a new leader holds every entry committed so far), state-machine
  safety (no two servers apply different entries, or reach different states, at an
  index), prerequisite chaining (each applied command's prereq is the previous
  command's eid), no committed command lost (a command reported successful at index i
  is what every server applies at i). And the rules behind them: a message mentions
  only a term, vote or entries its sender would still have after a crash; a committed
  entry is durable on a majority; a leader's commit index only moves to an entry of
  its own term; a restarted core remembers exactly its disk; a server leaves only once
  a committed configuration lacks it; no core leaves a deadline in the past.
- Liveness: after the chaos phase every fault is healed; within a bounded simulated
  time a leader must exist, a probe command must commit, every member must apply
  every successful command and no server may still be joining or leaving. Then one
  follower is stopped while the leader commits and compacts past its log; restarted
  in a quiet cluster, it must be connected and up to date within three election
  timers, from the leader's heartbeats alone (no write, no election).
This module knows no OVSDB and does no I/O beyond printing the trace.
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .core import LEADER, SUCCESS, Command, Committed, RaftConfig, RaftCore, RaftError
from .records import EntryRecord, Record, Snapshot, SnapshotRecord, TermRecord, VoteRecord
from .rpc import (
    AppendReply,
    Entry,
    InstallSnapshotReply,
    RaftRpc,
    VoteReply,
    VoteRequest,
    from_jsonrpc,
)

__all__ = ["SimParams", "SimResult", "Simulation", "Violation", "main", "run_seed"]


class Violation(AssertionError):
    """A safety or liveness property failed."""


@dataclass(slots=True)
class SimParams:
    """One seed's scenario; `from_seed` draws it."""

    n: int = 3
    sync_commit: bool = True
    commit_sync_delay: int = 0
    chaos_ms: int = 5000
    heal_bound_ms: int = 30000
    form_bound_ms: int = 30000
    drop: float = 0.02
    dup: float = 0.01
    delay: tuple[int, int] = (1, 20)
    slow: float = 0.02            # chance of a long delay (reordering across heartbeats)
    disk: tuple[int, int] = (0, 5)
    client_every: tuple[int, int] = (50, 300)
    burst: int = 2
    fault_every: tuple[int, int] = (300, 1500)
    downtime: tuple[int, int] = (50, 1500)
    snapshot_threshold: int | None = 12
    membership: bool = True
    election_timer: int = 1000
    election_range: int = 1000

    @classmethod
    def from_seed(cls, seed: int) -> SimParams:
        r = random.Random(seed * 7919 + 1)
        delay = r.choice(((1, 5), (1, 20), (5, 60)))
        disk = r.choice(((0, 2), (0, 10), (5, 40)))
        return cls(
            n=3 if r.random() < 0.6 else 5,
            sync_commit=r.random() < 0.8,
            # Drawn from its own generator, so that adding it left every other draw
            # (and so every older seed's scenario) as it was.
            commit_sync_delay=random.Random(seed * 7919 + 2).choice((0, 0, 10, 50)),
            chaos_ms=r.randrange(3000, 7000),
            drop=r.choice((0.0, 0.01, 0.05, 0.1)),
            dup=r.choice((0.0, 0.0, 0.02, 0.05)),
            delay=delay,
            slow=r.choice((0.0, 0.01, 0.05)),
            disk=disk,
            client_every=r.choice(((30, 150), (50, 300), (200, 600))),
            burst=r.choice((1, 2, 4)),
            fault_every=r.choice(((100, 500), (200, 800), (400, 1500))),
            downtime=r.choice(((20, 300), (50, 1500), (500, 3000))),
            snapshot_threshold=r.choice((None, 6, 12, 30)),
            membership=r.random() < 0.5,
            # A narrow jitter makes candidates collide: split votes, rival candidates
            # of one term, elections racing with crashes. Narrower than a few message
            # delays plus a disk write (a vote request waits for its vote to be
            # durable), elections can split forever: Raft needs that time well below
            # the jitter, so that is no bug.
            election_range=max(r.choice((1000, 1000, 200, 40)),
                               4 * (delay[1] + disk[1])),
        )


@dataclass(slots=True)
class SimResult:
    seed: int
    params: SimParams
    sim_ms: int = 0
    events: int = 0
    messages: int = 0
    elections: int = 0
    commits: int = 0
    successes: int = 0
    failures: int = 0
    crashes: int = 0
    transfers: int = 0
    joins: int = 0
    leaves: int = 0
    snapshots: int = 0
    timer_changes: int = 0
    heal_ms: int = 0


# --- the state machine each server applies ---------------------------------------------


def _eid_hash(eid: str | None) -> int:
    return int(eid[:8], 16) if eid else 0


@dataclass(slots=True)
class StateMachine:
    """Folds applied commands into (count, last eid, hash chain), which is also what
    its snapshots hold."""

    index: int = -1
    n: int = 0
    last: str | None = None
    h: int = 0

    def state(self) -> tuple[int, str | None, int]:
        return (self.n, self.last, self.h)

    def snapshot_data(self) -> dict[str, Any]:
        return {"n": self.n, "last": self.last, "h": self.h}


# --- servers ------------------------------------------------------------------------------


@dataclass(slots=True)
class DiskImage:
    """What survives a crash: the header's snapshot and the durable records, plus a
    summary of what they say (term, vote, the terms of the durable log) so that the
    checks can ask what a server could still remember after a crash."""

    snapshot: Snapshot | None
    records: list[Record] = field(default_factory=list)
    pending: list[Record] = field(default_factory=list)
    term: int = 0
    vote: str | None = None
    log_start: int = 1
    terms: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.snapshot is not None:
            self.log_start = self.snapshot.index + 1

    def write(self, rec: Record) -> None:
        if isinstance(rec, SnapshotRecord):
            self.snapshot = rec.snapshot
            self.records = rec.file_records()
            self.log_start = rec.snapshot.index + 1
            self.terms = [e.term for _, e in rec.entries]
            self._term(rec.term, rec.vote)
            return
        self.records.append(rec)
        if isinstance(rec, EntryRecord):
            del self.terms[rec.index - self.log_start:]
            self.terms.append(rec.entry.term)
            self._term(rec.entry.term, None)
        elif isinstance(rec, VoteRecord):
            self._term(rec.term, rec.vote)
        elif isinstance(rec, TermRecord):
            self._term(rec.term, None)

    def _term(self, term: int, vote: str | None) -> None:
        if term > self.term:
            self.term, self.vote = term, None
        if vote is not None:
            self.vote = vote

    def has(self, index: int, term: int) -> bool:
        """Is entry (index, term) durable here (or folded into the snapshot)?"""
        if index < self.log_start:
            return self.snapshot is not None and index <= self.snapshot.index
        i = index - self.log_start
        return i < len(self.terms) and self.terms[i] == term

    def sync(self, ticket: int) -> None:
        n = 0
        while n < len(self.pending) and self.pending[n].ticket <= ticket:
            self.write(self.pending[n])
            n += 1
        del self.pending[:n]

    def crash(self, rng: random.Random) -> None:
        keep = rng.randint(0, len(self.pending))
        for rec in self.pending[:keep]:
            self.write(rec)
        self.pending = []

    def config(self) -> dict[str, str]:
        servers = self.snapshot.servers if self.snapshot else {}
        for rec in self.records:
            if isinstance(rec, EntryRecord) and rec.entry.servers is not None:
                servers = rec.entry.servers
        return servers


@dataclass(slots=True, eq=False)
class SimNode:
    name: str
    sid: str
    address: str
    disk: DiskImage
    core: RaftCore | None = None
    sm: StateMachine = field(default_factory=StateMachine)
    incarnation: int = 0
    tick_at: int | None = None
    was_leader_term: int = 0
    commit_seen: int = 0
    joining: bool = False
    leaving: bool = False
    left: bool = False

    @property
    def up(self) -> bool:
        return self.core is not None


# --- the simulation -----------------------------------------------------------------------


class Simulation:
    def __init__(self, seed: int, params: SimParams | None = None,
                 trace: Callable[[str], None] | None = None) -> None:
        self.seed = seed
        self.p = params or SimParams.from_seed(seed)
        self.rng = random.Random(seed)
        # The leader's hold on forwarded commands (`RaftCore.set_hold_forwarded`) is
        # toggled from its own generator, so that the schedules drawn from `rng` are
        # those of the seed as before.
        self.hold_rng = random.Random(seed * 7919 + 3)
        self.trace = trace
        self.now = 0
        self.queue: list[tuple[int, int, str, tuple[Any, ...]]] = []
        self.seq = 0
        self.nodes: dict[str, SimNode] = {}     # by sid
        self.by_address: dict[str, SimNode] = {}
        self.partition: dict[str, int] | None = None
        self.faults_on = True
        self.res = SimResult(seed, self.p)
        self.cid = self._uuid()
        # Global knowledge for the checks.
        self.leaders: dict[int, str] = {}
        self.seen: dict[tuple[int, int], tuple[tuple[Any, ...], int]] = {}
        self.applied: dict[int, tuple[Any, ...]] = {}
        self.state_at: dict[int, tuple[int, str | None, int]] = {}
        self.success: dict[int, str] = {}
        self.pending_cmds: list[tuple[SimNode, Command]] = []
        self.next_cmd = 0
        self.member_op: str | None = None
        self.n_names = 0
        self._sync_times: dict[str, int] = {}

    # ---------------------------------------------------------------- plumbing

    def _uuid(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    def log(self, msg: str) -> None:
        if self.trace is not None:
            self.trace(f"{self.now:7d} {msg}")

    def at(self, t: int, kind: str, *args: Any) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (t, self.seq, kind, args))

    def violation(self, msg: str) -> Violation:
        return Violation(f"seed {self.seed} at {self.now} ms: {msg}")

    def config(self, election_timer: int | None = None) -> RaftConfig:
        return RaftConfig(election_timer=election_timer or self.p.election_timer,
                          election_range=self.p.election_range,
                          sync_commit=self.p.sync_commit,
                          commit_sync_delay=self.p.commit_sync_delay,
                          snapshot_threshold=self.p.snapshot_threshold)

    def _new_node(self) -> SimNode:
        self.n_names += 1
        name = f"s{self.n_names}"
        node = SimNode(name, self._uuid(), f"unix:{name}.raft", DiskImage(None))
        self.nodes[node.sid] = node
        self.by_address[node.address] = node
        return node

    def _core_rng(self) -> random.Random:
        return random.Random(self.rng.getrandbits(64))

    def _logger(self, node: SimNode) -> Callable[[str], None] | None:
        if self.trace is None:
            return None
        return lambda m: self.log(f"{node.name} {m}")

    # ---------------------------------------------------------------- setup

    def setup(self) -> None:
        """A cluster of `n` servers built as OVS builds one: the first creates it,
        the others join (so bootstrap itself is exercised)."""
        first = self._new_node()
        eid0 = self._uuid()
        snap = Snapshot(1, 1, {"n": 0, "last": eid0, "h": 0}, eid0,
                        {first.sid: first.address})
        first.disk = DiskImage(snap)
        self.state_at[1] = (0, eid0, 0)
        first.core = RaftCore.create(first.sid, first.address, self.cid, snap,
                                     config=self.config(), rng=self._core_rng(),
                                     now=self.now, logger=self._logger(first))
        self.after_input(first)
        for _ in range(self.p.n - 1):
            self.start_join(self._new_node())

    def start_join(self, node: SimNode, again: bool = False) -> None:
        members = [n.address for n in self.nodes.values() if not n.joining
                   and not n.left and n is not node]
        node.joining = True
        node.core = RaftCore.join(node.sid, node.address, members, config=self.config(),
                                  rng=self._core_rng(), now=self.now,
                                  logger=self._logger(node))
        self.res.joins += not again
        self.log(f"{node.name} joins via {members}")
        self.after_input(node)

    # ---------------------------------------------------------------- after each input

    def after_input(self, node: SimNode, ticked: bool = False) -> None:
        core = node.core
        assert core is not None
        while True:
            rd = core.ready()
            if not rd:
                break
            if rd.records:
                self.check_records(node, rd.records)
                node.disk.pending.extend(rd.records)
                lo, hi = self.p.disk
                t = max(self.now + self.rng.randint(lo, hi), self._last_sync(node))
                self._sync_times[node.sid] = t
                self.at(t, "sync", node.sid, node.incarnation, rd.records[-1].ticket)
            for c in rd.committed:
                self.apply(node, c)
            for cmd in rd.completed:
                self.completed(node, cmd)
            for m in rd.messages:
                self.send(node, m)
            if rd.snapshot_request and core.may_snapshot():
                if node.sm.index != core.last_applied:
                    raise self.violation(f"{node.name} state machine at {node.sm.index} but "
                                         f"core applied {core.last_applied}")
                core.store_snapshot(node.sm.snapshot_data(), self.now)
                self.res.snapshots += 1
                self.log(f"{node.name} snapshot at {core.log_start - 1}")
        if core.left and not node.left:
            node.left, node.leaving = True, False
            self.log(f"{node.name} left the cluster")
            self.check_left(node)
            node.core = None
            node.incarnation += 1
            if self.member_op == "leave":
                self.member_op = None
            return
        if node.joining and not core.joining:
            node.joining = False
            self.log(f"{node.name} joined")
            if self.member_op == "join":
                self.member_op = None
        self.check_roles(node)
        d = core.next_deadline()
        if ticked and d is not None and d <= self.now:
            raise self.violation(f"{node.name} left its deadline in the past ({d})")
        if d != node.tick_at and d is not None:
            node.tick_at = d
            self.at(d, "tick", node.sid, node.incarnation, d)

    def _last_sync(self, node: SimNode) -> int:
        return self._sync_times.get(node.sid, 0)

    # ---------------------------------------------------------------- checks

    @staticmethod
    def entry_key(e: Entry) -> tuple[Any, ...]:
        servers = tuple(sorted(e.servers.items())) if e.servers is not None else None
        return (e.term, e.eid, servers, e.election_timer)

    def check_records(self, node: SimNode, records: list[Record]) -> None:
        """Log matching, incrementally: (index, term) names one entry and one
        predecessor term, in every log, forever."""
        core = node.core
        assert core is not None
        for rec in records:
            if not isinstance(rec, EntryRecord):
                continue
            i = rec.index
            if not (core.log_start <= i < core.log_end) or core.entry(i) is not rec.entry:
                continue
            key = (self.entry_key(rec.entry), core.term_at(i - 1))
            old = self.seen.setdefault((i, rec.entry.term), key)
            if old != key:
                raise self.violation(f"log matching: {node.name} has {key} at index {i} "
                                     f"term {rec.entry.term}, another server had {old}")

    def check_roles(self, node: SimNode) -> None:
        core = node.core
        assert core is not None
        if core.commit_index != node.commit_seen:
            if (core.role == LEADER and core.commit_index > node.commit_seen
                    and core.commit_index >= core.log_start
                    and core.term_at(core.commit_index) != core.term):
                # Figure 3.7: counting replicas only commits entries of the current
                # term; older ones commit with them.
                raise self.violation(f"{node.name} (leader, term {core.term}) committed "
                                     f"index {core.commit_index} of term "
                                     f"{core.term_at(core.commit_index)}")
            node.commit_seen = core.commit_index
        if core.role != LEADER or node.was_leader_term == core.term:
            return
        node.was_leader_term = core.term
        self.res.elections += 1
        other = self.leaders.setdefault(core.term, node.sid)
        if other != node.sid:
            raise self.violation(f"election safety: {node.name} and "
                                 f"{self.nodes[other].name} both lead term {core.term}")
        self.log(f"{node.name} is leader of term {core.term}")
        # Leader completeness: every entry committed so far is in the new leader's log
        # (those before its log start are inside its snapshot, checked by state).
        for i, key in self.applied.items():
            if i >= core.log_end:
                raise self.violation(f"leader completeness: {node.name} (term {core.term}) "
                                     f"lacks committed index {i}")
            if i >= core.log_start and self.entry_key(core.entry(i)) != key:
                raise self.violation(f"leader completeness: {node.name} has "
                                     f"{self.entry_key(core.entry(i))} at committed index "
                                     f"{i}, not {key}")

    def apply(self, node: SimNode, c: Committed) -> None:
        sm = node.sm
        if c.is_snapshot:
            data = c.data
            sm.index, sm.n, sm.last, sm.h = c.index, data["n"], data["last"], data["h"]
            if sm.last != c.eid:
                raise self.violation(f"{node.name} snapshot at {c.index} has eid {c.eid} "
                                     f"but its state says {sm.last}")
        else:
            if c.index != sm.index + 1:
                raise self.violation(f"{node.name} applied index {c.index} after "
                                     f"{sm.index}")
            key = (c.term, c.eid, tuple(sorted(c.servers.items()))
                   if c.servers is not None else None, c.election_timer)
            old = self.applied.setdefault(c.index, key)
            if old != key:
                raise self.violation(f"state machine safety: {node.name} applies {key} at "
                                     f"{c.index}, another server applied {old}")
            if old is key:
                self.res.commits += 1
                self.check_commit_durable(node, c)
            want = self.success.get(c.index)
            if want is not None and want != c.eid:
                raise self.violation(f"committed command {want} at {c.index} lost: "
                                     f"{node.name} applies {c.eid}")
            sm.index = c.index
            if c.data is not None:
                cmd = c.data[1]["_sim"]
                if cmd["prereq"] is not None and cmd["prereq"] != sm.last:
                    raise self.violation(f"{node.name} applies command {cmd['cmd']} at "
                                         f"{c.index} with prereq {cmd['prereq']} after "
                                         f"{sm.last}")
                sm.n += 1
                sm.last = c.eid
                sm.h = (sm.h * 1000003 + _eid_hash(c.eid)) % (1 << 61)
        state = sm.state()
        old_state = self.state_at.setdefault(sm.index, state)
        if old_state != state:
            raise self.violation(f"state machine safety: {node.name} reaches {state} at "
                                 f"{sm.index}, another server reached {old_state}")

    def check_left(self, node: SimNode) -> None:
        """A server may only consider itself gone once a committed configuration
        no longer has it; otherwise the cluster keeps counting a dead member."""
        configs = [(i, key[2]) for i, key in self.applied.items() if key[2] is not None]
        if configs:
            _, servers = max(configs)
            if any(sid == node.sid for sid, _ in servers):
                raise self.violation(f"{node.name} left but the newest committed "
                                     f"configuration still has it")

    def check_commit_durable(self, node: SimNode, c: Committed) -> None:
        """The first time an index is applied anywhere it has just committed: it
        must then be durable on a majority of the configuration."""
        core = node.core
        assert core is not None
        # The majority is of the newest configuration the committer knew; a commit
        # can itself let the leader append the next configuration, so accept the
        # configuration at the entry's index too.
        for servers in (core.servers, core._servers_for_index(c.index)):
            held = sum(1 for sid in servers if self.nodes[sid].disk.has(c.index, c.term))
            if held > len(servers) // 2:
                return
        raise self.violation(f"durability: index {c.index} committed by {node.name} "
                             f"but durable on only {held} of {len(servers)} servers")

    def completed(self, node: SimNode, cmd: Command) -> None:
        if cmd.status == SUCCESS:
            self.res.successes += 1
            assert cmd.eid is not None
            old = self.success.setdefault(cmd.index, cmd.eid)
            if old != cmd.eid:
                raise self.violation(f"two commands succeeded at index {cmd.index}")
            applied = self.applied.get(cmd.index)
            if applied is not None and applied[1] != cmd.eid:
                raise self.violation(f"command {cmd.eid} reported committed at "
                                     f"{cmd.index}, where {applied[1]} was applied")
        else:
            self.res.failures += 1
        self.log(f"{node.name} command {cmd.eid and cmd.eid[:8]} -> {cmd.status} "
                 f"{cmd.index or ''}")

    # ---------------------------------------------------------------- network

    def linked(self, a: str, b: str) -> bool:
        return self.partition is None or self.partition.get(a) == self.partition.get(b)

    def check_durable(self, node: SimNode, m: RaftRpc) -> None:
        """A message may only mention a term, a vote or entries that the sender
        would still have after a crash (the leader's append requests are the
        documented exception for their entries, not for their term)."""
        d, core = node.disk, node.core
        assert core is not None
        what = None
        if m.rpc_term > d.term:
            what = f"term {m.rpc_term} (durable term {d.term})"
        elif isinstance(m, VoteReply) and (d.term != m.term or d.vote != m.vote):
            what = f"vote for {m.vote[:8]} in term {m.term}"
        elif isinstance(m, VoteRequest) and (
                d.vote != node.sid or not d.has(m.last_log_index, m.last_log_term)):
            what = f"candidacy with log {m.last_log_index}/{m.last_log_term}"
        elif isinstance(m, AppendReply) and m.log_end - 1 >= core.log_start and \
                not d.has(m.log_end - 1, core.term_at(m.log_end - 1)):
            what = f"log end {m.log_end}"
        elif isinstance(m, InstallSnapshotReply) and m.term == core.term and \
                not d.has(m.last_index, m.last_term):
            what = f"snapshot {m.last_index}/{m.last_term}"
        if what is not None:
            raise self.violation(f"durability: {node.name} sends {m.METHOD} with {what} "
                                 f"that a crash would lose")

    def send(self, node: SimNode, m: RaftRpc) -> None:
        self.res.messages += 1
        self.check_durable(node, m)
        if m.dst is not None:
            dst = self.nodes.get(m.dst)
        else:
            dst = self.by_address.get(m.address_hint or "")
        if dst is None or not self.linked(node.sid, dst.sid):
            return
        wire = orjson.dumps(m.to_jsonrpc())
        copies = 1
        if self.faults_on:
            if self.rng.random() < self.p.drop:
                return
            if self.rng.random() < self.p.dup:
                copies = 2
        for _ in range(copies):
            lo, hi = self.p.delay
            d = self.rng.randint(lo, hi)
            if self.faults_on and self.rng.random() < self.p.slow:
                d += self.rng.randint(100, 600)
            self.at(self.now + d, "deliver", node.sid, dst.sid, wire)

    def deliver(self, src: str, dst: str, wire: bytes) -> None:
        node = self.nodes[dst]
        if node.core is None or not self.linked(src, dst):
            return
        core = node.core
        msg = from_jsonrpc(orjson.loads(wire), cluster=core.cid, sid=core.sid)
        if self.trace is not None:
            self.log(f"{self.nodes[src].name} -> {node.name} {msg.METHOD} "
                     f"{_brief(msg)}")
        core.step(msg, self.now)
        self.after_input(node)

    # ---------------------------------------------------------------- faults and clients

    def members(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if not n.left and not n.joining]

    def leader(self) -> SimNode | None:
        best = None
        for n in self.nodes.values():
            if n.core is not None and n.core.role == LEADER and (
                    best is None or n.core.term > best.core.term):  # type: ignore[union-attr]
                best = n
        return best

    def client(self) -> None:
        for _ in range(self.rng.randint(1, self.p.burst)):
            self.client_command()

    def client_command(self) -> None:
        up = [n for n in self.members() if n.up and not n.leaving]
        if not up:
            return
        node = self.rng.choice(up)
        core = node.core
        assert core is not None
        self.next_cmd += 1
        prereq = node.sm.last if node.sm.index >= 0 else None
        if prereq is None:
            return
        data = [None, {"_sim": {"cmd": self.next_cmd, "prereq": prereq}}]
        if core.role == LEADER and self.hold_rng.random() < 0.3:
            # As a host does while its own transactions wait for their turn.
            core.set_hold_forwarded(not core.hold_forwarded, self.now)
        cmd = core.propose_command(data, prereq, self.now)
        self.log(f"client -> {node.name}: command {self.next_cmd} "
                 f"({cmd.eid and cmd.eid[:8]}) {cmd.status}")
        self.after_input(node)

    def crash(self, node: SimNode) -> None:
        assert node.core is not None
        node.disk.crash(self.rng)
        node.core = None
        node.incarnation += 1
        node.tick_at = None
        self.res.crashes += 1
        self.log(f"{node.name} crashes")

    def restart(self, node: SimNode) -> None:
        if node.up or node.left:
            return
        snap = node.disk.snapshot
        node.sm = StateMachine()
        node.was_leader_term = 0
        if snap is None:
            # It never installed a snapshot, so no configuration has it: start over.
            assert node.joining
            node.disk = DiskImage(None)
            node.core = None
            self.start_join(node, again=True)
            return
        # The host passes the cluster's addresses on every restart: a server that
        # cannot show, from its own disk, that its addition committed (its join was
        # cut short, or the entry adding it was still being written) asks again.
        remotes = [n.address for n in self.nodes.values() if not n.joining
                   and not n.left and n is not node]
        try:
            node.core = RaftCore.restore(node.sid, node.address, self.cid, snap,
                                         list(node.disk.records), remote_addresses=remotes,
                                         config=self.config(snap.election_timer or None),
                                         rng=self._core_rng(), now=self.now,
                                         logger=self._logger(node))
        except RaftError as e:
            raise self.violation(f"{node.name} cannot restart: {e}") from None
        node.commit_seen = node.core.commit_index
        node.joining = node.core.joining
        self.check_restored(node)
        self.log(f"{node.name} restarts (term {node.core.term}, log "
                 f"{node.core.log_start}..{node.core.log_end}, commit "
                 f"{node.core.commit_index})")
        self.after_input(node)

    def check_restored(self, node: SimNode) -> None:
        """A restarted core remembers exactly what its disk holds."""
        core, d = node.core, node.disk
        assert core is not None
        if core.log_start == 1 and not d.terms:
            return
        got = (core.term, core.vote, core.log_start, [e.term for e in core.entries])
        want = (d.term, d.vote, d.log_start, d.terms)
        # A one-server cluster elects itself at once on restart.
        if got != want and not (core.role == LEADER and len(core.servers) == 1):
            raise self.violation(f"{node.name} restarted as {got[:3]} but its disk says "
                                 f"{want[:3]}")

    def crashable(self, node: SimNode) -> bool:
        """Leaving servers are not crashed: a restart forgets that it was leaving
        (OVS keeps no record of it either), so the host would have to ask again."""
        return node.up and not node.leaving and not node.left

    FAULTS = (("crash", 3.0), ("crash_leader", 2.0), ("propose_and_crash", 1.5),
              ("crash_soon", 2.0),
              ("shutdown_leader", 1.0), ("transfer", 1.0), ("partition", 2.0),
              ("isolate_leader", 1.5), ("heal", 2.0), ("timer", 0.6), ("member", 2.0),
              ("snapshot_leader", 0.4))

    def fault(self) -> None:
        kinds = [(k, w) for k, w in self.FAULTS if k != "member" or self.p.membership]
        kind = self.rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        lead = self.leader()
        if lead is not None and not self.crashable(lead) and kind in (
                "crash_leader", "propose_and_crash", "shutdown_leader"):
            kind = "crash"
        getattr(self, f"fault_{kind}")(lead)

    def crash_for_a_while(self, node: SimNode) -> None:
        self.crash(node)
        lo, hi = self.p.downtime
        self.at(self.now + self.rng.randint(lo, hi), "restart", node.sid)

    def fault_crash(self, lead: SimNode | None) -> None:
        up = [n for n in self.members() if self.crashable(n)]
        if up:
            self.crash_for_a_while(self.rng.choice(up))

    def fault_crash_leader(self, lead: SimNode | None) -> None:
        if lead is not None:
            self.crash_for_a_while(lead)

    def fault_propose_and_crash(self, lead: SimNode | None) -> None:
        """The leader appends and sends entries, then dies before they are durable
        everywhere: the prefix of Figure 3.7's troubles."""
        if lead is None or lead.core is None:
            return
        for _ in range(self.rng.randint(1, 3)):
            self.next_cmd += 1
            data = [None, {"_sim": {"cmd": self.next_cmd, "prereq": None}}]
            lead.core.propose(data, self.now)
        self.after_input(lead)
        self.crash_for_a_while(lead)

    def fault_crash_soon(self, lead: SimNode | None) -> None:
        """Crash a server within a few message delays: while the entries it just
        received or sent are on their way to disk, or mid-election."""
        up = [n for n in self.members() if self.crashable(n)]
        if not up:
            return
        node = lead if lead is not None and self.rng.random() < 0.5 else self.rng.choice(up)
        if node is lead and lead is not None and lead.core is not None:
            self.next_cmd += 1
            data = [None, {"_sim": {"cmd": self.next_cmd, "prereq": None}}]
            lead.core.propose(data, self.now)
            self.after_input(lead)
        self.at(self.now + self.rng.randint(1, 3 * self.p.delay[1] + 10), "crash",
                node.sid, node.incarnation)

    def fault_shutdown_leader(self, lead: SimNode | None) -> None:
        """Graceful shutdown of the leader, as OVS's torture test "kill" does."""
        if lead is None or lead.core is None:
            return
        lead.core.transfer_leadership("this server is shutting down", self.now)
        self.res.transfers += 1
        self.after_input(lead)
        self.crash_for_a_while(lead)

    def fault_transfer(self, lead: SimNode | None) -> None:
        if lead is None or lead.core is None:
            return
        if lead.core.transfer_leadership("requested", self.now):
            self.res.transfers += 1
            self.log(f"{lead.name} transfers leadership")
        self.after_input(lead)

    def fault_partition(self, lead: SimNode | None) -> None:
        names = [n.sid for n in self.nodes.values()]
        if self.rng.random() < 0.4:
            lone = self.rng.choice(names)
            self.partition = {s: int(s == lone) for s in names}
        else:
            self.partition = {s: self.rng.randrange(2) for s in names}
        self.log(f"partition {self._groups()}")

    def fault_isolate_leader(self, lead: SimNode | None) -> None:
        """The leader keeps a minority (maybe nobody), so it goes on appending entries
        that the majority side will overwrite."""
        if lead is None:
            return self.fault_partition(lead)
        others = [n.sid for n in self.nodes.values() if n is not lead]
        self.rng.shuffle(others)
        keep = set(others[:self.rng.randint(0, max(0, (len(others) - 1) // 2))])
        self.partition = {s: int(s == lead.sid or s in keep) for s in self.nodes}
        self.log(f"partition {self._groups()}")
        return None

    def fault_heal(self, lead: SimNode | None) -> None:
        if self.partition is not None:
            self.partition = None
            self.log("heal partition")
        for n in self.nodes.values():
            if not n.up and not n.left:
                self.restart(n)
                break

    def fault_timer(self, lead: SimNode | None) -> None:
        if lead is None or lead.core is None:
            return
        t = lead.core.election_timer
        new = self.rng.choice([x for x in (500, 700, 1000, 1500, 2000) if x <= 2 * t])
        try:
            lead.core.change_election_timer(new, self.now)
            self.res.timer_changes += 1
            self.log(f"{lead.name} changes election timer {t} -> {new}")
        except RaftError as e:
            self.log(f"{lead.name} election timer: {e}")
        self.after_input(lead)

    def fault_snapshot_leader(self, lead: SimNode | None) -> None:
        if lead is None or lead.core is None:
            return
        lead.core.notify_snapshot_recommended()
        self.after_input(lead)

    def fault_member(self, lead: SimNode | None) -> None:
        if self.member_op is not None:
            return
        members = [n for n in self.members() if n.up]
        if len(members) > 2 and (len(members) > self.p.n or self.rng.random() < 0.5):
            node = self.rng.choice(members)
            assert node.core is not None
            node.leaving = True
            self.member_op = "leave"
            self.res.leaves += 1
            self.log(f"{node.name} leaves")
            node.core.leave(self.now)
            self.after_input(node)
        elif len(members) < self.p.n + 1:
            self.member_op = "join"
            self.start_join(self._new_node())

    def _groups(self) -> str:
        assert self.partition is not None
        g: dict[int, list[str]] = {}
        for sid, k in self.partition.items():
            g.setdefault(k, []).append(self.nodes[sid].name)
        return " | ".join(",".join(v) for _, v in sorted(g.items()))

    # ---------------------------------------------------------------- main loop

    def run_until(self, t_end: int, stop: Callable[[], bool] | None = None) -> bool:
        while self.queue and self.queue[0][0] <= t_end:
            t, _, kind, args = heapq.heappop(self.queue)
            self.now = max(self.now, t)
            self.res.events += 1
            if kind == "deliver":
                self.deliver(*args)
            elif kind == "tick":
                sid, inc, d = args
                node = self.nodes[sid]
                if node.core is not None and node.incarnation == inc and node.tick_at == d:
                    node.tick_at = None
                    node.core.tick(self.now)
                    self.after_input(node, ticked=True)
            elif kind == "sync":
                sid, inc, ticket = args
                node = self.nodes[sid]
                if node.core is not None and node.incarnation == inc:
                    node.disk.sync(ticket)
                    node.core.persisted(ticket, self.now)
                    self.after_input(node)
            elif kind == "client":
                if self.faults_on:
                    self.client()
                    lo, hi = self.p.client_every
                    self.at(self.now + self.rng.randint(lo, hi), "client")
            elif kind == "crash":
                node = self.nodes[args[0]]
                if self.faults_on and node.incarnation == args[1] and self.crashable(node):
                    self.crash_for_a_while(node)
            elif kind == "restart":
                if self.faults_on:
                    self.restart(self.nodes[args[0]])
            elif kind == "fault" and self.faults_on:
                self.fault()
                lo, hi = self.p.fault_every
                self.at(self.now + self.rng.randint(lo, hi), "fault")
            if stop is not None and stop():
                return True
        self.now = max(self.now, t_end)
        return stop is not None and stop()

    def run(self) -> SimResult:
        self.setup()
        # Let the cluster form before the faults start.
        if not self.run_until(self.p.form_bound_ms, self.formed):
            raise self.violation("the initial cluster did not form")
        self.log("cluster formed")
        self.at(self.now + 10, "client")
        self.at(self.now + self.rng.randint(*self.p.fault_every), "fault")
        self.run_until(self.now + self.p.chaos_ms)
        self.heal()
        self.quiet_catch_up()
        self.res.sim_ms = self.now
        self.final_checks()
        return self.res

    def formed(self) -> bool:
        lead = self.leader()
        return (lead is not None and not any(n.joining for n in self.nodes.values())
                and lead.core is not None and len(lead.core.servers) == self.p.n)

    def heal(self) -> None:
        start = self.now
        self.faults_on = False
        self.partition = None
        self.log("heal everything")
        for n in self.nodes.values():
            if not n.up and not n.left:
                self.restart(n)
        deadline = start + self.p.heal_bound_ms
        probe: list[Command] = []

        def probe_done() -> bool:
            lead = self.leader()
            if lead is None or lead.core is None or not lead.core.is_connected:
                return False
            if any(n.joining or (n.leaving and not n.left) for n in self.nodes.values()):
                return False
            if not probe or (probe[-1].done and probe[-1].status != SUCCESS):
                if lead.core.commit_index >= lead.core.log_start and \
                        lead.core.term_at(lead.core.commit_index) == lead.core.term:
                    data = [None, {"_sim": {"cmd": "probe", "prereq": None}}]
                    probe.append(lead.core.propose(data, self.now))
                    self.after_input(lead)
                return False
            if probe[-1].status != SUCCESS:
                return False
            target = max([probe[-1].index, *self.success])
            members = lead.core.servers
            return all(self.nodes[sid].up and self.nodes[sid].sm.index >= target
                       for sid in members)

        if not self.run_until(deadline, probe_done):
            lead = self.leader()
            raise self.violation(
                "liveness: no progress within "
                f"{self.p.heal_bound_ms} ms of healing (leader "
                f"{lead.name if lead else None}, probe "
                f"{[(c.status, c.index) for c in probe]}, joining "
                f"{[n.name for n in self.nodes.values() if n.joining]}, leaving "
                f"{[n.name for n in self.nodes.values() if n.leaving]}, members "
                f"{self._members_state(lead)}")
        self.res.heal_ms = self.now - start

    def quiet_catch_up(self) -> None:
        """A follower that was down while the leader compacted past its log (as
        `ovsdb-server/compact` does on a leader) comes back to a quiet cluster: the
        leader's heartbeats alone must bring it up to date and connected, with no
        write and no election (OVS 3.1 does; a client waiting for the member to be
        connected would otherwise wait for somebody else's write)."""
        lead = self.leader()
        assert lead is not None and lead.core is not None
        core = lead.core
        followers = [self.nodes[sid] for sid in core.servers if sid != lead.sid]
        if len(followers) < 2:
            return
        node = self.rng.choice(followers)
        self.crash(node)
        cmds = []
        for _ in range(3):
            self.next_cmd += 1
            data = [None, {"_sim": {"cmd": self.next_cmd, "prereq": None}}]
            cmds.append(core.propose(data, self.now))
        self.after_input(lead)
        if not self.run_until(self.now + 10 * core.election_timer,
                              lambda: all(c.done for c in cmds)
                              and lead.sm.index >= core.commit_index):
            raise self.violation("liveness: the leader did not commit with one server down")
        core.store_snapshot(lead.sm.snapshot_data(), self.now)
        self.res.snapshots += 1
        self.after_input(lead)
        term, target = core.term, core.commit_index
        self.log(f"{node.name} comes back behind the snapshot at {core.log_start - 1}")
        self.restart(node)

        def caught_up() -> bool:
            return (node.core is not None and node.core.is_connected
                    and node.sm.index >= target)

        if not self.run_until(self.now + 3 * core.election_timer, caught_up):
            back = node.core
            raise self.violation(
                f"liveness: {node.name}, back behind the leader's snapshot, did not catch "
                f"up from heartbeats (applied {node.sm.index} of {target}, connected "
                f"{back is not None and back.is_connected})")
        if lead.core is not core or core.role != LEADER or core.term != term:
            raise self.violation(f"{node.name} caught up only through an election")

    def _members_state(self, lead: SimNode | None) -> list[tuple[str, bool, int]]:
        if lead is None or lead.core is None:
            return []
        return [(self.nodes[sid].name, self.nodes[sid].up, self.nodes[sid].sm.index)
                for sid in lead.core.servers]

    def final_checks(self) -> None:
        """Full pairwise log matching over the logs as they are now."""
        cores = [n.core for n in self.nodes.values() if n.core is not None]
        for i, a in enumerate(cores):
            for b in cores[i + 1:]:
                lo = max(a.log_start, b.log_start)
                hi = min(a.log_end, b.log_end) - 1
                match = None
                for idx in range(hi, lo - 1, -1):
                    if a.term_at(idx) == b.term_at(idx):
                        match = idx
                        break
                if match is None:
                    continue
                for idx in range(lo, match + 1):
                    if self.entry_key(a.entry(idx)) != self.entry_key(b.entry(idx)):
                        raise self.violation(f"log matching: {a.sid[:4]} and {b.sid[:4]} "
                                             f"differ at {idx} below matching {match}")


def _brief(m: RaftRpc) -> str:
    d = m.to_json()
    for k in ("cluster", "from", "to"):
        d.pop(k, None)
    if "log" in d:
        d["log"] = len(d["log"])
    if "data" in d:
        d["data"] = "..."
    return orjson.dumps(d).decode()


def run_seed(seed: int, verbose: bool = False, params: SimParams | None = None
             ) -> SimResult:
    trace = print if verbose else None
    return Simulation(seed, params, trace).run()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyovsdb.raft.sim",
                                 description="Deterministic Raft simulation.")
    ap.add_argument("--seed", type=int, default=None, help="run one seed")
    ap.add_argument("--seeds", default="0-99", help="run a range A-B (default 0-99)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the trace")
    ap.add_argument("--no-sync-commit", action="store_true",
                    help="force sync_commit=False (followers learn commits at heartbeats)")
    args = ap.parse_args(argv)
    if args.seed is not None:
        seeds = [args.seed]
    else:
        a, _, b = args.seeds.partition("-")
        seeds = list(range(int(a), int(b or a) + 1))
    t0 = time.perf_counter()
    failed = 0
    for seed in seeds:
        params = SimParams.from_seed(seed)
        if args.no_sync_commit:
            params.sync_commit = False
        try:
            res = run_seed(seed, args.verbose, params)
        except Violation as e:
            failed += 1
            print(f"FAIL {e}")
            continue
        if args.verbose or len(seeds) == 1:
            print(res)
    dt = time.perf_counter() - t0
    print(f"{len(seeds) - failed}/{len(seeds)} seeds passed in {dt:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
