"""Clusters of real processes for the cluster tests, the cluster benchmark and the
scale harness's clustered stacks: ours (`pyovsdb tool` + `pyovsdb server`), the real
ones (`ovsdb-tool` + `ovsdb-server`), or a mix.

Rules kept here:
- Every server runs in the foreground as our child (`testing.ServerProcess`) in a
  directory the caller owns, with a unix client socket, an ephemeral loopback TCP client
  port and a unix raft socket; it is stopped by its pid, never by name, and `close()`
  stops every server ever started here, whatever happened.
- Readiness is read from `cluster/status`, as an operator would: a cluster is formed
  when every running member says "cluster member" and one leader of the highest term
  lists all of them.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyovsdb.testing import ServerProcess, run

OURS = "ours"
REAL = "real"


def tool_cmd(kind: str) -> list[str]:
    return [sys.executable, "-m", "pyovsdb", "tool"] if kind == OURS else ["ovsdb-tool"]


def parse_status(text: str) -> dict[str, Any]:
    """The fields of a `cluster/status` reply: "Role", "Term", ... and "Servers" (a
    list of (nickname, sid4, address, rest-of-line))."""
    out: dict[str, Any] = {"Servers": []}
    lines = text.splitlines()
    out["nickname"] = lines[0] if lines else ""
    in_servers = False
    for line in lines[1:]:
        if in_servers and line.startswith("    "):
            m = re.match(r"    (\S+) \((\w+) at (\S+)\)(.*)", line)
            if m:
                out["Servers"].append(m.groups())
            continue
        in_servers = False
        if line == "Servers:":
            in_servers = True
            continue
        key, sep, value = line.partition(": ")
        if sep:
            out[key] = value
    return out


@dataclass
class Member:
    kind: str
    index: int
    workdir: Path
    db: str
    raft: str
    proc: ServerProcess
    running: bool = False
    extra: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"s{self.index}"

    @property
    def unix(self) -> str:
        return self.proc.unix

    @property
    def tcp(self) -> str:
        return self.proc.tcp

    def appctl(self, *args: str, check: bool = True, timeout: float = 30) -> Any:
        return run(["ovs-appctl", f"--timeout={int(timeout)}", "-t", self.proc.ctl, *args],
                   check=check, timeout=timeout + 5)

    def status(self, db: str) -> dict[str, Any] | None:
        p = self.appctl("cluster/status", db, check=False, timeout=5)
        if p.returncode != 0:
            return None
        return parse_status(p.stdout)

    def sid(self) -> str:
        return run([*tool_cmd(self.kind), "db-sid", self.db]).stdout.strip()


class Cluster:
    """An N-server cluster of one schema. `kinds` gives each member's implementation."""

    def __init__(self, workdir: Path, schema: str, db_name: str, kinds: list[str], *,
                 extra: list[str] | None = None,
                 per_member_extra: dict[int, list[str]] | None = None,
                 raft_tcp: bool = False, raft_ssl: bool = False) -> None:
        self.workdir = workdir
        self.schema = schema
        self.db_name = db_name
        self.kinds = kinds
        self.extra = extra or []
        self.per_member_extra = per_member_extra or {}
        self.raft_tcp = raft_tcp
        self.raft_ssl = raft_ssl  # members talk TLS (`extra` gives their PKI options)
        self.members: list[Member] = []
        self.all_procs: list[ServerProcess] = []
        for i, kind in enumerate(kinds, 1):
            self.members.append(self._new_member(i, kind))

    def _raft_address(self, i: int) -> str:
        path = self.workdir / f"s{i}.raft"
        if len(str(path)) < 100 and not self.raft_tcp and not self.raft_ssl:
            return f"unix:{path}"
        from pyovsdb.testing import free_port

        return f"{'ssl' if self.raft_ssl else 'tcp'}:127.0.0.1:{free_port()}"

    def _new_member(self, i: int, kind: str) -> Member:
        d = self.workdir
        db = str(d / f"s{i}.db")
        extra = self.extra + self.per_member_extra.get(i, [])
        proc = ServerProcess(kind, d, [db], name=f"s{i}", tcp=True, extra=extra)
        return Member(kind, i, d, db, self._raft_address(i), proc, extra=extra)

    # -- building --------------------------------------------------------------------

    def create(self, election_timer: int | None = None) -> Cluster:
        first = self.members[0]
        args = [*tool_cmd(first.kind)]
        if election_timer:
            args.append(f"--election-timer={election_timer}")
        run([*args, "create-cluster", first.db, self.schema, first.raft])
        cid = run([*tool_cmd(first.kind), "db-cid", first.db]).stdout.strip()
        for m in self.members[1:]:
            self.join_file(m, cid)
        return self

    def join_file(self, m: Member, cid: str | None = None) -> None:
        remotes = [o.raft for o in self.members if o is not m]
        cmd = [*tool_cmd(m.kind), "join-cluster"]
        if cid:
            cmd.append(f"--cid={cid}")
        run([*cmd, m.db, self.db_name, m.raft, *remotes])

    def start(self, *indexes: int) -> None:
        for m in self.pick(indexes):
            self.all_procs.append(m.proc)
            m.proc.start()
            m.running = True

    def pick(self, indexes: tuple[int, ...]) -> list[Member]:
        return [self.members[i - 1] for i in indexes] if indexes else list(self.members)

    def stop(self, i: int) -> None:
        """SIGTERM, as an init system stops it (graceful)."""
        m = self.members[i - 1]
        m.proc.stop()
        m.running = False

    def exit(self, i: int) -> None:
        """`ovs-appctl exit`, then wait for the process to end."""
        m = self.members[i - 1]
        m.appctl("exit", check=False)
        p = m.proc.proc
        if p is not None:
            try:
                p.wait(timeout=20)
            except Exception:
                pass
        m.proc.stop()
        m.running = False

    def kill(self, i: int) -> None:
        m = self.members[i - 1]
        m.proc.kill()
        m.running = False

    def close(self) -> None:
        for p in self.all_procs:
            try:
                p.stop()
            except Exception:
                pass
        for m in self.members:
            m.running = False

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def rejoin(self, i: int) -> None:
        """Member i, gone from the cluster and stopped, comes back as a brand-new server
        at the same address (`rm db; join-cluster; start` later), as the real torture
        test does: a new server id, the same address."""
        m = self.members[i - 1]
        assert not m.running
        cid = None
        for o in self.members:
            if o is not m and os.path.exists(o.db):
                cid = run([*tool_cmd(o.kind), "db-cid", o.db]).stdout.strip()
                break
        if os.path.exists(m.db):
            os.unlink(m.db)
        self.join_file(m, cid)

    # -- observing -------------------------------------------------------------------

    def running(self) -> list[Member]:
        return [m for m in self.members if m.running]

    def statuses(self) -> dict[int, dict[str, Any] | None]:
        return {m.index: m.status(self.db_name) for m in self.running()}

    def wait_formed(self, timeout: float = 60, n: int | None = None) -> int:
        """Wait until every running member is a cluster member with one leader of the
        newest term whose configuration has `n` servers (default: all members).
        Returns the leader's member index."""
        n = n if n is not None else len(self.members)
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            st = self.statuses()
            last = st
            if all(s is not None and s.get("Status") == "cluster member"
                   for s in st.values()):
                leaders = [i for i, s in st.items() if s and s.get("Role") == "leader"]
                terms = {s["Term"] for s in st.values() if s}
                lead = st[leaders[0]] if len(leaders) == 1 else None
                if (lead is not None and len(terms) == 1 and len(lead["Servers"]) == n
                        and all(s.get("Leader") in ("self", lead["nickname"])
                                for s in st.values() if s)
                        and not any(w in srv[3] for w in ("(adding", "(removing")
                                    for srv in lead["Servers"])):
                    return leaders[0]
            time.sleep(0.05)
        raise AssertionError(f"cluster did not form in {timeout} s: {last}\n"
                             + self.logs())

    def leader(self, timeout: float = 30) -> int:
        return self.wait_formed(timeout, n=None)

    def followers(self, leader: int) -> list[int]:
        return [m.index for m in self.running() if m.index != leader]

    def wait_applied(self, index: int | None = None, timeout: float = 30) -> None:
        """Wait until every running member has applied everything its leader
        committed (`Entries not yet applied: 0` and the same log end)."""
        deadline = time.monotonic() + timeout
        st: Any = None
        while time.monotonic() < deadline:
            st = self.statuses()
            if all(s is not None for s in st.values()):
                ends = {s["Log"].split(", ")[1] for s in st.values() if s}
                if (len(ends) == 1 and all(s["Entries not yet applied"] == "0"
                                           and s["Entries not yet committed"] == "0"
                                           for s in st.values() if s)):
                    return
            time.sleep(0.05)
        raise AssertionError(f"members did not converge: {st}")

    def remotes(self, *indexes: int, tcp: bool = False) -> str:
        return ",".join(m.tcp if tcp else m.unix for m in self.pick(indexes))

    def logs(self) -> str:
        out = []
        for m in self.members:
            if os.path.exists(m.proc.logfile):
                text = Path(m.proc.logfile).read_text(errors="replace")
                out.append(f"--- {m.name} ({m.kind}) log tail:\n" + text[-3000:])
        return "\n".join(out)

    def check_cluster(self) -> None:
        """The real `ovsdb-tool check-cluster` over every member's file."""
        dbs = [m.db for m in self.members if os.path.exists(m.db)]
        run(["ovsdb-tool", "check-cluster", *dbs], timeout=120)


def transact(remote: str, db: str, ops: list[Any], timeout: float = 30) -> list[Any]:
    """One transaction over raw JSON-RPC; returns the result list."""
    from pyovsdb.jsonrpc.client import Client

    with Client(remote, timeout=timeout) as c:
        return c.call("transact", [db, *ops])


def server_rows(remote: str) -> dict[str, dict[str, Any]]:
    """The `_Server.Database` rows by database name."""
    from pyovsdb.jsonrpc.client import Client

    with Client(remote, timeout=10) as c:
        res = c.call("transact", ["_Server", {"op": "select", "table": "Database",
                                              "where": []}])
    return {r["name"]: r for r in res[0]["rows"]}
