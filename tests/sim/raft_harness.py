"""A hand-driven network of RaftCores for unit tests: messages wait in one FIFO until
`run()` delivers them (or, with `delay`, until `advance()` reaches their arrival
time), disks are instant unless a server's disk is held, and time moves only through
`advance()`."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from pyovsdb.raft.core import Command, Committed, RaftConfig, RaftCore
from pyovsdb.raft.records import Record, Snapshot, SnapshotRecord
from pyovsdb.raft.rpc import RaftRpc, from_jsonrpc

CID = "3b1663e8-c7de-402e-a352-14435c3f5cf9"
SIDS = ["9c1d481b-a1cd-417d-9623-d8b12329c9f0", "4a3269d8-410f-4ecc-a09a-7d107f02a99c",
        "67b9eaea-5507-473a-a5f6-2e1dd12f39b5", "11111111-2222-4333-8444-555555555555",
        "66666666-7777-4888-8999-aaaaaaaaaaaa"]
EID0 = "562d904f-ff07-4a90-be78-d391e1f687cc"
SCHEMA = {"name": "T", "tables": {"kv": {"columns": {"k": {"type": "string"},
                                                      "v": {"type": "string"}}}},
          "version": "1.0.0"}
DATA0 = [SCHEMA, {}]


def addr(i: int) -> str:
    return f"unix:s{i + 1}.raft"


class Net:
    def __init__(self, sync_commit: bool = True, **config: Any) -> None:
        self.cores: dict[str, RaftCore] = {}
        self.queue: deque[tuple[int, str, RaftRpc]] = deque()
        self.delay = 0
        self.sent: list[RaftRpc] = []          # every message, in send order
        self.committed: dict[str, list[Committed]] = {}
        self.completed: dict[str, list[Command]] = {}
        self.records: dict[str, list[Record]] = {}
        self.held: set[str] = set()            # servers whose disk is slow
        self.down: set[str] = set()
        self.drop: Callable[[RaftRpc], bool] = lambda m: False
        self.now = 0
        self.config = dict(sync_commit=sync_commit, **config)
        self.snapshot_requests: list[str] = []
        self.snapshots: dict[str, Snapshot] = {}

    def cfg(self) -> RaftConfig:
        return RaftConfig(**self.config)

    def add(self, core: RaftCore) -> RaftCore:
        self.cores[core.sid] = core
        self.committed.setdefault(core.sid, [])
        self.completed.setdefault(core.sid, [])
        self.records.setdefault(core.sid, [])
        self.flush(core)
        return core

    @classmethod
    def cluster(cls, n: int, **kw: Any) -> Net:
        """`n` members that share one initial configuration (as if created and
        joined long ago), all followers at term 0."""
        net = cls(**kw)
        servers = {SIDS[i]: addr(i) for i in range(n)}
        snap = Snapshot(1, 1, DATA0, EID0, servers)
        for i in range(n):
            net.snapshots[SIDS[i]] = snap
            net.add(RaftCore.restore(SIDS[i], addr(i), CID, snap, [], config=net.cfg(),
                                     rng=random.Random(i)))
        return net

    def restart(self, i: int) -> RaftCore:
        """Server `i` crashes and comes back from everything it wrote (the disk is
        instant here, so nothing is lost)."""
        old = self.core(i)
        snap = self.snapshots[old.sid]
        records = self.records[old.sid]
        for r in records:
            if isinstance(r, SnapshotRecord):
                snap, records = r.snapshot, r.file_records()
        self.queue = deque(q for q in self.queue if old.sid not in (q[2].src, q[2].dst))
        core = RaftCore.restore(old.sid, old.local_address, CID, snap, list(records),
                                config=self.cfg(), rng=random.Random(i + 100), now=self.now)
        self.cores[old.sid] = core
        self.flush(core)
        return core

    def core(self, i: int) -> RaftCore:
        return self.cores[SIDS[i]]

    def flush(self, core: RaftCore) -> None:
        while core.has_ready():
            rd = core.ready()
            self.records[core.sid].extend(rd.records)
            self.committed[core.sid].extend(rd.committed)
            self.completed[core.sid].extend(rd.completed)
            if rd.snapshot_request:
                self.snapshot_requests.append(core.sid)
            for m in rd.messages:
                self.sent.append(m)
                self.queue.append((self.now + self.delay, core.sid, m))
            if rd.records and core.sid not in self.held:
                core.persisted(rd.records[-1].ticket, self.now)

    def release_disk(self, sid: str) -> None:
        self.held.discard(sid)
        core = self.cores[sid]
        if self.records[sid]:
            core.persisted(self.records[sid][-1].ticket, self.now)
        self.flush(core)

    def route(self, m: RaftRpc) -> RaftCore | None:
        if m.dst is not None:
            return self.cores.get(m.dst)
        for c in self.cores.values():
            if c.local_address == m.address_hint:
                return c
        return None

    def deliver(self, src: str, m: RaftRpc) -> None:
        dst = self.route(m)
        if dst is None or dst.sid in self.down or src in self.down or self.drop(m):
            return
        wire = orjson.loads(orjson.dumps(m.to_jsonrpc()))
        dst.step(from_jsonrpc(wire, cluster=dst.cid, sid=dst.sid), self.now)
        self.flush(dst)

    def run(self, limit: int = 10000) -> int:
        """Deliver until no message is left; returns how many were delivered."""
        n = 0
        while self.queue and n < limit:
            _, src, m = self.queue.popleft()
            self.deliver(src, m)
            n += 1
        return n

    def deliver_due(self) -> None:
        while self.queue and self.queue[0][0] <= self.now:
            _, src, m = self.queue.popleft()
            self.deliver(src, m)

    def advance(self, ms: int, step: int = 1) -> None:
        """Let `ms` pass, ticking due servers and delivering messages at once."""
        end = self.now + ms
        while self.now < end:
            self.now = min(end, self.now + step)
            for c in list(self.cores.values()):
                if c.sid in self.down:
                    continue
                d = c.next_deadline()
                if d is not None and d <= self.now:
                    c.tick(self.now)
                    self.flush(c)
                    d2 = c.next_deadline()
                    assert d2 is None or d2 > self.now, "deadline left in the past"
            if self.delay:
                self.deliver_due()
            else:
                self.run()

    def elect(self, i: int) -> RaftCore:
        """Make server `i` leader by a leadership-transfer style election."""
        c = self.core(i)
        c.take_leadership(self.now)
        self.flush(c)
        self.run()
        assert c.is_leader, c.status()
        return c

    def leader(self) -> RaftCore | None:
        leaders = [c for c in self.cores.values() if c.is_leader and c.sid not in self.down]
        return max(leaders, key=lambda c: c.term) if leaders else None

    def data_applied(self, sid: str) -> list[str | None]:
        return [c.eid for c in self.committed[sid] if c.data is not None and not c.is_snapshot]

    def heartbeats(self) -> list[RaftRpc]:
        return [m for m in self.sent if m.comment == "heartbeat" and m.METHOD == "append_request"]
