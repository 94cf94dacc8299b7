"""Operations: result shapes and semantics of insert, select, update, mutate, delete,
wait, commit, comment, assert; `_version`; named uuids."""

from __future__ import annotations

import re
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from unit_helpers import (
    ANY_UUID,
    UU,
    UUID_RX,
    ZERO,
    Blocked,
    Case,
    Committed,
    Failed,
    Re,
    U,
    by_uuid,
    case_params,
    commit,
    dele,
    execute_ops,
    fail,
    ins,
    mut,
    new_db,
    row_json,
    run_case,
    schema,
    sel,
    select,
    snapshot,
    upd,
    uuids,
)

from pyovsdb.ovsdb import transaction
from pyovsdb.ovsdb.database import Database
from pyovsdb.ovsdb.ids import SeededUuids

ALL_A_COLUMNS = {
    "_uuid", "_version", "i", "r", "b", "s", "u", "imm", "eph", "oi", "or", "ob", "os", "ou",
    "si", "sr", "sb", "ss", "su", "s23", "s1u", "m", "m12", "mir", "sref", "oref", "wref",
    "rm", "wkm", "wvm", "nref", "wnref",
}

# ---------------------------------------------------------------------------------------
# insert


def test_insert_result_is_a_fresh_lowercase_uuid() -> None:
    db = new_db()
    r1, r2 = commit(db, [ins("B", {"name": "a"}), ins("B", {"name": "b"})])
    assert r1 == {"uuid": ANY_UUID} and r2 == {"uuid": ANY_UUID}
    assert r1 != r2
    assert set(db.tables["B"].rows) == {r1["uuid"][1], r2["uuid"][1]}


def test_insert_explicit_uuid() -> None:
    db = new_db()
    assert commit(db, [ins("B", {"name": "a"}, uuid=U(0xFF).upper())]) == [{"uuid": UU(0xFF)}]
    assert list(db.tables["B"].rows) == [U(0xFF)]


def test_insert_defaults() -> None:
    db = new_db()
    commit(db, [ins("A", {}, uuid=1)])
    row = select(db, "A")[0]
    assert set(row) == ALL_A_COLUMNS
    assert row["_uuid"] == UU(1)
    assert row["_version"] == ANY_UUID
    expected = {
        "i": 0, "r": 0, "b": False, "s": "", "u": ["uuid", ZERO], "imm": 0, "eph": 0,
        "oi": ["set", []], "or": ["set", []], "ob": ["set", []], "os": ["set", []],
        "ou": ["set", []], "si": ["set", []], "sr": ["set", []], "sb": ["set", []],
        "ss": ["set", []], "su": ["set", []], "m": ["map", []], "mir": ["map", []],
        "sref": ["set", []], "oref": ["set", []], "wref": ["set", []], "rm": ["map", []],
        "wkm": ["map", []], "wvm": ["map", []], "nref": ["set", []],
        "wnref": ["set", []],
    }
    assert {k: row[k] for k in expected} == expected
    assert type(row["r"]) is float


def test_insert_defaults_min_one_sets_and_maps() -> None:
    db = new_db()
    commit(db, [ins("A", {}, uuid=1)])
    assert row_json(db, "A", U(1), "s23", "s1u", "m12") == {
        "s23": 0, "s1u": 0, "m12": ["map", [["", ""]]],
    }


def test_insert_values_round_trip() -> None:
    db = new_db()
    commit(db, [ins("B", {"name": "b1"}, uuid=0xB1), ins("B", {"name": "b2"}, uuid=0xB2)])
    row = {
        "i": -5, "r": 2.5, "b": True, "s": "héllo\n\"q\"", "u": UU(7), "imm": 3, "eph": 4,
        "oi": 1, "or": ["set", [0.5]], "ob": False, "os": "x", "ou": UU(8),
        "si": ["set", [3, -1, 2]], "sr": ["set", [2.5, -0.5]], "sb": ["set", [True, False]],
        "ss": ["set", ["b", "B", "a", "A", "z"]], "su": ["set", [UU(9), UU(3)]],
        "s23": ["set", [3, 1]], "s1u": 5, "m": ["map", [["b", 2], ["a", 1]]],
        "m12": ["map", [["k", "v"]]], "mir": ["map", [[2, 0.25], [-1, 1.0]]],
        "sref": ["set", [UU(0xB2), UU(0xB1)]], "oref": UU(0xB1), "wref": UU(0xB2),
        "rm": ["map", [["x", UU(0xB1)]]], "wkm": ["map", [[UU(0xB1), 1], [UU(0xB2), 2]]],
        "wvm": ["map", [["y", UU(0xB2)]]],
    }
    commit(db, [ins("A", row, uuid=1)])
    got = select(db, "A", columns=sorted(row))[0]
    assert got == {
        "i": -5, "r": 2.5, "b": True, "s": "héllo\n\"q\"", "u": UU(7), "imm": 3, "eph": 4,
        "oi": 1, "or": 0.5, "ob": False, "os": "x", "ou": UU(8),
        "si": ["set", [-1, 2, 3]], "sr": ["set", [-0.5, 2.5]], "sb": ["set", [False, True]],
        "ss": ["set", ["A", "B", "a", "b", "z"]], "su": ["set", [UU(3), UU(9)]],
        "s23": ["set", [1, 3]], "s1u": 5, "m": ["map", [["a", 1], ["b", 2]]],
        "m12": ["map", [["k", "v"]]], "mir": ["map", [[-1, 1.0], [2, 0.25]]],
        "sref": ["set", [UU(0xB1), UU(0xB2)]], "oref": UU(0xB1), "wref": UU(0xB2),
        "rm": ["map", [["x", UU(0xB1)]]], "wkm": ["map", [[UU(0xB1), 1], [UU(0xB2), 2]]],
        "wvm": ["map", [["y", UU(0xB2)]]],
    }


def test_uuid_name_and_forward_reference() -> None:
    db = new_db()
    res = commit(db, [
        ins("A", {"sref": ["named-uuid", "bb"], "oref": ["named-uuid", "bb"]}, uuid=1),
        ins("B", {"name": "b"}, name="bb"),
        sel("A", by_uuid(1), columns=["sref"]),
    ])
    b_uuid = res[1]["uuid"]
    assert res[1] == {"uuid": ANY_UUID}
    assert res[2] == {"rows": [{"sref": b_uuid}]}
    assert row_json(db, "A", U(1), "sref", "oref") == {"sref": b_uuid, "oref": b_uuid}


def test_uuid_name_with_explicit_uuid() -> None:
    db = new_db()
    res = commit(db, [
        ins("B", {"name": "b"}, uuid=0xB1, name="bb"),
        ins("A", {"sref": ["named-uuid", "bb"]}, uuid=1),
    ])
    assert res[0] == {"uuid": UU(0xB1)}
    assert row_json(db, "A", U(1), "sref") == {"sref": UU(0xB1)}


def test_forward_reference_to_explicit_uuid_is_stale() -> None:
    """Quirk: a reference parsed before the defining insert keeps the name's first
    (random) uuid if that insert sets an explicit uuid."""
    db = new_db()
    results = fail(db, [
        ins("A", {"sref": ["named-uuid", "bb"]}, uuid=1),
        ins("B", {"name": "b"}, uuid=0xB1, name="bb"),
    ])
    assert results == [
        {"uuid": UU(1)},
        {"uuid": UU(0xB1)},
        {"error": "referential integrity violation",
         "details": Re(f"Table A column sref row {U(1)} references nonexistent row "
                       f"(?!{U(0xB1)}){UUID_RX} in table B\\.")},
    ]


def test_unknown_named_uuid_in_plain_uuid_column_gets_random_uuid() -> None:
    db = new_db()
    commit(db, [ins("A", {"u": ["named-uuid", "nobody"], "su": ["named-uuid", "nobody"]},
                    uuid=1)])
    got = row_json(db, "A", U(1), "u", "su")
    assert got["u"] == ANY_UUID and got["u"] != ["uuid", ZERO]
    assert got["su"] == got["u"]  # the same name means the same uuid


def test_unknown_named_uuid_in_strong_ref_fails_at_commit() -> None:
    db = new_db()
    results = fail(db, [ins("A", {"sref": ["named-uuid", "nobody"]}, uuid=1)])
    assert results == [
        {"uuid": UU(1)},
        {"error": "referential integrity violation",
         "details": Re(f"Table A column sref row {U(1)} references nonexistent row "
                       f"{UUID_RX} in table B\\.")},
    ]


def test_unknown_named_uuid_in_weak_ref_is_dropped() -> None:
    db = new_db()
    commit(db, [ins("B", {"name": "b"}, uuid=0xB1)])
    commit(db, [ins("A", {"wref": ["set", [["named-uuid", "nobody"], UU(0xB1)]]}, uuid=1)])
    assert row_json(db, "A", U(1), "wref") == {"wref": UU(0xB1)}


def test_self_reference_via_own_uuid_name() -> None:
    db = new_db()
    res = commit(db, [ins("B", {"name": "me", "self": ["named-uuid", "me"]}, name="me")])
    uuid = res[0]["uuid"][1]
    assert row_json(db, "B", uuid, "self", "_uuid") == {"self": ["uuid", uuid],
                                                       "_uuid": ["uuid", uuid]}
    # A reference to itself does not keep a row alive.
    assert commit(db, [dele("B", [])]) == [{"count": 1}]
    assert select(db, "B") == []


def test_named_uuid_in_where_clause() -> None:
    db = new_db()
    res = commit(db, [
        ins("B", {"name": "x"}, name="nb"),
        sel("B", [["_uuid", "==", ["named-uuid", "nb"]]], columns=["name"]),
        upd("B", [["_uuid", "==", ["named-uuid", "nb"]]], {"n": 7}),
        sel("B", [["_uuid", "==", ["named-uuid", "unknown"]]]),
        dele("B", [["_uuid", "==", ["named-uuid", "unknown"]]]),
    ])
    assert res[1:] == [{"rows": [{"name": "x"}]}, {"count": 1}, {"rows": []}, {"count": 0}]
    assert [r["n"] for r in select(db, "B")] == [7]


def test_uuid_reusable_after_delete_in_later_transaction() -> None:
    db = new_db()
    commit(db, [ins("B", {"name": "a"}, uuid=1)])
    commit(db, [dele("B", [])])
    assert commit(db, [ins("B", {"name": "b"}, uuid=1)]) == [{"uuid": UU(1)}]


# ---------------------------------------------------------------------------------------
# select


def _three_a_rows() -> object:
    db = new_db()
    commit(db, [
        ins("A", {"i": 2, "b": False, "s": "x", "r": 1.5}, uuid=1),
        ins("A", {"i": 1, "b": False, "s": "y", "r": 0.5}, uuid=2),
        ins("A", {"i": 3, "b": True, "s": "x", "r": -1}, uuid=3),
    ])
    return db


def test_select_all_columns() -> None:
    db = _three_a_rows()
    rows = select(db, "A")
    assert len(rows) == 3
    assert all(set(r) == ALL_A_COLUMNS for r in rows)
    assert uuids(rows) == {U(1), U(2), U(3)}
    assert {r["_uuid"][1]: r["i"] for r in rows} == {U(1): 2, U(2): 1, U(3): 3}


def test_select_given_columns_exactly() -> None:
    db = _three_a_rows()
    rows = select(db, "A", [["i", "==", 1]], columns=["s", "i"])
    assert rows == [{"s": "y", "i": 1}]
    rows = select(db, "A", [["i", "==", 1]], columns=["_version", "_uuid"])
    assert rows == [{"_uuid": UU(2), "_version": ANY_UUID}]


SELECT_CASES = [
    Case(
        "columns-empty-gives-one-empty-row",
        [sel("B", columns=[])],
        [{"rows": [{}]}],
        setup=[[ins("B", {"name": "a"}), ins("B", {"name": "b"})]],
    ),
    Case("columns-empty-no-rows", [sel("B", columns=[])], [{"rows": []}]),
    Case(
        "dedup-on-selected-columns",
        [sel("A", columns=["b"])],
        [{"rows": [{"b": False}]}],
        setup=[[ins("A", {"i": 1}), ins("A", {"i": 2})]],
    ),
    Case(
        "dedup-two-columns",
        [sel("A", columns=["b", "s"], sort=["s"])],
        [{"rows": [{"b": False, "s": "x"}, {"b": False, "s": "y"}]}],
        setup=[[ins("A", {"i": 1, "s": "x"}), ins("A", {"i": 2, "s": "y"}),
                ins("A", {"i": 3, "s": "x"})]],
    ),
    Case(
        "no-dedup-with-uuid",
        [sel("A", columns=["b", "_uuid"], sort=["_uuid"])],
        [{"rows": [{"b": False, "_uuid": UU(1)}, {"b": False, "_uuid": UU(2)}]}],
        setup=[[ins("A", {"i": 1}, uuid=1), ins("A", {"i": 2}, uuid=2)]],
    ),
    Case(
        "sort-integer",
        [sel("A", columns=["i"], sort=["i"])],
        [{"rows": [{"i": -7}, {"i": 0}, {"i": 3}]}],
        setup=[[ins("A", {"i": 3}), ins("A", {"i": -7}), ins("A", {"i": 0})]],
    ),
    Case(
        "sort-string-bytewise",
        [sel("A", columns=["s"], sort=["s"])],
        [{"rows": [{"s": "B"}, {"s": "a"}, {"s": "é"}]}],
        setup=[[ins("A", {"s": "é"}), ins("A", {"s": "a"}), ins("A", {"s": "B"})]],
    ),
    Case(
        "sort-real-and-bool",
        [sel("A", columns=["b", "r"], sort=["b", "r"])],
        [{"rows": [{"b": False, "r": -1.5}, {"b": False, "r": 2.25}, {"b": True, "r": 0}]}],
        setup=[[ins("A", {"b": True, "r": 0}), ins("A", {"r": 2.25}), ins("A", {"r": -1.5})]],
    ),
    Case(
        "sort-two-columns",
        [sel("A", columns=["s", "i"], sort=["s", "i"])],
        [{"rows": [{"s": "a", "i": 1}, {"s": "a", "i": 2}, {"s": "b", "i": 0}]}],
        setup=[[ins("A", {"s": "b", "i": 0}), ins("A", {"s": "a", "i": 2}),
                ins("A", {"s": "a", "i": 1})]],
    ),
    Case(
        "sort-by-unselected-column",
        [sel("A", columns=["_uuid"], sort=["i"])],
        [{"rows": [{"_uuid": UU(2)}, {"_uuid": UU(3)}, {"_uuid": UU(1)}]}],
        setup=[[ins("A", {"i": 9}, uuid=1), ins("A", {"i": -1}, uuid=2),
                ins("A", {"i": 4}, uuid=3)]],
    ),
    Case(
        "sort-optional-empty-first",
        [sel("A", columns=["oi"], sort=["oi"])],
        [{"rows": [{"oi": ["set", []]}, {"oi": 1}, {"oi": 5}]}],
        setup=[[ins("A", {"oi": 5}), ins("A", {}), ins("A", {"oi": 1})]],
    ),
    Case(
        "sort-set-by-size-first",
        [sel("A", columns=["si"], sort=["si"])],
        [{"rows": [{"si": ["set", []]}, {"si": 5}, {"si": ["set", [1, 2]]}]}],
        setup=[[ins("A", {"si": ["set", [5]]}), ins("A", {"si": ["set", [1, 2]]}),
                ins("A", {})]],

    ),
    Case(
        "sort-bad-column",
        [sel("A", sort=["zz"])],
        [{"error": "syntax error", "details": "zz is not a valid column name",
          "syntax": '["zz"]'}],
    ),
    Case(
        "where-true-false-literals",
        [sel("B", [True], columns=["name"]), sel("B", [False]),
         sel("B", [True, ["name", "==", "b"]], columns=["name"])],
        [{"rows": [{"name": "b"}]}, {"rows": []}, {"rows": [{"name": "b"}]}],
        setup=[[ins("B", {"name": "b"})]],
    ),
    Case(
        "where-clauses-anded",
        [sel("A", [["i", ">", 1], ["s", "==", "x"]], columns=["i"])],
        [{"rows": [{"i": 2}]}],
        setup=[[ins("A", {"i": 1, "s": "x"}), ins("A", {"i": 2, "s": "x"}),
                ins("A", {"i": 3, "s": "y"})]],
    ),
    Case(
        "select-sees-own-changes",
        [
            ins("B", {"name": "new", "n": 1}, uuid=2),
            upd("B", [["name", "==", "old"]], {"n": 5}),
            sel("B", columns=["name", "n"], sort=["name"]),
            dele("B", [["name", "==", "old"]]),
            sel("B", columns=["name"]),
            ins("B", {"name": "tmp"}, uuid=3),
            dele("B", by_uuid(3)),
            sel("B", columns=["name"]),
        ],
        [
            {"uuid": UU(2)}, {"count": 1},
            {"rows": [{"name": "new", "n": 1}, {"name": "old", "n": 5}]},
            {"count": 1}, {"rows": [{"name": "new"}]},
            {"uuid": UU(3)}, {"count": 1}, {"rows": [{"name": "new"}]},
        ],
        setup=[[ins("B", {"name": "old"}, uuid=1)]],
    ),
    Case(
        "insert-then-delete-then-select",
        [ins("B", {"name": "a"}), dele("B", []), sel("B")],
        [{"uuid": ANY_UUID}, {"count": 1}, {"rows": []}],
    ),
]


@pytest.mark.parametrize("case", case_params(SELECT_CASES))
def test_select_cases(case: Case) -> None:
    run_case(case)


# ---------------------------------------------------------------------------------------
# update / mutate / delete counts and _version

COUNT_CASES = [
    Case(
        "update-count-matches",
        [upd("A", [["i", ">=", 2]], {"s": "z"}), sel("A", [["s", "==", "z"]], columns=["i"],
                                                     sort=["i"])],
        [{"count": 2}, {"rows": [{"i": 2}, {"i": 3}]}],
        setup=[[ins("A", {"i": 1}), ins("A", {"i": 2}), ins("A", {"i": 3})]],
    ),
    Case(
        "update-same-value-counted",
        [upd("A", [], {"i": 5})],
        [{"count": 1}],
        setup=[[ins("A", {"i": 5})]],
    ),
    Case(
        "update-empty-row-counts-all",
        [upd("A", [], {})],
        [{"count": 2}],
        setup=[[ins("A", {"i": 5}), ins("A", {"i": 6})]],
    ),
    Case("update-no-match", [upd("A", [["i", "==", 9]], {"i": 1})], [{"count": 0}],
         setup=[[ins("A", {"i": 5})]]),
    Case(
        "mutate-empty-mutations-counts",
        [mut("A", [], [])],
        [{"count": 2}],
        setup=[[ins("A", {"i": 5}), ins("A", {"i": 6})]],
    ),
    Case(
        "mutate-count",
        [mut("A", [["i", "<", 6]], [["i", "+=", 10]]), sel("A", columns=["i"], sort=["i"])],
        [{"count": 1}, {"rows": [{"i": 6}, {"i": 15}]}],
        setup=[[ins("A", {"i": 5}), ins("A", {"i": 6})]],
    ),
    Case(
        "delete-count",
        [dele("A", [["i", "!=", 5]]), dele("A", [["i", "!=", 5]]),
         sel("A", columns=["i"])],
        [{"count": 2}, {"count": 0}, {"rows": [{"i": 5}]}],
        setup=[[ins("A", {"i": 5}), ins("A", {"i": 6}), ins("A", {"i": 7})]],
    ),
    Case(
        "deleted-row-not-matched-later",
        [dele("B", by_uuid(1)), upd("B", [], {"n": 5}), mut("B", by_uuid(1), [["n", "+=", 1]]),
         dele("B", by_uuid(1)), sel("B", by_uuid(1)), sel("B", columns=["name", "n"])],
        [{"count": 1}, {"count": 1}, {"count": 0}, {"count": 0}, {"rows": []},
         {"rows": [{"name": "b", "n": 5}]}],
        setup=[[ins("B", {"name": "a"}, uuid=1), ins("B", {"name": "b"}, uuid=2)]],
    ),
    Case(
        "lookup-by-uuid-sees-updates",
        [upd("B", by_uuid(1), {"n": 9}),
         sel("B", [["_uuid", "==", UU(1)], ["n", "==", 9]], columns=["name"]),
         sel("B", [["_uuid", "includes", UU(1)], ["n", "==", 0]], columns=["name"]),
         sel("B", [["n", "==", 9], ["_uuid", "==", UU(2)]], columns=["name"])],
        [{"count": 1}, {"rows": [{"name": "a"}]}, {"rows": []}, {"rows": []}],
        setup=[[ins("B", {"name": "a"}, uuid=1), ins("B", {"name": "b"}, uuid=2)]],
    ),
    Case(
        "update-row-inserted-in-same-transaction",
        [ins("B", {"name": "a"}, uuid=1), upd("B", by_uuid(1), {"n": 3}),
         mut("B", by_uuid(1), [["n", "*=", 2]]), sel("B", columns=["n"])],
        [{"uuid": UU(1)}, {"count": 1}, {"count": 1}, {"rows": [{"n": 6}]}],
    ),
]


@pytest.mark.parametrize("case", case_params(COUNT_CASES))
def test_count_cases(case: Case) -> None:
    run_case(case)


def _version(db: object, table: str, uuid: str) -> list:
    return row_json(db, table, uuid, "_version")["_version"]


def test_version_of_new_row_visible_and_kept() -> None:
    db = new_db()
    res = commit(db, [ins("B", {"name": "a"}, uuid=1), sel("B", columns=["_version"])])
    v_in_txn = res[1]["rows"][0]["_version"]
    assert v_in_txn == ANY_UUID
    assert _version(db, "B", U(1)) == v_in_txn


def test_version_changes_only_when_values_change() -> None:
    db = new_db()
    commit(db, [ins("B", {"name": "a", "n": 5}, uuid=1)])
    v0 = _version(db, "B", U(1))
    # Same value: matched and counted, but not a change.
    assert commit(db, [upd("B", [], {"n": 5})]) == [{"count": 1}]
    assert _version(db, "B", U(1)) == v0
    assert commit(db, [mut("B", [], [["n", "+=", 0]])]) == [{"count": 1}]
    assert _version(db, "B", U(1)) == v0
    # Changed and back within one transaction: no change.
    out = execute_ops(db, [upd("B", [], {"n": 6}), upd("B", [], {"n": 5})])
    assert isinstance(out, Committed) and not out.changeset
    db.apply(out.changeset)
    assert _version(db, "B", U(1)) == v0
    # A real change gets a fresh version, not visible inside the transaction.
    res = commit(db, [upd("B", [], {"n": 6}), sel("B", columns=["_version", "n"])])
    assert res[1] == {"rows": [{"_version": v0, "n": 6}]}
    v1 = _version(db, "B", U(1))
    assert v1 != v0 and v1 == ANY_UUID
    commit(db, [upd("B", [], {"n": 7})])
    assert _version(db, "B", U(1)) not in (v0, v1)


def test_unchanged_update_leaves_changeset_empty() -> None:
    db = new_db()
    commit(db, [ins("B", {"name": "a", "n": 5}, uuid=1)])
    out = execute_ops(db, [upd("B", [], {"n": 5, "name": "a"}), mut("B", [], [])])
    assert isinstance(out, Committed)
    assert out.results == [{"count": 1}, {"count": 1}]
    assert not out.changeset and out.changeset.n_rows() == 0


def test_where_on_version() -> None:
    db = new_db()
    commit(db, [ins("B", {"name": "a"}, uuid=1), ins("B", {"name": "b"}, uuid=2)])
    v1 = _version(db, "B", U(1))
    assert select(db, "B", [["_version", "==", v1]], columns=["name"]) == [{"name": "a"}]
    assert select(db, "B", [["_version", "!=", v1]], columns=["name"]) == [{"name": "b"}]


# ---------------------------------------------------------------------------------------
# wait


def _wait(rows: list, *, until: str = "==", where: list | None = None, columns: list | None
          = None, timeout: int | None = None, table: str = "B") -> dict:
    op: dict = {"op": "wait", "table": table, "where": where or [], "until": until,
                "rows": rows}
    if columns is not None:
        op["columns"] = columns
    if timeout is not None:
        op["timeout"] = timeout
    return op


WAIT_CASES = [
    Case(
        "wait-eq-satisfied-with-columns",
        [_wait([{"name": "a", "n": 1}, {"name": "b", "n": 2}], columns=["name", "n"],
               timeout=0)],
        [{}],
        setup=[[ins("B", {"name": "a", "n": 1}), ins("B", {"name": "b", "n": 2})]],
    ),
    Case(
        "wait-eq-unsatisfied-subset",
        [_wait([{"name": "a", "n": 1}], columns=["name", "n"], timeout=0)],
        [{"error": "timed out", "details": '"where" clause test failed'}],
        setup=[[ins("B", {"name": "a", "n": 1}), ins("B", {"name": "b", "n": 2})]],
    ),
    Case(
        "wait-ne-satisfied",
        [_wait([{"n": 9}], columns=["n"], until="!=", timeout=0)],
        [{}],
        setup=[[ins("B", {"name": "a", "n": 1})]],
    ),
    Case(
        "wait-where-restricts",
        [_wait([{"n": 1}], where=[["name", "==", "a"]], columns=["n"], timeout=0)],
        [{}],
        setup=[[ins("B", {"name": "a", "n": 1}), ins("B", {"name": "b", "n": 2})]],
    ),
    Case(
        "wait-rows-are-a-set",
        [_wait([{"n": 1}, {"n": 1}], columns=["n"], timeout=0)],
        [{}],
        setup=[[ins("B", {"name": "a", "n": 1}), ins("B", {"name": "b", "n": 1})]],
    ),
    Case(
        "wait-omitted-columns-default-values",
        [_wait([{"name": "a"}], columns=["name", "n", "self"], timeout=0)],
        [{}],
        setup=[[ins("B", {"name": "a"})]],
    ),
    Case(
        "wait-on-uuid",
        [_wait([{"_uuid": UU(1)}], columns=["_uuid"], timeout=0)],
        [{}],
        setup=[[ins("B", {"name": "a"}, uuid=1)]],
    ),
    Case(
        "wait-all-columns-includes-uuid",
        [_wait([{"name": "a", "n": 0}], timeout=0)],
        [{"error": "timed out", "details": '"where" clause test failed'}],
        setup=[[ins("B", {"name": "a"}, uuid=1)]],
    ),
    Case(
        "wait-empty-where-false",
        [_wait([], where=[False], timeout=0)],
        [{}],
        setup=[[ins("B", {"name": "a"})]],
    ),
    Case(
        "wait-sees-own-changes",
        [ins("B", {"name": "a"}), _wait([{"name": "a"}], columns=["name"], timeout=0)],
        [{"uuid": ANY_UUID}, {}],
    ),
    Case(
        "wait-named-uuid-in-rows",
        [ins("B", {"name": "a"}, name="x"),
         _wait([{"_uuid": ["named-uuid", "x"]}], columns=["_uuid"], timeout=0)],
        [{"uuid": ANY_UUID}, {}],
    ),
]


@pytest.mark.parametrize("case", case_params(WAIT_CASES))
def test_wait_cases(case: Case) -> None:
    run_case(case)


def _db_with_b() -> object:
    db = new_db()
    commit(db, [ins("B", {"name": "a", "n": 1}, uuid=1)])
    return db


UNSAT = _wait([{"n": 2}], columns=["n"])


def test_wait_with_timeout_blocks_until_deadline() -> None:
    db = _db_with_b()
    before = snapshot(db)
    op = dict(UNSAT, timeout=200)
    out = execute_ops(db, [ins("B", {"name": "x"}), op], now=1000, started=1000)
    assert isinstance(out, Blocked) and out.deadline == 1200
    out = execute_ops(db, [ins("B", {"name": "x"}), op], now=1199, started=1000)
    assert isinstance(out, Blocked) and out.deadline == 1200
    assert snapshot(db) == before
    out = execute_ops(db, [ins("B", {"name": "x"}), op, sel("B")], now=1200, started=1000)
    assert isinstance(out, Failed)
    assert out.results == [
        {"uuid": ANY_UUID},
        {"error": "timed out", "details": '"wait" timed out after 200 ms'},
        None,
    ]
    out = execute_ops(db, [op], now=1250, started=1000)
    assert out.results == [{"error": "timed out", "details": '"wait" timed out after 250 ms'}]
    assert snapshot(db) == before


def test_wait_without_timeout_blocks_forever() -> None:
    db = _db_with_b()
    for now in (0, 10**6, 10**12):
        out = execute_ops(db, [UNSAT], now=now, started=0)
        assert isinstance(out, Blocked) and out.deadline is None


def test_blocked_wait_completes_after_database_change() -> None:
    db = _db_with_b()
    ops = [dict(UNSAT, timeout=10_000), upd("B", [], {"name": "done"})]
    out = execute_ops(db, ops, now=0, started=0)
    assert isinstance(out, Blocked) and out.deadline == 10_000
    commit(db, [upd("B", [], {"n": 2})])
    out = execute_ops(db, ops, now=300, started=0)
    assert isinstance(out, Committed)
    assert out.results == [{}, {"count": 1}]
    db.apply(out.changeset)
    assert select(db, "B", columns=["name", "n"]) == [{"name": "done", "n": 2}]


def test_blocked_deadline_is_smallest_timeout_seen() -> None:
    db = _db_with_b()
    sat = _wait([{"n": 1}], columns=["n"])
    out = execute_ops(db, [dict(sat, timeout=300), dict(UNSAT, timeout=500)], now=50,
                      started=50)
    assert isinstance(out, Blocked) and out.deadline == 350
    # A wait without timeout after a satisfied wait with one: the trigger still has the
    # earlier timeout, but the untimed wait never times out.
    out = execute_ops(db, [dict(sat, timeout=300), UNSAT], now=50, started=50)
    assert isinstance(out, Blocked) and out.deadline == 350
    out = execute_ops(db, [dict(sat, timeout=300), UNSAT], now=5000, started=50)
    assert isinstance(out, Blocked)


def test_wait_timeout_zero_after_elapsed_time() -> None:
    """Observed on 3.1: [wait t=5000 (satisfied only after another client's commit),
    wait t=0 unsatisfied] completes 301 ms later with '"wait" timed out after 301 ms'."""
    db = _db_with_b()
    ops = [dict(UNSAT, timeout=5000), _wait([{"name": "zz"}], columns=["name"], timeout=0)]
    assert isinstance(execute_ops(db, ops, now=0, started=0), Blocked)
    commit(db, [upd("B", [], {"n": 2})])
    out = execute_ops(db, ops, now=301, started=0)
    assert isinstance(out, Failed)
    assert out.results == [{}, {"error": "timed out",
                                "details": '"wait" timed out after 301 ms'}]


# ---------------------------------------------------------------------------------------
# comment / commit / empty


def test_comments_go_into_changeset() -> None:
    db = new_db()
    out = execute_ops(db, [{"op": "comment", "comment": "first"}, ins("B", {"name": "a"}),
                           {"op": "comment", "comment": "second"}])
    assert isinstance(out, Committed)
    assert out.results == [{}, {"uuid": ANY_UUID}, {}]
    assert out.changeset.comment == "first\nsecond"


def test_empty_transaction() -> None:
    db = new_db()
    out = execute_ops(db, [])
    assert isinstance(out, Committed)
    assert out.results == [] and not out.changeset and out.durable is False


def test_read_only_transaction_has_empty_changeset() -> None:
    db = _db_with_b()
    out = execute_ops(db, [sel("B"), {"op": "comment", "comment": "c"},
                           {"op": "commit", "durable": True}])
    assert isinstance(out, Committed) and not out.changeset and out.durable is True


# -- where UUIDs and versions come from ------------------------------------------------


def _seeded_run(seed: int) -> list[tuple[str, str, str]]:
    """(table, uuid, version) of every row after a fixed script, on a database seeded
    with `seed` for both sources."""
    db = Database(schema(), uuids=SeededUuids(seed), versions=SeededUuids(seed + 1000))
    commit(db, [ins("B", {"name": "x"}), ins("B", {"name": "y"}, name="n"),
                ins("A", {"sref": ["named-uuid", "n"]})])
    commit(db, [upd("B", [["name", "==", "x"]], {"name": "z"})])
    return sorted((t, u, r.version) for t, table in db.tables.items()
                  for u, r in table.rows.items())


def test_seeded_sources_make_runs_reproducible() -> None:
    first, again = _seeded_run(7), _seeded_run(7)
    assert first == again
    assert len(first) == 3
    other = _seeded_run(8)
    assert {u for _, u, _ in first}.isdisjoint(u for _, u, _ in other)
    assert {v for _, _, v in first}.isdisjoint(v for _, _, v in other)


def test_uuids_and_versions_come_from_the_database_sources() -> None:
    made: list[str] = []

    def make_uuid() -> str:
        made.append(U(0x100 + len(made)))
        return made[-1]

    versions = iter(U(0x200 + i) for i in range(100))
    db = Database(schema(), uuids=make_uuid, versions=lambda: next(versions))
    (r,) = commit(db, [ins("B", {"name": "x"})])
    assert r == {"uuid": UU(0x100)}
    assert db.tables["B"].rows[U(0x100)].version == U(0x200)
    commit(db, [upd("B", [], {"name": "y"})])
    assert db.tables["B"].rows[U(0x100)].version == U(0x201)  # a fresh version per change
    commit(db, [upd("B", [], {"name": "y"})])  # no change: no new version
    assert db.tables["B"].rows[U(0x100)].version == U(0x201)
    assert made == [U(0x100)]


def test_seeded_uuids_are_version_4() -> None:
    gen = SeededUuids(0)
    values = [gen() for _ in range(1000)]
    assert len(set(values)) == 1000
    for v in values:
        assert re.fullmatch(UUID_RX, v)
        assert v[14] == "4" and v[19] in "89ab"
    assert SeededUuids(0)() == values[0]


# ---------------------------------------------------------------------------------------
# A `where` that pins every column of a table index finds its committed row through the
# index, not by a scan: the results, the order of the rows and the changes must be those
# of the scan, also after earlier operations of the same transaction changed the table.

_X, _Y = [1, 2, 3], ["a", "b", "c"]


@st.composite
def _indexed_case(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    def where() -> list[Any]:
        clauses: list[Any] = []
        for col, pool in (("x", _X), ("y", _Y), ("z", [0, 1])):
            if draw(st.booleans()):
                clauses.append([col, draw(st.sampled_from(["==", "==", "includes", "!="])),
                                draw(st.sampled_from(pool))])
        return clauses

    def row() -> dict[str, Any]:
        return {"x": draw(st.sampled_from(_X)), "y": draw(st.sampled_from(_Y)),
                "z": draw(st.sampled_from([0, 1]))}

    setup = [{"op": "insert", "table": "I2", "row": {"x": x, "y": y}}
             for x, y in zip(_X, draw(st.permutations(_Y)), strict=True)]
    ops: list[Any] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["select", "update", "delete", "insert", "mutate"]))
        if kind == "select":
            ops.append({"op": "select", "table": "I2", "where": where()})
        elif kind == "update":
            ops.append({"op": "update", "table": "I2", "where": where(),
                        "row": {k: v for k, v in row().items() if draw(st.booleans())}})
        elif kind == "delete":
            ops.append({"op": "delete", "table": "I2", "where": where()})
        elif kind == "insert":
            ops.append({"op": "insert", "table": "I2", "row": row()})
        else:
            ops.append({"op": "mutate", "table": "I2", "where": where(),
                        "mutations": [["z", "+=", 1]]})
    return setup, ops


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_indexed_case())
def test_an_index_lookup_answers_as_a_scan(case: tuple[list[Any], list[Any]]) -> None:
    setup, ops = case

    def outcome() -> tuple[Any, Any]:
        db = new_db()
        commit(db, setup)
        before = {u: dict(r.data) for u, r in db.tables["I2"].rows.items()}
        out = execute_ops(db, ops)
        changes = None
        if isinstance(out, Committed):
            changes = {u: (ch.old and dict(ch.old.data), ch.new and dict(ch.new.data))
                       for u, ch in out.changeset.tables.get("I2", {}).items()}
        return (out.results, changes), before

    with_index, before = outcome()
    with mock.patch.object(transaction, "_index_lookup", lambda table, pinned: None):
        scanned, before2 = outcome()
    assert before == before2
    assert with_index == scanned
