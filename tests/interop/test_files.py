"""Database files both ways: files written by the real ovsdb-server / ovsdb-tool served by
ours, files written by ours read by the real tools and served by the real server, and
damaged files (torn tail, garbage, bad checksum)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import dump_json, nbctl, transact

from procs import NB_SCHEMA, ServerProcess, create_db, require, run

pytestmark = pytest.mark.interop

DB = "OVN_Northbound"


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl")


def serve(kind: str, path: Path, name: str | None = None) -> ServerProcess:
    return ServerProcess(kind, path.parent, [str(path)], name=name or f"{kind}-srv").start()


def dump_with(kind: str, path: Path) -> list[dict[str, Any]]:
    """The whole database as `ovsdb-client -f json dump` sees it through `kind`'s server."""
    srv = serve(kind, path)
    try:
        return dump_json(srv.unix, DB)
    finally:
        srv.stop()


def tool(*args: str, check: bool = True) -> Any:
    return run(["ovsdb-tool", *args], check=check)


def our_tool(*args: str, check: bool = True) -> Any:
    return run([sys.executable, "-m", "pyovsdb", "tool", *args], check=check)


def query(path: Path, table: str, columns: list[str], runner: Any = tool) -> list[Any]:
    p = runner(
        "query",
        str(path),
        json.dumps(
            [
                DB,
                {
                    "op": "select",
                    "table": table,
                    "where": [],
                    "columns": columns,
                    "sort": [columns[0]],
                },
            ]
        ),
    )
    return json.loads(p.stdout)[0]["rows"]


def n_records(path: Path) -> int:
    return tool("show-log", str(path)).stdout.count("record ")


def grow(srv: ServerProcess) -> None:
    """Inserts, modifications (sets, maps, references) and deletions."""
    nbctl(srv, "ls-add", "sw0", "--", "ls-add", "sw1", "--", "ls-add", "sw2")
    nbctl(
        srv, "lsp-add", "sw0", "p0", "--", "lsp-set-addresses", "p0", "00:00:00:00:00:01 10.0.0.1"
    )
    nbctl(srv, "lsp-add", "sw0", "p1")
    nbctl(srv, "set", "Logical_Switch", "sw1", "external_ids:a=1", "other_config:b=2")
    nbctl(srv, "set", "Logical_Switch", "sw1", "external_ids:a=3")
    nbctl(srv, "acl-add", "sw0", "to-lport", "1000", 'outport == "p0"', "drop")
    nbctl(srv, "lsp-del", "p1")
    nbctl(srv, "ls-del", "sw2")
    nbctl(
        srv,
        "lr-add",
        "lr0",
        "--",
        "lrp-add",
        "lr0",
        "lrp0",
        "00:00:00:00:ff:01",
        "10.0.0.254/24",
        "fd00::1/64",
    )
    nbctl(srv, "lb-add", "lb0", "30.0.0.1:80", "10.0.0.1:8080,10.0.0.2:8080", "tcp")
    nbctl(srv, "ls-lb-add", "sw0", "lb0")
    transact(
        srv,
        {
            "op": "insert",
            "table": "Address_Set",
            "row": {"name": "as1", "addresses": ["set", ["10.0.0.1", "10.0.0.2"]]},
        },
        {"op": "comment", "comment": "a comment"},
    )
    transact(
        srv,
        {
            "op": "mutate",
            "table": "Address_Set",
            "where": [],
            "mutations": [["addresses", "delete", "10.0.0.1"]],
        },
    )


EXPECTED_SWITCHES = [
    {"name": "sw0", "external_ids": ["map", []]},
    {"name": "sw1", "external_ids": ["map", [["a", "3"]]]},
]


def make_db(kind: str, tmp_path: Path, name: str = "nb.db") -> Path:
    path = tmp_path / name
    create_db(kind, path, NB_SCHEMA)
    srv = serve(kind, path, "grow")
    try:
        grow(srv)
    finally:
        srv.stop()
    return path


# ---------------------------------------------------------------------------------------
# Real -> ours.


@pytest.mark.parametrize("compaction", ["none", "ovsdb-tool", "online"])
def test_real_file_served_by_ours(tmp_path: Path, compaction: str) -> None:
    path = tmp_path / "nb.db"
    create_db("real", path, NB_SCHEMA)
    srv = serve("real", path, "grow")
    try:
        grow(srv)
        if compaction == "online":
            srv.appctl("ovsdb-server/compact")
    finally:
        srv.stop()
    if compaction == "ovsdb-tool":
        tool("compact", str(path))
    if compaction != "none":
        assert n_records(path) == 2
    real = dump_with("real", path)
    ours = dump_with("ours", path)
    assert ours == real
    switches = next(t for t in ours if t["caption"] == "Logical_Switch table")
    assert sorted(r[switches["headings"].index("name")] for r in switches["data"]) == ["sw0", "sw1"]


def test_real_tool_transact_file_served_by_ours(tmp_path: Path) -> None:
    """Records written by `ovsdb-tool transact` (no server involved)."""
    path = tmp_path / "nb.db"
    create_db("real", path, NB_SCHEMA)
    tool(
        "transact",
        str(path),
        json.dumps(
            [
                DB,
                {
                    "op": "insert",
                    "table": "Logical_Switch",
                    "row": {"name": "t0"},
                    "uuid-name": "s",
                },
                {
                    "op": "insert",
                    "table": "Logical_Switch_Port",
                    "row": {"name": "tp"},
                    "uuid-name": "p",
                },
                {
                    "op": "mutate",
                    "table": "Logical_Switch",
                    "where": [["name", "==", "t0"]],
                    "mutations": [["ports", "insert", ["set", [["named-uuid", "p"]]]]],
                },
            ]
        ),
    )
    tool(
        "transact",
        str(path),
        json.dumps(
            [
                DB,
                {
                    "op": "update",
                    "table": "Logical_Switch",
                    "where": [],
                    "row": {"external_ids": ["map", [["k", "v"]]]},
                },
            ]
        ),
    )
    assert dump_with("ours", path) == dump_with("real", path)
    srv = serve("ours", path)
    try:
        assert nbctl(srv, "lsp-list", "t0").stdout.endswith("(tp)\n")
    finally:
        srv.stop()


def test_alternating_writers(tmp_path: Path) -> None:
    """Real, ours, real, ours each append to the same file; every reader agrees."""
    path = tmp_path / "nb.db"
    create_db("real", path, NB_SCHEMA)
    for i, kind in enumerate(["real", "ours", "real", "ours"]):
        srv = serve(kind, path)
        try:
            nbctl(
                srv,
                "ls-add",
                f"by-{kind}-{i}",
                "--",
                "set",
                "Logical_Switch",
                f"by-{kind}-{i}",
                f"external_ids:step={i}",
            )
            if i:
                nbctl(
                    srv,
                    "set",
                    "Logical_Switch",
                    f"by-{['real', 'ours'][(i - 1) % 2]}-{i - 1}",
                    f"other_config:touched-by={kind}",
                )
        finally:
            srv.stop()
    assert n_records(path) == 1 + 4 + 3
    assert dump_with("ours", path) == dump_with("real", path)
    rows = query(path, "Logical_Switch", ["name", "other_config"])
    assert rows == [
        {"name": "by-ours-1", "other_config": ["map", [["touched-by", "real"]]]},
        {"name": "by-ours-3", "other_config": ["map", []]},
        {"name": "by-real-0", "other_config": ["map", [["touched-by", "ours"]]]},
        {"name": "by-real-2", "other_config": ["map", [["touched-by", "ours"]]]},
    ]


# ---------------------------------------------------------------------------------------
# Ours -> real.


def test_our_file_read_by_real_tools(tmp_path: Path) -> None:
    path = make_db("ours", tmp_path)
    log = tool("show-log", str(path)).stdout
    assert log.startswith(
        'record 0: "OVN_Northbound" schema, version="7.0.0", cksum="94023179 33468"\n'
    )
    assert log.count("record ") == 14  # the schema and 13 transactions
    assert '"a comment"' in log
    detail = tool("-mm", "show-log", str(path)).stdout
    assert 'table Logical_Switch row "sw2"' in detail and "delete row" in detail
    assert tool("db-name", str(path)).stdout == "OVN_Northbound\n"
    assert tool("db-version", str(path)).stdout == "7.0.0\n"
    assert tool("db-cksum", str(path)).stdout == "94023179 33468\n"
    assert tool("db-is-standalone", str(path)).returncode == 0
    assert query(path, "Logical_Switch", ["name", "external_ids"]) == EXPECTED_SWITCHES
    assert query(path, "Address_Set", ["name", "addresses"]) == [
        {"name": "as1", "addresses": "10.0.0.2"}
    ]
    assert query(path, "Logical_Switch_Port", ["name"]) == [{"name": "p0"}]


def test_our_file_served_by_real(tmp_path: Path) -> None:
    path = make_db("ours", tmp_path)
    ours = dump_with("ours", path)
    real = dump_with("real", path)
    assert real == ours
    # The real server can keep writing to it, and ours reads that back.
    srv = serve("real", path)
    try:
        nbctl(srv, "ls-add", "after-real")
    finally:
        srv.stop()
    assert dump_with("ours", path) == dump_with("real", path)


def test_our_compacted_file(tmp_path: Path) -> None:
    path = make_db("ours", tmp_path)
    before = dump_with("real", path)
    srv = serve("ours", path)
    try:
        srv.appctl("ovsdb-server/compact")
        assert n_records(path) == 2
        nbctl(srv, "ls-add", "post-compact")
    finally:
        srv.stop()
    assert n_records(path) == 3
    assert query(path, "Logical_Switch", ["name"]) == [
        {"name": "post-compact"},
        {"name": "sw0"},
        {"name": "sw1"},
    ]
    after = dump_with("real", path)
    assert dump_with("ours", path) == after
    # Only the new switch differs from before compaction.
    ls_before = next(t for t in before if t["caption"] == "Logical_Switch table")
    ls_after = next(t for t in after if t["caption"] == "Logical_Switch table")
    name = ls_after["headings"].index("name")
    assert [r for r in ls_after["data"] if r[name] != "post-compact"] == ls_before["data"]
    assert [t for t in after if t["caption"] != "Logical_Switch table"] == [
        t for t in before if t["caption"] != "Logical_Switch table"
    ]
    # The real tool compacts our file too.
    tool("compact", str(path))
    assert dump_with("ours", path) == after


# ---------------------------------------------------------------------------------------
# Our `pyovsdb tool` on files written by the real server.


def test_our_tool_on_real_file(tmp_path: Path) -> None:
    path = make_db("real", tmp_path)
    for cmd in (["db-name"], ["db-version"], ["db-cksum"], ["show-log"]):
        assert our_tool(*cmd, str(path)).stdout == tool(*cmd, str(path)).stdout, cmd
    for table, cols in (
        ("Logical_Switch", ["name", "external_ids", "ports"]),
        ("Address_Set", ["name", "addresses"]),
    ):
        assert query(path, table, cols, our_tool) == query(path, table, cols, tool)
    before = dump_with("real", path)
    our_tool("compact", str(path))
    assert n_records(path) == 2
    assert dump_with("real", path) == before


# ---------------------------------------------------------------------------------------
# Damaged files.


def _damage(path: Path, how: str) -> int:
    """Damage the file; returns how many records the good prefix holds."""
    data = path.read_bytes()
    n = n_records(path)
    starts = [i for i in range(len(data)) if data.startswith(b"OVSDB JSON ", i)]
    assert len(starts) == n
    if how == "garbage":
        path.write_bytes(data + b'OVSDB JSON 100 0123456789\n{"garbage')
        return n
    if how == "junk-bytes":
        path.write_bytes(data + b"\x00\x01not a header at all\n")
        return n
    if how == "truncated":
        path.write_bytes(data[:-20])
        return n - 1
    if how == "truncated-header":
        path.write_bytes(data[: starts[-1] + 15])
        return n - 1
    if how == "bad-checksum":
        # Change one byte inside the body of the third-from-last record.
        body = data.index(b"\n", starts[-3]) + 1
        pos = data.index(b'"', body + 2)
        bad = data[:pos] + b"'" + data[pos + 1 :]
        path.write_bytes(bad)
        return n - 3
    raise AssertionError(how)


DAMAGE = ["garbage", "junk-bytes", "truncated", "truncated-header", "bad-checksum"]


@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_tail(tmp_path: Path, how: str) -> None:
    path = make_db("real", tmp_path)
    good = path.with_name("good.db")
    good.write_bytes(path.read_bytes())
    keep = _damage(path, how)
    if keep < n_records(good):
        # The reference: the real server on a file cut back to the good prefix.
        data = good.read_bytes()
        starts = [i for i in range(len(data)) if data.startswith(b"OVSDB JSON ", i)]
        good.write_bytes(data[: starts[keep]])
    assert tool("show-log", str(path), check=False).returncode != 0

    # Ours serves the good prefix and says so in its log.
    srv = serve("ours", path)
    try:
        assert dump_json(srv.unix, DB) == dump_with("real", good)
        size = path.stat().st_size
        log = Path(srv.logfile).read_text()
        assert str(path) in log and ("WARN" in log or "ERR" in log), log
        # The next write cuts the bad tail off before appending.
        nbctl(srv, "ls-add", "after-repair")
        assert path.stat().st_size < size + 1000
    finally:
        srv.stop()
    log = tool("show-log", str(path))
    assert log.stdout.count("record ") == keep + 1
    assert "after-repair" in log.stdout
    names = [r["name"] for r in query(path, "Logical_Switch", ["name"])]
    assert "after-repair" in names
    assert dump_with("real", path) == dump_with("ours", path)


def test_damaged_tail_same_prefix_as_real(tmp_path: Path) -> None:
    """Ours and the real server serve the same contents from the same torn file."""
    path = make_db("ours", tmp_path)
    _damage(path, "truncated")
    copy = path.with_name("copy.db")
    copy.write_bytes(path.read_bytes())
    assert dump_with("ours", path) == dump_with("real", copy)


def test_file_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "bad.db"
    path.write_text("this is not an ovsdb file\n")
    srv = ServerProcess("ours", tmp_path, [str(path)], name="bad")
    with pytest.raises(AssertionError, match="exited during startup"):
        srv.start(timeout=20)
    srv.stop()
    assert path.read_text() == "this is not an ovsdb file\n"
    assert os.path.exists(path)


# ---------------------------------------------------------------------------------------
# A schema with every kind of type (reals, bounded integers and strings, enums, maps,
# weak and strong references), and strings that need escaping, both ways.

TYPES_SCHEMA = {
    "name": "Types",
    "version": "1.2.3",
    "tables": {
        "T": {
            "isRoot": True,
            "indexes": [["i", "b"]],
            "columns": {
                "r": {"type": "real"},
                "rs": {"type": {"key": "real", "min": 0, "max": "unlimited"}},
                "i": {
                    "type": {
                        "key": {"type": "integer", "minInteger": -10, "maxInteger": 1000000000000}
                    }
                },
                "big": {"type": "integer"},
                "b": {"type": "boolean"},
                "e": {
                    "type": {
                        "key": {"type": "string", "enum": ["set", ["x", "y"]]},
                        "min": 0,
                        "max": 1,
                    }
                },
                "m": {"type": {"key": "integer", "value": "real", "min": 0, "max": "unlimited"}},
                "s": {
                    "type": {
                        "key": {"type": "string", "minLength": 0, "maxLength": 40},
                        "min": 0,
                        "max": 3,
                    }
                },
                "txt": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}},
                "ref": {
                    "type": {
                        "key": {"type": "uuid", "refTable": "U", "refType": "weak"},
                        "min": 0,
                        "max": "unlimited",
                    }
                },
                "sref": {"type": {"key": {"type": "uuid", "refTable": "U"}, "min": 0, "max": 1}},
            },
        },
        "U": {"columns": {"n": {"type": "integer"}}, "maxRows": 5},
    },
}
STRINGS = [
    "é ü 中文 🎉",
    'quote " and \\ backslash',
    "tab\tnew\nline",
    "ctrl \u0001 \u001f",
    "\u2028\u2029",
    "",
]


def grow_types(srv: ServerProcess) -> None:
    def tx(*ops: dict[str, Any]) -> list[Any]:
        res = transact(srv, *ops, db="Types")
        assert not any("error" in r for r in res), res
        return res

    tx(
        {
            "op": "insert",
            "table": "T",
            "row": {
                "r": 0.1,
                "rs": ["set", [1.5, -0.5, 1e300, 2, 2.5e-300]],
                "i": 5,
                "b": True,
                "big": -9223372036854775808,
                "e": "x",
                "m": ["map", [[1, 0.5], [2, 3], [-7, 1e-10]]],
                "s": ["set", STRINGS[:3]],
                "txt": ["map", [[s or "empty", s] for s in STRINGS]],
            },
        }
    )
    tx({"op": "insert", "table": "T", "row": {"r": 1, "i": 6, "big": 9223372036854775807}})
    tx(
        {"op": "insert", "table": "U", "row": {"n": 1}, "uuid-name": "u"},
        {
            "op": "insert",
            "table": "T",
            "row": {"i": 7, "ref": ["named-uuid", "u"], "sref": ["named-uuid", "u"]},
        },
    )
    tx(
        {"op": "insert", "table": "U", "row": {"n": 2}, "uuid-name": "u"},
        {
            "op": "insert",
            "table": "T",
            "row": {"i": 8, "ref": ["named-uuid", "u"], "sref": ["named-uuid", "u"]},
        },
    )
    tx({"op": "delete", "table": "T", "where": [["i", "==", 7]]})  # U n=1 collected
    tx(
        {
            "op": "mutate",
            "table": "T",
            "where": [["i", "==", 5]],
            "mutations": [
                ["r", "*=", 3],
                ["m", "insert", ["map", [[3, 1.25]]]],
                ["rs", "delete", 2],
                ["txt", "delete", ["set", ["empty"]]],
            ],
        }
    )
    tx(
        {
            "op": "update",
            "table": "T",
            "where": [["i", "==", 6]],
            "row": {"s": ["set", STRINGS[3:]], "e": ["set", []], "b": False},
        }
    )


@pytest.mark.parametrize("writer", ["ours", "real"])
def test_all_types_both_ways(tmp_path: Path, writer: str) -> None:
    schema = tmp_path / "types.ovsschema"
    schema.write_text(json.dumps(TYPES_SCHEMA))
    path = tmp_path / "types.db"
    create_db(writer, path, str(schema))
    srv = serve(writer, path, "grow")
    try:
        grow_types(srv)
        live = dump_json(srv.unix, "Types")
    finally:
        srv.stop()
    dumps = {}
    for kind in ("ours", "real"):
        srv = serve(kind, path)
        try:
            dumps[kind] = dump_json(srv.unix, "Types")
        finally:
            srv.stop()
    assert dumps["ours"] == dumps["real"] == live
    t = next(d for d in live if d["caption"] == "T table")
    rows = {
        r[t["headings"].index("i")]: dict(zip(t["headings"], r, strict=True)) for r in t["data"]
    }
    assert sorted(rows) == [5, 6, 8]
    assert rows[5]["txt"] == ["map", sorted([[s, s] for s in STRINGS if s])]
    assert rows[6]["s"] == ["set", sorted(STRINGS[3:])]
    assert rows[6]["big"] == 9223372036854775807
    assert rows[8]["ref"][0] == "uuid" and rows[8]["sref"] == rows[8]["ref"]
    u = next(d for d in live if d["caption"] == "U table")
    assert [r[u["headings"].index("n")] for r in u["data"]] == [2]
    # The real tool reads the file the same way.
    q = tool(
        "query",
        str(path),
        json.dumps(
            [
                "Types",
                {
                    "op": "select",
                    "table": "T",
                    "where": [["i", "==", 5]],
                    "columns": ["r", "rs", "m", "txt"],
                },
            ]
        ),
    ).stdout
    assert json.loads(q)[0]["rows"] == [
        {"r": rows[5]["r"], "rs": rows[5]["rs"], "m": rows[5]["m"], "txt": rows[5]["txt"]}
    ]


@pytest.mark.parametrize("first,second", [("ours", "real"), ("real", "ours"), ("ours", "ours")])
def test_lockfile_excludes_other_writers(tmp_path: Path, first: str, second: str) -> None:
    """The `.NAME.~lock~` lock is honoured both ways: a second server and the real
    ovsdb-tool are refused while a server holds the file."""
    path = tmp_path / "nb.db"
    create_db(first, path, NB_SCHEMA)
    srv = serve(first, path, "first")
    try:
        other = ServerProcess(second, tmp_path, [str(path)], name="second")
        with pytest.raises(AssertionError, match="failed to lock lockfile"):
            other.start(timeout=20)
        other.stop()
        p = tool("compact", str(path), check=False)
        assert p.returncode == 1 and "failed to lock lockfile" in p.stderr
        nbctl(srv, "ls-add", "still-mine")
    finally:
        srv.stop()
    assert query(path, "Logical_Switch", ["name"]) == [{"name": "still-mine"}]
