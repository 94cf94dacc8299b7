"""LocalDb: the in-memory database and its replica stay equal, transaction by
transaction, and an IDL transaction over it sends only what changes."""

from __future__ import annotations

import pytest

from pyovsdb.northd.testing import Nb, TransactError


def test_replica_follows_inserts_updates_deletes(nb: Nb) -> None:
    ls = nb.ls_add("sw0", other_config={"subnet": "10.0.0.0/24"})
    p1 = nb.lsp_add("sw0", "p1", addresses=["00:00:00:00:00:01 10.0.0.2"])
    row = nb.db.tables["Logical_Switch"].rows[ls]
    assert row.name == "sw0"
    assert row.other_config == {"subnet": "10.0.0.0/24"}
    assert [p.name for p in row.ports] == ["p1"]

    cs = nb.db.update("Logical_Switch_Port", p1, addresses=["dynamic"], tag_request=5)
    ch = cs.tables["Logical_Switch_Port"][p1]
    assert ch.old is not None and ch.old.addresses == ["00:00:00:00:00:01 10.0.0.2"]
    assert ch.new is not None and ch.new.addresses == ["dynamic"] and ch.new.tag_request == 5

    nb.lsp_add("sw0", "p2")
    cs = nb.db.delete("Logical_Switch", ls)
    # The switch goes, and its ports with it (garbage collected, non-root table).
    assert set(cs.tables) == {"Logical_Switch", "Logical_Switch_Port"}
    assert all(ch.new is None for ch in cs.tables["Logical_Switch_Port"].values())
    for name, table in nb.db.db.tables.items():
        assert set(table.rows) == set(nb.db.tables[name].rows), name


def test_failed_transaction_raises_and_changes_nothing(nb: Nb) -> None:
    nb.ls_add("sw0")
    with pytest.raises(TransactError):
        nb.db.transact([{"op": "insert", "table": "Logical_Switch",
                         "row": {"name": "sw1"}},
                        {"op": "insert", "table": "No_Such_Table", "row": {}}])
    assert sorted(r.name for r in nb.db.tables["Logical_Switch"].rows.values()) == ["sw0"]


def test_idl_transaction_sends_only_changes(nb: Nb) -> None:
    ls = nb.ls_add("sw0", external_ids={"a": "1"})
    row = nb.db.tables["Logical_Switch"].rows[ls]
    txn = nb.db.transaction()
    txn.update(row, name="sw0", external_ids={"a": "1"})
    cs, ops = nb.db.commit(txn)
    assert ops == [] and not cs
    txn = nb.db.transaction()
    txn.update(row, name="sw0", external_ids={"a": "2"})
    cs, ops = nb.db.commit(txn)
    assert [op["op"] for op in ops] == ["update"]
    assert ops[0]["row"] == {"external_ids": ["map", [["a", "2"]]]}
    assert nb.db.tables["Logical_Switch"].rows[ls].external_ids == {"a": "2"}
