"""Transactions through the IDL: inserts with named references and fixed uuids,
updates, deletes, partial mutations, verify and try-again, increments, comments,
errors, and what is (not) sent: unchanged writes of write-only columns, and of every
column with write-changed-only, checked on the wire through a proxy. Locks. Each
against our server and the real one."""

from __future__ import annotations

import asyncio
import gc
import uuid as uuidlib
from typing import Any

import pytest
from idl_helpers import DB, Direct, arun, until
from proxy import Proxy

from procs import ServerProcess
from pyovsdb.idl import MONITOR, Idl, Status, Transaction, TxnError


def transacts(proxy: Proxy) -> list[tuple[list[dict[str, Any]], int]]:
    """The operations and size of every transact the client sent."""
    return [(m["params"][1:], n) for m, n in proxy.requests("transact")]


def test_insert_update_delete(server: ServerProcess) -> None:
    fixed = str(uuidlib.uuid4())

    async def body() -> None:
        async with Idl(server.unix, DB) as idl:
            txn = idl.transaction()
            child = txn.insert("Child", name="c", n=1)
            simple = txn.insert("Simple", name="s", ref=child, refs=[child],
                                m={"a": "b"}, color="red", r=1, sr={2, 1.5})
            txn.update(simple, i=5)  # a new row's values can still change
            other = txn.insert("Other", uuid=fixed, name="fixed")
            txn.update(simple, wref=[other], umap={other: 3})
            result = await txn.commit()
            assert result.status is Status.SUCCESS, result
            # committed: the replica shows it already
            s = txn.inserted(simple)
            assert s is not None and s.name == "s" and s.i == 5 and s.r == 1.0
            assert s.ref is txn.inserted(child) and s.ref.name == "c"
            assert s.m == {"a": "b"} and s.color == "red" and s.sr == [1.5, 2.0]
            assert result.uuid_of(other) == uuidlib.UUID(fixed)
            assert s.wref == [idl["Other"].get(fixed)] and s.umap == {s.wref[0]: 3}

            txn = idl.transaction()
            txn.update(s, name="s2", ss=["y", "x"], os=None, oi=3, ref=None, b=True)
            assert (await txn.commit()).ok
            # (a separate transaction: ovsdb-server 3.1 leaves weak references dangling
            # when the referring row is modified in the transaction deleting their target)
            txn = idl.transaction()
            txn.delete(idl["Other"].get(fixed))
            assert (await txn.commit()).ok
            s2 = idl["Simple"].get(s.uuid)
            assert (s2.name, s2.ss, s2.os, s2.oi, s2.ref, s2.b) == ("s2", ["x", "y"], None,
                                                                     3, None, True)
            assert idl["Other"].get(fixed) is None and s2.wref == [] and s2.umap == {}
            # the unreferenced child was collected by the server (non-root table)
            assert len(idl["Child"]) == 1 and s2.refs[0].name == "c"
            txn = idl.transaction()
            txn.update(s2, refs=[])
            assert (await txn.commit()).ok
            assert len(idl["Child"]) == 0
            with pytest.raises(KeyError):
                idl.transaction().update(s2, nope=1)

    arun(body())


def test_partial_mutations_do_not_conflict(server: ServerProcess) -> None:
    async def body() -> None:
        with Direct(server.unix) as d:
            uuid = d.insert("Simple", name="s", ss=["set", ["a", "b"]],
                            m=["map", [["k1", "v1"], ["k2", "v2"]]])
            async with Idl(server.unix, DB) as idl:
                row = idl["Simple"].get(uuid)
                # another client changes the same columns after we read them
                await asyncio.to_thread(d.transact, {
                    "op": "mutate", "table": "Simple", "where": [["name", "==", "s"]],
                    "mutations": [["ss", "insert", "z"], ["m", "insert",
                                                          ["map", [["k9", "v9"]]]]]})
                txn = idl.transaction()
                txn.add(row, "ss", "c", "d")
                txn.remove(row, "ss", "a")
                txn.set_key(row, "m", "k1", "new")
                txn.del_key(row, "m", "k2")
                txn.add(row, "si", 7)
                assert (await txn.commit()).ok
                row = idl["Simple"].get(uuid)
                assert row.ss == ["b", "c", "d", "z"]
                assert row.m == {"k1": "new", "k9": "v9"} and row.si == [7]

    arun(body())


def test_verify_makes_a_concurrent_write_try_again(server: ServerProcess) -> None:
    async def body() -> None:
        with Direct(server.unix) as d:
            uuid = d.insert("Other", name="counter", n=0)
            async with Idl(server.unix, DB) as idl:
                row = idl["Other"].get(uuid)
                txn = idl.transaction()
                txn.verify(row, "n")
                txn.update(row, name="seen-0")
                await asyncio.to_thread(d.update, "Other", uuid, n=10)
                result = await txn.commit()
                assert result.status is Status.TRY_AGAIN
                assert idl["Other"].get(uuid).n == 10  # the replica caught up already
                # the retry helper: read-modify-write until nobody interferes
                attempts = []

                def bump(txn: Transaction) -> None:
                    r = idl["Other"].get(uuid)
                    attempts.append(r.n)
                    if len(attempts) == 1:  # interfere once
                        d.update("Other", uuid, n=20)
                    txn.verify(r, "n")
                    txn.update(r, n=r.n + 1)

                result = await idl.run(bump)
                assert result.ok and attempts == [10, 20]
                assert idl["Other"].get(uuid).n == 21
                # a row deleted under a transaction writing it: try again as well
                row = idl["Other"].get(uuid)
                await asyncio.to_thread(d.delete, "Other", uuid)
                txn = idl.transaction()
                txn.update(row, n=0)
                assert (await txn.commit()).status is Status.TRY_AGAIN
                assert idl["Other"].get(uuid) is None

    arun(body())


def test_increment_comment_and_server_errors(server: ServerProcess) -> None:
    async def body() -> None:
        with Direct(server.unix) as d:
            uuid = d.insert("Other", name="c", n=41)
            d.insert("Simple", name="taken")
            async with Proxy(server.unix) as proxy, Idl(proxy.remote, DB) as idl:
                row = idl["Other"].get(uuid)
                txn = idl.transaction()
                first = txn.increment(row, "n")
                second = txn.increment(row, "n")
                txn.comment("bump twice")
                result = await txn.commit()
                assert result.ok and result.increments == {first: 42, second: 43}
                assert idl["Other"].get(uuid).n == 43
                ops, _ = transacts(proxy)[-1]
                assert {"op": "comment", "comment": "bump twice"} in ops
                # the server's error comes back as is
                txn = idl.transaction()
                txn.insert("Simple", name="taken")
                result = await txn.commit()
                assert result.status is Status.ERROR
                assert result.error["error"] == "constraint violation"
                txn = idl.transaction()
                txn.insert("Simple", name="taken")
                with pytest.raises(TxnError) as e:
                    await txn.commit_or_raise()
                assert e.value.result.status is Status.ERROR

    arun(body())


def test_raw_operations_of_every_where(server: ServerProcess) -> None:
    """Raw operations (`add_op`) go as written, whatever their `where`: empty (every
    row), a bare `true`, or a clause; an update of one row by `_uuid` is read back as
    such."""
    async def body() -> None:
        with Direct(server.unix) as d:
            uuid = d.insert("Other", name="c", n=1)
            async with Idl(server.unix, DB) as idl:
                for where in ([], [True], [["name", "==", "c"]],
                              [["_uuid", "==", ["uuid", uuid]]]):
                    txn = idl.transaction()
                    txn.add_op({"op": "mutate", "table": "Other", "where": where,
                                "mutations": [["n", "+=", 1]]})
                    result = await txn.commit()
                    assert result.ok, (where, result)
                await until(lambda: idl["Other"].get(uuid).n == 5)

    arun(body())


def test_a_transaction_in_flight_holds_none_of_its_rows(server: ServerProcess) -> None:
    """Once sent, neither the transaction nor the IDL keeps its rows, recorded or
    encoded, while the reply comes (a northd's first commit is the whole SB); what
    comes back still names the rows inserted."""
    token = uuidlib.uuid4().hex

    def encoded(proxy: Proxy) -> int:
        """The insert operations of this test alive outside the proxy's record."""
        relayed = {id(op) for m, _ in proxy.sent for op in m.get("params", [])[1:]}
        return sum(1 for o in gc.get_objects() if isinstance(o, dict)
                   and o.get("op") == "insert" and id(o) not in relayed
                   and isinstance(row := o.get("row"), dict)  # (others' may be anything)
                   and str(row.get("name", "")).startswith(token))

    async def body() -> None:
        seen: list[tuple[int, int]] = []
        async with Proxy(server.unix) as proxy, Idl(proxy.remote, DB) as idl:
            txn = idl.transaction()

            def hook(request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
                if request.get("method") == "transact":  # (the client waits for this)
                    seen.append((len(txn.inserts), encoded(proxy)))
                return reply

            proxy.reply_hook = hook
            named = [txn.insert("Other", name=f"{token}-{i}", n=i) for i in range(50)]
            result = await txn.commit()
            assert result.ok and seen == [(0, 0)]
            assert [txn.inserted(new).n for new in named] == list(range(50))  # type: ignore[union-attr]
            # (the check sees them: the client's, encoded for the next commit)
            more = idl.transaction()
            more.insert("Other", name=f"{token}-more", n=50)
            ops, _ = more.ops()
            assert encoded(proxy) == len(ops) == 1

    arun(body())


def test_nothing_to_change_sends_nothing(server: ServerProcess) -> None:
    async def body() -> None:
        with Direct(server.unix) as d:
            uuid = d.insert("Other", name="o", n=1, tags=["set", ["a", "b"]])
            async with Proxy(server.unix) as proxy, Idl(proxy.remote, DB) as idl:
                row = idl["Other"].get(uuid)
                txn = idl.transaction()
                txn.update(row, name="o", n=1, tags=["b", "a"])  # the current values
                txn.verify(row, "n")
                assert (await txn.commit()).status is Status.UNCHANGED
                assert transacts(proxy) == [] and txn.request_bytes == 0
                # one real change: the unchanged read/write columns go too (atomicity)
                txn = idl.transaction()
                txn.update(row, name="o", n=2)
                assert (await txn.commit()).ok
                ((ops, size),) = transacts(proxy)
                assert ops[0]["row"] == {"name": "o", "n": 2} and size == txn.request_bytes

    arun(body())


N_ROWS = 5000


def test_unchanged_writes_are_dropped_for_write_only_and_write_changed_only(
        server: ServerProcess) -> None:
    """A transaction rewriting every row of a table, of which one changed, sends one
    row for write-only columns, and with write-changed-only for any column."""

    async def body() -> None:
        with Direct(server.unix) as d:
            d.transact(*({"op": "insert", "table": "Other",
                          "row": {"name": f"o{i}", "n": i, "tags": ["set", ["x"]]}}
                         for i in range(N_ROWS)))
            async with Proxy(server.unix) as proxy:
                idl = Idl(proxy.remote, DB, tables=["Other"],
                          modes={"Other": {"n": MONITOR}})
                async with idl:
                    rows = list(idl["Other"].rows.values())
                    changed = rows[N_ROWS // 2]

                    async def rewrite(**extra: Any) -> tuple[list[Any], int]:
                        txn = idl.transaction()
                        for r in rows:
                            values = {"n": r.n, **{c: r[c] for c in extra}}
                            if r is changed:
                                values.update(extra)
                                values["n"] = -1
                            txn.update(r, **values)
                        assert (await txn.commit()).ok
                        ops, size = transacts(proxy)[-1]
                        assert size == txn.request_bytes
                        return ops, size

                    # write-only column ("monitor" mode): only the changed row
                    ops, _ = await rewrite()
                    assert ops == [{"op": "update", "table": "Other",
                                    "where": [["_uuid", "==", ["uuid", changed.uuid]]],
                                    "row": {"n": -1}}]
                    rows = list(idl["Other"].rows.values())
                    changed = rows[1]
                    # read/write columns: every row goes, unless write-changed-only
                    ops, full = await rewrite(name="renamed", tags=["y"])
                    assert len(ops) == N_ROWS
                    assert all(set(op["row"]) == {"name", "tags"} for op in ops
                               if op["where"][0][2][1] != changed.uuid)
                    rows = list(idl["Other"].rows.values())
                    changed = rows[2]
                    idl.set_write_changed_only(True, "Other", "name")  # one column
                    ops, _ = await rewrite(name="again", tags=["w"])
                    assert len(ops) == N_ROWS
                    for op in ops:
                        if op["where"][0][2][1] == changed.uuid:
                            assert op["row"] == {"n": -1, "name": "again", "tags": "w"}
                        else:
                            assert set(op["row"]) == {"tags"}
                    rows = list(idl["Other"].rows.values())
                    changed = rows[3]
                    idl.set_write_changed_only(True)  # every column
                    ops, small = await rewrite(name="last", tags=["z"])
                    assert len(ops) == 1 and ops[0]["where"][0][2][1] == changed.uuid
                    assert ops[0]["row"] == {"n": -1, "name": "last", "tags": "z"}
                    assert small * 100 < full

    arun(body(), 60)


def test_locks(server: ServerProcess) -> None:
    async def body() -> None:
        with Direct(server.unix) as d:
            uuid = d.insert("Other", name="o", n=0)
        async with Proxy(server.unix) as proxy, \
                Idl(proxy.remote, DB, lock="L", min_backoff=0.05) as a, \
                Idl(server.unix, DB) as b:
            assert a.has_lock and not a.is_lock_contended
            told: list[bool] = []
            a.on_lock_change(lambda: told.append(a.has_lock))
            await b.set_lock("L")
            assert not b.has_lock and b.is_lock_contended
            # without the lock: not sent
            txn = b.transaction()
            txn.update(b["Other"].get(uuid), n=1)
            assert (await txn.commit()).status is Status.NOT_LOCKED
            # with it: asserted first; increments still read at the right places
            txn = a.transaction()
            txn.update(a["Other"].get(uuid), name="locked")
            k = txn.increment(a["Other"].get(uuid), "n")
            result = await txn.commit()
            assert result.ok and result.increments[k] == 1
            ops, _ = transacts(proxy)[-1]
            assert ops[0] == {"op": "assert", "lock": "L"}
            # stolen
            await b.steal_lock()
            assert b.has_lock
            await until(lambda: not a.has_lock, what="a told its lock was stolen")
            assert a.is_lock_contended
            assert told == [False]  # (the callback heard it, at once)
            txn = a.transaction()
            txn.update(a["Other"].get(uuid), n=5)
            assert (await txn.commit()).status is Status.NOT_LOCKED
            # released: the waiter gets it
            await b.set_lock(None)
            assert await a.wait_for_lock(5)
            assert told == [False, True]
            # and takes it again after a reconnection
            a.force_reconnect()
            await until(lambda: not a.connected)
            await a.wait_synced(5)
            assert await a.wait_for_lock(5)

    arun(body())


def test_commit_waits_for_a_connection_or_tries_again(server: ServerProcess) -> None:
    async def body() -> None:
        async with Proxy(server.unix) as proxy:
            idl = Idl(proxy.remote, DB, min_backoff=0.05, max_backoff=0.1,
                      commit_timeout=0.3)
            async with idl:
                proxy.paused = True
                proxy.drop_clients()
                await until(lambda: not idl.connected)
                txn = idl.transaction()
                txn.insert("Other", name="x")
                result = await txn.commit()
                assert result.status is Status.TRY_AGAIN and "not connected" in result.error
                proxy.paused = False
                idl.commit_timeout = 10
                txn = idl.transaction()
                txn.insert("Other", name="y")
                assert (await txn.commit()).ok

    arun(body())


def test_rewriting_100000_rows_of_which_one_changed_sends_one_row(
        server: ServerProcess) -> None:
    n = 100_000

    async def body() -> None:
        with Direct(server.unix) as d:
            await asyncio.to_thread(d.transact, *(
                {"op": "insert", "table": "Other", "row": {"name": f"o{i}", "n": i}}
                for i in range(n)))
        async with Proxy(server.unix) as proxy:
            idl = Idl(proxy.remote, DB, tables={"Other": ["name", "n"]},
                      write_changed_only=True)
            async with idl:
                rows = list(idl["Other"].rows.values())
                assert len(rows) == n
                txn = idl.transaction()
                for i, r in enumerate(rows):
                    txn.update(r, name=r.name, n=-1 if i == 1234 else r.n)
                assert (await txn.commit()).ok
                ((ops, size),) = transacts(proxy)
                assert ops == [{"op": "update", "table": "Other", "row": {"n": -1},
                                "where": [["_uuid", "==", ["uuid", rows[1234].uuid]]]}]
                assert size == txn.request_bytes < 200
                assert idl["Other"].get(rows[1234].uuid).n == -1

    arun(body(), 60)
