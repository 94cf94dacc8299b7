"""Bytes that are not UTF-8 inside JSON strings, side by side with the real ovsdb-server:
where such a string is a column value the transaction fails with the real server's
constraint violation and the session goes on; elsewhere the bytes come back as sent;
in a JSON-RPC member name they end the session.

The replies are read with our own stream framing, which keeps such bytes (as lone
surrogates), and compared modulo UUIDs and member order (docs/compat.md).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from interop_helpers import label_uuids

from procs import NB_SCHEMA, ServerProcess, require
from pyovsdb.jsonrpc.stream import JsonStream

DB = "OVN_Northbound"


def insert(i: int, row: bytes, table: bytes = b"Logical_Switch") -> bytes:
    return (b'{"id":%d,"method":"transact","params":["OVN_Northbound",{"op":"insert",'
            b'"table":"%s","row":%s}]}' % (i, table, row))


REQUESTS = [
    insert(1, b'{"name":"a\xff\xfeb"}'),
    b'{"id":2,"method":"echo","params":["a\xffb", "\xc0\xaf", "\\udcff"]}',
    insert(3, b'{"name":"\xc0\xaf"}'),
    insert(4, b'{"name":"\xed\xa0\x80"}'),
    insert(5, b'{"name":"\\udcff\\ud800\\udc00"}'),
    insert(6, b'{"name":"x\xc3"}'),
    insert(7, b'{"name":"\xf4\x90\x80\x80"}'),
    insert(8, b'{"name":"ok","external_ids":["map",[["k","v"],["k2","v\xff"]]]}'),
    insert(9, b'{"name":"p","type":"x\xff"}', b"Logical_Switch_Port"),
    insert(10, b"{}", b"Logical_Switch\xff"),
    b'{"id":11,"method":"transact","params":["OVN_Northbound",{"op":"select",'
    b'"table":"Logical_Switch","where":[["name","==","a\xff"]]}]}',
    b'{"id":12,"method":"lock","params":["l\xff"]}',
    b'{"id":13,"method":"monitor","params":["OVN_Northbound","m\xff",'
    b'{"Logical_Switch":{"columns":["name"]}}]}',
    b'{"id":14,"method":"transact","params":["OVN_Northbound",{"op":"insert",'
    b'"table":"Logical_Switch","row":{"name":"sw0"}},{"op":"comment","comment":"c\xffd"}]}',
    b'{"id\xff":15,"method":"echo","params":[]}',
]


def exchange(srv: ServerProcess) -> list[Any]:
    """Each request's messages (the reply, and the updates sent before it), or
    "closed" where the server ended the session."""
    out: list[Any] = []
    stream = JsonStream()
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(srv.sock)
        for req in REQUESTS:
            s.sendall(req)
            got: list[Any] = []
            while not got or "id" not in got[-1] or got[-1]["id"] is None:
                data = s.recv(65536)
                if not data:
                    got.append("closed")
                    break
                got += stream.feed(data)
            out.append(got)
    return label_uuids(out)


def test_strings_that_are_not_utf8(server_pair: Callable[[str], dict[str, ServerProcess]]
                                   ) -> None:
    require("ovsdb-tool")
    pair = server_pair(NB_SCHEMA)
    seen = {kind: exchange(srv) for kind, srv in pair.items()}
    assert seen["ours"] == seen["real"]
    got = seen["real"]
    violation = "not a valid UTF-8 string: invalid UTF-8 sequence "
    details = [r[0]["result"][0].get("details") for r in got[:11] if r[0]["id"] != 2]
    assert details == [violation + "0xff", violation + "0xc0", violation + "0xed 0xa0",
                       violation + "0xed 0xb3", violation + "0xc3 0x00",
                       violation + "0xf4 0x90", violation + "0xff", violation + "0xff",
                       "Parsing ovsdb operation 1 of 1 failed: Type mismatch for member "
                       "'table'.", violation + "0xff"]
    assert got[1] == [{"id": 2, "result": ["a\udcffb", "\udcc0\udcaf", "\udced\udcb3\udcbf"],
                      "error": None}]
    assert got[13][0]["params"][0] == "m\udcff"  # the update for the monitor's id
    assert got[-1] == ["closed"]
    # The comment goes into the file with its bytes as they came, on both servers; each
    # tool reads each file whole: the row of that transaction is there, and show-log
    # prints the comment's bytes.
    tools = {"real": ["ovsdb-tool"], "ours": [sys.executable, "-m", "pyovsdb", "tool"]}
    for kind, srv in pair.items():
        for tool_kind, tool in tools.items():
            log = subprocess.run([*tool, "show-log", srv.dbs[0]], capture_output=True,
                                 timeout=30, check=True).stdout
            assert b'"c\xffd"' in log, (kind, tool_kind, log)
            rows = subprocess.run([*tool, "query", srv.dbs[0], json.dumps(
                [DB, {"op": "select", "table": "Logical_Switch", "where": [],
                      "columns": ["name"]}])], capture_output=True, timeout=30,
                check=True).stdout
            assert json.loads(rows)[0]["rows"] == [{"name": "sw0"}], (kind, tool_kind, rows)
    # and a server of either kind serves the other's file with that row in it
    for kind, srv in pair.items():
        other = "real" if kind == "ours" else "ours"
        copy = srv.workdir / f"copy-for-{other}.db"
        shutil.copyfile(srv.dbs[0], copy)
        with ServerProcess(other, srv.workdir, [str(copy)], name=f"reader-{other}") as r:
            got = subprocess.run(["ovsdb-client", "dump", r.unix, DB, "Logical_Switch",
                                  "name"], capture_output=True, text=True, timeout=30,
                                 check=True).stdout
            assert "sw0" in got, (kind, other, got)
