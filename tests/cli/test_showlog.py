"""`pyovsdb tool show-log` against the real `ovsdb-tool show-log`, with no, one and two
-m, on standalone and clustered files written by the real tools, by ours, and by hand
(odd but readable records, malformed raft records, a torn tail)."""

from __future__ import annotations

import io
import subprocess
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import orjson
import pytest

from procs import NB_SCHEMA, ServerProcess, require
from pyovsdb.cli import tool
from pyovsdb.cli.showlog import show_log
from pyovsdb.storage import log as ovslog

pytestmark = pytest.mark.interop


def real_show_log(path: Path, more: int) -> tuple[int, str, str]:
    p = subprocess.run(["ovsdb-tool", *(["-m"] * more), "show-log", str(path)],
                       capture_output=True, encoding="utf-8", timeout=30)
    return p.returncode, p.stdout, p.stderr


def ours_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = tool.main(list(args))
    return rc, out.getvalue(), err.getvalue()


def check_same(path: Path) -> None:
    for more in (0, 1, 2):
        rc, want, err = real_show_log(path, more)
        assert rc == 0, err
        assert show_log(str(path), more) == want, f"-m x{more} differs for {path.name}"


def ovsdb_tool(*args: str) -> str:
    p = subprocess.run(["ovsdb-tool", *args], capture_output=True, encoding="utf-8",
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


def U(n: int) -> str:
    return f"{n:08x}-0000-0000-0000-000000000000"


TXNS: list[list[Any]] = [
    ["OVN_Northbound",
     {"op": "insert", "table": "NB_Global", "row": {}},
     {"op": "insert", "table": "Logical_Switch", "uuid-name": "s",
      "row": {"name": "sw0", "external_ids": ["map", [["x y", "1"], ["a", "true"]]],
              "ports": ["named-uuid", "p"]}},
     {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
      "row": {"name": "p1", "addresses": ["set", ["00:00:00:00:00:01", "dynamic"]]}},
     {"op": "insert", "table": "ACL", "row": {"priority": 1, "direction": "to-lport",
                                              "match": "1", "action": "drop"}},
     {"op": "comment", "comment": "first \"one\""}],
    ["OVN_Northbound",
     {"op": "update", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
      "row": {"name": "renamed", "other_config": ["map", [["k", "v"]]]}},
     {"op": "insert", "table": "Logical_Switch", "row": {"name": "a\u001fb\"é  "}}],
    ["OVN_Northbound",
     {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "renamed"]],
      "mutations": [["external_ids", "delete", ["set", ["a"]]]]},
     {"op": "delete", "table": "ACL", "where": []}],
    ["OVN_Northbound",
     {"op": "delete", "table": "Logical_Switch", "where": [["name", "!=", "renamed"]]}],
]


def test_standalone_written_by_real_tool(tmp_path: Path) -> None:
    require("ovsdb-tool")
    db = tmp_path / "real.db"
    ovsdb_tool("create", str(db), NB_SCHEMA)
    for txn in TXNS:
        ovsdb_tool("transact", str(db), orjson.dumps(txn).decode())
    check_same(db)
    ovsdb_tool("compact", str(db))
    check_same(db)


def test_standalone_written_by_our_tool(tmp_path: Path) -> None:
    require("ovsdb-tool")
    db = tmp_path / "ours.db"
    assert ours_cli("create", str(db), NB_SCHEMA)[0] == 0
    for txn in TXNS:
        rc, out, err = ours_cli("transact", str(db), orjson.dumps(txn).decode())
        assert rc == 0 and '"error"' not in out, out + err
    check_same(db)
    assert ours_cli("compact", str(db))[0] == 0
    check_same(db)


def test_cli_output_and_status(tmp_path: Path) -> None:
    require("ovsdb-tool")
    db = tmp_path / "db"
    ovsdb_tool("create", str(db), NB_SCHEMA)
    ovsdb_tool("transact", str(db), orjson.dumps(TXNS[0]).decode())
    for more in (0, 1, 2):
        rc, out, err = ours_cli(*(["--more"] * more), "show-log", str(db))
        assert (rc, out, err) == (0, real_show_log(db, more)[1], "")
    rc, out, err = ours_cli("-mm", "show-log", str(db))
    assert (rc, out) == (0, real_show_log(db, 2)[1])


def write_log(path: Path, records: list[Any], magic: str = ovslog.MAGIC_STANDALONE) -> None:
    path.write_bytes(b"".join(ovslog.frame(r, magic) for r in records))


def test_standalone_odd_records(tmp_path: Path) -> None:
    """Records the real tool reads without complaint though no server writes them."""
    require("ovsdb-tool")
    schema = orjson.loads(Path(NB_SCHEMA).read_bytes())
    db = tmp_path / "odd.db"
    write_log(db, [
        schema,
        {"_date": 1234567, "_comment": 'say "hi"\n', "_extra": 5, "ACL": 5,
         "Logical_Switch": {
             U(1): {"name": "a", "other_config": ["map", [["k", "v"]]],
                    "ports": ["set", [["uuid", U(9)], ["uuid", U(8)]]]},
             U(2): {"ports": ["uuid", U(3)]}},
         "Nope": {U(4): {"x": 1, "name": ["set", []]}}},
        {"_date": 1.7e12, "Logical_Switch": {U(1): {"name": "b", "acls": "bogus"},
                                             U(2): {"name": "c"}, U(5): 5}},
        {"_is_diff": True, "Logical_Switch": {
            U(1): {"name": "b", "external_ids": ["map", [["x", "1"]]]},
            U(2): None, U(1234): None}},
        {"_date": "x", "_comment": 5},
        {},
        {"Logical_Switch": {U(2): {"name": "c2"}}, "NB_Global": {U(7): {}}},
    ])
    check_same(db)


def test_cluster_headers_and_records(tmp_path: Path) -> None:
    require("ovsdb-tool")
    created = tmp_path / "created.db"
    ovsdb_tool("create-cluster", str(created), NB_SCHEMA, "tcp:127.0.0.1:6641")
    check_same(created)
    joining = tmp_path / "joining.db"
    ovsdb_tool("join-cluster", str(joining), "OVN_Northbound", "tcp:127.0.0.1:6644",
               "tcp:127.0.0.1:6641", "tcp:127.0.0.1:6642", "tcp:127.0.0.1:6643",
               "tcp:127.0.0.1:6642")
    check_same(joining)
    with_cid = tmp_path / "cid.db"
    ovsdb_tool("--cid=d5630000-0000-0000-0000-000000000000", "join-cluster", str(with_cid),
               "OVN_Northbound", "tcp:127.0.0.1:6645", "tcp:127.0.0.1:6641")
    check_same(with_cid)

    sid = "abcd0000-0000-0000-0000-000000000000"
    crafted = tmp_path / "crafted.db"
    write_log(crafted, [
        {"name": "OVN_Northbound", "local_address": "tcp:127.0.0.1:1", "server_id": sid,
         "cluster_id": U(0),
         "remote_addresses": ["tcp:a:1", "tcp:127.0.0.1:1", "tcp:b:2", "tcp:a:1"]},
        {"note": "transfer leadership", "comment": "c"},
        {"term": 3, "comment": "hi", "index": 9,
         "servers": {"1234aaaa-0000-0000-0000-000000000000": "tcp:1.2.3.4:1",
                     "0000bbbb-0000-0000-0000-000000000000": "unix:x"}},
        {"commit_index": 7, "comment": "c"},
        {"term": 0},
        {"term": 1, "leader": sid},
        {"term": 1, "index": 2, "election_timer": 1000},
        {"term": 4, "index": 10, "eid": "cafe0000-0000-0000-0000-000000000000",
         "data": [None, {"_date": 1234567, "_comment": "old",
                         "Logical_Switch": {U(1): {"name": "x"}}}]},
        # Malformed: each is reported in the real tool's words and listing goes on.
        {"term": 2, "note": "x"},
        {"foo": 1},
        {"term": 1, "vote": sid, "extra": 1, "more": 2},
        {"term": "x"},
        {"commit_index": 3, "term": 1},
        {"term": 1, "index": 2, "data": [None, {}]},
        {"term": 1, "leader": U(0)},
    ], ovslog.MAGIC_CLUSTERED)
    check_same(crafted)
    bad_header = tmp_path / "bad_header.db"
    write_log(bad_header, [{"name": "x", "server_id": sid, "local_address": "a", "zz": 1},
                           {"term": 1}], ovslog.MAGIC_CLUSTERED)
    check_same(bad_header)


def test_cluster_written_by_real_server(tmp_path: Path) -> None:
    require("ovsdb-tool", "ovsdb-server", "ovsdb-client")
    db = tmp_path / "c.db"
    ovsdb_tool("create-cluster", str(db), NB_SCHEMA, "tcp:127.0.0.1:6699")
    server = ServerProcess("real", tmp_path, [str(db)], name="c").start()
    try:
        deadline = time.monotonic() + 10
        for txn in TXNS:
            while True:  # until the one-server cluster has elected itself
                p = subprocess.run(["ovsdb-client", "transact", server.unix,
                                    orjson.dumps(txn).decode()],
                                   capture_output=True, encoding="utf-8", timeout=30)
                if p.returncode == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert p.returncode == 0, p.stderr
    finally:
        server.stop()
    check_same(db)


def test_torn_tail(tmp_path: Path) -> None:
    require("ovsdb-tool")
    db = tmp_path / "torn.db"
    ovsdb_tool("create", str(db), NB_SCHEMA)
    for txn in TXNS:
        ovsdb_tool("transact", str(db), orjson.dumps(txn).decode())
    db.write_bytes(db.read_bytes()[:-20])
    for more in (0, 2):
        rc_r, out_r, err_r = real_show_log(db, more)
        rc_o, out_o, err_o = ours_cli(*(["-m"] * more), "show-log", str(db))
        assert (rc_o, out_o) == (rc_r, out_r) == (1, out_r)
        assert err_r == "ovsdb-tool: " + err_o.removeprefix("pyovsdb tool: ")
        assert err_r.startswith("ovsdb-tool: I/O error: ")


def test_not_an_object(tmp_path: Path) -> None:
    require("ovsdb-tool")
    db = tmp_path / "array.db"
    write_log(db, [orjson.loads(Path(NB_SCHEMA).read_bytes()), {"_date": 1}, [1, 2]])
    rc_r, out_r, err_r = real_show_log(db, 1)
    rc_o, out_o, err_o = ours_cli("-m", "show-log", str(db))
    assert (rc_o, out_o) == (rc_r, out_r) == (1, out_r)
    assert err_r == "ovsdb-tool: " + err_o.removeprefix("pyovsdb tool: ")
    assert err_r.startswith("ovsdb-tool: syntax error: ")
