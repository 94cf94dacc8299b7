"""The real `ovsdb-client` against our server (and, where parametrized, the real one)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import (
    Monitor,
    client,
    dump_json,
    label_uuids,
    monitor_events,
    nbctl,
    select,
    strip_uuids,
    transact,
    wait_until,
)

from procs import NB_SCHEMA, ServerProcess, require, run

pytestmark = pytest.mark.interop

DB = "OVN_Northbound"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovsdb-client", "ovn-nbctl", "ovsdb-tool")


def schema_file() -> dict[str, Any]:
    with open(NB_SCHEMA) as f:
        return json.load(f)


# ---------------------------------------------------------------------------------------
# Schema and catalog commands.


def test_list_dbs(any_nb_server: ServerProcess) -> None:
    assert client("list-dbs", any_nb_server.unix).stdout == f"{DB}\n_Server\n"
    # The same over TCP.
    assert client("list-dbs", any_nb_server.tcp).stdout == f"{DB}\n_Server\n"


def test_get_schema_matches_file(any_nb_server: ServerProcess) -> None:
    got = json.loads(client("get-schema", any_nb_server.unix, DB).stdout)
    want = schema_file()
    assert (got["name"], got["version"], got["cksum"]) == (
        want["name"],
        want["version"],
        want["cksum"],
    )
    assert set(got["tables"]) == set(want["tables"])
    for name, table in want["tables"].items():
        assert set(got["tables"][name]["columns"]) == set(table["columns"]), name
        assert got["tables"][name].get("isRoot", False) == table.get("isRoot", False), name
        assert got["tables"][name].get("maxRows") == table.get("maxRows"), name
    assert client("get-schema-version", any_nb_server.unix, DB).stdout == f"{want['version']}\n"
    assert client("get-schema-cksum", any_nb_server.unix, DB).stdout == f"{want['cksum']}\n"


def test_get_schema_same_as_real(server_pair: Callable[[str], dict[str, ServerProcess]]) -> None:
    pair = server_pair(NB_SCHEMA)
    for db in (DB, "_Server"):
        ours, real = (
            json.loads(client("get-schema", s.unix, db).stdout)
            for s in (pair["ours"], pair["real"])
        )
        assert ours == real, db


def test_list_tables_and_columns(any_nb_server: ServerProcess) -> None:
    lines = client("list-tables", any_nb_server.unix).stdout.splitlines()
    assert lines[0] == "Table" and set(lines[1]) == {"-"}
    assert set(lines[2:]) == set(schema_file()["tables"])

    out = client("list-columns", any_nb_server.unix, DB, "Logical_Switch").stdout
    lines = out.splitlines()
    assert lines[0].split() == ["Column", "Type"]
    cols = {line.split(None, 1)[0]: json.loads(line.split(None, 1)[1]) for line in lines[2:]}
    assert set(cols) == set(schema_file()["tables"]["Logical_Switch"]["columns"]) | {
        "_uuid",
        "_version",
    }
    assert cols["name"] == "string"
    assert cols["ports"] == {
        "key": {"refTable": "Logical_Switch_Port", "type": "uuid"},
        "min": 0,
        "max": "unlimited",
    }
    assert client("list-tables", any_nb_server.unix, "_Server").stdout.splitlines()[2:] == [
        "Database"
    ]


def test_catalog_output_same_as_real(
    server_pair: Callable[[str], dict[str, ServerProcess]],
) -> None:
    pair = server_pair(NB_SCHEMA)
    for args in (
        ["list-tables"],
        ["list-columns", DB, "ACL"],
        ["list-columns", DB],
        ["get-schema-version", "_Server"],
        ["needs-conversion", NB_SCHEMA],
    ):
        ours, real = (
            client(args[0], s.unix, *args[1:]).stdout.splitlines()
            for s in (pair["ours"], pair["real"])
        )
        # Row order follows the client's hash of the names, which depends on the order
        # the schema's JSON objects were sent in, and JSON objects are unordered.
        assert ours[:2] == real[:2] and sorted(ours) == sorted(real), args


# ---------------------------------------------------------------------------------------
# transact and query.


def test_transact_operations(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    res = transact(
        srv,
        {
            "op": "insert",
            "table": "Logical_Switch",
            "uuid-name": "s0",
            "row": {"name": "sw0", "external_ids": ["map", [["a", "b"]]]},
        },
        {"op": "insert", "table": "Logical_Switch", "row": {"name": "sw1"}},
        {
            "op": "select",
            "table": "Logical_Switch",
            "where": [["_uuid", "==", ["named-uuid", "s0"]]],
            "columns": ["name", "external_ids"],
        },
        {"op": "comment", "comment": "interop"},
    )
    assert [sorted(r) for r in res] == [["uuid"], ["uuid"], ["rows"], []]
    sw0 = res[0]["uuid"][1]
    assert res[2]["rows"] == [{"name": "sw0", "external_ids": ["map", [["a", "b"]]]}]

    res = transact(
        srv,
        {
            "op": "update",
            "table": "Logical_Switch",
            "where": [["name", "==", "sw1"]],
            "row": {"other_config": ["map", [["x", "y"]]]},
        },
        {
            "op": "mutate",
            "table": "Logical_Switch",
            "where": [],
            "mutations": [["external_ids", "insert", ["map", [["c", "d"]]]]],
        },
        {
            "op": "select",
            "table": "Logical_Switch",
            "where": [],
            "columns": ["name", "external_ids", "other_config"],
            "sort": ["name"],
        },
    )
    assert res[:2] == [{"count": 1}, {"count": 2}]
    assert res[2]["rows"] == [
        {
            "name": "sw0",
            "external_ids": ["map", [["a", "b"], ["c", "d"]]],
            "other_config": ["map", []],
        },
        {
            "name": "sw1",
            "external_ids": ["map", [["c", "d"]]],
            "other_config": ["map", [["x", "y"]]],
        },
    ]

    res = transact(
        srv,
        {"op": "delete", "table": "Logical_Switch", "where": [["name", "==", "sw1"]]},
        {"op": "delete", "table": "Logical_Switch", "where": [["name", "==", "zz"]]},
    )
    assert res == [{"count": 1}, {"count": 0}]
    assert select(srv, "Logical_Switch", ["_uuid", "name"]) == [
        {"_uuid": ["uuid", sw0], "name": "sw0"}
    ]

    # Set mutations and an "includes" condition.
    res = transact(
        srv,
        {
            "op": "insert",
            "table": "Address_Set",
            "row": {"name": "as", "addresses": ["set", ["10.0.0.1", "10.0.0.2"]]},
        },
        {
            "op": "mutate",
            "table": "Address_Set",
            "where": [],
            "mutations": [
                ["addresses", "delete", ["set", ["10.0.0.1"]]],
                ["addresses", "insert", "10.0.0.3"],
            ],
        },
        {
            "op": "select",
            "table": "Address_Set",
            "where": [["addresses", "includes", "10.0.0.3"]],
            "columns": ["addresses"],
        },
    )
    assert res[1:] == [{"count": 1}, {"rows": [{"addresses": ["set", ["10.0.0.2", "10.0.0.3"]]}]}]

    # Integer mutation on the single NB_Global row.
    res = transact(
        srv,
        {"op": "insert", "table": "NB_Global", "row": {"nb_cfg": 5}},
        {"op": "mutate", "table": "NB_Global", "where": [], "mutations": [["nb_cfg", "+=", 3]]},
        {"op": "select", "table": "NB_Global", "where": [], "columns": ["nb_cfg"]},
    )
    assert res[1:] == [{"count": 1}, {"rows": [{"nb_cfg": 8}]}]


TXN_ERRORS: list[tuple[str, list[dict[str, Any]], str, str]] = [
    (
        "unknown table",
        [{"op": "insert", "table": "Nope", "row": {}}],
        "syntax error",
        "Parsing ovsdb operation 1 of 1 failed: No table named Nope.",
    ),
    (
        "unknown column",
        [{"op": "insert", "table": "Logical_Switch", "row": {"bogus": 1}}],
        "unknown column",
        "No column bogus in table Logical_Switch.",
    ),
    (
        "type mismatch",
        [{"op": "insert", "table": "Logical_Switch", "row": {"name": 1}}],
        "syntax error",
        "expected string",
    ),
    (
        "unknown op",
        [{"op": "bogus"}],
        "syntax error",
        'Parsing ovsdb operation 1 of 1 failed: No operation "bogus"',
    ),
    ("abort", [{"op": "abort"}], "aborted", "aborted by request"),
    (
        "range",
        [
            {
                "op": "insert",
                "table": "ACL",
                "row": {"priority": 40000, "direction": "to-lport", "match": "1", "action": "drop"},
            }
        ],
        "constraint violation",
        "40000 is not in the valid range 0 to 32767 (inclusive)",
    ),
    (
        "enum",
        [
            {
                "op": "insert",
                "table": "ACL",
                "row": {"priority": 1, "direction": "bogus", "match": "1", "action": "drop"},
            }
        ],
        "constraint violation",
        "bogus is not one of the allowed values ([from-lport, to-lport])",
    ),
    (
        "max rows",
        [
            {"op": "insert", "table": "NB_Global", "row": {}},
            {"op": "insert", "table": "NB_Global", "row": {}},
        ],
        "constraint violation",
        'transaction causes "NB_Global" table to contain 2 rows, greater than the '
        "schema-defined limit of 1 row(s)",
    ),
    (
        "immutable",
        [
            {
                "op": "update",
                "table": "Logical_Switch",
                "where": [],
                "row": {"_uuid": ["uuid", "11111111-2222-3333-4444-555555555555"]},
            }
        ],
        "constraint violation",
        "Cannot update immutable column _uuid in table Logical_Switch.",
    ),
    (
        "mutate type",
        [
            {
                "op": "mutate",
                "table": "Logical_Switch",
                "where": [],
                "mutations": [["name", "+=", 1]],
            }
        ],
        "syntax error",
        'Type mismatch: "+=" operator may not be applied to column name of type string.',
    ),
    (
        "condition type",
        [{"op": "select", "table": "Logical_Switch", "where": [["name", "<", "x"]]}],
        "syntax error",
        'Type mismatch: "<" operator may not be applied to column name of type string.',
    ),
    (
        "wait timeout",
        [
            {
                "op": "wait",
                "table": "Logical_Switch",
                "where": [],
                "columns": ["name"],
                "until": "==",
                "rows": [{"name": "zz"}],
                "timeout": 0,
            }
        ],
        "timed out",
        '"where" clause test failed',
    ),
    (
        "dangling ref",
        [
            {
                "op": "insert",
                "table": "Logical_Switch",
                "row": {"ports": ["uuid", "11111111-2222-3333-4444-555555555555"]},
            }
        ],
        "referential integrity violation",
        "Table Logical_Switch column ports row <uuid> references nonexistent row "
        "11111111-2222-3333-4444-555555555555 in table Logical_Switch_Port.",
    ),
]


@pytest.mark.parametrize(
    "ops,error,details", [t[1:] for t in TXN_ERRORS], ids=[t[0] for t in TXN_ERRORS]
)
def test_transact_errors(
    any_nb_server: ServerProcess, ops: list[dict[str, Any]], error: str, details: str
) -> None:
    res = transact(any_nb_server, *ops)
    err = res[-1]
    assert err["error"] == error, res
    assert strip_uuids(err["details"]) == strip_uuids(details), res
    # Nothing was committed.
    assert select(any_nb_server, "Logical_Switch", ["name"]) == []
    assert select(any_nb_server, "ACL", ["priority"]) == []


def test_transact_errors_before_any_row(any_nb_server: ServerProcess) -> None:
    """A unique-index clash, and a transaction on an unknown database (the client
    reports the server's error and exits 1)."""
    srv = any_nb_server
    transact(srv, {"op": "insert", "table": "Address_Set", "row": {"name": "as1"}})
    res = transact(srv, {"op": "insert", "table": "Address_Set", "row": {"name": "as1"}})
    assert res[-1]["error"] == "constraint violation"
    assert 'identical values (as1) for index on column "name"' in res[-1]["details"]
    assert len(select(srv, "Address_Set", ["name"])) == 1

    p = client("transact", srv.unix, json.dumps(["Nodb", {"op": "abort"}]), check=False)
    assert p.returncode == 1
    assert "transaction returned error" in p.stderr
    assert '"unknown database"' in p.stderr
    assert "transact request specifies unknown database Nodb" in p.stderr


def test_query_does_not_commit(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "kept")
    res = transact(
        srv,
        {"op": "insert", "table": "Logical_Switch", "row": {"name": "temp"}},
        {
            "op": "select",
            "table": "Logical_Switch",
            "where": [],
            "columns": ["name"],
            "sort": ["name"],
        },
        method="query",
    )
    assert res[1] == {"rows": [{"name": "kept"}, {"name": "temp"}]}
    assert select(srv, "Logical_Switch", ["name"]) == [{"name": "kept"}]


# ---------------------------------------------------------------------------------------
# dump.


def _populate(srv: ServerProcess) -> None:
    nbctl(
        srv,
        "ls-add",
        "sw0",
        "--",
        "set",
        "Logical_Switch",
        "sw0",
        "external_ids:owner=test",
        "other_config:subnet=10.0.0.0/24",
    )
    nbctl(srv, "ls-add", "sw1")
    nbctl(
        srv, "lsp-add", "sw0", "p0", "--", "lsp-set-addresses", "p0", "00:00:00:00:00:01 10.0.0.1"
    )
    transact(
        srv,
        {
            "op": "insert",
            "table": "Address_Set",
            "row": {"name": "as1", "addresses": ["set", ["10.0.0.1", "10.0.0.2"]]},
        },
    )


def test_dump_formats(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    _populate(srv)
    out = client("dump", srv.unix, DB, "Logical_Switch", "name", "external_ids").stdout
    assert out == (
        "Logical_Switch table\n"
        "external_ids name\n"
        "------------ ----\n"
        "{}           sw1\n"
        "{owner=test} sw0\n"
    )

    tables = dump_json(srv.unix, "Address_Set", "name", "addresses")
    assert tables == [
        {
            "caption": "Address_Set table",
            "headings": ["addresses", "name"],
            "data": [[["set", ["10.0.0.1", "10.0.0.2"]], "as1"]],
        }
    ]

    out = client("-f", "csv", "dump", srv.unix, "Logical_Switch", "name", "other_config").stdout
    assert out == (
        'Logical_Switch table\nname,other_config\nsw0,"{subnet=""10.0.0.0/24""}"\nsw1,{}\n'
    )

    out = client("-f", "list", "dump", srv.unix, "Logical_Switch_Port", "name", "addresses").stdout
    assert out == (
        "Logical_Switch_Port table\naddresses           : "
        '["00:00:00:00:00:01 10.0.0.1"]\nname                : p0\n'
    )


def test_dump_json_whole_db(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    _populate(srv)
    tables = {t["caption"]: t for t in dump_json(srv.unix)}
    assert set(tables) == {f"{t} table" for t in schema_file()["tables"]}
    ls = tables["Logical_Switch table"]
    assert ls["headings"][0] == "_uuid"
    rows = [dict(zip(ls["headings"], r, strict=True)) for r in ls["data"]]
    assert sorted(r["name"] for r in rows) == ["sw0", "sw1"]
    sw0 = next(r for r in rows if r["name"] == "sw0")
    lsp = [
        dict(zip(tables["Logical_Switch_Port table"]["headings"], r, strict=True))
        for r in tables["Logical_Switch_Port table"]["data"]
    ]
    assert [p["name"] for p in lsp] == ["p0"]
    assert sw0["ports"] == lsp[0]["_uuid"]
    assert sw0["external_ids"] == ["map", [["owner", "test"]]]
    assert tables["ACL table"]["data"] == []
    # The _version column is never dumped; every row has a real UUID.
    assert "_version" not in ls["headings"]
    assert all(r["_uuid"][0] == "uuid" for r in rows)


def test_dump_same_as_real(server_pair: Callable[[str], dict[str, ServerProcess]]) -> None:
    pair = server_pair(NB_SCHEMA)
    outs = {}
    for kind, srv in pair.items():
        _populate(srv)
        nbctl(srv, "acl-add", "sw0", "to-lport", "1000", 'outport == "p0"', "drop")
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
        )
        text = [
            client(*fmt, "dump", srv.unix).stdout
            for fmt in ([], ["-f", "json"], ["-f", "csv"], ["-f", "list"], ["-f", "html"])
        ]
        # Whole-db dumps sort rows by _uuid first; dumps without _uuid sort by contents.
        text += [
            client(
                *fmt, "dump", srv.unix, DB, "Logical_Switch", "name", "external_ids", "other_config"
            ).stdout
            for fmt in ([], ["-f", "json"], ["--pretty"])
        ]
        outs[kind] = text
    for i, (ours, real) in enumerate(zip(outs["ours"], outs["real"], strict=True)):
        if i < 5:
            assert _dump_rows(ours) == _dump_rows(real), i
        else:
            assert ours == real, i


def _dump_rows(text: str) -> list[str]:
    """A dump's lines with UUIDs (and the html format's abbreviated UUIDs) masked,
    sorted: row order follows the UUIDs."""
    text = re.sub(r">[0-9a-f]{8}<", "><abbrev><", strip_uuids(text))
    return sorted(text.splitlines())


# ---------------------------------------------------------------------------------------
# monitor and monitor-cond.


def _ls_changes(srv: ServerProcess, mon: Monitor, n_before: int) -> None:
    """Insert sw1, modify it, delete sw0: one update each, waited for in turn."""
    nbctl(srv, "ls-add", "sw1")
    mon.wait_lines(n_before + 1)
    nbctl(srv, "set", "Logical_Switch", "sw1", "external_ids:x=y", "other_config:a=b")
    mon.wait_lines(n_before + 2)
    nbctl(srv, "ls-del", "sw0")
    mon.wait_lines(n_before + 3)


def test_monitor_json(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0", "--", "set", "Logical_Switch", "sw0", "external_ids:k=v")
    with Monitor(
        ["-f", "json", "monitor", srv.unix, DB, "Logical_Switch", "name,external_ids,other_config"]
    ) as mon:
        mon.wait_lines(1)
        _ls_changes(srv, mon, 1)
        lines = mon.stop()
    events = monitor_events(lines)
    assert events == [
        [
            [
                "initial",
                {"name": "sw0", "external_ids": ["map", [["k", "v"]]], "other_config": ["map", []]},
            ]
        ],
        [["insert", {"name": "sw1", "external_ids": ["map", []], "other_config": ["map", []]}]],
        [
            [
                "modify",
                {"name": None, "external_ids": ["map", []], "other_config": ["map", []]},
                {
                    "name": "sw1",
                    "external_ids": ["map", [["x", "y"]]],
                    "other_config": ["map", [["a", "b"]]],
                },
            ]
        ],
        [
            [
                "delete",
                {"name": "sw0", "external_ids": ["map", [["k", "v"]]], "other_config": ["map", []]},
            ]
        ],
    ]
    # The same row UUID is reported for the insert and the modify of sw1.
    obj = [json.loads(x) for x in lines if x.startswith("{")]
    assert obj[1]["data"][0][0] == obj[2]["data"][0][0]
    assert obj[0]["data"][0][0] == obj[3]["data"][0][0]


def test_monitor_table_format(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0", "--", "set", "Logical_Switch", "sw0", "external_ids:k=v")
    with Monitor(
        ["monitor", srv.unix, DB, "Logical_Switch", "name,external_ids,other_config"]
    ) as mon:
        mon.wait_for(lambda lines: any("initial" in x for x in lines))
        nbctl(srv, "ls-add", "sw1")
        mon.wait_for(lambda lines: any(" insert " in x for x in lines))
        nbctl(srv, "set", "Logical_Switch", "sw1", "external_ids:x=y", "other_config:a=b")
        mon.wait_for(lambda lines: any(" new " in x for x in lines))
        nbctl(srv, "ls-del", "sw0")
        mon.wait_for(lambda lines: any(" delete " in x for x in lines))
        text = "\n".join(line.rstrip() for line in mon.stop())
    blocks = [strip_uuids(b) for b in text.strip().split("\n\n")]
    header = (
        "row                                  action{} name external_ids other_config\n"
        "------------------------------------ ------{} ---- ------------ ------------\n"
    )
    # (a row label is a full UUID, masked here)
    assert blocks == [
        header.format(" ", "-") + "<uuid> initial sw0  {k=v}        {}",
        header.format("", "") + "<uuid> insert sw1  {}           {}",
        header.format("", "") + "<uuid> old         {}           {}\n"
        "                                     new    sw1  {x=y}        {a=b}",
        header.format("", "") + "<uuid> delete sw0  {k=v}        {}",
    ]


def sync_with_marker(srv: ServerProcess, mon: Monitor) -> None:
    """For a monitor that prints nothing at first: add marker switches until one is
    reported, so the monitor is known to be in place. Leaves one printed line."""
    for i in range(50):
        nbctl(srv, "ls-add", f"marker{i}")
        if wait_until(lambda: any(x.strip() for x in mon.lines), 0.2):
            assert len([x for x in mon.lines if x.strip()]) == 1, mon.lines
            return
    raise AssertionError(f"monitor never reported a change: {mon.lines}")


def test_monitor_select_options(any_nb_server: ServerProcess) -> None:
    """`COLUMN,!initial,!modify`: no initial contents and no modifications reported."""
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0")
    with Monitor(
        ["-f", "json", "monitor", srv.unix, DB, "Logical_Switch", "name,!initial,!modify"]
    ) as mon:
        sync_with_marker(srv, mon)
        nbctl(srv, "ls-add", "sw1")
        mon.wait_lines(2)
        nbctl(srv, "set", "Logical_Switch", "sw1", "external_ids:x=y")  # not reported
        nbctl(srv, "ls-del", "sw0")
        mon.wait_lines(3)
        lines = mon.stop()
    events = monitor_events(lines)
    assert events[0][0][0] == "insert" and events[0][0][1]["name"].startswith("marker")
    assert events[1:] == [
        [["insert", {"name": "sw1"}]],
        [["delete", {"name": "sw0"}]],
    ]


def test_monitor_cond(any_nb_server: ServerProcess) -> None:
    """Rows enter and leave the condition: a modify that starts matching is an insert,
    one that stops matching is a delete; rows never matching are not reported."""
    srv = any_nb_server
    nbctl(srv, "ls-add", "a", "--", "set", "Logical_Switch", "a", "external_ids:watch=yes")
    nbctl(srv, "ls-add", "b")
    cond = json.dumps([["external_ids", "includes", ["map", [["watch", "yes"]]]]])
    with Monitor(
        ["-f", "json", "monitor-cond", srv.unix, DB, cond, "Logical_Switch", "name,external_ids"]
    ) as mon:
        mon.wait_lines(1)
        nbctl(srv, "ls-add", "c")  # not matching: no update
        nbctl(srv, "set", "Logical_Switch", "b", "external_ids:watch=yes")
        mon.wait_lines(2)
        nbctl(srv, "set", "Logical_Switch", "a", "external_ids:other=1")
        mon.wait_lines(3)
        nbctl(srv, "remove", "Logical_Switch", "a", "external_ids", "watch")
        mon.wait_lines(4)
        nbctl(srv, "ls-del", "b")
        mon.wait_lines(5)
        lines = mon.stop()
    assert monitor_events(lines) == [
        [["initial", {"name": "a", "external_ids": ["map", [["watch", "yes"]]]}]],
        [["insert", {"name": "b", "external_ids": ["map", [["watch", "yes"]]]}]],
        [["modify", {"name": None, "external_ids": ["map", [["other", "1"]]]}]],
        # monitor_cond deletions carry no row contents.
        [["delete", {"name": None, "external_ids": None}]],
        [["delete", {"name": None, "external_ids": None}]],
    ]


def test_monitor_cond_same_as_real(server_pair: Callable[[str], dict[str, ServerProcess]]) -> None:
    """The same changes seen through `monitor-cond` and `monitor-cond-since` on `name`
    conditions, compared line by line (modulo UUIDs) between ours and the real server."""
    pair = server_pair(NB_SCHEMA)
    results = {}
    for kind, srv in pair.items():
        nbctl(srv, "ls-add", "sw0", "--", "set", "Logical_Switch", "sw0", "external_ids:k=v")
        nbctl(srv, "ls-add", "seed")
        with (
            Monitor(
                [
                    "-f",
                    "json",
                    "monitor-cond",
                    srv.unix,
                    DB,
                    json.dumps([["name", "!=", "sw0"]]),
                    "Logical_Switch",
                    "name,external_ids",
                ]
            ) as m1,
            Monitor(
                [
                    "-f",
                    "json",
                    "monitor-cond-since",
                    srv.unix,
                    DB,
                    json.dumps([["name", "==", "sw0"]]),
                    "Logical_Switch",
                    "name,external_ids",
                ]
            ) as m2,
        ):
            m1.wait_lines(1)
            m2.wait_for(lambda lines: any("initial" in x for x in lines))
            nbctl(srv, "ls-add", "sw1")
            m1.wait_lines(2)
            nbctl(srv, "set", "Logical_Switch", "sw1", "external_ids:x=y")
            m1.wait_lines(3)
            nbctl(srv, "set", "Logical_Switch", "sw0", "external_ids:k=w")
            m2.wait_for(lambda lines: len([x for x in lines if "modify" in x]) == 1)
            nbctl(srv, "ls-del", "sw0", "--", "ls-del", "sw1")
            m1.wait_lines(4)
            m2.wait_for(lambda lines: any("delete" in x for x in lines))
            since = [re.sub(r"last_id: " + UUID, "last_id: <id>", x) for x in m2.stop()]
            ids = [x.split("last_id: ")[1][:36] for x in m2.lines if "last_id: " in x]
            results[kind] = (label_uuids(m1.stop()), label_uuids(since))
            assert len(ids) == 3
            if kind == "real":
                # The real server keeps no transaction ids for a standalone database.
                assert set(ids) == {"00000000-0000-0000-0000-000000000000"}
    assert results["ours"] == results["real"]
    m1_lines, m2_lines = results["ours"]
    assert [json.loads(x)["data"][0][1] for x in m1_lines] == [
        "initial",
        "insert",
        "modify",
        "delete",
    ]
    assert m2_lines[0] == "found: false, last_id: <id>"


def test_monitor_all_tables(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0")
    with Monitor(["-f", "json", "monitor", srv.unix, DB, "ALL"]) as mon:
        mon.wait_for(lambda lines: any('"Logical_Switch"' in x for x in lines))
        nbctl(srv, "lsp-add", "sw0", "p0")
        mon.wait_for(lambda lines: any('"Logical_Switch_Port"' in x for x in lines))
        lines = mon.stop()
    events = monitor_events(lines)
    flat = [(e[0], e[-1]["_table"], e[-1].get("name")) for upd in events for e in upd]
    assert ("initial", "Logical_Switch", "sw0") in flat
    assert ("insert", "Logical_Switch_Port", "p0") in flat
    assert any(a == "modify" and t == "Logical_Switch" for a, t, _ in flat)


# ---------------------------------------------------------------------------------------
# Locks, wait, backup/restore, convert, the _Server database.


def test_lock_handoff(any_nb_server: ServerProcess) -> None:
    srv = any_nb_server
    with Monitor(["lock", srv.unix, "L"]) as first:
        first.wait_for(lambda lines: '{"locked":true}' in lines)
        with Monitor(["lock", srv.unix, "L"]) as second:
            second.wait_for(lambda lines: '{"locked":false}' in lines)
            first.stop()
            second.wait_for(lambda lines: "locked" in lines)
            assert second.stop() == ['{"locked":false}', "locked", '["L"]']


def test_wait_for_database(any_nb_server: ServerProcess) -> None:
    p = client("wait", any_nb_server.unix, DB, "added")
    assert p.returncode == 0
    p = client("wait", any_nb_server.unix, DB, "connected")
    assert p.returncode == 0


def test_backup_and_restore(any_nb_server: ServerProcess, tmp_path: Path) -> None:
    srv = any_nb_server
    _populate(srv)
    backup = tmp_path / "backup.db"
    backup.write_text(client("backup", srv.unix, DB).stdout)
    log = run(["ovsdb-tool", "show-log", str(backup)]).stdout
    assert 'record 0: "OVN_Northbound" schema, version="7.0.0"' in log
    q = run(
        [
            "ovsdb-tool",
            "query",
            str(backup),
            json.dumps(
                [
                    DB,
                    {
                        "op": "select",
                        "table": "Logical_Switch",
                        "where": [],
                        "columns": ["name", "external_ids"],
                        "sort": ["name"],
                    },
                ]
            ),
        ]
    ).stdout
    assert json.loads(q)[0]["rows"] == [
        {"name": "sw0", "external_ids": ["map", [["owner", "test"]]]},
        {"name": "sw1", "external_ids": ["map", []]},
    ]

    before = dump_json(srv.unix)
    nbctl(srv, "ls-del", "sw1", "--", "ls-add", "sw9")
    with open(backup) as f:  # restore seeks in its input: a file, not a pipe
        p = subprocess.run(
            ["ovsdb-client", "restore", srv.unix],
            stdin=f,
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert (p.returncode, p.stderr) == (0, "")
    # Restored rows get new UUIDs (the protocol cannot choose them); the rest is equal.
    assert label_uuids(dump_json(srv.unix)) == label_uuids(before)


def test_server_database_rows(any_nb_server: ServerProcess, request: pytest.FixtureRequest) -> None:
    tables = dump_json(
        any_nb_server.unix, "_Server", "Database", "name", "model", "connected", "leader"
    )
    assert tables[0]["data"] == [
        [True, True, "standalone", DB],
        [True, True, "standalone", "_Server"],
    ]


def test_server_database_nb_row(any_nb_server: ServerProcess) -> None:
    tables = dump_json(any_nb_server.unix, "_Server", "Database")
    rows = [dict(zip(tables[0]["headings"], r, strict=True)) for r in tables[0]["data"]]
    nb = next(r for r in rows if r["name"] == DB)
    assert (nb["model"], nb["connected"], nb["leader"]) == ("standalone", True, True)
    schema = json.loads(nb["schema"])
    assert (schema["name"], schema["version"]) == (DB, "7.0.0")


def test_convert_online(
    any_nb_server: ServerProcess, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    srv = any_nb_server
    nbctl(srv, "ls-add", "sw0")
    schema = schema_file()
    schema["version"] = "7.0.1"
    schema["tables"]["Logical_Switch"]["columns"]["extra"] = {
        "type": {"key": "string", "min": 0, "max": 1}
    }
    path = tmp_path / "new.ovsschema"
    path.write_text(json.dumps(schema))
    assert client("needs-conversion", srv.unix, str(path)).stdout == "yes\n"
    client("convert", srv.unix, str(path))
    assert client("get-schema-version", srv.unix, DB).stdout == "7.0.1\n"
    assert select(srv, "Logical_Switch", ["name", "extra"]) == [
        {"name": "sw0", "extra": ["set", []]}
    ]


def test_unknown_table_errors(any_nb_server: ServerProcess) -> None:
    p = client("dump", any_nb_server.unix, "Nope", check=False)
    assert (p.returncode, p.stderr) == (1, 'ovsdb-client: No table "Nope" found.\n')
    p = client("get-schema", any_nb_server.unix, "Nodb", check=False)
    assert p.returncode == 1


def test_tcp_and_unix_see_same_data(nb_server: ServerProcess) -> None:
    nbctl(nb_server, "ls-add", "sw0")
    assert os.path.exists(nb_server.sock)
    assert (
        dump_json(nb_server.tcp, DB, "Logical_Switch", "name")
        == dump_json(nb_server.unix, DB, "Logical_Switch", "name")
        == [{"caption": "Logical_Switch table", "headings": ["name"], "data": [["sw0"]]}]
    )


# ---------------------------------------------------------------------------------------
# Edge cases compared with the real server, and features beyond it.

WEIRD = [
    "é ü 中文 🎉",
    'quote " and \\ backslash',
    "tab\tnew\nline",
    "ctrl \u0001 \u001f",
    "\u2028",
    "",
]
U1 = "33333333-2222-3333-4444-555555555555"
U2 = "44444444-2222-3333-4444-555555555555"
EDGE_TXNS: list[list[dict[str, Any]]] = [
    [
        {
            "op": "insert",
            "table": "Logical_Switch",
            "row": {"name": w, "external_ids": ["map", [[w or "k", w]]]},
        }
        for w in WEIRD
    ],
    [
        {
            "op": "select",
            "table": "Logical_Switch",
            "where": [],
            "columns": ["name", "external_ids"],
            "sort": ["name"],
        }
    ],
    [{"op": "insert", "table": "NB_Global", "row": {"nb_cfg": 9223372036854775807}}],
    [{"op": "mutate", "table": "NB_Global", "where": [], "mutations": [["nb_cfg", "+=", 1]]}],
    [{"op": "mutate", "table": "NB_Global", "where": [], "mutations": [["nb_cfg", "/=", 0]]}],
    [
        {"op": "update", "table": "NB_Global", "where": [], "row": {"nb_cfg": -5}},
        {
            "op": "mutate",
            "table": "NB_Global",
            "where": [],
            "mutations": [["nb_cfg", "/=", 2], ["nb_cfg", "%=", -2]],
        },
        {"op": "select", "table": "NB_Global", "where": [], "columns": ["nb_cfg"]},
    ],
    [{"op": "commit", "durable": True}],
    [{"op": "assert", "lock": "nolock"}],
    [
        {
            "op": "select",
            "table": "Logical_Switch",
            "where": [["external_ids", "excludes", ["map", [["k", "v"]]]]],
            "columns": ["name"],
            "sort": ["name"],
        }
    ],
    [
        {
            "op": "select",
            "table": "Logical_Switch",
            "where": [["name", "==", ["set", [""]]]],
            "columns": ["name"],
        }
    ],
    [
        {
            "op": "insert",
            "table": "Logical_Switch",
            "row": {"name": "z", "copp": ["uuid", "11111111-2222-3333-4444-555555555555"]},
        },
        {
            "op": "select",
            "table": "Logical_Switch",
            "where": [["name", "==", "z"]],
            "columns": ["copp"],
        },
    ],
    [
        {
            "op": "insert",
            "table": "Logical_Switch_Port",
            "row": {"name": "pp", "addresses": ["set", ["a", "a"]]},
        }
    ],
    [
        {
            "op": "insert",
            "table": "Logical_Switch",
            "row": {"name": "m", "external_ids": ["map", [["a", "1"], ["a", "2"]]]},
        }
    ],
    [{"op": "insert", "table": "Logical_Switch", "uuid-name": "bad name!", "row": {}}],
    [
        {"op": "insert", "table": "Logical_Switch", "uuid-name": "dup", "row": {}},
        {"op": "insert", "table": "Logical_Switch", "uuid-name": "dup", "row": {}},
    ],
    [
        {
            "op": "insert",
            "table": "Logical_Switch",
            "uuid": "22222222-2222-3333-4444-555555555555",
            "row": {"name": "given"},
        },
        {
            "op": "select",
            "table": "Logical_Switch",
            "where": [["name", "==", "given"]],
            "columns": ["_uuid"],
        },
    ],
    [{"op": "delete", "table": "Logical_Switch", "where": [["name", "includes", "given"]]}],
    [
        {
            "op": "select",
            "table": "Logical_Switch",
            "where": [["ports", "==", ["set", []]]],
            "columns": ["name"],
        }
    ],
    # A port referenced by a switch, then deleting it while still referenced.
    [
        {
            "op": "insert",
            "table": "Logical_Switch_Port",
            "uuid-name": "p",
            "uuid": U1,
            "row": {"name": "lp"},
        },
        {
            "op": "insert",
            "table": "Logical_Switch",
            "row": {"name": "owner", "ports": ["named-uuid", "p"]},
        },
    ],
    [{"op": "delete", "table": "Logical_Switch_Port", "where": [["name", "==", "lp"]]}],
    # The same UUID again.
    [
        {"op": "insert", "table": "Logical_Switch_Port", "uuid": U1, "row": {"name": "x"}},
        {"op": "insert", "table": "Logical_Switch", "row": {"ports": ["uuid", U1]}},
    ],
    # Map and set mutations at the edges.
    [
        {
            "op": "mutate",
            "table": "Logical_Switch",
            "where": [["name", "==", "owner"]],
            "mutations": [
                ["external_ids", "insert", ["map", [["a", "1"], ["b", "2"]]]],
                ["external_ids", "insert", ["map", [["a", "changed"]]]],
                ["external_ids", "delete", ["set", ["b", "nope"]]],
                ["other_config", "delete", ["map", [["x", "y"]]]],
            ],
        },
        {
            "op": "select",
            "table": "Logical_Switch",
            "where": [["name", "==", "owner"]],
            "columns": ["external_ids", "other_config"],
        },
    ],
    [
        {
            "op": "mutate",
            "table": "Logical_Switch",
            "where": [["name", "==", "owner"]],
            "mutations": [["copp", "insert", ["set", [["uuid", U1], ["uuid", U2]]]]],
        }
    ],
    [
        {"op": "mutate", "table": "NB_Global", "where": [], "mutations": [["nb_cfg", "+=", 1]]},
        {"op": "mutate", "table": "NB_Global", "where": [], "mutations": [["nb_cfg", "-=", 1]]},
    ],
    [
        {
            "op": "update",
            "table": "Logical_Switch",
            "where": [["name", "==", "owner"]],
            "row": {"name": "renamed"},
        },
        {
            "op": "wait",
            "table": "Logical_Switch",
            "where": [["name", "==", "renamed"]],
            "columns": ["name"],
            "until": "==",
            "rows": [{"name": "renamed"}],
            "timeout": 0,
        },
        {"op": "select", "table": "Logical_Switch", "where": [["name", "==", "renamed"]]},
    ],
    [
        {
            "op": "select",
            "table": "Logical_Switch",
            "where": [
                ["external_ids", "includes", ["map", [["a", "changed"]]]],
                ["external_ids", "excludes", ["map", [["a", "1"]]]],
            ],
            "columns": ["name"],
        }
    ],
    [{"op": "select", "table": "ACL", "where": [["priority", ">", 5], ["priority", "<=", 1]]}],
    [
        {
            "op": "insert",
            "table": "ACL",
            "row": {
                "priority": 1,
                "direction": "to-lport",
                "match": "1",
                "action": "drop",
                "severity": "bogus",
            },
        }
    ],
    [{"op": "insert", "table": "Logical_Switch", "row": {"name": 5}}],
    [{"op": "update", "table": "Logical_Switch", "where": [], "row": {"_version": ["uuid", U1]}}],
    [
        {
            "op": "insert",
            "table": "Logical_Router_Static_Route",
            "row": {"ip_prefix": "0.0.0.0/0", "nexthop": "1.1.1.1"},
        }
    ],
]


def test_edge_cases_same_as_real(server_pair: Callable[[str], dict[str, ServerProcess]]) -> None:
    pair = server_pair(NB_SCHEMA)
    for ops in EDGE_TXNS:
        res = {}
        for kind, srv in pair.items():
            out = label_uuids(transact(srv, *ops))
            for r in out:  # row order of an unsorted select is unspecified
                if isinstance(r, dict) and "rows" in r:
                    r["rows"].sort(key=json.dumps)
            res[kind] = out
        assert res["ours"] == res["real"], ops
    dumps = [
        client("dump", s.unix, DB, "Logical_Switch", "name", "external_ids").stdout
        for s in pair.values()
    ]
    assert dumps[0] == dumps[1]
    assert "中文" in dumps[0]


def test_monitor_cond_since_resumes(nb_server: ServerProcess) -> None:
    """Our server keeps transaction history for standalone databases (the real one
    does not, see test_monitor_cond_same_as_real): resuming from a known last_id gets
    only the changes since, an unknown id gets everything."""
    srv = nb_server
    # The history holds no more atoms than the database (the real clustered rule):
    # a bulky NB_Global row keeps the few small transactions below in it.
    nbctl(srv, "init")
    nbctl(srv, "set", "NB_Global", ".", *(f"external_ids:k{i}=v" for i in range(50)))
    nbctl(srv, "ls-add", "a")

    def since(*last: str, n: int) -> list[str]:
        """The first `n` non-empty lines printed by monitor-cond-since."""
        with Monitor(
            ["monitor-cond-since", srv.unix, DB, *last, "[true]", "Logical_Switch", "name"]
        ) as mon:
            mon.wait_lines(n)
            return [x.rstrip() for x in mon.stop() if x.strip()]

    first = since(n=4)
    assert first[0].startswith("found: false, last_id: ")
    assert strip_uuids(first[3]) == "<uuid> initial a"
    last_id = first[0].split("last_id: ")[1]
    nbctl(srv, "ls-add", "b")
    nbctl(srv, "ls-del", "a")
    resumed = since(last_id, n=5)
    assert resumed[0].startswith("found: true, last_id: ")
    assert resumed[0] != f"found: true, last_id: {last_id}"
    assert sorted(strip_uuids(x) for x in resumed[3:]) == ["<uuid> delete", "<uuid> insert b"]
    unknown = since("11111111-2222-3333-4444-555555555555", n=4)
    assert unknown[0].startswith("found: false, last_id: ")
    assert [strip_uuids(x) for x in unknown[3:]] == ["<uuid> initial b"]


def test_lock_steal(any_nb_server: ServerProcess, request: pytest.FixtureRequest) -> None:
    """`steal`: the previous owner is told "stolen", the thief is granted the lock and,
    like any new owner, notified "locked"."""
    srv = any_nb_server
    with Monitor(["lock", srv.unix, "L"]) as owner:
        owner.wait_for(lambda lines: '{"locked":true}' in lines)
        with Monitor(["steal", srv.unix, "L"]) as thief:
            owner.wait_for(lambda lines: "stolen" in lines)
            assert owner.stop() == ['{"locked":true}', "stolen", '["L"]']
            thief.wait_lines(3, timeout=2)
            assert thief.stop() == ['{"locked":true}', "locked", '["L"]']
