"""Database files next to the real ovsdb-server's and ovsdb-tool's: the same steps on both,
then the files compared byte for byte (dates and ids masked), and damaged files given to
both servers and both tools, their messages compared."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import client, dump_json

from procs import NB_SCHEMA, SB_SCHEMA, VSWITCH_SCHEMA, ServerProcess, create_db, require, run

pytestmark = pytest.mark.interop

DB = "OVN_Northbound"


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client")


def tool(kind: str, *args: str, check: bool = True, cwd: Path | None = None
         ) -> subprocess.CompletedProcess[str]:
    base = [sys.executable, "-m", "pyovsdb", "tool"] if kind == "ours" else ["ovsdb-tool"]
    p = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, cwd=cwd)
    if check and p.returncode != 0:
        raise AssertionError(f"{kind} tool {args} exited {p.returncode}: {p.stderr}")
    return p


def bodies(path: Path) -> list[bytes]:
    """The records of a file (headers dropped: they hold the length and SHA-1 of what
    is compared here), with the parts that differ between runs masked."""
    data = path.read_bytes()
    out = []
    for line in data.split(b"\n"):
        if line.startswith(b"OVSDB ") or not line:
            continue
        line = re.sub(rb'"_date":\d+', b'"_date":0', line)
        line = re.sub(rb'"eid":"[0-9a-f-]{36}"', b'"eid":"E"', line)
        out.append(line)
    return out


def U(i: int) -> str:
    return f"{i:08x}-1111-4222-8333-{i * 7919 % 10**12:012d}"


def nb_transactions() -> list[list[dict[str, Any]]]:
    """Transactions with fixed row UUIDs (the `uuid` member of insert), so that both
    servers write the same rows: several tables, many rows per table (so that members
    share hash buckets), updates, mutations, deletes, a comment."""
    first: list[dict[str, Any]] = [
        {"op": "insert", "table": "Logical_Switch", "uuid": U(i),
         "row": {"name": f"sw{i}", "external_ids": ["map", [["k", "v"], ["a", str(i)]]]}}
        for i in range(1, 12)]
    first += [{"op": "insert", "table": "Logical_Switch_Port", "uuid": U(100 + i),
               "row": {"name": f"lsp{i}", "enabled": True,
                       "addresses": ["set", ["00:00:00:00:00:01", "dynamic"]]}}
              for i in range(5)]
    first.append({"op": "mutate", "table": "Logical_Switch",
                  "where": [["_uuid", "==", ["uuid", U(1)]]],
                  "mutations": [["ports", "insert",
                                 ["set", [["uuid", U(100 + i)] for i in range(5)]]]]})
    first.append({"op": "comment", "comment": "first"})
    return [
        first,
        [{"op": "update", "table": "Logical_Switch", "where": [],
          "row": {"other_config": ["map", [["x", "y"]]]}}],
        [{"op": "delete", "table": "Logical_Switch", "where": [["name", "==", "sw3"]]},
         {"op": "update", "table": "Logical_Switch_Port", "where": [["name", "==", "lsp2"]],
          "row": {"type": "router", "options": ["map", [["router-port", "p"]]]}}],
        [{"op": "insert", "table": "NB_Global", "uuid": U(999), "row": {"nb_cfg": 3}},
         {"op": "insert", "table": "ACL", "uuid": U(500),
          "row": {"priority": 10, "direction": "to-lport", "match": "1", "action": "drop"}},
         {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw4"]],
          "mutations": [["acls", "insert", ["uuid", U(500)]]]}],
    ]


def run_transactions(srv: ServerProcess, db: str = DB) -> None:
    for ops in nb_transactions():
        res = json.loads(client("transact", srv.unix, json.dumps([db, *ops])).stdout)
        assert not any(r and "error" in r for r in res), res


@pytest.mark.parametrize("schema", [NB_SCHEMA, SB_SCHEMA, VSWITCH_SCHEMA])
def test_tool_create_writes_the_real_bytes(tmp_path: Path, schema: str) -> None:
    """The normalized schema, every object's members in the real tool's hash order."""
    files = {}
    for kind in ("ours", "real"):
        files[kind] = tmp_path / f"{kind}.db"
        tool(kind, "create", str(files[kind]), schema)
    assert files["ours"].read_bytes() == files["real"].read_bytes()


@pytest.fixture
def nb_pair(tmp_path: Path) -> Iterator[dict[str, ServerProcess]]:
    pair: dict[str, ServerProcess] = {}
    try:
        for kind in ("ours", "real"):
            d = tmp_path / kind
            d.mkdir()
            db = create_db(kind, d / "nb.db", NB_SCHEMA)
            pair[kind] = ServerProcess(kind, d, [db], name="s").start()
        yield pair
    finally:
        for srv in pair.values():
            srv.stop()


def test_records_byte_for_byte(nb_pair: dict[str, ServerProcess]) -> None:
    """Transaction records, the online compaction's snapshot and `tool compact`'s, each
    with the real server's member order (`"_is_diff":true` where the real one puts it,
    rows and columns in its hash order)."""
    for srv in nb_pair.values():
        run_transactions(srv)
    files = {kind: Path(srv.dbs[0]) for kind, srv in nb_pair.items()}
    ours, real = bodies(files["ours"]), bodies(files["real"])
    assert len(real) == 5
    assert ours == real

    for srv in nb_pair.values():
        srv.appctl("ovsdb-server/compact")
    ours, real = bodies(files["ours"]), bodies(files["real"])
    assert len(real) == 2 and b'"_comment":"compacting database online"' in real[1]
    assert ours == real
    # What the compaction logs (the time it took only at debug level when short).
    logged = {kind: [line.split("|", 2)[2] for line in Path(srv.logfile).read_text()
                     .splitlines() if "compact" in line]
              for kind, srv in nb_pair.items()}
    assert logged["real"] == ["ovsdb_server|INFO|compacting OVN_Northbound database by "
                              "user request"]
    assert logged["ours"] == logged["real"]

    for kind, srv in nb_pair.items():
        srv.stop()
        tool(kind, "compact", str(files[kind]))
    # The comment names the tool ("compacted by ovsdb-tool 3.1.0").
    ours, real = ([re.sub(rb'"_comment":"[^"]*"', b'"_comment":"C"', b) for b in bodies(f)]
                  for f in (files["ours"], files["real"]))
    assert ours == real


def _last_entry(path: Path) -> bytes:
    return [b for b in bodies(path) if b'"data":' in b and b'"eid"' in b][-1]


def test_clustered_entries_as_the_real_server_writes_them(tmp_path: Path) -> None:
    """A clustered entry: the record's members in hash order, its data with members
    sorted (the real server serializes entry data sorted)."""
    srvs: list[ServerProcess] = []
    files = {}
    try:
        for kind in ("ours", "real"):
            d = tmp_path / kind
            d.mkdir()
            files[kind] = d / "nb.db"
            tool(kind, "create-cluster", str(files[kind]), NB_SCHEMA,
                 f"unix:{d / 'raft.sock'}")
            srv = ServerProcess(kind, d, [str(files[kind])], name="s")
            srvs.append(srv)
            srv.start()
            for ops in nb_transactions()[:2]:
                out = client("transact", srv.unix, json.dumps([DB, *ops])).stdout
                assert "error" not in out, out
        for srv in srvs:
            srv.stop()
        ours, real = _last_entry(files["ours"]), _last_entry(files["real"])
        assert real.startswith(b'{"eid":"E","data":[null,{"Logical_Switch":')
        assert re.sub(rb'"index":\d+', b"", ours) == re.sub(rb'"index":\d+', b"", real)
    finally:
        for srv in srvs:
            srv.stop()


# ---------------------------------------------------------------------------------------
# Damaged files.


def _record(body: bytes) -> bytes:
    return b"OVSDB JSON %d %s\n%s" % (len(body), hashlib.sha1(body).hexdigest().encode(),
                                       body)


IDX_SCHEMA = {"name": "Idx", "version": "1.0.0",
              "tables": {"T": {"columns": {"name": {"type": "string"},
                                           "a": {"type": "integer"}}}}}
ROW1 = b'{"_date":1,"T":{"278cad76-4e0c-4c6e-989c-a357c99f5a34":{"name":"x","a":2}},' \
       b'"_is_diff":true}\n'
UNKNOWN = b'{"_date":2,"Nope":{"54f49e28-d7e6-4062-acdd-e6bf358d16c7":{"name":"y"}},' \
          b'"_is_diff":true}\n'
ROW3 = b'{"_date":3,"T":{"54f49e28-d7e6-4062-acdd-e6bf358d16c8":{"name":"q","a":7}},' \
       b'"_is_diff":true}\n'


def damaged(kind: str, base: bytes) -> bytes:
    good = base + _record(ROW1)
    if kind == "header":
        return base + b"xxx\n" + ROW1
    if kind == "unknown-table":
        return good + _record(UNKNOWN) + _record(ROW3)
    if kind == "torn":
        return good + _record(ROW3)[:-20]
    if kind == "sha1":
        head, body = _record(ROW3).split(b"\n", 1)
        return good + head[:-40] + b"0" * 40 + b"\n" + body
    if kind == "bad-length":
        # The real reader quotes such a line only up to its magic.
        return good + b"OVSDB JSON 9x9 " + b"0" * 40 + b"\n" + ROW3
    if kind == "clustered-magic":
        return good + _record(ROW3).replace(b"OVSDB JSON", b"OVSDB CLUSTER", 1)
    raise AssertionError(kind)


DAMAGES = ["header", "unknown-table", "torn", "sha1", "bad-length", "clustered-magic"]


def _errors(log: str) -> list[str]:
    """The distinct ERR lines of the ovsdb_server module, in order."""
    out: list[str] = []
    for line in log.splitlines():
        parts = line.split("|", 4)
        if len(parts) == 5 and parts[2] == "ovsdb_server" and parts[3] == "ERR" \
                and parts[4] not in out:
            out.append(parts[4])
    return out


@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_file_served_as_the_real_server_does(tmp_path: Path, damage: str) -> None:
    """Same error logged (file named as given), same rows served: what could be read,
    less a record naming an unknown table."""
    schema = tmp_path / "idx.ovsschema"
    schema.write_text(json.dumps(IDX_SCHEMA))
    base = tmp_path / "base.db"
    tool("real", "create", str(base), str(schema))
    seen = {}
    for kind in ("ours", "real"):
        d = tmp_path / kind
        d.mkdir()
        (d / "w.db").write_bytes(damaged(damage, base.read_bytes()))
        srv = ServerProcess(kind, d, ["w.db"], name="s")
        try:
            srv.start()
            rows = dump_json(srv.unix, "Idx")
            log = Path(srv.logfile).read_text()
        finally:
            srv.stop()
        seen[kind] = (_errors(log), [sorted(map(json.dumps, t["data"])) for t in rows])
    assert seen["real"][0], "the real server logged no error"
    assert seen["ours"] == seen["real"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_file_read_by_the_tool_as_the_real_tool_does(tmp_path: Path, damage: str
                                                            ) -> None:
    """`tool query` fails on any record it cannot read or apply, with the real tool's
    message; `tool show-log` lists what it can and fails only on unreadable records."""
    schema = tmp_path / "idx.ovsschema"
    schema.write_text(json.dumps(IDX_SCHEMA))
    base = tmp_path / "base.db"
    tool("real", "create", str(base), str(schema))
    (tmp_path / "w.db").write_bytes(damaged(damage, base.read_bytes()))
    query = json.dumps(["Idx", {"op": "select", "table": "T", "where": [],
                                "columns": ["name"]}])
    seen = {}
    for kind in ("ours", "real"):
        q = tool(kind, "query", "w.db", query, check=False, cwd=tmp_path)
        s = tool(kind, "show-log", "w.db", check=False, cwd=tmp_path)
        prefix = "pyovsdb tool: " if kind == "ours" else "ovsdb-tool: "
        seen[kind] = (q.returncode, q.stderr.replace(prefix, "T: "), q.stdout,
                      s.returncode, s.stdout)
    assert seen["real"][0] == 1
    assert seen["ours"] == seen["real"]


def test_server_appends_after_a_dropped_record(tmp_path: Path) -> None:
    """Our server goes on after a record naming an unknown table and appends after the
    last record; every row it acknowledged is there after a restart (the real one
    writes over the record after the dropped one)."""
    schema = tmp_path / "idx.ovsschema"
    schema.write_text(json.dumps(IDX_SCHEMA))
    path = tmp_path / "w.db"
    tool("ours", "create", str(path), str(schema))
    path.write_bytes(damaged("unknown-table", path.read_bytes()))
    for i in range(2):
        srv = ServerProcess("ours", tmp_path, ["w.db"], name="s")
        try:
            srv.start()
            out = client("transact", srv.unix, json.dumps(["Idx", {
                "op": "insert", "table": "T", "row": {"name": f"n{i}", "a": 1}}])).stdout
            assert "error" not in out
            table = dump_json(srv.unix, "Idx")[0]
            col = table["headings"].index("name")
            names = sorted(r[col] for r in table["data"])
        finally:
            srv.stop()
    assert names == ["n0", "n1", "q", "x"]
    run(["ovsdb-tool", "show-log", str(path)])


@pytest.mark.parametrize("kind", ["ours", "real"])
def test_compaction_keeps_a_symlink(tmp_path: Path, kind: str) -> None:
    """Online compaction and `tool compact` replace the file a symlinked database path
    points to, and lock it next to that file: the link stays a link."""
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "nb.db"
    create_db(kind, target, NB_SCHEMA)
    link = tmp_path / "nb.db"
    link.symlink_to("data/nb.db")
    srv = ServerProcess(kind, tmp_path, ["nb.db"], name="s")
    try:
        srv.start()
        assert (tmp_path / "data" / ".nb.db.~lock~").exists()
        run_transactions(srv)
        srv.appctl("ovsdb-server/compact")
        assert link.is_symlink() and len(bodies(target)) == 2
        out = client("transact", srv.unix, json.dumps([DB, {
            "op": "insert", "table": "Logical_Switch", "row": {"name": "after"}}])).stdout
        assert "error" not in out
    finally:
        srv.stop()
    assert link.is_symlink() and len(bodies(target)) == 3
    tool(kind, "compact", "nb.db", cwd=tmp_path)
    assert link.is_symlink() and len(bodies(target)) == 2
    assert not list(tmp_path.glob("*.tmp")) and not list((tmp_path / "data").glob("*.tmp"))


def test_damaged_clustered_file_logged_as_the_real_server(tmp_path: Path) -> None:
    """A clustered file with a torn last record: the same warning (module raft), and
    the member goes on as leader of its one-server cluster."""
    seen = {}
    for kind in ("ours", "real"):
        d = tmp_path / kind
        d.mkdir()
        tool(kind, "create-cluster", str(d / "nb.db"), NB_SCHEMA, f"unix:{d / 'r.sock'}")
        with open(d / "nb.db", "ab") as f:
            f.write(b"OVSDB CLUSTER 50 0000")
        srv = ServerProcess(kind, d, ["nb.db"], name="s")
        try:
            srv.start()
            assert json.loads(client("transact", srv.unix, json.dumps(
                [DB, {"op": "insert", "table": "NB_Global", "row": {}}])).stdout)[0]["uuid"]
            log = Path(srv.logfile).read_text()
        finally:
            srv.stop()
        seen[kind] = [re.sub(r"offset \d+", "offset N", line.split("|", 2)[2])
                      for line in log.splitlines()
                      if ("|WARN|" in line or "|ERR|" in line) and "fatal_signal" not in line]
    assert seen["real"] == ['raft|WARN|syntax error: nb.db: parse error at offset N in '
                            'header line "OVSDB CLUSTER"']
    assert seen["ours"] == seen["real"]


@pytest.mark.parametrize("contents", [b"", b"garbage\n",
                                      b"OVSDB CLUSTER 3 " + b"0" * 40 + b"\n{}\n"])
def test_tool_on_files_that_are_no_database(tmp_path: Path, contents: bytes) -> None:
    """Empty, foreign and clustered-but-broken files: every command's message and
    status as the real tool's."""
    (tmp_path / "w.db").write_bytes(contents)
    seen = {}
    for kind in ("ours", "real"):
        out = []
        for args in (["show-log", "w.db"], ["db-name", "w.db"], ["compact", "w.db"],
                     ["query", "w.db", '["x"]']):
            p = tool(kind, *args, check=False, cwd=tmp_path)
            out.append((args[0], p.returncode, p.stdout,
                        p.stderr.replace("pyovsdb tool: ", "ovsdb-tool: ")))
        seen[kind] = out
    assert seen["ours"] == seen["real"]


def test_cluster_files_made_by_the_tool(tmp_path: Path) -> None:
    """`create-cluster` and `join-cluster` files byte for byte as the real tool's, ids
    masked (a joiner's remote addresses in the real tool's set order)."""
    uuid = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    seen = {}
    for kind in ("ours", "real"):
        d = tmp_path / kind
        d.mkdir()
        tool(kind, "create-cluster", str(d / "c.db"), NB_SCHEMA, "unix:/x/a.sock")
        tool(kind, "join-cluster", str(d / "j.db"), DB, "unix:/x/a.sock",
             "unix:/x/b.sock", "unix:/x/c.sock", "unix:/x/d.sock")
        tool(kind, "join-cluster", "--cid=11111111-2222-4333-8444-555555555555",
             str(d / "k.db"), DB, "unix:/x/a.sock", "unix:/x/b.sock")
        seen[kind] = [uuid.sub(b"U", b"".join(bodies(d / f))) for f in ("c.db", "j.db",
                                                                        "k.db")]
    assert seen["ours"] == seen["real"]
