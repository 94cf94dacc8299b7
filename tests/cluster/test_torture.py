"""The real server's cluster torture test (`ovsdb_torture_test` in OVS's
tests/ovsdb-cluster.at), adapted to our servers: 10 concurrent clients x 5 ovs-vsctl
transactions, each adding keys to `Open_vSwitch.external_ids` through any member
(`--no-leader-only`, all remotes), while one member (the leader or a follower) is

- stopped gracefully (`ovs-appctl exit`, as the real test does) and restarted,
- killed with SIGKILL and restarted, or
- removed with `cluster/leave` and re-added as a brand-new server at the same address
  (`rm db; join-cluster; start`).

Every client must exit 0, the final key set must be exact (nothing acknowledged lost,
no duplicate effects), every member must converge on it, and the real
`ovsdb-tool check-cluster` must accept our files.

By default a subset runs (it keeps tests/cluster within a few minutes on 2 cores);
PYOVSDB_TORTURE_FULL=1 runs the whole matrix: 3 and 5 servers x victim leader or
follower x exit, kill or remove.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from itertools import product

import pytest

from procs import VSWITCH_SCHEMA, require
from pyovsdb.testing_cluster import OURS, Cluster, run

N_CLIENTS = 10
N_TXNS = 5
N_KEYS = 10     # extra keys per transaction (the real test uses 50)
PACE = 0.3      # seconds between one client's transactions: the run spans the fault

FULL = os.environ.get("PYOVSDB_TORTURE_FULL") == "1"
DEFAULT = [(3, "leader", "exit"), (3, "follower", "kill"), (3, "leader", "kill"),
           (3, "leader", "remove"), (5, "follower", "remove"), (5, "leader", "kill")]
MATRIX = (list(product([3, 5], ["leader", "follower"], ["exit", "kill", "remove"]))
          if FULL else DEFAULT)


def keys_for(i: int, j: int) -> list[str]:
    return [f"{i}-{j}"] + [f"{i}-{j}-{k}" for k in range(N_KEYS)]


class Clients:
    """N_CLIENTS threads, each running N_TXNS ovs-vsctl processes one after another."""

    def __init__(self, remotes: str) -> None:
        self.remotes = remotes
        self.done = 0
        self.lock = threading.Lock()
        self.failures: list[str] = []
        self.threads = [threading.Thread(target=self._loop, args=(i,), daemon=True)
                        for i in range(N_CLIENTS)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _loop(self, i: int) -> None:
        for j in range(N_TXNS):
            sets = [f"external_ids:{k}={k}" for k in keys_for(i, j)]
            try:
                p = subprocess.run(
                    ["ovs-vsctl", f"--db={self.remotes}", "--no-leader-only", "--no-wait",
                     "--timeout=60", "--", "set", "Open_vSwitch", ".", *sets],
                    capture_output=True, text=True, timeout=90)
                if p.returncode != 0:
                    self.failures.append(f"client {i} txn {j}: exit {p.returncode}: "
                                         f"{p.stderr.strip()}")
            except subprocess.TimeoutExpired:
                self.failures.append(f"client {i} txn {j}: timed out")
            with self.lock:
                self.done += 1
            time.sleep(PACE)

    def wait_done(self, n: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.done >= n:
                return True
            time.sleep(0.01)
        return False

    def join(self, timeout: float) -> bool:
        """Have all clients finished (within `timeout` seconds)?"""
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)


class Counters:
    """Raw JSON-RPC clients adding 1 to `Open_vSwitch.next_cfg`, one transaction at a
    time, each on the next member when its connection fails. A transaction whose
    connection died is "attempted" (it may or may not have committed); one that got
    its reply is "acknowledged". In the end acknowledged <= next_cfg <= attempted:
    nothing acknowledged lost, nothing applied twice."""

    def __init__(self, remotes: list[str], n: int = 2) -> None:
        self.remotes = remotes
        self.attempted = 0
        self.acked = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._loop, args=(i,), daemon=True)
                        for i in range(n)]
        for t in self.threads:
            t.start()

    def _loop(self, i: int) -> None:
        from pyovsdb.jsonrpc.client import Client, RpcError

        k = i
        cl = None
        while not self.stop.is_set():
            try:
                if cl is None:
                    cl = Client(self.remotes[k % len(self.remotes)], timeout=30)
                with self.lock:
                    self.attempted += 1
                res = cl.call("transact", ["Open_vSwitch", {
                    "op": "mutate", "table": "Open_vSwitch", "where": [],
                    "mutations": [["next_cfg", "+=", 1]]}])
                # A transaction the cluster refused for good still carries the
                # results of its operations, with the error after them. (One sent
                # to a member that is leaving waits, and is answered "canceled",
                # an RpcError, once the member has left.)
                if res[0] == {"count": 1} and not any("error" in r for r in res):
                    with self.lock:
                        self.acked += 1
                else:
                    with self.lock:
                        self.attempted -= 1     # refused outright: no effect
                    time.sleep(0.05)
            except (RpcError, OSError):
                if cl is not None:
                    cl.close()
                cl = None
                k += 1
                time.sleep(0.05)
            time.sleep(0.01)
        if cl is not None:
            cl.close()

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)


def external_ids(remote: str) -> set[str]:
    out = run(["ovs-vsctl", f"--db={remote}", "--no-leader-only", "--timeout=30",
               "get", "Open_vSwitch", ".", "external_ids"]).stdout.strip()
    body = out.strip("{}")
    return {kv.split("=", 1)[0].strip('"') for kv in body.split(", ") if kv}


def wait_removed(c: Cluster, victim: int, timeout: float = 30) -> None:
    """Until the victim has left: its database is gone from it and no remaining
    member's leader lists it."""
    m = c.members[victim - 1]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = m.appctl("cluster/status", c.db_name, check=False, timeout=5)
        if p.returncode != 0:
            return
        time.sleep(0.05)
    raise AssertionError(f"{m.name} did not leave: {p.stdout}{p.stderr}\n{c.logs()}")


@pytest.mark.parametrize("n,victim,how", MATRIX,
                         ids=[f"{n}-{v}-{h}" for n, v, h in MATRIX])
def test_torture(make_cluster: Callable[..., Cluster], n: int, victim: str,
                 how: str) -> None:
    require("ovs-vsctl")
    c = make_cluster([OURS] * n, schema=VSWITCH_SCHEMA, db_name="Open_vSwitch")
    leader = c.leader()
    run(["ovs-vsctl", f"--db={c.members[leader - 1].unix}", "--no-wait", "init"])
    v = leader if victim == "leader" else c.followers(leader)[-1]

    clients = Clients(c.remotes())
    clients.start()
    counters = Counters([m.unix for m in c.members])
    total = N_CLIENTS * N_TXNS
    try:
        assert clients.wait_done(total // 10, 60), "clients made no progress"
        phase_done_at = clients.done
        if how == "remove":
            c.members[v - 1].appctl("cluster/leave", c.db_name)
            wait_removed(c, v)
            c.stop(v)
            time.sleep(0.2)
            c.rejoin(v)
            c.start(v)
        else:
            if how == "exit":
                c.exit(v)
            else:
                c.kill(v)
            time.sleep(0.2)
            c.start(v)
        print(f"fault from {phase_done_at} to {clients.done} of {total} transactions")
        assert clients.join(180), (f"clients still running ({clients.done} of {total} "
                                   f"done): {c.statuses()}\n{c.logs()}")
    finally:
        clients.join(30)
        counters.finish()
    if phase_done_at >= total:
        pytest.skip("clients finished before the fault")
    assert not clients.failures, "\n".join(clients.failures) + "\n" + c.logs()

    c.wait_formed(60)
    c.wait_applied(timeout=60)
    want = {k for i in range(N_CLIENTS) for j in range(N_TXNS) for k in keys_for(i, j)}
    cfgs = {m.name: int(run(["ovs-vsctl", f"--db={m.unix}", "--no-leader-only", "get",
                            "Open_vSwitch", ".", "next_cfg"]).stdout) for m in c.members}
    for m in c.members:
        got = external_ids(m.unix)
        assert got == want, (f"{m.name}: missing {sorted(want - got)[:10]}, "
                             f"extra {sorted(got - want)[:10]}")
        assert counters.acked <= cfgs[m.name] <= counters.attempted, \
            (m.name, counters.acked, cfgs, counters.attempted)
    c.close()
    c.check_cluster()
