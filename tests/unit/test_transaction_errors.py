"""Transaction errors: operation parsing, values, insert/update specifics, wait/commit/
abort/comment/assert, null padding, atomicity and the read-only refusal.

Every expected error object is the real ovsdb-server 3.1 reply, including the "syntax"
member (the offending JSON, compact with sorted keys) where the real server sends one.
"""

from __future__ import annotations

import json

import pytest
from unit_helpers import (
    ANY_UUID,
    C_ROW,
    UU,
    Case,
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
    run,
    run_case,
    sel,
    select,
    snapshot,
    upd,
)


def js(value: object) -> str:
    """The real server's "syntax" text: compact JSON with sorted keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def E(tag: str, details: str | None = None, syntax: object = None, raw: str | None = None) -> dict:
    """An error object; `syntax` is JSON to serialize, `raw` an already serialized text."""
    out: dict[str, object] = {"error": tag}
    if details is not None:
        out["details"] = details
    if syntax is not None:
        out["syntax"] = js(syntax)
    if raw is not None:
        out["syntax"] = raw
    return out


def P(details: str, n: int = 1, of: int = 1) -> str:
    return f"Parsing ovsdb operation {n} of {of} failed: {details}"


def SE(op: dict, details: str, n: int = 1, of: int = 1) -> dict:
    """An operation parse error."""
    return E("syntax error", P(details, n, of), op)



# ---------------------------------------------------------------------------------------
# 2.2 Operation parsing

_frob = {"op": "frob", "table": "A"}
_sel_foo = {"op": "select", "table": "A", "where": [], "foo": 1}
_sel_2x = {"op": "select", "table": "A", "where": [], "bar": 1, "baz": 2}
_sel_3x = {"op": "select", "table": "A", "where": [], "bar": 1, "baz": 2, "qux": 3}

PARSE_CASES = [
    Case("not-object", [1], [E("syntax error", P("Object expected."))]),
    Case(
        "not-object-array",
        [["op", "select"]],
        [E("syntax error", P("Object expected."))],
    ),
    Case(
        "not-object-second-of-two",
        [{"op": "comment", "comment": "x"}, "x"],
        [{}, E("syntax error", P("Object expected.", 2, 2))],
    ),
    Case("missing-op", [{"table": "A"}], [SE({"table": "A"}, "Required 'op' member is missing.")]),
    Case("op-not-string", [{"op": 1}], [SE({"op": 1}, "Type mismatch for member 'op'.")]),
    Case(
        "op-not-id",
        [{"op": "a b"}],
        [SE({"op": "a b"}, "Type mismatch for member 'op'.")],

    ),
    Case("unknown-op", [_frob], [SE(_frob, 'No operation "frob"')]),
    Case(
        "missing-table",
        [{"op": "select", "where": []}],
        [SE({"op": "select", "where": []}, "Required 'table' member is missing.")],
    ),
    Case(
        "table-not-string",
        [{"op": "select", "table": 1, "where": []}],
        [SE({"op": "select", "table": 1, "where": []}, "Type mismatch for member 'table'.")],
    ),
    Case(
        "table-not-id",
        [{"op": "select", "table": "a b", "where": []}],
        [SE({"op": "select", "table": "a b", "where": []}, "Type mismatch for member 'table'.")],
    ),
    Case(
        "unknown-table",
        [{"op": "select", "table": "Nope", "where": []}],
        [SE({"op": "select", "table": "Nope", "where": []}, "No table named Nope.")],
    ),
    Case(
        "select-unknown-table-no-where",
        [{"op": "select", "table": "Nope"}],
        [SE({"op": "select", "table": "Nope"}, "No table named Nope.")],
    ),
    Case(
        "delete-where-before-table",
        [{"op": "delete", "table": "Nope"}],
        [SE({"op": "delete", "table": "Nope"}, "Required 'where' member is missing.")],
    ),
    Case(
        "delete-unknown-table",
        [{"op": "delete", "table": "Nope", "where": []}],
        [SE({"op": "delete", "table": "Nope", "where": []}, "No table named Nope.")],
    ),
    Case(
        "select-missing-where",
        [{"op": "select", "table": "A"}],
        [SE({"op": "select", "table": "A"}, "Required 'where' member is missing.")],
    ),
    Case(
        "where-not-array",
        [{"op": "select", "table": "A", "where": {}}],
        [SE({"op": "select", "table": "A", "where": {}}, "Type mismatch for member 'where'.")],
    ),
    Case(
        "select-columns-not-array",
        [{"op": "select", "table": "A", "where": [], "columns": "i"}],
        [
            SE(
                {"op": "select", "table": "A", "where": [], "columns": "i"},
                "Type mismatch for member 'columns'.",
            )
        ],
    ),
    Case(
        "insert-row-not-object",
        [{"op": "insert", "table": "A", "row": []}],
        [SE({"op": "insert", "table": "A", "row": []}, "Type mismatch for member 'row'.")],
    ),
    Case(
        "insert-missing-row",
        [{"op": "insert", "table": "B"}],
        [SE({"op": "insert", "table": "B"}, "Required 'row' member is missing.")],

    ),
    Case(
        "insert-uuid-name-not-id",
        [{"op": "insert", "table": "B", "uuid-name": "1q", "row": {}}],
        [
            SE(
                {"op": "insert", "table": "B", "uuid-name": "1q", "row": {}},
                "Type mismatch for member 'uuid-name'.",
            )
        ],
    ),
    Case(
        "insert-uuid-not-string",
        [{"op": "insert", "table": "B", "uuid": UU(1), "row": {}}],
        [
            SE(
                {"op": "insert", "table": "B", "uuid": UU(1), "row": {}},
                "Type mismatch for member 'uuid'.",
            )
        ],
    ),
    Case(
        "update-missing-row",
        [{"op": "update", "table": "A", "where": []}],
        [SE({"op": "update", "table": "A", "where": []}, "Required 'row' member is missing.")],
    ),
    Case(
        "mutate-missing-mutations",
        [{"op": "mutate", "table": "A", "where": []}],
        [
            SE(
                {"op": "mutate", "table": "A", "where": []},
                "Required 'mutations' member is missing.",
            )
        ],
    ),
    Case(
        "mutate-mutations-not-array",
        [{"op": "mutate", "table": "A", "where": [], "mutations": {}}],
        [
            SE(
                {"op": "mutate", "table": "A", "where": [], "mutations": {}},
                "Type mismatch for member 'mutations'.",
            )
        ],
    ),
    Case(
        "wait-empty",
        [{"op": "wait"}],
        [SE({"op": "wait"}, "Required 'where' member is missing.")],
    ),
    Case(
        "wait-missing-until",
        [{"op": "wait", "where": []}],
        [SE({"op": "wait", "where": []}, "Required 'until' member is missing.")],
    ),
    Case(
        "wait-missing-rows",
        [{"op": "wait", "where": [], "until": "=="}],
        [SE({"op": "wait", "where": [], "until": "=="}, "Required 'rows' member is missing.")],
    ),
    Case(
        "wait-missing-table",
        [{"op": "wait", "where": [], "until": "==", "rows": []}],
        [
            SE(
                {"op": "wait", "where": [], "until": "==", "rows": []},
                "Required 'table' member is missing.",
            )
        ],
    ),
    Case(
        "wait-timeout-real",
        [{"op": "wait", "table": "A", "where": [], "until": "==", "rows": [], "timeout": 1.5}],
        [
            SE(
                {"op": "wait", "table": "A", "where": [], "until": "==", "rows": [],
                 "timeout": 1.5},
                "Type mismatch for member 'timeout'.",
            )
        ],
    ),
    Case(
        "wait-until-not-string",
        [{"op": "wait", "table": "A", "where": [], "until": 1, "rows": []}],
        [
            SE(
                {"op": "wait", "table": "A", "where": [], "until": 1, "rows": []},
                "Type mismatch for member 'until'.",
            )
        ],
    ),
    Case(
        "commit-missing-durable",
        [{"op": "commit"}],
        [SE({"op": "commit"}, "Required 'durable' member is missing.")],
    ),
    Case(
        "commit-durable-not-bool",
        [{"op": "commit", "durable": 1}],
        [SE({"op": "commit", "durable": 1}, "Type mismatch for member 'durable'.")],
    ),
    Case(
        "comment-missing",
        [{"op": "comment"}],
        [SE({"op": "comment"}, "Required 'comment' member is missing.")],
    ),
    Case(
        "comment-not-string",
        [{"op": "comment", "comment": 1}],
        [SE({"op": "comment", "comment": 1}, "Type mismatch for member 'comment'.")],
    ),
    Case(
        "assert-missing-lock",
        [{"op": "assert"}],
        [SE({"op": "assert"}, "Required 'lock' member is missing.")],
    ),
    Case(
        "assert-lock-not-id",
        [{"op": "assert", "lock": "my lock"}],
        [SE({"op": "assert", "lock": "my lock"}, "Type mismatch for member 'lock'.")],
    ),
    Case(
        "one-extra-member",
        [_sel_foo],
        [SE(_sel_foo, "Member 'foo' is present but not allowed here.")],
    ),
    Case(
        "two-extra-members",
        [_sel_2x],
        [
            E(
                "syntax error",
                Re(r"Parsing ovsdb operation 1 of 1 failed: Member '(bar|baz)' and 1 other "
                   r"member are present but not allowed here\."),
                _sel_2x,
            )
        ],
    ),
    Case(
        "three-extra-members",
        [_sel_3x],
        [
            E(
                "syntax error",
                Re(r"Parsing ovsdb operation 1 of 1 failed: Member '(bar|baz|qux)' and 2 other "
                   r"members are present but not allowed here\."),
                _sel_3x,
            )
        ],
    ),
    Case(
        "missing-member-beats-extra-member",
        [{"op": "select", "table": "A", "foo": 1}],
        [SE({"op": "select", "table": "A", "foo": 1}, "Required 'where' member is missing.")],
    ),
    Case(
        "abort-extra-member",
        [{"op": "abort", "x": 1}],
        [SE({"op": "abort", "x": 1}, "Member 'x' is present but not allowed here.")],
    ),
    Case(
        "comment-extra-member",
        [{"op": "comment", "comment": "c", "table": "A"}],
        [
            SE(
                {"op": "comment", "comment": "c", "table": "A"},
                "Member 'table' is present but not allowed here.",
            )
        ],
    ),
    Case(
        "insert-extra-member",
        [{"op": "insert", "table": "B", "row": {}, "where": []}],
        [
            SE(
                {"op": "insert", "table": "B", "row": {}, "where": []},
                "Member 'where' is present but not allowed here.",
            )
        ],
    ),
    Case(
        "delete-extra-member-columns",
        [{"op": "delete", "table": "B", "where": [], "columns": []}],
        [
            SE(
                {"op": "delete", "table": "B", "where": [], "columns": []},
                "Member 'columns' is present but not allowed here.",
            )
        ],
    ),
    Case(
        "extra-member-overrides-execution-error",
        [{"op": "select", "table": "A", "where": [["zz", "==", 1]], "foo": 1}],
        [
            SE(
                {"op": "select", "table": "A", "where": [["zz", "==", 1]], "foo": 1},
                "Member 'foo' is present but not allowed here.",
            )
        ],

    ),
    Case(
        "error-in-second-of-three",
        [sel("B"), {"op": "select", "table": "Nope", "where": []}, sel("B")],
        [
            {"rows": []},
            SE({"op": "select", "table": "Nope", "where": []}, "No table named Nope.", 2, 3),
            None,
        ],
    ),
]


@pytest.mark.parametrize("case", case_params(PARSE_CASES))
def test_parse_errors(case: Case) -> None:
    run_case(case)


# ---------------------------------------------------------------------------------------
# 2.3 Columns, rows and values

VALUE_CASES = [
    Case(
        "unknown-column-insert",
        [ins("A", {"zz": 1})],
        [E("unknown column", "No column zz in table A.", {"zz": 1})],
    ),
    Case(
        "unknown-column-update",
        [upd("A", [], {"i": 1, "zz": 1})],
        [E("unknown column", "No column zz in table A.", {"i": 1, "zz": 1})],
    ),
    Case(
        "unknown-column-where",
        [sel("A", [["zz", "==", 1]])],
        [E("unknown column", "No column zz in table A.", ["zz", "==", 1])],
    ),
    Case(
        "unknown-column-mutation",
        [mut("A", [], [["zz", "+=", 1]])],
        [E("unknown column", "No column zz in table A.", ["zz", "+=", 1])],
    ),
    Case(
        "unknown-column-select-columns",
        [sel("A", columns=["zz"])],
        [E("syntax error", "zz is not a valid column name", ["zz"])],
    ),
    Case(
        "select-columns-duplicate",
        [sel("B", columns=["name", "name"])],
        [E("syntax error", "array of distinct column names expected", ["name", "name"])],
    ),
    Case(
        "select-columns-not-strings",
        [sel("B", columns=[1])],
        [E("syntax error", "array of distinct column names expected", [1])],
    ),
    Case(
        "wait-row-not-object",
        [{"op": "wait", "table": "B", "where": [], "until": "==", "rows": [1], "timeout": 0}],
        [E("syntax error", "row must be JSON object", 1)],
    ),
    Case(
        "wait-rows-unknown-column",
        [{"op": "wait", "table": "B", "where": [], "until": "==", "rows": [{"zz": 1}],
          "timeout": 0}],
        [E("unknown column", "No column zz in table B.", {"zz": 1})],
    ),
    Case(
        "int-given-string",
        [ins("A", {"i": "x"})],
        [E("syntax error", "expected integer", "x")],

    ),
    Case("int-given-real", [ins("A", {"i": 1.5})], [E("syntax error", "expected integer", 1.5)]),
    Case(
        "int-given-null",
        [ins("A", {"i": None})],
        [E("syntax error", "expected integer", raw="null")],

    ),
    Case(
        "int-given-huge-real",
        [ins("A", {"i": 1e20})],
        [E("syntax error", "expected integer", raw="1e+20")],
    ),
    Case("int-given-bool", [ins("A", {"i": True})], [E("syntax error", "expected integer", True)]),
    Case("bool-given-int", [ins("A", {"b": 1})], [E("syntax error", "expected boolean", 1)]),
    Case(
        "bool-given-string",
        [ins("A", {"b": "true"})],
        [E("syntax error", "expected boolean", "true")],

    ),
    Case("string-given-int", [ins("A", {"s": 1})], [E("syntax error", "expected string", 1)]),
    Case(
        "string-given-uuid",
        [ins("A", {"s": UU(1)})],
        [E("syntax error", "expected string", UU(1))],
    ),
    Case("real-given-bool", [ins("A", {"r": False})], [E("syntax error", "expected real", False)]),
    Case(
        "real-given-string",
        [ins("A", {"r": "1.5"})],
        [E("syntax error", "expected real", "1.5")],

    ),
    Case(
        "uuid-given-bare-string",
        [ins("A", {"u": "abc"})],
        [E("syntax error", 'expected ["uuid", <string>]', "abc")],

    ),
    Case(
        "uuid-given-int",
        [ins("A", {"u": 1})],
        [E("syntax error", 'expected ["uuid", <string>]', 1)],
    ),
    Case(
        "uuid-wrong-tag",
        [ins("A", {"u": ["foo", "zz"]})],
        [E("syntax error", 'expected ["uuid", <string>]', ["foo", "zz"])],
    ),
    Case(
        "uuid-bad-string",
        [ins("A", {"u": ["uuid", "abc"]})],
        [E("syntax error", '"abc" is not a valid UUID', ["uuid", "abc"])],
    ),
    Case(
        "named-uuid-not-id",
        [ins("A", {"u": ["named-uuid", "1bad"]})],
        [E("syntax error", "named-uuid string is not a valid <id>", ["named-uuid", "1bad"])],
    ),
    Case(
        "set-unwrapped-array-is-an-atom",
        [ins("A", {"s23": [1, 2]})],
        [E("syntax error", "expected integer", [1, 2])],
    ),
    Case(
        "set-misspelled-wrapper",
        [ins("A", {"si": ["sett", [1]]})],
        [E("syntax error", "expected integer", ["sett", [1]])],
    ),
    Case(
        "set-wrapper-not-array",
        [ins("A", {"si": ["set", 1]})],
        [E("syntax error", 'expected ["set", <array>]', ["set", 1])],
    ),
    Case(
        "map-given-set",
        [ins("A", {"m": ["set", []]})],
        [E("syntax error", 'expected ["map", <array>]', ["set", []])],
    ),
    Case(
        "map-wrapper-object",
        [ins("A", {"m": ["map", {}]})],
        [E("syntax error", 'expected ["map", <array>]', ["map", {}])],
    ),
    Case(
        "map-given-atom",
        [ins("A", {"m": 1})],
        [E("syntax error", 'expected ["map", <array>]', 1)],
    ),
    Case(
        "map-pair-one-element",
        [ins("A", {"m": ["map", [["a"]]]})],
        [E("syntax error", "expected 2-element array", ["a"])],
    ),
    Case(
        "map-pair-three-elements",
        [ins("A", {"m": ["map", [["a", 1, 2]]]})],
        [E("syntax error", "expected 2-element array", ["a", 1, 2])],
    ),
    Case(
        "map-pair-not-array",
        [ins("A", {"m": ["map", ["a"]]})],
        [E("syntax error", "expected 2-element array", "a")],

    ),
    Case(
        "map-value-type",
        [ins("A", {"m": ["map", [["a", "b"]]]})],
        [E("syntax error", "expected integer", "b")],

    ),
    Case(
        "map-key-type",
        [ins("A", {"m": ["map", [[1, 1]]]})],
        [E("syntax error", "expected string", 1)],
    ),
    Case(
        "set-too-many",
        [ins("A", {"s23": ["set", [1, 2, 3, 4]]})],
        [E("syntax error", "set must have 1 to 3 members but 4 are present",
           ["set", [1, 2, 3, 4]])],
    ),
    Case(
        "set-too-few",
        [ins("A", {"s23": ["set", []]})],
        [E("syntax error", "set must have 1 to 3 members but 0 are present", ["set", []])],
    ),
    Case(
        "optional-too-many",
        [ins("A", {"oi": ["set", [1, 2]]})],
        [E("syntax error", "set must have 0 to 1 members but 2 are present", ["set", [1, 2]])],
    ),
    Case(
        "unlimited-too-few",
        [ins("A", {"s1u": ["set", []]})],
        [E("syntax error", "set must have 1 to 4294967295 members but 0 are present",
           ["set", []])],
    ),
    Case(
        "map-too-many",
        [ins("A", {"m12": ["map", [["a", "1"], ["b", "2"], ["c", "3"]]]})],
        [E("syntax error", "map must have 1 to 2 members but 3 are present",
           ["map", [["a", "1"], ["b", "2"], ["c", "3"]]])],
    ),
    Case(
        "map-too-few",
        [ins("A", {"m12": ["map", []]})],
        [E("syntax error", "map must have 1 to 2 members but 0 are present", ["map", []])],
    ),
    Case(
        "scalar-given-two-element-set",
        [ins("A", {"i": ["set", [1, 2]]})],
        [E("syntax error", "set must have exactly one member but 2 are present",
           ["set", [1, 2]])],
    ),
    Case(
        "scalar-given-empty-set",
        [ins("A", {"i": ["set", []]})],
        [E("syntax error", "set must have exactly one member but 0 are present", ["set", []])],
    ),
    Case(
        "count-checked-before-atom-types",
        [ins("A", {"s23": ["set", ["a", "b", "c", "d"]]})],
        [E("syntax error", "set must have 1 to 3 members but 4 are present",
           ["set", ["a", "b", "c", "d"]])],
    ),
    Case(
        "set-duplicate",
        [ins("A", {"si": ["set", [1, 2, 1]]})],
        [E("ovsdb error", "set contains duplicate")],
    ),
    Case(
        "set-duplicate-uuids-case-insensitive",
        [ins("A", {"su": ["set", [["uuid", U(0xAB)], ["uuid", U(0xAB).upper()]]]})],
        [E("ovsdb error", "set contains duplicate")],
    ),
    Case(
        "map-duplicate-key",
        [ins("A", {"m": ["map", [["a", 1], ["a", 2]]]})],
        [E("ovsdb error", "map contains duplicate key")],
    ),
    Case(
        "map-duplicate-key-same-value",
        [ins("A", {"m": ["map", [["a", 1], ["a", 1]]]})],
        [E("ovsdb error", "map contains duplicate key")],
    ),
    # Constraints (table C).
    Case(
        "enum-string",
        [ins("C", {**C_ROW, "e": "blue"})],
        [E("constraint violation", "blue is not one of the allowed values ([green, red])")],
    ),
    Case(
        "enum-empty-string",
        [ins("C", {**C_ROW, "e": ""})],
        [E("constraint violation", '"" is not one of the allowed values ([green, red])')],
    ),
    Case(
        "enum-integer",
        [ins("C", {**C_ROW, "ie": 7})],
        [E("constraint violation", "7 is not one of the allowed values ([1, 2, 3])")],
    ),
    Case(
        "enum-single-value",
        [ins("C", {**C_ROW, "oe": "other"})],
        [E("constraint violation", "other is not one of the allowed values ([only])")],
    ),
    Case(
        "enum-map-key",
        [ins("C", {**C_ROW, "me": ["map", [["k3", 1]]]})],
        [E("constraint violation", "k3 is not one of the allowed values ([k1, k2])")],
    ),
    Case(
        "enum-quoted-string",
        [ins("C", {**C_ROW, "e": "a b"})],
        [E("constraint violation", '"a b" is not one of the allowed values ([green, red])')],
    ),
    Case(
        "int-range-both",
        [ins("C", {**C_ROW, "ci": 0})],
        [E("constraint violation", "0 is not in the valid range 1 to 10 (inclusive)")],
    ),
    Case(
        "int-range-min",
        [ins("C", {**C_ROW, "cmin": 1})],
        [E("constraint violation", "1 is less than minimum allowed value 5")],
    ),
    Case(
        "int-range-max",
        [ins("C", {**C_ROW, "cmax": 9})],
        [E("constraint violation", "9 is greater than maximum allowed value 5")],
    ),
    Case(
        "real-range-both-low",
        [ins("C", {**C_ROW, "cr": 0.1})],
        [E("constraint violation", "0.1 is not in the valid range 0.5 to 2.5 (inclusive)")],
    ),
    Case(
        "real-range-both-high",
        [ins("C", {**C_ROW, "cr": 3})],
        [E("constraint violation", "3 is not in the valid range 0.5 to 2.5 (inclusive)")],
    ),
    Case(
        "real-range-min",
        [ins("C", {**C_ROW, "crmin": 1})],
        [E("constraint violation", "1 is less than minimum allowed value 1.5")],
    ),
    Case(
        "real-range-max",
        [ins("C", {**C_ROW, "crmax": 2})],
        [E("constraint violation", "2 is greater than maximum allowed value 1.5")],
    ),
    Case(
        "real-range-format-15g",
        [ins("C", {**C_ROW, "crmax": 2 / 3 + 1})],
        [E("constraint violation", "1.66666666666667 is greater than maximum allowed value 1.5")],
    ),
    Case(
        "string-too-short",
        [ins("C", {**C_ROW, "cs": "a"})],
        [E("constraint violation", '"a" length 1 is less than minimum allowed length 2')],
    ),
    Case(
        "string-too-long",
        [ins("C", {**C_ROW, "cs": "abcde"})],
        [E("constraint violation", '"abcde" length 5 is greater than maximum allowed length 4')],
    ),
    Case(
        "string-length-counts-characters",
        [ins("C", {**C_ROW, "cs": "ééééé"})],
        [E("constraint violation", '"ééééé" length 5 is greater than maximum allowed length 4')],
    ),
    Case(
        "map-value-constraint",
        [ins("C", {**C_ROW, "me": ["map", [["k1", -1]]]})],
        [E("constraint violation", "-1 is less than minimum allowed value 0")],
    ),
    Case(
        "set-constraint-before-duplicate",
        [ins("C", {**C_ROW, "sci": ["set", [1, 1, 0]]})],
        [E("constraint violation", "0 is not in the valid range 1 to 10 (inclusive)")],
    ),
    Case(
        "set-atoms-checked-one-by-one",
        [ins("C", {**C_ROW, "sci": ["set", [0, "x"]]})],
        [E("constraint violation", "0 is not in the valid range 1 to 10 (inclusive)")],

    ),
    Case(
        "map-key-constraint-before-value-type",
        [ins("C", {**C_ROW, "me": ["map", [["k3", "x"]]]})],
        [E("constraint violation", "k3 is not one of the allowed values ([k1, k2])")],

    ),
    Case(
        "constraint-before-map-duplicate",
        [ins("C", {**C_ROW, "me": ["map", [["k1", 1], ["k1", 2], ["k3", 1]]]})],
        [E("constraint violation", "k3 is not one of the allowed values ([k1, k2])")],
    ),
    # Defaults are constraint-checked on insert.
    Case(
        "default-enum-string-checked",
        [ins("C", {"ie": 1, "ci": 5})],
        [E("constraint violation", '"" is not one of the allowed values ([green, red])')],
    ),
    Case(
        "default-range-checked",
        [ins("C", {"e": "red", "ie": 1})],
        [E("constraint violation", "0 is not in the valid range 1 to 10 (inclusive)")],
    ),
    Case(
        "default-enum-int-checked",
        [ins("C", {"e": "green", "ci": 10})],
        [E("constraint violation", "0 is not one of the allowed values ([1, 2, 3])")],
    ),
    # Accepted forms.
    Case(
        "accepted-forms",
        [
            ins("A", {
                "i": ["set", [5]], "r": 2, "oi": 3, "s23": 7, "si": 9,
                "u": ["uuid", U(0xABC).upper()], "m12": ["map", [["k", "v"]]],
            }, uuid=1),
            sel("A", by_uuid(1), columns=["i", "r", "oi", "s23", "si", "u", "m12"]),
        ],
        [
            {"uuid": UU(1)},
            {"rows": [{"i": 5, "r": 2.0, "oi": 3, "s23": 7, "si": 9, "u": UU(0xABC),
                       "m12": ["map", [["k", "v"]]]}]},
        ],
    ),
    Case(
        "integral-real-accepted-for-integer",
        [ins("A", {"i": 1.0, "si": ["set", [1e2, -0.0]]}, uuid=1),
         sel("A", by_uuid(1), columns=["i", "si"])],
        [{"uuid": UU(1)}, {"rows": [{"i": 1, "si": ["set", [0, 100]]}]}],
    ),
    Case(
        "valid-constraints-accepted",
        [
            ins("C", {"e": "green", "ie": 3, "ci": 10, "cmin": 5, "cmax": 5, "cr": 2.5,
                      "crmin": 1.5, "crmax": 1.5, "cs": "ab", "oe": "only",
                      "me": ["map", [["k2", 0]]], "sie": ["set", [3, 1]]}, uuid=1),
            sel("C", by_uuid(1), columns=["e", "ie", "ci", "cr", "cs", "me", "sie"]),
        ],
        [
            {"uuid": UU(1)},
            {"rows": [{"e": "green", "ie": 3, "ci": 10, "cr": 2.5, "cs": "ab",
                       "me": ["map", [["k2", 0]]], "sie": ["set", [1, 3]]}]},
        ],
    ),
]


@pytest.mark.parametrize("case", case_params(VALUE_CASES))
def test_value_errors(case: Case) -> None:
    run_case(case)


# ---------------------------------------------------------------------------------------
# 2.4 Insert and 2.5 update specifics

DUP_UUID = (
    "This UUID would duplicate a UUID already present within the table or deleted within "
    "the same transaction."
)

INSERT_UPDATE_CASES = [
    Case(
        "duplicate-uuid-name",
        [ins("B", {"name": "a"}, name="q"), ins("B", {"name": "b"}, name="q")],
        [
            {"uuid": ANY_UUID},
            E("duplicate uuid-name",
              'This "uuid-name" appeared on an earlier "insert" operation.', "q"),
        ],

    ),
    Case(
        "bad-uuid-member",
        [ins("B", {"name": "a"}, uuid="xyz")],
        [E("syntax error", "bad uuid", "xyz")],

    ),
    Case(
        "duplicate-uuid-existing-row",
        [ins("B", {"name": "b"}, uuid=1)],
        [E("duplicate uuid", DUP_UUID, U(1))],
        setup=[[ins("B", {"name": "a"}, uuid=1)]],

    ),
    Case(
        "duplicate-uuid-same-transaction",
        [ins("B", {"name": "a"}, uuid=1), ins("B", {"name": "b"}, uuid=1)],
        [{"uuid": UU(1)}, E("duplicate uuid", DUP_UUID, U(1))],

    ),
    Case(
        "duplicate-uuid-deleted-same-transaction",
        [dele("B", by_uuid(1)), ins("B", {"name": "a"}, uuid=1)],
        [{"count": 1}, E("duplicate uuid", DUP_UUID, U(1))],
        setup=[[ins("B", {"name": "a"}, uuid=1)]],

    ),
    Case(
        "duplicate-uuid-checked-before-duplicate-uuid-name",
        [ins("B", {"name": "a"}, uuid=1, name="q"), ins("B", {"name": "b"}, uuid=1, name="q")],
        [{"uuid": UU(1)}, E("duplicate uuid", DUP_UUID, U(1))],

    ),
    Case(
        "bad-uuid-checked-before-row",
        [ins("B", {"name": 1}, uuid="xyz")],
        [E("syntax error", "bad uuid", "xyz")],

    ),
    Case(
        "uuid-of-other-table-allowed",
        [ins("A", {}, uuid=1), sel("A", columns=["_uuid"])],
        [{"uuid": UU(1)}, {"rows": [{"_uuid": UU(1)}]}],
        setup=[[ins("B", {"name": "a"}, uuid=1)]],
    ),
    Case(
        "uuid-uppercase-echoed-lowercase",
        [ins("B", {"name": "a"}, uuid=U(0xABCDEF).upper())],
        [{"uuid": UU(0xABCDEF)}],
    ),
    Case(
        "insert-uuid-in-row-is-type-checked",
        [ins("B", {"_uuid": 5, "name": "x"})],
        [E("syntax error", 'expected ["uuid", <string>]', 5)],

    ),
    Case(
        "insert-version-in-row-is-type-checked",
        [ins("B", {"_version": ["uuid", "zz"], "name": "x"})],
        [E("syntax error", '"zz" is not a valid UUID', ["uuid", "zz"])],

    ),
    Case(
        "insert-uuid-and-version-in-row-ignored",
        [ins("B", {"_uuid": UU(9), "_version": UU(8), "name": "x"}, uuid=1),
         sel("B", [["_uuid", "==", UU(9)]]), sel("B", columns=["_uuid"])],
        [{"uuid": UU(1)}, {"rows": []}, {"rows": [{"_uuid": UU(1)}]}],
    ),
    Case(
        "weak-min-default-zero-uuid",
        [ins("W", {"tag": "x"}, uuid=1)],
        [
            {"uuid": UU(1)},
            E("constraint violation",
              f'Weak reference column "w1" in "W" row {U(1)} (inserted within this '
              "transaction) contained all-zeros UUID (probably as the default value for this "
              "column) but deleting this value caused a constraint volation because this "
              "column is not allowed to be empty."),
        ],
    ),
    Case(
        "weak-set-min-default-zero-uuid",
        [ins("WS", {"tag": "x"}, uuid=1)],
        [
            {"uuid": UU(1)},
            E("constraint violation",
              f'Weak reference column "ws1" in "WS" row {U(1)} (inserted within this '
              "transaction) contained all-zeros UUID (probably as the default value for this "
              "column) but deleting this value caused a constraint volation because this "
              "column is not allowed to be empty."),
        ],

    ),
    Case(
        "update-immutable",
        [upd("A", [["i", "==", 0]], {"imm": 1})],
        [E("constraint violation", "Cannot update immutable column imm in table A.",
           upd("A", [["i", "==", 0]], {"imm": 1}))],
        setup=[[ins("A", {}, uuid=1)]],
    ),
    Case(
        "update-immutable-no-rows",
        [upd("A", [], {"imm": 1})],
        [E("constraint violation", "Cannot update immutable column imm in table A.",
           upd("A", [], {"imm": 1}))],
    ),
    Case(
        "update-immutable-same-value",
        [upd("A", [], {"imm": 0})],
        [E("constraint violation", "Cannot update immutable column imm in table A.",
           upd("A", [], {"imm": 0}))],
        setup=[[ins("A", {}, uuid=1)]],
    ),
    Case(
        "update-immutable-before-where",
        [upd("A", [["zz", "==", 1]], {"imm": 1})],
        [E("constraint violation", "Cannot update immutable column imm in table A.",
           upd("A", [["zz", "==", 1]], {"imm": 1}))],
    ),
    Case(
        "update-uuid-column",
        [upd("A", [], {"_uuid": UU(1)})],
        [E("constraint violation", "Cannot update immutable column _uuid in table A.",
           upd("A", [], {"_uuid": UU(1)}))],
    ),
    Case(
        "update-version-column",
        [upd("A", [], {"_version": UU(1)})],
        [E("constraint violation", "Cannot update immutable column _version in table A.",
           upd("A", [], {"_version": UU(1)}))],
    ),
    Case(
        "update-row-parsed-before-immutable-check",
        [upd("A", [], {"imm": "x"})],
        [E("syntax error", "expected integer", "x")],

    ),
    Case(
        "update-uuid-value-type-checked",
        [upd("A", [], {"_uuid": 5})],
        [E("syntax error", 'expected ["uuid", <string>]', 5)],

    ),
    Case(
        "update-value-constraint",
        [upd("C", [], {"ci": 11})],
        [E("constraint violation", "11 is not in the valid range 1 to 10 (inclusive)")],
    ),
    Case(
        "update-row-before-where",
        [upd("A", [["zz", "==", 1]], {"i": "x"})],
        [E("syntax error", "expected integer", "x")],

    ),
]


@pytest.mark.parametrize("case", case_params(INSERT_UPDATE_CASES))
def test_insert_update_errors(case: Case) -> None:
    run_case(case)


# ---------------------------------------------------------------------------------------
# 2.8 wait / commit / abort / comment / assert

def _wait(**kw: object) -> dict:
    op: dict[str, object] = {"op": "wait", "table": "B", "where": [], "until": "==", "rows": []}
    op.update(kw)
    return op


MISC_CASES = [
    Case(
        "wait-bad-until",
        [_wait(until="<")],
        [E("syntax error", '"until" must be "==" or "!="', "<")],

    ),
    Case(
        "wait-negative-timeout",
        [_wait(timeout=-1)],
        [E("syntax error", "timeout must be nonnegative", -1)],
    ),
    Case(
        "wait-negative-timeout-before-until",
        [_wait(timeout=-1, until="<")],
        [E("syntax error", "timeout must be nonnegative", -1)],
    ),
    Case(
        "wait-timeout-zero-unsatisfied",
        [_wait(timeout=0, rows=[{"name": "x"}])],
        [E("timed out", '"where" clause test failed')],
    ),
    Case(
        "wait-timeout-zero-unsatisfied-until-ne",
        [_wait(timeout=0, until="!=")],
        [E("timed out", '"where" clause test failed')],
    ),
    Case(
        "wait-timeout-integral-real",
        [_wait(timeout=0.0, rows=[{"name": "x"}])],
        [E("timed out", '"where" clause test failed')],
    ),
    Case("wait-satisfied", [_wait(timeout=0)], [{}]),
    Case(
        "wait-where-error-before-columns",
        [_wait(where=[["zz", "==", 1]], columns=["yy"])],
        [E("unknown column", "No column zz in table B.", ["zz", "==", 1])],
    ),
    Case(
        "wait-columns-error-before-until",
        [_wait(columns=["yy"], until="<")],
        [E("syntax error", "yy is not a valid column name", ["yy"])],
    ),
    Case("abort", [{"op": "abort"}], [E("aborted", "aborted by request")]),
    Case(
        "abort-then-padding",
        [{"op": "abort"}, {"op": "comment", "comment": "x"}],
        [E("aborted", "aborted by request"), None],
    ),
    Case(
        "assert-not-owner",
        [{"op": "assert", "lock": "mylock"}],
        [E("not owner", "Asserted lock mylock not held.")],
    ),
    Case("commit-durable-false", [{"op": "commit", "durable": False}], [{}]),
    Case("comment", [{"op": "comment", "comment": "hello"}], [{}]),
    Case("empty-transaction", [], []),
]


@pytest.mark.parametrize("case", case_params(MISC_CASES))
def test_misc_op_errors(case: Case) -> None:
    run_case(case)


def test_assert_with_lock_owner() -> None:
    db = new_db()
    held = {"mylock"}
    assert commit(db, [{"op": "assert", "lock": "mylock"}], owns_lock=held.__contains__) == [{}]
    assert fail(db, [{"op": "assert", "lock": "other"}], owns_lock=held.__contains__) == [
        E("not owner", "Asserted lock other not held.")
    ]


def test_commit_durable_flag() -> None:
    db = new_db()
    out = execute_ops(db, [{"op": "commit", "durable": True}])
    assert out.durable is True and out.results == [{}]
    out = execute_ops(db, [{"op": "commit", "durable": False}])
    assert out.durable is False
    out = execute_ops(db, [{"op": "commit", "durable": True}, {"op": "commit", "durable": False}])
    assert out.durable is True


# ---------------------------------------------------------------------------------------
# Null padding and atomicity


def _populated() -> object:
    db = new_db()
    commit(db, [
        ins("B", {"name": "b1", "n": 1}, uuid=0xB1),
        ins("B", {"name": "b2", "n": 2}, uuid=0xB2),
        ins("A", {"i": 1, "sref": UU(0xB1), "wref": UU(0xB2), "m": ["map", [["a", 1]]]}, uuid=1),
        ins("N", {"name": "n1"}, uuid=0x11),
        mut("A", by_uuid(1), [["nref", "insert", UU(0x11)]]),
    ])
    return db


def test_null_padding_after_failing_op() -> None:
    db = _populated()
    before = snapshot(db)
    ops = [
        ins("A", {"i": 7}, uuid=7),
        upd("B", [], {"n": 9}),
        {"op": "select", "table": "Nope", "where": []},
        ins("A", {"i": 8}, uuid=8),
        {"op": "comment", "comment": "never"},
    ]
    results = fail(db, ops)
    assert results == [
        {"uuid": UU(7)},
        {"count": 2},
        SE({"op": "select", "table": "Nope", "where": []}, "No table named Nope.", 3, 5),
        None,
        None,
    ]
    assert snapshot(db) == before


def test_failing_last_op_has_no_padding() -> None:
    db = _populated()
    results = fail(db, [sel("B", columns=["n"], sort=["n"]), {"op": "abort"}])
    assert results == [{"rows": [{"n": 1}, {"n": 2}]}, E("aborted", "aborted by request")]


def test_commit_time_error_is_appended() -> None:
    db = _populated()
    results = fail(db, [dele("B", by_uuid(0xB1))])
    assert results == [
        {"count": 1},
        E("referential integrity violation",
          f"cannot delete B row {U(0xB1)} because of 1 remaining reference(s)"),
    ]


@pytest.mark.parametrize(
    "ops",
    [
        # Every kind of change, then an op that fails.
        [ins("B", {"name": "b3"}, uuid=0xB3), upd("A", [], {"i": 5}),
         mut("A", [], [["m", "insert", ["map", [["z", 26]]]]]), dele("A", []),
         {"op": "abort"}],
        [dele("N", []), mut("B", [], [["n", "+=", 10]]), ins("C", {"e": "bad"})],
        # Failures detected at commit time.
        [dele("A", []), ins("B", {"name": "b1"})],  # index
        [ins("B", {"name": "x"}), ins("B", {"name": "y"})],  # maxRows
        [upd("A", [], {"sref": UU(0xDEAD)})],  # dangling strong ref
        [ins("W", {"w1": UU(0xB2)}), dele("B", by_uuid(0xB2))],
    ],
    ids=["abort", "constraint", "index", "max-rows", "ref", "weak-min"],
)
def test_failed_transaction_leaves_database_unchanged(ops: list) -> None:
    db = _populated()
    before = snapshot(db)
    out = execute_ops(db, ops)
    assert isinstance(out, Failed)
    assert snapshot(db) == before
    # The database still works normally afterwards.
    assert {r["name"] for r in select(db, "B")} == {"b1", "b2"}


def test_failed_transaction_does_not_leak_into_next() -> None:
    db = _populated()
    fail(db, [upd("B", by_uuid(0xB1), {"n": 100}), {"op": "abort"}])
    rows = select(db, "B", [["n", "==", 100]])
    assert rows == []
    assert select(db, "B", by_uuid(0xB1), columns=["n"]) == [{"n": 1}]


# ---------------------------------------------------------------------------------------
# Writes refused (reserved database / read-only server)

RO = "on table in reserved database _Server"


@pytest.mark.parametrize(
    ("op", "name"),
    [
        (ins("B", {"name": "x"}), "insert"),
        (upd("B", [], {"n": 1}), "update"),
        (mut("B", [], [["n", "+=", 1]]), "mutate"),
        (dele("B", []), "delete"),
    ],
)
def test_read_only_refuses_writes(op: dict, name: str) -> None:
    db = _populated()
    results = fail(db, [sel("B", columns=["name"], sort=["name"]), op, sel("B")],
                   read_only_reason=RO)
    assert results == [
        {"rows": [{"name": "b1"}, {"name": "b2"}]},
        E("not allowed", f"{name} operation not allowed {RO}"),
        None,
    ]


def test_read_only_allows_read_ops() -> None:
    db = _populated()
    ops = [
        sel("B", columns=["name"], sort=["name"]),
        {"op": "wait", "table": "B", "where": [["name", "==", "b1"]], "until": "==",
         "columns": ["n"], "rows": [{"n": 1}], "timeout": 0},
        {"op": "comment", "comment": "c"},
        {"op": "assert", "lock": "l"},
    ]
    results = execute_ops(db, ops, read_only_reason=RO, owns_lock=lambda name: True).results
    assert results == [{"rows": [{"name": "b1"}, {"name": "b2"}]}, {}, {}, {}]


def test_read_only_check_comes_after_op_errors() -> None:
    db = _populated()
    results = fail(db, [ins("C", {"e": "x"})], read_only_reason=RO)
    assert results == [
        E("constraint violation", "x is not one of the allowed values ([green, red])")
    ]


def test_read_only_refuses_commit_op() -> None:
    db = _populated()
    results = fail(db, [{"op": "commit", "durable": False}], read_only_reason=RO)
    assert results == [E("not allowed", f"commit operation not allowed {RO}")]


def test_error_results_are_plain_json() -> None:
    """The result array is directly serializable (what the server sends)."""
    db = _populated()
    out = execute_ops(db, [ins("A", {"i": 1.5})])
    assert json.loads(json.dumps(out.results)) == out.results
    assert out.error.tag == "syntax error"
    assert out.error.details == "expected integer"


def test_syntax_real_formatting_is_15g() -> None:
    """Reals in the syntax text are printed by OVS with %.15g."""
    db = new_db()
    results = run(db, [sel("A", [["i", "==", 1e20]])])
    assert results == [E("syntax error", "expected integer", raw="1e+20")]


def test_syntax_real_formatting_is_15g_fraction() -> None:
    db = new_db()
    results = run(db, [sel("A", [["i", "==", 2 / 3]])])
    assert results == [E("syntax error", "expected integer", raw="0.666666666666667")]
