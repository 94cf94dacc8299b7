"""A cluster member as its clients see it, ours and the real one side by side.

- The crash scenarios of `cluster/failure-test` that need a leader alone end the
  member as the real one ends (exit status 1, the real line on stderr), and it
  recovers once restarted. (The scenarios of a three-member exchange are in
  tests/interop/test_commands_fidelity.py.)
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from cluster_helpers import OURS, REAL, Cluster, Member, server_rows, transact

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
