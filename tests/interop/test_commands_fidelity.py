"""Server behaviour next to the real ovsdb-server, driven the way its users drive it: the
same transactions and control-socket commands given to both, answers and log lines
compared."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import client, label_uuids, wait_until

from procs import NB_SCHEMA, SB_SCHEMA, ServerProcess, create_db, require, run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
from pyovsdb.testing_cluster import Cluster
from pyovsdb.testing_cluster import transact as cluster_transact

pytestmark = pytest.mark.interop

# Index on "name". In the real server's hash order of T's columns "v" comes first, so
# which of two rows it names first is decided by "v"; were it decided by `_uuid` or
# `_version` (random in both servers) the two could not be compared.
IDX_SCHEMA = {
    "name": "Idx", "version": "1.0.0",
    "tables": {"T": {"columns": {"name": {"type": "string"}, "v": {"type": "integer"}},
                     "indexes": [["name"]], "isRoot": True}},
}


@pytest.fixture
def idx_pair(tmp_path: Path) -> Iterator[dict[str, ServerProcess]]:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client")
    schema = tmp_path / "idx.ovsschema"
    schema.write_text(json.dumps(IDX_SCHEMA))
    pair: dict[str, ServerProcess] = {}
    try:
        for kind in ("ours", "real"):
            d = tmp_path / kind
            d.mkdir()
            db = create_db(kind, d / "idx.db", str(schema))
            pair[kind] = ServerProcess(kind, d, [db], name="s").start()
        yield pair
    finally:
        for srv in pair.values():
            srv.stop()


DB_NB = "OVN_Northbound"


@pytest.fixture
def nb_servers(tmp_path: Path) -> Iterator[dict[str, ServerProcess]]:
    """The Northbound database on ours and on the real server, each in its own
    directory."""
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client")
    pair: dict[str, ServerProcess] = {}
    try:
        for kind in ("ours", "real"):
            d = tmp_path / f"nb-{kind}"
            d.mkdir()
            db = create_db(kind, d / "nb.db", NB_SCHEMA)
            pair[kind] = ServerProcess(kind, d, [db], name="s").start()
        yield pair
    finally:
        for srv in pair.values():
            srv.stop()


def _transact(srv: ServerProcess, *ops: dict[str, Any]) -> list[Any]:
    return json.loads(client("transact", srv.unix, json.dumps(["Idx", *ops])).stdout)


def _insert(name: str, v: int) -> dict[str, Any]:
    return {"op": "insert", "table": "T", "row": {"name": name, "v": v}}


def test_index_violation_names_rows_in_the_real_order(idx_pair: dict[str, ServerProcess]
                                                      ) -> None:
    """The real server names the greater row first (all columns compared in its hash
    order of the table's columns), whichever the transaction touched first."""
    results: dict[str, list[Any]] = {}
    for kind, srv in idx_pair.items():
        out = []
        # Two inserted rows, the greater one ("v": 2) first, then last.
        out.append(_transact(srv, _insert("x", 2), _insert("x", 1)))
        out.append(_transact(srv, _insert("y", 1), _insert("y", 2)))
        # A row that existed against an inserted one, each way.
        assert "error" not in _transact(srv, _insert("z", 1))[0]
        out.append(_transact(srv, _insert("z", 9)))
        assert "error" not in _transact(srv, _insert("u", 9))[0]
        out.append(_transact(srv, _insert("u", 1)))
        # A modified row against an inserted one.
        assert "error" not in _transact(srv, _insert("w", 5))[0]
        out.append(_transact(srv, _insert("v", 0), {
            "op": "update", "table": "T", "where": [["name", "==", "w"]],
            "row": {"name": "v"}}))
        results[kind] = out
    for ours, real in zip(results["ours"], results["real"], strict=True):
        assert real[-1]["error"] == "constraint violation", real
        # Same text, and the UUIDs named first/second are the same rows.
        assert label_uuids(ours) == label_uuids(real)


def _appctl(srv: ServerProcess, *args: str) -> tuple[int, str, str]:
    p = srv.appctl(*args, check=False)
    return p.returncode, p.stdout, p.stderr.split("\n")[0]


def test_add_db_and_remove_db_texts(tmp_path: Path) -> None:
    """Every add-db/remove-db answer as the real server's: errors name the file as given
    (`ovsdb error: db1.db: already open`), the database by name for a duplicate."""
    require("ovsdb-server", "ovsdb-tool", "ovs-appctl")
    schema = tmp_path / "idx.ovsschema"
    schema.write_text(json.dumps(IDX_SCHEMA))
    seen = {}
    for kind in ("ours", "real"):
        d = tmp_path / kind
        d.mkdir()
        create_db(kind, d / "db1.db", str(schema))
        (d / "db2.db").write_bytes((d / "db1.db").read_bytes())
        create_db(kind, d / "nb.db", NB_SCHEMA)
        (d / "garbage.db").write_text("garbage\n")
        run([*(["ovsdb-tool"] if kind == "real" else
               [sys.executable, "-m", "pyovsdb", "tool"]),
             "create-cluster", str(d / "sb.db"), SB_SCHEMA, f"unix:{d / 'raft.sock'}"])
        srv = ServerProcess(kind, d, ["db1.db"], name="s").start()
        try:
            # No cluster/* commands before a clustered database is open.
            out = [_appctl(srv, "cluster/status", "OVN_Southbound")]
            for args in (["add-db", "db1.db"], ["add-db", "./db1.db"],
                         ["add-db", str(d / "db1.db")], ["add-db", "db2.db"],
                         ["add-db", "missing.db"], ["add-db", "garbage.db"],
                         ["add-db", "nb.db"], ["add-db", "nb.db"],
                         ["remove-db", "OVN_Northbound"], ["remove-db", "OVN_Northbound"],
                         ["remove-db", "_Server"], ["remove-db", "nope"],
                         ["add-db", "sb.db"], ["add-db", "sb.db"]):
                rc, stdout, stderr = _appctl(srv, f"ovsdb-server/{args[0]}", *args[1:])
                out.append((args[0], rc, stdout, stderr.replace(str(d), "DIR")))
            # The clustered database was added: it becomes available once its single
            # member has elected itself.
            assert wait_until(lambda srv=srv: "OVN_Southbound" in _appctl(
                srv, "ovsdb-server/list-dbs")[1])
            out.append(_appctl(srv, "ovsdb-server/remove-db", "OVN_Southbound"))
            out.append(_appctl(srv, "ovsdb-server/list-dbs"))
            # They stay once one has been opened (ours lacks set-backlog-threshold).
            listed = _appctl(srv, "list-commands")[1].splitlines()
            out.append([ln for ln in listed if ln.strip().startswith("cluster/")
                        and "set-backlog-threshold" not in ln])
            seen[kind] = out
        finally:
            srv.stop()
    assert seen["ours"] == seen["real"]


# ---------------------------------------------------------------------------------------
# Clustered databases (clusters of real processes, `pyovsdb.testing_cluster`).


@pytest.fixture
def cluster_of(tmp_path: Path) -> Iterator[Any]:
    require("ovsdb-server", "ovsdb-tool", "ovs-appctl")
    made: list[Any] = []

    def make(kind: str, n: int = 3) -> Any:
        d = tmp_path / f"{kind}{len(made)}"
        d.mkdir()
        c = Cluster(d, NB_SCHEMA, "OVN_Northbound", [kind] * n)
        made.append(c)
        c.create()
        c.start()
        c.wait_formed()
        return c

    try:
        yield make
    finally:
        for c in made:
            c.close()


def _insert_switch(c: Any, member: int, name: str) -> None:
    res = cluster_transact(c.members[member - 1].unix, "OVN_Northbound", [
        {"op": "insert", "table": "Logical_Switch", "row": {"name": name}}])
    assert "error" not in res[0], res


def _header_index(path: str) -> int:
    first = Path(path).read_bytes().split(b"\n", 2)[1]
    return int(json.loads(first).get("prev_index", 0))


@pytest.mark.parametrize("kind", ["ours", "real"])
def test_compact_on_every_cluster_member(cluster_of: Any, kind: str) -> None:
    """`ovsdb-server/compact` snapshots on the leader and on followers alike, the leader
    staying leader; a member that was down meanwhile catches up from the snapshot."""
    c = cluster_of(kind)
    leader = c.leader()
    late = c.followers(leader)[0]
    c.stop(late)
    for i in range(5):
        _insert_switch(c, leader, f"sw{i}")
    c.wait_applied()    # so that nothing new is applied between the two requests
    before = _header_index(c.members[leader - 1].db)
    for m in c.running():
        p = m.appctl("ovsdb-server/compact", check=False)
        assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), (m.name, p)
        # Nothing new since: the real server's refusal, word for word. A member may
        # still apply an entry it learned of late (a loaded machine), which makes the
        # second snapshot a new one: then both succeed, and the pair is tried again.
        for _ in range(5):
            p = m.appctl("ovsdb-server/compact", "OVN_Northbound", check=False)
            if p.returncode != 0:
                break
        assert p.returncode == 2, (m.name, p)
        assert p.stderr.startswith("ovsdb error: not storing a duplicate snapshot\n"), p
    assert _header_index(c.members[leader - 1].db) > before
    assert c.leader() == leader
    _insert_switch(c, leader, "after")
    c.start(late)
    c.wait_formed()
    c.wait_applied()
    out = client("transact", c.members[late - 1].unix, json.dumps([
        "OVN_Northbound", {"op": "select", "table": "Logical_Switch", "where": [],
                           "columns": ["name"]}])).stdout
    assert sorted(r["name"] for r in json.loads(out)[0]["rows"]) == [
        "after", "sw0", "sw1", "sw2", "sw3", "sw4"]


# ---------------------------------------------------------------------------------------
# Online conversion.


class _RawSession:
    """A JSON-RPC connection read message by message, to see exactly what arrives."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.buf = ""
        self.decoder = json.JSONDecoder()

    def send(self, msg: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(msg).encode())

    def read(self, seconds: float, until: int | None = None) -> list[Any]:
        """Messages (and "EOF") arriving within `seconds`, or until `until` arrived."""
        out: list[Any] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and (until is None or len(out) < until):
            self.sock.settimeout(max(0.01, min(0.1, deadline - time.monotonic())))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            if not data:
                out.append("EOF")
                break
            self.buf += data.decode()
            while self.buf.strip():
                self.buf = self.buf.lstrip()
                try:
                    obj, end = self.decoder.raw_decode(self.buf)
                except ValueError:
                    break
                out.append(obj)
                self.buf = self.buf[end:]
        return out

    def close(self) -> None:
        self.sock.close()


WAIT_NEVER = {"op": "wait", "table": "Logical_Switch", "where": [], "columns": ["name"],
              "until": "==", "rows": [{"name": "never"}], "timeout": 100000}


def _converted_nb_schema() -> dict[str, Any]:
    schema = json.loads(Path(NB_SCHEMA).read_text())
    schema["version"] = "7.0.1"
    schema["tables"]["Logical_Switch"]["columns"]["extra"] = {
        "type": {"key": "string", "min": 0, "max": 1}}
    return schema


def test_online_conversion_cancels_waits_and_logs_as_the_real_server(
        nb_servers: dict[str, ServerProcess]) -> None:
    """A db-change-aware client gets `monitor_canceled`, then the JSON-RPC error
    "canceled" for its pending wait, whose request id it may use again; the others are
    disconnected, logged as the real server logs it; the file ends in the real server's
    conversion record."""
    seen = {}
    for kind, srv in nb_servers.items():
        aware, other = _RawSession(srv.sock), _RawSession(srv.sock)
        try:
            aware.send({"id": 1, "method": "set_db_change_aware", "params": [True]})
            aware.send({"id": 2, "method": "transact", "params": [DB_NB, WAIT_NEVER]})
            other.send({"id": 3, "method": "transact", "params": [DB_NB, WAIT_NEVER]})
            aware.send({"id": 4, "method": "monitor_cond", "params": [
                DB_NB, "m1", {"NB_Global": [{"columns": ["nb_cfg"]}]}]})
            before = aware.read(5, until=2)
            new_schema = srv.workdir / "new.ovsschema"
            new_schema.write_text(json.dumps(_converted_nb_schema()))
            p = client("convert", srv.unix, str(new_schema), check=False)
            after = aware.read(5, until=2)
            other_after = other.read(5, until=1)
            aware.send({"id": 2, "method": "transact", "params": [
                DB_NB, {"op": "select", "table": "NB_Global", "where": [],
                        "columns": ["nb_cfg"]}]})
            after += aware.read(5, until=1)
        finally:
            aware.close()
            other.close()
        log = Path(srv.logfile).read_text()
        lines = [re.sub(r"unix#\d+", "unix", line.split("|", 2)[2])
                 for line in log.splitlines()
                 if "|ovsdb_jsonrpc_server|" in line or "schema version" in line]
        last = Path(srv.dbs[0]).read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[1]
        seen[kind] = (before, p.returncode, after, other_after, lines,
                      re.sub(rb'"_date":\d+', b"", last))
    assert seen["real"][2][:2] == [
        {"id": None, "method": "monitor_canceled", "params": ["m1"]},
        {"id": 2, "error": "canceled"}]
    assert seen["real"][2][2]["error"] is None
    assert seen["ours"] == seen["real"]


def _jsonrpc_log(srv: ServerProcess) -> list[str]:
    return [re.sub(r"unix#\d+", "unix", line.split("|", 2)[2])
            for line in Path(srv.logfile).read_text().splitlines()
            if "|ovsdb_jsonrpc_server|" in line]


def test_reconnect_and_disable_monitor_cond(nb_servers: dict[str, ServerProcess]) -> None:
    """`ovsdb-server/reconnect` drops every client, db-change-aware or not;
    `ovsdb-server/disable-monitor-cond` does too, and from then on `monitor_cond` and
    `monitor_cond_since` are unknown methods while `monitor` still works."""
    seen = {}
    for kind, srv in nb_servers.items():
        out: list[Any] = []
        for command in ("ovsdb-server/reconnect", "ovsdb-server/disable-monitor-cond"):
            aware, other = _RawSession(srv.sock), _RawSession(srv.sock)
            try:
                aware.send({"id": 1, "method": "set_db_change_aware", "params": [True]})
                out.append(aware.read(5, until=1))
                other.send({"id": 2, "method": "echo", "params": []})
                out.append(other.read(5, until=1))
                p = srv.appctl(command, check=False)
                out.append((p.returncode, p.stdout, p.stderr))
                out.append((aware.read(5, until=1), other.read(5, until=1)))
            finally:
                aware.close()
                other.close()
        late = _RawSession(srv.sock)
        try:
            for i, method in enumerate(("monitor_cond", "monitor_cond_since", "monitor")):
                late.send({"id": i, "method": method, "params": [
                    DB_NB, None, {"NB_Global": [{"columns": ["nb_cfg"]}]}]})
                out.append(late.read(5, until=1))
        finally:
            late.close()
        out.append(_jsonrpc_log(srv))
        seen[kind] = out
    assert seen["real"][-2] == [{"id": 2, "result": {}, "error": None}]
    assert seen["real"][-3] == [{"id": 1, "error": "unknown method"}]
    assert seen["ours"] == seen["real"]


def _raft_lines(path: str) -> list[str]:
    """The raft module's lines of a log, "LEVEL|text": INFO and above, and the
    debug line about being connected (the others at debug level trace every RPC)."""
    out = []
    for line in Path(path).read_text().splitlines():
        if "|raft|" in line:
            text = "|".join(line.split("|")[3:])
            if not text.startswith("DBG|") or "raft_is_connected" in text:
                out.append(text)
    return out


def test_lone_member_logs_its_elections_as_the_real_server(tmp_path: Path) -> None:
    """A one-server cluster, started twice: the same raft lines, in the same order."""
    require("ovsdb-server", "ovsdb-tool")
    seen = {}
    for kind in ("ours", "real"):
        d = tmp_path / kind
        d.mkdir()
        tool = ["ovsdb-tool"] if kind == "real" else [sys.executable, "-m", "pyovsdb", "tool"]
        run([*tool, "create-cluster", str(d / "nb.db"), NB_SCHEMA, f"unix:{d / 'r.sock'}"])
        for _ in range(2):
            srv = ServerProcess(kind, d, [str(d / "nb.db")], name="s")
            try:
                srv.start()
                assert wait_until(lambda srv=srv: "elected leader" in Path(
                    srv.logfile).read_text())
            finally:
                srv.stop()
        sid = run([*tool, "db-sid", str(d / "nb.db")]).stdout.strip()[:4]
        seen[kind] = [re.sub(r"\d+ ms timeout", "N ms timeout", line.replace(sid, "SID"))
                      for line in _raft_lines(srv.logfile)]
    assert seen["real"] == [
        "INFO|term 1: N ms timeout expired, starting election",
        "INFO|term 1: elected leader by 1+ of 1 servers", "INFO|local server ID is SID",
        "INFO|term 2: N ms timeout expired, starting election",
        "INFO|term 2: elected leader by 1+ of 1 servers", "INFO|local server ID is SID"]
    assert seen["ours"] == seen["real"]


@pytest.mark.parametrize("kind", ["ours", "real"])
def test_role_changes_logged_as_the_real_server(tmp_path: Path, kind: str) -> None:
    """Three members: the lines operators grep for elections and leaders, and the debug
    line `raft_is_connected: true` once a member has found its leader."""
    require("ovsdb-server", "ovsdb-tool", "ovs-appctl")
    c = Cluster(tmp_path, NB_SCHEMA, "OVN_Northbound", [kind] * 3, extra=["-vraft:file:dbg"])
    try:
        c.create()
        c.start()
        leader = c.wait_formed()
        term = int(c.members[leader - 1].status("OVN_Northbound")["Term"])
        old = c.members[leader - 1].name
        c.exit(leader)     # `ovs-appctl exit` hands leadership over
        new: int | None = None
        deadline = time.monotonic() + 30
        logs: dict[int, list[str]] = {}
        while time.monotonic() < deadline:
            logs = {m.index: _raft_lines(m.proc.logfile) for m in c.members}
            winners = [i for i, lines in logs.items()
                       if f"INFO|term {term + 1}: elected leader by 2+ of 3 servers"
                       in lines]
            if winners:
                new = winners[0]
                break
            time.sleep(0.1)
        assert new is not None, logs
        # (the third member hears of the new leader by its next message: waited for
        # while the members still run)
        other = next(m.index for m in c.members if m.index not in (leader, new))
        nick = c.members[new - 1].name
        assert wait_until(lambda: f"INFO|server {nick} is leader for term {term + 1}"
                          in _raft_lines(c.members[other - 1].proc.logfile), timeout=10)
    finally:
        c.close()
    lines = logs[new]
    assert f"INFO|received leadership transfer from {old} in term {term}" in lines, lines
    i = lines.index(f"INFO|received leadership transfer from {old} in term {term}")
    assert lines[i + 1] == f"INFO|term {term + 1}: starting election"
    assert lines[i + 2] == f"INFO|term {term + 1}: elected leader by 2+ of 3 servers"
    for m in c.members:
        lines = _raft_lines(m.proc.logfile)
        assert "DBG|raft_is_connected: true" in lines, (m.name, lines)
        assert lines[0].startswith("INFO|local server ID is ") or m.index == 1


# ---------------------------------------------------------------------------------------
# cluster/failure-test.


def test_failure_test_command_texts(tmp_path: Path) -> None:
    """Argument count, unknown scenario, engage and clear, as the real server; and no
    `time/warp` or `time/stop`, as in the real server."""
    require("ovsdb-server", "ovsdb-tool", "ovs-appctl")
    seen = {}
    for kind in ("ours", "real"):
        d = tmp_path / kind
        d.mkdir()
        tool = ["ovsdb-tool"] if kind == "real" else [sys.executable, "-m", "pyovsdb", "tool"]
        run([*tool, "create-cluster", str(d / "nb.db"), NB_SCHEMA, f"unix:{d / 'r.sock'}"])
        srv = ServerProcess(kind, d, [str(d / "nb.db")], name="s")
        try:
            srv.start()
            seen[kind] = [_appctl(srv, "cluster/failure-test", *args) for args in (
                [], ["nope"], ["delay-election"], ["clear"], ["a", "b"])]
            listed = _appctl(srv, "list-commands")[1]
            seen[kind].append([ln for ln in listed.splitlines() if "failure-test" in ln])
            # The real server has no clock commands (lib/timeval.c registers them only
            # for dummy, test-only builds): neither has ours.
            seen[kind] += [_appctl(srv, "time/warp", "100"), _appctl(srv, "time/stop")]
        finally:
            srv.stop()
    assert seen["real"][2][1] == "test engaged\n"
    assert seen["ours"] == seen["real"]


CRASHES = [
    # scenario, member it is engaged on, member the client talks to, stderr's last line
    ("crash-before-sending-append-request", "leader", "leader",
     "Raft test: crash before sending append_request."),
    ("crash-after-sending-append-request", "leader", "leader",
     "Raft test: crash after sending append_request."),
    ("crash-before-sending-execute-command-request", "follower", "follower",
     "Raft test: crash before sending execute_command_request"),
    ("crash-after-sending-execute-command-request", "follower", "follower",
     "Raft test: crash after sending execute_command_request"),
    ("crash-before-sending-execute-command-reply", "leader", "follower",
     "Raft test: crash before sending execute_command_reply"),
    ("crash-after-sending-execute-command-reply", "leader", "follower",
     "Raft test: crash after sending execute_command_reply."),
    ("crash-after-receiving-append-request-update", "follower", "leader",
     "Raft test: crash after receiving append_request with update."),
]


@pytest.mark.parametrize("kind", ["ours", "real"])
def test_failure_test_crashes(cluster_of: Any, kind: str) -> None:
    """Each crash scenario ends the member where the real one does (exit status 1, the
    real message on stderr); restarted, it rejoins, and the members' files pass the
    real `ovsdb-tool check-cluster`."""
    c = cluster_of(kind)
    for n, (scenario, target_role, via_role, text) in enumerate(CRASHES):
        leader = c.leader()
        follower = c.followers(leader)[0]
        target = leader if target_role == "leader" else follower
        via = leader if via_role == "leader" else follower
        m = c.members[target - 1]
        assert m.appctl("cluster/failure-test", scenario).stdout == "test engaged\n"
        try:
            cluster_transact(c.members[via - 1].unix, "OVN_Northbound", [
                {"op": "insert", "table": "Logical_Switch", "row": {"name": f"sw{n}"}}],
                timeout=10)
        except Exception:
            pass  # the member the client talked to may be the one that died
        proc = m.proc.proc
        assert proc is not None
        try:
            status = proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{scenario}: {m.name} did not crash") from None
        assert proc.stderr is not None
        err = proc.stderr.read().decode().strip().splitlines()
        assert (status, err[-1]) == (1, f"ovsdb-server: {text}"), scenario
        m.proc.stop()
        c.start(target)
        c.wait_formed()
        c.wait_applied()
    c.close()
    c.check_cluster()


def _leader_among(c: Any, members: list[int], timeout: float = 20) -> int:
    """The member of `members` that they all follow (or that leads them)."""
    deadline = time.monotonic() + timeout
    st: dict[int, Any] = {}
    while time.monotonic() < deadline:
        st = {i: c.members[i - 1].status("OVN_Northbound") for i in members}
        leaders = [i for i, s in st.items() if s and s.get("Role") == "leader"]
        if len(leaders) == 1:
            nick = c.members[leaders[0] - 1].name
            if all(s and s.get("Leader") in ("self", nick) for s in st.values()):
                return leaders[0]
        time.sleep(0.05)
    raise AssertionError(f"no common leader among {members}: {st}")


def _commit_without(c: Any, leader: int, name: str) -> None:
    """Commit one row through `leader` while a member is cut off, so that the member
    cut off is behind the other two when it comes back."""
    res = cluster_transact(c.members[leader - 1].unix, "OVN_Northbound", [
        {"op": "insert", "table": "Logical_Switch", "row": {"name": name}}])
    assert "uuid" in res[0], res


@pytest.mark.parametrize("kind", ["ours", "real"])
def test_failure_test_elections(cluster_of: Any, kind: str) -> None:
    """transfer-leadership hands leadership over (and ends itself); stop-raft-rpc cuts
    a leader off, the others elect another, and after `clear` it follows; members
    with delay-election wait one more election timer before they stand; members with
    dont-send-vote-request elect nobody."""
    c = cluster_of(kind)
    old = c.leader()
    m = c.members[old - 1]
    assert m.appctl("cluster/failure-test", "transfer-leadership").stdout == "test engaged\n"
    new = _leader_among(c, [1, 2, 3])
    assert new != old
    assert "Transferring leadership to write a snapshot." in Path(m.proc.logfile).read_text()

    # Cut the leader off: the other two elect one of them.
    cut = new
    rest = [i for i in (1, 2, 3) if i != cut]
    c.members[cut - 1].appctl("cluster/failure-test", "stop-raft-rpc")
    second = _leader_among(c, rest)
    _commit_without(c, second, "cut-1")
    c.members[cut - 1].appctl("cluster/failure-test", "clear")
    # The member cut off comes back with a higher term and may force one more
    # election, which it cannot win: its log lacks what the other two committed.
    second = c.wait_formed()
    assert second in rest

    # The leader cut off once more, and neither of the others asks for votes: nobody
    # wins until they do again.
    others = [i for i in (1, 2, 3) if i != second]
    for i in others:
        c.members[i - 1].appctl("cluster/failure-test", "dont-send-vote-request")
    c.members[second - 1].appctl("cluster/failure-test", "stop-raft-rpc")
    time.sleep(4)       # four election timers
    roles = {c.members[i - 1].status("OVN_Northbound")["Role"] for i in others}
    assert roles == {"candidate"}, roles
    for i in others:
        c.members[i - 1].appctl("cluster/failure-test", "clear")
    _leader_among(c, others)
    c.members[second - 1].appctl("cluster/failure-test", "clear")
    second = c.wait_formed()

    # With a 2 s election timer, the leader cut off again and both others slowed down
    # by one election timer: no election before 2 x 2 s after the last heartbeat
    # (at most 2/3 s before the cut), where without the delay one is won within
    # 2 s + 1 s of jitter.
    lm = c.members[second - 1]
    lm.appctl("cluster/change-election-timer", "OVN_Northbound", "2000")
    assert wait_until(lambda: all(
        c.members[i - 1].status("OVN_Northbound")["Election timer"] == "2000"
        for i in (1, 2, 3)))
    slow = [i for i in (1, 2, 3) if i != second]
    for i in slow:
        c.members[i - 1].appctl("cluster/failure-test", "delay-election")
    t0 = time.monotonic()
    lm.appctl("cluster/failure-test", "stop-raft-rpc")
    fast = _leader_among(c, slow)
    assert time.monotonic() - t0 > 3.3
    _commit_without(c, fast, "cut-3")
    for i in (*slow, second):
        c.members[i - 1].appctl("cluster/failure-test", "clear")
    assert c.wait_formed() in slow


def test_memory_trim_on_compaction(nb_servers: dict[str, ServerProcess]) -> None:
    """Replies and log lines of `ovsdb-server/memory-trim-on-compaction` as the real
    server's (logged the first time and when it changes), compaction still working."""
    seen = {}
    for kind, srv in nb_servers.items():
        out = [_appctl(srv, "ovsdb-server/memory-trim-on-compaction", *a)
               for a in (["on"], ["on"], ["off"], ["maybe"], [], ["on", "off"])]
        out.append(_appctl(srv, "ovsdb-server/compact"))
        out.append([line.split("|", 2)[2] for line in Path(srv.logfile).read_text()
                    .splitlines() if "trimming" in line])
        seen[kind] = out
    assert seen["real"][-1] == [
        "ovsdb_server|INFO|memory trimming after compaction enabled.",
        "ovsdb_server|INFO|memory trimming after compaction disabled."]
    assert seen["ours"] == seen["real"]


def test_remove_db_cancels_and_disconnects_as_the_real_server(
        nb_servers: dict[str, ServerProcess]) -> None:
    """`remove-db`: a db-change-aware client gets `monitor_canceled` and "canceled" for
    its pending wait; every other client is disconnected, with or without monitors."""
    seen = {}
    for kind, srv in nb_servers.items():
        a, b, c = (_RawSession(srv.sock) for _ in range(3))
        try:
            b.send({"id": 0, "method": "set_db_change_aware", "params": [True]})
            for s in (a, b):
                s.send({"id": 1, "method": "monitor_cond", "params": [
                    DB_NB, "m", {"NB_Global": [{"columns": ["nb_cfg"]}]}]})
            for s in (a, b, c):
                s.send({"id": 2, "method": "transact", "params": [DB_NB, WAIT_NEVER]})
                # (its echo's reply: the waiting transaction was taken in before the
                # database goes, or the server could find no such database)
                s.send({"id": 3, "method": "echo", "params": []})
            first = [s.read(5, until=n) for s, n in ((a, 2), (b, 3), (c, 1))]
            p = srv.appctl("ovsdb-server/remove-db", DB_NB, check=False)
            after = [s.read(5, until=n) for s, n in ((a, 1), (b, 2), (c, 1))]
        finally:
            for s in (a, b, c):
                s.close()
        seen[kind] = (first, p.returncode, after, sorted(_jsonrpc_log(srv)))
    assert seen["real"][2] == [["EOF"], [
        {"id": None, "method": "monitor_canceled", "params": ["m"]},
        {"id": 2, "error": "canceled"}], ["EOF"]]
    assert seen["ours"] == seen["real"]
