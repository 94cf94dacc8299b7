"""The pure replica: applying monitor JSON (v1 and v2), full resyncs recorded as
differences, indexes, value conversion in both directions and typed row access. No
server: the inputs are the JSON a server sends."""

from __future__ import annotations

import random
import uuid as uuidlib
from typing import Any

import pytest
from idl_helpers import SCHEMA

from pyovsdb.idl import ChangeView, IdlRow, NotFetchedError, Replica, changed_columns
from pyovsdb.idl.replica import python_converter, wire_parser
from pyovsdb.idl.row import typed

U1, U2, U3 = (str(uuidlib.UUID(int=i)) for i in (1, 2, 3))
C1, C2 = (str(uuidlib.UUID(int=i)) for i in (11, 12))


def replica(**kw: Any) -> Replica:
    return Replica(SCHEMA, **kw)


def test_insert_modify_delete_and_changeset() -> None:
    r = replica()
    cs = r.apply_update2({"Simple": {U1: {"insert": {"name": "a", "i": 1, "ss": ["set", ["y", "x"]],
                                                      "m": ["map", [["k", "v"]]]}}}})
    row = r["Simple"].rows[U1]
    assert row.data["ss"] == ("x", "y") and row.data["m"] == (("k", "v"),)
    assert row.data["r"] == 0.0 and row.data["os"] == ()  # defaults for absent columns
    assert ChangeView(cs).inserted("Simple") == [row]
    # modify: a set diff toggles elements, a map diff adds/changes/removes keys
    cs = r.apply_update2({"Simple": {U1: {"modify": {"ss": ["set", ["x", "z"]], "i": 2,
                                                      "m": ["map", [["k", "v"], ["n", "1"]]]}}}})
    new = r["Simple"].rows[U1]
    assert new.data["ss"] == ("y", "z") and new.data["i"] == 2 and new.data["m"] == (("n", "1"),)
    (ch,) = ChangeView(cs).modified("Simple")
    assert ch.old is row and ch.new is new  # the rows themselves, not copies
    assert sorted(changed_columns(ch)) == ["i", "m", "ss"]
    assert ChangeView(cs).modified("Simple", "name") == []
    cs = r.apply_update2({"Simple": {U1: {"delete": None}}})
    assert ChangeView(cs).deleted("Simple") == [new] and not r["Simple"].rows


def test_update1_rows() -> None:
    r = replica()
    r.apply_update1({"Other": {U1: {"new": {"name": "a", "n": 1, "tags": ["set", []]}}}})
    r.apply_update1({"Other": {U1: {"old": {"n": 1}, "new": {"name": "a", "n": 2,
                                                              "tags": "t"}}}})
    assert r["Other"].rows[U1].data == {"name": "a", "n": 2, "tags": ("t",)}
    r.apply_update1({"Other": {U1: {"old": {"name": "a"}}}})
    assert not r["Other"].rows


def test_replace_all_records_the_difference_and_keeps_unchanged_rows() -> None:
    r = replica()
    r.replace_all({"Other": {U1: {"initial": {"name": "a"}}, U2: {"initial": {"name": "b"}}}}, 2)
    a, b = r["Other"].rows[U1], r["Other"].rows[U2]
    idx = r["Other"].add_index("by_name", "name")
    cs = r.replace_all({"Other": {U1: {"initial": {"name": "a"}},
                                  U3: {"initial": {"name": "c"}},
                                  U2: {"initial": {"name": "b2"}}}}, 2)
    view = ChangeView(cs)
    assert [x.data["name"] for x in view.inserted("Other")] == ["c"]
    (mod,) = view.modified("Other")
    assert mod.old is b and mod.new.data["name"] == "b2"
    assert r["Other"].rows[U1] is a  # unchanged: same row object
    assert U1 not in cs.tables["Other"]
    assert idx.find("b") == [] and [x.uuid for x in idx.find("b2")] == [U2]
    cs = r.replace_all({}, 2)  # nothing left
    assert len(ChangeView(cs).deleted("Other")) == 3 and idx.entries == {}


def test_modify_of_unknown_row_marks_the_batch_inconsistent() -> None:
    r = replica()
    b = r.batch(2)
    b.add_all({"Other": {U1: {"modify": {"n": 3}}, U2: {"delete": None}}})
    assert b.inconsistent and "not replicated" in b.inconsistent
    assert not b.commit()


def test_batch_is_applied_only_at_commit() -> None:
    r = replica()
    b = r.batch(2)
    b.row("Other", U1, {"insert": {"name": "a"}})
    assert not r["Other"].rows
    b.row("Other", U1, {"modify": {"n": 5}})  # the same row twice in one batch
    cs = b.commit()
    assert r["Other"].rows[U1].data["n"] == 5
    ch = cs.tables["Other"][U1]
    assert ch.old is None and ch.new is r["Other"].rows[U1]


def test_multi_column_index_follows_updates() -> None:
    r = replica()
    t = r["Simple"]
    idx = t.add_index("ni", "name", "oi")
    r.apply_update2({"Simple": {
        U1: {"insert": {"name": "a", "oi": 1}},
        U2: {"insert": {"name": "a"}},
        U3: {"insert": {"name": "b", "oi": 1}}}})
    assert [x.uuid for x in idx.find("a", 1)] == [U1]
    assert [x.uuid for x in idx.find("a", None)] == [U2]  # empty optional: None
    assert [x.uuid for x in idx.find("a", [])] == [U2]
    r.apply_update2({"Simple": {U2: {"modify": {"oi": 1}}, U1: {"delete": None}}})
    assert [x.uuid for x in idx.find("a", 1)] == [U2]
    assert idx.find("a", None) == []
    ref_idx = t.add_index("by_ref", "ref")  # built from the rows already there
    r.apply_update2({"Simple": {U3: {"modify": {"ref": ["uuid", C1]}}}})
    assert idx.find_one("b", 1) is t.rows[U3]
    assert ref_idx.find(uuidlib.UUID(C1)) == [t.rows[U3]]
    with pytest.raises(KeyError):
        t.add_index("bad", "nope")


def test_typed_access() -> None:
    r = replica()
    r.apply_update2({
        "Child": {C1: {"insert": {"name": "c1", "n": 1}}},
        "Simple": {U1: {"insert": {
            "name": "s", "i": 7, "r": 1, "b": True, "u": ["uuid", U2], "oi": ["set", []],
            "os": "x", "ss": ["set", ["b", "a"]], "si": 3, "sr": ["set", [2, 1.5]],
            "m": ["map", [["a", "1"]]], "mi": ["map", [[2, 0.5], [1, 1]]], "color": "red",
            "ref": ["uuid", C1], "refs": ["set", [["uuid", C1], ["uuid", C2]]],
            "umap": ["map", [[["uuid", U3], 4]]]}}}})
    row = r["Simple"].rows[U1]
    assert isinstance(row, IdlRow)
    assert (row.name, row.i, row.r, row.b) == ("s", 7, 1.0, True)
    assert isinstance(row.r, float)
    assert row.u == uuidlib.UUID(U2)  # no refTable: a UUID
    assert row.oi is None and row.os == "x" and row.color == "red"
    assert row.ss == ["a", "b"] and row.si == [3] and row.sr == [1.5, 2.0]
    assert row.m == {"a": "1"} and row.mi == {1: 1.0, 2: 0.5}
    child = r["Child"].rows[C1]
    assert row.ref is child and row["ref"].name == "c1"
    assert row.refs == [child, uuidlib.UUID(C2)]  # not replicated: a UUID
    assert row.umap == {uuidlib.UUID(U3): 4}
    assert row._uuid == uuidlib.UUID(U1) and row.uuid == U1
    assert row.to_dict()["ss"] == ["a", "b"]
    with pytest.raises(AttributeError):
        _ = row.nope


def test_subset_of_columns_and_on_demand() -> None:
    r = replica(tables={"Simple": ["name", "i"]}, on_demand={"Simple": ["big"]})
    r.apply_update2({"Simple": {U1: {"insert": {"name": "a", "i": 1}}}})
    row = r["Simple"].rows[U1]
    assert set(row.data) == {"name", "i"}
    with pytest.raises(AttributeError):
        _ = row.ss  # not registered
    with pytest.raises(NotFetchedError):
        _ = row.big
    r["Simple"].fetched[U1] = {"big": ("text",)}
    assert row.big == "text"


ATOMS = {
    "integer": lambda rng: rng.randrange(-2**63, 2**63),
    "real": lambda rng: rng.choice([rng.uniform(-1e9, 1e9), float(rng.randrange(10))]),
    "boolean": lambda rng: rng.random() < 0.5,
    "string": lambda rng: rng.choice(["", "a", "b", "zz", "é", "k" * 40, str(rng.random())]),
    "uuid": lambda rng: str(uuidlib.UUID(int=rng.getrandbits(128))),
}


def random_datum(codec: Any, rng: random.Random) -> Any:
    n = 1 if codec.is_scalar else rng.randrange(int(codec.min), 4 if codec.max > 1 else 2)
    if codec.is_map:
        return {ATOMS[codec.key_type](rng): ATOMS[codec.value_type](rng) for _ in range(n)}
    return [ATOMS[codec.key_type](rng) for _ in range(n)]


@pytest.mark.parametrize("seed", range(3))
def test_wire_and_python_conversions_agree_with_the_datum_codec(seed: int) -> None:
    """The replica's trusting, interning parsers give exactly what the validating
    `Codec.from_json` gives, and Python values convert to the same canonical form."""
    rng = random.Random(seed)
    for table in SCHEMA.tables.values():
        for col in table.columns.values():
            codec = col.type.codec
            parse = wire_parser(codec)
            conv = python_converter(codec)
            for _ in range(60):
                value = random_datum(codec, rng)
                if codec.is_map:
                    canonical = tuple(sorted(value.items()))
                elif codec.is_scalar:
                    canonical = value[0]
                else:
                    canonical = tuple(sorted(set(value)))
                if codec.key_type == "string" and col.type.key.enum is not None:
                    continue  # enum-constrained: random strings are not valid
                json = codec.to_json(canonical)
                assert codec.from_json(json) == canonical
                assert parse(json) == canonical, (table.name, col.name, json)
                py = value if codec.is_map or not codec.is_scalar else value[0]
                assert conv(py) == canonical, (table.name, col.name, py)


def test_streamed_full_replies_load_and_resync() -> None:
    """Large replies go through the framer into a batch, row chunks at a time: the
    initial load, then a full resync recorded as the difference."""
    import orjson

    from pyovsdb.jsonrpc.session import Framer

    def reply(rows: dict[str, Any]) -> bytes:
        return orjson.dumps({"id": 1, "result": [False, U1, {"Other": rows}], "error": None})

    def stream(r: Replica, data: bytes) -> Any:
        b = r.batch(2, index=2, on_header=lambda b, h: setattr(b, "replace", not h[0]) or True)
        out: list[Any] = []
        framer = Framer(out.append, lambda i: b, lambda m: None, whole_at_most=0)
        for pos in range(0, len(data), 5000):
            framer.feed(data[pos:pos + 5000])
        assert out[0]["result"][2] is b
        return b.commit()

    uuids = [str(uuidlib.UUID(int=1000 + i)) for i in range(3000)]
    rows = {u: {"initial": {"name": f"r{i}", "n": i, "tags": ["set", ["a", "b"]]}}
            for i, u in enumerate(uuids)}
    r = replica()
    cs = stream(r, reply(rows))
    assert len(ChangeView(cs).inserted("Other")) == 3000
    assert r["Other"].get(uuids[7]).data == {"name": "r7", "n": 7, "tags": ("a", "b")}
    kept = r["Other"].get(uuids[8])
    del rows[uuids[0]]
    rows[uuids[1]] = {"initial": {"name": "changed"}}
    rows[U2] = {"initial": {"name": "new"}}
    cs = stream(r, reply(rows))
    view = ChangeView(cs)
    assert [x.uuid for x in view.deleted("Other")] == [uuids[0]]
    assert [x.uuid for x in view.inserted("Other")] == [U2]
    assert [c.new.name for c in view.modified("Other")] == ["changed"]
    assert r["Other"].get(uuids[8]) is kept and len(r["Other"]) == 3000


@pytest.mark.parametrize("seed", range(3))
def test_a_column_read_as_an_attribute_is_its_typed_value(seed: int) -> None:
    """`row.col` (a property of the table's row class, `row_class`) gives what the
    generic path (`typed`) gives, for every column of every table, referenced rows
    replicated or not, sets and maps of every size; names a row has itself keep their
    meaning."""
    rng = random.Random(seed)
    r = replica()
    for n in range(20):  # (each round after the first can name the rows of the last)
        for table in SCHEMA.tables.values():
            rt = r[table.name]
            row: dict[str, Any] = {}
            for col in table.columns.values():
                codec = col.type.codec
                if col.type.key.enum is not None:
                    continue
                value = random_datum(codec, rng)
                if codec.key_type == "uuid" and rt.codecs[col.name].key.ref_table and n % 2:
                    value = [next(iter(r[rt.codecs[col.name].key.ref_table].rows), v)
                             for v in value] if not codec.is_map else value
                canonical = tuple(sorted(value.items())) if codec.is_map else \
                    value[0] if codec.is_scalar else tuple(sorted(set(value)))
                row[col.name] = codec.to_json(canonical)
            r.apply_update2({table.name: {str(uuidlib.UUID(int=rng.getrandbits(128))):
                                          {"insert": row}}})
    for table in SCHEMA.tables.values():
        for row in r[table.name].rows.values():
            assert type(row) is not IdlRow and isinstance(row, IdlRow)
            for col in r[table.name].columns:
                want = typed(r[table.name], col, row.value(col))
                got = getattr(row, col) if col not in ("uuid", "version") else row[col]
                assert got == want and type(got) is type(want), (table.name, col)
