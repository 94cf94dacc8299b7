"""A blocking facade over the asyncio IDL, for threaded programs.

Rules kept here:
- The IDL runs on its own thread with its own event loop; every call from other
  threads is submitted to that loop, so the replica is only ever changed by one thread.
- `snapshot()` holds the replica still while the caller reads: updates wait until the
  `with` block ends, and rows, being immutable, stay valid after it.
- `run(fn)` builds and commits a transaction on the IDL thread, retrying on TRY_AGAIN;
  any number of threads may call it concurrently.
- Callbacks registered with `on_change` run on the IDL thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..ovsdb.changeset import Changeset
from .idl import Idl
from .replica import ReplicaTable
from .txn import Result, Transaction


class BlockingIdl:
    def __init__(self, *args: Any, start_timeout: float = 30.0, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._lock = threading.RLock()
        self._thread = threading.Thread(target=self._loop.run_forever, name="pyovsdb-idl",
                                        daemon=True)
        self._thread.start()

        async def make() -> Idl:
            return Idl(*args, **kwargs)

        self.idl: Idl = self._call(make())
        self.idl.apply_guard = self._lock
        self._call(self.idl.start(start_timeout))

    def _call(self, coro: Any, timeout: float | None = None) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # -- reading -----------------------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[dict[str, ReplicaTable]]:
        with self._lock:
            yield self.idl.tables

    @property
    def seqno(self) -> int:
        return self.idl.seqno

    def changes_since(self, seqno: int) -> Changeset | None:
        with self._lock:
            return self.idl.changes_since(seqno)

    def on_change(self, callback: Callable[[Changeset], None]) -> None:
        self.idl.on_change(callback)

    def wait_for_change(self, seqno: int, timeout: float = 10.0) -> bool:
        """Block until a batch after `seqno` arrived; False on timeout."""
        event = threading.Event()

        def cb(_: Changeset) -> None:
            event.set()

        self.idl.callbacks.append(cb)
        try:
            return self.idl.seqno > seqno or event.wait(timeout)
        finally:
            self._loop.call_soon_threadsafe(
                lambda: cb in self.idl.callbacks and self.idl.callbacks.remove(cb))

    # -- writing -----------------------------------------------------------------------

    def run(self, fn: Callable[[Transaction], Any], attempts: int = 50,
            timeout: float | None = 60.0) -> Result:
        return self._call(self.idl.run(fn, attempts=attempts), timeout)

    def set_condition(self, table: str, where: list[Any], timeout: float = 30.0) -> None:
        self._call(self.idl.set_condition(table, where), timeout)

    def close(self) -> None:
        try:
            self._call(self.idl.close(), 10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()

    def __enter__(self) -> BlockingIdl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
