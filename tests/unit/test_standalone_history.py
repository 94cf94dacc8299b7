"""A standalone database keeps a transaction history (an intended difference, see
docs/compat.md) by the real server's rule for clustered ones: at most 100
transactions, no more atoms than the database, the state at open its first entry,
and only ids still kept resume.

Rules kept here:
- Our server runs as a process on a unix socket in the test's directory and is
  stopped by its pid whatever happens; answers are read through `monitor_cond_since`
  as a reconnecting client sees them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from procs import NB_SCHEMA, ServerProcess, create_db
from pyovsdb.jsonrpc.client import Client

NB = "OVN_Northbound"
ZERO = "00000000-0000-0000-0000-000000000000"
WHAT = {"Logical_Switch": [{"columns": ["name"]}]}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    db = create_db("ours", tmp_path / "nb.db", NB_SCHEMA)
    with ServerProcess("ours", tmp_path, [db]) as s:
        yield s


def since(cl: Client, last_id: str) -> tuple[bool, str, dict[str, Any]]:
    found, last, updates = cl.call("monitor_cond_since", [NB, ["m", last_id], WHAT,
                                                          last_id])
    cl.call("monitor_cancel", [["m", last_id]])
    return found, last, updates


def insert(cl: Client, name: str, n_pairs: int = 0) -> None:
    ops: list[Any] = [NB]
    ops.append({"op": "insert", "table": "Logical_Switch", "row": {
        "name": name, "other_config": ["map", [[f"k{i}", "v" * 10] for i in range(n_pairs)]]}})
    res = cl.call("transact", ops)
    assert "error" not in res[0], res


def rename(cl: Client, old: str, new: str) -> None:
    res = cl.call("transact", [NB, {"op": "update", "table": "Logical_Switch",
                                    "where": [["name", "==", old]], "row": {"name": new}}])
    assert res[0] == {"count": 1}, res


def test_small_database_drops_oldest(server: ServerProcess) -> None:
    with Client(server.unix, timeout=10) as cl:
        found, opened, _ = since(cl, ZERO)
        assert not found
        insert(cl, "a")
        _, after_a, _ = since(cl, ZERO)
        insert(cl, "b")
        _, after_b, _ = since(cl, ZERO)
        # Two inserts hold as many atoms as the database: the state at open is kept.
        found, _, updates = since(cl, opened)
        assert found and sorted(r["insert"]["name"]
                                for r in updates["Logical_Switch"].values()) == ["a", "b"]
        # An update counts its row twice: now the history holds more than the
        # database, and the oldest entries go until it does not; the id just before
        # the oldest kept entry (after_b) does not resume either.
        rename(cl, "a", "a2")
        for gone in (opened, after_a, after_b):
            found, _, updates = since(cl, gone)
            assert not found, gone
            assert {r["initial"]["name"] for r in updates["Logical_Switch"].values()} \
                == {"a2", "b"}
        _, latest, _ = since(cl, ZERO)
        found, last, updates = since(cl, latest)
        assert found and last == latest and not updates


def test_at_most_100_transactions(server: ServerProcess) -> None:
    with Client(server.unix, timeout=10) as cl:
        insert(cl, "bulk", n_pairs=5000)  # more atoms than 100 renames below count
        insert(cl, "n-1")
        ids = []
        for i in range(101):
            rename(cl, f"n{i - 1}", f"n{i}")
            ids.append(since(cl, ZERO)[1])
        # 101 renames after the inserts: the 100 newest are kept, so the first
        # rename's id (the 101st newest) is gone and the second's still resumes.
        found, _, _ = since(cl, ids[0])
        assert not found
        found, _, updates = since(cl, ids[1])
        assert found
        assert [r["modify"]["name"] for r in updates["Logical_Switch"].values()] == ["n100"]
