"""A blocking facade over the asyncio IDL, for threaded programs.

Rules kept here:
- The IDL runs on its own thread with its own event loop; every call from other
  threads is submitted to that loop, so the replica is only ever changed by one thread.
- `snapshot()` holds the replica still while the caller reads: updates wait until the
  `with` block ends, and rows, being immutable, stay valid after it. Reading the
  replica outside a snapshot is not safe while updates arrive.
- `run(fn)` builds and commits a transaction on the IDL thread (so `fn` sees a
  consistent replica), retrying on TRY_AGAIN; `commit(txn)` sends one built anywhere.
  Any number of threads may call them concurrently. Doing so inside a snapshot would
  deadlock (the IDL thread waits for the snapshot to end), so it raises instead.
- Callbacks registered with `on_change` or `watch` run on the IDL thread, holding the
  snapshot lock.
- A facade that fails to start leaves no thread behind.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..ovsdb.changeset import Changeset
from .idl import Idl
from .replica import Index, ReplicaTable
from .row import IdlRow
from .tracking import EVENTS, EventCallback, Watch
from .txn import Result, Transaction

T = TypeVar("T")


class BlockingIdl:
    def __init__(self, *args: Any, start_timeout: float = 30.0, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._lock = threading.RLock()
        self._thread = threading.Thread(target=self._loop.run_forever, name="pyovsdb-idl",
                                        daemon=True)
        self._thread.start()

        async def make() -> Idl:
            return Idl(*args, **kwargs)

        try:
            self.idl: Idl = self._call(make())
            self.idl.apply_guard = self._lock
            self._call(self.idl.start(start_timeout))
        except BaseException:
            self._stop_loop()
            raise

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _not_in_snapshot(self) -> None:
        if self._lock._is_owned():  # type: ignore[attr-defined]
            raise RuntimeError("cannot wait for the IDL thread inside snapshot()")

    # -- reading -----------------------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[dict[str, ReplicaTable]]:
        with self._lock:
            yield self.idl.tables

    def rows(self, table: str) -> list[IdlRow]:
        """A consistent list of a table's rows."""
        with self._lock:
            return list(self.idl.tables[table].rows.values())

    def get(self, table: str, uuid: Any) -> IdlRow | None:
        with self._lock:
            return self.idl.tables[table].get(uuid)

    @property
    def seqno(self) -> int:
        return self.idl.seqno

    @property
    def connected(self) -> bool:
        return self.idl.connected

    def changes_since(self, seqno: int) -> Changeset[IdlRow] | None:
        with self._lock:
            return self.idl.changes_since(seqno)

    def track_take(self) -> Changeset[IdlRow]:
        with self._lock:
            return self.idl.track_take()

    def track_clear(self) -> None:
        with self._lock:
            self.idl.track_clear()

    def add_index(self, table: str, name: str, *columns: str) -> Index:
        with self._lock:
            return self.idl.add_index(table, name, *columns)

    def on_change(self, callback: Callable[[Changeset[IdlRow]], None]) -> None:
        self._loop.call_soon_threadsafe(self.idl.on_change, callback)

    def watch(self, table: str, callback: EventCallback, *,
              events: Any = EVENTS, columns: Any = None) -> Watch:
        async def add() -> Watch:
            return self.idl.watch(table, callback, events=events, columns=columns)
        return self._call(add())

    def wait_for_change(self, seqno: int, timeout: float = 10.0) -> bool:
        """Block until a batch after `seqno` was applied; False on timeout."""
        self._not_in_snapshot()
        return self._call(self.idl.wait_for_change(seqno, timeout))

    def fetch(self, row: IdlRow, *columns: str, timeout: float = 30.0) -> dict[str, Any]:
        self._not_in_snapshot()
        return self._call(self.idl.fetch(row, *columns), timeout)

    # -- writing -----------------------------------------------------------------------

    def transaction(self) -> Transaction:
        """A transaction to fill in this thread and pass to `commit`."""
        return Transaction(self.idl)

    def commit(self, txn: Transaction, timeout: float | None = 60.0) -> Result:
        self._not_in_snapshot()
        return self._call(txn.commit(), timeout)

    def run(self, fn: Callable[[Transaction], Any], attempts: int = 50,
            timeout: float | None = 60.0) -> Result:
        self._not_in_snapshot()
        return self._call(self.idl.run(fn, attempts=attempts), timeout)

    def set_condition(self, table: str, where: list[Any], timeout: float = 30.0) -> None:
        self._not_in_snapshot()
        self._call(self.idl.set_condition(table, where), timeout)

    def set_lock(self, name: str | None, timeout: float = 30.0) -> None:
        self._not_in_snapshot()
        self._call(self.idl.set_lock(name), timeout)

    def wait_for_lock(self, timeout: float = 10.0) -> bool:
        self._not_in_snapshot()
        return self._call(self.idl.wait_for_lock(timeout))

    def force_reconnect(self) -> None:
        self._loop.call_soon_threadsafe(self.idl.force_reconnect)

    # -- lifetime ----------------------------------------------------------------------

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._call(self.idl.close(), 10)
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> BlockingIdl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
