"""Where clauses: every function on every kind of column, the optional-scalar truth table,
argument size rules and error messages."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from unit_helpers import (
    C_ROW,
    UU,
    Case,
    U,
    case_params,
    commit,
    ins,
    new_db,
    run_case,
    schema,
    sel,
)

from pyovsdb.ovsdb.condition import parse_monitor_where, parse_where
from pyovsdb.ovsdb.errors import OvsdbError
from pyovsdb.ovsdb.row import Row

# Rows used by the truth tables, by uuid number.
SCALAR_ROWS = [[
    ins("A", {"i": 1, "r": 1.5, "b": False, "s": "a", "u": UU(0x10)}, uuid=1),
    ins("A", {"i": 2, "r": 2.5, "b": True, "s": "b", "u": UU(0x20)}, uuid=2),
    ins("A", {"i": 3, "r": -1, "b": True, "s": "B", "u": UU(0x30)}, uuid=3),
]]
OPTIONAL_ROWS = [[
    ins("A", {"oi": 3, "or": 0.5, "ob": True, "os": "x", "ou": UU(0x10)}, uuid=1),
    ins("A", {}, uuid=2),
]]
SET_ROWS = [[
    ins("A", {"si": ["set", [1, 2]], "ss": ["set", ["a", "b"]], "su": UU(0x10)}, uuid=1),
    ins("A", {"si": ["set", [2, 3]], "ss": "b", "su": ["set", [UU(0x10), UU(0x20)]]}, uuid=2),
    ins("A", {}, uuid=3),
    ins("A", {"si": ["set", [1, 2, 3]], "ss": ["set", ["a", "b", "c"]]}, uuid=4),
]]
REAL_BOOL_ROWS = [[
    ins("B", {"name": "b"}, uuid=0xB1),
    ins("A", {"sr": 0.5, "sb": False, "mir": ["map", [[1, 0.5]]], "wref": UU(0xB1)}, uuid=1),
    ins("A", {"sr": ["set", [0.5, 2.5]], "sb": ["set", [False, True]],
              "mir": ["map", [[1, 1.5], [2, 0.5]]]}, uuid=2),
    ins("A", {}, uuid=3),
]]
MAP_ROWS = [[
    ins("A", {"m": ["map", [["a", 1], ["b", 2]]]}, uuid=1),
    ins("A", {"m": ["map", [["a", 2]]]}, uuid=2),
    ins("A", {}, uuid=3),
    ins("A", {"m": ["map", [["a", 1], ["b", 2], ["c", 3]]]}, uuid=4),
]]


def match_case(cid: str, setup: list, clause: list, matches: list[int],
               xfail: str | None = None) -> Case:
    """Select the rows matching `clause`: their uuids, sorted."""
    return Case(
        cid,
        [sel("A", [clause], columns=["_uuid"], sort=["_uuid"])],
        [{"rows": [{"_uuid": UU(n)} for n in sorted(matches)]}],
        setup=setup,
        xfail=xfail,
    )


M = match_case
S, OPT, ST, MP, RS = SCALAR_ROWS, OPTIONAL_ROWS, SET_ROWS, MAP_ROWS, REAL_BOOL_ROWS

TRUTH_CASES = [
    # integer scalar
    M("i-eq", S, ["i", "==", 2], [2]),
    M("i-ne", S, ["i", "!=", 2], [1, 3]),
    M("i-lt", S, ["i", "<", 2], [1]),
    M("i-le", S, ["i", "<=", 2], [1, 2]),
    M("i-gt", S, ["i", ">", 2], [3]),
    M("i-ge", S, ["i", ">=", 2], [2, 3]),
    M("i-includes", S, ["i", "includes", 2], [2]),
    M("i-excludes", S, ["i", "excludes", 2], [1, 3]),
    M("i-eq-set-wrapped", S, ["i", "==", ["set", [3]]], [3]),
    M("i-eq-integral-real", S, ["i", "==", 3.0], [3]),
    # real scalar
    M("r-eq", S, ["r", "==", 1.5], [1]),
    M("r-eq-int-arg", S, ["r", "==", -1], [3]),
    M("r-ne", S, ["r", "!=", 1.5], [2, 3]),
    M("r-lt", S, ["r", "<", 1.5], [3]),
    M("r-le", S, ["r", "<=", 1.5], [1, 3]),
    M("r-gt", S, ["r", ">", 1.5], [2]),
    M("r-ge", S, ["r", ">=", 1.5], [1, 2]),
    M("r-includes", S, ["r", "includes", 2.5], [2]),
    M("r-excludes", S, ["r", "excludes", 2.5], [1, 3]),
    # boolean, string, uuid scalars
    M("b-eq", S, ["b", "==", True], [2, 3]),
    M("b-ne", S, ["b", "!=", True], [1]),
    M("b-includes", S, ["b", "includes", False], [1]),
    M("b-excludes", S, ["b", "excludes", False], [2, 3]),
    M("s-eq", S, ["s", "==", "b"], [2]),
    M("s-eq-case-sensitive", S, ["s", "==", "B"], [3]),
    M("s-ne", S, ["s", "!=", "b"], [1, 3]),
    M("s-includes", S, ["s", "includes", "a"], [1]),
    M("s-excludes", S, ["s", "excludes", "a"], [2, 3]),
    M("u-eq", S, ["u", "==", UU(0x20)], [2]),
    M("u-eq-uppercase", S, ["u", "==", ["uuid", U(0x20).upper()]], [2]),
    M("u-ne", S, ["u", "!=", UU(0x20)], [1, 3]),
    M("u-includes", S, ["u", "includes", UU(0x30)], [3]),
    M("u-excludes", S, ["u", "excludes", UU(0x30)], [1, 2]),
    M("uuid-eq", S, ["_uuid", "==", UU(2)], [2]),
    M("uuid-ne", S, ["_uuid", "!=", UU(2)], [1, 3]),
    M("uuid-includes", S, ["_uuid", "includes", UU(3)], [3]),
    M("uuid-excludes", S, ["_uuid", "excludes", UU(3)], [1, 2]),
    M("uuid-eq-missing", S, ["_uuid", "==", UU(99)], []),
    # optional scalars: observed truth table with rows oi=3 and oi=[]
    M("oi-eq", OPT, ["oi", "==", 3], [1]),
    M("oi-ne", OPT, ["oi", "!=", 3], [2]),
    M("oi-lt", OPT, ["oi", "<", 4], [1]),
    M("oi-le", OPT, ["oi", "<=", 3], [1]),
    M("oi-gt", OPT, ["oi", ">", 2], [1]),
    M("oi-ge", OPT, ["oi", ">=", 4], []),
    M("oi-lt-false", OPT, ["oi", "<", 3], []),
    M("oi-includes", OPT, ["oi", "includes", 3], [1]),
    M("oi-excludes", OPT, ["oi", "excludes", 3], [2]),
    M("oi-eq-empty", OPT, ["oi", "==", ["set", []]], [2]),
    M("oi-ne-empty", OPT, ["oi", "!=", ["set", []]], [1]),
    M("oi-includes-empty", OPT, ["oi", "includes", ["set", []]], [1, 2]),
    M("oi-excludes-empty", OPT, ["oi", "excludes", ["set", []]], [1, 2]),
    M("oi-includes-other", OPT, ["oi", "includes", 7], []),
    M("oi-excludes-other", OPT, ["oi", "excludes", 7], [1, 2]),
    M("or-lt", OPT, ["or", "<", 1], [1]),
    M("or-ge", OPT, ["or", ">=", 0.5], [1]),
    M("or-ne", OPT, ["or", "!=", 0.5], [2]),
    M("ob-eq", OPT, ["ob", "==", True], [1]),
    M("ob-excludes", OPT, ["ob", "excludes", True], [2]),
    M("os-eq", OPT, ["os", "==", "x"], [1]),
    M("os-ne", OPT, ["os", "!=", "x"], [2]),
    M("ou-includes", OPT, ["ou", "includes", UU(0x10)], [1]),
    M("ou-eq-empty", OPT, ["ou", "==", ["set", []]], [2]),
    # sets
    M("si-eq", ST, ["si", "==", ["set", [2, 1]]], [1]),
    M("si-eq-empty", ST, ["si", "==", ["set", []]], [3]),
    M("si-ne", ST, ["si", "!=", ["set", [1, 2]]], [2, 3, 4]),
    M("si-includes-one", ST, ["si", "includes", 2], [1, 2, 4]),
    M("si-includes-two", ST, ["si", "includes", ["set", [1, 2]]], [1, 4]),
    M("si-includes-empty", ST, ["si", "includes", ["set", []]], [1, 2, 3, 4]),
    M("si-includes-missing", ST, ["si", "includes", ["set", [1, 7]]], []),
    M("si-excludes-one", ST, ["si", "excludes", 1], [2, 3]),
    M("si-excludes-any-common", ST, ["si", "excludes", ["set", [1, 7]]], [2, 3]),
    M("si-excludes-empty", ST, ["si", "excludes", ["set", []]], [1, 2, 3, 4]),
    M("si-excludes-none-common", ST, ["si", "excludes", ["set", [7, 8]]], [1, 2, 3, 4]),
    M("ss-includes", ST, ["ss", "includes", "a"], [1, 4]),
    M("ss-eq-one", ST, ["ss", "==", "b"], [2]),
    M("ss-excludes", ST, ["ss", "excludes", ["set", ["c", "z"]]], [1, 2, 3]),
    M("su-includes", ST, ["su", "includes", UU(0x10)], [1, 2]),
    M("su-eq", ST, ["su", "==", ["set", [UU(0x20), UU(0x10)]]], [2]),
    M("su-excludes", ST, ["su", "excludes", UU(0x20)], [1, 3, 4]),
    M("sr-includes", RS, ["sr", "includes", 0.5], [1, 2]),
    M("sr-eq", RS, ["sr", "==", ["set", [2.5, 0.5]]], [2]),
    M("sr-excludes", RS, ["sr", "excludes", ["set", [2.5, 9]]], [1, 3]),
    M("sb-includes", RS, ["sb", "includes", True], [2]),
    M("sb-eq-empty", RS, ["sb", "==", ["set", []]], [3]),
    M("sb-ne", RS, ["sb", "!=", False], [2, 3]),
    M("mir-includes", RS, ["mir", "includes", ["map", [[1, 0.5]]]], [1]),
    M("mir-excludes", RS, ["mir", "excludes", ["map", [[1, 0.5]]]], [2, 3]),
    M("wref-includes", RS, ["wref", "includes", UU(0xB1)], [1]),
    M("sref-eq-empty", RS, ["sref", "==", ["set", []]], [1, 2, 3]),
    # maps: includes/excludes compare (key, value) pairs
    M("m-eq", MP, ["m", "==", ["map", [["a", 2]]]], [2]),
    M("m-eq-empty", MP, ["m", "==", ["map", []]], [3]),
    M("m-ne", MP, ["m", "!=", ["map", [["a", 2]]]], [1, 3, 4]),
    M("m-includes-pair", MP, ["m", "includes", ["map", [["a", 1]]]], [1, 4]),
    M("m-includes-needs-equal-value", MP, ["m", "includes", ["map", [["a", 2]]]], [2]),
    M("m-includes-two-pairs", MP, ["m", "includes", ["map", [["a", 1], ["b", 2]]]], [1, 4]),
    M("m-includes-empty", MP, ["m", "includes", ["map", []]], [1, 2, 3, 4]),
    M("m-excludes-pair", MP, ["m", "excludes", ["map", [["a", 2]]]], [1, 3, 4]),
    M("m-excludes-any-common-pair", MP, ["m", "excludes", ["map", [["a", 1], ["zz", 5]]]],
      [2, 3]),
    M("m-excludes-same-key-other-value", MP, ["m", "excludes", ["map", [["c", 4]]]],
      [1, 2, 3, 4]),
    M("m-excludes-empty", MP, ["m", "excludes", ["map", []]], [1, 2, 3, 4]),
    # several clauses, literals
    Case(
        "and-of-clauses",
        [sel("A", [["si", "includes", 2], ["si", "excludes", 3]], columns=["_uuid"])],
        [{"rows": [{"_uuid": UU(1)}]}],
        setup=ST,
    ),
    Case(
        "true-literal-and-clause",
        [sel("A", [True, ["i", "==", 1]], columns=["_uuid"])],
        [{"rows": [{"_uuid": UU(1)}]}],
        setup=S,
    ),
    Case(
        "false-literal-wins",
        [sel("A", [["i", "==", 1], False], columns=["_uuid"])],
        [{"rows": []}],
        setup=S,
    ),
]


@pytest.mark.parametrize("case", case_params(TRUTH_CASES))
def test_condition_truth(case: Case) -> None:
    run_case(case)


# ---------------------------------------------------------------------------------------
# Errors


def E(tag: str, details: str, syntax: str | None = None) -> dict:
    out = {"error": tag, "details": details}
    if syntax is not None:
        out["syntax"] = syntax
    return out


def err_case(cid: str, clause: object, error: dict, table: str = "A",
             xfail: str | None = None) -> Case:
    return Case(cid, [sel(table, [clause])], [error], xfail=xfail)


def mismatch(fn: str, col: str, english: str, clause: str) -> dict:
    return E("syntax error",
             f'Type mismatch: "{fn}" operator may not be applied to column {col} of type '
             f"{english}.", clause)


ERROR_CASES = [
    err_case("short-clause", ["i", "=="], E("syntax error", "Parse error in condition.",
                                            '["i","=="]')),
    err_case("long-clause", ["i", "==", 1, 2],
             E("syntax error", "Parse error in condition.", '["i","==",1,2]')),
    err_case("column-not-string", [1, "==", 1],
             E("syntax error", "Parse error in condition.", '[1,"==",1]')),
    err_case("function-not-string", ["i", 1, 1],
             E("syntax error", "Parse error in condition.", '["i",1,1]')),
    err_case("clause-is-number", 5, E("syntax error", "Parse error in condition.", "5")),
    err_case("clause-is-object", {}, E("syntax error", "Parse error in condition.", "{}")),
    err_case("unknown-function", ["i", "~", 1], E("unknown function", "No function named ~.")),
    err_case("unknown-column", ["zz", "==", 1],
             E("unknown column", "No column zz in table A.", '["zz","==",1]')),
    err_case("unknown-column-before-function", ["zz", "~", 1],
             E("unknown column", "No column zz in table A.", '["zz","~",1]')),
    err_case("lt-on-string", ["s", "<", "a"],
             mismatch("<", "s", "string", '["s","<","a"]')),
    err_case("lt-on-string-int-arg", ["s", "<", 1],
             mismatch("<", "s", "string", '["s","<",1]')),
    err_case("le-on-bool", ["b", "<=", True], mismatch("<=", "b", "boolean", '["b","<=",true]')),
    err_case("gt-on-uuid", ["u", ">", UU(1)],
             mismatch(">", "u", "uuid", f'["u",">",["uuid","{U(1)}"]]')),
    err_case("ge-on-_uuid", ["_uuid", ">=", UU(1)],
             mismatch(">=", "_uuid", "uuid", f'["_uuid",">=",["uuid","{U(1)}"]]')),
    err_case("lt-on-int-set", ["si", "<", 1],
             mismatch("<", "si", "set of integers", '["si","<",1]')),
    err_case("lt-on-string-set", ["ss", "<", 1],
             mismatch("<", "ss", "set of strings", '["ss","<",1]')),
    err_case("lt-on-uuid-set", ["su", "<", 1],
             mismatch("<", "su", "set of uuids", '["su","<",1]')),
    err_case("lt-on-optional-string", ["os", "<", 1],
             mismatch("<", "os", "set of up to 1 strings", '["os","<",1]')),
    err_case("lt-on-bounded-set", ["s23", "<", 1],
             mismatch("<", "s23", "set of 1 to 3 integers", '["s23","<",1]')),
    err_case("lt-on-unbounded-min-set", ["s1u", "<", 1],
             mismatch("<", "s1u", "set of 1 or more integers", '["s1u","<",1]')),
    err_case("lt-on-map", ["m", "<", 1],
             mismatch("<", "m", "map of (string, integer) pairs", '["m","<",1]')),
    err_case("lt-on-bounded-map", ["m12", ">", 1],
             mismatch(">", "m12", "map of 1 to 2 (string, string) pairs", '["m12",">",1]')),
    err_case("lt-on-real-map", ["mir", "<", 1],
             mismatch("<", "mir", "map of (integer, real) pairs", '["mir","<",1]')),
    err_case("lt-on-strong-ref-set", ["sref", "<", 1],
             mismatch("<", "sref", "set of uuids", '["sref","<",1]')),
    # argument sizes
    err_case("eq-full-constraints", ["s23", "==", ["set", []]],
             E("syntax error", "set must have 1 to 3 members but 0 are present", '["set",[]]')),
    err_case("eq-scalar-empty", ["i", "==", ["set", []]],
             E("syntax error", "set must have exactly one member but 0 are present",
               '["set",[]]')),
    err_case("ne-too-many", ["s23", "!=", ["set", [1, 2, 3, 4]]],
             E("syntax error", "set must have 1 to 3 members but 4 are present",
               '["set",[1,2,3,4]]')),
    err_case("includes-keeps-max", ["s23", "includes", ["set", [1, 2, 3, 4]]],
             E("syntax error", "set must have 0 to 3 members but 4 are present",
               '["set",[1,2,3,4]]')),
    err_case("includes-scalar-exactly-one", ["i", "includes", ["set", [1, 2]]],
             E("syntax error", "set must have exactly one member but 2 are present",
               '["set",[1,2]]')),
    err_case("excludes-scalar-exactly-one", ["i", "excludes", ["set", []]],
             E("syntax error", "set must have exactly one member but 0 are present",
               '["set",[]]')),
    err_case("lt-optional-needs-one", ["oi", "<", ["set", []]],
             E("syntax error", "set must have exactly one member but 0 are present",
               '["set",[]]')),
    err_case("eq-optional-too-many", ["oi", "==", ["set", [1, 2]]],
             E("syntax error", "set must have 0 to 1 members but 2 are present",
               '["set",[1,2]]')),
    err_case("map-given-key-set", ["m", "includes", ["set", ["a"]]],
             E("syntax error", 'expected ["map", <array>]', '["set",["a"]]')),
    err_case("map-eq-bounded", ["m12", "==", ["map", []]],
             E("syntax error", "map must have 1 to 2 members but 0 are present", '["map",[]]')),
    err_case("type-of-arg", ["i", "==", 1.5], E("syntax error", "expected integer", "1.5")),
    err_case("duplicate-in-arg", ["si", "includes", ["set", [1, 1]]],
             E("ovsdb error", "set contains duplicate")),
    # argument constraints
    err_case("enum-arg", ["e", "==", "blue"],
             E("constraint violation", "blue is not one of the allowed values ([green, red])"),
             table="C"),
    err_case("range-arg-includes", ["ci", "includes", 50],
             E("constraint violation", "50 is not in the valid range 1 to 10 (inclusive)"),
             table="C"),
    err_case("length-arg", ["cs", "==", "a"],
             E("constraint violation", '"a" length 1 is less than minimum allowed length 2'),
             table="C"),
    err_case("range-arg-excludes-set", ["sci", "excludes", ["set", [1, 11]]],
             E("constraint violation", "11 is not in the valid range 1 to 10 (inclusive)"),
             table="C"),
]


@pytest.mark.parametrize("case", case_params(ERROR_CASES))
def test_condition_errors(case: Case) -> None:
    run_case(case)


def test_excludes_any_size_argument() -> None:
    """`excludes` accepts any number of elements, even beyond the column's max."""
    db = new_db()
    commit(db, [ins("A", {"s23": ["set", [1, 2]]}, uuid=1), ins("A", {"s23": 9}, uuid=2)])
    res = commit(db, [sel("A", [["s23", "excludes", ["set", [1, 3, 4, 5, 6]]]],
                          columns=["_uuid"])])
    assert res == [{"rows": [{"_uuid": UU(2)}]}]


def test_condition_on_constrained_columns_with_valid_args() -> None:
    db = new_db()
    commit(db, [ins("C", {**C_ROW, "e": "green", "ci": 7}, uuid=1), ins("C", C_ROW, uuid=2)])
    res = commit(db, [
        sel("C", [["e", "==", "green"]], columns=["_uuid"]),
        sel("C", [["ci", "<", 6]], columns=["_uuid"]),
        sel("C", [["ci", "excludes", 7]], columns=["_uuid"]),
    ])
    assert res == [{"rows": [{"_uuid": UU(1)}]}, {"rows": [{"_uuid": UU(2)}]},
                   {"rows": [{"_uuid": UU(2)}]}]


# ---------------------------------------------------------------------------------------
# The Condition objects: operations (every clause) and monitors (any clause)


def _row(**data: object) -> Row:
    ts = schema().tables["B"]
    full = {c: col.type.codec.default for c, col in ts.columns.items()}
    full.update(data)
    return Row(U(1), full, U(2))


def test_parse_where_direct() -> None:
    ts = schema().tables["B"]
    cond = parse_where(ts, [["n", ">", 1], ["name", "!=", "x"]])
    assert cond.matches(_row(n=2, name="y")) is True
    assert cond.matches(_row(n=2, name="x")) is False
    assert cond.matches(_row(n=1, name="y")) is False
    assert parse_where(ts, []).is_true
    assert parse_where(ts, [True, True]).is_true
    assert not parse_where(ts, [False]).is_true
    assert parse_where(ts, [False]).matches(_row()) is False
    assert not parse_where(ts, [["n", "==", 0]]).is_true


def test_parse_where_uuid_lookup_hint() -> None:
    ts = schema().tables["B"]
    cond = parse_where(ts, [["n", "==", 0], ["_uuid", "==", UU(1)]])
    assert cond.uuids == frozenset({U(1)})
    assert cond.matches(_row()) is True
    assert parse_where(ts, [["_uuid", "!=", UU(1)]]).uuids is None
    assert parse_where(ts, [["_version", "==", UU(2)]]).matches(_row()) is True


def test_parse_where_not_array() -> None:
    with pytest.raises(OvsdbError) as ei:
        parse_where(schema().tables["B"], {})
    assert ei.value.tag == "syntax error"


def test_monitor_where_is_a_disjunction() -> None:
    """ovn-controller's conditions ("type == patch" or "logical_port == vif1") select a
    row matching any clause; an operation's where needs all of them."""
    ts = schema().tables["B"]
    where = [["n", "==", 1], ["name", "==", "x"]]
    mon, op = parse_monitor_where(ts, where), parse_where(ts, where)
    for row, any_, all_ in ((_row(n=1, name="y"), True, False), (_row(n=2, name="x"), True, False),
                            (_row(n=1, name="x"), True, True), (_row(n=2, name="y"), False, False)):
        assert mon.matches(row) is any_
        assert op.matches(row) is all_
    assert parse_monitor_where(ts, []).is_true
    assert parse_monitor_where(ts, [False, ["n", ">", 0]]).matches(_row(n=1))
    assert not parse_monitor_where(ts, [False, False]).matches(_row())
    assert parse_monitor_where(ts, [["n", ">", 5], True]).matches(_row(n=1))


def test_monitor_where_fast_path_true_clause() -> None:
    """The real server hashes ==/true/false conditions and sees a true clause only in
    the first two places of its sorted array: [false, false, true] selects nothing,
    while with an includes clause every clause is evaluated and true selects all."""
    ts = schema().tables["B"]
    assert parse_monitor_where(ts, [False, True]).is_true
    assert not parse_monitor_where(ts, [False, False, True]).matches(_row())
    eq = parse_monitor_where(ts, [False, False, True, ["n", "==", 3]])
    assert eq.matches(_row(n=3)) and not eq.matches(_row(n=4))
    assert parse_monitor_where(ts, [False, False, True, ["n", ">", 9]]).is_true


# ---------------------------------------------------------------------------------------
# A monitor condition looks values up (sets of `==` values and of single `includes`
# elements per column); it must select exactly the rows its clauses select one by one.

_VALUES: dict[str, list[object]] = {
    "i": [0, 1, 2], "r": [0.0, -0.0, 1.5], "s": ["", "a", "b"],
    "u": [UU(1), UU(2)], "oi": [["set", []], 1, 2], "os": [["set", []], "a"],
    "si": [["set", []], 1, ["set", [1, 2]], ["set", [2, 3]]],
    "ss": [["set", []], "a", ["set", ["a", "b"]]],
    "su": [["set", []], UU(1), ["set", [UU(1), UU(2)]]],
    "m": [["map", []], ["map", [["a", 1]]], ["map", [["a", 1], ["b", 2]]], ["map", [["a", 2]]]],
}
_FUNCTIONS = ("==", "==", "includes", "includes", "!=", "excludes", "<", ">=")


@st.composite
def _monitor_case(draw: st.DrawFn) -> tuple[list[object], list[dict[str, object]]]:
    ts = schema().tables["A"]
    clauses: list[object] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            clauses.append(draw(st.booleans()))
        elif kind == 1:
            clauses.append(["_uuid", draw(st.sampled_from(["==", "includes", "!="])),
                            UU(draw(st.integers(1, 3)))])
        else:
            col = draw(st.sampled_from(sorted(_VALUES)))
            fn = draw(st.sampled_from(_FUNCTIONS))
            ctype = ts.all_columns[col].type
            ordered = (ctype.is_scalar or ctype.is_optional_scalar) and col not in ("s", "u", "os")
            if fn in ("<", ">=") and not ordered:
                fn = "=="
            values = _VALUES[col]
            if fn in ("<", ">="):  # one value, not a set
                values = [v for v in values if type(v) is not list]
            clauses.append([col, fn, draw(st.sampled_from(values))])
    rows = [{col: draw(st.sampled_from(vals)) for col, vals in _VALUES.items()}
            for _ in range(draw(st.integers(1, 8)))]
    return clauses, rows


@settings(max_examples=600, deadline=None, derandomize=True)
@given(_monitor_case())
def test_monitor_condition_lookup_agrees_with_its_clauses(
        case: tuple[list[object], list[dict[str, object]]]) -> None:
    clauses_json, rows_json = case
    ts = schema().tables["A"]
    cond = parse_monitor_where(ts, clauses_json)
    for n, values in enumerate(rows_json):
        data = {c: col.type.codec.default for c, col in ts.columns.items()}
        data.update({c: ts.columns[c].type.codec.from_json(v) for c, v in values.items()})
        row = Row(U(n + 1), data, U(9))
        one_by_one = cond.is_true or any(
            c.predicate(row) for c in cond.clauses if c.function not in ("true", "false"))
        assert cond.matches(row) is one_by_one, (clauses_json, values)
