"""`pyovsdb client` against the real `ovsdb-client`: the same arguments on the same
server (ours and the real one) must give the same stdout, byte for byte, the same exit
status and the same error line."""

from __future__ import annotations

import io
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import orjson
import pytest

from procs import NB_SCHEMA, ServerProcess, create_db, require
from pyovsdb.cli import client

pytestmark = pytest.mark.interop

# A schema with every kind of column the NB schema lacks: reals, constrained and
# single-element types, a map of at most one pair, weak references.
TYPES_SCHEMA = {
    "name": "T", "version": "1.2.3",
    "tables": {
        "A": {"isRoot": True, "maxRows": 10, "indexes": [["i", "e"]], "columns": {
            "r": {"type": "real"},
            "rs": {"type": {"key": {"type": "real", "minReal": -1.5, "maxReal": 1e20},
                            "min": 0, "max": "unlimited"}},
            "i": {"type": {"key": {"type": "integer", "maxInteger": 10}}},
            "e": {"type": {"key": {"type": "string", "enum": "only"}}},
            "m1": {"type": {"key": "string", "value": "integer", "min": 0, "max": 1}},
            "s3": {"type": {"key": "uuid", "min": 0, "max": 3}},
            "b": {"type": "boolean"},
            "str": {"type": {"key": {"type": "string", "minLength": 0}}},
            "ref": {"type": {"key": {"type": "uuid", "refTable": "B", "refType": "weak"},
                             "min": 0, "max": "unlimited"}},
            "eph": {"type": "integer", "ephemeral": True},
            "imm": {"type": "integer", "mutable": False},
            "ms": {"type": {"key": "integer", "value": {"type": "real", "maxReal": 5},
                            "min": 0, "max": "unlimited"}}}},
        "B": {"isRoot": True, "columns": {"name": {"type": "string"}}},
    },
}

NB_TXN = ["OVN_Northbound",
          {"op": "insert", "table": "NB_Global", "row": {"options": ["map", [["k", "v"]]]}},
          {"op": "insert", "table": "Logical_Switch", "uuid-name": "sw0", "row": {
              "name": "sw0",
              "external_ids": ["map", [["foo", "bar"], ["x y", "1"]]],
              "other_config": ["map", [["a", "true"], ["b", 'q"r'], ["c", "x,y"]]],
              "ports": ["named-uuid", "p1"], "acls": ["named-uuid", "acl"]}},
          {"op": "insert", "table": "Logical_Switch", "row": {"name": "sw 1"}},
          {"op": "insert", "table": "Logical_Switch", "row": {"name": "a\u001fb\"c\\d/é€"}},
          {"op": "insert", "table": "Logical_Switch", "row": {"name": "trail  "}},
          {"op": "insert", "table": "Logical_Switch", "row": {"name": "tab\t \t "}},
          {"op": "insert", "table": "Logical_Switch", "row": {"name": "123"}},
          {"op": "insert", "table": "Logical_Switch",
           "row": {"name": "00000000-0000-0000-0000-000000000001"}},
          {"op": "insert", "table": "Logical_Switch", "row": {"name": ""}},
          {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p1", "row": {
              "name": "p1", "addresses": "00:00:00:00:00:01 10.0.0.1", "tag_request": 5,
              "up": True, "options": ["map", [["<html>", "&amp;"]]]}},
          {"op": "insert", "table": "ACL", "uuid-name": "acl", "row": {
              "priority": 100, "direction": "to-lport", "match": "ip4.src == 1.2.3.4",
              "action": "drop", "severity": "info", "log": True}},
          {"op": "insert", "table": "Logical_Router", "row": {
              "name": "r0", "ports": ["named-uuid", "rp"]}},
          {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "rp", "row": {
              "name": "rp", "mac": "00:00:00:00:00:02", "networks": "10.0.0.254/24"}}]

T_TXN = ["T",
         {"op": "insert", "table": "B", "uuid-name": "b1", "row": {"name": "b1"}},
         {"op": "insert", "table": "A", "row": {
             "r": 1e17, "rs": ["set", [0.1, 2, 1e19, -1.25]], "i": -5, "e": "only",
             "m1": ["map", [["k", 3]]], "b": True, "str": "123", "eph": 7, "imm": 8,
             "s3": ["set", [["uuid", "00000000-0000-0000-0000-000000000001"],
                            ["uuid", "00000000-0000-0000-0000-000000000002"]]],
             "ref": ["named-uuid", "b1"], "ms": ["map", [[1, 2.5], [2, 3]]]}},
         {"op": "insert", "table": "A", "row": {
             "r": 0.30000000000000004, "i": 10, "e": "only", "str": "true"}},
         {"op": "insert", "table": "A", "row": {
             "r": -0.0, "i": -6, "e": "only", "str": "00000000-0000-0000-0000-00000000000A"}}]


def real(*args: str) -> tuple[int, str, str]:
    p = subprocess.run(["ovsdb-client", *args], capture_output=True, encoding="utf-8",
                       timeout=30)
    return p.returncode, p.stdout, p.stderr


def ours(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = client.main(list(args))
    return rc, out.getvalue(), err.getvalue()


_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT[^|]*\|\d+\|.*\n", re.M)


def error_line(stderr: str, program: str) -> str:
    """The tool's own complaint, without log lines and the program's name."""
    text = _LOG_LINE.sub("", stderr)
    return text.replace(f"{program}: ", "PROGRAM: ")


def check_same(*args: str) -> tuple[int, str]:
    rc_r, out_r, err_r = real(*args)
    rc_o, out_o, err_o = ours(*args)
    assert out_o == out_r, f"stdout differs for {args}"
    assert rc_o == rc_r, f"exit status differs for {args}: {err_o}"
    assert error_line(err_o, "pyovsdb client") == error_line(err_r, "ovsdb-client"), args
    return rc_r, out_r


@pytest.fixture(scope="module", params=["ours", "real"])
def srv(request: pytest.FixtureRequest,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server (ours, then the real one) with a populated OVN_Northbound and T."""
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client")
    kind = str(request.param)
    d = tmp_path_factory.mktemp(f"client-{kind}")
    schema = d / "t.ovsschema"
    schema.write_bytes(orjson.dumps(TYPES_SCHEMA))
    dbs = [create_db(kind, d / "nb.db", NB_SCHEMA), create_db(kind, d / "t.db", str(schema))]
    server = ServerProcess(kind, d, dbs, name="s", tcp=True)
    server.start()
    try:
        for txn in (NB_TXN, T_TXN):
            rc, out, err = real("transact", server.unix, orjson.dumps(txn).decode())
            assert rc == 0 and '"error"' not in out, out + err
        yield server
    finally:
        server.stop()


READ_COMMANDS = [
    ["list-dbs", "{srv}"],
    ["get-schema", "{srv}", "OVN_Northbound"],
    ["get-schema", "{srv}", "T"],
    ["get-schema", "{srv}", "_Server"],
    ["--pretty", "get-schema", "{srv}", "T"],
    ["get-schema-version", "{srv}", "T"],
    ["get-schema-cksum", "{srv}", "OVN_Northbound"],
    ["get-schema-cksum", "{srv}", "T"],
    ["list-tables", "{srv}", "OVN_Northbound"],
    ["list-tables", "{srv}", "_Server"],
    ["list-columns", "{srv}", "OVN_Northbound"],
    ["list-columns", "{srv}", "T", "A"],
    ["list-columns", "{srv}", "T", "nope"],
    ["dump", "{srv}", "OVN_Northbound"],
    ["dump", "{srv}", "T"],
    ["dump", "{srv}", "_Server", "Database", "name", "model"],
    ["dump", "{srv}", "OVN_Northbound", "Logical_Switch", "other_config", "name", "ports"],
    ["dump", "{srv}", "OVN_Northbound", "NB_Global", "_version"],
    ["-f", "list", "dump", "{srv}", "OVN_Northbound", "Logical_Switch"],
    ["-f", "csv", "dump", "{srv}", "OVN_Northbound"],
    ["-f", "html", "dump", "{srv}", "OVN_Northbound", "Logical_Switch_Port"],
    ["-f", "json", "dump", "{srv}", "T"],
    ["-f", "json", "--pretty", "dump", "{srv}", "OVN_Northbound", "Logical_Switch"],
    ["-d", "bare", "dump", "{srv}", "OVN_Northbound", "Logical_Switch"],
    ["-d", "json", "dump", "{srv}", "T"],
    ["--bare", "dump", "{srv}", "OVN_Northbound", "Logical_Switch"],
    ["--no-headings", "dump", "{srv}", "T"],
    ["--no-headings", "-f", "csv", "list-tables", "{srv}", "OVN_Northbound"],
    ["-f", "html", "dump", "{srv}", "T"],
    ["-f", "list", "list-columns", "{srv}", "T"],
    ["-f", "json", "list-columns", "{srv}", "T", "A"],
    ["--bare", "-f", "table", "list-tables", "{srv}", "T"],
    ["dump", "{tcp}", "T", "-f", "csv", "--no-headings"],  # options after the command
]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=" ".join)
def test_read_commands(srv: ServerProcess, args: list[str]) -> None:
    rc, _ = check_same(*(a.format(srv=srv.unix, tcp=srv.tcp) for a in args))
    assert rc == 0


def test_default_database_choice(srv: ServerProcess, tmp_path: Path) -> None:
    # Two databases besides _Server: the real tool cannot choose one.
    rc, _ = check_same("list-tables", srv.unix)
    assert rc == 1
    # A table name that is not a database is left for the command.
    check_same("dump", srv.unix, "Nope")


def test_default_server_and_single_database(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client")
    db = create_db("real", tmp_path / "nb.db", NB_SCHEMA)
    with ServerProcess("real", tmp_path, [db], name="db"):
        monkeypatch.setenv("OVS_RUNDIR", str(tmp_path))
        check_same("list-tables")  # unix:$OVS_RUNDIR/db.sock, then OVN_Northbound
        check_same("dump", "NB_Global")


TRANSACTIONS = [
    ["OVN_Northbound", {"op": "select", "table": "Logical_Switch", "where": [],
                        "columns": ["name", "external_ids", "ports"]},
     {"op": "comment", "comment": "x"}],
    ["T", {"op": "select", "table": "A", "where": [["i", "<", 100]]}],
    ["OVN_Northbound", {"op": "bogus"}],
    ["nope"],
    [],
    {},
]


@pytest.mark.parametrize("txn", TRANSACTIONS, ids=lambda t: orjson.dumps(t).decode()[:40])
@pytest.mark.parametrize("command", ["transact", "query"])
def test_transact_and_query(srv: ServerProcess, command: str, txn: object) -> None:
    text = orjson.dumps(txn).decode()
    check_same(command, srv.unix, text)
    check_same("--pretty", command, srv.unix, text)


def test_query_refuses_to_write(srv: ServerProcess) -> None:
    before = ours("dump", srv.unix, "T")
    txn = orjson.dumps(["T", {"op": "insert", "table": "B", "row": {"name": "new"}},
                        {"op": "delete", "table": "A", "where": []}]).decode()
    rc, out, _ = ours("query", srv.unix, txn)
    assert rc == 0
    results = orjson.loads(out)
    assert len(results) == 2 and "uuid" in results[0] and results[1] == {"count": 3}
    assert ours("dump", srv.unix, "T") == before
    # The real tool reports the same for the same query (but for the new row's uuid).
    _, real_out, _ = real("query", srv.unix, txn)
    assert orjson.loads(real_out)[1:] == results[1:]


ERRORS = [
    ["list-tables", "{srv}", "T", "extra"],
    ["get-schema", "unix:{tmp}/nonexistent"],
    ["dump", "{srv}", "T", "Nope"],
    ["dump", "{srv}", "T", "A", "nope"],
    ["dump", "{srv}", "T", "A", "r", "r", "_version", "i"],  # the server refuses
    ["transact", "{srv}", "["],
    ["transact", "{srv}", "[1, 2"],
    ["transact", "{srv}", "{{}}"],
    ["query", "{srv}", "{{}}"],
    ["monitor", "{srv}", "T", "Nope"],
    ["monitor", "{srv}", "T", "A", "nope"],
    ["monitor", "{srv}", "T", "A", "r,r"],
    ["monitor", "{srv}", "T", "A", "r", "b,r"],
    ["monitor", "{srv}", "T"],
    ["monitor-cond", "{srv}", "T", "[true]", "Nope"],
    ["monitor-cond", "{srv}", "T", '[["x","==",1]]', "A"],
    ["monitor-cond", "{srv}", "T", '[["r","==","s"]]', "A"],
    ["monitor-cond", "{srv}", "T", "[true]", "ALL"],
    ["bogus"],
    [],
    ["--bogus"],
    ["-f", "bogus", "list-dbs"],
    ["-d", "bogus", "list-dbs"],
    ["-t", "0", "list-dbs"],
    ["-t", "x", "list-dbs"],
    ["list-dbs", "{srv}", "extra"],
]


@pytest.mark.parametrize("args", ERRORS, ids=" ".join)
def test_errors(srv: ServerProcess, tmp_path: Path, args: list[str]) -> None:
    argv = [a.format(srv=srv.unix, tmp=tmp_path) for a in args]
    rc, out = check_same(*argv)
    assert rc == 1 and out == ""


def test_no_traceback_on_bad_server(tmp_path: Path) -> None:
    """A peer that is not an OVSDB server: one line on stderr, status 1."""
    import socket
    import threading

    path = str(tmp_path / "bad.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        conn.recv(1000)
        conn.sendall(b'{"id": 1, "result": 5, "error": null}')
        conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    rc, out, err = ours("list-dbs", f"unix:{path}")
    t.join(5)
    listener.close()
    assert rc == 1 and out == ""
    assert err == "pyovsdb client: list_dbs response is not array\n"


# -- monitors ------------------------------------------------------------------------

MONITORS = [
    ["monitor", "{srv}", "OVN_Northbound", "Logical_Switch", "name,external_ids"],
    ["monitor", "{srv}", "OVN_Northbound", "ALL"],
    ["monitor", "{srv}", "OVN_Northbound", "Logical_Switch", "!initial,name",
     "other_config,!delete"],
    ["monitor-cond", "{srv}", "OVN_Northbound", '[["name","!=","zzz"]]', "Logical_Switch"],
    ["monitor-cond-since", "{srv}", "OVN_Northbound", "[true]", "Logical_Switch",
     "name,ports"],
    ["-f", "csv", "monitor", "{srv}", "OVN_Northbound", "NB_Global", "options"],
    ["-f", "list", "--no-headings", "monitor-cond", "{srv}", "T", "[true]", "A"],
    ["-d", "json", "monitor", "{srv}", "T", "A"],
]

CHANGES = [
    ["OVN_Northbound", {"op": "insert", "table": "Logical_Switch", "uuid-name": "s",
                        "row": {"name": "swm", "other_config": ["map", [["x", "1"]]]}}],
    ["OVN_Northbound", {"op": "mutate", "table": "Logical_Switch",
                        "where": [["name", "==", "swm"]],
                        "mutations": [["external_ids", "insert", ["map", [["k", "v"]]]]]}],
    ["T", {"op": "update", "table": "A", "where": [["i", "==", 10]],
           "row": {"rs": ["set", [5, 1e18]], "m1": ["map", [["z", 1]]],
                   "ms": ["map", [[9, 1.5]]]}}],
    ["OVN_Northbound", {"op": "mutate", "table": "NB_Global", "where": [],
                        "mutations": [["options", "insert", ["map", [["o", "p"]]]]]}],
    ["OVN_Northbound", {"op": "delete", "table": "Logical_Switch",
                        "where": [["name", "==", "swm"]]}],
    ["T", {"op": "delete", "table": "A", "where": [["i", "==", 10]]}],
]


def _spawn(cmd: list[str], out: Path) -> subprocess.Popen[bytes]:
    with open(out, "wb") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.PIPE)


def test_monitors(srv: ServerProcess, tmp_path: Path) -> None:
    """Every monitor variant, ours and the real one side by side, sees the same changes
    and prints the same text, update by update (ours flushes after each). The real
    server 3.1 shares one monitor between sessions asking for the same columns, and
    now and then dies of it (a signal) when ours and the real client both watch: then
    it is started again and the round runs once more."""
    for attempt in (1, 2):
        try:
            _monitor_round(srv, tmp_path / f"round{attempt}")
            return
        except AssertionError:
            died = srv.proc.poll() if srv.kind == "real" and srv.proc is not None else None
            if attempt == 2 or died is None or died >= 0:
                raise
            srv.stop()
            srv.start()


def _monitor_round(srv: ServerProcess, tmp_path: Path) -> None:
    tmp_path.mkdir()
    procs: list[tuple[subprocess.Popen[bytes], Path, Path]] = []
    try:
        for i, args in enumerate(MONITORS):
            argv = [a.format(srv=srv.unix) for a in args]
            r, o = tmp_path / f"real{i}", tmp_path / f"ours{i}"
            procs.append((_spawn(["ovsdb-client", *argv], r),
                          r, o))
            procs.append((_spawn([sys.executable, "-m", "pyovsdb", "client", *argv], o),
                          r, o))
        # Wait for the initial contents (every monitor here has some), then change.
        deadline = time.monotonic() + 15
        for p, r, o in procs:
            path = o if "pyovsdb" in p.args else r
            while path.stat().st_size == 0:
                assert p.poll() is None, p.stderr.read() if p.stderr else ""
                assert time.monotonic() < deadline, f"no initial output from {p.args}"
                time.sleep(0.02)
        initial = [(tmp_path / f"real{i}").read_text() for i in range(len(MONITORS))]
        for txn in CHANGES:
            rc, out, err = real("transact", srv.unix, orjson.dumps(txn).decode())
            assert rc == 0 and '"error"' not in out, out + err
        # Every monitor sees some of the changes: wait until the real tool has printed
        # them and ours has printed the same, and both have stopped printing.
        deadline = time.monotonic() + 10
        previous: list[str] | None = None
        while True:
            current = [(tmp_path / f"{who}{i}").read_text()
                       for i in range(len(MONITORS)) for who in ("real", "ours")]
            done = all(current[2 * i] != initial[i] and current[2 * i] == current[2 * i + 1]
                       for i in range(len(MONITORS)))
            if done and current == previous:
                break
            if time.monotonic() > deadline:
                for i, args in enumerate(MONITORS):
                    assert current[2 * i + 1] == current[2 * i], f"monitor {args} differs"
                pytest.fail("monitors did not print the changes")
            previous = current
            time.sleep(0.15)
    finally:
        stderr = []
        for p, _, _ in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            p.wait(10)
            if p.stderr is not None:
                stderr.append(re.sub(rb"^[0-9T:-]+Z", b"T", p.stderr.read()))
                p.stderr.close()
    # Both die of the signal saying so, as the real fatal_signal module does.
    assert stderr[1::2] == stderr[::2]
    assert stderr[0] == b"T|00001|fatal_signal|WARN|terminating with signal 15 (Terminated)\n"


def test_monitor_ends_when_server_goes_away(tmp_path: Path) -> None:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client")
    db = create_db("real", tmp_path / "nb.db", NB_SCHEMA)
    server = ServerProcess("real", tmp_path, [db], name="gone").start()
    try:
        cmd = ["monitor", server.unix, "NB_Global"]
        mine = subprocess.Popen([sys.executable, "-m", "pyovsdb", "client", *cmd],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        theirs = subprocess.Popen(["ovsdb-client", *cmd], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        time.sleep(0.7)
    finally:
        server.stop()
    out_o, err_o = mine.communicate(timeout=10)
    out_r, err_r = theirs.communicate(timeout=10)
    assert out_o == out_r
    assert mine.returncode == theirs.returncode == 1
    assert error_line(err_o.decode(), "pyovsdb client") == \
        error_line(err_r.decode(), "ovsdb-client")
    assert b"Traceback" not in err_o
