"""The blocking facade: the IDL on its own thread, transactions from many threads at
once, snapshots that never see half a transaction, callbacks, and clean failure.
Against our server and the real one."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from idl_helpers import DB, Direct

from procs import ServerProcess
from pyovsdb.idl import UPDATE, BlockingIdl, NoServerError, Status, Transaction

THREADS = 4
TRANSFERS = 15  # per thread
TOTAL = 1000


def test_threads_transact_concurrently_and_snapshots_stay_consistent(
        server: ServerProcess) -> None:
    """Each thread moves units from one row to the other, read-modify-write with
    verify; a reader checks in snapshots that no unit is ever lost or doubled."""
    with Direct(server.unix) as d:
        a = d.insert("Other", name="a", n=TOTAL)
        b = d.insert("Other", name="b", n=0)
    with BlockingIdl(server.unix, DB, tables=["Other"]) as idl:
        attempts = []
        events: list[str] = []
        idl.watch("Other", lambda e, row, old: events.append(e), events=[UPDATE])

        def transfer(txn: Transaction) -> None:
            ra, rb = idl.idl["Other"].get(a), idl.idl["Other"].get(b)
            attempts.append(1)
            txn.verify(ra, "n")
            txn.verify(rb, "n")
            txn.update(ra, n=ra.n - 1)
            txn.update(rb, n=rb.n + 1)

        errors: list[Any] = []

        def worker() -> None:
            try:
                for _ in range(TRANSFERS):
                    result = idl.run(transfer)
                    assert result.status is Status.SUCCESS, result
            except BaseException as e:
                errors.append(e)

        stop = threading.Event()
        snapshots = []

        def reader() -> None:
            try:
                while not stop.is_set():
                    with idl.snapshot() as tables:
                        total = tables["Other"].get(a).n + tables["Other"].get(b).n
                    snapshots.append(total)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(THREADS)]
        r = threading.Thread(target=reader)
        r.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        stop.set()
        r.join(10)
        assert not errors, errors
        moved = THREADS * TRANSFERS
        rows = {row.name: row.n for row in idl.rows("Other")}
        assert rows == {"a": TOTAL - moved, "b": moved}
        assert len(attempts) >= moved
        assert snapshots and set(snapshots) == {TOTAL}
        assert events.count(UPDATE) == 2 * moved

        # a transaction built on this thread, committed through the IDL's
        txn = idl.transaction()
        txn.insert("Other", name="from-main", n=1)
        assert idl.commit(txn).ok
        assert any(row.name == "from-main" for row in idl.rows("Other"))
        # waiting for the IDL thread inside a snapshot would deadlock: refused
        with idl.snapshot(), pytest.raises(RuntimeError):
            idl.run(transfer)
        seqno = idl.seqno
        with Direct(server.unix) as d:
            d.update("Other", a, n=7)
        assert idl.wait_for_change(seqno, 5)
        assert idl.get("Other", a).n == 7


def test_a_facade_that_cannot_start_leaves_nothing_behind(tmp_path: Any) -> None:
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(NoServerError):
        BlockingIdl(f"unix:{tmp_path}/none.sock", DB, start_timeout=0.3,
                    min_backoff=0.05)
    assert {t.ident for t in threading.enumerate() if t.is_alive()} <= before
