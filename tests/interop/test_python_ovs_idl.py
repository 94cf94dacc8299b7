"""The PyPI `ovs` package's IDL (`ovs.db.idl.Idl`, what Neutron and others use) against
our server, and the same steps against the real one."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from interop_helpers import Monitor, monitor_events, nbctl, select

from procs import NB_SCHEMA, ServerProcess, require

ovs_idl = pytest.importorskip("ovs.db.idl")
ovs_poller = pytest.importorskip("ovs.poller")

pytestmark = pytest.mark.interop

Idl = ovs_idl.Idl
Transaction = ovs_idl.Transaction


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovn-nbctl", "ovsdb-client")


def run_until(idl: Any, pred: Callable[[], bool], timeout: float = 10) -> None:
    """Run the IDL's loop until `pred()` holds."""
    deadline = time.monotonic() + timeout
    while True:
        idl.run()
        if pred():
            return
        if time.monotonic() > deadline:
            raise AssertionError("IDL never reached the expected state")
        poller = ovs_poller.Poller()
        idl.wait(poller)
        poller.timer_wait(50)
        poller.block()


def make_idl(remote: str, tables: list[str] | None = None, **kw: Any) -> Any:
    helper = ovs_idl.SchemaHelper(NB_SCHEMA)
    if tables is None:
        helper.register_all()
    else:
        for t in tables:
            helper.register_table(t)
    idl = Idl(remote, helper, **kw)
    run_until(idl, lambda: idl.has_ever_connected() and idl.change_seqno > 0)
    return idl


@pytest.fixture
def idl_factory() -> Iterator[Callable[..., Any]]:
    made: list[Any] = []

    def make(remote: str, tables: list[str] | None = None, **kw: Any) -> Any:
        idl = make_idl(remote, tables, **kw)
        made.append(idl)
        return idl

    yield make
    for idl in made:
        idl.close()


def rows(idl: Any, table: str) -> list[Any]:
    return list(idl.tables[table].rows.values())


def by_name(idl: Any, table: str, name: str) -> Any:
    found = [r for r in rows(idl, table) if r.name == name]
    return found[0] if found else None


def commit(idl: Any, fn: Callable[[Any], None]) -> tuple[int, Any]:
    txn = Transaction(idl)
    fn(txn)
    status = txn.commit_block()
    return status, txn


def status_name(status: int) -> str:
    return str(Transaction.status_to_string(status))


def test_initial_sync(any_nb_server: ServerProcess, idl_factory: Callable[..., Any]) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0", "--", "set", "Logical_Switch", "sw0", "external_ids:k=v")
    nbctl(
        srv, "lsp-add", "sw0", "p0", "--", "lsp-set-addresses", "p0", "00:00:00:00:00:01 10.0.0.1"
    )
    nbctl(srv, "ls-add", "sw1")
    idl = idl_factory(srv.unix)
    assert sorted(r.name for r in rows(idl, "Logical_Switch")) == ["sw0", "sw1"]
    sw0 = by_name(idl, "Logical_Switch", "sw0")
    assert sw0.external_ids == {"k": "v"}
    # References are resolved to the referenced rows.
    assert [p.name for p in sw0.ports] == ["p0"]
    assert sw0.ports[0].addresses == ["00:00:00:00:00:01 10.0.0.1"]
    assert by_name(idl, "Logical_Switch", "sw1").ports == []
    assert rows(idl, "ACL") == []


def test_insert_and_see_ctl_changes(
    any_nb_server: ServerProcess, idl_factory: Callable[..., Any]
) -> None:
    srv = any_nb_server
    idl = idl_factory(srv.unix)

    def insert(txn: Any) -> None:
        sw = txn.insert(idl.tables["Logical_Switch"])
        sw.name = "from-idl"
        sw.external_ids = {"owner": "idl"}
        port = txn.insert(idl.tables["Logical_Switch_Port"])
        port.name = "idl-port"
        port.addresses = ["dynamic"]
        sw.ports = [port]
        insert.uuid = sw.uuid  # type: ignore[attr-defined]

    status, txn = commit(idl, insert)
    assert status_name(status) == "success"
    new_uuid = txn.get_insert_uuid(insert.uuid)  # type: ignore[attr-defined]
    assert new_uuid is not None
    out = nbctl(srv, "ls-list").stdout
    assert out == f"{new_uuid} (from-idl)\n"
    assert nbctl(srv, "lsp-list", "from-idl").stdout.endswith("(idl-port)\n")
    assert nbctl(srv, "get", "Logical_Switch", "from-idl", "external_ids").stdout == "{owner=idl}\n"
    run_until(idl, lambda: by_name(idl, "Logical_Switch", "from-idl") is not None)
    assert by_name(idl, "Logical_Switch", "from-idl").uuid == new_uuid

    # Changes by ovn-nbctl reach the IDL: insert, modify, delete.
    nbctl(srv, "ls-add", "from-ctl")
    run_until(idl, lambda: by_name(idl, "Logical_Switch", "from-ctl") is not None)
    nbctl(srv, "set", "Logical_Switch", "from-ctl", "other_config:a=b")
    run_until(idl, lambda: by_name(idl, "Logical_Switch", "from-ctl").other_config == {"a": "b"})
    nbctl(srv, "lsp-del", "idl-port")
    run_until(idl, lambda: by_name(idl, "Logical_Switch", "from-idl").ports == [])
    assert rows(idl, "Logical_Switch_Port") == []
    nbctl(srv, "ls-del", "from-ctl")
    run_until(idl, lambda: by_name(idl, "Logical_Switch", "from-ctl") is None)
    assert [r.name for r in rows(idl, "Logical_Switch")] == ["from-idl"]


def test_verify_try_again(any_nb_server: ServerProcess, idl_factory: Callable[..., Any]) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0", "--", "set", "Logical_Switch", "sw0", "external_ids:k=v1")
    idl = idl_factory(srv.unix)
    sw0 = by_name(idl, "Logical_Switch", "sw0")

    txn = Transaction(idl)
    sw0.verify("external_ids")
    sw0.external_ids = {"k": "from-idl"}
    # A concurrent change the IDL has not seen yet.
    nbctl(srv, "set", "Logical_Switch", "sw0", "external_ids:k=from-ctl")
    assert status_name(txn.commit_block()) == "try again"
    assert nbctl(srv, "get", "Logical_Switch", "sw0", "external_ids:k").stdout == "from-ctl\n"

    # Once the IDL has caught up, the same change succeeds.
    run_until(idl, lambda: by_name(idl, "Logical_Switch", "sw0").external_ids == {"k": "from-ctl"})
    sw0 = by_name(idl, "Logical_Switch", "sw0")

    def retry(txn: Any) -> None:
        sw0.verify("external_ids")
        sw0.external_ids = {"k": "from-idl"}

    status, _ = commit(idl, retry)
    assert status_name(status) == "success"
    assert nbctl(srv, "get", "Logical_Switch", "sw0", "external_ids:k").stdout == "from-idl\n"


def test_delete_and_partial_map_updates(
    any_nb_server: ServerProcess, idl_factory: Callable[..., Any]
) -> None:
    srv = any_nb_server
    nbctl(
        srv,
        "ls-add",
        "sw0",
        "--",
        "set",
        "Logical_Switch",
        "sw0",
        "external_ids:a=1",
        "external_ids:b=2",
    )
    nbctl(srv, "ls-add", "sw1")
    idl = idl_factory(srv.unix)
    sw0 = by_name(idl, "Logical_Switch", "sw0")

    # setkey/delkey become "mutate" operations on the server.
    status, _ = commit(
        idl, lambda txn: (sw0.setkey("external_ids", "c", "3"), sw0.delkey("external_ids", "a"))
    )
    assert status_name(status) == "success"
    assert select(srv, "Logical_Switch", ["name", "external_ids"], [["name", "==", "sw0"]]) == [
        {"name": "sw0", "external_ids": ["map", [["b", "2"], ["c", "3"]]]}
    ]
    run_until(
        idl, lambda: by_name(idl, "Logical_Switch", "sw0").external_ids == {"b": "2", "c": "3"}
    )

    status, _ = commit(idl, lambda txn: by_name(idl, "Logical_Switch", "sw1").delete())
    assert status_name(status) == "success"
    assert nbctl(srv, "ls-list").stdout.endswith("(sw0)\n")
    assert len(nbctl(srv, "ls-list").stdout.splitlines()) == 1
    run_until(idl, lambda: by_name(idl, "Logical_Switch", "sw1") is None)

    # A transaction with no changes is "unchanged"; an aborted one changes nothing.
    status, _ = commit(idl, lambda txn: None)
    assert status_name(status) == "unchanged"
    txn = Transaction(idl)
    by_name(idl, "Logical_Switch", "sw0").name = "renamed"
    txn.abort()
    assert select(srv, "Logical_Switch", ["name"]) == [{"name": "sw0"}]


def test_constraint_error_reported(
    any_nb_server: ServerProcess, idl_factory: Callable[..., Any]
) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0", "--", "acl-add", "sw0", "to-lport", "10", "1", "drop")
    idl = idl_factory(srv.unix)

    def dup(txn: Any) -> None:
        row = txn.insert(idl.tables["Address_Set"])
        row.name = "as"
        row2 = txn.insert(idl.tables["Address_Set"])
        row2.name = "as"

    status, txn = commit(idl, dup)
    assert status_name(status) == "error"
    assert "constraint violation" in txn.get_error()
    assert select(srv, "Address_Set", ["name"]) == []


def test_increment(any_nb_server: ServerProcess, idl_factory: Callable[..., Any]) -> None:
    srv = any_nb_server
    nbctl(srv, "init")
    idl = idl_factory(srv.unix)
    nb = rows(idl, "NB_Global")[0]
    for expected in (1, 2):
        txn = Transaction(idl)
        # (the IDL only sends an increment along with some other change)
        nb.external_ids = {"round": str(expected)}
        nb.increment("nb_cfg")
        assert status_name(txn.commit_block()) == "success"
        assert txn.get_increment_new_value() == expected
    assert select(srv, "NB_Global", ["nb_cfg", "external_ids"]) == [
        {"nb_cfg": 2, "external_ids": ["map", [["round", "2"]]]}
    ]


def test_conditional_monitoring(
    any_nb_server: ServerProcess, idl_factory: Callable[..., Any]
) -> None:
    srv = any_nb_server
    for name in ("a", "b", "c"):
        nbctl(srv, "ls-add", name)
    idl = idl_factory(srv.unix, ["Logical_Switch"])
    assert sorted(r.name for r in rows(idl, "Logical_Switch")) == ["a", "b", "c"]
    idl.cond_change("Logical_Switch", [["name", "==", "b"]])
    run_until(idl, lambda: sorted(r.name for r in rows(idl, "Logical_Switch")) == ["b"])
    nbctl(srv, "ls-add", "d")
    nbctl(srv, "set", "Logical_Switch", "b", "external_ids:seen=yes")
    run_until(idl, lambda: by_name(idl, "Logical_Switch", "b").external_ids == {"seen": "yes"})
    assert sorted(r.name for r in rows(idl, "Logical_Switch")) == ["b"]
    idl.cond_change("Logical_Switch", [True])
    run_until(
        idl, lambda: sorted(r.name for r in rows(idl, "Logical_Switch")) == ["a", "b", "c", "d"]
    )


def test_lock(any_nb_server: ServerProcess, idl_factory: Callable[..., Any]) -> None:
    srv = any_nb_server
    first = idl_factory(srv.unix, ["NB_Global"])
    first.set_lock("leader")
    run_until(first, lambda: first.has_lock)
    second = idl_factory(srv.unix, ["NB_Global"])
    second.set_lock("leader")
    run_until(second, lambda: second.is_lock_contended)
    assert not second.has_lock
    first.set_lock(None)
    run_until(first, lambda: not first.has_lock)
    run_until(second, lambda: second.has_lock)


def test_reconnect_after_server_restart(
    any_nb_server: ServerProcess, idl_factory: Callable[..., Any]
) -> None:
    """The server goes away and comes back (same file) with changes the IDL missed:
    the IDL reconnects and converges."""
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0")
    nbctl(srv, "ls-add", "sw1")
    idl = idl_factory(srv.unix)
    srv.stop()
    idl.run()
    srv.start()
    nbctl(srv, "ls-del", "sw0", "--", "ls-add", "sw2")
    nbctl(srv, "set", "Logical_Switch", "sw1", "external_ids:k=v")
    run_until(
        idl,
        lambda: sorted(r.name for r in rows(idl, "Logical_Switch")) == ["sw1", "sw2"],
        timeout=20,
    )
    run_until(idl, lambda: by_name(idl, "Logical_Switch", "sw1").external_ids == {"k": "v"})
    # And it can still write.
    status, _ = commit(
        idl, lambda txn: setattr(by_name(idl, "Logical_Switch", "sw2"), "external_ids", {"x": "y"})
    )
    assert status_name(status) == "success"
    assert nbctl(srv, "get", "Logical_Switch", "sw2", "external_ids:x").stdout == "y\n"


def test_tcp_remote_and_leader_only(
    any_nb_server: ServerProcess, idl_factory: Callable[..., Any]
) -> None:
    """Over TCP, and with leader_only left at its default (True): the IDL reads the
    _Server database first and must accept a standalone server as the leader."""
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0")
    idl = idl_factory(srv.tcp)
    assert idl.leader_only is True
    assert [r.name for r in rows(idl, "Logical_Switch")] == ["sw0"]
    # It went through the _Server database to the data monitor.
    assert idl.state == Idl.IDL_S_MONITORING
    assert idl._server_db is not None


def test_resync_after_dropped_connection(
    any_nb_server: ServerProcess, idl_factory: Callable[..., Any]
) -> None:
    """The server drops every connection (`ovsdb-server/reconnect`) and changes are made
    while the IDL is away: on reconnecting with monitor_cond_since and its last
    transaction id, the IDL must end up with exactly the server's contents, whether
    the server answers with the missed changes or with everything."""
    srv = any_nb_server
    for name in ("keep", "gone", "changed"):
        nbctl(srv, "ls-add", name, "--", "set", "Logical_Switch", name, f"external_ids:n={name}")
    idl = idl_factory(srv.unix)
    nbctl(srv, "set", "Logical_Switch", "changed", "external_ids:seen=1")
    run_until(
        idl, lambda: by_name(idl, "Logical_Switch", "changed").external_ids.get("seen") == "1"
    )

    srv.appctl("ovsdb-server/reconnect")
    nbctl(srv, "ls-del", "gone")
    nbctl(
        srv,
        "set",
        "Logical_Switch",
        "changed",
        "external_ids:n=after",
        "--",
        "remove",
        "Logical_Switch",
        "changed",
        "external_ids",
        "seen",
    )
    nbctl(srv, "ls-add", "new", "--", "lsp-add", "new", "new-p")

    def idl_view() -> list[tuple[str, dict[str, str], list[str]]]:
        return sorted(
            (r.name, dict(r.external_ids), sorted(p.name for p in r.ports))
            for r in rows(idl, "Logical_Switch")
        )

    server = sorted(
        (
            r["name"],
            dict(r["external_ids"][1]),
            [p["name"] for p in select(srv, "Logical_Switch_Port", ["name"])]
            if r["name"] == "new"
            else [],
        )
        for r in select(srv, "Logical_Switch", ["name", "external_ids"])
    )
    assert server == [
        ("changed", {"n": "after"}, []),
        ("keep", {"n": "keep"}, []),
        ("new", {}, ["new-p"]),
    ]
    run_until(idl, lambda: idl_view() == server, timeout=20)
    assert [p.name for p in rows(idl, "Logical_Switch_Port")] == ["new-p"]
    # Further changes keep flowing.
    nbctl(srv, "ls-del", "keep")
    run_until(idl, lambda: by_name(idl, "Logical_Switch", "keep") is None)
    assert sorted(r.name for r in rows(idl, "Logical_Switch")) == ["changed", "new"]


def test_replicas_converge_after_burst(
    any_nb_server: ServerProcess, idl_factory: Callable[..., Any]
) -> None:
    """A writer IDL commits a burst of pseudo-random transactions (inserts, updates,
    map mutations, deletes, port moves) while an observer IDL and an `ovsdb-client
    monitor` watch: both replicas end up equal to what the server returns."""
    import json
    import random

    srv = any_nb_server
    rnd = random.Random(7)
    writer = idl_factory(srv.unix)
    observer = idl_factory(srv.tcp, ["Logical_Switch", "Logical_Switch_Port"])
    with Monitor(
        ["-f", "json", "monitor", srv.unix, "OVN_Northbound", "Logical_Switch", "name,external_ids"]
    ) as mon:
        # The monitor prints nothing for an empty table: add a first row and wait.
        status, _ = commit(
            writer,
            lambda txn: setattr(txn.insert(writer.tables["Logical_Switch"]), "name", "first"),
        )
        assert status_name(status) == "success"
        mon.wait_lines(1)
        successes = 0
        for i in range(120):
            run_until(writer, lambda: True)
            switches = rows(writer, "Logical_Switch")
            op = rnd.choice(
                ["insert", "insert", "update", "setkey", "delkey", "delete", "port", "unport"]
            )

            def change(txn: Any, op: str = op, switches: list[Any] = switches, i: int = i) -> None:
                if op == "insert" or not switches:
                    sw = txn.insert(writer.tables["Logical_Switch"])
                    sw.name = f"sw{i}"
                    sw.external_ids = {"born": str(i)}
                    return
                sw = rnd.choice(switches)
                if op == "update":
                    sw.external_ids = {"u": str(i)}
                elif op == "setkey":
                    sw.setkey("external_ids", f"k{i % 4}", str(i))
                elif op == "delkey":
                    sw.delkey("external_ids", f"k{i % 4}")
                elif op == "delete":
                    sw.delete()
                elif op == "port":
                    port = txn.insert(writer.tables["Logical_Switch_Port"])
                    port.name = f"p{i}"
                    sw.addvalue("ports", port.uuid)
                elif op == "unport" and sw.ports:
                    sw.delvalue("ports", sw.ports[0].uuid)

            status, _ = commit(writer, change)
            assert status_name(status) in ("success", "unchanged", "try again"), status_name(status)
            successes += status_name(status) == "success"

        server_ls = sorted(
            (r["_uuid"][1], r["name"], json.dumps(r["external_ids"]))
            for r in select(srv, "Logical_Switch", ["_uuid", "name", "external_ids"])
        )
        server_ports = sorted(r["name"] for r in select(srv, "Logical_Switch_Port", ["name"]))

        def observed() -> tuple[list[Any], list[str]]:
            ls = sorted(
                (
                    str(r.uuid),
                    r.name,
                    json.dumps(["map", sorted([k, v] for k, v in r.external_ids.items())]),
                )
                for r in rows(observer, "Logical_Switch")
            )
            return ls, sorted(r.name for r in rows(observer, "Logical_Switch_Port"))

        run_until(observer, lambda: observed() == (server_ls, server_ports), timeout=20)
        # Every port still there belongs to a switch (orphans were collected).
        owned = {p.name for r in rows(observer, "Logical_Switch") for p in r.ports}
        assert owned == set(server_ports)

        # Replay the monitor's updates onto an empty model.
        def monitored() -> dict[str, tuple[str, str]]:
            model: dict[str, tuple[str, str]] = {}
            for line in list(mon.lines):
                obj = json.loads(line)
                data = obj["data"]
                for j, row in enumerate(data):
                    uuid, action = row[0], row[1]
                    if action in ("initial", "insert"):
                        model[uuid] = (json.dumps(row[3]), row[2])
                    elif action == "delete":
                        del model[uuid]
                    elif action == "new":
                        model[data[j - 1][0]] = (json.dumps(row[3]), row[2])
            return model

        want = {u: (ext, name) for u, name, ext in server_ls}
        assert wait_hold(lambda: monitored() == want), (monitored(), want)
    assert len(server_ls) > 5 and successes > 100, (len(server_ls), successes)
    assert monitor_events(mon.lines)


def wait_hold(pred: Callable[[], bool], timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
