"""A transaction sent to a member while it leaves its cluster (`cluster/leave`), on
our servers and on the real ovsdb-server side by side.

The real server treats Raft's "server shutdown" as a temporary cluster error: it runs
the transaction again until the member has left, then removes the database and tells
each db-change-aware client "canceled" (a JSON-RPC error), which makes its IDL try
again elsewhere. A transaction must never be answered with a permanent error because
the member it reached is on its way out: `ovs-vsctl` would fail where it should have
retried on another member.

The leave is held open by stopping (SIGSTOP) the two other members, so that the
transaction surely arrives while the member is leaving; they are continued afterwards
(also on failure, so that the fixture can stop them).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from procs import VSWITCH_SCHEMA, require
from pyovsdb.testing_cluster import OURS, REAL, Cluster, Member, run
from rawrpc import Rpc

DB = "Open_vSwitch"


def pid(m: Member) -> int:
    p = m.proc.proc
    assert p is not None
    return p.pid


@contextmanager
def stopped(members: list[Member]) -> Iterator[None]:
    for m in members:
        os.kill(pid(m), signal.SIGSTOP)
    try:
        yield
    finally:
        for m in members:
            os.kill(pid(m), signal.SIGCONT)


def wait_left(m: Member, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while m.appctl("cluster/status", DB, check=False, timeout=5).returncode == 0:
        assert time.monotonic() < deadline, f"{m.name} did not leave"
        time.sleep(0.05)


def insert_key(key: str) -> dict[str, Any]:
    return {"op": "mutate", "table": "Open_vSwitch", "where": [],
            "mutations": [["external_ids", "insert", ["map", [[key, "x"]]]]]}


def external_ids(m: Member) -> str:
    return run(["ovs-vsctl", f"--db={m.unix}", "--no-leader-only", "--timeout=30",
                "get", "Open_vSwitch", ".", "external_ids"]).stdout


@pytest.mark.parametrize("kind", [OURS, REAL])
def test_transaction_while_leaving_is_retried_then_canceled(
        make_cluster: Callable[..., Cluster], kind: str) -> None:
    require("ovs-vsctl")
    c = make_cluster([kind] * 3, schema=VSWITCH_SCHEMA, db_name=DB)
    leader = c.leader()
    run(["ovs-vsctl", f"--db={c.members[leader - 1].unix}", "--no-wait", "init"])
    c.wait_applied()
    v = c.followers(leader)[-1]
    victim = c.members[v - 1]
    others = [m for m in c.members if m is not victim]

    cl = Rpc(victim.unix)
    assert cl.call("set_db_change_aware", [True]) == {"id": 1, "result": {}, "error": None}
    vsctl = None
    try:
        with stopped(others):
            victim.appctl("cluster/leave", DB)
            cl.send({"method": "transact", "params": [DB, insert_key("raw")], "id": "txn"})
            # The leave cannot finish while the others are stopped: the transaction
            # waits. (Before the fix, ours answered at once: "not allowed", "server
            # shutdown".)
            early = cl.receive(1.5)
            assert early is None, early
            # A real client whose first choice may be the leaving member.
            vsctl = subprocess.Popen(
                ["ovs-vsctl", f"--db={c.remotes()}",
                 "--no-leader-only", "--no-wait", "--timeout=60", "--",
                 "set", "Open_vSwitch", ".", "external_ids:vsctl=y"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(0.5)
        wait_left(victim)
        msg = cl.receive(20)
        assert msg == {"id": "txn", "error": "canceled"}, msg
        _out, err = vsctl.communicate(timeout=90)
        assert vsctl.returncode == 0, err
    finally:
        cl.close()
        if vsctl is not None and vsctl.poll() is None:
            vsctl.kill()
            vsctl.wait()
    ids = external_ids(others[0])
    assert '"raw"' not in ids and "raw=" not in ids, ids     # canceled: no effect
    assert "vsctl=y" in ids, ids
