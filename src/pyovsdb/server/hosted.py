"""A database as the server hosts it: rows, storage, monitors, history, blocked waits.

Rules kept here:
- Commit order is fixed: store (the transaction is durable as promised) -> apply to the
  in-memory rows -> record in the history -> notify the monitors it concerns (those
  the fan-out index finds, `fanout.py`). A client's reply is
  sent by the caller after `commit` returns, so the updates caused by its own
  transaction always precede its reply on the same connection.
- A monitor whose session cannot write holds the changeset back (`Monitor.hold`)
  instead of rendering it; its session sends the merged changes later.
- The history keeps recent changesets by transaction id so a client reconnecting with
  `monitor_cond_since` receives only what it missed. The real server's rule
  (`ovsdb_txn_history_run`): the state the database was opened (or replaced) with is
  its first entry; after each commit the oldest entries go while more than
  `max_history` (100) are kept or they hold more atoms than the database, but one always
  stays. An atom is counted as the real server counts it: each of a row's scalars and
  set elements, two per map pair, two for `_uuid` and `_version`; a transaction counts
  its changed rows before and after. Only an id still in the history resumes (found);
  the id before the oldest kept entry does not.
  Unlike the real server, standalone databases keep a history too, by the same rule.
- Transactions blocked on `wait` are re-executed after every commit and when their
  timeout expires; each completes exactly once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ovsdb.changeset import Changeset, merge
from ..ovsdb.database import Database
from ..ovsdb.transaction import Blocked, Outcome, execute
from ..util import batch
from ..util.uuidgen import new_uuid, sequential_uuid
from .fanout import FanoutIndex
from .monitor import Monitor
from .session import json_key

if TYPE_CHECKING:
    from ..storage.standalone import StandaloneStorage


class Trigger:
    """A transaction waiting for its `wait` operations to hold."""

    __slots__ = ("deadline", "done", "ops", "owns_lock", "reply", "request_id", "session",
                 "started")

    def __init__(
        self,
        ops: list[Any],
        started: float,
        reply: Callable[[Outcome], None],
        session: Any,
        request_id: Any,
        owns_lock: Callable[[str], bool] | None,
    ) -> None:
        self.ops = ops
        self.started = started
        self.reply = reply
        self.session = session
        self.request_id = request_id
        self.owns_lock = owns_lock
        self.deadline: float | None = None
        self.done = False


class HostedDb:
    def __init__(
        self,
        db: Database,
        *,
        storage: StandaloneStorage | None = None,
        model: str = "standalone",
        read_only_reason: str | None = None,
        max_history: int = 100,
        clock: Callable[[], float],
    ) -> None:
        self.db = db
        self.name = db.name
        self.storage = storage
        self.model = model
        self.read_only_reason = read_only_reason
        self.max_history = max_history
        self.clock = clock  # monotonic milliseconds
        self.monitors: set[Monitor] = set()
        self._pending: list[Monitor] = []  # monitors with changes of this batch to render
        self.fanout = FanoutIndex()  # which of them a change can concern
        self.history: deque[tuple[str, Changeset, int]] = deque()
        self.history_atoms = 0
        self.n_atoms = 0
        self.last_txn_id = new_uuid()
        self.restart_history(self.last_txn_id)
        self.triggers: list[Trigger] = []
        self.on_trigger_deadline: Callable[[HostedDb], None] | None = None
        # The Raft member this database is replicated by, None for standalone.
        self.cluster: Any = None
        # The relay this database is a copy of (`relay.RelayDb`), None if it is not one:
        # its transactions go upstream.
        self.relay: Any = None
        self.n_commits = 0

    # -- transactions ------------------------------------------------------------------

    def execute(
        self, ops: list[Any], *, started: float | None = None,
        owns_lock: Callable[[str], bool] | None = None, now: float | None = None,
    ) -> Outcome:
        """`now`: the time of this execution (default the clock's); a transaction's
        first is at its `started`, so that a `wait` timing out at once took 0 ms, as
        ovsdb-server's first execution does, however long parsing took."""
        return execute(
            self.db,
            ops,
            now=self.clock() if now is None else now,
            started=started,
            owns_lock=owns_lock,
            read_only_reason=self.read_only_reason,
        )

    def commit(self, cs: Changeset, durable: bool = False) -> str:
        """Make `cs` durable and visible; returns its transaction id."""
        if self.storage is not None:
            self.storage.commit(cs, durable)
        self.db.apply(cs)
        txn_id = cs.txn_id or sequential_uuid()
        cs.txn_id = txn_id
        self.last_txn_id = txn_id
        self._remember(txn_id, cs)
        self.n_commits += 1
        shared: dict[Any, Any] = {}
        deferred = batch.active()
        # Only the monitors the change may concern: a monitor's held changes are sent
        # before its conditions change, so what the others would not send now they
        # would not send later either.
        for mon in self.fanout.candidates(cs):
            if mon.held is not None:
                # Its client is not reading, or its session waits out --update-delay-ms
                # (begun, maybe, as it sent another of its monitors this very change).
                mon.hold(cs)  # merged, sent later
            elif deferred:
                # Rendered at the batch's end, merged with the batch's other commits
                # (as the real server, which flushes a monitor once per pass).
                if not mon.pending:
                    if not self._pending:
                        batch.defer_render(self, self.render_pending)
                    self._pending.append(mon)
                mon.pending.append(cs)
            else:
                updates = mon.updates(cs, shared)
                if updates is not None:
                    mon.sink(mon, txn_id, updates, shared)
        return txn_id

    def render_pending(self, only: Monitor | None = None) -> None:
        """Send the monitors what this batch's commits owe them, one update each (all
        of them, or `only` one, whose session is about to send something else)."""
        if only is not None:
            if not only.pending:
                return
            monitors = [only]
        else:
            monitors, self._pending = self._pending, []
        shared: dict[Any, Any] = {}
        # One merged changeset per distinct list of commits, shared by the monitors
        # that got that list (most got all of the batch's): merged once, and the same
        # tables to key `shared` by. It keeps the changesets alive while `shared` is.
        merged: dict[tuple[int, ...], tuple[Changeset, list[Changeset]]] = {}
        for mon in monitors:
            pending, mon.pending = mon.pending, []
            if not pending or mon not in self.monitors:
                continue  # (canceled meanwhile: its changes go with it)
            key = tuple(map(id, pending))
            hit = merged.get(key)
            if hit is None:
                if len(pending) == 1:
                    cs = pending[0]
                else:
                    cs = merge(pending)
                    cs.txn_id = pending[-1].txn_id
                hit = merged[key] = (cs, pending)
            cs = hit[0]
            if mon.held is not None:
                mon.hold(cs)  # its session began holding meanwhile
                continue
            updates = mon.updates(cs, shared)
            if updates is not None:
                mon.sink(mon, cs.txn_id or self.last_txn_id, updates, shared)

    def restart_history(self, txn_id: str) -> None:
        """The database as it is now is the history's only entry, named `txn_id`: a
        client that saw this state resumes from it while the entry is kept (the real
        server replays a loaded snapshot as a transaction of the whole database)."""
        self.history.clear()
        self.last_txn_id = txn_id
        if self.max_history <= 0:
            self.history_atoms = self.n_atoms = 0
            return
        n = 0
        for t in self.db.tables.values():
            for row in t.rows.values():
                n += _row_atoms(row.data)
        self.n_atoms = n
        self.history.append((txn_id, Changeset(), n))
        self.history_atoms = n

    def _remember(self, txn_id: str, cs: Changeset) -> None:
        if self.max_history <= 0:
            return
        n = 0
        diff = 0
        for changes in cs.tables.values():
            for ch in changes.values():
                old, new = ch.old, ch.new
                if old is not None and new is not None and old.data == new.data:
                    continue
                a_old = _row_atoms(old.data) if old is not None else 0
                a_new = _row_atoms(new.data) if new is not None else 0
                n += a_old + a_new
                diff += a_new - a_old
        self.n_atoms += diff
        self.history.append((txn_id, cs, n))
        self.history_atoms += n
        history = self.history
        while len(history) > 1 and (
            len(history) > self.max_history or self.history_atoms > self.n_atoms
        ):
            self.history_atoms -= history.popleft()[2]

    def atoms(self) -> int:
        """The database's atoms as the real server counts them (`memory/show`): kept
        as a running total where there is a history, else counted."""
        if self.max_history > 0:
            return self.n_atoms
        return sum(_row_atoms(row.data) for t in self.db.tables.values()
                   for row in t.rows.values())

    def changes_since(self, txn_id: str) -> Changeset | None:
        """Everything committed after `txn_id`, or None if no kept entry has that id
        (as `ovsdb_monitor_get_changes_after`, which looks only in the history)."""
        if txn_id == self.last_txn_id:
            return Changeset()
        for i, (tid, _, _) in enumerate(self.history):
            if tid == txn_id:
                return merge(cs for _, cs, _ in list(self.history)[i + 1:])
        return None

    # -- blocked transactions ----------------------------------------------------------

    def add_trigger(self, trigger: Trigger, outcome: Blocked) -> None:
        trigger.deadline = outcome.deadline
        self.triggers.append(trigger)
        if outcome.deadline is not None and self.on_trigger_deadline is not None:
            self.on_trigger_deadline(self)

    def run_triggers(self) -> None:
        """Re-execute blocked transactions; complete those that no longer block."""
        progress = True
        while progress and self.triggers:
            progress = False
            for t in list(self.triggers):
                if t.done:
                    continue
                outcome = self.execute(t.ops, started=t.started, owns_lock=t.owns_lock)
                if isinstance(outcome, Blocked):
                    t.deadline = outcome.deadline
                    continue
                self.triggers.remove(t)
                t.done = True
                t.reply(outcome)
                progress = True
                break  # the reply may have committed; rescan from the start

    def next_deadline(self) -> float | None:
        deadlines = [t.deadline for t in self.triggers if t.deadline is not None]
        return min(deadlines) if deadlines else None

    def cancel_triggers(self, session: Any, request_id: Any = None) -> list[Trigger]:
        gone = [t for t in self.triggers
                if t.session is session and (request_id is None or t.request_id == request_id)]
        for t in gone:
            t.done = True
            self.triggers.remove(t)
            # its request id is free again, whoever answers it ("canceled") or not
            session.pending.pop(json_key(t.request_id), None)
        return gone

    def replace_db(self, db: Database) -> None:
        """A new database (after conversion): history and monitors do not carry over."""
        self.db = db
        self.restart_history(new_uuid())
        self.monitors.clear()
        self.fanout.clear()

    def add_monitor(self, mon: Monitor) -> None:
        self.monitors.add(mon)
        self.fanout.add(mon)

    def remove_monitor(self, mon: Monitor) -> None:
        mon.pending = []
        self.monitors.discard(mon)
        self.fanout.remove(mon)

    def conditions_changed(self, mon: Monitor) -> None:
        self.fanout.refresh(mon)  # (a monitor it no longer hosts is not filed: a no-op)


def _row_atoms(data: dict[str, Any]) -> int:
    """Atoms of one row as the real server counts them (`count_atoms`): a map pair is
    two, and `_uuid` and `_version` one each."""
    n = 2
    for v in data.values():
        if type(v) is tuple:
            n += 2 * len(v) if v and type(v[0]) is tuple else len(v)
        else:
            n += 1
    return n
