"""Choosing and keeping a server: remote lists and their order, leader-only checks on
`_Server` (non-leaders and stale indexes faked by a proxy, since no real cluster is
available here), reconnection with backoff, inactivity probes, monitor fallbacks, and
the error when nothing is usable. Each behaviour against our server and the real one."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from idl_helpers import DB, SCHEMA, SCHEMA_FILE, Direct, arun, make_server, until
from proxy import Proxy

from procs import ServerProcess, free_port
from pyovsdb.idl import Backoff, Idl, IdlConfigError, NoServerError


def fake_server_row(proxy: Proxy, leader: bool = True, **fields: Any) -> None:
    """Make the proxy's server report these `_Server` fields for the database."""

    def hook(request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        params = request.get("params") or []
        if request.get("method") == "monitor_cond" and params[:1] == ["_Server"]:
            for uuid, upd in (reply.get("result") or {}).get("Database", {}).items():
                upd["initial"].update(fields, leader=leader)
                proxy.db_row = uuid  # type: ignore[attr-defined]
        return reply

    proxy.reply_hook = hook


CLUSTERED = {"model": "clustered", "connected": True, "leader": True}
CLUSTERED_FIELDS = {"model": "clustered", "connected": True}


# -- pure rules ------------------------------------------------------------------------


def test_backoff_doubles_with_jitter_up_to_the_maximum() -> None:
    b = Backoff(0.1, 1.0, rng=random.Random(7))
    bases = [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    for base in bases:
        d = b.next()
        assert base / 2 <= d <= base
    delays = [b.next() for _ in range(200)]
    assert min(delays) >= 0.5 and max(delays) <= 1.0
    assert len({round(d, 6) for d in delays}) > 150  # jittered, not constant
    b.reset()
    assert 0.05 <= b.next() <= 0.1
    with pytest.raises(ValueError):
        Backoff(0, 1)
    with pytest.raises(ValueError):
        Backoff(2, 1)


@pytest.mark.parametrize(("row", "leader_only", "problem"), [
    (None, True, "does not have"),
    ({"model": "standalone", "leader": True, "connected": True}, True, None),
    ({"model": "standalone", "leader": False}, True, None),  # leader-only is for clusters
    ({**CLUSTERED, "schema": "{}", "index": 3}, True, None),
    ({**CLUSTERED, "schema": None}, True, "not yet joined"),
    ({**CLUSTERED, "schema": "{}", "connected": False}, True, "disconnected"),
    ({**CLUSTERED, "schema": "{}", "leader": False}, True, "not the cluster leader"),
    ({**CLUSTERED, "schema": "{}", "leader": False}, False, None),
    ({**CLUSTERED, "schema": "{}", "index": 1}, True, "stale data"),
    ({"model": "relay", "schema": "{}", "connected": True}, True, "cannot be a leader"),
    ({"model": "relay", "schema": "{}", "connected": True}, False, None),
    ({"model": "relay", "schema": "{}", "connected": False}, False, "disconnected"),
])
def test_server_problem_rules(row: dict[str, Any] | None, leader_only: bool,
                              problem: str | None) -> None:
    idl = Idl("unix:/nonexistent", DB, leader_only=leader_only)
    idl.min_index = 2
    got = idl.server_problem(row)
    if problem is None:
        assert got is None
    else:
        assert got is not None and problem in got


def test_no_usable_remote_raises_no_server_error_with_reasons(tmp_path: Path) -> None:
    remotes = [f"unix:{tmp_path}/none.sock", f"tcp:127.0.0.1:{free_port()}"]

    async def body() -> None:
        idl = Idl(remotes, DB, min_backoff=0.05, max_backoff=0.1)
        with pytest.raises(NoServerError) as e:
            await idl.start(timeout=0.5)
        assert set(e.value.reasons) == set(remotes)
        assert all("connection failed" in r for r in e.value.reasons.values())
        assert idl._task is None and not idl.connected  # nothing left running
        # The connect timeout given to the IDL is how long `async with` waits too.
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        with pytest.raises(NoServerError):
            async with Idl(remotes, DB, connect_timeout=0.5, min_backoff=0.05):
                pass
        assert 0.5 <= loop.time() - t0 < 3

    arun(body())


def test_registration_errors_fail_at_once(server: ServerProcess) -> None:
    async def body() -> None:
        idl = Idl(server.unix, DB, tables=["Simple", "Nope"])
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        with pytest.raises(IdlConfigError, match="Nope"):
            await idl.start(timeout=10)
        assert loop.time() - t0 < 5
        with pytest.raises(IdlConfigError, match="nope"):
            await Idl(server.unix, DB, tables={"Simple": ["nope"]}).start(timeout=10)
        # with the schema given: at construction, and indexes can come before start
        with pytest.raises(IdlConfigError, match="Nope"):
            Idl(server.unix, DB, schema=SCHEMA, tables=["Nope"])
        idl = Idl(server.unix, DB, schema=SCHEMA_FILE, tables=["Other"])
        by_name = idl.add_index("Other", "name", "name")
        with Direct(server.unix) as d:
            d.insert("Other", name="x", n=1)
        async with idl:
            assert by_name.find_one("x").n == 1

    arun(body())


# -- against the servers ----------------------------------------------------------------


def test_remotes_in_given_order_or_shuffled(server: ServerProcess, tmp_path: Path) -> None:
    dead = f"unix:{tmp_path}/dead.sock"

    async def body() -> None:
        async with Idl([server.unix, server.tcp], DB, shuffle=False) as idl:
            assert idl.remote == server.unix
        async with Idl(f"{dead},{server.tcp}", DB, shuffle=False) as idl:
            assert idl.remote == server.tcp
            assert "connection failed" in idl.last_errors.get(dead, "connection failed")
        seen = set()
        for _ in range(12):
            async with Idl([server.unix, server.tcp], DB, shuffle=True) as idl:
                seen.add(idl.remote)
            if len(seen) == 2:
                break
        assert seen == {server.unix, server.tcp}

    arun(body())


def test_leader_only_skips_non_leaders(server: ServerProcess) -> None:
    async def body() -> None:
        async with Proxy(server.unix) as follower, Proxy(server.unix) as leader:
            fake_server_row(follower, **CLUSTERED_FIELDS, leader=False, index=5)
            fake_server_row(leader, **CLUSTERED_FIELDS, index=5)
            async with Idl([follower.remote, leader.remote], DB, shuffle=False,
                           min_backoff=0.05) as idl:
                assert idl.remote == leader.remote
                assert "not the cluster leader" in idl.last_errors[follower.remote]
                assert idl.min_index == 5
            async with Idl([follower.remote, leader.remote], DB, shuffle=False,
                           leader_only=False) as idl:
                assert idl.remote == follower.remote

    arun(body())


def test_servers_behind_an_index_already_seen_are_skipped(server: ServerProcess) -> None:
    async def body() -> None:
        async with Proxy(server.unix) as a, Proxy(server.unix) as b:
            fake_server_row(a, **CLUSTERED_FIELDS, index=10)
            fake_server_row(b, **CLUSTERED_FIELDS, index=5)
            idl = Idl([a.remote, b.remote], DB, shuffle=False, min_backoff=0.05,
                      max_backoff=0.1)
            async with idl:
                assert idl.remote == a.remote and idl.min_index == 10
                fake_server_row(a, **CLUSTERED_FIELDS, leader=False, index=11)
                idl.force_reconnect()
                await until(lambda: "stale" in idl.last_errors.get(b.remote, "")
                            and "leader" in idl.last_errors.get(a.remote, ""),
                            what="b skipped as stale, a as not leader")
                assert not idl.connected
                fake_server_row(b, **CLUSTERED_FIELDS, index=12)  # b caught up
                await idl.wait_synced(5)
                assert idl.remote == b.remote and idl.min_index == 12

    arun(body())


def test_losing_leadership_mid_session_moves_to_another_server(server: ServerProcess) -> None:
    async def body() -> None:
        async with Proxy(server.unix) as a, Proxy(server.unix) as b:
            fake_server_row(a, **CLUSTERED_FIELDS, index=1)
            fake_server_row(b, **CLUSTERED_FIELDS, index=1)
            async with Idl([a.remote, b.remote], DB, shuffle=False, min_backoff=0.05) as idl:
                assert idl.remote == a.remote
                fake_server_row(a, **CLUSTERED_FIELDS, leader=False, index=2)
                a.inject({"method": "update2", "id": None, "params": [
                    ["monid", "_Server"],
                    {"Database": {a.db_row: {"modify": {"leader": False}}}}]})  # type: ignore[attr-defined]
                await until(lambda: idl.connected and idl.remote == b.remote,
                            what="move to b")

    arun(body())


def test_reconnects_with_backoff_until_the_server_comes(kind: str, tmp_path: Path) -> None:
    srv = make_server(kind, tmp_path)

    async def body() -> None:
        idl = Idl(srv.unix, DB, min_backoff=0.02, max_backoff=0.16)
        task = asyncio.ensure_future(idl.start(timeout=20))
        await asyncio.sleep(1.0)
        delays = list(idl.reconnect_delays)
        assert len(delays) >= 5 and idl.n_attempts >= 5
        bases = [0.02, 0.04, 0.08, 0.16, 0.16, 0.16]
        for d, base in zip(delays, bases, strict=False):
            assert base / 2 <= d <= base
        assert max(delays) <= 0.16
        await asyncio.to_thread(srv.start)
        await asyncio.wait_for(task, 5)
        assert idl.connected and idl.n_connects == 1
        # A server that goes away and comes back: reconnection, the backoff reset.
        seen = len(idl.reconnect_delays)
        await asyncio.to_thread(srv.kill)
        await until(lambda: not idl.connected, what="disconnect")
        await asyncio.to_thread(srv.start)
        await idl.wait_synced(5)
        assert idl.n_connects == 2
        after = list(idl.reconnect_delays)[seen:]
        assert after and after[0] <= 0.02
        await idl.close()

    try:
        arun(body())
    finally:
        srv.stop()


def test_inactivity_probe_drops_a_silent_server(server: ServerProcess) -> None:
    async def body() -> None:
        async with Proxy(server.unix) as proxy:
            async with Idl(proxy.remote, DB, probe_interval=0.2, min_backoff=0.05) as idl:
                loop = asyncio.get_running_loop()
                proxy.silent = True
                t0 = loop.time()
                await until(lambda: not idl.connected, timeout=5, what="probe failure")
                # two silent intervals (0.4 s), plus scheduling slack on a busy machine
                assert 0.2 <= loop.time() - t0 <= 3.0
                assert proxy.requests("echo")  # it did probe before giving up
                proxy.silent = False
                await idl.wait_synced(5)
                assert idl.n_connects == 2
            # A quiet but live server is not dropped: probes are answered.
            async with Idl(proxy.remote, DB, probe_interval=0.1) as idl:
                await asyncio.sleep(0.6)
                assert idl.connected and idl.n_connects == 1

    arun(body())


@pytest.mark.parametrize("missing", [["monitor_cond_since"],
                                     ["monitor_cond_since", "monitor_cond"]])
def test_monitor_fallbacks(server: ServerProcess, missing: list[str]) -> None:
    async def body() -> None:
        with Direct(server.unix) as d:
            d.insert("Other", name="before", n=1)
            async with Proxy(server.unix) as proxy:
                proxy.reject.update(missing)
                async with Idl(proxy.remote, DB) as idl:
                    expected = "monitor_cond" if len(missing) == 1 else "monitor"
                    assert idl.monitor_method == expected
                    assert [r.name for r in idl["Other"].rows.values()] == ["before"]
                    seqno = idl.seqno
                    uuid = await asyncio.to_thread(d.insert, "Other", name="after", n=2)
                    assert await idl.wait_for_change(seqno, 5)
                    assert idl["Other"].get(uuid).n == 2
                    txn = idl.transaction()
                    txn.update(idl["Other"].get(uuid), n=3)
                    assert (await txn.commit()).ok
                    assert idl["Other"].get(uuid).n == 3
                    methods = {m.get("method") for m, _ in proxy.sent}
                    assert expected in methods and "monitor_cond_since" in methods

    arun(body())


def test_monitor_canceled_reconnects_and_records_nothing_spurious(server: ServerProcess) -> None:
    """The server cancels monitors when a database is converted or removed: the IDL
    looks at the schema again and resyncs; an unchanged database changes nothing."""

    async def body() -> None:
        with Direct(server.unix) as d:
            d.insert("Other", name="o", n=1)
            async with Proxy(server.unix) as proxy, \
                    Idl(proxy.remote, DB, min_backoff=0.05) as idl:
                row = idl["Other"].rows.copy().popitem()[1]
                idl.track_clear()
                seqno = idl.seqno
                proxy.inject({"method": "monitor_canceled", "params": [["monid", DB]],
                              "id": None})
                await until(lambda: idl.n_connects == 2 and idl.connected, what="resync")
                assert proxy.connections == 2
                assert idl.seqno == seqno and not idl.tracked
                assert idl["Other"].get(row.uuid) is row
                again = proxy.requests("monitor_cond_since")[-1][0]
                assert again["params"][3] == "00000000-0000-0000-0000-000000000000"

    arun(body())
