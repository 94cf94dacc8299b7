"""OVS log framing and standalone storage: round trips, torn and corrupt tails,
compaction."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson
import pytest

from pyovsdb.ovsdb.transaction import Committed, execute
from pyovsdb.storage import log as ovslog
from pyovsdb.storage import standalone
from pyovsdb.testing import NB_SCHEMA


def nb_schema() -> dict:
    return orjson.loads(Path(NB_SCHEMA).read_bytes())


def test_frame_matches_ovs_format() -> None:
    data = ovslog.frame({"a": 1})
    header, body = data.split(b"\n", 1)
    magic1, magic2, length, sha = header.split(b" ")
    assert (magic1, magic2) == (b"OVSDB", b"JSON")
    assert int(length) == len(body) and body.endswith(b"\n")
    assert sha.decode() == hashlib.sha1(body).hexdigest()


def _db_with_txns(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "nb.db"
    standalone.create(str(path), nb_schema())
    st, problems = standalone.StandaloneStorage.open(str(path))
    assert problems == []
    for i in range(n):
        out = execute(st.db, [{"op": "insert", "table": "Logical_Switch",
                               "row": {"name": f"sw{i}"}}])
        assert isinstance(out, Committed)
        st.commit(out.changeset)
        st.db.apply(out.changeset)
    st.close()
    return path


def names(path: Path) -> set[str]:
    db, _, _ = standalone.load(str(path))
    return {r.data["name"] for r in db.tables["Logical_Switch"].rows.values()}


def test_round_trip(tmp_path: Path) -> None:
    path = _db_with_txns(tmp_path, 5)
    assert names(path) == {f"sw{i}" for i in range(5)}


@pytest.mark.parametrize("cut", [1, 10, 60, 100])
def test_torn_tail_keeps_good_prefix_and_next_write_truncates(tmp_path: Path, cut: int) -> None:
    path = _db_with_txns(tmp_path, 3)
    good = path.read_bytes()
    # A fourth record torn in the middle of its header or body.
    record = ovslog.frame({"Logical_Switch": {"x" * 36: {"name": "torn" * 20}}, "_date": 0})
    assert cut < len(record)
    torn = record[:cut]
    path.write_bytes(good + torn)
    st, problems = standalone.StandaloneStorage.open(str(path))
    assert problems
    assert {r.data["name"] for r in st.db.tables["Logical_Switch"].rows.values()} == {
        "sw0", "sw1", "sw2"}
    out = execute(st.db, [{"op": "insert", "table": "Logical_Switch", "row": {"name": "new"}}])
    assert isinstance(out, Committed)
    st.commit(out.changeset)
    st.close()
    data = path.read_bytes()
    assert data.startswith(good)
    assert b"torn" not in data  # the bad tail is gone, the new record follows the good part
    res = ovslog.read_file(str(path))
    assert res.error is None and len(res.records) == 5
    assert names(path) == {"sw0", "sw1", "sw2", "new"}


def test_checksum_mismatch_is_detected(tmp_path: Path) -> None:
    path = _db_with_txns(tmp_path, 2)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x01  # flip a bit in the last record's body
    path.write_bytes(bytes(data))
    res = ovslog.read_file(str(path))
    assert res.error is not None and "have SHA-1 hash" in res.error
    assert len(res.records) == 2  # schema + first transaction


def test_compaction_is_atomic_and_preserves_rows(tmp_path: Path) -> None:
    path = _db_with_txns(tmp_path, 50)
    before = os.path.getsize(path)
    st, _ = standalone.StandaloneStorage.open(str(path))
    st.compact()
    st.close()
    assert os.path.getsize(path) < before
    res = ovslog.read_file(str(path))
    assert res.error is None and len(res.records) == 2
    assert res.records[1]["_comment"] == "compacting database online"
    assert names(path) == {f"sw{i}" for i in range(50)}
    assert not (tmp_path / "nb.db.tmp").exists()


def test_should_compact_thresholds(tmp_path: Path) -> None:
    path = _db_with_txns(tmp_path, 20)
    st, _ = standalone.StandaloneStorage.open(str(path), min_growth=1000, ratio=2.0,
                                                min_interval=100.0, min_records=5,
                                                max_interval=10_000.0, now=0.0)
    try:
        assert not st.should_compact(now=500.0)  # nothing written since opening
        for i in range(10):
            out = execute(st.db, [{"op": "insert", "table": "Logical_Switch",
                                   "row": {"name": f"more{i}" * 20}}])
            assert isinstance(out, Committed)
            st.commit(out.changeset)
            st.db.apply(out.changeset)
        assert not st.should_compact(now=50.0)  # too soon after opening
        assert st.should_compact(now=500.0)
        st.compact(now=500.0)
        assert not st.should_compact(now=5000.0)  # has not grown since
        out = execute(st.db, [{"op": "insert", "table": "Logical_Switch",
                               "row": {"name": "late"}}])
        assert isinstance(out, Committed)
        st.commit(out.changeset)
        assert not st.should_compact(now=5000.0)  # one small record is not enough
        assert st.should_compact(now=20_000.0)  # but after max_interval it is
    finally:
        st.close()


def test_second_writer_is_refused(tmp_path: Path) -> None:
    path = _db_with_txns(tmp_path, 1)
    st, _ = standalone.StandaloneStorage.open(str(path))
    try:
        with pytest.raises(Exception, match="lock"):
            standalone.StandaloneStorage.open(str(path))
    finally:
        st.close()


# ---------------------------------------------------------------------------------------
# Member order, error texts, symlinks (the interop tests compare with the real server;
# these pin the same facts without it).

IDX_SCHEMA = {"name": "IdxTest", "version": "1.0.0",
              "tables": {"T": {"columns": {"name": {"type": "string"},
                                           "a": {"type": "integer"}},
                               "indexes": [["name"]], "isRoot": True}}}
# Written by ovsdb-server 3.1 for one transaction (two inserts and a comment) on
# IDX_SCHEMA, and by ovsdb-tool 3.1 create for the schema.
REAL_TXN = (b'{"_date":1796117721397,"_is_diff":true,"T":{"47e9e4b7-20b2-4279-97c3-fd47b4e2f214"'
            b':{"name":"x","a":2},"262b0491-2624-4644-88ce-b7b52ada13ac":{"name":"z","a":3}},'
            b'"_comment":"hello"}')
REAL_SCHEMA = (b'{"name":"IdxTest","version":"1.0.0","tables":{"T":{"indexes":[["name"]],'
               b'"columns":{"name":{"type":"string"},"a":{"type":"integer"}}}}}')


def test_records_in_the_real_servers_member_order() -> None:
    from pyovsdb.ovsdb.schema import DatabaseSchema
    from pyovsdb.storage import jsonorder

    schema = DatabaseSchema.from_json(IDX_SCHEMA)
    assert orjson.dumps(jsonorder.schema_record(schema)) == REAL_SCHEMA
    # As our transaction engine builds it: rows in the order touched, columns in
    # schema order, annotations last.
    ours = {"T": {"47e9e4b7-20b2-4279-97c3-fd47b4e2f214": {"name": "x", "a": 2},
                  "262b0491-2624-4644-88ce-b7b52ada13ac": {"name": "z", "a": 3}},
            "_date": 1796117721397, "_comment": "hello", "_is_diff": True}
    assert orjson.dumps(jsonorder.txn_record(ours, schema)) == REAL_TXN
    assert orjson.loads(REAL_TXN) == ours  # only the order changed


@pytest.mark.parametrize(("tail", "text"), [
    (b"xxx\n", 'syntax error: NAME: parse error at offset OFF in header line "xxx"'),
    (b"OVSDB JSON 9x " + b"0" * 40 + b"\n{}\n",
     'syntax error: NAME: parse error at offset OFF in header line "OVSDB JSON"'),
    (b"OVSDB JSON 3 " + b"0" * 40 + b"\n{}\n",
     "syntax error: NAME: 3 bytes starting at offset BODY have SHA-1 hash "
     f"{hashlib.sha1(b'{}' + bytes([10])).hexdigest()} but should have hash {'0' * 40}"),
    (b"OVSDB JSON 30 " + b"0" * 40 + b"\n{}\n",
     "I/O error: NAME: error reading 30 bytes starting at offset BODY (End of file)"),
    (ovslog.frame([1, 2]),
     "syntax error: NAME: 6 bytes starting at offset BODY are not a JSON object"),
])
def test_read_problems_in_the_real_tools_words(tail: bytes, text: str) -> None:
    good = ovslog.frame(IDX_SCHEMA)
    res = ovslog.parse_records(good + tail, name="NAME")
    assert res.records == [IDX_SCHEMA] and res.end == len(good)
    body = len(good) + tail.index(b"\n") + 1
    assert str(res.problem) == text.replace("OFF", str(len(good))).replace(
        "BODY", str(body))


def test_unknown_table_record_dropped_the_rest_read(tmp_path: Path) -> None:
    path = tmp_path / "db"
    standalone.create(str(path), IDX_SCHEMA)
    with open(path, "ab") as f:
        f.write(ovslog.frame({"Nope": {"54f49e28-d7e6-4062-acdd-e6bf358d16c7": {}}}))
        f.write(ovslog.frame({"T": {"54f49e28-d7e6-4062-acdd-e6bf358d16c8": {"name": "q"}}}))
    db, _, problems = standalone.load(str(path), "db", skip_bad=True)
    assert problems == ['syntax "{"Nope":{"54f49e28-d7e6-4062-acdd-e6bf358d16c7":{}}}": '
                        "unknown table: No table named Nope."]
    assert [r.data["name"] for r in db.tables["T"].rows.values()] == ["q"]
    with pytest.raises(Exception, match=r"unknown table: No table named Nope\."):
        standalone.load(str(path))


def test_compaction_keeps_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    real = tmp_path / "d" / "nb.db"
    path = _db_with_txns(tmp_path / "d", 3)
    assert path == real
    link = tmp_path / "link.db"
    link.symlink_to("d/nb.db")
    st, _ = standalone.StandaloneStorage.open(str(link))
    try:
        assert (tmp_path / "d" / ".nb.db.~lock~").exists()
        st.compact(now=1e9)
    finally:
        st.close()
    assert link.is_symlink() and len(ovslog.read_file(str(real)).records) == 2
    assert not list(tmp_path.rglob("*.tmp"))
