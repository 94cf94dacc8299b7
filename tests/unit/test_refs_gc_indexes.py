"""Commit-time checks: strong references, garbage collection, maxRows, weak references
and index uniqueness, in the real server's order."""

from __future__ import annotations

import pytest
from unit_helpers import (
    ANY_UUID,
    INDEX_INSERTED,
    INDEX_MODIFIED_OTHER,
    INDEX_UNMODIFIED,
    UU,
    Case,
    OneOf,
    U,
    by_uuid,
    case_params,
    commit,
    dele,
    derived_state,
    execute_ops,
    fail,
    index_before,
    index_details,
    ins,
    mut,
    new_db,
    recomputed_derived_state,
    row_json,
    run_case,
    schema_no_root,
    sel,
    select,
    upd,
    uuids,
)


def RI(details: str) -> dict:
    return {"error": "referential integrity violation", "details": details}


def CV(details: str) -> dict:
    return {"error": "constraint violation", "details": details}


def nonexistent(table: str, col: str, row: int, target: int | str, ref_table: str = "B") -> dict:
    t = U(target) if isinstance(target, int) else target
    return RI(f"Table {table} column {col} row {U(row)} references nonexistent row {t} in "
              f"table {ref_table}.")


def cannot_delete(table: str, row: int, n: int) -> dict:
    return RI(f"cannot delete {table} row {U(row)} because of {n} remaining reference(s)")


B1 = ins("B", {"name": "b1", "n": 1}, uuid=0xB1)
B2 = ins("B", {"name": "b2", "n": 2}, uuid=0xB2)

# ---------------------------------------------------------------------------------------
# Strong references

STRONG_CASES = [
    Case(
        "insert-dangling-set",
        [ins("A", {"sref": ["set", [UU(0xB1), UU(0xDEAD)]]}, uuid=1)],
        [{"uuid": UU(1)}, nonexistent("A", "sref", 1, 0xDEAD)],
        setup=[[B1]],
    ),
    Case(
        "insert-dangling-optional",
        [ins("A", {"oref": UU(0xDEAD)}, uuid=1)],
        [{"uuid": UU(1)}, nonexistent("A", "oref", 1, 0xDEAD)],
    ),
    Case(
        "insert-dangling-map-value",
        [ins("A", {"rm": ["map", [["k", UU(0xDEAD)]]]}, uuid=1)],
        [{"uuid": UU(1)}, nonexistent("A", "rm", 1, 0xDEAD)],
    ),
    Case(
        "insert-zero-uuid-ref",
        [ins("A", {"oref": ["uuid", U(0)]}, uuid=1)],
        [{"uuid": UU(1)}, nonexistent("A", "oref", 1, 0)],
    ),
    Case(
        "update-dangling",
        [upd("A", [], {"sref": UU(0xDEAD)})],
        [{"count": 1}, nonexistent("A", "sref", 1, 0xDEAD)],
        setup=[[ins("A", {}, uuid=1)]],
    ),
    Case(
        "mutate-dangling",
        [mut("A", [], [["sref", "insert", UU(0xDEAD)]])],
        [{"count": 1}, nonexistent("A", "sref", 1, 0xDEAD)],
        setup=[[ins("A", {}, uuid=1)]],
    ),
    Case(
        "uuid-of-other-table-is-nonexistent",
        [ins("A", {"sref": UU(0xC)}, uuid=1)],
        [{"uuid": UU(1)}, nonexistent("A", "sref", 1, 0xC)],
        setup=[[ins("C", {"e": "red", "ie": 1, "ci": 1}, uuid=0xC)]],
    ),
    Case(
        "self-reference-nonexistent-target-in-other-table",
        [ins("N", {"child": UU(0xB1)}, uuid=0x11)],
        [{"uuid": UU(0x11)}, nonexistent("N", "child", 0x11, 0xB1, "N")],
        setup=[[B1]],
    ),
    Case(
        "ref-to-row-inserted-in-same-txn",
        [ins("B", {"name": "x"}, uuid=0xB1), ins("A", {"sref": UU(0xB1)}, uuid=1),
         sel("A", columns=["sref"])],
        [{"uuid": UU(0xB1)}, {"uuid": UU(1)}, {"rows": [{"sref": UU(0xB1)}]}],
    ),
    Case(
        "delete-referenced",
        [dele("B", by_uuid(0xB1))],
        [{"count": 1}, cannot_delete("B", 0xB1, 1)],
        setup=[[B1, ins("A", {"sref": UU(0xB1)}, uuid=1)]],
    ),
    Case(
        "delete-referenced-twice-by-one-row",
        [dele("B", by_uuid(0xB1))],
        [{"count": 1}, cannot_delete("B", 0xB1, 3)],
        setup=[[B1, ins("A", {"sref": UU(0xB1), "oref": UU(0xB1),
                              "rm": ["map", [["k", UU(0xB1)]]]}, uuid=1)]],
    ),
    Case(
        "delete-referenced-by-two-rows",
        [dele("B", by_uuid(0xB1))],
        [{"count": 1}, cannot_delete("B", 0xB1, 2)],
        setup=[[B1, ins("A", {"sref": UU(0xB1)}, uuid=1),
                ins("A", {"rm": ["map", [["a", UU(0xB1)], ["b", UU(0xB2)]]]}, uuid=2), B2]],
    ),
    Case(
        "delete-and-new-reference-same-txn",
        [dele("B", by_uuid(0xB1)), ins("A", {"sref": UU(0xB1)}, uuid=1)],
        [{"count": 1}, {"uuid": UU(1)}, cannot_delete("B", 0xB1, 1)],
        setup=[[B1]],
    ),
    Case(
        "delete-with-referencing-row",
        [dele("B", by_uuid(0xB1)), dele("A", by_uuid(1)), sel("B")],
        [{"count": 1}, {"count": 1}, {"rows": []}],
        setup=[[B1, ins("A", {"sref": UU(0xB1)}, uuid=1)]],
    ),
    Case(
        "delete-after-dropping-reference",
        [mut("A", [], [["sref", "delete", UU(0xB1)]]), dele("B", by_uuid(0xB1)),
         sel("B", columns=["name"])],
        [{"count": 1}, {"count": 1}, {"rows": [{"name": "b2"}]}],
        setup=[[B1, B2, ins("A", {"sref": ["set", [UU(0xB1), UU(0xB2)]]}, uuid=1)]],
    ),
    Case(
        "delete-with-remaining-other-reference",
        [upd("A", by_uuid(1), {"sref": ["set", []]}), dele("B", by_uuid(0xB1))],
        [{"count": 1}, {"count": 1}, cannot_delete("B", 0xB1, 1)],
        setup=[[B1, ins("A", {"sref": UU(0xB1)}, uuid=1), ins("A", {"oref": UU(0xB1)}, uuid=2)]],
    ),
    Case(
        "self-reference-does-not-block-delete",
        [dele("B", [])],
        [{"count": 1}],
        setup=[[ins("B", {"name": "s", "self": UU(0xB1)}, uuid=0xB1)]],
    ),
    Case(
        "self-reference-insert",
        [ins("B", {"name": "s", "self": UU(0xB1)}, uuid=0xB1), sel("B", columns=["self"])],
        [{"uuid": UU(0xB1)}, {"rows": [{"self": UU(0xB1)}]}],
    ),
    Case(
        "mutual-references-deleted-together",
        [dele("B", [])],
        [{"count": 2}],
        setup=[[ins("B", {"name": "x", "self": UU(0xB2)}, uuid=0xB1),
                ins("B", {"name": "y", "self": UU(0xB1)}, uuid=0xB2)]],
    ),
    Case(
        "mutual-reference-blocks-single-delete",
        [dele("B", by_uuid(0xB1))],
        [{"count": 1}, cannot_delete("B", 0xB1, 1)],
        setup=[[ins("B", {"name": "x", "self": UU(0xB2)}, uuid=0xB1),
                ins("B", {"name": "y", "self": UU(0xB1)}, uuid=0xB2)]],
    ),
]


@pytest.mark.parametrize("case", case_params(STRONG_CASES))
def test_strong_references(case: Case) -> None:
    run_case(case)


# ---------------------------------------------------------------------------------------
# Garbage collection (N is the only non-root table)

N1 = ins("N", {"name": "n1"}, uuid=0x11)
ROOT_N1 = ins("A", {"nref": UU(0x11)}, uuid=1)

GC_CASES = [
    Case(
        "orphan-visible-in-txn-then-collected",
        [ins("N", {"name": "orphan"}, uuid=0x11), sel("N", columns=["name"])],
        [{"uuid": UU(0x11)}, {"rows": [{"name": "orphan"}]}],
    ),
    Case(
        "referenced-kept",
        [sel("N", columns=["name"])],
        [{"rows": [{"name": "n1"}]}],
        setup=[[N1, ROOT_N1]],
    ),
    Case(
        "orphan-uuid-reusable",
        [ins("N", {"name": "again"}, uuid=0x11), ROOT_N1, sel("N", columns=["name"])],
        [{"uuid": UU(0x11)}, {"uuid": UU(1)}, {"rows": [{"name": "again"}]}],
        setup=[[N1]],
    ),
    Case(
        "gc-does-not-count-for-max-rows",
        [ins("N", {"name": "a"}), ins("N", {"name": "b"}), ins("N", {"name": "c"}),
         ins("N", {"name": "d"}, uuid=0x11), ROOT_N1],
        [{"uuid": ANY_UUID}, {"uuid": ANY_UUID}, {"uuid": ANY_UUID}, {"uuid": UU(0x11)},
         {"uuid": UU(1)}],
    ),
    Case(
        "delete-referenced-non-root",
        [dele("N", [])],
        [{"count": 1}, cannot_delete("N", 0x11, 1)],
        setup=[[N1, ROOT_N1]],
    ),
    Case(
        "weak-ref-does-not-keep-alive",
        [N1, ins("A", {"wnref": UU(0x11)}, uuid=1), sel("A", columns=["wnref"])],
        [{"uuid": UU(0x11)}, {"uuid": UU(1)}, {"rows": [{"wnref": UU(0x11)}]}],
    ),
    Case(
        "no-root-set-no-gc",
        [ins("N", {"name": "orphan"}, uuid=0x11)],
        [{"uuid": UU(0x11)}],
        schema="T0",
    ),
    Case(
        "no-root-set-strong-refs-still-checked",
        [dele("N", [])],
        [{"count": 1}, cannot_delete("N", 0x11, 1)],
        setup=[[N1, ROOT_N1]],
        schema="T0",
    ),
]


@pytest.mark.parametrize("case", case_params(GC_CASES))
def test_gc_cases(case: Case) -> None:
    run_case(case)


def _n_names(db: object) -> set[str]:
    return {r["name"] for r in select(db, "N")}


def test_gc_orphan_gone_after_commit() -> None:
    db = new_db()
    res = commit(db, [ins("N", {"name": "orphan"}), sel("N", columns=["name"])])
    assert res == [{"uuid": ANY_UUID}, {"rows": [{"name": "orphan"}]}]
    assert select(db, "N") == []


def test_gc_weak_only_reference_is_collected_and_cleaned() -> None:
    db = new_db()
    commit(db, [N1, ins("A", {"wnref": UU(0x11)}, uuid=1)])
    assert select(db, "N") == []
    assert row_json(db, "A", U(1), "wnref") == {"wnref": ["set", []]}


@pytest.mark.parametrize(
    "drop",
    [
        mut("A", by_uuid(1), [["nref", "delete", UU(0x11)]]),
        upd("A", by_uuid(1), {"nref": ["set", []]}),
        dele("A", by_uuid(1)),
    ],
    ids=["mutate", "update", "delete-root"],
)
def test_gc_when_last_reference_dropped(drop: dict) -> None:
    db = new_db()
    commit(db, [N1, ins("N", {"name": "n2"}, uuid=0x12),
                ins("A", {"nref": ["set", [UU(0x11), UU(0x12)]]}, uuid=1),
                ins("A", {"nref": UU(0x12)}, uuid=2)])
    assert _n_names(db) == {"n1", "n2"}
    commit(db, [drop])
    assert _n_names(db) == {"n2"}  # n2 is still referenced by A row 2
    assert derived_state(db) == recomputed_derived_state(db)


def test_gc_cascade() -> None:
    db = new_db()
    commit(db, [
        ins("N", {"name": "n1", "child": UU(0x12)}, uuid=0x11),
        ins("N", {"name": "n2", "child": UU(0x13)}, uuid=0x12),
        ins("N", {"name": "n3"}, uuid=0x13),
        ROOT_N1,
    ])
    assert _n_names(db) == {"n1", "n2", "n3"}
    out = execute_ops(db, [dele("A", [])])
    assert out.results == [{"count": 1}]
    removed = {u for u, ch in out.changeset.tables.get("N", {}).items() if ch.new is None}
    assert removed == {U(0x11), U(0x12), U(0x13)}
    db.apply(out.changeset)
    assert select(db, "N") == []
    assert derived_state(db) == recomputed_derived_state(db)


def test_gc_partial_cascade_keeps_shared_child() -> None:
    db = new_db()
    commit(db, [
        ins("N", {"name": "n1", "child": UU(0x13)}, uuid=0x11),
        ins("N", {"name": "n2", "child": UU(0x13)}, uuid=0x12),
        ins("N", {"name": "n3"}, uuid=0x13),
        ins("A", {"nref": ["set", [UU(0x11), UU(0x12)]]}, uuid=1),
    ])
    commit(db, [mut("A", [], [["nref", "delete", UU(0x11)]])])
    assert _n_names(db) == {"n2", "n3"}
    commit(db, [mut("A", [], [["nref", "delete", UU(0x12)]])])
    assert _n_names(db) == set()


def test_gc_cycle_is_not_collected() -> None:
    """Garbage collection counts references: a cycle of non-root rows keeps itself."""
    db = new_db()
    commit(db, [
        ins("N", {"name": "n1", "child": UU(0x12)}, uuid=0x11),
        ins("N", {"name": "n2", "child": UU(0x11)}, uuid=0x12),
        ROOT_N1,
    ])
    commit(db, [dele("A", [])])
    assert _n_names(db) == {"n1", "n2"}


def test_gc_self_reference_does_not_keep_alive() -> None:
    db = new_db()
    commit(db, [ins("N", {"name": "n1", "child": UU(0x11)}, uuid=0x11), ROOT_N1])
    assert _n_names(db) == {"n1"}
    commit(db, [dele("A", [])])
    assert _n_names(db) == set()


def test_no_root_set_orphans_persist() -> None:
    db = new_db(schema_no_root())
    commit(db, [N1, ROOT_N1])
    commit(db, [dele("A", [])])
    assert _n_names(db) == {"n1"}
    commit(db, [ins("N", {"name": "n2"})])
    assert _n_names(db) == {"n1", "n2"}


def test_gc_reported_in_changeset() -> None:
    db = new_db()
    commit(db, [N1, ROOT_N1])
    out = execute_ops(db, [mut("A", [], [["nref", "delete", UU(0x11)]])])
    assert set(out.changeset.tables) == {"A", "N"}
    ch = out.changeset.tables["N"][U(0x11)]
    assert ch.old is not None and ch.new is None
    out = execute_ops(db, [ins("N", {"name": "orphan"})])
    assert "N" not in out.changeset.tables and not out.changeset


# ---------------------------------------------------------------------------------------
# maxRows

MAX_ROWS = ('transaction causes "B" table to contain 4 rows, greater than the schema-defined '
            "limit of 3 row(s)")

MAX_ROWS_CASES = [
    Case(
        "max-rows-exceeded",
        [ins("B", {"name": "b4"}, uuid=4)],
        [{"uuid": UU(4)}, CV(MAX_ROWS)],
        setup=[[ins("B", {"name": f"b{i}"}) for i in range(3)]],
    ),
    Case(
        "max-rows-exceeded-in-one-txn",
        [ins("B", {"name": f"b{i}"}, uuid=i) for i in range(1, 5)],
        [{"uuid": UU(i)} for i in range(1, 5)] + [CV(MAX_ROWS)],
    ),
    Case(
        "max-rows-net-count",
        [dele("B", [["name", "==", "b0"]]), ins("B", {"name": "b4"}),
         sel("B", columns=["name"], sort=["name"])],
        [{"count": 1}, {"uuid": ANY_UUID},
         {"rows": [{"name": "b1"}, {"name": "b2"}, {"name": "b4"}]}],
        setup=[[ins("B", {"name": f"b{i}"}) for i in range(3)]],
    ),
    Case(
        "max-rows-insert-then-delete",
        [ins("B", {"name": "x"}, uuid=9), dele("B", by_uuid(9))],
        [{"uuid": UU(9)}, {"count": 1}],
        setup=[[ins("B", {"name": f"b{i}"}) for i in range(3)]],
    ),
    Case(
        "max-rows-before-index",
        [ins("B", {"name": "dup"}), ins("B", {"name": "dup"})],
        [{"uuid": ANY_UUID}, {"uuid": ANY_UUID}, CV(MAX_ROWS)],
        setup=[[ins("B", {"name": "b0"}), ins("B", {"name": "b1"})]],
    ),
    Case(
        "refs-before-max-rows",
        [ins("B", {"name": "b3"}), ins("A", {"sref": UU(0xDEAD)}, uuid=1)],
        [{"uuid": ANY_UUID}, {"uuid": UU(1)}, nonexistent("A", "sref", 1, 0xDEAD)],
        setup=[[ins("B", {"name": f"b{i}"}) for i in range(3)]],
    ),
    Case(
        "non-root-max-rows",
        [ins("N", {"name": f"n{i}"}, uuid=0x10 + i) for i in range(4)]
        + [ins("A", {"nref": ["set", [UU(0x10 + i) for i in range(4)]]}, uuid=1)],
        [{"uuid": UU(0x10 + i)} for i in range(4)] + [
            {"uuid": UU(1)},
            CV('transaction causes "N" table to contain 4 rows, greater than the '
               "schema-defined limit of 3 row(s)"),
        ],
    ),
]


@pytest.mark.parametrize("case", case_params(MAX_ROWS_CASES))
def test_max_rows(case: Case) -> None:
    run_case(case)


# ---------------------------------------------------------------------------------------
# Weak references


def weak_min(table: str, col: str, row: int, k: int, inserted: bool = False) -> dict:
    note = "(inserted within this transaction) " if inserted else ""
    return CV(f"Deletion of {k} weak reference(s) to deleted (or never-existing) rows from "
              f'column "{col}" in "{table}" row {U(row)} {note}caused this column to become '
              "empty, but constraints on this column disallow an empty column.")


WEAK_CASES = [
    Case(
        "dangling-weak-visible-inside-txn",
        [ins("A", {"wref": ["set", [UU(0xDEAD), UU(0xB2)]]}, uuid=1),
         sel("A", columns=["wref"])],
        [{"uuid": UU(1)}, {"rows": [{"wref": ["set", [UU(0xB2), UU(0xDEAD)]]}]}],
        setup=[[B2]],
    ),
    Case(
        "weak-min-existing-row",
        [dele("B", by_uuid(0xB1))],
        [{"count": 1}, weak_min("W", "w1", 0xA, 1)],
        setup=[[B1, ins("W", {"w1": UU(0xB1)}, uuid=0xA)]],
    ),
    Case(
        "weak-min-inserted-row",
        [ins("W", {"w1": UU(0xDEAD)}, uuid=0xA)],
        [{"uuid": UU(0xA)}, weak_min("W", "w1", 0xA, 1, inserted=True)],
    ),
    Case(
        "weak-min-set-two-removed",
        [dele("B", [])],
        [{"count": 2}, weak_min("WS", "ws1", 0xA, 2)],
        setup=[[B1, B2, ins("WS", {"ws1": ["set", [UU(0xB1), UU(0xB2)]]}, uuid=0xA)]],
    ),
    Case(
        "weak-min-set-one-left-ok",
        [dele("B", by_uuid(0xB1)), sel("WS", columns=["ws1"])],
        [{"count": 1}, {"rows": [{"ws1": ["set", [UU(0xB1), UU(0xB2)]]}]}],
        setup=[[B1, B2, ins("WS", {"ws1": ["set", [UU(0xB1), UU(0xB2)]]}, uuid=0xA)]],
    ),
    Case(
        "weak-min-inserted-set-with-dangling",
        [ins("WS", {"ws1": ["set", [UU(0xDEAD), UU(0xBEEF)]]}, uuid=0xA)],
        [{"uuid": UU(0xA)}, weak_min("WS", "ws1", 0xA, 2, inserted=True)],
    ),
    Case(
        "weak-ref-to-deleted-then-row-deleted-too",
        [dele("B", by_uuid(0xB1)), dele("W", [])],
        [{"count": 1}, {"count": 1}],
        setup=[[B1, ins("W", {"w1": UU(0xB1)}, uuid=0xA)]],
    ),
    Case(
        "weak-ref-to-row-inserted-same-txn",
        [ins("B", {"name": "new"}, uuid=0xB1), ins("W", {"w1": UU(0xB1)}, uuid=0xA),
         sel("W", columns=["w1"])],
        [{"uuid": UU(0xB1)}, {"uuid": UU(0xA)}, {"rows": [{"w1": UU(0xB1)}]}],
    ),
    Case(
        "weak-min-repointed-ok",
        [dele("B", by_uuid(0xB1)), upd("W", [], {"w1": UU(0xB2)})],
        [{"count": 1}, {"count": 1}],
        setup=[[B1, B2, ins("W", {"w1": UU(0xB1)}, uuid=0xA)]],
    ),
]


@pytest.mark.parametrize("case", case_params(WEAK_CASES))
def test_weak_reference_cases(case: Case) -> None:
    run_case(case)


def _weak_db() -> object:
    db = new_db()
    commit(db, [
        B1, B2,
        ins("A", {
            "i": 1,
            "wref": ["set", [UU(0xB1), UU(0xB2)]],
            "wkm": ["map", [[UU(0xB1), 1], [UU(0xB2), 2]]],
            "wvm": ["map", [["x", UU(0xB1)], ["y", UU(0xB2)], ["z", UU(0xB1)]]],
        }, uuid=1),
        ins("A", {"i": 2, "wref": UU(0xB2)}, uuid=2),
        ins("N", {"name": "n", "wb": UU(0xB1)}, uuid=0x11),
        mut("A", by_uuid(2), [["nref", "insert", UU(0x11)]]),
    ])
    return db


def test_weak_refs_removed_when_target_deleted() -> None:
    db = _weak_db()
    v1 = row_json(db, "A", U(1), "_version")["_version"]
    v2 = row_json(db, "A", U(2), "_version")["_version"]
    out = execute_ops(db, [dele("B", by_uuid(0xB1))])
    assert out.results == [{"count": 1}]
    # The referencing rows are part of the change, though no operation touched them.
    assert set(out.changeset.tables["A"]) == {U(1)}
    assert set(out.changeset.tables["N"]) == {U(0x11)}
    db.apply(out.changeset)
    assert row_json(db, "A", U(1), "wref", "wkm", "wvm", "_version") == {
        "wref": UU(0xB2),
        "wkm": ["map", [[UU(0xB2), 2]]],
        "wvm": ["map", [["y", UU(0xB2)]]],
        "_version": ANY_UUID,
    }
    assert row_json(db, "A", U(1), "_version")["_version"] != v1
    assert row_json(db, "A", U(2), "_version")["_version"] == v2
    assert row_json(db, "N", U(0x11), "wb") == {"wb": ["set", []]}
    assert derived_state(db) == recomputed_derived_state(db)


@pytest.mark.parametrize("order", ["delete-first", "modify-first"])
def test_weak_refs_removed_regardless_of_op_order(order: str) -> None:
    """The 3.1 server leaves the dangling reference if the referencing row was modified
    before the referenced row was deleted; we implement the correct behaviour."""
    db = _weak_db()
    ops = [mut("A", by_uuid(1), [["i", "+=", 1]]), dele("B", by_uuid(0xB1))]
    if order == "delete-first":
        ops.reverse()
    commit(db, ops)
    assert row_json(db, "A", U(1), "i", "wref", "wkm") == {
        "i": 2, "wref": UU(0xB2), "wkm": ["map", [[UU(0xB2), 2]]],
    }


def test_weak_min_violation_regardless_of_op_order() -> None:
    db = new_db()
    commit(db, [B1, ins("W", {"w1": UU(0xB1), "tag": "t"}, uuid=0xA)])
    results = fail(db, [upd("W", [], {"tag": "u"}), dele("B", [])])
    assert results == [{"count": 1}, {"count": 1}, weak_min("W", "w1", 0xA, 1)]


def test_weak_never_existing_removed_on_insert() -> None:
    db = new_db()
    commit(db, [B2])
    commit(db, [ins("A", {"wref": ["set", [UU(0xDEAD), UU(0xB2)]],
                          "wkm": ["map", [[UU(0xDEAD), 1]]],
                          "wvm": ["map", [["a", UU(0xB2)], ["b", UU(0xDEAD)]]]}, uuid=1)])
    assert row_json(db, "A", U(1), "wref", "wkm", "wvm") == {
        "wref": UU(0xB2), "wkm": ["map", []], "wvm": ["map", [["a", UU(0xB2)]]],
    }


def test_weak_ref_to_row_deleted_earlier_in_txn() -> None:
    db = new_db()
    commit(db, [B1, B2])
    commit(db, [dele("B", by_uuid(0xB1)), ins("A", {"wref": ["set", [UU(0xB1), UU(0xB2)]]},
                                              uuid=1)])
    assert row_json(db, "A", U(1), "wref") == {"wref": UU(0xB2)}


def test_weak_refs_in_derived_state() -> None:
    db = _weak_db()
    table_b = db.tables["B"]
    assert table_b.weak_refs_in[U(0xB1)] == {("A", U(1)): 4, ("N", U(0x11)): 1}
    assert table_b.weak_refs_in[U(0xB2)] == {("A", U(1)): 3, ("A", U(2)): 1}
    assert U(0xB1) not in table_b.n_refs
    commit(db, [dele("B", by_uuid(0xB1))])
    assert U(0xB1) not in table_b.weak_refs_in
    assert derived_state(db) == recomputed_derived_state(db)


# ---------------------------------------------------------------------------------------
# Index uniqueness

INSERTED = INDEX_INSERTED
UNMODIFIED = INDEX_UNMODIFIED
MODIFIED_OTHER = INDEX_MODIFIED_OTHER
before = index_before


def index_error(table: str, values: str, columns: str, r1: tuple[int, str],
                r2: tuple[int, str]) -> OneOf:
    return index_details(table, values, columns, (U(r1[0]), r1[1]), (U(r2[0]), r2[1]))


def check_index_error(setup: list, ops: list, n_results: list, messages: OneOf) -> None:
    db = new_db()
    for txn in setup:
        commit(db, txn)
    results = fail(db, ops)
    assert results[:-1] == n_results
    assert results[-1]["error"] == "constraint violation"
    assert set(results[-1]) == {"error", "details"}
    assert results[-1]["details"] == messages


def test_index_insert_vs_existing() -> None:
    check_index_error(
        [[B1]], [ins("B", {"name": "b1"}, uuid=9)], [{"uuid": UU(9)}],
        index_error("B", "b1", 'column "name"', (9, INSERTED), (0xB1, UNMODIFIED)),
    )


def test_index_two_inserts() -> None:
    check_index_error(
        [], [ins("B", {"name": "x"}, uuid=8), ins("B", {"name": "x"}, uuid=9)],
        [{"uuid": UU(8)}, {"uuid": UU(9)}],
        index_error("B", "x", 'column "name"', (8, INSERTED), (9, INSERTED)),
    )


def test_index_update_into_existing() -> None:
    check_index_error(
        [[B1, B2]], [upd("B", by_uuid(0xB2), {"name": "b1"})], [{"count": 1}],
        index_error("B", "b1", 'column "name"', (0xB1, UNMODIFIED), (0xB2, before("b2"))),
    )


def test_index_both_modified() -> None:
    check_index_error(
        [[B1, B2]], [upd("B", [], {"name": "zz"})], [{"count": 2}],
        index_error("B", "zz", 'column "name"', (0xB1, before("b1")), (0xB2, before("b2"))),
    )


def test_index_inserted_vs_modified_other_column() -> None:
    check_index_error(
        [[B1, B2]], [upd("B", by_uuid(0xB2), {"n": 20}), ins("B", {"name": "b2"}, uuid=9)],
        [{"count": 1}, {"uuid": UU(9)}],
        index_error("B", "b2", 'column "name"', (9, INSERTED), (0xB2, MODIFIED_OTHER)),
    )


def test_index_empty_string_value() -> None:
    check_index_error(
        [[ins("B", {}, uuid=1)]], [ins("B", {}, uuid=2)], [{"uuid": UU(2)}],
        index_error("B", '""', 'column "name"', (2, INSERTED), (1, UNMODIFIED)),
    )


def test_index_two_columns() -> None:
    check_index_error(
        [[ins("I2", {"x": 1, "y": "a"}, uuid=1)]],
        [ins("I2", {"x": 1, "y": "a", "z": 5}, uuid=2)], [{"uuid": UU(2)}],
        index_error("I2", "1 and a", 'columns "x" and "y"', (2, INSERTED), (1, UNMODIFIED)),
    )


def test_index_second_index_only() -> None:
    check_index_error(
        [[ins("I2", {"x": 1, "y": "a b"}, uuid=1)]],
        [ins("I2", {"x": 2, "y": "a b"}, uuid=2)], [{"uuid": UU(2)}],
        index_error("I2", '"a b"', 'column "y"', (2, INSERTED), (1, UNMODIFIED)),
    )


def test_index_three_columns_with_set() -> None:
    row = {"a": -3, "b": ["set", [2, 1]], "c": "z"}
    check_index_error(
        [[ins("I3", row, uuid=1)]], [ins("I3", row, uuid=2)], [{"uuid": UU(2)}],
        index_error("I3", '-3, [1, 2], and z', 'columns "a", "b", and "c"',
                    (2, INSERTED), (1, UNMODIFIED)),
    )


INDEX_OK_CASES = [
    Case(
        "swap-unique-values",
        [upd("B", by_uuid(0xB1), {"name": "b2"}), upd("B", by_uuid(0xB2), {"name": "b1"}),
         sel("B", columns=["_uuid", "name"], sort=["name"])],
        [{"count": 1}, {"count": 1},
         {"rows": [{"_uuid": UU(0xB2), "name": "b1"}, {"_uuid": UU(0xB1), "name": "b2"}]}],
        setup=[[B1, B2]],
    ),
    Case(
        "delete-then-insert-same-value",
        [dele("B", by_uuid(0xB1)), ins("B", {"name": "b1"}, uuid=9)],
        [{"count": 1}, {"uuid": UU(9)}],
        setup=[[B1]],
    ),
    Case(
        "rename-then-reuse",
        [upd("B", by_uuid(0xB1), {"name": "other"}), ins("B", {"name": "b1"}, uuid=9)],
        [{"count": 1}, {"uuid": UU(9)}],
        setup=[[B1]],
    ),
    Case(
        "differs-in-one-index-column",
        [ins("I2", {"x": 2, "y": "b"})],
        [{"uuid": ANY_UUID}],
        setup=[[ins("I2", {"x": 1, "y": "a"}), ins("I2", {"x": 2, "y": "c"})]],
    ),
    Case(
        "set-index-value-differs",
        [ins("I3", {"a": 1, "b": ["set", [1, 2]], "c": ""})],
        [{"uuid": ANY_UUID}],
        setup=[[ins("I3", {"a": 1, "b": 1, "c": ""})]],
    ),
]


@pytest.mark.parametrize("case", case_params(INDEX_OK_CASES))
def test_index_ok(case: Case) -> None:
    run_case(case)


def test_index_state_follows_commits() -> None:
    db = new_db()
    commit(db, [B1, B2])
    commit(db, [upd("B", by_uuid(0xB1), {"name": "b2"}), upd("B", by_uuid(0xB2),
                                                              {"name": "b1"})])
    assert db.tables["B"].indexes[0] == {("b2",): U(0xB1), ("b1",): U(0xB2)}
    commit(db, [dele("B", by_uuid(0xB1))])
    assert db.tables["B"].indexes[0] == {("b1",): U(0xB2)}
    # The freed value can be reused by a later transaction.
    commit(db, [ins("B", {"name": "b2"}, uuid=0xB3)])
    assert uuids(select(db, "B")) == {U(0xB2), U(0xB3)}
    assert derived_state(db) == recomputed_derived_state(db)


def test_commit_check_order_refs_before_weak_and_index() -> None:
    db = new_db()
    commit(db, [B1, ins("W", {"w1": UU(0xB1)}, uuid=0xA)])
    # Dangling strong ref + weak min violation + duplicate index: the ref error wins.
    results = fail(db, [
        dele("B", by_uuid(0xB1)),
        ins("B", {"name": "x"}, uuid=1), ins("B", {"name": "x"}, uuid=2),
        ins("A", {"oref": UU(0xDEAD)}, uuid=3),
    ])
    assert results[-1] == nonexistent("A", "oref", 3, 0xDEAD)
    # Without it, the weak reference check comes before the index check.
    results = fail(db, [
        dele("B", by_uuid(0xB1)),
        ins("B", {"name": "x"}, uuid=1), ins("B", {"name": "x"}, uuid=2),
    ])
    assert results[-1] == weak_min("W", "w1", 0xA, 1)
