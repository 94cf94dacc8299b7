"""A cluster member as its clients see it, ours and the real one side by side.

- A follower that was down while the leader compacted comes back behind the leader's
  snapshot: it gets the snapshot on the leader's heartbeats, with no new write, and
  what waits on it follows at once: `ovsdb-client wait DB connected`, a blocked
  `wait` transaction, single-remote IDLs (ours and the PyPI `ovs` one, which both
  skip a member that is not connected to its cluster).
- A member cut off from the others (`cluster/failure-test stop-raft-rpc`) logs
  `raft_is_connected: false`, its `_Server` row says disconnected and keeps saying so
  while it is alone, and its single-remote clients leave it and retry.
- The crash scenarios of `cluster/failure-test` that need a snapshot or a leader alone
  end the member as the real one ends (exit status 1, the real line on stderr), and
  it recovers once restarted. (The scenarios of a three-member exchange are in
  tests/interop/test_commands_fidelity.py.)
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from procs import NB_SCHEMA, require
from pyovsdb.testing_cluster import OURS, REAL, Cluster, Member, server_rows, transact

NB = "OVN_Northbound"


def insert(m: Member, *names: str, delete_all: bool = False) -> None:
    ops: list[Any] = [{"op": "delete", "table": "Logical_Switch", "where": []}] \
        if delete_all else []
    ops += [{"op": "insert", "table": "Logical_Switch", "row": {"name": n}} for n in names]
    res = transact(m.unix, NB, ops)
    assert all("error" not in r for r in res), res


def names(m: Member) -> list[str]:
    res = transact(m.unix, NB, [{"op": "select", "table": "Logical_Switch", "where": [],
                                 "columns": ["name"]}])
    return sorted(r["name"] for r in res[0]["rows"])


def connected(m: Member) -> bool:
    return bool(server_rows(m.unix)[NB]["connected"])


def crash_status(m: Member, timeout: float = 20) -> tuple[int, str]:
    """Exit status and last stderr line of a member that is to crash."""
    p = m.proc.proc
    assert p is not None and p.stderr is not None
    try:
        status = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{m.name} did not crash") from None
    lines = p.stderr.read().decode().strip().splitlines()
    return status, lines[-1] if lines else ""


class PyIdl:
    """The PyPI `ovs` IDL on one remote, driven by hand."""

    def __init__(self, remote: str) -> None:
        import ovs.db.idl

        helper = ovs.db.idl.SchemaHelper(NB_SCHEMA)
        helper.register_columns("Logical_Switch", ["name"])
        self.idl = ovs.db.idl.Idl(remote, helper, leader_only=False)
        # Retry quickly: the default backoff grows to 8 s between attempts.
        self.idl._session.reconnect.set_backoff(100, 500)

    def step(self, ms: int = 20) -> None:
        import ovs.poller

        self.idl.run()
        poller = ovs.poller.Poller()
        self.idl.wait(poller)
        poller.timer_wait(ms)
        poller.block()

    def names(self) -> list[str]:
        return sorted(r.name for r in self.idl.tables["Logical_Switch"].rows.values())

    @property
    def monitoring(self) -> bool:
        return bool(self.idl.state == self.idl.IDL_S_MONITORING)

    @property
    def sessions(self) -> int:
        return int(self.idl._session.get_seqno())

    def run_until(self, pred: Callable[[], bool], timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                raise AssertionError(f"ovs IDL: never got there ({self.names()})")
            self.step()


def ours_names(idl: Any) -> list[str]:
    return sorted(r.name for r in idl.rows("Logical_Switch"))


def wait_for(pred: Callable[[], bool], timeout: float, what: str,
             also: Callable[[], None] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(what)
        if also is not None:
            also()
        else:
            time.sleep(0.02)


@contextmanager
def popen(*cmd: str) -> Iterator[subprocess.Popen[str]]:
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate()


def wait_c(name: str) -> str:
    """A transaction that waits until a switch called `name` exists."""
    return json.dumps([NB, {"op": "wait", "table": "Logical_Switch",
                            "where": [["name", "==", name]], "columns": ["name"],
                            "until": "==", "rows": [{"name": name}]}])


def compact_all_but(c: Cluster, away: int, name: str) -> None:
    """Every member but `away` applies the switch `name`, then compacts: whichever of
    them leads, `away` is behind its snapshot."""
    for m in c.members:
        if m.index != away:
            wait_for(lambda m=m: name in names(m), 10, f"{m.name} lacks {name}")
            assert m.appctl("ovsdb-server/compact").stdout == ""


@pytest.mark.parametrize("kind", [OURS, REAL])
def test_follower_behind_a_snapshot_then_cut_off(make_cluster: Callable[..., Cluster],
                                                 kind: str) -> None:
    require("ovsdb-client")
    pytest.importorskip("ovs.db.idl")
    from pyovsdb.idl.blocking import BlockingIdl

    c = make_cluster([kind] * 3, extra=["-vraft:file:dbg"])
    leader = c.leader()
    f = c.followers(leader)[0]
    lm, fm = c.members[leader - 1], c.members[f - 1]
    insert(lm, "a")
    c.wait_applied()
    c.exit(f)
    insert(lm, "b", delete_all=True)
    assert lm.appctl("ovsdb-server/compact").stdout == ""
    c.start(f)

    # Asked at once, maybe before the follower has heard from the leader: answered
    # as soon as it has, with no new write.
    with popen("ovsdb-client", "--timeout=30", "wait", fm.unix, NB, "connected") as waiter:
        assert waiter.wait(timeout=5) == 0, waiter.communicate()
    py = PyIdl(fm.unix)
    ours = BlockingIdl(fm.unix, NB, tables={"Logical_Switch": ["name"]},
                       leader_only=False, min_backoff=0.05, max_backoff=0.5,
                       start_timeout=15)
    try:
        py.run_until(lambda: py.monitoring and py.names() == ["b"])
        wait_for(lambda: ours_names(ours) == ["b"], 10, "our IDL never got b")
        # A transaction blocked on the follower completes with the write that
        # reaches it from the leader.
        with popen("ovsdb-client", "--timeout=30", "transact", fm.unix,
                   wait_c("c")) as blocked:
            time.sleep(0.2)
            assert blocked.poll() is None
            insert(lm, "c")
            out, err = blocked.communicate(timeout=3)
            assert (blocked.returncode, json.loads(out)) == (0, [{}]), err
        py.run_until(lambda: py.names() == ["b", "c"])
        wait_for(lambda: ours_names(ours) == ["b", "c"], 10, "our IDL missed c")

        # Cut off: the member says so within two election timeouts (the first
        # election after losing the leader still counts as connected), stays
        # disconnected, and its clients leave it and keep trying.
        sessions, attempts = py.sessions, ours.idl.n_attempts
        assert fm.appctl("cluster/failure-test", "stop-raft-rpc").stdout == \
            "test engaged\n"
        wait_for(lambda: not (connected(fm) or py.monitoring or ours.connected), 10,
                 "still connected", also=py.step)
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            py.step()
            assert not connected(fm) and not py.monitoring and not ours.connected
        assert py.sessions >= sessions + 2      # left, and came back to try
        assert ours.idl.n_attempts > attempts
        assert ours.idl.last_errors[fm.unix] == \
            "clustered database server is disconnected from its cluster"
        assert "|raft|DBG|raft_is_connected: false" in Path(fm.proc.logfile).read_text()

        # Back, behind the snapshot of the others: installing it answers a
        # transaction still waiting there "canceled" (the contents it waited on are
        # gone), and the clients come back.
        insert(lm, "d")
        compact_all_but(c, f, "d")
        with popen("ovsdb-client", "--timeout=30", "transact", fm.unix,
                   wait_c("never")) as blocked:
            time.sleep(0.2)
            assert fm.appctl("cluster/failure-test", "clear").stdout == "test dismissed\n"
            out, err = blocked.communicate(timeout=15)
            assert (blocked.returncode, out, err) == (
                1, "", 'ovsdb-client: transaction returned error: "canceled"\n')
        py.run_until(lambda: py.monitoring and py.names() == ["b", "c", "d"])
        wait_for(lambda: ours.connected and ours_names(ours) == ["b", "c", "d"], 15,
                 "our IDL did not come back")

        # Cut off again and behind again: with crash-before-sending-install-snapshot-
        # reply engaged (which ends the cut), it dies as the snapshot arrives; once
        # restarted it catches up and serves its clients again.
        fm.appctl("cluster/failure-test", "stop-raft-rpc")
        term = int(fm.status(NB)["Term"])  # type: ignore[index]
        insert(lm, "e")
        compact_all_but(c, f, "e")
        # What the leader sent meanwhile waits unread; once the member has stood for
        # election it is stale, and the member can only catch up from the snapshot.
        wait_for(lambda: int(fm.status(NB)["Term"]) > term, 10,  # type: ignore[index]
                 "never stood for election")
        fm.appctl("cluster/failure-test", "crash-before-sending-install-snapshot-reply")
        assert crash_status(fm) == (
            1, "ovsdb-server: Raft test: crash before sending install_snapshot_reply")
        fm.proc.stop()
        c.start(f)
        c.wait_formed()
        c.wait_applied()
        want = ["b", "c", "d", "e"]
        assert names(fm) == want
        py.run_until(lambda: py.monitoring and py.names() == want)
        wait_for(lambda: ours.connected and ours_names(ours) == want, 15,
                 "our IDL did not come back after the crash")
    finally:
        ours.close()
        py.idl.close()
    c.close()
    c.check_cluster()


@pytest.mark.parametrize("kind", [OURS, REAL])
def test_append_request_crashes_of_a_leader_alone(make_cluster: Callable[..., Cluster],
                                                  kind: str) -> None:
    """A leader with nobody to send its entry to still crashes at the point of sending;
    the entry was written first, so the restarted leader commits it."""
    c = make_cluster([kind])
    m = c.members[0]
    for n, (scenario, text) in enumerate([
            ("crash-before-sending-append-request", "crash before sending append_request."),
            ("crash-after-sending-append-request", "crash after sending append_request.")]):
        assert m.appctl("cluster/failure-test", scenario).stdout == "test engaged\n"
        with pytest.raises(Exception, match=r"End of file|Connection reset|closed"):
            insert(m, f"sw{n}")
        assert crash_status(m) == (1, f"ovsdb-server: Raft test: {text}")
        m.proc.stop()
        c.start(1)
        c.wait_formed()
    assert names(m) == ["sw0", "sw1"]
    c.close()
    c.check_cluster()
