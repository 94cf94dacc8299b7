"""A clustered database on one member: the Raft core driven by real time, a real file
and real sockets, and the OVSDB side (executing, applying, answering clients).

Rules kept here:
- The core decides; this adapter only carries out what `ready()` asks, in order:
  write and fsync the records (then tell the core they are durable), send the
  messages, apply the committed entries, finish the completed commands.
- Any member accepts transactions: it executes them on its own copy, proposes the
  resulting transaction record with the eid of the last entry it applied as
  prerequisite, and answers the client only once the entry is committed and applied
  here, so the client's own updates reach it first. A stale prerequisite or a
  missing leader makes the member execute the transaction again, as the real server
  does; the client just waits.
- Monitors and reads are served from the local copy. The `_Server` row tells clients
  whether this member is connected, whether it is the leader, and its applied index;
  a client hears of the new index before the reply of the transaction that moved it.
  Blocked transactions (`wait`, on this database or on `_Server`) run again after
  every turn, as the real server runs its triggers after reading from its storage.
- Role changes are logged as the real server logs them (`raft_log`); the real
  server's fault injection (`cluster/failure-test`) acts at the same points
  (`failure_test`).
- Transaction ids (`monitor_cond_since`, `update3`) are entry ids, the loaded state's
  too (the snapshot's or conversion's entry), so a client can resync against any
  member that has the entry in its history.
- Automatic compaction follows the real server's policy; a leader of several servers
  hands leadership over before writing a snapshot. `ovsdb-server/compact` snapshots at
  once, on a leader too, as the real server does.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ovsdb.changeset import Changeset, RowChange, merge
from ..ovsdb.database import Database
from ..ovsdb.errors import OvsdbError
from ..ovsdb.transaction import Blocked, Committed, Failed, Outcome
from ..raft import core as rc
from ..raft.records import EntryRecord, Header, SnapshotRecord, TermRecord, VoteRecord
from ..storage import clustered
from ..storage.standalone import snapshot_record
from ..util import batch
from . import failure_test
from .hosted import HostedDb
from .raft_log import RoleLog
from .raft_net import RaftNet

if TYPE_CHECKING:
    from .server import Server

log = logging.getLogger("raft")

RETRY_MS = 100
MAX_GROUP = 256     # client transactions in one raft entry
# A follower that forwarded a committed command hears of the commit at once (seed 003);
# the others within this many ms, or sooner with the next append request: under load
# that saves every commit heartbeat and its reply, two of the four raft messages per
# follower per transaction (see raft/core.py).
COMMIT_SYNC_DELAY_MS = int(os.environ.get("PYOVSDB_COMMIT_SYNC_DELAY_MS", "20"))
DURABLE = (TermRecord, VoteRecord, EntryRecord)
MAX_ATTEMPTS = 1000
# Raft's refusals are all "cluster error"s to the real server, which runs the
# transaction again (`ovsdb_trigger_try`): "server shutdown" too, what a member that is
# joining or leaving says, until the database is removed and the client told "canceled".
RETRYABLE = (rc.BAD_PREREQ, rc.NOT_LEADER, rc.TIMEOUT, rc.LOST_LEADERSHIP, rc.SHUTDOWN)
MIN_SNAPSHOT_RECORDS = 100
MIN_SNAPSHOT_BYTES = 10 * 1024 * 1024


def now_ms() -> int:
    return int(time.monotonic() * 1000)


def _inverse(cs: Changeset) -> Changeset:
    """The changeset that undoes `cs` (applied right after it)."""
    return Changeset({t: {u: RowChange(u, ch.new, ch.old) for u, ch in changes.items()}
                      for t, changes in cs.tables.items()})


def address_nickname(address: str | None, sid: str) -> str:
    """`raft_address_to_nickname`: "s1" for unix:/run/s1.raft, else the sid's first 4
    hex digits."""
    if address is not None and address.startswith("unix:"):
        base = address[5:].rsplit("/", 1)[-1].split(".", 1)[0]
        if base:
            return base
    return sid[:4]


class Canceled(Outcome):
    """The database went away (it left its cluster, or the server exits) before the
    transaction was answered: the client gets the JSON-RPC error "canceled", as from
    the real server's `ovsdb_jsonrpc_trigger_complete`, and its IDL tries again."""

    __slots__ = ()


CANCELED = Canceled()
_CONVERSION: list[Any] = []  # the `ops` of a conversion's `_Pending` (see `convert`)


class _Pending:
    """A client transaction waiting for its entry to commit (or to be retried)."""

    __slots__ = ("_finish", "attempts", "done", "eid", "index", "ops", "owns_lock",
                 "results", "seq", "started")
    _next_seq = 0

    def __init__(self, ops: list[Any], started: float, owns_lock: Any,
                 finish: Callable[[Outcome], None]) -> None:
        self.ops = ops
        self.started = started
        self.owns_lock = owns_lock
        self._finish = finish
        self.results: Outcome | None = None
        self.index = 0
        self.attempts = 0
        self.eid: str | None = None     # of the entry it was last proposed in
        self.done = False
        # Arrival order: transactions run (and are answered) in it, whatever retries
        # they went through.
        _Pending._next_seq += 1
        self.seq = _Pending._next_seq

    def finish(self, outcome: Outcome) -> None:
        """Answer the client, once."""
        if not self.done:
            self.done = True
            self._finish(outcome)


class ClusteredDb:
    def __init__(self, server: Server, path: str, *, sync_commit: bool = True,
                 name: str | None = None) -> None:
        self.server = server
        self.path = path
        self.snapshots = 0  # snapshots stored since the start (metrics: compactions)
        header, records, end, problem = clustered.read(path, name)
        if problem:
            # The real server's words and level; the rest goes at the next write.
            log.warning("%s", problem)
        self.header = header
        self.name = header.name
        self.log = clustered.ClusteredLog(path, end)
        now = now_ms()
        config = rc.RaftConfig(sync_commit=sync_commit,
                               commit_sync_delay=COMMIT_SYNC_DELAY_MS)
        rng = random.Random(os.urandom(16))
        if header.remote_addresses is not None:
            self.core = rc.RaftCore.join(header.sid, header.local_address,
                                         header.remote_addresses, cid=header.cid,
                                         config=config, rng=rng, now=now)
        else:
            assert header.snapshot is not None
            others = [a for s, a in header.snapshot.servers.items() if s != header.sid]
            self.core = rc.RaftCore.restore(
                header.sid, header.local_address, header.cid, header.snapshot, records,
                remote_addresses=others or None, config=config, rng=rng, now=now)
        self.hosted: HostedDb | None = None
        self.prereq: str | None = None
        self.applied_index = 0
        self.pending: dict[str, list[_Pending]] = {}   # eid -> transactions in it
        self.waiting_apply: list[_Pending] = []
        # eid -> (prereq it was executed against, changeset) of our own proposals
        self._own: dict[str, tuple[str | None, Changeset]] = {}
        # eid -> transactions whose command timed out while in that entry
        self._maybe: dict[str, list[tuple[_Pending, Outcome]]] = {}
        self.retry: list[_Pending] = []
        self.net = RaftNet(header.sid, header.local_address, header.cid, self._on_rpc,
                           server.pki.server_context, server.pki.client_context)
        self.net.on_up = self._on_up
        self.net.on_down = self._on_down
        self._timer: asyncio.TimerHandle | None = None
        self._retry_timer: asyncio.TimerHandle | None = None
        self._retry_after_apply = False
        self._retry_scheduled = False
        self._timer_deadline: int | None = None
        self._peers_key: tuple[Any, ...] | None = None
        self._server_row: tuple[Any, ...] | None = None
        self.snapshot_size = self.log.size
        self.next_snapshot = now + random.randint(600_000, 1_200_000)
        self.closed = False
        self.left = False
        self.last_msg: dict[str, int] = {}   # sid -> when we last heard from it
        # Durability of the records written (tickets, see `_write`).
        self._synced = 0
        self._sync_target = 0
        self._sync_scheduled = False
        self.role_log = RoleLog(self.core, self.nickname)

    # -- lifetime ----------------------------------------------------------------------

    async def start(self) -> None:
        from .commands import cluster_opened

        cluster_opened(self.server)
        failure_test.register(self)
        self.role_log.started()
        await self.net.listen()
        self._sync_peers()
        self.process()

    def close(self, graceful: bool = True) -> None:
        if self.closed:
            return
        failure_test.unregister(self)
        if graceful and self.core.is_leader:
            self.core.transfer_leadership("server shutdown")
            self.process()
        self.closed = True
        for t in (self._timer, self._retry_timer):
            if t is not None:
                t.cancel()
        waiting = [*self.retry, *self.waiting_apply,
                   *(p for group in self.pending.values() for p in group)]
        self.retry, self.waiting_apply, self.pending = [], [], {}
        for p in sorted(waiting, key=lambda p: p.seq):
            p.finish(CANCELED)
        self.net.close()
        if graceful:
            self._flush_sync()
        self.log.close()

    # -- driving the core --------------------------------------------------------------

    def process(self) -> None:
        core = self.core
        applied_before = self.applied_index
        while core.has_ready() and not self.closed:
            r = core.ready()
            # Messages first: they are cleared for sending whatever this batch writes
            # (append requests go out while the leader writes the same entries).
            if failure_test.current is None:
                for m in r.messages:
                    self.net.send(m)
                if r.records:
                    self._write(r.records)
            else:
                failure_test.before_send(self, r)
                sent = [m for m in r.messages if self.net.send(m)]
                if r.records:
                    self._write(r.records)
                failure_test.after_send(self, r, sent)
            for c in r.committed:
                self._apply(c)
            for cmd in r.completed:
                self._completed(cmd)
            if r.snapshot_request and core.may_snapshot() and self.hosted is not None:
                self._store_snapshot()
        if self.closed:
            return
        if failure_test.current is not None:
            failure_test.turn(self)
            if core.has_ready():
                self.process()
                return
        self.role_log.update()
        if (self._retry_after_apply and self.retry
                and (self.applied_index != applied_before or not self._must_wait())):
            self._retry_after_apply = False
            self._retry_soon()
        # The _Server row's new index goes out before the replies of the transactions
        # that moved it, as on the real server: it sends a completed transaction's
        # reply on the next turn of its main loop, flushing every monitor first, and
        # _Server was refreshed at the end of the turn that applied the entry.
        self._update_server_row()
        self._finish_applied()
        self._sync_peers()
        if core.left and not self.left:
            self.left = True
            log.info("%s: left the cluster", self.name)
            asyncio.get_running_loop().call_soon(self.server.cluster_left, self)
        # Blocked transactions (`wait`) see what this turn applied and the new _Server
        # row, as the real server runs its triggers after reading from the cluster:
        # `ovsdb-client wait DB connected` returns once the member is connected.
        self.server.after_request()
        self._schedule()

    def _process_soon(self) -> None:
        """`process()` once the current burst of input is handled (the end of the
        outermost output batch, before its sends are flushed), so that the
        transactions and messages that arrived together leave as one append request
        per follower and one write; at once when no batch is open."""
        if batch.active():
            batch.defer_storage(self, self.process)
        else:
            self.process()

    def _schedule(self) -> None:
        """One timer for the core's next deadline; left alone when the deadline did
        not move (most inputs do not move it, and re-arming costs per message)."""
        d = self.core.next_deadline()
        if d == self._timer_deadline and (self._timer is not None or d is None):
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = d
        if d is not None:
            delay = max(0.0, (d - now_ms()) / 1000.0)
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline = None
        if self.closed:
            return
        self.core.tick(now_ms())
        self.process()
        self._maybe_snapshot()

    def _on_rpc(self, msg: Any) -> None:
        if self.closed:
            return
        if failure_test.current is not None:
            failure_test.received(self, msg)
        if msg.src in self.core.servers:
            self.last_msg[msg.src] = now_ms()
        if self.net.cluster_id is None and self.core.cid is not None:
            self.net.cluster_id = self.core.cid
        self.core.step(msg, now_ms())
        if self.net.cluster_id is None and self.core.cid is not None:
            self.net.cluster_id = self.core.cid
        self._process_soon()

    def _on_up(self, sid: str | None, address: str) -> None:
        if not self.closed:
            self.core.on_connected(sid, address)
            self.process()

    def _on_down(self, sid: str) -> None:
        if not self.closed:
            self.core.on_disconnected(sid)

    def _sync_peers(self) -> None:
        """Keep the network's peers in line with the configuration (checked after
        every input, so compared cheaply first)."""
        core = self.core
        key = (core.joining, tuple(core.remote_addresses) if core.joining else (),
               tuple((sid, s.address) for sid, s in core.servers.items()))
        if key == self._peers_key:
            return
        self._peers_key = key
        if core.joining:
            self.net.set_joining(core.remote_addresses)
        self.net.set_peers({sid: s.address for sid, s in core.servers.items()})

    # -- records -----------------------------------------------------------------------

    def _write(self, records: list[Any]) -> None:
        """Write the records in order; make them durable at the end of this loop pass.

        Only terms, votes and entries need an fsync before we speak of them; commit
        index, leader and note records are hints a replay or the leader rebuilds (the
        real server does not sync them either: "we don't need to sync it"). The fsync
        is deferred to one callback after everything the loop received in this pass
        has been handled, so a burst of transactions (or of append requests) shares
        one fsync, as the real server's `afsync` thread shares one between the writes
        queued while it runs. (A worker thread here costs more in GIL hand-offs than
        the fsync itself on this kind of machine.) The core hears `persisted(ticket)`
        only for a prefix that an fsync has covered."""
        batch: list[Any] = []
        durable = False
        try:
            for rec in records:
                if isinstance(rec, SnapshotRecord):
                    if batch:
                        self.log.append(batch, sync=False)
                        batch = []
                    header = Header(sid=self.core.sid, name=self.name,
                                    local_address=self.core.local_address,
                                    cid=self.core.cid, snapshot=rec.snapshot)
                    # A whole new file, fsynced and renamed into place: everything up
                    # to here is durable in it.
                    self.log.replace(header, rec.file_records())
                    self.snapshot_size = self.log.size
                    self._synced = max(self._synced, rec.ticket)
                    durable = False
                else:
                    batch.append(rec)
                    durable = durable or isinstance(rec, DURABLE)
            self.log.append(batch, sync=False)
        except OSError as e:
            self._io_failed(e)
            return
        last = records[-1].ticket
        if durable or self._sync_target > self._synced:
            self._sync_target = last
            if not self._sync_scheduled:
                self._sync_scheduled = True
                asyncio.get_running_loop().call_soon(self._sync_now)
        else:
            self._synced = last
            self.core.persisted(last, now_ms())

    def _sync_now(self) -> None:
        self._sync_scheduled = False
        if self.closed or self._sync_target <= self._synced:
            return
        target = self._sync_target
        try:
            self.log.writer.sync()
        except OSError as e:
            self._io_failed(e)
            return
        self._synced = target
        self.core.persisted(target, now_ms())
        self.process()

    def _io_failed(self, e: BaseException) -> None:
        """The file may no longer hold what the core thinks: stop taking part (the
        core answers "I/O error") until restarted, as the real server does."""
        log.error("%s: write to %s failed (%s); no longer taking part in the cluster",
                  self.name, self.path, e)
        self.core.fail()

    def _flush_sync(self) -> None:
        """At a graceful close: whatever is written becomes durable now."""
        if self._sync_target > self._synced:
            try:
                self.log.writer.sync()
            except OSError:
                pass

    # -- applying ----------------------------------------------------------------------

    def _apply(self, c: rc.Committed) -> None:
        self.applied_index = c.index
        if c.data is None:
            return
        if c.is_snapshot:
            self._load(clustered.apply_entry(None, c.data), c.eid)
            return
        new_schema, txn = c.data
        if new_schema is not None:
            self._load(clustered.apply_entry(None, [new_schema, None]), c.eid)
        hosted = self.hosted
        own = self._own.pop(c.eid, None) if c.eid is not None else None
        if txn and hosted is not None:
            db = hosted.db
            if own is not None and own[0] == self.prereq and new_schema is None:
                # Our own transaction, committed right after the entry it was executed
                # against: its changeset is exactly what the record says.
                cs = own[1]
            else:
                cs = Changeset.from_record(db.schema, txn, lambda t: db.tables[t].rows,
                                           versions=db.new_version)
            cs.txn_id = c.eid
            if cs:
                hosted.commit(cs)
                self.server.note_commit(hosted)
        if c.eid is not None:
            self.prereq = c.eid
            late = self._maybe.pop(c.eid, None)
            if late:
                for p, results in late:
                    if not p.done:
                        p.results, p.index = results, c.index
                        self.waiting_apply.append(p)

    def _load(self, db: Database, eid: str | None) -> None:
        """A new database: the first snapshot, an installed one, or a conversion."""
        self.prereq = eid
        self._own.clear()       # their changesets refer to rows of the old database
        if self.hosted is None:
            self.hosted = HostedDb(db, model="clustered", clock=lambda: now_ms() * 1.0)
            self.hosted.cluster = self
            self.hosted.on_trigger_deadline = \
                lambda _h: self.server._schedule_trigger_timer()
            self.server.attach_cluster_db(self)
        else:
            self.server.replace_db_contents(self.hosted, db, "database replaced from the "
                                            "cluster")
        if eid is not None:
            # The loaded state is a transaction of the log: its id resumes on every
            # member while the history keeps it, as on the real server.
            self.hosted.restart_history(eid)

    # -- client transactions -----------------------------------------------------------

    def submit(self, ops: list[Any], started: float, owns_lock: Any, outcome: Outcome,
               finish: Callable[[Outcome], None]) -> None:
        """Commit an executed transaction through the cluster; `finish` gets the
        outcome to reply with once it is applied here (or failed for good)."""
        p = _Pending(ops, started, owns_lock, finish)
        self._propose(p, outcome)

    def convert(self, schema_json: Any, new_db: Database,
                finish: Callable[[Outcome], None]) -> None:
        """Online schema conversion: one entry holding the new schema and the converted
        rows (`ovsdb_to_txn_json`'s record, as the real server writes it), so every
        member loads it when it applies the entry; `finish` once it is applied here
        (`Canceled` if it could not be committed: not retried, since it was converted
        from a database that may have changed meanwhile)."""
        data = snapshot_record(new_db, "converted by ovsdb-server")
        p = _Pending(_CONVERSION, now_ms(), None, finish)
        p.results = Committed([{}], Changeset(), False)
        p.attempts = 1
        cmd = self.core.propose_command([schema_json, data], self.prereq, now_ms())
        if cmd.done:
            p.finish(CANCELED)
            return
        assert cmd.eid is not None
        p.eid = cmd.eid
        self.pending[cmd.eid] = [p]
        self._process_soon()

    def _must_wait(self) -> bool:
        """Would a proposal now fail its prerequisite? Yes while an entry of ours is
        on its way: on the leader it is already in the log (the real server does not
        start a second transaction either); on a follower the leader would refuse the
        second one. On the leader, also while a follower that lost a race is owed
        the next turn (`RaftCore.turn_owed`). Waiting lets the transactions that
        queue up meanwhile go into one entry (`_retry_now`)."""
        core = self.core
        return (bool(self.pending) or bool(self.waiting_apply)
                or (core.is_leader and (self.prereq != core.current_eid
                                        or core.turn_owed())))

    def busy(self) -> bool:
        """Are transactions of clients still on their way (proposed, committed but
        not applied here, or queued)? A transaction that arrives now must not run
        before them: it would not see their effects (`submit_ops`)."""
        return self._must_wait() or bool(self.retry)

    def submit_ops(self, ops: list[Any], started: float, owns_lock: Any,
                   finish: Callable[[Outcome], None]) -> None:
        """Queue a transaction that has not been executed yet behind those on their
        way; it executes (and replies, whatever its outcome) in arrival order."""
        p = _Pending(ops, started, owns_lock, finish)
        self.retry.append(p)
        if self._must_wait():
            self._wait_turn()
        else:
            self._retry_soon()

    def _wait_turn(self) -> None:
        """Run the queued transactions again once what is on its way is applied. On a
        leader held up only by the followers' entries, hold their next ones back
        until ours are proposed (`RaftCore.set_hold_forwarded`): otherwise a steady
        stream from the followers starves the leader's own clients."""
        self._retry_after_apply = True
        self._arm_retry()
        core = self.core
        if (core.is_leader and not core.hold_forwarded and not self.pending
                and not self.waiting_apply):
            core.set_hold_forwarded(True, now_ms())

    def _propose(self, p: _Pending, outcome: Outcome) -> None:
        if not isinstance(outcome, Committed) or not outcome.changeset:
            p.finish(outcome)
            return
        assert self.hosted is not None
        p.results = outcome
        if self._must_wait():
            # Behind transactions still on their way: it runs again once they are
            # applied.
            self.retry.append(p)
            self._wait_turn()
            return
        if self.retry:
            # Behind queued ones: arrival order is kept.
            self.retry.append(p)
            self._retry_soon()
            return
        self._propose_group([p], outcome.changeset)

    def _propose_group(self, group: list[_Pending], cs: Changeset) -> None:
        """One entry for the transactions of `group`, executed one after the other;
        `cs` is their combined changeset."""
        hosted = self.hosted
        assert hosted is not None
        cs.date = int(time.time() * 1000)
        record = cs.to_record(hosted.db.schema)
        for p in group:
            p.attempts += 1
        cmd = self.core.propose_command([None, record], self.prereq, now_ms())
        if cmd.done:
            for p in group:
                self._failed(p, cmd.status)
        else:
            assert cmd.eid is not None
            self.pending[cmd.eid] = group
            self._own[cmd.eid] = (self.prereq, cs)
            for p in group:
                p.eid = cmd.eid
        self._process_soon()

    def _completed(self, cmd: rc.Command) -> None:
        if cmd.status != rc.SUCCESS and cmd.eid is not None:
            self._own.pop(cmd.eid, None)
        group = self.pending.pop(cmd.eid, None) if cmd.eid is not None else None
        if group is None:
            return
        for p in group:
            if p.done:
                continue
            if cmd.status == rc.SUCCESS:
                p.index = cmd.index
                self.waiting_apply.append(p)
            else:
                self._failed(p, cmd.status)

    def _failed(self, p: _Pending, status: str) -> None:
        if p.done:
            return
        if p.ops is _CONVERSION:
            p.finish(CANCELED)
            return
        if self.closed:
            p.finish(CANCELED)
            return
        if status == rc.TIMEOUT and p.eid is not None and p.results is not None:
            # The entry may still commit (a timeout proves nothing): if it does
            # before the transaction has run again, that is its answer, not a second
            # execution with a second effect.
            if len(self._maybe) >= 1000:
                self._maybe = {e: [x for x in ps if not x[0].done]
                               for e, ps in self._maybe.items()
                               if any(not x[0].done for x in ps)}
            self._maybe.setdefault(p.eid, []).append((p, p.results))
        if status in RETRYABLE and p.attempts < MAX_ATTEMPTS and not self.closed:
            self.retry.append(p)
            if status == rc.BAD_PREREQ:
                # Our copy is behind the log: executing again before something new is
                # applied here would fail the same way (on the leader, synchronously,
                # in a tight loop). Retry after the next apply, or after a while if
                # nothing comes (the real server waits for its prereq the same way).
                self._retry_after_apply = True
            self._arm_retry()
            return
        assert p.results is not None
        results = list(getattr(p.results, "results", []))
        results.append({"error": "cluster error" if status != rc.SHUTDOWN else "not allowed",
                        "details": f"transaction failed: {status}"})
        p.finish(Failed(results, OvsdbError("cluster error", status)))

    def _retry_soon(self) -> None:
        if not self._retry_scheduled:
            self._retry_scheduled = True
            asyncio.get_running_loop().call_soon(self._retry_now)

    def _arm_retry(self) -> None:
        if self._retry_timer is None and self.retry and not self.closed:
            self._retry_timer = asyncio.get_running_loop().call_later(
                RETRY_MS / 1000, self._retry_now)

    def _retry_now(self) -> None:
        """Execute the waiting transactions again, in arrival order, and propose as
        many as commit as one entry (group commit): each executes against the state
        its predecessors in the group leave, which is applied to the database for
        the time of the next execution only and then undone (rows are immutable, so
        undoing restores exactly the same objects). A transaction that does not
        commit (it fails, reads only, or waits) ends the group: its answer must not
        depend on changes that are not committed yet, so it runs again once they
        are."""
        if self._retry_timer is not None:
            self._retry_timer.cancel()
        self._retry_timer = None
        self._retry_after_apply = False
        self._retry_scheduled = False
        retry, self.retry = self.retry, []
        retry = sorted((p for p in retry if not p.done), key=lambda p: p.seq)
        hosted = self.hosted
        if hosted is None or self.closed:
            return
        if self._must_wait():
            self.retry = retry
            self._wait_turn()
            return
        group: list[_Pending] = []
        done: list[Changeset] = []
        db = hosted.db
        try:
            for i, p in enumerate(retry):
                if len(group) >= MAX_GROUP:
                    self.retry.extend(retry[i:])
                    break
                outcome = hosted.execute(p.ops, started=p.started, owns_lock=p.owns_lock)
                if isinstance(outcome, Committed) and outcome.changeset:
                    p.results = outcome
                    group.append(p)
                    if i + 1 < len(retry):
                        db.apply(outcome.changeset)
                        done.append(outcome.changeset)
                    continue
                if group:
                    self.retry.extend(retry[i:])
                    break
                if isinstance(outcome, Blocked):
                    # A wait that held before no longer does: wait again, like a
                    # trigger, until it holds or its timeout (from the start) expires.
                    self.retry.append(p)
                    continue
                p.finish(outcome)
        finally:
            for cs in reversed(done):
                db.apply(_inverse(cs))
        if len(group) == 1:
            assert group[0].results is not None
            self._propose_group(group, group[0].results.changeset)  # type: ignore[attr-defined]
        elif group:
            changesets = [p.results.changeset for p in group]  # type: ignore[union-attr]
            cs = merge(changesets)
            comments = [c.comment for c in changesets if c.comment]
            cs.comment = "\n".join(comments) if comments else None
            self._propose_group(group, cs)
        if self.core.hold_forwarded:
            # Ours are in the log (or there were none to propose): the followers'
            # turn.
            self.core.set_hold_forwarded(False, now_ms())
            self._process_soon()
        self._arm_retry()

    def _finish_applied(self) -> None:
        if not self.waiting_apply:
            return
        still = []
        for p in self.waiting_apply:
            if p.done:
                continue
            if p.index <= self.applied_index:
                assert p.results is not None
                p.finish(p.results)
            else:
                still.append(p)
        self.waiting_apply = still

    # -- _Server and status ------------------------------------------------------------

    def _update_server_row(self) -> None:
        core = self.core
        row = (core.is_connected and self.hosted is not None, core.is_leader, core.cid,
               self.applied_index if self.hosted is not None else None)
        if row == self._server_row:
            return
        self._server_row = row
        server_db = self.server.server_db
        server_db.set_cluster_row(self, connected=row[0], leader=row[1])
        self.server.note_commit(server_db.hosted)

    def nickname(self, sid: str | None) -> str:
        """What the real server calls a server in logs and status: the file name of a
        unix address up to its first dot, otherwise the first 4 digits of its id
        (`raft_address_to_nickname`)."""
        if sid is None:
            return "unknown"
        core = self.core
        s = core.servers.get(sid) or core.add_servers.get(sid)
        address = core.local_address if sid == core.sid else s.address if s else None
        return address_nickname(address, sid)

    def status_text(self) -> str:
        """`cluster/status`, line for line as the real server prints it
        (`raft_unixctl_status`)."""
        core = self.core
        st = core.status()
        now = now_ms()

        def who(sid: str | None) -> str:
            return "self" if sid == core.sid else self.nickname(sid)

        lines = [
            self.nickname(core.sid),
            f"Name: {self.name}",
            f"Cluster ID: {core.cid[:4]} ({core.cid})" if core.cid else
            "Cluster ID: not yet known",
            f"Server ID: {core.sid[:4]} ({core.sid})",
            f"Address: {core.local_address}",
            f"Status: {st['status']}",
        ]
        if core.joining:
            lines.append("Remotes for joining:"
                         + "".join(f" {a}" for a in core.remote_addresses))
        if core.is_leader:
            for s in core.add_servers.values():
                lines.append(f"Adding server {self.nickname(s.sid)} ({s.sid[:4]} at "
                             f"{s.address}) ({s.phase})")
            rs = core.remove_server
            if rs is not None:
                lines.append(f"Removing server {address_nickname(rs.address, rs.sid)} "
                             f"({rs.sid[:4]} at {rs.address}) ({rs.phase})")
        lines += [
            f"Role: {st['role']}",
            f"Term: {st['term']}",
            f"Leader: {who(st['leader'])}",
            f"Vote: {who(st['vote'])}",
            "",
        ]
        if core.election_start is not None:
            reason = "leadership_transfer" if core.leadership_transfer else "timeout"
            lines.append(f"Last Election started {now - core.election_start} ms ago, "
                         f"reason: {reason}")
        if core.election_won is not None:
            lines.append(f"Last Election won: {now - core.election_won} ms ago")
        timer = f"Election timer: {st['election_timer']}"
        if core.is_leader and core.election_timer_new:
            timer += f" (changing to {core.election_timer_new})"
        lines += [
            timer,
            f"Log: [{st['log'][0]}, {st['log'][1]}]",
            f"Entries not yet committed: {st['log'][1] - 1 - st['commit_index']}",
            f"Entries not yet applied: {st['log'][1] - 1 - st['last_applied']}",
            "Connections:" + "".join(f" {c}" for c in self.net.describe(self.nickname)),
            f"Disconnections: {self.net.disconnections}",
            "Servers:",
        ]
        for s in core.servers.values():
            line = f"    {self.nickname(s.sid)} ({s.sid[:4]} at {s.address})"
            if s.sid == core.sid:
                line += " (self)"
            if s.phase != rc.STABLE:
                line += f" ({s.phase})"
            if core.role == rc.CANDIDATE:
                if s.vote is not None:
                    line += f" (voted for {self.nickname(s.vote)})"
            elif core.is_leader:
                line += f" next_index={s.next_index} match_index={s.match_index}"
            last = self.last_msg.get(s.sid)
            if last is not None and s.sid != core.sid:
                line += f" last msg {now - last} ms ago"
            lines.append(line)
        return "\n".join(lines) + "\n"

    # -- compaction --------------------------------------------------------------------

    def _maybe_snapshot(self) -> str | None:
        core = self.core
        if self.hosted is None:
            return "database not joined yet"
        now = now_ms()
        if now < self.next_snapshot or core.log_length < MIN_SNAPSHOT_RECORDS:
            return None
        size = self.log.size
        if size < MIN_SNAPSHOT_BYTES or size < 2 * self.snapshot_size:
            self.next_snapshot = now + random.randint(60_000, 120_000)
            return None
        if not core.may_snapshot():
            if core.is_leader:
                self.role_log.transferring_for_snapshot()
                core.notify_snapshot_recommended()
                self.process()
            return "cannot snapshot now (leader of a cluster, or joining/leaving)"
        self._store_snapshot()
        self.next_snapshot = now + random.randint(600_000, 1_200_000)
        return None

    def _store_snapshot(self) -> None:
        hosted = self.hosted
        if hosted is None:
            raise rc.RaftError("cannot store a snapshot while joining cluster")
        db = hosted.db
        schema_json = db.schema.json or db.schema.to_json()
        # The real server's snapshot data is its online-compaction record.
        data = snapshot_record(db, "compacting database online", is_diff=True)
        self.core.store_snapshot([schema_json, data], now_ms())
        self.snapshots += 1
        self.process()

    def compact(self) -> str | None:
        """`ovsdb-server/compact`: a snapshot now, on a leader too (only the automatic
        compaction hands leadership over first), as the real server does. Returns the
        problem, in the real server's words, if there is one."""
        try:
            self._store_snapshot()
        except rc.RaftError as e:
            return f"ovsdb error: {e}"
        self.next_snapshot = now_ms() + random.randint(600_000, 1_200_000)
        return None
