"""Database schemas: parsing, column types, root tables, the normalized form the real
server reports (`get_schema`), and schema errors as `ovsdb-tool create` reports them."""

from __future__ import annotations

import copy
import json

import pytest
from unit_helpers import HERE, OVN_NB_PATH, SCHEMA_PATH, schema, schema_json, schema_no_root

from pyovsdb.ovsdb.errors import OvsdbError
from pyovsdb.ovsdb.schema import DatabaseSchema
from pyovsdb.ovsdb.types import ColumnType
from pyovsdb.storage.schemafile import load_schema

GET_SCHEMA = json.loads((HERE / "schemas" / "every_type.get_schema.json").read_text())


def test_load_every_type_schema() -> None:
    s = load_schema(str(SCHEMA_PATH))
    assert s.name == "T"
    assert s.version == "1.2.3"
    assert s.version_tuple() == (1, 2, 3)
    assert list(s.tables) == ["A", "B", "N", "C", "W", "WS", "I2", "I3"]
    a = s.tables["A"]
    assert list(a.all_columns)[:2] == ["_uuid", "_version"]
    assert set(a.all_columns) - set(a.columns) == {"_uuid", "_version"}
    assert [c.index for c in a.columns.values()] == list(range(len(a.columns)))
    assert a.all_columns["_uuid"].mutable is False
    assert a.all_columns["_version"].mutable is False
    assert a.columns["imm"].mutable is False
    assert a.columns["i"].mutable is True
    assert a.columns["eph"].ephemeral is True and not a.columns["eph"].persistent
    assert s.tables["B"].max_rows == 3
    assert a.max_rows == float("inf")
    assert s.tables["B"].indexes == [("name",)]
    assert s.tables["I2"].indexes == [("x", "y"), ("y",)]


def test_normalized_form_matches_real_get_schema() -> None:
    assert schema().to_json() == GET_SCHEMA


def test_normalized_form_is_stable() -> None:
    normalized = schema().to_json()
    again = DatabaseSchema.from_json(copy.deepcopy(normalized)).to_json()
    assert again == normalized


def test_root_tables() -> None:
    s = schema()
    assert {n for n, t in s.tables.items() if t.is_root} == {"A", "B", "C", "W", "WS", "I2",
                                                             "I3"}
    assert not s.all_root
    # get_schema shows isRoot only on root tables when a root set exists.
    tables = s.to_json()["tables"]
    assert tables["A"]["isRoot"] is True
    assert "isRoot" not in tables["N"]


def test_no_root_set_means_all_root() -> None:
    s = schema_no_root()
    assert all(t.is_root for t in s.tables.values())
    assert s.all_root
    assert all("isRoot" not in t for t in s.to_json()["tables"].values())


def test_is_root_false_everywhere_means_all_root() -> None:
    js = {"name": "X", "tables": {"P": {"isRoot": False, "columns": {"a": {"type": "integer"}}},
                                  "Q": {"columns": {"a": {"type": "integer"}}}}}
    s = DatabaseSchema.from_json(js)
    assert s.tables["P"].is_root and s.tables["Q"].is_root


@pytest.mark.parametrize(
    ("column", "flags", "english"),
    [
        ("i", "scalar", "integer"),
        ("r", "scalar", "real"),
        ("u", "scalar", "uuid"),
        ("oi", "optional", "set of up to 1 integers"),
        ("os", "optional", "set of up to 1 strings"),
        ("si", "set", "set of integers"),
        ("su", "set", "set of uuids"),
        ("sref", "set", "set of uuids"),
        ("s23", "set", "set of 1 to 3 integers"),
        ("s1u", "set", "set of 1 or more integers"),
        ("m", "map", "map of (string, integer) pairs"),
        ("m12", "map", "map of 1 to 2 (string, string) pairs"),
        ("mir", "map", "map of (integer, real) pairs"),
        ("wkm", "map", "map of (uuid, integer) pairs"),
    ],
)
def test_column_types(column: str, flags: str, english: str) -> None:
    t = schema().tables["A"].columns[column].type
    assert t.is_scalar == (flags == "scalar")
    assert t.is_optional_scalar == (flags == "optional")
    assert t.is_set == (flags in ("set", "optional"))
    assert t.is_map == (flags == "map")
    assert t.to_english() == english


def test_reference_columns() -> None:
    a = schema().tables["A"]
    assert {c.name for c in a.strong_ref_columns} == {"sref", "oref", "rm", "nref"}
    assert {c.name for c in a.weak_ref_columns} == {"wref", "wkm", "wvm", "wnref"}
    assert {c.name for c in a.ref_columns} == {"sref", "oref", "rm", "nref", "wref", "wkm",
                                               "wvm", "wnref"}
    key = a.columns["wkm"].type.key
    assert key.is_weak_ref and not key.is_strong_ref and key.ref_table == "B"
    assert a.columns["rm"].type.value.is_strong_ref
    assert not a.columns["su"].type.has_refs


def test_weak_reference_column_is_always_mutable() -> None:
    js = {"name": "X", "tables": {"P": {"columns": {
        "w": {"type": {"key": {"type": "uuid", "refTable": "P", "refType": "weak"}},
              "mutable": False},
        "s": {"type": {"key": {"type": "uuid", "refTable": "P"}, "min": 0}, "mutable": False},
    }}}}
    s = DatabaseSchema.from_json(js)
    assert s.tables["P"].columns["w"].mutable is True
    assert s.tables["P"].columns["s"].mutable is False
    assert "mutable" not in s.to_json()["tables"]["P"]["columns"]["w"]


def test_column_type_normalization() -> None:
    t = ColumnType.from_json({"key": {"type": "integer"}, "min": 1, "max": 1})
    assert t.to_json() == "integer"
    t = ColumnType.from_json({"key": "string", "min": 0, "max": "unlimited"})
    assert t.to_json() == {"key": "string", "min": 0, "max": "unlimited"}
    t = ColumnType.from_json({"key": {"type": "string", "enum": ["set", ["b", "a"]]}})
    assert t.to_json() == {"key": {"type": "string", "enum": ["set", ["a", "b"]]}}
    assert t.key.enum == ("a", "b")
    t = ColumnType.from_json({"key": {"type": "uuid", "refTable": "X", "refType": "strong"}})
    assert t.to_json() == {"key": {"type": "uuid", "refTable": "X"}}
    t = ColumnType.from_json({"key": {"type": "real", "minReal": 1}})
    assert t.key.min_real == 1.0 and type(t.key.min_real) is float
    assert ColumnType.from_json({"key": "integer", "max": 4294967295}).max == 4294967295


def test_load_schema_errors(tmp_path) -> None:
    with pytest.raises(OvsdbError) as ei:
        load_schema(str(tmp_path / "missing.ovsschema"))
    assert ei.value.tag == "I/O error"
    bad = tmp_path / "bad.ovsschema"
    bad.write_text("{not json")
    with pytest.raises(OvsdbError) as ei:
        load_schema(str(bad))
    assert ei.value.tag == "syntax error"


# ---------------------------------------------------------------------------------------
# Schema errors. Details as `ovsdb-tool create` (3.1) reports them.


def _t(cols: dict, **extra: object) -> dict:
    t: dict = {"columns": cols}
    t.update(extra)
    return t


def _one(col: dict, **extra: object) -> dict:
    return {"name": "T", "tables": {"A": _t({"x": col}, **extra)}}


SCHEMA_ERRORS = [
    ("not-object", [], "Parsing database schema failed: Object expected."),
    ("no-name", {"tables": {}},
     "Parsing database schema failed: Required 'name' member is missing."),
    ("bad-name", {"name": "a b", "tables": {}},
     "Parsing database schema failed: Type mismatch for member 'name'."),
    ("bad-version", {"name": "T", "version": "1.2", "tables": {}},
     'schema version "1.2" not in format x.y.z'),
    ("no-tables", {"name": "T"},
     "Parsing database schema failed: Required 'tables' member is missing."),
    ("unknown-member", {"name": "T", "tables": {}, "foo": 1},
     "Parsing database schema failed: Member 'foo' is present but not allowed here."),
    ("reserved-table", {"name": "T", "tables": {"_A": _t({"x": {"type": "integer"}})}},
     'names beginning with "_" are reserved'),
    ("bad-table-name", {"name": "T", "tables": {"a-b": _t({"x": {"type": "integer"}})}},
     "name must be a valid id"),
    ("no-columns", {"name": "T", "tables": {"A": {}}},
     "Parsing table schema for table A failed: Required 'columns' member is missing."),
    ("empty-columns", {"name": "T", "tables": {"A": _t({})}},
     "table must have at least one column"),
    ("reserved-column", {"name": "T", "tables": {"A": _t({"_x": {"type": "integer"}})}},
     'names beginning with "_" are reserved'),
    ("bad-column-name", {"name": "T", "tables": {"A": _t({"x y": {"type": "integer"}})}},
     "name must be a valid id"),
    ("column-no-type", _one({}),
     "Parsing schema for column x failed: Required 'type' member is missing."),
    ("column-bad-type", _one({"type": "int"}), '"int" is not an atomic-type'),
    ("column-unknown-member", _one({"type": "integer", "foo": 1}),
     "Parsing schema for column x failed: Member 'foo' is present but not allowed here."),
    ("min-2", _one({"type": {"key": "integer", "min": 2, "max": 3}}),
     "ovsdb type fails constraint checks"),
    ("max-0", _one({"type": {"key": "integer", "min": 0, "max": 0}}),
     "ovsdb type fails constraint checks"),
    ("min-gt-max", _one({"type": {"key": "integer", "min": 1, "max": 0}}),
     "ovsdb type fails constraint checks"),
    ("undefined-ref-table", _one({"type": {"key": {"type": "uuid", "refTable": "Z"}}}),
     "column x key refers to undefined table Z"),
    ("bad-ref-type", _one({"type": {"key": {"type": "uuid", "refTable": "A", "refType": "soft"}}}),
     'refType must be "strong" or "weak" (not "soft")'),
    ("min-integer-gt-max", _one({"type": {"key": {"type": "integer", "minInteger": 5,
                                                  "maxInteger": 1}}}),
     "minInteger exceeds maxInteger"),
    ("min-integer-on-string", _one({"type": {"key": {"type": "string", "minInteger": 5}}}),
     "Parsing ovsdb type failed: Member 'minInteger' is present but not allowed here."),
    ("index-unknown-column", _one({"type": "integer"}, indexes=[["y"]]),
     "y is not a valid column name"),
    ("index-ephemeral", _one({"type": "integer", "ephemeral": True}, indexes=[["x"]]),
     "ephemeral columns (such as x) may not be indexed"),
    ("max-rows-0", _one({"type": "integer"}, maxRows=0), "maxRows must be at least 1"),
    ("is-root-not-bool", _one({"type": "integer"}, isRoot=1),
     "Parsing table schema for table A failed: Type mismatch for member 'isRoot'."),
    ("bad-enum", _one({"type": {"key": {"type": "integer", "enum": ["set", ["a"]]}}}),
     "expected integer"),
    ("value-without-key", _one({"type": {"value": "integer"}}),
     "Parsing ovsdb type failed: Required 'key' member is missing."),
]

def _schema_error_params() -> list:
    out = []
    for cid, js, details in SCHEMA_ERRORS:
        out.append(pytest.param(js, details, id=cid))
    return out


@pytest.mark.parametrize(("js", "details"), _schema_error_params())
def test_schema_errors(js: object, details: str) -> None:
    with pytest.raises(OvsdbError) as ei:
        DatabaseSchema.from_json(js)
    assert ei.value.tag == "syntax error"
    assert ei.value.details == details


@pytest.mark.parametrize("cid", [c[0] for c in SCHEMA_ERRORS])
def test_schema_errors_are_rejected(cid: str) -> None:
    """Whatever the wording, every one of these schemas is refused."""
    js = next(j for c, j, _ in SCHEMA_ERRORS if c == cid)
    with pytest.raises(OvsdbError) as ei:
        DatabaseSchema.from_json(js)
    assert ei.value.tag == "syntax error"


def test_database_name_with_underscore_accepted() -> None:
    s = DatabaseSchema.from_json({"name": "_T", "tables": {"A": _t({"x": {"type": "integer"}})}})
    assert s.name == "_T"


def test_every_type_schema_file_is_valid_json_for_real_tools() -> None:
    js = schema_json()
    assert js["name"] == "T" and set(js["tables"]) == set(GET_SCHEMA["tables"])


# ---------------------------------------------------------------------------------------
# The real OVN Northbound schema


def test_ovn_nb_schema() -> None:
    s = load_schema(str(OVN_NB_PATH))
    assert s.name == "OVN_Northbound"
    assert s.version == "7.0.0"
    assert len(s.tables) == 30
    assert s.tables["NB_Global"].is_root and s.tables["NB_Global"].max_rows == 1
    assert not s.tables["Logical_Switch_Port"].is_root
    assert not s.tables["ACL"].is_root
    # Connection and SSL do not say: with a root set, they are not root tables.
    assert not s.tables["Connection"].is_root and not s.tables["SSL"].is_root
    assert s.tables["Logical_Switch_Port"].indexes == [("name",)]
    assert s.tables["BFD"].indexes == [("logical_port", "dst_ip")]
    ports = s.tables["Logical_Switch"].columns["ports"].type
    assert ports.key.ref_table == "Logical_Switch_Port" and ports.key.is_strong_ref
    assert ports.min == 0 and ports.max == float("inf")
    assert s.tables["Logical_Switch_Port"].columns["name"].type.is_scalar
    # Normalizing twice changes nothing.
    assert DatabaseSchema.from_json(copy.deepcopy(s.to_json())).to_json() == s.to_json()
