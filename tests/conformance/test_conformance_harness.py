"""The harness's own rules, without servers: what it normalizes must be exactly what the
protocol leaves free, so that a difference anywhere else is seen."""

from __future__ import annotations

import json

from conformance_harness import (
    Case,
    Framer,
    Normalizer,
    Record,
    SchemaInfo,
    StepRecord,
    compare,
    norm_number,
)
from conformance_intended import CHOICE_ROWS, choice_reason, same_modulo_choice

SCHEMA = SchemaInfo("T", {"name": "T", "tables": {"A": {"columns": {"i": {"type": "integer"}}},
                                                  "B": {"columns": {"n": {"type": "string"}}}}})
KNOWN = "aaaaaaaa-0000-0000-0000-000000000001"
R1 = "3f1c0a52-7d9e-4c1b-9f0e-2a6b8c4d5e6f"
R2 = "9b2d4e6f-1a3c-4e5f-8a7b-6c5d4e3f2a1b"
R3 = "0d9c8b7a-6f5e-4d3c-2b1a-0f9e8d7c6b5a"


def test_reals_compare_at_15_digits() -> None:
    assert norm_number(2 / 3) == norm_number(0.666666666666667)
    assert norm_number(2.0) == 2 and type(norm_number(2.0)) is int
    assert norm_number(123456789012345678.0) == norm_number(1.23456789012346e17)
    assert norm_number(0.1) != norm_number(0.2)


def test_uuids_named_by_first_appearance_known_ones_kept() -> None:
    a = Normalizer({KNOWN}, SCHEMA).namer
    b = Normalizer({KNOWN}, SCHEMA).namer
    assert a.rename([R1, KNOWN, R2, R1]) == b.rename([R3, KNOWN, R1, R3])
    assert a.rename([R1, R2]) != b.rename([R1, R3])  # R1 is <u2> on b: not the same row
    assert a.rename(f"row {R2} and {KNOWN.upper()}") == f"row <u2> and {KNOWN.upper()}"


def test_select_rows_sorted_but_sort_order_kept() -> None:
    n = Normalizer(set(), SCHEMA)
    assert n.rows([{"i": 2}, {"i": 1}]) == n.rows([{"i": 1}, {"i": 2}])
    # With "sort", only rows that tie on the sort columns may come in any order.
    assert n.rows([{"i": 1, "s": "b"}, {"i": 1, "s": "a"}, {"i": 2, "s": "c"}], ["i"]) == \
        n.rows([{"i": 1, "s": "a"}, {"i": 1, "s": "b"}, {"i": 2, "s": "c"}], ["i"])
    assert n.rows([{"i": 2}, {"i": 1}], ["i"]) != n.rows([{"i": 1}, {"i": 2}], ["i"])


def test_sets_of_uuids_in_any_order_other_sets_not() -> None:
    n = Normalizer({R1, R2}, SCHEMA)
    assert n.value(["set", [["uuid", R1], ["uuid", R2]]]) == \
        n.value(["set", [["uuid", R2], ["uuid", R1]]])
    assert n.value(["set", [1, 2]]) != n.value(["set", [2, 1]])


def test_index_violation_rows_in_either_order() -> None:
    head = ('Transaction causes multiple rows in "B" table to have identical values (x) '
            'for index on column "n".')
    first = f"with UUID {R1}, was inserted by this transaction."
    second = (f"with UUID {R2}, existed in the database before this transaction and was "
              "not modified by the transaction.")
    n = Normalizer({R1, R2}, SCHEMA)
    assert n.value(f"{head}  First row, {first}  Second row, {second}") == \
        n.value(f"{head}  First row, {second}  Second row, {first}")


def test_framer_splits_and_joins_reads() -> None:
    f = Framer()
    text = b'{"a":"x}\\"["} [1,{"b":[]}]{"c":"\xc3\xa9"}'
    out = []
    for i in range(len(text)):
        out += f.feed(text[i:i + 1])
    assert out == [{"a": 'x}"['}, [1, {"b": []}], {"c": "é"}]


def _record(msgs: list[object]) -> Record:
    return Record([StepRecord({"setup": []}, None), StepRecord({"a": msgs}, [])])


def test_compare_sees_a_difference_and_only_that() -> None:
    case = Case("c", "T", [{"transact": [{"op": "insert", "table": "A", "row": {}}]}])
    ours = _record([{"id": 1, "result": [{"uuid": ["uuid", R1]}], "error": None}])
    real = _record([{"id": 1, "result": [{"uuid": ["uuid", R2]}], "error": None}])
    assert compare(case, SCHEMA, ours, real)[0] == []
    bad = _record([{"id": 1, "result": [{"count": 1}], "error": None}])
    assert len(compare(case, SCHEMA, bad, real)[0]) == 1


def test_choice_among_violations_only_same_kind() -> None:
    def err(details: str) -> object:
        return [{"result": [{"error": "referential integrity violation", "details": details}]}]

    a = f"Table A column x row {R1} references nonexistent row {R2} in table B."
    b = f"Table A column y row {R2} references nonexistent row {R1} in table N."
    c = f"cannot delete B row {R1} because of 1 remaining reference(s)"
    assert same_modulo_choice(err(a), err(b))
    assert not same_modulo_choice(err(a), err(c))
    assert json.dumps(err(a)) != json.dumps(err(b))


def test_choice_keeps_what_the_named_violation_says() -> None:
    def err(details: str) -> object:
        return [{"result": [{"error": "referential integrity violation", "details": details}]}]

    def ref(col: str, row: str, target: str) -> object:
        return err(f"Table A column {col} row {row} references nonexistent row {target} "
                   "in table B.")

    # Another row: the real server's hash order chose.
    assert choice_reason(ref("x", R1, R3), ref("x", R2, R3)) == CHOICE_ROWS
    # Another column of the same row: deterministic on the real server, a difference.
    assert choice_reason(ref("x", R1, R3), ref("y", R1, R3)) is None
    # The same row and column: the missing row named must be the same.
    assert choice_reason(ref("x", R1, R3), ref("x", R1, R2)) is None
    # The same row: the count of remaining references must be the same.
    assert choice_reason(err(f"cannot delete B row {R1} because of 1 remaining reference(s)"),
                         err(f"cannot delete B row {R1} because of 2 remaining reference(s)")
                         ) is None
    assert choice_reason(err(f"cannot delete B row {R1} because of 1 remaining reference(s)"),
                         err(f"cannot delete B row {R2} because of 2 remaining reference(s)")
                         ) == CHOICE_ROWS
