"""Clusters of our servers as processes: they form, elect, replicate and survive a
restart; `_Server` rows, leader-only clients and `monitor_cond_since` across members
work as they do against the real ovsdb-server."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from procs import require
from pyovsdb.testing_cluster import OURS, Cluster, run, server_rows, tool_cmd

ZERO = "00000000-0000-0000-0000-000000000000"
NB = "OVN_Northbound"


def nbctl(remote: str, *args: str, leader_only: bool = False,
          check: bool = True) -> Any:
    opts = [f"--db={remote}", "--timeout=30"]
    if not leader_only:
        opts.append("--no-leader-only")
    return run(["ovn-nbctl", *opts, *args], check=check, timeout=40)


def switches(c: Cluster, i: int) -> list[str]:
    m = c.members[i - 1]
    out = nbctl(m.unix, "--bare", "--columns=name", "list", "Logical_Switch").stdout
    return sorted(x for x in out.split() if x)


@pytest.mark.parametrize("n", [3, 5])
def test_form_replicate_restart(make_cluster: Callable[..., Cluster], n: int) -> None:
    require("ovn-nbctl")
    c = make_cluster([OURS] * n)
    leader = c.leader()
    follower = c.followers(leader)[0]
    nbctl(c.members[follower - 1].unix, "ls-add", "via-follower")
    nbctl(c.members[leader - 1].unix, "ls-add", "via-leader")
    nbctl(c.remotes(), "ls-add", "leader-only", leader_only=True)
    c.wait_applied()
    want = ["leader-only", "via-follower", "via-leader"]
    for m in c.members:
        assert switches(c, m.index) == want

    # A full restart: everything committed is still there, and a leader is elected.
    for m in c.members:
        c.stop(m.index)
    c.start()
    leader = c.wait_formed()
    for m in c.members:
        assert switches(c, m.index) == want
    nbctl(c.members[c.followers(leader)[-1] - 1].unix, "ls-add", "after-restart")
    c.wait_applied()
    assert switches(c, 1) == sorted([*want, "after-restart"])
    c.close()
    c.check_cluster()


def test_server_rows(make_cluster: Callable[..., Cluster]) -> None:
    """What leader-only clients read: model, connected, leader, index, cid, sid."""
    c = make_cluster([OURS] * 3)
    leader = c.leader()
    c.wait_applied()
    cid = run([*tool_cmd(OURS), "db-cid", c.members[0].db]).stdout.strip()
    indexes = set()
    for m in c.members:
        rows = server_rows(m.unix)
        row = rows[NB]
        assert row["model"] == "clustered"
        assert row["connected"] is True
        assert row["leader"] is (m.index == leader)
        assert row["cid"] == ["uuid", cid]
        assert row["sid"] == ["uuid", m.sid()]
        assert isinstance(row["index"], int) and row["index"] > 0
        indexes.add(row["index"])
        assert row["schema"].startswith('{"cksum":')
        srv = rows["_Server"]
        assert (srv["model"], srv["leader"], srv["connected"]) == ("standalone", True, True)
    assert len(indexes) == 1, indexes

    # A member cut off from the majority says so (connected goes false, leader false).
    others = c.followers(leader)
    c.stop(others[0])
    c.stop(others[1])
    deadline = time.monotonic() + 15
    row: dict[str, Any] = {}
    while time.monotonic() < deadline:
        row = server_rows(c.members[leader - 1].unix)[NB]
        if not row["leader"] and not row["connected"]:
            break
        time.sleep(0.1)
    assert (row["leader"], row["connected"]) == (False, False)


def test_leader_only_clients(make_cluster: Callable[..., Cluster]) -> None:
    """ovn-nbctl's default mode and the PyPI ovs IDL with leader_only=True find the
    leader among all the remotes, whatever their order."""
    require("ovn-nbctl")
    c = make_cluster([OURS] * 3)
    leader = c.leader()
    order = [*c.followers(leader), leader]
    remotes = c.remotes(*order)
    for i in range(3):
        nbctl(remotes, "ls-add", f"nbctl{i}", leader_only=True)

    pytest.importorskip("ovs.db.idl")
    import ovs.db.idl
    import ovs.poller

    helper = ovs.db.idl.SchemaHelper(location=c.schema)
    helper.register_all()
    idl = ovs.db.idl.Idl(remotes, helper, leader_only=True)
    try:
        deadline = time.monotonic() + 20
        while not idl.has_ever_connected() or idl.change_seqno == 0:
            idl.run()
            if time.monotonic() > deadline:
                raise AssertionError("IDL did not connect")
            poller = ovs.poller.Poller()
            idl.wait(poller)
            poller.timer_wait(50)
            poller.block()
        assert idl._session.get_name() == c.members[leader - 1].unix
        assert sorted(r.name for r in idl.tables["Logical_Switch"].rows.values()) == \
            ["nbctl0", "nbctl1", "nbctl2"]
        txn = ovs.db.idl.Transaction(idl)
        row = txn.insert(idl.tables["Logical_Switch"])
        row.name = "from-idl"
        status = txn.commit_block()
        assert status == ovs.db.idl.Transaction.SUCCESS, txn.get_error()
    finally:
        idl.close()
    c.wait_applied()
    assert "from-idl" in switches(c, order[0])


def _monitor_since(remote: str, last_id: str) -> tuple[bool, str, dict[str, Any]]:
    from pyovsdb.jsonrpc.client import Client

    with Client(remote, timeout=10) as cl:
        found, last, updates = cl.call("monitor_cond_since", [
            NB, "m", {"Logical_Switch": [{"columns": ["name"]}]}, last_id])
    return found, last, updates


def test_monitor_cond_since_across_members(make_cluster: Callable[..., Cluster]) -> None:
    """Transaction ids are entry ids: a client that read up to some transaction on one
    member resumes on another with only what it missed."""
    require("ovn-nbctl")
    c = make_cluster([OURS] * 3)
    leader = c.leader()
    a, b = c.followers(leader)
    nbctl(c.members[a - 1].unix, "ls-add", "first")
    c.wait_applied()
    found, last1, updates = _monitor_since(c.members[a - 1].unix, ZERO)
    assert not found
    assert [r["initial"]["name"] for r in updates["Logical_Switch"].values()] == ["first"]
    ids = {_monitor_since(m.unix, ZERO)[1] for m in c.members}
    assert ids == {last1}, "members disagree on the transaction id of the same entry"

    nbctl(c.members[b - 1].unix, "ls-add", "second")
    nbctl(c.members[leader - 1].unix, "ls-add", "third")
    c.wait_applied()
    for m in c.members:
        found, last2, updates = _monitor_since(m.unix, last1)
        assert found, m.name
        assert sorted(r["insert"]["name"] for r in updates["Logical_Switch"].values()) \
            == ["second", "third"]
        assert last2 != last1
        found, last3, updates = _monitor_since(m.unix, last2)
        assert found and last3 == last2 and not updates

    # History survives nothing across a restart of the member: an unknown id gets the
    # whole database back (found=false), never an error.
    c.stop(a)
    c.start(a)
    c.wait_formed()
    c.wait_applied()
    found, _, updates = _monitor_since(c.members[a - 1].unix, last1)
    names = sorted(r.get("initial", r.get("insert", {})).get("name")
                   for r in updates["Logical_Switch"].values())
    assert (found and names == ["second", "third"]) or \
        (not found and names == ["first", "second", "third"])


def test_five_members_lose_two(make_cluster: Callable[..., Cluster], tmp_path: Path) -> None:
    """A 5-server cluster keeps committing with two members down, and they catch up."""
    require("ovn-nbctl")
    c = make_cluster([OURS] * 5)
    leader = c.leader()
    down = c.followers(leader)[:2]
    for i in down:
        c.kill(i)
    nbctl(c.members[leader - 1].unix, "ls-add", "while-two-down")
    c.start(*down)
    c.wait_formed()
    c.wait_applied()
    for i in down:
        assert switches(c, i) == ["while-two-down"]


def test_pipelined_transactions_commit_in_order(
        make_cluster: Callable[..., Cluster]) -> None:
    """Many transactions in flight on one connection, through the leader and through
    a follower at once: they commit as a few raft entries (group commit), every one
    succeeds, replies come back in request order, and each member ends with the
    effects of all of them exactly once."""
    from pyovsdb.jsonrpc.client import Client

    require("ovn-nbctl")
    c = make_cluster([OURS] * 3)
    leader = c.leader()
    nbctl(c.members[leader - 1].unix, "init")
    n = 150
    clients = {}
    for who in (leader, c.followers(leader)[0]):
        cl = Client(c.members[who - 1].unix, timeout=60)
        clients[who] = (cl, [cl.send("transact", [
            NB, {"op": "insert", "table": "Logical_Switch", "row": {"name": f"g{who}-{i}"}},
            {"op": "mutate", "table": "NB_Global", "where": [],
             "mutations": [["nb_cfg", "+=", 1]]}]) for i in range(n)])
    for cl, ids in clients.values():
        order = []
        while len(order) < n:
            cl._read()
            order += [k for k in cl.replies if k not in order]
        assert order == ids, f"replies out of order: {order.index(ids[0])} {cl.replies[ids[0]]}"
        for i in ids:
            res = cl.replies[i]["result"]
            assert res[0].get("uuid") and res[1] == {"count": 1}, res
        cl.close()
    c.wait_applied()
    for m in c.members:
        assert nbctl(m.unix, "get", "NB_Global", ".", "nb_cfg").stdout.strip() == str(2 * n)
        assert len(switches(c, m.index)) == 2 * n
    entries = int(parse_log_end(c.members[leader - 1]))
    assert entries < 2 * n, "no two transactions shared a raft entry"


def parse_log_end(m: Any) -> str:
    st = m.status(NB)
    return st["Log"].strip("[]").split(", ")[1]


@pytest.mark.parametrize("via", ["leader", "follower"])
def test_pipelined_dependent_transactions(make_cluster: Callable[..., Cluster],
                                          via: str) -> None:
    """Transaction i+1 of a connection sees the effects of transaction i even while i
    is still being committed, as on the real server's leader (which runs a
    transaction only once everything before it is applied); on a follower too, where
    the real server would run it against its older copy."""
    from pyovsdb.jsonrpc.client import Client

    require("ovn-nbctl")
    c = make_cluster([OURS] * 3)
    leader = c.leader()
    nbctl(c.members[leader - 1].unix, "init")
    c.wait_applied()
    m = leader if via == "leader" else c.followers(leader)[0]
    with Client(c.members[m - 1].unix, timeout=60) as cl:
        ids = [cl.send("transact", [
            NB, {"op": "wait", "table": "NB_Global", "where": [], "timeout": 0,
                 "columns": ["nb_cfg"], "until": "==", "rows": [{"nb_cfg": i}]},
            {"op": "mutate", "table": "NB_Global", "where": [],
             "mutations": [["nb_cfg", "+=", 1]]}]) for i in range(20)]
        results = [cl.wait(i)["result"] for i in ids]
    assert all(len(r) == 2 and "error" not in r[0] for r in results), results
