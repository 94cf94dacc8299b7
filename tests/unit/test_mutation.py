"""Mutations: every mutator on every applicable type, C integer semantics, overflow,
division by zero, constraint and size checks, and the error messages."""

from __future__ import annotations

import pytest
from unit_helpers import (
    C_ROW,
    UU,
    Case,
    U,
    by_uuid,
    case_params,
    commit,
    ins,
    mut,
    new_db,
    row_json,
    run_case,
    sel,
)

INT_MAX = 2**63 - 1
INT_MIN = -(2**63)


def mcase(cid: str, initial: dict, mutations: list, column: str, expected: object,
          table: str = "A", xfail: str | None = None) -> Case:
    """Row 1 of `table` starts as `initial`; after `mutations` (all on row 1), `column`
    holds `expected`."""
    base = {**C_ROW, **initial} if table == "C" else initial
    return Case(
        cid,
        [mut(table, by_uuid(1), mutations), sel(table, by_uuid(1), columns=[column])],
        [{"count": 1}, {"rows": [{column: expected}]}],
        setup=[[ins(table, base, uuid=1)]],

    )


def ecase(cid: str, initial: dict, mutations: list, error: dict, table: str = "A",
          xfail: str | None = None) -> Case:
    """The mutate op fails with `error` (a runtime error: the op's result is the error)."""
    base = {**C_ROW, **initial} if table == "C" else initial
    return Case(
        cid,
        [mut(table, by_uuid(1), mutations), sel(table)],
        [error, None],
        setup=[[ins(table, base, uuid=1)]],

    )


def E(tag: str, details: str, syntax: str | None = None) -> dict:
    out = {"error": tag, "details": details}
    if syntax is not None:
        out["syntax"] = syntax
    return out


def range_error(m: str) -> dict:
    return E("range error", f'Result of "{m}" operation is out of range.')


DIV0 = E("domain error", "Division by zero.")
MC = mcase

ARITH_CASES = [
    # integer scalar
    MC("int-add", {"i": 5}, [["i", "+=", 3]], "i", 8),
    MC("int-sub", {"i": 5}, [["i", "-=", 7]], "i", -2),
    MC("int-mul", {"i": 5}, [["i", "*=", -3]], "i", -15),
    MC("int-div", {"i": 7}, [["i", "/=", 2]], "i", 3),
    MC("int-mod", {"i": 7}, [["i", "%=", 3]], "i", 1),
    MC("int-div-truncates-toward-zero", {"i": -7}, [["i", "/=", 2]], "i", -3),
    MC("int-div-neg-divisor", {"i": 7}, [["i", "/=", -2]], "i", -3),
    MC("int-div-both-neg", {"i": -7}, [["i", "/=", -2]], "i", 3),
    MC("int-mod-sign-of-dividend", {"i": -3}, [["i", "%=", 4]], "i", -3),
    MC("int-mod-neg-divisor", {"i": 7}, [["i", "%=", -2]], "i", 1),
    MC("int-mod-both-neg", {"i": -7}, [["i", "%=", -2]], "i", -1),
    MC("int-div-then-mod", {"i": -7}, [["i", "/=", 2], ["i", "%=", 4]], "i", -3),
    MC("int-cumulative", {"i": 1}, [["i", "+=", 2], ["i", "*=", 3], ["i", "-=", 1]], "i", 8),
    MC("int-add-to-max", {"i": INT_MAX - 1}, [["i", "+=", 1]], "i", INT_MAX),
    MC("int-sub-to-min", {"i": INT_MIN + 1}, [["i", "-=", 1]], "i", INT_MIN),
    MC("int-mul-to-min", {"i": 2}, [["i", "*=", -(2**62)]], "i", INT_MIN),
    MC("int-arg-set-wrapped", {"i": 1}, [["i", "+=", ["set", [4]]]], "i", 5),
    MC("int-arg-integral-real", {"i": 1}, [["i", "+=", 4.0]], "i", 5),
    MC("int-constraint-cleared-for-arg", {"ci": 6}, [["ci", "-=", -3], ["ci", "%=", 50]],
       "ci", 9, table="C"),
    # real scalar
    MC("real-add", {"r": 1.5}, [["r", "+=", 1]], "r", 2.5),
    MC("real-sub", {"r": 1.5}, [["r", "-=", 2.25]], "r", -0.75),
    MC("real-mul", {"r": 1.5}, [["r", "*=", -2]], "r", -3.0),
    MC("real-div", {"r": 1}, [["r", "/=", 4]], "r", 0.25),
    MC("real-div-neg", {"r": 3}, [["r", "/=", -8]], "r", -0.375),
    # optional scalars
    MC("optional-int-add", {"oi": 3}, [["oi", "+=", 1]], "oi", 4),
    MC("optional-empty-noop", {}, [["oi", "+=", 1], ["or", "*=", 0]], "oi", ["set", []]),
    MC("optional-real-mul", {"or": 0.5}, [["or", "*=", 3]], "or", 1.5),
    # sets: element by element, re-sorted
    MC("int-set-add", {"si": ["set", [1, 5]]}, [["si", "+=", 10]], "si", ["set", [11, 15]]),
    MC("int-set-negate-resorts", {"si": ["set", [3, -1]]}, [["si", "*=", -1]], "si",
       ["set", [-3, 1]]),
    MC("int-set-mod", {"si": ["set", [7, 8, -9]]}, [["si", "%=", 5]], "si",
       ["set", [-4, 2, 3]]),
    MC("int-set-empty-noop", {}, [["si", "/=", 0]], "si", ["set", []]),
    MC("real-set-mul", {"sr": ["set", [1.5, 2.5]]}, [["sr", "*=", 2]], "sr", ["set", [3, 5]]),
    MC("bounded-set-sub", {"s23": ["set", [1, 2, 3]]}, [["s23", "-=", 1]], "s23",
       ["set", [0, 1, 2]]),
]

ARITH_ERROR_CASES = [
    ecase("int-add-overflow", {"i": INT_MAX}, [["i", "+=", 1]], range_error("+=")),
    ecase("int-sub-overflow", {"i": INT_MIN}, [["i", "-=", 1]], range_error("-=")),
    ecase("int-sub-overflow-neg-arg", {"i": INT_MAX}, [["i", "-=", -1]], range_error("-=")),
    ecase("int-mul-overflow", {"i": INT_MAX}, [["i", "*=", 2]], range_error("*=")),
    ecase("int-mul-overflow-neg", {"i": -3}, [["i", "*=", INT_MIN // 3 - 1]],
          range_error("*=")),
    ecase("int-mul-result-exactly-max", {"i": 7}, [["i", "*=", INT_MAX // 7]],
          range_error("*=")),
    ecase("int-mul-result-fits-but-quirk", {"i": 3}, [["i", "*=", INT_MAX // 3]],
          range_error("*=")),
    ecase("int-min-div-minus-one", {"i": INT_MIN}, [["i", "/=", -1]], range_error("/=")),
    ecase("int-min-mod-minus-one", {"i": INT_MIN}, [["i", "%=", -1]], range_error("%=")),
    ecase("int-div-zero", {"i": 5}, [["i", "/=", 0]], DIV0),
    ecase("int-mod-zero", {"i": 5}, [["i", "%=", 0]], DIV0),
    ecase("int-div-zero-in-set", {"si": ["set", [1, 2]]}, [["si", "/=", 0]], DIV0),
    ecase("real-div-zero", {"r": 5}, [["r", "/=", 0]], DIV0),
    ecase("real-zero-div-zero", {"r": 0}, [["r", "/=", 0.0]], DIV0),
    ecase("real-mul-overflow", {"r": 1e308}, [["r", "*=", 1e308]], range_error("*=")),
    ecase("real-add-overflow", {"r": 1e308}, [["r", "+=", 1e308]], range_error("+=")),
    ecase("real-sub-overflow", {"r": -1e308}, [["r", "-=", 1e308]], range_error("-=")),
    ecase("real-div-overflow", {"r": 1e308}, [["r", "/=", 0.5]], range_error("/=")),
    ecase("real-set-overflow", {"sr": ["set", [1, 1e308]]}, [["sr", "*=", 10]],
          range_error("*=")),
    ecase("result-range", {"ci": 5}, [["ci", "+=", 10]],
          E("constraint violation", "15 is not in the valid range 1 to 10 (inclusive)"),
          table="C"),
    ecase("result-max", {"cmax": 4}, [["cmax", "+=", 10]],
          E("constraint violation", "14 is greater than maximum allowed value 5"), table="C"),
    ecase("result-min", {"cmin": 5}, [["cmin", "-=", 1]],
          E("constraint violation", "4 is less than minimum allowed value 5"), table="C"),
    ecase("result-enum", {"ie": 3}, [["ie", "+=", 4]],
          E("constraint violation", "7 is not one of the allowed values ([1, 2, 3])"),
          table="C"),
    ecase("result-real-range", {"cr": 2}, [["cr", "*=", 2]],
          E("constraint violation", "4 is not in the valid range 0.5 to 2.5 (inclusive)"),
          table="C"),
    ecase("result-set-range", {"sci": ["set", [5, 9]]}, [["sci", "+=", 2]],
          E("constraint violation", "11 is not in the valid range 1 to 10 (inclusive)"),
          table="C"),
    ecase("result-set-enum", {"sie": ["set", [1, 2]]}, [["sie", "*=", 2]],
          E("constraint violation", "4 is not one of the allowed values ([1, 2, 3])"),
          table="C"),
    ecase("set-duplicates-after-mul", {"si": ["set", [1, 2]]}, [["si", "*=", 0]],
          E("constraint violation", 'Result of "*=" operation contains duplicates.')),
    ecase("set-duplicates-after-div", {"si": ["set", [4, 5]]}, [["si", "/=", 2]],
          E("constraint violation", 'Result of "/=" operation contains duplicates.')),
    ecase("real-set-duplicates", {"sr": ["set", [1, 2]]}, [["sr", "*=", 0]],
          E("constraint violation", 'Result of "*=" operation contains duplicates.')),
    ecase("error-in-later-mutation", {"i": 1}, [["i", "+=", 1], ["i", "/=", 0]], DIV0),
]

SET_MAP_CASES = [
    # sets
    MC("set-insert", {"si": ["set", [1, 3]]}, [["si", "insert", ["set", [2, 4]]]], "si",
       ["set", [1, 2, 3, 4]]),
    MC("set-insert-existing-noop", {"si": ["set", [1, 3]]}, [["si", "insert", ["set", [3]]]],
       "si", ["set", [1, 3]]),
    MC("set-insert-scalar-arg", {"si": ["set", [1]]}, [["si", "insert", 2]], "si",
       ["set", [1, 2]]),
    MC("set-insert-empty", {"si": 1}, [["si", "insert", ["set", []]]], "si", 1),
    MC("set-delete", {"si": ["set", [1, 2, 3]]}, [["si", "delete", ["set", [1, 3]]]], "si", 2),
    MC("set-delete-missing-ignored", {"si": ["set", [1, 2]]},
       [["si", "delete", ["set", [2, 7]]]], "si", 1),
    MC("set-delete-scalar-arg", {"ss": ["set", ["a", "b"]]}, [["ss", "delete", "a"]], "ss",
       "b"),
    MC("set-delete-arg-beyond-max", {"s23": ["set", [1, 2]]},
       [["s23", "delete", ["set", [1, 3, 4, 5, 6]]]], "s23", 2),
    MC("optional-insert", {}, [["oi", "insert", 1]], "oi", 1),
    MC("optional-insert-same", {"oi": 1}, [["oi", "insert", 1]], "oi", 1),
    MC("optional-delete", {"os": "x"}, [["os", "delete", "x"]], "os", ["set", []]),
    MC("uuid-set-insert", {"su": UU(2)}, [["su", "insert", ["set", [UU(1), UU(3)]]]], "su",
       ["set", [UU(1), UU(2), UU(3)]]),
    MC("bool-set-insert", {"sb": False}, [["sb", "insert", True]], "sb",
       ["set", [False, True]]),
    MC("real-set-delete", {"sr": ["set", [0.5, 1.5]]}, [["sr", "delete", 0.5]], "sr", 1.5),
    MC("insert-then-delete", {"si": 1}, [["si", "insert", 2], ["si", "delete", 1]], "si", 2),
    # maps
    MC("map-insert-no-overwrite", {"m": ["map", [["a", 1], ["b", 2]]]},
       [["m", "insert", ["map", [["a", 100], ["c", 3]]]]], "m",
       ["map", [["a", 1], ["b", 2], ["c", 3]]]),
    MC("map-delete-pairs", {"m": ["map", [["a", 1], ["b", 2]]]},
       [["m", "delete", ["map", [["a", 100], ["b", 2]]]]], "m", ["map", [["a", 1]]]),
    MC("map-delete-keys", {"m": ["map", [["a", 1], ["b", 2]]]},
       [["m", "delete", ["set", ["a", "zz"]]]], "m", ["map", [["b", 2]]]),
    MC("map-delete-scalar-key", {"m": ["map", [["a", 1], ["b", 2]]]},
       [["m", "delete", "b"]], "m", ["map", [["a", 1]]]),
    MC("map-delete-empty-map", {"m": ["map", [["a", 1]]]}, [["m", "delete", ["map", []]]],
       "m", ["map", [["a", 1]]]),
    MC("map-delete-empty-set", {"m": ["map", [["a", 1]]]}, [["m", "delete", ["set", []]]],
       "m", ["map", [["a", 1]]]),
    MC("map-int-real", {"mir": ["map", [[1, 0.5]]]},
       [["mir", "insert", ["map", [[-2, 1.0], [1, 9.0]]]]], "mir",
       ["map", [[-2, 1.0], [1, 0.5]]]),
    MC("map-delete-all-keys", {"m": ["map", [["a", 1]]]},
       [["m", "delete", ["set", ["a"]]]], "m", ["map", []]),
    MC("bounded-map-insert", {"m12": ["map", [["a", "1"]]]},
       [["m12", "insert", ["map", [["b", "2"]]]]], "m12", ["map", [["a", "1"], ["b", "2"]]]),
    MC("enum-key-map-delete-key", {"me": ["map", [["k1", 1], ["k2", 2]]]},
       [["me", "delete", "k2"]], "me", ["map", [["k1", 1]]], table="C"),
]

SIZE_ERROR_CASES = [
    ecase("set-insert-too-many", {"s23": ["set", [1, 2, 3]]}, [["s23", "insert", 4]],
          E("constraint violation", "Attempted to store 4 elements in set of 1 to 3 integers.")),
    ecase("set-insert-too-many-2", {"s23": ["set", [1, 2]]},
          [["s23", "insert", ["set", [3, 4, 5]]]],
          E("constraint violation", "Attempted to store 5 elements in set of 1 to 3 integers.")),
    ecase("set-delete-too-few", {"s23": ["set", [1, 2]]},
          [["s23", "delete", ["set", [1, 2]]]],
          E("constraint violation", "Attempted to store 0 elements in set of 1 to 3 integers.")),
    ecase("optional-insert-second", {"oi": 1}, [["oi", "insert", 2]],
          E("constraint violation",
            "Attempted to store 2 elements in set of up to 1 integers.")),
    ecase("map-delete-too-few", {"m12": ["map", [["a", "1"]]]}, [["m12", "delete", "a"]],
          E("constraint violation",
            "Attempted to store 0 elements in map of 1 to 2 (string, string) pairs.")),
    ecase("map-insert-too-many", {"m12": ["map", [["a", "1"], ["b", "2"]]]},
          [["m12", "insert", ["map", [["c", "3"]]]]],
          E("constraint violation",
            "Attempted to store 3 elements in map of 1 to 2 (string, string) pairs.")),
    ecase("unlimited-min-delete-all", {"s1u": 5}, [["s1u", "delete", 5]],
          E("constraint violation",
            "Attempted to store 0 elements in set of 1 or more integers.")),
    ecase("size-checked-after-each-mutation", {"s23": ["set", [1, 2, 3]]},
          [["s23", "insert", 4], ["s23", "delete", 1]],
          E("constraint violation", "Attempted to store 4 elements in set of 1 to 3 integers.")),
]


def mism(m: str, col: str, english: str, syntax: str) -> dict:
    return E("syntax error",
             f'Type mismatch: "{m}" operator may not be applied to column {col} of type '
             f"{english}.", syntax)


def pcase(cid: str, mutation: object, error: dict, table: str = "A",
          xfail: str | None = None) -> Case:
    """A mutation that fails to parse; no row needs to exist."""
    return Case(cid, [mut(table, [], [mutation])], [error])



PARSE_CASES = [
    pcase("short", ["i", "+="], E("syntax error", "Parse error in mutation.", '["i","+="]')),
    pcase("long", ["i", "+=", 1, 2],
          E("syntax error", "Parse error in mutation.", '["i","+=",1,2]')),
    pcase("column-not-string", [1, "+=", 1],
          E("syntax error", "Parse error in mutation.", '[1,"+=",1]')),
    pcase("mutator-not-string", ["i", 1, 1],
          E("syntax error", "Parse error in mutation.", '["i",1,1]')),
    pcase("not-array", "i", E("syntax error", "Parse error in mutation.", '"i"')),
    pcase("unknown-column", ["zz", "+=", 1],
          E("unknown column", "No column zz in table A.", '["zz","+=",1]')),
    pcase("unknown-mutator", ["i", "^=", 1], E("unknown mutator", "No mutator named ^=.")),
    pcase("immutable", ["imm", "+=", 1],
          E("constraint violation", "Cannot mutate immutable column imm in table A.",
            '["imm","+=",1]')),
    pcase("immutable-before-unknown-mutator", ["imm", "^=", 1],
          E("constraint violation", "Cannot mutate immutable column imm in table A.",
            '["imm","^=",1]')),
    pcase("immutable-before-type-check", ["imm", "insert", 1],
          E("constraint violation", "Cannot mutate immutable column imm in table A.",
            '["imm","insert",1]')),
    pcase("immutable-uuid", ["_uuid", "+=", 1],
          E("constraint violation", "Cannot mutate immutable column _uuid in table A.",
            '["_uuid","+=",1]')),
    pcase("immutable-version", ["_version", "delete", 1],
          E("constraint violation", "Cannot mutate immutable column _version in table A.",
            '["_version","delete",1]')),
    pcase("add-on-string", ["s", "+=", 1], mism("+=", "s", "string", '["s","+=",1]')),
    pcase("add-on-bool", ["b", "-=", 1], mism("-=", "b", "boolean", '["b","-=",1]')),
    pcase("add-on-uuid", ["u", "*=", 1], mism("*=", "u", "uuid", '["u","*=",1]')),
    pcase("mod-on-real", ["r", "%=", 1], mism("%=", "r", "real", '["r","%=",1]')),
    pcase("mod-on-real-set", ["sr", "%=", 1], mism("%=", "sr", "set of reals",
                                                   '["sr","%=",1]')),
    pcase("add-on-map", ["m", "+=", 1], mism("+=", "m", "map of (string, integer) pairs",
                                             '["m","+=",1]')),
    pcase("div-on-int-real-map", ["mir", "/=", 1],
          mism("/=", "mir", "map of (integer, real) pairs", '["mir","/=",1]')),
    pcase("add-on-ref-set", ["sref", "+=", 1], mism("+=", "sref", "set of uuids",
                                                    '["sref","+=",1]')),
    pcase("add-on-string-set", ["ss", "+=", 1], mism("+=", "ss", "set of strings",
                                                     '["ss","+=",1]')),
    pcase("add-on-enum", ["e", "+=", 1], mism("+=", "e", "string", '["e","+=",1]'),
          table="C"),
    pcase("insert-on-scalar", ["i", "insert", 1], mism("insert", "i", "integer",
                                                       '["i","insert",1]')),
    pcase("delete-on-scalar", ["s", "delete", 1], mism("delete", "s", "string",
                                                       '["s","delete",1]')),
    pcase("type-check-before-arg", ["s", "+=", "x"],
          mism("+=", "s", "string", '["s","+=","x"]')),
    # arguments
    pcase("arith-arg-type", ["i", "+=", 1.5], E("syntax error", "expected integer", "1.5")),
    pcase("arith-arg-two", ["i", "+=", ["set", [1, 2]]],
          E("syntax error", "set must have exactly one member but 2 are present",
            '["set",[1,2]]')),
    pcase("arith-arg-empty", ["si", "+=", ["set", []]],
          E("syntax error", "set must have exactly one member but 0 are present",
            '["set",[]]')),
    pcase("arith-arg-real-type", ["r", "+=", "x"], E("syntax error", "expected real", '"x"')),
    pcase("arith-arg-real-bool", ["r", "+=", True], E("syntax error", "expected real", "true")),
    pcase("insert-arg-too-many-optional", ["oi", "insert", ["set", [1, 2]]],
          E("syntax error", "set must have 0 to 1 members but 2 are present",
            '["set",[1,2]]')),
    pcase("insert-arg-too-many-bounded", ["s23", "insert", ["set", [1, 2, 3, 4]]],
          E("syntax error", "set must have 0 to 3 members but 4 are present",
            '["set",[1,2,3,4]]')),
    pcase("insert-arg-length", ["scs", "insert", "abcdef"],
          E("constraint violation",
            '"abcdef" length 6 is greater than maximum allowed length 4'), table="C"),
    pcase("insert-arg-enum", ["sie", "insert", 9],
          E("constraint violation", "9 is not one of the allowed values ([1, 2, 3])"),
          table="C"),
    pcase("insert-arg-duplicate", ["si", "insert", ["set", [1, 1]]],
          E("ovsdb error", "set contains duplicate")),
    pcase("insert-map-given-set", ["m", "insert", ["set", ["a"]]],
          E("syntax error", 'expected ["map", <array>]', '["set",["a"]]')),
    pcase("insert-map-value-constraint", ["me", "insert", ["map", [["k1", -1]]]],
          E("constraint violation", "-1 is less than minimum allowed value 0"), table="C"),
    pcase("delete-arg-constraint", ["sci", "delete", 50],
          E("constraint violation", "50 is not in the valid range 1 to 10 (inclusive)"),
          table="C"),
    pcase("delete-map-wrong-key-type", ["m", "delete", 1],
          E("syntax error", "expected string", "1")),
    pcase("delete-map-enum-key", ["me", "delete", "k3"],
          E("constraint violation", "k3 is not one of the allowed values ([k1, k2])"),
          table="C"),
    pcase("delete-map-bad-pair-falls-back", ["m", "delete", ["map", [["a", "x"]]]],
          E("syntax error", "expected string", '["map",[["a","x"]]]')),
    pcase("delete-arg-type", ["si", "delete", ["set", ["a"]]],
          E("syntax error", "expected integer", '"a"')),
]


@pytest.mark.parametrize("case", case_params(ARITH_CASES + SET_MAP_CASES))
def test_mutation_results(case: Case) -> None:
    run_case(case)


@pytest.mark.parametrize("case", case_params(ARITH_ERROR_CASES + SIZE_ERROR_CASES))
def test_mutation_runtime_errors(case: Case) -> None:
    run_case(case)


@pytest.mark.parametrize("case", case_params(PARSE_CASES))
def test_mutation_parse_errors(case: Case) -> None:
    run_case(case)


OTHER_CASES = [
    Case(
        "runtime-error-needs-a-matching-row",
        [mut("A", [["i", "==", 99]], [["i", "/=", 0]])],
        [{"count": 0}],
        setup=[[ins("A", {"i": 1}, uuid=1)]],
    ),
    Case(
        "mutations-parsed-before-where",
        [mut("A", [["zz", "==", 1]], [["s", "+=", 1]])],
        [mism("+=", "s", "string", '["s","+=",1]')],
    ),
    Case(
        "mutate-several-rows-and-columns",
        [mut("A", [["i", ">", 0]], [["i", "*=", 10], ["ss", "insert", "x"],
                                     ["m", "insert", ["map", [["k", 1]]]]]),
         sel("A", columns=["i", "ss", "m"], sort=["i"])],
        [{"count": 2}, {"rows": [
            {"i": 0, "ss": ["set", []], "m": ["map", []]},
            {"i": 10, "ss": "x", "m": ["map", [["k", 1]]]},
            {"i": 20, "ss": ["set", ["a", "x"]], "m": ["map", [["k", 1]]]},
        ]}],
        setup=[[ins("A", {"i": 0}), ins("A", {"i": 1}), ins("A", {"i": 2, "ss": "a"})]],
    ),
    Case(
        "two-mutate-ops-accumulate",
        [mut("A", [], [["i", "+=", 1]]), mut("A", [], [["i", "*=", 5]]),
         sel("A", columns=["i"])],
        [{"count": 1}, {"count": 1}, {"rows": [{"i": 10}]}],
        setup=[[ins("A", {"i": 1})]],
    ),
]


@pytest.mark.parametrize("case", case_params(OTHER_CASES))
def test_mutation_other(case: Case) -> None:
    run_case(case)


def test_failed_mutation_leaves_row_unchanged() -> None:
    db = new_db()
    commit(db, [ins("A", {"i": 1, "si": ["set", [1, 2]]}, uuid=1)])
    from unit_helpers import fail

    fail(db, [mut("A", [], [["i", "+=", 5], ["si", "*=", 0]])])
    assert row_json(db, "A", U(1), "i", "si") == {"i": 1, "si": ["set", [1, 2]]}
