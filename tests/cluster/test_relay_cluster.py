"""A relay of ours in front of a Raft cluster (ours, and the real one): it follows the
member it reaches, forwards writes, and when that member goes away reconnects to
another of its remotes and goes on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_cluster_basics import switches

from procs import ServerProcess, require, run
from pyovsdb.testing import wait_until
from pyovsdb.testing_cluster import OURS, REAL, Cluster

NB = "OVN_Northbound"


def _nbctl(remote: str, *args: str) -> str:
    return run(["ovn-nbctl", "--timeout=30", "--no-leader-only", f"--db={remote}",
                *args], timeout=40).stdout


@pytest.mark.parametrize("kind", [OURS, REAL])
def test_a_relay_before_a_cluster_moves_to_another_member(
        make_cluster: Callable[..., Cluster], tmp_path: Path, kind: str) -> None:
    require("ovn-nbctl")
    c = make_cluster([kind] * 3)
    remotes = ",".join(m.unix for m in c.members)
    d = tmp_path / "relay"
    d.mkdir()
    relay = ServerProcess(OURS, d, [f"relay:{NB}:{remotes}"], name="relay").start()
    try:
        # (served once the relay has its upstream's schema)
        assert wait_until(lambda: "OVN_Northbound" in run(["ovsdb-client", "list-dbs",
                                                       relay.unix], check=False).stdout)
        _nbctl(relay.unix, "ls-add", "sw1")
        c.wait_applied()
        assert switches(c, 2) == ["sw1"]
        c.stop(1)  # (the member the relay reached first)
        _nbctl(c.members[1].unix, "ls-add", "sw2")
        assert wait_until(lambda: "sw2" in _nbctl(relay.unix, "ls-list"), timeout=30), \
            Path(relay.logfile).read_text()
        _nbctl(relay.unix, "ls-add", "sw3")
        assert wait_until(lambda: switches(c, 3) == ["sw1", "sw2", "sw3"])
    finally:
        relay.stop()
