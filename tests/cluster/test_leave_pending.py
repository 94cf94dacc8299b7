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

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from cluster_helpers import OURS, REAL, Cluster, Member, run

from procs import VSWITCH_SCHEMA, require

DB = "Open_vSwitch"


class RawClient:
    """One JSON-RPC connection, read by hand: it lets the test see that nothing has
    been answered yet."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path.removeprefix("unix:"))
        self.buf = b""
        self.dec = json.JSONDecoder()

    def send(self, method: str, params: list[Any], msg_id: Any) -> None:
        self.sock.sendall(json.dumps({"method": method, "params": params,
                                      "id": msg_id}).encode())

    def recv(self, timeout: float) -> dict[str, Any] | None:
        """The next message that is not a notification, or None after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.buf.decode().lstrip()
            if text:
                try:
                    msg, end = self.dec.raw_decode(text)
                except json.JSONDecodeError:
                    msg = None
                if msg is not None:
                    self.buf = text[end:].encode()
                    if msg.get("id") is not None:
                        return dict(msg)
                    continue
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return None
            if not chunk:
                raise ConnectionError("closed by the server")
            self.buf += chunk

    def close(self) -> None:
        self.sock.close()


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

    cl = RawClient(victim.unix)
    cl.send("set_db_change_aware", [True], "aware")
    assert cl.recv(10) == {"id": "aware", "result": {}, "error": None}
    vsctl = None
    try:
        with stopped(others):
            victim.appctl("cluster/leave", DB)
            cl.send("transact", [DB, insert_key("raw")], "txn")
            # The leave cannot finish while the others are stopped: the transaction
            # waits. (Before the fix, ours answered at once: "not allowed", "server
            # shutdown".)
            early = cl.recv(1.5)
            assert early is None, early
            # A real client whose first choice may be the leaving member.
            vsctl = subprocess.Popen(
                ["ovs-vsctl", f"--db={c.remotes()}",
                 "--no-leader-only", "--no-wait", "--timeout=60", "--",
                 "set", "Open_vSwitch", ".", "external_ids:vsctl=y"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(0.5)
        wait_left(victim)
        msg = cl.recv(20)
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
