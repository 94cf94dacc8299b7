"""cluster/* control commands and the clustered-file tool commands, side by side with
the real ovsdb-server and ovsdb-tool: same lines, same replies, same error texts."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from procs import NB_SCHEMA, require
from pyovsdb.testing_cluster import OURS, REAL, Cluster, parse_status, run, tool_cmd

NB = "OVN_Northbound"


def shape(text: str) -> list[str]:
    """A status reply with everything that differs between two clusters blanked out:
    ids, nicknames, addresses, numbers; server lines sorted (the real server prints
    them in hash order)."""
    out, servers = [], []
    in_servers = False
    for line in text.splitlines():
        if line.startswith("    ") and in_servers:
            line = re.sub(r"^    \S+ \(\w{4} at \S+\)", "    N (S at A)", line)
            servers.append(re.sub(r"\d+", "#", line))
            continue
        in_servers = line == "Servers:"
        line = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "UUID", line)
        line = re.sub(r"^(Cluster ID|Server ID): \w{4}", r"\1: XXXX", line)
        line = re.sub(r"^(Leader|Vote): (?!self|unknown)\S+", r"\1: N", line)
        line = re.sub(r"^Address: .*", "Address: A", line)
        line = re.sub(r"^Connections:.*", "Connections: ...", line)
        line = re.sub(r"\d+", "#", line)
        out.append(line)
    out[0] = "NICK"
    return out + sorted(servers)


@pytest.fixture
def pair(make_cluster: Callable[..., Cluster]) -> dict[str, Cluster]:
    return {OURS: make_cluster([OURS] * 3, sub="ours"),
            REAL: make_cluster([REAL] * 3, sub="real")}


def test_status_and_commands_like_real(pair: dict[str, Cluster]) -> None:
    shapes = {}
    replies: dict[str, list[tuple[int, str]]] = {}
    for kind, c in pair.items():
        leader = c.leader()
        c.wait_applied()
        f1, f2 = c.followers(leader)
        lm, fm = c.members[leader - 1], c.members[f1 - 1]
        time.sleep(0.3)     # let "last msg" appear on the followers
        shapes[kind] = (shape(lm.appctl("cluster/status", NB).stdout),
                        shape(fm.appctl("cluster/status", NB).stdout))
        st = parse_status(lm.appctl("cluster/status", NB).stdout)
        assert st["nickname"] == f"s{leader}"       # unix:.../sN.raft -> "sN"
        assert {s[0] for s in st["Servers"]} == {"s1", "s2", "s3"}

        cid = run([*tool_cmd(kind), "db-cid", lm.db]).stdout
        assert lm.appctl("cluster/cid", NB).stdout == cid
        assert fm.appctl("cluster/sid", NB).stdout == run([*tool_cmd(kind), "db-sid",
                                                          fm.db]).stdout

        out: list[tuple[int, str]] = []

        def ctl(m: object, *args: str, out: list[tuple[int, str]] = out) -> None:
            p = m.appctl(*args, check=False)  # type: ignore[attr-defined]
            out.append((p.returncode, p.stdout + p.stderr.split("\n")[0]))

        for cmd in ("cluster/cid", "cluster/sid", "cluster/status", "cluster/leave"):
            ctl(fm, cmd, "nope")
        ctl(fm, "cluster/kick", "nope", "x")
        ctl(fm, "cluster/change-election-timer", "nope", "1000")
        ctl(fm, "cluster/kick", NB, "zzzz")
        ctl(fm, "cluster/change-election-timer", NB, "2000")
        for t in ("1000", "5000", "50", "abc", "600001", "2000"):
            ctl(lm, "cluster/change-election-timer", NB, t)
        ctl(lm, "cluster/change-election-timer", NB, "4000")    # pending, or done
        replies[kind] = out

        # Kick a follower through another follower, then the other one through the
        # leader, each by a prefix of its server id.
        s2 = c.members[f2 - 1].sid()
        ctl(fm, "cluster/kick", NB, s2[:6])
        deadline = time.monotonic() + 20
        while c.members[f2 - 1].appctl("cluster/status", NB, check=False).returncode == 0:
            assert time.monotonic() < deadline, "kicked server still in the cluster"
            time.sleep(0.05)
        ctl(lm, "cluster/kick", NB, fm.sid()[:5])
        ctl(lm, "cluster/kick", NB, s2[:6])         # gone already
        replies[kind] = out

    assert shapes[OURS] == shapes[REAL]
    ours, real = replies[OURS], replies[REAL]
    # The last election timer change may find the previous one committed or not.
    assert ours[-4][1].startswith(("election timer change pending.",
                                   "change of election timer initiated."))
    assert real[-4][1].startswith(("election timer change pending.",
                                   "change of election timer initiated."))
    del ours[-4], real[-4]
    # A name that matches nobody: with only itself left in its configuration the real
    # leader picks itself (every server scores 0, and it is the only one) and leaves
    # the cluster; ours says "unknown server" (docs/compat.md).
    assert ours.pop() == (2, "unknown server")
    real.pop()
    assert ours == real, "\n".join(f"{a!r} | {b!r}" for a, b in zip(ours, real, strict=False))


def test_tool_cluster_commands_like_real(tmp_path: Path) -> None:
    """create-cluster, join-cluster, db-cid, db-sid, db-local-address,
    db-is-clustered, db-is-standalone and cluster-to-standalone print what the real
    tool prints, and each tool reads the other's files."""
    require("ovsdb-tool")
    results = {}
    for kind in (OURS, REAL):
        d = tmp_path / kind
        d.mkdir()
        t = tool_cmd(kind)
        res = []

        def go(*args: str, t: list[str] = t, res: list[tuple[int, str, str]] = res) -> str:
            p = run([*t, *args], check=False)
            err = re.sub(r"^(ovsdb-tool|pyovsdb tool): ", "", p.stderr, flags=re.M)
            err = re.sub(r"^[\dTZ:-]+\|", "TIME|", err)
            res.append((p.returncode, p.stdout, err))
            return p.stdout

        db1, db2 = str(d / "s1.db"), str(d / "s2.db")
        go("create-cluster", db1, NB_SCHEMA, "unix:s1.raft")
        go("create-cluster", db1, NB_SCHEMA, "unix:s1.raft")        # exists
        go("create-cluster", str(d / "x.db"), NB_SCHEMA, "bogus:1")
        go("join-cluster", db2, NB, "unix:s2.raft", "unix:s1.raft")
        go("join-cluster", str(d / "y.db"), NB, "unix:s3.raft", "unix:s3.raft")
        go("join-cluster", str(d / "z.db"), NB, "unix:s4.raft")
        cid = go("db-cid", db1).strip()
        res[-1] = (res[-1][0], "CID\n" if cid else "", res[-1][2])
        go("db-cid", db2)
        sid = go("db-sid", db2).strip()
        res[-1] = (res[-1][0], "SID\n" if len(sid) == 36 else sid, res[-1][2])
        go("db-local-address", db1)
        go("db-local-address", db2)
        go("db-is-clustered", db1)
        go("db-is-standalone", db1)
        go("join-cluster", f"--cid={cid}", str(d / "w.db"), NB, "unix:s5.raft",
           "unix:s1.raft")
        go("db-cid", str(d / "w.db"))
        res[-1] = (res[-1][0], res[-1][1].replace(cid, "CID"), res[-1][2])
        standalone = str(d / "sa.db")
        go("cluster-to-standalone", standalone, db1)
        go("db-is-standalone", standalone)
        go("db-name", standalone)
        go("db-cid", standalone)
        go("db-sid", str(d / "missing.db"))
        results[kind] = [(rc, out, err.replace(str(d), "D")) for rc, out, err in res]
        # The other tool reads what this one wrote.
        other = tool_cmd(REAL if kind == OURS else OURS)
        assert run([*other, "db-cid", db1]).stdout.strip() == cid
        assert run([*other, "db-name", db1]).stdout == "OVN_Northbound\n"
        assert run([*other, "db-is-clustered", db2], check=False).returncode == 0
    for a, b in zip(results[OURS], results[REAL], strict=True):
        assert a == b
