"""Compaction of the raft log and snapshots sent to new members; clusters that mix the
real ovsdb-server with ours."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from test_cluster_basics import nbctl, switches

from procs import require
from pyovsdb.storage import clustered
from pyovsdb.testing_cluster import OURS, REAL, Cluster, parse_status

NB = "OVN_Northbound"


def log_start(c: Cluster, i: int) -> int:
    st = parse_status(c.members[i - 1].appctl("cluster/status", NB).stdout)
    return int(st["Log"].strip("[]").split(",")[0])


def add_switches(remote: str, prefix: str, n: int, per_txn: int = 20) -> None:
    for k in range(0, n, per_txn):
        args: list[str] = []
        for j in range(k, min(n, k + per_txn)):
            args += ["--", "ls-add", f"{prefix}{j:03d}"]
        nbctl(remote, *args[1:])


def test_compaction_and_install_snapshot(make_cluster: Callable[..., Cluster]) -> None:
    """`ovsdb-server/compact` on followers (and the leader) shortens their logs; once one
    of the followers leads, a brand-new member gets the database through
    install_snapshot and so does a member restarted after the snapshot."""
    require("ovn-nbctl")
    c = make_cluster([OURS] * 3)
    leader = c.leader()
    f1, f2 = c.followers(leader)
    add_switches(c.members[leader - 1].unix, "a", 40, per_txn=1)   # 40 log entries
    c.wait_applied()
    before = {i: log_start(c, i) for i in (f1, f2)}
    size_before = clustered.read(c.members[f1 - 1].db)[2]
    for i in (f1, f2):
        c.members[i - 1].appctl("ovsdb-server/compact", NB)
        assert log_start(c, i) > before[i] + 30
    assert clustered.read(c.members[f1 - 1].db)[2] < size_before
    header = clustered.read(c.members[f1 - 1].db)[0]
    assert header.snapshot is not None and header.snapshot.index >= 40

    # The leader compacts on request too, as the real server does, and stays leader.
    p = c.members[leader - 1].appctl("ovsdb-server/compact", NB, check=False)
    assert p.returncode == 0, p
    assert c.leader() == leader

    # The old leader goes away; one of the compacted followers leads, and a new server
    # joins it: it can only get the early entries as a snapshot.
    c.stop(leader)
    new_leader = None
    deadline = time.monotonic() + 20
    while new_leader is None and time.monotonic() < deadline:
        for i in (f1, f2):
            st = c.members[i - 1].status(NB)
            if st and st.get("Role") == "leader":
                new_leader = i
        time.sleep(0.05)
    assert new_leader is not None
    add_switches(c.members[new_leader - 1].unix, "b", 5)
    c.members.append(c._new_member(4, OURS))
    c.join_file(c.members[-1])
    c.start(4)
    c.start(leader)
    c.wait_formed(n=4)
    c.wait_applied()
    want = sorted([f"a{j:03d}" for j in range(40)] + [f"b{j:03d}" for j in range(5)])
    for m in c.members:
        assert switches(c, m.index) == want, m.name
    header = clustered.read(c.members[3].db)[0]
    assert header.snapshot is not None and header.snapshot.index > 1, \
        "the new member did not get a snapshot"
    c.close()
    c.check_cluster()


@pytest.mark.parametrize("kinds", [[REAL, OURS, OURS], [OURS, REAL, OURS]],
                         ids=["real-creates", "ours-creates"])
def test_mixed_cluster(make_cluster: Callable[..., Cluster], kinds: list[str]) -> None:
    """The real ovsdb-server and ours in one cluster: each replicates what the other
    commits, leadership moves between them, members restart, and the real
    `ovsdb-tool check-cluster` accepts every file."""
    require("ovn-nbctl")
    c = make_cluster(kinds)
    for round_ in range(2):
        leader = c.leader()
        for m in c.members:
            nbctl(m.unix, "ls-add", f"r{round_}-{m.name}")
        c.wait_applied()
        want = sorted(f"r{r}-{m.name}" for r in range(round_ + 1) for m in c.members)
        for m in c.members:
            assert switches(c, m.index) == want, (m.name, m.kind)
        # Move leadership to the other implementation: stop the leader gracefully
        # (both kinds hand leadership over), then bring it back as a follower.
        c.stop(leader)
        c.start(leader)
        c.wait_formed()
    c.wait_applied()
    ids = {nbctl(m.unix, "--bare", "--columns=_uuid", "find", "Logical_Switch",
                 "name=r0-s1").stdout for m in c.members}
    assert len(ids) == 1
    c.close()
    c.check_cluster()
