"""A Raft cluster whose members talk TLS (`ssl:` addresses, each server's PKI options
both ways), mixing the real ovsdb-server and ours: a real member is a peer of ours and
ours of it, writes through any member reach every member, and a member restarted
reconnects over TLS."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from test_cluster_basics import nbctl, switches

from procs import require
from pyovsdb.testing import wait_until
from pyovsdb.testing_cluster import OURS, REAL, Cluster, parse_status
from pyovsdb.testing_pki import Authority

NB = "OVN_Northbound"


def test_a_mixed_cluster_over_tls(make_cluster: Callable[..., Cluster],
                                  tmp_path: Path) -> None:
    require("ovn-nbctl", "openssl")
    ca = Authority(tmp_path / "pki")
    c = make_cluster([REAL, OURS, OURS], raft_ssl=True, extra=ca.issue("member").options())
    addresses = [m.raft for m in c.members]
    assert all(a.startswith("ssl:") for a in addresses), addresses

    def connections(i: int) -> str:
        return str(parse_status(c.members[i - 1].appctl("cluster/status", NB).stdout)
                   .get("Connections", ""))
    # every member dials every other and is dialed by it: both ends of each pair talk TLS
    for i in range(1, 4):
        assert wait_until(lambda i=i: connections(i).count("->") == 2
                          and connections(i).count("<-") == 2, timeout=20), \
            (c.members[i - 1].kind, connections(i))
    for i, m in enumerate(c.members, 1):
        nbctl(m.unix, "ls-add", f"sw{i}")
    c.wait_applied()
    for i in range(1, 4):
        assert switches(c, i) == ["sw1", "sw2", "sw3"], c.members[i - 1].kind
    leader = c.leader()
    follower = next(i for i in c.followers(leader) if c.members[i - 1].kind == OURS)
    c.stop(follower)
    nbctl(c.members[leader - 1].unix, "ls-add", "sw4")
    c.start(follower)
    c.wait_applied()
    assert switches(c, follower) == ["sw1", "sw2", "sw3", "sw4"]
    status = parse_status(c.members[0].appctl("cluster/status", NB).stdout)
    assert status["Role"] in ("leader", "follower"), status
