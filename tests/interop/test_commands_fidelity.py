"""Server behaviour next to the real ovsdb-server, driven the way its users drive it: the
same transactions and control-socket commands given to both, answers and log lines
compared."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import client, label_uuids

from procs import ServerProcess, create_db, require

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
