"""Keeping the replica: initial contents, column registration and modes, resync after
a crash of the server or a cut connection (tracked changes are exactly the missed
ones), conditions changed at run time, indexes, and change tracking. Each against our
server and the real one."""

from __future__ import annotations

import asyncio
import sys
import threading
import uuid as uuidlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from idl_helpers import DB, Direct, arun, make_server, replica_contents, until
from proxy import Proxy

from procs import ServerProcess, run
from pyovsdb.idl import (
    DELETE,
    INSERT,
    MONITOR,
    ON_DEMAND,
    UPDATE,
    ChangeView,
    Idl,
    NotFetchedError,
)
from pyovsdb.ovsdb.changeset import Changeset

TABLES = ("Simple", "Child", "Other")


def seed(d: Direct, n_other: int = 20) -> dict[str, str]:
    """Some rows of every table; returns uuids by name."""
    uuids = {}
    for i in range(n_other):
        uuids[f"o{i}"] = d.insert("Other", name=f"o{i}", n=i, tags=["set", [f"t{i % 3}"]])
    res = d.transact(
        {"op": "insert", "table": "Child", "row": {"name": "c0", "n": 0}, "uuid-name": "c0"},
        {"op": "insert", "table": "Child", "row": {"name": "c1", "n": 1}, "uuid-name": "c1"},
        {"op": "insert", "table": "Simple", "uuid-name": "s0", "row": {
            "name": "s0", "i": -7, "r": 2.5, "b": True, "u": ["uuid", uuids["o1"]],
            "oi": 4, "os": "x", "ss": ["set", ["b", "a"]], "si": ["set", [3, 1]],
            "sr": 1.5, "m": ["map", [["k", "v"], ["a", "b"]]],
            "mi": ["map", [[1, 0.5]]], "color": "green", "ref": ["named-uuid", "c0"],
            "refs": ["set", [["named-uuid", "c0"], ["named-uuid", "c1"]]],
            "wref": ["uuid", uuids["o2"]], "mref": ["map", [["x", ["uuid", uuids["o3"]]]]],
            "umap": ["map", [[["uuid", uuids["o4"]], 9]]], "big": "B" * 1000}})
    uuids["s0"] = res[2]["uuid"][1]
    uuids["c0"], uuids["c1"] = res[0]["uuid"][1], res[1]["uuid"][1]
    return uuids


def check_replica(idl: Idl, d: Direct) -> None:
    for t in TABLES:
        cols = idl[t].columns
        assert replica_contents(idl, t) == d.contents(t, cols), t


def check_tracked_is_diff(tracked: Changeset, before: dict[str, Any],
                          after: dict[str, Any]) -> int:
    """`tracked` holds exactly the rows that differ between the two contents, with
    the old and new values; returns how many."""
    n = 0
    for t in TABLES:
        changes = tracked.tables.get(t, {})
        b, a = before[t], after[t]
        differing = {u for u in b.keys() | a.keys() if b.get(u) != a.get(u)}
        assert set(changes) == differing, t
        for u, ch in changes.items():
            assert (ch.old.data if ch.old else None) == b.get(u), (t, u)
            assert (ch.new.data if ch.new else None) == a.get(u), (t, u)
        n += len(differing)
    return n


def test_initial_replica_and_typed_rows(server: ServerProcess) -> None:
    async def body() -> None:
        with Direct(server.unix) as d:
            uuids = seed(d)
            async with Idl(server.unix, DB) as idl:
                check_replica(idl, d)
                assert idl.monitor_method == "monitor_cond_since"
                s0 = idl["Simple"].get(uuids["s0"])
                c0, c1 = idl["Child"].get(uuids["c0"]), idl["Child"].get(uuids["c1"])
                assert (s0.name, s0.i, s0.r, s0.b) == ("s0", -7, 2.5, True)
                assert s0.u == uuidlib.UUID(uuids["o1"]) and s0.oi == 4 and s0.os == "x"
                assert s0.ss == ["a", "b"] and s0.si == [1, 3] and s0.sr == [1.5]
                assert s0.m == {"a": "b", "k": "v"} and s0.mi == {1: 0.5}
                assert s0.color == "green" and s0.ref is c0
                assert s0.refs == sorted([c0, c1], key=lambda r: r.uuid)  # a set: sorted
                other = idl["Other"]
                assert s0.wref == [other.get(uuids["o2"])]
                assert s0.mref == {"x": other.get(uuids["o3"])}
                assert s0.umap == {other.get(uuids["o4"]): 9}
                assert len(other) == 20 and len(idl.tracked.tables["Other"]) == 20

    arun(body())


def test_registered_columns_and_modes(server: ServerProcess) -> None:
    async def body() -> None:
        with Direct(server.unix) as d:
            uuids = seed(d)
            idl = Idl(server.unix, DB, tables={"Simple": ["name", "i", "ss", "big"],
                                               "Other": None},
                      modes={"Simple": {"i": MONITOR, "big": ON_DEMAND}})
            async with idl:
                assert set(idl.tables) == {"Simple", "Other"}
                s0 = idl["Simple"].get(uuids["s0"])
                assert set(s0.data) == {"name", "i", "ss"}
                with pytest.raises(AttributeError):
                    _ = s0.m
                # on demand: not monitored, fetched when asked, then readable
                with pytest.raises(NotFetchedError):
                    _ = s0.big
                assert await idl.fetch(s0, "big") == {"big": "B" * 1000}
                assert s0.big == "B" * 1000
                await asyncio.to_thread(d.update, "Simple", uuids["s0"], big="C")
                assert await idl.fetch_table("Simple") == 1
                assert idl["Simple"].get(uuids["s0"]).big == "C"
                # write-only ("monitor") columns: replicated, but changes do not alert
                seqno, calls = idl.seqno, []
                idl.on_change(calls.append)
                proxy_seen = idl.seqno
                await asyncio.to_thread(d.update, "Simple", uuids["s0"], i=99)
                await until(lambda: idl["Simple"].get(uuids["s0"]).i == 99, what="i=99")
                assert idl.seqno == proxy_seen == seqno and calls == []
                await asyncio.to_thread(d.update, "Simple", uuids["s0"], name="renamed")
                assert await idl.wait_for_change(seqno, 5)
                assert len(calls) == 1 and idl["Simple"].get(uuids["s0"]).name == "renamed"

    arun(body())


def offline_transact(kind: str, db_file: str, ops: list[Any]) -> None:
    """Change the database file while no server runs, with the matching tool."""
    txn = orjson.dumps([DB, *ops]).decode()
    tool = ["ovsdb-tool"] if kind == "real" else [sys.executable, "-m", "pyovsdb", "tool"]
    run([*tool, "transact", db_file, txn])


def test_resync_after_the_server_is_killed_mid_stream(kind: str, tmp_path: Path) -> None:
    """SIGKILL while another client streams changes; more changes are made to the file
    while the server is down; after the restart on the same file the replica equals
    the database and the tracked changes are exactly what the replica missed."""
    srv = make_server(kind, tmp_path)
    srv.start()

    async def body() -> None:
        with Direct(srv.unix) as d:
            uuids = seed(d, 30)
        idl = Idl(srv.unix, DB, min_backoff=0.05, max_backoff=0.2)
        await idl.start()
        stop = threading.Event()
        written = []

        def writer() -> None:
            try:
                with Direct(srv.unix) as w:
                    i = 0
                    while not stop.is_set():
                        w.update("Other", uuids[f"o{i % 30}"], n=1000 + i)
                        if i % 7 == 0:
                            w.insert("Other", name=f"new{i}", n=i)
                        written.append(i)
                        i += 1
            except Exception:
                pass  # the server died under us

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            await until(lambda: len(written) > 20, what="writes streaming")
            await asyncio.to_thread(srv.kill)
        finally:
            stop.set()
            thread.join(10)
        await until(lambda: not idl.connected, what="disconnection")
        before = {t: replica_contents(idl, t) for t in TABLES}
        idl.track_clear()
        seqno = idl.seqno
        offline_transact(kind, srv.dbs[0], [
            {"op": "update", "table": "Other", "where": [["name", "==", "o5"]],
             "row": {"n": -5, "tags": ["set", ["x", "y"]]}},
            {"op": "delete", "table": "Other", "where": [["name", "==", "o6"]]},
            {"op": "insert", "table": "Other", "row": {"name": "offline", "n": 1}},
            {"op": "update", "table": "Simple", "where": [], "row": {"os": ["set", []]}},
            {"op": "update", "table": "Child", "where": [["name", "==", "c1"]],
             "row": {"n": 11}},
        ])
        await asyncio.to_thread(srv.start)
        await idl.wait_synced(10)
        with Direct(srv.unix) as d:
            check_replica(idl, d)
        after = {t: replica_contents(idl, t) for t in TABLES}
        n = check_tracked_is_diff(idl.tracked, before, after)
        assert n >= 5  # the offline changes, plus writes the replica had not seen
        since = idl.changes_since(seqno)
        assert since is not None
        check_tracked_is_diff(since, before, after)
        await idl.close()

    try:
        arun(body(), 60)
    finally:
        srv.stop()


def test_reconnection_transfers_only_what_was_missed(server: ServerProcess) -> None:
    async def body() -> None:
        with Direct(server.unix) as d:
            uuids = seed(d, 300)
            async with Proxy(server.unix) as proxy:
                idl = Idl(proxy.remote, DB, min_backoff=0.05, max_backoff=0.1)
                async with idl:
                    seqno = idl.seqno
                    await asyncio.to_thread(d.update, "Other", uuids["o0"], n=-1)
                    await idl.wait_for_change(seqno, 5)
                    full = proxy.received_bytes
                    proxy.paused = True
                    proxy.drop_clients()
                    await until(lambda: not idl.connected, what="disconnection")
                    before = {t: replica_contents(idl, t) for t in TABLES}
                    idl.track_clear()
                    for i in (1, 2, 3):
                        await asyncio.to_thread(d.update, "Other", uuids[f"o{i}"], n=-i)
                    await asyncio.to_thread(d.delete, "Other", uuids["o10"])
                    await asyncio.to_thread(d.insert, "Other", name="while-away")
                    received = proxy.received_bytes
                    proxy.paused = False
                    await idl.wait_synced(10)
                    after = {t: replica_contents(idl, t) for t in TABLES}
                    assert check_tracked_is_diff(idl.tracked, before, after) == 5
                    check_replica(idl, d)
                    (_, _), (again, _) = proxy.requests("monitor_cond_since")
                    assert again["params"][3] != "00000000-0000-0000-0000-000000000000" or \
                        server.kind == "real"  # the last id seen, if the server gave one
                    resync = proxy.received_bytes - received
                    if server.kind == "ours":
                        # Our server keeps a history for standalone databases too.
                        assert idl.resync_found is True
                        assert resync < full / 10, (resync, full)
                    else:
                        # The real server keeps none for standalone databases: full
                        # reply, recorded as the difference all the same.
                        assert idl.resync_found is False

    arun(body())


def test_conditions_changed_at_run_time(server: ServerProcess) -> None:
    def matching(d: Direct, pred: Any) -> dict[str, Any]:
        return {u: r for u, r in d.contents("Other").items() if pred(r)}

    async def body() -> None:
        with Direct(server.unix) as d:
            uuids = seed(d)
            async with Proxy(server.unix) as proxy:
                idl = Idl(proxy.remote, DB, tables=["Other"], min_backoff=0.05,
                          max_backoff=0.1, conditions={"Other": [["n", "<", 5]]})
                async with idl:
                    assert replica_contents(idl, "Other") == matching(d, lambda r: r["n"] < 5)
                    idl.track_clear()
                    await idl.set_condition("Other", [["n", ">=", 15]])
                    assert replica_contents(idl, "Other") == matching(d, lambda r: r["n"] >= 15)
                    view = ChangeView(idl.tracked)
                    assert len(view.deleted("Other")) == 5 and len(view.inserted("Other")) == 5
                    # rows moving in and out of the condition as others write
                    seqno = idl.seqno
                    await asyncio.to_thread(d.update, "Other", uuids["o16"], n=3)
                    await asyncio.to_thread(d.update, "Other", uuids["o2"], n=30)
                    await idl.wait_for_change(seqno, 5)
                    await until(lambda: uuids["o2"] in idl["Other"].rows, what="o2 in")
                    assert replica_contents(idl, "Other") == matching(d, lambda r: r["n"] >= 15)
                    await idl.set_condition("Other", [False])
                    assert len(idl["Other"]) == 0
                    # changed while disconnected: applied by the next session
                    proxy.paused = True
                    proxy.drop_clients()
                    await until(lambda: not idl.connected, what="disconnection")
                    task = asyncio.ensure_future(
                        idl.set_condition("Other", [["tags", "includes", "t1"]]))
                    await asyncio.sleep(0.1)
                    assert not task.done()
                    await asyncio.to_thread(d.update, "Other", uuids["o0"], tags=["set", ["t1"]])
                    proxy.paused = False
                    await asyncio.wait_for(task, 10)
                    assert replica_contents(idl, "Other") == matching(
                        d, lambda r: "t1" in r["tags"])
                    assert uuids["o0"] in idl["Other"].rows

    arun(body())


def test_indexes_follow_the_replica(server: ServerProcess) -> None:
    async def body() -> None:
        with Direct(server.unix) as d:
            uuids = seed(d)
            async with Idl(server.unix, DB, min_backoff=0.05) as idl:
                by_name = idl.add_index("Other", "name", "name")
                by_tag_n = idl.add_index("Other", "tag_n", "tags", "n")
                assert by_name.find_one("o3").n == 3
                assert [r.name for r in by_tag_n.find(["t1"], 4)] == ["o4"]
                seqno = idl.seqno
                await asyncio.to_thread(d.update, "Other", uuids["o3"], name="x3", n=40)
                await asyncio.to_thread(d.delete, "Other", uuids["o4"])
                await idl.wait_for_change(seqno + 1, 5)
                assert by_name.find("o3") == [] and by_name.find_one("x3").n == 40
                assert by_tag_n.find(["t1"], 4) == []
                assert by_tag_n.find_one("t0", 40).name == "x3"  # a set given as one atom
                idl.force_reconnect()  # a resync keeps them right too
                await until(lambda: not idl.connected)
                await idl.wait_synced(5)
                assert idl["Other"].index("name").find_one("x3").n == 40

    arun(body())


def test_tracking_events_and_changes_since(server: ServerProcess) -> None:
    async def body() -> None:
        with Direct(server.unix) as d:
            uuids = seed(d)
            async with Idl(server.unix, DB, history=3) as idl:
                events: list[tuple[str, Any, Any]] = []
                renames: list[tuple[str, Any, Any]] = []
                idl.watch("Other", lambda e, row, old: events.append((e, row, old)))
                w = idl.watch("Other", lambda e, row, old: renames.append((e, row, old)),
                              events=[UPDATE], columns=["name"])
                idl.track_clear()
                start = idl.seqno
                o1 = idl["Other"].get(uuids["o1"])
                await asyncio.to_thread(d.update, "Other", uuids["o1"], n=100)
                await asyncio.to_thread(d.update, "Other", uuids["o1"], name="one")
                new = await asyncio.to_thread(d.insert, "Other", name="new", n=1)
                await asyncio.to_thread(d.delete, "Other", new)
                await asyncio.to_thread(d.delete, "Other", uuids["o2"])
                await idl.wait_for_change(start + 4, 5)
                kinds = [(e, row.name) for e, row, _ in events]
                assert kinds == [(UPDATE, "o1"), (UPDATE, "one"), (INSERT, "new"),
                                 (DELETE, "new"), (DELETE, "o2")]
                assert events[0][2] is o1  # the old row itself: nothing copied
                assert events[1][2] is events[0][1]
                assert [(e, old.name, row.name) for e, row, old in renames] == [
                    (UPDATE, "o1", "one")]
                # tracked: o1 modified once overall, the insert-then-delete is gone
                view = ChangeView(idl.tracked)
                (ch,) = view.modified("Other")
                assert ch.old is o1 and ch.new.data["n"] == 100
                assert sorted(view.columns("Other")) == ["n", "name"]
                assert [r.name for r in view.deleted("Other")] == ["o2"]
                assert view.inserted("Other") == []
                # changes since a seqno, while the bounded history still has it
                since = idl.changes_since(start + 2)  # the insert and delete of new cancel
                assert since is not None and set(since.tables["Other"]) == {uuids["o2"]}
                assert set(idl.changes_since(start + 3).tables["Other"]) == {new, uuids["o2"]}
                assert idl.changes_since(start) is None  # history holds 3 batches
                assert not idl.changes_since(idl.seqno)
                w.cancel()
                idl.track_clear()
                assert not idl.tracked
                seqno = idl.seqno
                await asyncio.to_thread(d.update, "Other", uuids["o3"], name="three")
                await idl.wait_for_change(seqno, 5)
                assert len(renames) == 1 and len(events) == 6
                assert [c.new.name for c in ChangeView(idl.tracked).modified("Other")] == [
                    "three"]

    arun(body())


def test_an_inconsistent_update_triggers_a_resync_from_scratch(server: ServerProcess) -> None:
    """A "modify" for a row the replica does not hold: the replica is out of step, so
    the IDL reconnects asking for everything (transaction id zero)."""

    async def body() -> None:
        with Direct(server.unix) as d:
            seed(d)
            async with Proxy(server.unix) as proxy, \
                    Idl(proxy.remote, DB, min_backoff=0.05) as idl:
                idl.track_clear()
                proxy.inject({"method": "update3", "id": None, "params": [
                    ["monid", DB], "00000000-0000-0000-0000-000000000001",
                    {"Other": {str(uuidlib.uuid4()): {"modify": {"n": 5}}}}]})
                await until(lambda: idl.n_connects == 2 and idl.connected, what="resync")
                since = proxy.requests("monitor_cond_since")[-1][0]
                assert since["params"][3] == "00000000-0000-0000-0000-000000000000"
                check_replica(idl, d)
                assert not idl.tracked  # nothing changed in fact

    arun(body())
