"""Remotes read from the database (`db:DB,TABLE,COLUMN`), side by side with the real
ovsdb-server: a Connection row's `role` (RBAC) and `read_only`, its probe interval and
dscp, the status written back into it, and the `listening on port` log line that
scripts read a kernel-chosen port from (every test here finds its port that way).

The Southbound and Northbound databases are served by one server, with the remotes of
both, as `ovn-ctl` does for a combined deployment."""

from __future__ import annotations

import json
import re
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import label_uuids, nbctl, parse_records, sbctl, transact, wait_until

from procs import NB_SCHEMA, SB_SCHEMA, VSWITCH_SCHEMA, ServerProcess, create_db, require, run
from rawrpc import Rpc

pytestmark = pytest.mark.interop

SB, NB = "OVN_Southbound", "OVN_Northbound"
DB_REMOTES = ["--remote=db:OVN_Southbound,SB_Global,connections",
              "--remote=db:OVN_Northbound,NB_Global,connections"]
LISTENING = re.compile(r"\|socket_util\|INFO\|0:127\.0\.0\.1: listening on port (\d+)$", re.M)
TARGET = "ptcp:0:127.0.0.1"
KINDS = ("ours", "real")


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[dict[str, ServerProcess]]:
    """Our server and the real one, each serving an initialized SB and NB."""
    require("ovsdb-server", "ovsdb-tool", "ovn-sbctl", "ovn-nbctl", "ovsdb-client")
    servers: dict[str, ServerProcess] = {}
    try:
        for kind in KINDS:
            d = tmp_path / kind
            d.mkdir()
            dbs = [create_db(kind, d / "sb.db", SB_SCHEMA), create_db(kind, d / "nb.db", NB_SCHEMA)]
            servers[kind] = ServerProcess(kind, d, dbs, name="db", extra=DB_REMOTES).start()
            sbctl(servers[kind], "init")
            nbctl(servers[kind], "init")
        yield servers
    finally:
        for srv in servers.values():
            srv.stop()


def listen_ports(srv: ServerProcess) -> list[int]:
    return [int(p) for p in LISTENING.findall(Path(srv.logfile).read_text())]


def set_connection(srv: ServerProcess, ctl: str, *args: str, options: tuple[str, ...] = (),
                   command: str = "set-connection") -> int:
    """`ovn-{sb,nb}ctl [OPTIONS] set-connection ARGS...` and the port the server then
    logs."""
    before = len(listen_ports(srv))
    run([ctl, f"--db={srv.unix}", "--timeout=20", *options, command, *args])
    assert wait_until(lambda: len(listen_ports(srv)) > before), Path(srv.logfile).read_text()
    return listen_ports(srv)[-1]


def replies(port: int, requests: list[tuple[str, Any]]) -> list[Any]:
    rpc = Rpc(port)
    try:
        return label_uuids([rpc.call(m, p) for m, p in requests])
    finally:
        rpc.close()


def rbac_role(srv: ServerProcess) -> None:
    """As ovn-northd would: role ovn-controller may write Address_Set rows of everyone
    (authorization "", no insert/delete), plus one Address_Set row."""
    res = transact(srv, {
        "op": "insert", "table": "RBAC_Permission", "uuid-name": "p",
        "row": {"table": "Address_Set", "authorization": ["set", [""]],
                "insert_delete": False, "update": ["set", ["addresses"]]}}, {
        "op": "insert", "table": "RBAC_Role",
        "row": {"name": "ovn-controller",
                "permissions": ["map", [["Address_Set", ["named-uuid", "p"]]]]}}, {
        "op": "insert", "table": "Address_Set", "row": {"name": "as1"}}, db=SB)
    assert all("error" not in r for r in res), res


def address_sets(srv: ServerProcess) -> list[Any]:
    res = transact(srv, {"op": "select", "table": "Address_Set", "where": [],
                         "columns": ["name", "addresses"]}, db=SB)
    return sorted(res[0]["rows"], key=json.dumps)


def ins(db: str, table: str, row: dict[str, Any]) -> tuple[str, Any]:
    return ("transact", [db, {"op": "insert", "table": table, "row": row}])


WRITES = [
    ins(SB, "Address_Set", {"name": "as2"}),
    ("transact", [SB, {"op": "update", "table": "Address_Set", "where": [],
                       "row": {"addresses": ["set", ["10.0.0.1"]]}}]),
    ("transact", [SB, {"op": "mutate", "table": "Address_Set", "where": [],
                       "mutations": [["addresses", "insert", "10.0.0.2"]]}]),
    ("transact", [SB, {"op": "delete", "table": "Address_Set",
                       "where": [["name", "==", "as1"]]}]),
    ("transact", [SB, {"op": "select", "table": "Address_Set", "where": [],
                       "columns": ["name"]},
                  {"op": "delete", "table": "Address_Set", "where": []},
                  {"op": "select", "table": "Address_Set", "where": []}]),
    ins(SB, "Chassis_Private", {"name": "hv1"}),
    ("transact", [SB, {"op": "commit", "durable": False}]),
    ("transact", [SB, {"op": "select", "table": "Address_Set", "where": [],
                       "columns": ["name"]},
                  {"op": "comment", "comment": "c"}, {"op": "assert", "lock": "l"}]),
    ("transact", [SB, {"op": "wait", "table": "Address_Set", "where": [], "until": "==",
                       "rows": [], "timeout": 0}]),
    ("transact", [SB, {"op": "abort"}]),
    ins(SB, "Nope", {}),
    ins(SB, "Address_Set", {"name": 1}),
    ("transact", [SB, {"op": "delete", "table": "Address_Set", "where": [], "extra": 1}]),
    ins("_Server", "Database", {"name": "x", "model": "standalone"}),
]
MONITOR = ("monitor_cond", [SB, "m", {"Address_Set": {"columns": ["name"]}}])


def test_role_without_tls_is_refused_every_write(pair: dict[str, ServerProcess]) -> None:
    """No TLS, so no client id: the role's permissions (even "everyone") never apply.
    A database without RBAC tables (NB) is not restricted, but nobody with a role may
    convert, whichever database."""
    out = {}
    for kind, srv in pair.items():
        rbac_role(srv)
        port = set_connection(srv, "ovn-sbctl", "role=ovn-controller", TARGET)
        out[kind] = replies(port, [*WRITES, MONITOR, ("lock", ["l"]),
                                   ins(NB, "Logical_Switch", {"name": "sw0"}),
                                   ("convert", [SB, {}]), ("convert", [NB, {}])])
        assert address_sets(srv) == [{"name": "as1", "addresses": ["set", []]}]
    assert out["ours"] == out["real"]
    denials = [r["result"][0] for r in out["ours"][:4]]
    assert denials[0] == {
        "error": "permission error",
        "details": 'RBAC rules for client "(null)" role "ovn-controller" prohibit row '
                   'insertion into table "Address_Set".'}
    assert [d["error"] for d in denials] == ["permission error"] * 4
    assert "uuid" in out["ours"][-3]["result"][0]  # NB: no RBAC tables
    assert out["ours"][-1]["error"]["error"] == "permission error"


def test_read_only_connection(pair: dict[str, ServerProcess]) -> None:
    out = {}
    for kind, srv in pair.items():
        rbac_role(srv)
        port = set_connection(srv, "ovn-sbctl", "read-only", TARGET)
        out[kind] = replies(port, [*WRITES, MONITOR, ("lock", ["l"]), ("steal", ["l"]),
                                   ("unlock", ["l"]), ("lock", [1]),
                                   ins(NB, "Logical_Switch", {"name": "sw0"}),
                                   ("set_db_change_aware", [True])])
        assert address_sets(srv) == [{"name": "as1", "addresses": ["set", []]}]
    assert out["ours"] == out["real"]
    assert out["ours"][0]["result"] == [{
        "error": "not allowed",
        "details": "insert operation not allowed when database server is in read only mode"}]
    assert out["ours"][-3]["error"] == (
        "lock and unlock methods not allowed, DB server is read only.")
    # convert: OVS 3.1.7 refuses read-only clients (3.1.0, installed here, converts).
    rpc = Rpc(listen_ports(pair["ours"])[-1])
    try:
        assert rpc.call("convert", [SB, {}])["error"] == {
            "error": "not allowed",
            "details": "conversion is not allowed for read-only database OVN_Southbound"}
    finally:
        rpc.close()


def test_read_only_is_no_option_of_nb_connections(pair: dict[str, ServerProcess]) -> None:
    """NB's Connection has no read_only column: `ovn-nbctl set-connection read-only
    TARGET` makes "read-only" a second target (an active remote that never connects),
    and TARGET stays writable, on both servers."""
    out = {}
    for kind, srv in pair.items():
        port = set_connection(srv, "ovn-nbctl", "read-only", TARGET)
        out[kind] = replies(port, [ins(NB, "Logical_Switch", {"name": "sw0"})])
        assert wait_until(lambda s=srv: all(  # type: ignore[misc]
            r["status"] != "{}" for r in connections(s)), timeout=8), connections(srv)
        out[kind].append(connections(srv))
    assert out["ours"] == out["real"]
    assert "uuid" in out["ours"][0]["result"][0]
    assert sorted(r["status"] for r in out["ours"][1]) == [
        "{bound_port=<port>, sec_since_connect=\"0\", sec_since_disconnect=\"0\"}",
        "{state=BACKOFF}"]


def connections(srv: ServerProcess, ctl: str = "ovn-nbctl", table: str = "Connection"
                ) -> list[dict[str, str]]:
    """`list Connection`, with the kernel-chosen port, UUIDs and the server's directory
    masked."""
    text = run([ctl, f"--db={srv.unix}", "--timeout=20", "list", table]).stdout
    text = text.replace(str(srv.workdir), "<dir>")
    text = re.sub(r'bound_port="\d+"', "bound_port=<port>", text)
    return parse_records(re.sub(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", "<uuid>", text))


def test_status_written_back(pair: dict[str, ServerProcess]) -> None:
    """is_connected and status of a listener, with two clients and after they left."""
    seen: dict[str, list[Any]] = {}
    for kind, srv in pair.items():
        port = set_connection(srv, "ovn-nbctl", TARGET)
        clients = [Rpc(port), Rpc(port)]
        try:
            for c in clients:
                c.call("list_dbs", [])
            assert wait_until(lambda s=srv: "n_connections" in str(connections(s)),  # type: ignore[misc]
                              timeout=8), connections(srv)
            seen[kind] = [connections(srv)]
        finally:
            for c in clients:
                c.close()
        assert wait_until(lambda s=srv: connections(s)[0]["is_connected"] == "false",  # type: ignore[misc]
                          timeout=8), connections(srv)
        seen[kind].append(connections(srv))
    assert seen["ours"] == seen["real"]
    assert seen["ours"][0][0]["is_connected"] == "true"
    assert seen["ours"][0][0]["status"] == (
        '{bound_port=<port>, n_connections="2", sec_since_connect="0", '
        'sec_since_disconnect="0"}')


def tool(kind: str) -> list[str]:
    return [sys.executable, "-m", "pyovsdb", "tool"] if kind == "ours" else ["ovsdb-tool"]


def test_manager_rows_and_clustered_databases(tmp_path: Path) -> None:
    """Open vSwitch's Manager rows work as OVN's Connection rows; and the real server
    writes no status into a clustered database (neither do we)."""
    require("ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovn-sbctl", "ovsdb-client")
    servers: dict[str, ServerProcess] = {}
    try:
        for kind in KINDS:
            d = tmp_path / kind
            d.mkdir()
            conf = create_db(kind, d / "conf.db", VSWITCH_SCHEMA)
            sb = str(d / "sb.db")
            run([*tool(kind), "create-cluster", sb, SB_SCHEMA, f"unix:{d / 'sb.raft'}"])
            servers[kind] = srv = ServerProcess(kind, d, [conf, sb], extra=[
                "--remote=db:Open_vSwitch,Open_vSwitch,manager_options",
                "--remote=db:OVN_Southbound,SB_Global,connections"]).start()
            sbctl(srv, "init")
            sbctl(srv, "set-connection", f"punix:{d / 'sb2.sock'}")
            run(["ovs-vsctl", f"--db={srv.unix}", "--no-wait", "init"])
            port = set_connection(srv, "ovs-vsctl", TARGET, options=("--no-wait",),
                                  command="set-manager")
            rpc = Rpc(port)
            rpc.call("list_dbs", [])
            servers[kind].rpc = rpc  # type: ignore[attr-defined]
        out = {}
        for kind, srv in servers.items():
            assert wait_until(lambda s=srv: "bound_port" in str(  # type: ignore[misc]
                connections(s, "ovs-vsctl", "Manager")), timeout=8)
            out[kind] = [connections(srv, "ovs-vsctl", "Manager"),
                         connections(srv, "ovn-sbctl")]
        assert out["ours"] == out["real"]
        manager, sb_connection = out["ours"]
        assert manager[0]["is_connected"] == "true"
        assert sb_connection[0]["status"] == "{}"
    finally:
        for srv in servers.values():
            if hasattr(srv, "rpc"):
                srv.rpc.close()
            srv.stop()


def test_inactivity_probe_of_the_row(pair: dict[str, ServerProcess]) -> None:
    """The row's inactivity_probe (ms) applies to its sessions, also to one already
    connected when the row changes; 0 disables probing, and it can be enabled again."""
    for kind, srv in pair.items():
        port = set_connection(srv, "ovn-sbctl", TARGET, options=("--inactivity-probe=1000",))
        rpc = Rpc(port)
        try:
            msg = rpc.receive(timeout=3)
            assert msg is not None and msg.get("method") == "echo", (kind, msg)
            rpc.send({"result": msg["params"], "error": None, "id": msg["id"]})
            sbctl(srv, "set", "Connection", ".", "inactivity_probe=0")
            while (m := rpc.receive(timeout=0.5)) is not None:
                assert m.get("method") == "echo", m
                rpc.send({"result": m["params"], "error": None, "id": m["id"]})
            assert rpc.receive(timeout=2.5) is None, kind
            sbctl(srv, "set", "Connection", ".", "inactivity_probe=1000")
            msg = rpc.receive(timeout=3)
            assert msg is not None and msg.get("method") == "echo", (kind, msg)
        finally:
            rpc.close()


def test_dscp_of_the_row(pair: dict[str, ServerProcess]) -> None:
    """The listening socket's TOS is the dscp (default 48); a new dscp reopens it."""
    require("ss")

    def tos(port: int) -> str:
        out = run(["ss", "-ltnH", "--tos", f"sport = :{port}"]).stdout
        m = re.search(r"tos:(0x[0-9a-f]+)", out)
        return m.group(1) if m else out

    for kind, srv in pair.items():
        port = set_connection(srv, "ovn-sbctl", TARGET)
        assert tos(port) == "0xc0", kind
        n = len(listen_ports(srv))
        sbctl(srv, "set", "Connection", ".", "other_config:dscp=10")
        assert wait_until(lambda s=srv, n=n: len(listen_ports(s)) > n), kind  # type: ignore[misc]
        assert tos(listen_ports(srv)[-1]) == "0x28", kind


def test_row_changes_apply_to_sessions_at_once(pair: dict[str, ServerProcess]) -> None:
    """Ours only: turning a Connection read-only (or giving it a role) applies to the
    sessions it has and to new ones. The real 3.1 server keeps a listener's first
    read_only and role until the listener goes away (an intended difference)."""
    srv = pair["ours"]
    port = set_connection(srv, "ovn-sbctl", TARGET)
    rpc = Rpc(port)
    add = [SB, {"op": "insert", "table": "Address_Set", "row": {"name": "x"}}]
    try:
        assert "uuid" in rpc.call("transact", add)["result"][0]
        sbctl(srv, "set", "Connection", ".", "read_only=true")
        assert rpc.call("transact", add)["result"][0]["error"] == "not allowed"
        assert replies(port, [("transact", add)])[0]["result"][0]["error"] == "not allowed"
        sbctl(srv, "set", "Connection", ".", "read_only=false", "role=ovn-controller")
        assert rpc.call("transact", add)["result"][0]["error"] == "permission error"
        sbctl(srv, "set", "Connection", ".", 'role=""')
        res = rpc.call("transact", add)["result"]
        assert res[-1]["error"] == "constraint violation"  # the name is taken: it wrote
    finally:
        rpc.close()


def test_removed_connection_closes_its_sessions(pair: dict[str, ServerProcess]) -> None:
    for kind, srv in pair.items():
        port = set_connection(srv, "ovn-sbctl", TARGET)
        rpc = Rpc(port)
        try:
            rpc.call("list_dbs", [])
            sbctl(srv, "del-connection")
            assert rpc.receive(timeout=5) is None and rpc.eof, kind
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
            log = Path(srv.logfile).read_text()
            assert f"|ovsdb_jsonrpc_server|INFO|{TARGET}: remote deconfigured" in log, kind
        finally:
            rpc.close()



def test_removed_database_takes_its_remotes(pair: dict[str, ServerProcess]) -> None:
    def refused(port: int) -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        except OSError:
            return True
        return False

    for kind, srv in pair.items():
        port = set_connection(srv, "ovn-nbctl", TARGET)
        assert not refused(port), kind
        srv.appctl("ovsdb-server/remove-db", NB)
        assert wait_until(lambda p=port: refused(p), timeout=6), kind  # type: ignore[misc]


def test_sessions_are_named_as_the_real_server_names_them(
        pair: dict[str, ServerProcess]) -> None:
    """Log lines name a TCP session `tcp:IP:PORT`, as the real server's streams."""
    for kind, srv in pair.items():
        rpc = Rpc(set_connection(srv, "ovn-sbctl", TARGET))
        try:
            local = rpc.sock.getsockname()[1]
            rpc.send({"id": 99, "result": [], "error": None})
            assert rpc.receive(timeout=5) is None and rpc.eof, kind
        finally:
            rpc.close()
        line = (f"|ovsdb_jsonrpc_server|WARN|tcp:127.0.0.1:{local}: received unexpected "
                "reply message")
        assert wait_until(lambda s=srv, t=line: t in Path(s.logfile).read_text()), kind  # type: ignore[misc]
