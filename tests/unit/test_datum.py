"""Datums: parsing and validation, canonical (sorted) form, JSON rendering, defaults,
textual forms used in error messages, diffs and references."""

from __future__ import annotations

import itertools
import random

import pytest
from unit_helpers import C_ROW, Case, U, case_params, ins, run_case, schema

from pyovsdb.ovsdb.datum import (
    UUID_ZERO,
    SymbolTable,
    atom_from_json,
    atom_to_string,
    check_atom,
    datum_to_string,
    format_real,
    is_uuid_string,
)
from pyovsdb.ovsdb.errors import OvsdbError
from pyovsdb.ovsdb.types import BaseType, column_type


def codec(table: str, column: str):
    return schema().tables[table].all_columns[column].type.codec


def parse_error(c, json, **kw) -> OvsdbError:
    with pytest.raises(OvsdbError) as ei:
        c.from_json(json, **kw)
    return ei.value


# ---------------------------------------------------------------------------------------
# Parsing to the canonical form


@pytest.mark.parametrize(
    ("col", "json", "value"),
    [
        ("i", 5, 5),
        ("i", -(2**63), -(2**63)),
        ("i", 2**63 - 1, 2**63 - 1),
        ("i", 3.0, 3),
        ("i", ["set", [7]], 7),
        ("r", 1, 1.0),
        ("r", -2.5, -2.5),
        ("b", True, True),
        ("s", "", ""),
        ("s", "é\u0001", "é\u0001"),
        ("u", ["uuid", U(0xAB).upper()], U(0xAB)),
        ("oi", ["set", []], ()),
        ("oi", 4, (4,)),
        ("oi", ["set", [4]], (4,)),
        ("si", ["set", [3, -1, 2]], (-1, 2, 3)),
        ("sr", ["set", [2.5, -0.5, 1]], (-0.5, 1.0, 2.5)),
        ("sb", ["set", [True, False]], (False, True)),
        ("ss", ["set", ["b", "a", "B", "é", "z", "A"]], ("A", "B", "a", "b", "z", "é")),
        ("su", ["set", [["uuid", U(0xB)], ["uuid", U(0xA)]]], (U(0xA), U(0xB))),
        ("m", ["map", [["b", 2], ["a", 1]]], (("a", 1), ("b", 2))),
        ("m", ["map", []], ()),
        ("mir", ["map", [[10, 1], [-2, 0.5]]], ((-2, 0.5), (10, 1.0))),
        ("wkm", ["map", [[["uuid", U(2)], 1], [["uuid", U(1)], 2]]], ((U(1), 2), (U(2), 1))),
    ],
)
def test_from_json_canonical(col: str, json: object, value: object) -> None:
    got = codec("A", col).from_json(json)
    assert got == value
    assert type(got) is type(value)
    if isinstance(value, float):
        assert type(got) is float


@pytest.mark.parametrize(
    ("col", "value", "json"),
    [
        ("i", 5, 5),
        ("r", 0.0, 0.0),
        ("u", U(1), ["uuid", U(1)]),
        ("oi", (), ["set", []]),
        ("oi", (4,), 4),
        ("ou", (U(1),), ["uuid", U(1)]),
        ("si", (1,), 1),
        ("si", (1, 2), ["set", [1, 2]]),
        ("su", (U(1), U(2)), ["set", [["uuid", U(1)], ["uuid", U(2)]]]),
        ("m", (), ["map", []]),
        ("m", (("a", 1),), ["map", [["a", 1]]]),
        ("rm", (("k", U(3)),), ["map", [["k", ["uuid", U(3)]]]]),
        ("wkm", ((U(3), 4),), ["map", [[["uuid", U(3)], 4]]]),
    ],
)
def test_to_json(col: str, value: object, json: object) -> None:
    c = codec("A", col)
    assert c.to_json(value) == json
    assert c.from_json(json) == value


def test_sort_order_of_every_atomic_type() -> None:
    cases = {
        "si": [-(2**63), -5, 0, 3, 2**63 - 1],
        "sr": [-1e300, -0.5, 0.0, 0.25, 1e300],
        "sb": [False, True],
        "ss": ["", "A", "B", "Z", "_", "a", "b", "z", "é", "\uffff", "\U0001f600"],
        "su": [U(1), U(0xA), U(0xB), "ffffffff-ffff-ffff-ffff-ffffffffffff"],
    }
    rng = random.Random(5)
    for col, ordered in cases.items():
        c = codec("A", col)
        shuffled = ordered[:]
        rng.shuffle(shuffled)
        if col == "su":
            json = ["set", [["uuid", a] for a in shuffled]]
        else:
            json = ["set", shuffled]
        assert c.from_json(json) == tuple(ordered), col
    # Strings sort by UTF-8 bytes (strcmp).
    ss = cases["ss"]
    assert ss == sorted(ss, key=lambda s: s.encode())


def test_relaxed_bounds() -> None:
    c = codec("A", "s23")
    assert c.from_json(["set", []], None, 0, 3) == ()
    assert c.from_json(["set", [1, 2, 3, 4, 5]], None, 0, float("inf")) == (1, 2, 3, 4, 5)
    e = parse_error(c, ["set", [1, 2, 3, 4]], lo=0, hi=3)
    assert e.details == "set must have 0 to 3 members but 4 are present"


def test_named_uuid_needs_symbol_table() -> None:
    c = codec("A", "u")
    e = parse_error(c, ["named-uuid", "x"])
    assert (e.tag, e.details) == ("syntax error", 'expected ["uuid", <string>]')
    symtab = SymbolTable(lambda: U(42))
    assert c.from_json(["named-uuid", "x"], symtab) == U(42)
    assert symtab["x"].uuid == U(42) and symtab["x"].created is False
    assert symtab.lookup("x") is symtab["x"]


def test_keys_from_json() -> None:
    assert codec("A", "m").keys_from_json(["set", ["b", "a"]]) == ("a", "b")
    assert codec("A", "m").keys_from_json("a") == ("a",)
    with pytest.raises(OvsdbError) as ei:
        codec("A", "m").keys_from_json(["set", ["a", "a"]])
    assert ei.value.details == "set contains duplicate"


@pytest.mark.parametrize(
    ("atype", "json", "details"),
    [
        ("integer", "1", "expected integer"),
        ("integer", 1.5, "expected integer"),
        ("integer", 2.0**63, "expected integer"),
        ("integer", False, "expected integer"),
        ("real", "1", "expected real"),
        ("real", None, "expected real"),
        ("boolean", 0, "expected boolean"),
        ("string", ["set", []], "expected string"),
        ("uuid", "x", 'expected ["uuid", <string>]'),
        ("uuid", ["uuid", 1], 'expected ["uuid", <string>]'),
        ("uuid", ["uuid", "a", "b"], 'expected ["uuid", <string>]'),
        ("uuid", ["uuid", "xyz"], '"xyz" is not a valid UUID'),
        ("uuid", ["uuid", U(1) + "0"], f'"{U(1)}0" is not a valid UUID'),
    ],
)
def test_atom_errors(atype: str, json: object, details: str) -> None:
    with pytest.raises(OvsdbError) as ei:
        atom_from_json(atype, json)
    assert (ei.value.tag, ei.value.details) == ("syntax error", details)


def test_is_uuid_string() -> None:
    assert is_uuid_string(U(1))
    assert is_uuid_string(U(0xABC).upper())
    assert not is_uuid_string(U(1)[:-1])
    assert not is_uuid_string(U(1).replace("-", "_"))
    assert not is_uuid_string(" " + U(1)[1:])
    assert not is_uuid_string(5)


# ---------------------------------------------------------------------------------------
# Defaults


def test_defaults() -> None:
    assert codec("A", "i").default == 0
    assert codec("A", "r").default == 0.0 and type(codec("A", "r").default) is float
    assert codec("A", "b").default is False
    assert codec("A", "s").default == ""
    assert codec("A", "u").default == UUID_ZERO
    for col in ("oi", "si", "m", "sref", "wkm"):
        assert codec("A", col).default == ()


def test_defaults_min_one() -> None:
    assert codec("A", "s23").default == (0,)
    assert codec("A", "s1u").default == (0,)
    assert codec("A", "m12").default == (("", ""),)
    assert codec("WS", "ws1").default == (UUID_ZERO,)


# ---------------------------------------------------------------------------------------
# Textual forms (error messages)


@pytest.mark.parametrize(
    ("s", "text"),
    [
        ("k2", "k2"),
        ("a.b-c_d", "a.b-c_d"),
        ("_x", "_x"),
        ("null", "null"),
        ("TRUE", "TRUE"),
        ("A1", "A1"),
        ("", '""'),
        ("a b", '"a b"'),
        ("true", '"true"'),
        ("false", '"false"'),
        ("-x", '"-x"'),
        ("1abc", '"1abc"'),
        ("x:y", '"x:y"'),
        ("é", '"é"'),
        ('a"b', '"a\\"b"'),
        ("back\\slash", '"back\\\\slash"'),
        ("tab\there", '"tab\\there"'),
        (U(0xABC), f'"{U(0xABC)}"'),
    ],
)
def test_string_atom_text(s: str, text: str) -> None:
    assert atom_to_string("string", s) == text


ENUM_TEXT_CASES = [
    Case(f"enum-text-{i}", [ins("C", {**C_ROW, "e": s})],
         [{"error": "constraint violation",
           "details": f"{text} is not one of the allowed values ([green, red])"}])
    for i, (s, text) in enumerate([
        ("k2", "k2"), ("a.b-c_d", "a.b-c_d"), ("_x", "_x"), ("null", "null"),
        ("TRUE", "TRUE"), ("", '""'), ("a b", '"a b"'), ("true", '"true"'),
        ("-x", '"-x"'), ("1abc", '"1abc"'), ("x:y", '"x:y"'), ("é", '"é"'),
        ('a"b', '"a\\"b"'), ("back\\slash", '"back\\\\slash"'), ("tab\there", '"tab\\there"'),
        (U(0xABC), f'"{U(0xABC)}"'),
    ])
]


@pytest.mark.parametrize("case", case_params(ENUM_TEXT_CASES))
def test_string_atom_text_in_real_messages(case: Case) -> None:
    """The same strings, as the real server renders them in a constraint message."""
    run_case(case)


@pytest.mark.parametrize(
    ("atype", "atom", "text"),
    [
        ("integer", -5, "-5"),
        ("real", 2.0, "2"),
        ("real", 2 / 3, "0.666666666666667"),
        ("real", 1e15, "1e+15"),
        ("real", 123456789012345678.0, "1.23456789012346e+17"),
        ("real", 0.1, "0.1"),
        ("boolean", True, "true"),
        ("boolean", False, "false"),
        ("uuid", U(7), U(7)),
    ],
)
def test_atom_text(atype: str, atom: object, text: str) -> None:
    assert atom_to_string(atype, atom) == text


def test_format_real() -> None:
    assert format_real(6.66666666666667e299) == "6.66666666666667e+299"
    assert format_real(1e17) == "1e+17"
    assert format_real(-0.5) == "-0.5"


@pytest.mark.parametrize(
    ("table", "col", "value", "text"),
    [
        ("A", "i", 3, "3"),
        ("A", "s", "a b", '"a b"'),
        ("A", "oi", (), "[]"),
        ("A", "oi", (5,), "5"),
        ("A", "os", ("x",), "x"),
        ("A", "si", (5,), "[5]"),
        ("A", "si", (1, 2), "[1, 2]"),
        ("A", "ss", ("a", "b c"), '[a, "b c"]'),
        ("A", "m", (), "{}"),
        ("A", "m", (("a", 1), ("b", 2)), "{a=1, b=2}"),
        ("A", "mir", ((1, 0.5),), "{1=0.5}"),
        ("A", "su", (U(1),), f"[{U(1)}]"),
    ],
)
def test_datum_text(table: str, col: str, value: object, text: str) -> None:
    assert datum_to_string(codec(table, col), value) == text


@pytest.mark.parametrize(
    ("base", "atom", "details"),
    [
        (BaseType("string", enum=("green", "red")), "blue",
         "blue is not one of the allowed values ([green, red])"),
        (BaseType("integer", enum=(1, 2, 3)), 7, "7 is not one of the allowed values ([1, 2, 3])"),
        (BaseType("real", enum=(0.5, 2.0)), 1.0, "1 is not one of the allowed values ([0.5, 2])"),
        (BaseType("boolean", enum=(True,)), False,
         "false is not one of the allowed values ([true])"),
        (BaseType("integer", min_integer=1, max_integer=10), 0,
         "0 is not in the valid range 1 to 10 (inclusive)"),
        (BaseType("integer", min_integer=5), 1, "1 is less than minimum allowed value 5"),
        (BaseType("integer", max_integer=5), 9, "9 is greater than maximum allowed value 5"),
        (BaseType("real", min_real=0.5, max_real=2.5), 0.1,
         "0.1 is not in the valid range 0.5 to 2.5 (inclusive)"),
        (BaseType("real", min_real=1.5), 1.0, "1 is less than minimum allowed value 1.5"),
        (BaseType("real", max_real=1.5), 2.0, "2 is greater than maximum allowed value 1.5"),
        (BaseType("string", min_length=2), "a",
         '"a" length 1 is less than minimum allowed length 2'),
        (BaseType("string", max_length=4), "abcde",
         '"abcde" length 5 is greater than maximum allowed length 4'),
    ],
)
def test_check_atom(base: BaseType, atom: object, details: str) -> None:
    with pytest.raises(OvsdbError) as ei:
        check_atom(base, atom)
    assert (ei.value.tag, ei.value.details) == ("constraint violation", details)


@pytest.mark.parametrize(
    ("base", "atom"),
    [
        (BaseType("string", enum=("green", "red")), "red"),
        (BaseType("integer", min_integer=1, max_integer=10), 10),
        (BaseType("integer", min_integer=1, max_integer=10), 1),
        (BaseType("real", min_real=0.5, max_real=2.5), 2.5),
        (BaseType("string", min_length=2, max_length=2), "éé"),
        (BaseType("uuid"), U(1)),
    ],
)
def test_check_atom_accepts(base: BaseType, atom: object) -> None:
    check_atom(base, atom)


# ---------------------------------------------------------------------------------------
# Diffs (update2 "modify" and file records) and references


@pytest.mark.parametrize(
    ("col", "old", "new", "diff"),
    [
        ("i", 1, 2, 2),
        ("si", (1, 2), (2, 3), (1, 3)),
        ("si", (), (5,), (5,)),
        ("si", (1, 2), (), (1, 2)),
        ("m", (("a", 1), ("b", 2)), (("a", 1), ("b", 3), ("c", 4)), (("b", 3), ("c", 4))),
        ("m", (("a", 1), ("b", 2)), (("b", 2),), (("a", 1),)),
        ("m", (("a", 1),), (), (("a", 1),)),
    ],
)
def test_diff_and_apply(col: str, old: object, new: object, diff: object) -> None:
    c = codec("A", col)
    assert c.diff(old, new) == diff
    assert c.apply_diff(old, diff) == new


def test_diff_round_trip_random() -> None:
    rng = random.Random(7)
    cs, cm = codec("A", "si"), codec("A", "m")
    for _ in range(300):
        a = tuple(sorted(rng.sample(range(10), rng.randint(0, 6))))
        b = tuple(sorted(rng.sample(range(10), rng.randint(0, 6))))
        d = cs.diff(a, b)
        assert cs.apply_diff(a, d) == b
        assert cs.from_json(cs.to_json(d), None, 0, float("inf")) == d
        ma = tuple((k, rng.randrange(3)) for k in sorted(rng.sample("abcdefg", rng.randint(0, 5))))
        mb = tuple((k, rng.randrange(3)) for k in sorted(rng.sample("abcdefg", rng.randint(0, 5))))
        md = cm.diff(ma, mb)
        assert cm.apply_diff(ma, md) == mb
        assert cm.diff_from_json(cm.to_json(md)) == md


def test_iter_refs() -> None:
    a = schema().tables["A"]
    row = {
        "sref": (U(1), U(2)),
        "oref": (U(3),),
        "wref": (U(4),),
        "rm": (("x", U(5)),),
        "wkm": ((U(6), 1),),
        "wvm": (("y", U(7)),),
        "nref": (U(8),),
        "su": (U(9),),
    }
    strong = set()
    weak = set()
    for col, value in row.items():
        c = a.columns[col].type.codec
        strong.update(c.iter_refs(value, True))
        weak.update(c.iter_refs(value, False))
    assert strong == {("B", U(1)), ("B", U(2)), ("B", U(3)), ("B", U(5)), ("N", U(8))}
    assert weak == {("B", U(4)), ("B", U(6)), ("B", U(7))}
    self_ref = schema().tables["B"].columns["self"].type.codec
    assert list(self_ref.iter_refs((U(1),), True)) == [("B", U(1))]


def test_check_constraints_of_computed_values() -> None:
    c = schema().tables["C"].columns
    c["sci"].type.codec.check_constraints((1, 10))
    c["me"].type.codec.check_constraints((("k1", 0),))
    with pytest.raises(OvsdbError) as ei:
        c["sci"].type.codec.check_constraints((1, 11))
    assert ei.value.details == "11 is not in the valid range 1 to 10 (inclusive)"
    with pytest.raises(OvsdbError) as ei:
        c["me"].type.codec.check_constraints((("k1", 0), ("k9", 0)))
    assert ei.value.details == "k9 is not one of the allowed values ([k1, k2])"


def test_codec_from_column_type_helper() -> None:
    ct = column_type("integer", "string", 0, float("inf"))
    c = ct.codec
    assert c.is_map and not c.is_scalar
    assert c.from_json(["map", [[2, "b"], [1, "a"]]]) == ((1, "a"), (2, "b"))
    assert ct.to_english() == "map of (integer, string) pairs"
    # A codec is built once per type.
    assert ct.codec is c


def test_equal_values_are_equal_tuples() -> None:
    """Canonical form: every order of the same elements parses to the same value."""
    c = codec("A", "ss")
    forms = {c.from_json(["set", list(p)]) for p in itertools.permutations(["x", "a", "m"])}
    assert forms == {("a", "m", "x")}


def test_small_diff_to_a_large_set() -> None:
    """A few elements in or out of a large set (put in place by binary search) give
    what the symmetric difference gives, at either end and in the middle."""
    rng = random.Random(11)
    cs = codec("A", "si")
    for _ in range(300):
        a = tuple(sorted(rng.sample(range(200), rng.randint(20, 120))))
        d = tuple(sorted(rng.sample([*range(-2, 3), *range(197, 203), *a[:3],
                                     rng.randrange(200)], rng.randint(1, 2))))
        assert cs.apply_diff(a, d) == tuple(sorted(set(a) ^ set(d))), (a, d)
